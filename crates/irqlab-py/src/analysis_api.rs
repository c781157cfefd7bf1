//! `irqlab._native.analysis`: the analyses from Python -- QUEST-VCPU Eq. 1,
//! USB-DIFFSERV Eq. 1-3, the VINT Eq. 3-8 bounds of a hypervisor machine,
//! and the parallel VINT sweeps (the GIL is released while they run).

use irqlab_analysis::gen::TableII;
use irqlab_analysis::{quest, rta, sweep, usb};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDict;

/// QUEST-VCPU Eq. 1: `main` = [(C, T)], `io` = [U]; returns (demand,
/// bound, slack, passes).
#[pyfunction]
fn quest_eq1(main: Vec<(u64, u64)>, io: Vec<f64>) -> PyResult<(f64, f64, f64, bool)> {
    if main.iter().any(|&(c, t)| t == 0 || c > t) || io.iter().any(|u| !(*u > 0.0 && *u <= 1.0)) {
        return Err(PyValueError::new_err(
            "main: need 0 <= C <= T, T > 0; io: U in (0, 1]",
        ));
    }
    let r = quest::eq1(&main, &io);
    Ok((r.demand, r.bound, r.slack, r.passes))
}

/// USB-DIFFSERV typical delay throughput (Eq. 4-8), bytes/s.
#[pyfunction]
fn usb_typical_throughput(beta: f64, omega_io: f64, u_io: f64, omega_main: f64) -> PyResult<f64> {
    if !(u_io > 0.0 && u_io <= 1.0) {
        return Err(PyValueError::new_err(format!(
            "u_io: {u_io} must be in (0, 1]"
        )));
    }
    Ok(usb::throughput(
        beta,
        usb::typical_latency(omega_io, u_io, omega_main),
    ))
}

/// USB-DIFFSERV Eq. 1-2 latency bound (seconds).
#[pyfunction]
fn usb_latency_bound(
    omega_io: f64,
    u_io: f64,
    omega_main: f64,
    c_main: f64,
    t_main: f64,
) -> PyResult<f64> {
    if !(u_io > 0.0 && u_io <= 1.0) || c_main <= 0.0 || t_main <= 0.0 {
        return Err(PyValueError::new_err(
            "need u_io in (0, 1], c_main > 0, t_main > 0",
        ));
    }
    Ok(usb::latency_bound(
        omega_io, u_io, omega_main, c_main, t_main,
    ))
}

/// VINT Eq. 3-8 for a hypervisor configuration (a resolved `System`
/// handle, or the resolved `SimConfig` as JSON text or a dict,
/// `irqlab_analysis::system::hypervisor_bounds`); returns the bounds as
/// JSON text. Bad configurations raise `ValueError` naming the field.
#[pyfunction]
fn hypervisor_bounds(py: Python<'_>, config: &Bound<'_, PyAny>) -> PyResult<String> {
    let cfg = crate::sim_api::extract_config(py, config)?;
    let b = crate::guard("hypervisor_bounds", || {
        irqlab_analysis::system::hypervisor_bounds(&cfg)
            .map_err(|e| PyValueError::new_err(e.to_string()))
    })?;
    serde_json::to_string(&b).map_err(|e| PyValueError::new_err(e.to_string()))
}

/// Bounds of a `quest`, `quest-no-iovcpu` or `linux` configuration
/// (`irqlab_analysis::system::model_bounds`): a resolved `System` handle,
/// or the `SimConfig` as JSON text or a dict, in; JSON text out.
#[pyfunction]
fn model_bounds(py: Python<'_>, config: &Bound<'_, PyAny>) -> PyResult<String> {
    let cfg = crate::sim_api::extract_config(py, config)?;
    let b = irqlab_analysis::system::model_bounds(&cfg)
        .map_err(|e| PyValueError::new_err(e.to_string()))?;
    serde_json::to_string(&b).map_err(|e| PyValueError::new_err(e.to_string()))
}

