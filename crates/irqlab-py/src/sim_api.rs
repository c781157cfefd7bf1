//! `irqlab._native.sim`: run the simulator on a configuration given as
//! JSON text (the resolved `SimConfig`). Returns the metrics and the
//! Perfetto trace as JSON text; configuration errors raise `ValueError`
//! naming the field, the value and the rule. The GIL is released while the
//! simulation runs.

use irqlab_sim::{simulate, SimConfig};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

/// Simulate `config_json`; returns `(metrics_json, trace_json)`.
#[pyfunction]
fn run(py: Python<'_>, config_json: &str) -> PyResult<(String, String)> {
    let cfg: SimConfig = serde_json::from_str(config_json)
        .map_err(|e| PyValueError::new_err(format!("simulation config: {e}")))?;
    py.detach(|| -> Result<(String, String), String> {
        let (m, trace) = simulate(cfg).map_err(|e| e.to_string())?;
        let m = serde_json::to_string(&m).map_err(|e| e.to_string())?;
        let t = serde_json::to_string(&trace).map_err(|e| e.to_string())?;
        Ok((m, t))
    })
    .map_err(PyValueError::new_err)
}

pub fn register(parent: &Bound<'_, PyModule>) -> PyResult<()> {
    let m = PyModule::new(parent.py(), "sim")?;
    m.add_function(wrap_pyfunction!(run, &m)?)?;
    parent.add_submodule(&m)?;
    Ok(())
}
