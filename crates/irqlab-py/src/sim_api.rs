//! `irqlab._native.sim`: run the simulator on a configuration given as
//! JSON text (the resolved `SimConfig`). Returns the metrics and the
//! Perfetto trace as JSON text; configuration errors raise `ValueError`
//! naming the field path, the value and the rule (a type error reads
//! `trace: expected an object ...`, never a bare serde struct name). The
//! GIL is released while the simulation runs.

use irqlab_sim::{simulate, SimConfig};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

/// Parse a `SimConfig`, naming the field path of the first error.
pub fn parse_config(config_json: &str) -> PyResult<SimConfig> {
    let de = &mut serde_json::Deserializer::from_str(config_json);
    serde_path_to_error::deserialize(de).map_err(|e| {
        let path = e.path().to_string();
        let msg = readable(&e.into_inner().to_string());
        PyValueError::new_err(format!("simulation config: {path}: {msg}"))
    })
}

/// serde says "expected struct TraceCfg"; a user wrote a dict key, so say
/// "expected an object (TraceCfg)" and drop the JSON line/column, which
/// point into text the user never saw.
fn readable(msg: &str) -> String {
    let msg = msg.split(" at line ").next().unwrap_or(msg);
    match msg.split_once("expected struct ") {
        Some((head, name)) => format!("{head}expected an object ({name} fields)"),
        None => msg.to_owned(),
    }
}

/// Simulate `config_json`; returns `(metrics_json, trace_json,
/// resolved_config_json)` (the configuration with every default filled in).
#[pyfunction]
fn run(py: Python<'_>, config_json: &str) -> PyResult<(String, String, String)> {
    let cfg = parse_config(config_json)?;
    let resolved = serde_json::to_string(&cfg).map_err(|e| PyValueError::new_err(e.to_string()))?;
    py.detach(|| -> Result<(String, String, String), String> {
        let (m, trace) = simulate(cfg).map_err(|e| e.to_string())?;
        let m = serde_json::to_string(&m).map_err(|e| e.to_string())?;
        let t = serde_json::to_string(&trace).map_err(|e| e.to_string())?;
        Ok((m, t, resolved))
    })
    .map_err(PyValueError::new_err)
}

/// The JSON Schema of `metrics.json` (JSON text).
#[pyfunction]
fn metrics_schema() -> String {
    irqlab_sim::metrics::metrics_schema().to_string()
}

pub fn register(parent: &Bound<'_, PyModule>) -> PyResult<()> {
    let m = PyModule::new(parent.py(), "sim")?;
    m.add_function(wrap_pyfunction!(run, &m)?)?;
    m.add_function(wrap_pyfunction!(metrics_schema, &m)?)?;
    parent.add_submodule(&m)?;
    Ok(())
}
