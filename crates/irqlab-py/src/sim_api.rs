//! `irqlab._native.sim`: run the simulator on a configuration given as
//! JSON text (the resolved `SimConfig`). Returns the metrics and the
//! Perfetto trace as JSON text; configuration errors raise `ValueError`
//! naming the field path, the value and the rule (a type error reads
//! `trace: expected an object ...`, never a bare serde struct name). The
//! simulation runs in slices of simulated time (`Simulation::run_until`;
//! slices give exactly the one-call run): the GIL is released during each
//! slice, Ctrl-C and progress are handled between slices.

use std::time::{Duration, Instant};

use irqlab_sim::{SimConfig, Simulation};
use pyo3::exceptions::{PyKeyboardInterrupt, PyValueError};
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

/// Wall-clock time one slice of simulated time should take: short enough
/// for Ctrl-C and progress to feel immediate, long enough that the checks
/// cost nothing.
const SLICE_TARGET: Duration = Duration::from_millis(100);

/// Simulate `config_json` in slices of simulated time, releasing the GIL
/// during each slice and checking for signals (Ctrl-C) between slices;
/// `progress(now_ns, duration_ns)` is called between slices. Returns
/// `(metrics_json, trace_json, resolved_config_json, interrupted)`: on
/// Ctrl-C the run ends at the time reached (metrics marked `partial`) and
/// `interrupted` is true. The resolved configuration has every default
/// filled in.
#[pyfunction]
#[pyo3(signature = (config_json, progress=None))]
fn run(
    py: Python<'_>,
    config_json: &str,
    progress: Option<Bound<'_, PyAny>>,
) -> PyResult<(String, String, String, bool)> {
    let cfg = parse_config(config_json)?;
    let resolved = serde_json::to_string(&cfg).map_err(|e| PyValueError::new_err(e.to_string()))?;
    let duration = cfg.duration;
    let err = |e: irqlab_sim::SimError| PyValueError::new_err(e.to_string());
    let mut sim = py.detach(|| crate::guard("simulate", || Simulation::new(cfg).map_err(err)))?;
    let mut slice = duration.clamp(1, 1_000_000);
    let mut interrupted = false;
    while sim.now() < duration {
        let until = sim.now().saturating_add(slice).min(duration);
        let t0 = Instant::now();
        py.detach(|| crate::guard("simulate", || sim.run_until(until).map_err(err)))?;
        let took = t0.elapsed();
        if took < SLICE_TARGET / 4 {
            slice = slice.saturating_mul(2);
        } else if took > SLICE_TARGET * 2 {
            slice = (slice / 2).max(1_000);
        }
        let step = py.check_signals().and_then(|()| match &progress {
            Some(cb) => cb.call1((sim.now(), duration)).map(|_| ()),
            None => Ok(()),
        });
        match step {
            Ok(()) => {}
            Err(e) if e.is_instance_of::<PyKeyboardInterrupt>(py) => {
                interrupted = true;
                break;
            }
            Err(e) => return Err(e),
        }
    }
    let (m, t) = py.detach(|| {
        crate::guard("simulate", || {
            let (m, trace) = sim.finish().map_err(err)?;
            let js = |e: serde_json::Error| PyValueError::new_err(e.to_string());
            Ok((
                serde_json::to_string(&m).map_err(js)?,
                serde_json::to_string(&trace).map_err(js)?,
            ))
        })
    })?;
    Ok((m, t, resolved, interrupted))
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
