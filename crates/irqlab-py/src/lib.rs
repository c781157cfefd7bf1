//! `irqlab._native`: the PyO3 boundary. Thin by design (the pydantic-core
//! pattern): Rust does the work, this layer converts types and turns Rust
//! errors into precise Python exceptions. Each part of irqlab registers its
//! own submodule from its own file. No Rust panic reaches Python as
//! `PanicException` (a `BaseException` that scripts and the CLI cannot
//! catch as an error): the entry points that run library code call
//! [`guard`], which turns a panic into a `RuntimeError` naming it as an
//! internal error, and the panic hook stays quiet for those calls.

use std::cell::Cell;
use std::panic::{catch_unwind, AssertUnwindSafe};

use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;

thread_local! {
    /// Where the last panic inside [`guard`] happened (file:line).
    static PANIC_AT: Cell<Option<String>> = const { Cell::new(None) };
    /// Inside [`guard`]: the panic hook records instead of printing.
    static GUARDED: Cell<bool> = const { Cell::new(false) };
}

/// Install (once) a panic hook that is silent inside [`guard`] and keeps
/// the default behaviour elsewhere.
fn install_hook() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let default = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if GUARDED.with(Cell::get) {
                let at = info
                    .location()
                    .map(|l| format!("{}:{}", l.file(), l.line()));
                PANIC_AT.with(|p| p.set(at));
            } else {
                default(info);
            }
        }));
    });
}

/// Run `f`; a panic becomes `RuntimeError("internal error in irqlab
/// (WHAT): MESSAGE at FILE:LINE; please report it with the input")`.
pub(crate) fn guard<T>(what: &str, f: impl FnOnce() -> PyResult<T>) -> PyResult<T> {
    let was = GUARDED.with(|g| g.replace(true));
    let r = catch_unwind(AssertUnwindSafe(f));
    GUARDED.with(|g| g.set(was));
    r.unwrap_or_else(|payload| {
        let msg = payload
            .downcast_ref::<&str>()
            .map(|s| (*s).to_owned())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "a panic".into());
        let at = PANIC_AT
            .with(Cell::take)
            .map(|a| format!(" at {a}"))
            .unwrap_or_default();
        Err(PyRuntimeError::new_err(format!(
            "internal error in irqlab ({what}): {msg}{at}; please report it with the input"
        )))
    })
}

mod analysis_api;
mod core_api;
mod frompy;
mod model_api;
mod rt_api;
mod sim_api;
mod topy;

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    install_hook();
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