/// Fixed-priority RTA (`rta::fp_rta`): `tasks` = [(C, T, D, J, priority)]
/// in ns, higher priority more urgent; `origin` "arrival" or "release".
/// Returns per task (bound, None) or (None, reason).
#[pyfunction]
#[pyo3(signature = (tasks, origin="arrival"))]
fn fp_rta(
    tasks: Vec<(u64, u64, u64, u64, u32)>,
    origin: &str,
) -> PyResult<Vec<(Option<u64>, Option<String>)>> {
    let origin = match origin {
        "arrival" => rta::Origin::Arrival,
        "release" => rta::Origin::Release,
        o => {
            return Err(PyValueError::new_err(format!(
                "origin: {o:?} must be \"arrival\" or \"release\""
            )))
        }
    };
    let mut set = Vec::with_capacity(tasks.len());
    for (i, &(wcet, period, deadline, jitter, prio)) in tasks.iter().enumerate() {
        if period == 0 || wcet == 0 || deadline == 0 {
            return Err(PyValueError::new_err(format!(
                "tasks[{i}]: (C {wcet}, T {period}, D {deadline}): C, T and D must be positive"
            )));
        }
        set.push(rta::FpTask {
            wcet,
            period,
            deadline,
            jitter,
            prio,
        });
    }
    Ok(rta::fp_rta(&set, origin)
        .into_iter()
        .map(|r| match r {
            Ok(r) => (Some(r.response), None),
            Err(e) => (None, Some(e.to_string())),
        })
        .collect())
}

/// UUniFast (`gen::uunifast`): `n` utilizations summing to `total`,
/// deterministic for `seed`.
#[pyfunction]
#[pyo3(signature = (n, total, seed=0))]
fn uunifast(n: usize, total: f64, seed: u64) -> PyResult<Vec<f64>> {
    if n == 0 || n > 1_000_000 || !(total > 0.0 && total.is_finite()) {
        return Err(PyValueError::new_err(format!(
            "uunifast(n {n}, total {total}): need 1 <= n <= 1000000 and a positive finite total"
        )));
    }
    Ok(irqlab_analysis::gen::uunifast(
        &mut irqlab_analysis::gen::Rng::new(seed),
        n,
        total,
    ))
}

fn pair(d: &Bound<'_, PyDict>, key: &str, default: (u64, u64)) -> PyResult<(u64, u64)> {
    match d.get_item(key)? {
        Some(v) => {
            let (a, b): (u64, u64) = v
                .extract()
                .map_err(|_| PyValueError::new_err(format!("{key}: expected (low_ns, high_ns)")))?;
            if a > b {
                return Err(PyValueError::new_err(format!(
                    "{key}: ({a}, {b}): low above high"
                )));
            }
            Ok((a, b))
        }
        None => Ok(default),
    }
}

/// VINT Table II parameters: the defaults with `params`' overrides (ns).
fn table2(params: &Bound<'_, PyDict>) -> PyResult<TableII> {
    let known = [
        "vcpu_period",
        "irq_interarrival",
        "task_period",
        "isr_wcet",
        "virt_isr_wcet",
        "dsr_wcet",
        "utilization_per_vcpu",
        "vcpus",
        "phys_per_pcpu",
        "virt_per_vcpu",
        "tasks_per_vcpu",
    ];
    for k in params.keys() {
        let k: String = k.extract()?;
        if !known.contains(&k.as_str()) {
            return Err(PyValueError::new_err(format!(
                "params: unknown key {k:?}; known: {}",
                known.join(", ")
            )));
        }
    }
    let d = TableII::default();
    let mut p = TableII {
        vcpu_period: match params.get_item("vcpu_period")? {
            Some(v) => v.extract()?,
            None => d.vcpu_period,
        },
        irq_interarrival: pair(params, "irq_interarrival", d.irq_interarrival)?,
        task_period: pair(params, "task_period", d.task_period)?,
        isr_wcet: pair(params, "isr_wcet", d.isr_wcet)?,
        virt_isr_wcet: pair(params, "virt_isr_wcet", d.virt_isr_wcet)?,
        dsr_wcet: pair(params, "dsr_wcet", d.dsr_wcet)?,
        ..d
    };
    if let Some(u) = params.get_item("utilization_per_vcpu")? {
        p.utilization_per_vcpu = u.extract()?;
    }
    for (key, field) in [
        ("vcpus", &mut p.vcpus),
        ("phys_per_pcpu", &mut p.phys_per_pcpu),
        ("virt_per_vcpu", &mut p.virt_per_vcpu),
        ("tasks_per_vcpu", &mut p.tasks_per_vcpu),
    ] {
        if let Some(v) = params.get_item(key)? {
            *field = v.extract()?;
        }
    }
    if p.vcpus == 0 || p.tasks_per_vcpu == 0 || p.phys_per_pcpu == 0 {
        return Err(PyValueError::new_err(
            "vcpus, tasks_per_vcpu and phys_per_pcpu must be positive",
        ));
    }
    if !(p.utilization_per_vcpu > 0.0 && p.utilization_per_vcpu <= 1.0) {
        return Err(PyValueError::new_err(format!(
            "utilization_per_vcpu: {} must be in (0, 1]",
            p.utilization_per_vcpu
        )));
    }
    if p.vcpu_period == 0 || p.irq_interarrival.0 == 0 {
        return Err(PyValueError::new_err(
            "vcpu_period and interrupt inter-arrival times must be positive",
        ));
    }
    Ok(p)
}

