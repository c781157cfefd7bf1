//! `irqlab._native`: the PyO3 boundary. Thin by design (the pydantic-core
//! pattern): Rust does the work, this layer converts types and turns Rust
//! errors into precise Python exceptions. Each part of irqlab registers its
//! own submodule from its own file.

use pyo3::prelude::*;

mod analysis_api;
mod core_api;
mod model_api;
mod rt_api;
mod sim_api;

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    core_api::register(m)?;
    sim_api::register(m)?;
    model_api::register(m)?;
    analysis_api::register(m)?;
    rt_api::register(m)?;
    register_submodules(m)
}

/// Make `import irqlab._native.<sub>` work for every submodule (CPython
/// does not import submodules of extension modules on its own).
fn register_submodules(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let modules = m.py().import("sys")?.getattr("modules")?;
    for (name, value) in m.dict().iter() {
        if value.is_instance_of::<PyModule>() {
            modules.set_item(format!("irqlab._native.{name}"), value)?;
        }
    }
    Ok(())
}
