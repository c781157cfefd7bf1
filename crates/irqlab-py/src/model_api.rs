//! `irqlab._native.model`: load and validate a YAML system model, and lower
//! it into the simulator's configuration. Invalid models raise
//! `irqlab._native.model.ModelError` (a `ValueError`) whose message lists
//! every problem, one per line, each with its field path.

use std::path::Path;

use pyo3::create_exception;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

create_exception!(
    model,
    ModelError,
    PyValueError,
    "An invalid irqlab system model."
);

fn load_model(text: &str) -> PyResult<(irqlab_model::Model, Vec<String>)> {
    irqlab_model::load_str(text).map_err(|e| ModelError::new_err(e.to_string()))
}

/// Validate `text`; returns `(model_json, warnings)`.
#[pyfunction]
fn load(text: &str) -> PyResult<(String, Vec<String>)> {
    let (m, warnings) = load_model(text)?;
    let json = serde_json::to_string(&m).map_err(|e| PyValueError::new_err(e.to_string()))?;
    Ok((json, warnings))
}

/// Validate `text` and lower it into a simulation configuration (JSON).
/// `base_dir` resolves relative files (trace CSVs).
#[pyfunction]
fn lower(text: &str, base_dir: &str) -> PyResult<String> {
    let (m, _) = load_model(text)?;
    let cfg = irqlab_sim::from_model(&m, Path::new(base_dir))
        .map_err(|e| ModelError::new_err(e.to_string()))?;
    cfg.check()
        .map_err(|e| ModelError::new_err(e.to_string()))?;
    serde_json::to_string(&cfg).map_err(|e| PyValueError::new_err(e.to_string()))
}

/// Parse a unit-bearing duration ("500us", "2ms") to integer ns.
#[pyfunction]
fn parse_duration(text: &str) -> PyResult<u64> {
    irqlab_model::units::parse_duration(text)
        .map(|n| n.as_ns())
        .map_err(PyValueError::new_err)
}

pub fn register(parent: &Bound<'_, PyModule>) -> PyResult<()> {
    let m = PyModule::new(parent.py(), "model")?;
    m.add("ModelError", parent.py().get_type::<ModelError>())?;
    m.add_function(wrap_pyfunction!(load, &m)?)?;
    m.add_function(wrap_pyfunction!(lower, &m)?)?;
    m.add_function(wrap_pyfunction!(parse_duration, &m)?)?;
    parent.add_submodule(&m)?;
    Ok(())
}