/// VINT sweep: `params` overrides the Table II defaults (ns): keys
/// `vcpu_period`, `irq_interarrival`, `task_period`, `isr_wcet`,
/// `virt_isr_wcet`, `dsr_wcet`, `utilization_per_vcpu`. Returns
/// {"sets", "schedulable": {scheme: n}, "serviceable": {scheme: n}}.
#[pyfunction]
#[pyo3(signature = (params, sets, seed=0, pcpus=4, pseudo_ratio=(1, 1), threads=2))]
fn vint_sweep<'py>(
    py: Python<'py>,
    params: &Bound<'py, PyDict>,
    sets: u64,
    seed: u64,
    pcpus: usize,
    pseudo_ratio: (u64, u64),
    threads: usize,
) -> PyResult<Bound<'py, PyDict>> {
    let p = table2(params)?;
    if pseudo_ratio.1 == 0 || pseudo_ratio.0 < pseudo_ratio.1 {
        return Err(PyValueError::new_err("pseudo_ratio: need a ratio >= 1"));
    }
    let c = py.detach(|| {
        crate::guard("vint_sweep", || {
            Ok(sweep::sweep(&p, pcpus, sets, seed, pseudo_ratio, threads))
        })
    })?;
    let out = PyDict::new(py);
    out.set_item("sets", c.sets)?;
    let sched = PyDict::new(py);
    let serv = PyDict::new(py);
    for (n, (name, _, _)) in sweep::SCHEMES.iter().enumerate() {
        sched.set_item(*name, c.schedulable[n])?;
        serv.set_item(*name, c.serviceable[n])?;
    }
    out.set_item("schedulable", sched)?;
    out.set_item("serviceable", serv)?;
    Ok(out)
}

/// `n` periods in `[lo, hi]` ns, uniform or log-uniform (`gen::periods`),
/// deterministic for `seed`.
#[pyfunction]
#[pyo3(signature = (n, lo, hi, log_uniform=false, seed=0))]
fn periods(n: usize, lo: u64, hi: u64, log_uniform: bool, seed: u64) -> PyResult<Vec<u64>> {
    if n == 0 || n > 1_000_000 || lo == 0 || lo > hi {
        return Err(PyValueError::new_err(format!(
            "periods(n {n}, lo {lo}, hi {hi}): need 1 <= n <= 1000000 and 0 < lo <= hi (ns)"
        )));
    }
    Ok(irqlab_analysis::gen::periods(
        &mut irqlab_analysis::gen::Rng::new(seed),
        n,
        lo,
        hi,
        log_uniform,
    ))
}

/// Rate-monotonic priorities for `periods` (higher is more urgent).
#[pyfunction]
fn rm_priorities(periods: Vec<u64>) -> Vec<u32> {
    irqlab_analysis::gen::rm_priorities(&periods)
}

/// A random permutation of priorities `1..=n`, deterministic for `seed`.
#[pyfunction]
#[pyo3(signature = (n, seed=0))]
fn random_priorities(n: usize, seed: u64) -> PyResult<Vec<u32>> {
    if n == 0 || n > 1_000_000 {
        return Err(PyValueError::new_err(format!(
            "random_priorities(n {n}): need 1 <= n <= 1000000"
        )));
    }
    Ok(irqlab_analysis::gen::random_priorities(
        &mut irqlab_analysis::gen::Rng::new(seed),
        n,
    ))
}

