//! `irqlab._native.model`: load and validate a YAML system model, and lower
//! it into the resolved system (`irqlab_system::SimConfig`), held in Rust by
//! a [`System`] handle that the simulator and the analysis read directly
//! (`resolve`: one parse of the YAML for every back end). Invalid models raise
//! `irqlab._native.model.ModelError` (a `ValueError`) whose message lists
//! every problem, one per line, each with its field path, and whose
//! `errors` attribute holds the same problems as `(path, value, rule)`
//! tuples (`value` is `""` when the rule is about the field as a whole).

use std::path::Path;

use irqlab_model::LoadError;
use irqlab_sim::SimError;
use pyo3::create_exception;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

create_exception!(
    model,
    ModelError,
    PyValueError,
    "An invalid irqlab system model; `errors` lists (path, value, rule)."
);

type Problem = (String, String, String);

/// A `ModelError` with its message and its `errors` list.
fn model_error(py: Python<'_>, message: String, errors: Vec<Problem>) -> PyErr {
    let err = ModelError::new_err(message);
    if let Err(e) = err.value(py).setattr("errors", errors) {
        return e;
    }
    err
}

fn load_error(py: Python<'_>, text: &str, e: LoadError) -> PyErr {
    let message = e.to_string();
    let errors = match e {
        LoadError::Parse(msg) => vec![irqlab_model::parse_problem(text, &msg)],
        LoadError::Invalid(list) => list
            .into_iter()
            .map(|x| (x.path, x.value, x.rule))
            .collect(),
    };
    model_error(py, message, errors)
}

fn sim_error(py: Python<'_>, e: SimError) -> PyErr {
    let message = e.to_string();
    let problem = match e {
        SimError::Config { path, value, rule } => (path, value, rule),
        other => (String::new(), String::new(), other.to_string()),
    };
    model_error(py, message, vec![problem])
}

fn load_model(py: Python<'_>, text: &str) -> PyResult<(irqlab_model::Model, Vec<String>)> {
    crate::guard("load", || {
        irqlab_model::load_str(text).map_err(|e| load_error(py, text, e))
    })
}

/// Validate `text`; returns `(model_json, warnings)`.
#[pyfunction]
fn load(py: Python<'_>, text: &str) -> PyResult<(String, Vec<String>)> {
    let (m, warnings) = load_model(py, text)?;
    let json = serde_json::to_string(&m).map_err(|e| PyValueError::new_err(e.to_string()))?;
    Ok((json, warnings))
}

/// Validate `text` and lower it into a simulation configuration (JSON).
/// `base_dir` resolves relative files (trace CSVs).
#[pyfunction]
fn lower(py: Python<'_>, text: &str, base_dir: &str) -> PyResult<String> {
    let (m, _) = load_model(py, text)?;
    let cfg = crate::guard("lower", || {
        let cfg = irqlab_sim::from_model(&m, Path::new(base_dir)).map_err(|e| sim_error(py, e))?;
        cfg.check().map_err(|e| sim_error(py, e))?;
        Ok(cfg)
    })?;
    serde_json::to_string(&cfg).map_err(|e| PyValueError::new_err(e.to_string()))
}

/// The resolved system of a model, held in Rust: the simulator
/// (`irqlab._native.sim.run`) and the analysis
/// (`irqlab._native.analysis.model_bounds` / `hypervisor_bounds`) take it
/// as it is, with no JSON text or Python objects in between.
#[pyclass(module = "irqlab._native.model", name = "System", frozen)]
pub struct System {
    pub(crate) cfg: irqlab_sim::SimConfig,
}

#[pymethods]
impl System {
    /// The resolved system as JSON text (every default filled in).
    fn config_json(&self) -> PyResult<String> {
        serde_json::to_string(&self.cfg).map_err(|e| PyValueError::new_err(e.to_string()))
    }

