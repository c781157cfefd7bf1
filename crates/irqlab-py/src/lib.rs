//! `irqlab._native`: the PyO3 boundary. Thin by design (the pydantic-core
//! pattern): Rust does the work, this layer converts types and turns Rust
//! errors into precise Python exceptions. Each part of irqlab registers its
//! own submodule from its own file.

use pyo3::prelude::*;

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