/// Named integer fields per item, one dict per item.
type Rows<'a> = Vec<Vec<(&'a str, u64)>>;

/// System `index` of a VINT sweep with `seed` (`TableII::system`): per
/// PCPU a dict of `vcpus`, `tasks`, `phys` and `virt` lists (times in ns).
#[pyfunction]
#[pyo3(signature = (params, seed=0, index=0, pcpus=1))]
fn vint_table2<'py>(
    py: Python<'py>,
    params: &Bound<'py, PyDict>,
    seed: u64,
    index: u64,
    pcpus: usize,
) -> PyResult<Vec<Bound<'py, PyDict>>> {
    if pcpus == 0 || pcpus > 1024 {
        return Err(PyValueError::new_err(format!(
            "pcpus: {pcpus} must be in 1..=1024"
        )));
    }
    let p = table2(params)?;
    let rows = |items: Rows| -> PyResult<Vec<Bound<'py, PyDict>>> {
        items
            .into_iter()
            .map(|fields| {
                let d = PyDict::new(py);
                for (k, v) in fields {
                    d.set_item(k, v)?;
                }
                Ok(d)
            })
            .collect()
    };
    p.system(pcpus, seed, index)
        .into_iter()
        .map(|c| {
            let lists: [(&str, Rows); 4] = [
                (
                    "vcpus",
                    c.vcpus
                        .iter()
                        .map(|v| {
                            vec![
                                ("budget", v.budget),
                                ("period", v.period),
                                ("priority", v.prio.into()),
                            ]
                        })
                        .collect(),
                ),
                (
                    "tasks",
                    c.tasks
                        .iter()
                        .map(|t| {
                            vec![
                                ("C", t.wcet),
                                ("T", t.period),
                                ("priority", t.prio.into()),
                                ("vcpu", t.vcpu as u64),
                            ]
                        })
                        .collect(),
                ),
                (
                    "phys",
                    c.phys
                        .iter()
                        .map(|q| {
                            vec![
                                ("C", q.wcet),
                                ("T", q.period),
                                ("priority", q.prio.into()),
                                ("J", q.jitter),
                            ]
                        })
                        .collect(),
                ),
                (
                    "virt",
                    c.virt
                        .iter()
                        .map(|v| {
                            vec![
                                ("isr", v.isr),
                                ("dsr", v.dsr),
                                ("dsr_priority", v.dsr_prio.into()),
                                ("T", v.period),
                                ("priority", v.prio.into()),
                                ("vcpu", v.vcpu as u64),
                                ("phys", v.phys as u64),
                            ]
                        })
                        .collect(),
                ),
            ];
            let d = PyDict::new(py);
            for (key, items) in lists {
                d.set_item(key, rows(items)?)?;
            }
            Ok(d)
        })
        .collect()
}

pub fn register(parent: &Bound<'_, PyModule>) -> PyResult<()> {
    let m = PyModule::new(parent.py(), "analysis")?;
    m.add_function(wrap_pyfunction!(quest_eq1, &m)?)?;
    m.add_function(wrap_pyfunction!(usb_typical_throughput, &m)?)?;
    m.add_function(wrap_pyfunction!(usb_latency_bound, &m)?)?;
    m.add_function(wrap_pyfunction!(vint_sweep, &m)?)?;
    m.add_function(wrap_pyfunction!(hypervisor_bounds, &m)?)?;
    m.add_function(wrap_pyfunction!(model_bounds, &m)?)?;
    // the arrival period of a source that arrives once in all (`arrivals`)
    m.add("ONCE", irqlab_analysis::system::arrivals::ONCE)?;
    m.add_function(wrap_pyfunction!(fp_rta, &m)?)?;
    m.add_function(wrap_pyfunction!(uunifast, &m)?)?;
    m.add_function(wrap_pyfunction!(periods, &m)?)?;
    m.add_function(wrap_pyfunction!(rm_priorities, &m)?)?;
    m.add_function(wrap_pyfunction!(random_priorities, &m)?)?;
    m.add_function(wrap_pyfunction!(vint_table2, &m)?)?;
    parent.add_submodule(&m)?;
    Ok(())
}