    /// The resolved system as the objects `json.loads` gives for its JSON.
    fn config<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        crate::topy::to_py(py, &self.cfg)
    }

    /// The machine's interrupt path (`machine.path`).
    #[getter]
    fn path(&self) -> &'static str {
        self.cfg.path.name()
    }
}

/// Validate `text` and resolve it once: `(model_json, warnings, system)`.
/// `base_dir` resolves relative files (trace CSVs).
#[pyfunction]
fn resolve(py: Python<'_>, text: &str, base_dir: &str) -> PyResult<(String, Vec<String>, System)> {
    let (m, warnings) = load_model(py, text)?;
    let json = serde_json::to_string(&m).map_err(|e| PyValueError::new_err(e.to_string()))?;
    let cfg = crate::guard("resolve", || {
        let cfg = irqlab_sim::from_model(&m, Path::new(base_dir)).map_err(|e| sim_error(py, e))?;
        cfg.check().map_err(|e| sim_error(py, e))?;
        Ok(cfg)
    })?;
    Ok((json, warnings, System { cfg }))
}

/// Validate a costs file (`irqlab calibrate --out`, only a `costs:`
/// section); returns `(costs_json, warnings)`.
#[pyfunction]
fn load_costs(py: Python<'_>, text: &str) -> PyResult<(String, Vec<String>)> {
    let (c, warnings) = crate::guard("load_costs", || {
        irqlab_model::load_costs_str(text).map_err(|e| load_error(py, text, e))
    })?;
    let json = serde_json::to_string(&c).map_err(|e| PyValueError::new_err(e.to_string()))?;
    Ok((json, warnings))
}

/// A simulator configuration (JSON) with the measured costs of a costs
/// file or model (`text`, YAML) folded in, as a model with `costs:` is
/// lowered; returns the configuration as JSON.
#[pyfunction]
fn apply_costs(py: Python<'_>, config_json: &str, text: &str) -> PyResult<String> {
    let mut cfg = irqlab_sim::SimConfig::from_json_str(config_json)
        .map_err(|e| PyValueError::new_err(format!("simulator config: {e}")))?;
    let (c, _) = crate::guard("apply_costs", || {
        irqlab_model::load_costs_str(text).map_err(|e| load_error(py, text, e))
    })?;
    irqlab_sim::lower::apply_costs(&mut cfg, &c);
    serde_json::to_string(&cfg).map_err(|e| PyValueError::new_err(e.to_string()))
}

/// Whether `text` is a costs file (a mapping whose only key is `costs`).
#[pyfunction]
fn is_costs_file(text: &str) -> PyResult<bool> {
    crate::guard("is_costs_file", || Ok(irqlab_model::is_costs_file(text)))
}

/// Parse a unit-bearing duration ("500us", "2ms") to integer ns.
#[pyfunction]
fn parse_duration(text: &str) -> PyResult<u64> {
    irqlab_model::units::parse_duration(text)
        .map(|n| n.as_ns())
        .map_err(PyValueError::new_err)
}

/// The JSON Schema of a model file (JSON text).
#[pyfunction]
fn schema() -> String {
    irqlab_model::model::model_schema().to_string()
}

pub fn register(parent: &Bound<'_, PyModule>) -> PyResult<()> {
    let m = PyModule::new(parent.py(), "model")?;
    m.add("ModelError", parent.py().get_type::<ModelError>())?;
    m.add_function(wrap_pyfunction!(load, &m)?)?;
    m.add_function(wrap_pyfunction!(load_costs, &m)?)?;
    m.add_function(wrap_pyfunction!(is_costs_file, &m)?)?;
    m.add_function(wrap_pyfunction!(apply_costs, &m)?)?;
    m.add_function(wrap_pyfunction!(lower, &m)?)?;
    m.add_function(wrap_pyfunction!(resolve, &m)?)?;
    m.add_class::<System>()?;
    m.add_function(wrap_pyfunction!(parse_duration, &m)?)?;
    m.add_function(wrap_pyfunction!(schema, &m)?)?;
    parent.add_submodule(&m)?;
    Ok(())
}
