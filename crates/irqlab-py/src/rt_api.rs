//! `irqlab._native.rt`: run a system model on real threads (`irqlab-rt`).
//! Invalid models, and what cannot run for real, raise
//! `irqlab._native.rt.ScenarioError` (a `ValueError`) naming the field, the
//! value and the rule; a missing
//! privilege or kernel feature raises `RuntimeUnavailable` (an `OSError`)
//! with the kernel's reason.

use pyo3::create_exception;
use pyo3::exceptions::{PyOSError, PyRuntimeError, PyValueError};
use pyo3::prelude::*;

create_exception!(
    rt,
    ScenarioError,
    PyValueError,
    "An invalid model, or one that cannot run for real here."
);
create_exception!(
    rt,
    RuntimeUnavailable,
    PyOSError,
    "The kernel does not permit what the runtime needs (SCHED_FIFO, io_uring...)."
);

fn to_py(e: irqlab_rt::RtError) -> PyErr {
    match e {
        irqlab_rt::RtError::Config { .. } => ScenarioError::new_err(e.to_string()),
        e if e.is_unavailable() => RuntimeUnavailable::new_err(e.to_string()),
        e => PyRuntimeError::new_err(e.to_string()),
    }
}

/// Measure this machine (`irqlab_rt::calibrate`): `samples` per
/// micro-measurement, `runs` runtime runs of `run_ns` each; JSON with a
/// summary (ns) or the reason per measurement. The GIL is released.
#[pyfunction]
#[pyo3(signature = (samples=2000, runs=5, run_ns=200_000_000))]
fn calibrate(py: Python<'_>, samples: usize, runs: usize, run_ns: u64) -> PyResult<String> {
    let c =
        py.detach(|| irqlab_rt::calibrate::calibrate(samples, runs, irqlab_core::Nanos(run_ns)));
    serde_json::to_string(&c).map_err(|e| PyValueError::new_err(e.to_string()))
}

/// Run system model `text` (named `name`) on real threads for its
/// `simulation.duration` (or `duration_ns`) with its seed (or `seed`);
/// returns `(result_json, cyclictest_summary, histogram_file)` (the last
/// two from irqlab-rt's report; empty on the linux path, which has none).
/// The GIL is released while the threads run; SIGINT/SIGTERM/SIGHUP stop
/// the run early.
#[pyfunction]
#[pyo3(signature = (name, text, duration_ns=None, seed=None))]
fn run_model(
    py: Python<'_>,
    name: &str,
    text: &str,
    duration_ns: Option<u64>,
    seed: Option<u64>,
) -> PyResult<(String, String, String)> {
    let r = py.detach(|| {
        irqlab_rt::model_run::run_model(name, text, duration_ns.map(irqlab_core::Nanos), seed)
    });
    let r = r.map_err(to_py)?;
    let json = serde_json::to_string(&r).map_err(|e| PyValueError::new_err(e.to_string()))?;
    let (summary, hist) = r.runtime.as_ref().map_or_else(Default::default, |rep| {
        (rep.cyclictest_summary(), rep.histogram_file())
    });
    Ok((json, summary, hist))
}

/// Load a system model and lower it for a real run without running it;
/// returns the notes (model values the real machine replaces). Raises
/// `ScenarioError` for what cannot run for real.
#[pyfunction]
fn check_model(name: &str, text: &str) -> PyResult<Vec<String>> {
    irqlab_rt::model_run::check_model(name, text)
        .map(|p| p.notes)
        .map_err(to_py)
}

pub fn register(parent: &Bound<'_, PyModule>) -> PyResult<()> {
    let m = PyModule::new(parent.py(), "rt")?;
    m.add_function(wrap_pyfunction!(calibrate, &m)?)?;
    m.add_function(wrap_pyfunction!(run_model, &m)?)?;
    m.add_function(wrap_pyfunction!(check_model, &m)?)?;
    m.add("ScenarioError", parent.py().get_type::<ScenarioError>())?;
    m.add(
        "RuntimeUnavailable",
        parent.py().get_type::<RuntimeUnavailable>(),
    )?;
    parent.add_submodule(&m)
}
