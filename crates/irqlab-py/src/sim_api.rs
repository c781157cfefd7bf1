//! `irqlab._native.sim`: run the simulator on a configuration given as a
//! dict (read straight from the Python objects, no JSON text in between)
//! or as JSON text (the resolved `SimConfig`). Returns the trace as JSON
//! text or streamed to a file (JSON or Perfetto protobuf), the optional
//! per-job and per-request records as byte columns for NumPy, and an
//! [`Outcome`] that keeps the metrics and the resolved configuration in
//! Rust until Python takes them (then they become Python objects, with no
//! JSON text in between, and the Rust values are freed). Configuration errors raise `ValueError`
//! naming the field path, the value and the rule (a type error reads
//! `trace: expected an object ...`, never a bare serde struct name). The
//! simulation runs in slices of simulated time (`Simulation::run_until`;
//! slices give exactly the one-call run): the GIL is released during each
//! slice, Ctrl-C and progress are handled between slices.

use std::time::{Duration, Instant};

use std::path::PathBuf;

use irqlab_sim::config::exact_errors;
use irqlab_sim::{Metrics, Records, SimConfig, Simulation, TraceFormat};
use pyo3::exceptions::{PyKeyboardInterrupt, PyOSError, PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};

/// The `SimConfig` of `config`: a dict is read directly from the Python
/// objects (no JSON text in between); a string is parsed as JSON. The
/// dict is read first by `frompy` (plain dicts, lists and scalars, with
/// JSON's rules, the tagged objects streamed); when that gives up, by
/// `pythonize` (which also takes other mappings and sequences); when the
/// dict does not make a valid configuration, it is read once more through
/// `json.dumps` so that the error is the JSON path's, naming the field
/// path, the value and the rule. The slow paths read the tagged objects as
/// serde's derive does (`exact_errors`), so errors are worded as before.
pub(crate) fn extract_config(py: Python<'_>, config: &Bound<'_, PyAny>) -> PyResult<SimConfig> {
    if let Ok(sys) = config.cast::<crate::model_api::System>() {
        return Ok(sys.get().cfg.clone());
    }
    if let Ok(text) = config.extract::<&str>() {
        return parse_config(text);
    }
    if let Ok(cfg) = crate::frompy::from_py::<SimConfig>(config) {
        return Ok(cfg);
    }
    let mut de = pythonize::Depythonizer::from_object(config);
    match exact_errors(|| serde_path_to_error::deserialize::<_, SimConfig>(&mut de)) {
        Ok(cfg) => Ok(cfg),
        Err(_) => {
            let text: String = py
                .import("json")?
                .call_method1("dumps", (config,))?
                .extract()?;
            parse_config(&text)
        }
    }
}

/// Parse a `SimConfig`, naming the field path of the first error (worded
/// as serde's derive words it: on an error the text is parsed again in
/// `exact_errors`).
pub fn parse_config(config_json: &str) -> PyResult<SimConfig> {
    if let Ok(cfg) = serde_json::from_str(config_json) {
        return Ok(cfg);
    }
    let de = &mut serde_json::Deserializer::from_str(config_json);
    exact_errors(|| serde_path_to_error::deserialize(de)).map_err(|e| {
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

/// Most a slice grows from one to the next.
const SLICE_GROWTH: u64 = 16;

/// The simulated time of the next slice, after one of `slice` ns took
/// `took` (wall clock): scaled towards [`SLICE_TARGET`] at the rate just
/// measured when it was well under it, by at most [`SLICE_GROWTH`] (so a
/// run reaches its pace in a few slices, and every hand-over of the GIL
/// between slices is paid a few times, not once per doubling), halved when
/// it took more than twice the target.
fn next_slice(slice: u64, took: Duration) -> u64 {
    if took < SLICE_TARGET / 4 {
        let took = took.as_nanos().max(1);
        let factor = (SLICE_TARGET.as_nanos() / took).clamp(2, u128::from(SLICE_GROWTH));
        // `factor` is at most SLICE_GROWTH, so it fits in a u64
        slice.saturating_mul(factor as u64)
    } else if took > SLICE_TARGET * 2 {
        (slice / 2).max(1_000)
    } else {
        slice
    }
}

/// Apply the run options of `overrides` to `cfg`: `seed` and `duration`
/// (integer ns) replace the configured ones, `trace` and `records` (dicts
/// of their fields) replace the whole section, `trace_merge` sets only the
/// trace fields it names. Any other key is an error naming it. The result
/// is checked once, by `Simulation::new`.
fn apply_overrides(cfg: &mut SimConfig, overrides: &Bound<'_, PyDict>) -> PyResult<()> {
    let bad = |key: &str, e: &dyn std::fmt::Display| PyValueError::new_err(format!("{key}: {e}"));
    for (k, v) in overrides.iter() {
        let key: String = k.extract()?;
        match key.as_str() {
            "seed" => cfg.seed = v.extract().map_err(|e| bad("seed", &e))?,
            "duration" => cfg.duration = v.extract().map_err(|e| bad("duration", &e))?,
            "trace" => {
                cfg.trace = crate::frompy::from_py(&v).map_err(|e| bad("trace", &e))?;
            }
            "records" => {
                cfg.records = crate::frompy::from_py(&v).map_err(|e| bad("records", &e))?;
            }
            "trace_merge" => {
                let d = v.cast::<PyDict>().map_err(|e| bad("trace", &e))?;
                for (f, x) in d.iter() {
                    let field: String = f.extract()?;
                    match field.as_str() {
                        "enabled" => {
                            cfg.trace.enabled = x.extract().map_err(|e| bad("trace.enabled", &e))?
                        }
                        "until" => {
                            cfg.trace.until = x.extract().map_err(|e| bad("trace.until", &e))?
                        }
                        "max_events" => {
                            cfg.trace.max_events =
                                x.extract().map_err(|e| bad("trace.max_events", &e))?
                        }
                        other => return Err(bad("trace", &format!("unknown field {other:?}"))),
                    }
                }
            }
            other => {
                return Err(PyValueError::new_err(format!(
                    "{other}: not a run option (seed, duration, trace, trace_merge, records)"
                )))
            }
        }
    }
    Ok(())
}

/// `(outcome, trace_json, interrupted, records)`.
type RunResult<'py> = (Outcome, String, bool, Bound<'py, PyDict>);

/// The metrics and the resolved configuration (every default filled in)
/// of one run, held as Rust values: each becomes Python objects only when
/// taken (`take_metrics()`, `take_config()`), so a caller that reads
/// neither pays nothing for them, and the Rust values are freed once
/// taken (a caller keeps the Python objects).
#[pyclass(module = "irqlab._native.sim", name = "Outcome")]
struct Outcome {
    metrics: Option<Metrics>,
    config: Option<SimConfig>,
}

/// The Python objects of `value`, which is then freed; an error if it
/// was taken before.
fn take<'py, T: serde::Serialize>(
    py: Python<'py>,
    value: &mut Option<T>,
    what: &str,
) -> PyResult<Bound<'py, PyAny>> {
    let v = value
        .as_ref()
        .ok_or_else(|| PyRuntimeError::new_err(format!("the {what} were already taken")))?;
    let obj = crate::topy::to_py(py, v)?;
    *value = None;
    Ok(obj)
}

#[pymethods]
impl Outcome {
    /// The metrics: the objects `json.loads` gives for `metrics.json`.
    fn take_metrics<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        take(py, &mut self.metrics, "metrics")
    }

    /// The configuration that ran, every default filled in: the objects
    /// `json.loads` gives for its JSON text.
    fn take_config<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        take(py, &mut self.config, "configuration")
    }
}

/// Simulate `config` (a resolved `System` handle, a dict in the shape of
/// `SimConfig`, or its JSON text), with the run options of `overrides`
/// applied to it (see `apply_overrides`), in slices of simulated time, releasing the GIL
/// during each slice and checking for signals (Ctrl-C) between slices;
/// `progress(now_ns, duration_ns, events)` is called between slices
/// (`events`: events processed so far). Returns
/// `(outcome, trace_json, interrupted, records)`: `outcome` holds the
/// metrics and the resolved configuration (every default filled in) and
/// makes them Python objects when they are taken; `trace_json` is the trace as JSON text, or ""
/// when it was written to `trace_path` (streamed from the compact records,
/// in `trace_format` "json" or "perfetto"); `records` holds the per-job
/// and per-request columns (`records` in the configuration) as
/// little-endian bytes for `numpy.frombuffer`. On Ctrl-C the run ends at
/// the time reached (metrics marked `partial`) and `interrupted` is true.
#[pyfunction]
#[pyo3(signature = (config, progress=None, trace_path=None, trace_format="json", overrides=None))]
fn run<'py>(
    py: Python<'py>,
    config: &Bound<'py, PyAny>,
    progress: Option<Bound<'py, PyAny>>,
    trace_path: Option<PathBuf>,
    trace_format: &str,
    overrides: Option<Bound<'py, PyDict>>,
) -> PyResult<RunResult<'py>> {
    let format: TraceFormat = trace_format
        .parse()
        .map_err(|e: String| PyValueError::new_err(format!("trace_format: {e}")))?;
    let mut cfg = extract_config(py, config)?;
    if let Some(o) = &overrides {
        apply_overrides(&mut cfg, o)?;
    }
    // kept for `Outcome::config`: the simulation widens `window` and, when
    // stopped early, shortens `duration` in its own copy
    let resolved = cfg.clone();
    let duration = cfg.duration;
    let err = |e: irqlab_sim::SimError| PyValueError::new_err(e.to_string());
    let mut sim = py.detach(|| crate::guard("simulate", || Simulation::new(cfg).map_err(err)))?;
    let mut slice = duration.clamp(1, 1_000_000);
    let mut interrupted = false;
    while sim.now() < duration {
        let until = sim.now().saturating_add(slice).min(duration);
        let t0 = Instant::now();
        py.detach(|| crate::guard("simulate", || sim.run_until(until).map_err(err)))?;
        slice = next_slice(slice, t0.elapsed());
        let step = py.check_signals().and_then(|()| match &progress {
            Some(cb) => cb
                .call1((sim.now(), duration, sim.events_processed()))
                .map(|_| ()),
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
    let records = sim.take_records();
    let (m, t) = py.detach(|| {
        crate::guard("simulate", || {
            let (m, mut trace) = sim.finish().map_err(err)?;
            let text = match &trace_path {
                Some(p) => {
                    let io = |e: std::io::Error| {
                        PyOSError::new_err(format!("trace file {}: {e}", p.display()))
                    };
                    trace.write_file(p, format).map_err(io)?;
                    String::new()
                }
                None => trace.to_json_string(),
            };
            Ok((m, text))
        })
    })?;
    let outcome = Outcome {
        metrics: Some(m),
        config: Some(resolved),
    };
    Ok((outcome, t, interrupted, records_to_py(py, &records)?))
}

/// Little-endian bytes of a column (for `numpy.frombuffer`).
fn le<T: Copy, const N: usize>(v: &[T], f: fn(T) -> [u8; N]) -> Vec<u8> {
    v.iter().flat_map(|&x| f(x)).collect()
}

/// `{"jobs": {column: bytes}, "requests": {column: bytes}}`, or `{}` when
/// nothing was recorded (`records` off, the usual case: no objects made).
fn records_to_py<'py>(py: Python<'py>, r: &Records) -> PyResult<Bound<'py, PyDict>> {
    if r.job_task.is_empty() && r.req_device.is_empty() {
        return Ok(PyDict::new(py));
    }
    let jobs = PyDict::new(py);
    jobs.set_item("task", PyBytes::new(py, &le(&r.job_task, u32::to_le_bytes)))?;
    jobs.set_item(
        "release_ns",
        PyBytes::new(py, &le(&r.job_release, u64::to_le_bytes)),
    )?;
    jobs.set_item(
        "completion_ns",
        PyBytes::new(py, &le(&r.job_completion, u64::to_le_bytes)),
    )?;
    jobs.set_item("late", PyBytes::new(py, &r.job_late))?;
    let reqs = PyDict::new(py);
    reqs.set_item(
        "device",
        PyBytes::new(py, &le(&r.req_device, u32::to_le_bytes)),
    )?;
    reqs.set_item(
        "start_ns",
        PyBytes::new(py, &le(&r.req_start, u64::to_le_bytes)),
    )?;
    reqs.set_item(
        "end_ns",
        PyBytes::new(py, &le(&r.req_end, u64::to_le_bytes)),
    )?;
    let out = PyDict::new(py);
    out.set_item("jobs", jobs)?;
    out.set_item("requests", reqs)?;
    Ok(out)
}

/// The configuration `config` (a dict or JSON text, as for `run`) read,
/// with every default filled in, as JSON text; errors as for `run`.
/// `direct_only` (for tests): a dict must be read by the direct reader
/// (`frompy`), or `ValueError` says why it gave up.
#[pyfunction]
#[pyo3(signature = (config, direct_only=false))]
fn read_config(py: Python<'_>, config: &Bound<'_, PyAny>, direct_only: bool) -> PyResult<String> {
    let cfg = if direct_only {
        crate::frompy::from_py::<SimConfig>(config)
            .map_err(|e| PyValueError::new_err(format!("read directly: {e}")))?
    } else {
        extract_config(py, config)?
    };
    serde_json::to_string(&cfg).map_err(|e| PyValueError::new_err(e.to_string()))
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
    m.add_function(wrap_pyfunction!(read_config, &m)?)?;
    m.add_class::<Outcome>()?;
    parent.add_submodule(&m)?;
    Ok(())
}
