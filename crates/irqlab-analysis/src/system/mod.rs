//! The bounds `irqlab analyze` gives for a `quest`, `quest-no-iovcpu` or
//! `linux` machine (the hypervisor form is `hypervisor_bounds`): per CPU
//! the interrupt load, QUEST-VCPU Eq. 1 and each server's own response
//! (the fixed-priority RTA of `crate::rta`, top halves
//! included); per task its response over its server's supply.
//!
//! The mapping (docs/analysis.md states every condition):
//! * top halves run at arrival and are charged to whatever runs: on every
//!   CPU they are the highest-priority interference, for servers and for
//!   the tasks inside them (the supply a server gives its tasks is its
//!   periodic-resource sbf minus the top halves that land in it);
//!   arrival bounds come from `arrivals`;
//! * `linux`: bottom halves run in softirq context at IRQ exit or in
//!   ksoftirqd; wherever they run, counting each as interference above
//!   every task is safe (a softirq preempts everything; a ksoftirqd below a
//!   task only helps it);
//! * `quest-no-iovcpu`: a class's bottom halves run on a thread above every
//!   task of the consumer's Main VCPU: interference inside that VCPU;
//! * `quest`: bottom halves run on the class's PIBS I/O VCPU, which may
//!   inherit any served Main VCPU's period: it counts above every Main VCPU
//!   of its CPU, at `U (w + 2 T)` in a window `w` (budget `C_max = U T` for
//!   the longest inherited period `T`, replenished at rate `U`: QUEST-VCPU
//!   Alg. 7-10, Eq. 3);
//! * servers: sporadic `(C, T)` interferes as a periodic task, deferrable
//!   and polling ones with release jitter `T - C`, SCHED_DEADLINE (CBS)
//!   servers, above every fixed-priority server, with jitter `P - Q`; a
//!   server passing its RTA (`R <= T`) supplies `sbf(T, C)` (a polling
//!   server, which loses its budget when idle, `C` later); CBS servers
//!   pass the sufficient EDF test `(1 - sum Q/P - U_irq) P_min >= sum C_irq`;
//! * tasks: periodic compute-only tasks in a budgeted server get the FP RTA
//!   over the server's sbf (`rta::Supply::Periodic`); in an unbounded
//!   (SCHED_FIFO) server the FP RTA on the CPU, every more urgent entity
//!   interfering. Everything else says why it has no bound.
//!
//! Design principles: the equations live in `irqlab_analysis`; this module
//! maps the configuration onto them and never invents a bound.

pub mod arrivals;
pub mod hypervisor;
mod hypervisor_inputs;
pub mod io;

pub use hypervisor::hypervisor_bounds;

use crate::quest;
use crate::rta::{analyse_supplied, Analysed, Interferer, Origin, Supply, Terms};
use crate::system::arrivals::{bottom_halves_in, is_background, requests, Source};
use crate::system::io::{
    pibs_interference, read_latency, segmented_row, suspends, task_demand, top_halves, IoBound,
};
use irqlab_system::config::{InterruptPath, PolicyCfg, SimConfig};
use irqlab_system::SystemError;
use serde::Serialize;

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ModelBounds {
    pub path: String,
    pub cpus: Vec<CpuBound>,
    pub tasks: Vec<TaskBound>,
    /// Per task and device it reads: the read's latency bound
    /// (`io_bounds`).
    pub io: Vec<IoBound>,
    /// Every task bounded within its deadline and every server within its
    /// period.
    pub ok: bool,
    /// Why `ok` is false, one line each.
    pub failures: Vec<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CpuBound {
    pub cpu: usize,
    /// Long-run CPU share of the interrupt work counted as interference
    /// (top halves; on `linux` bottom halves too); `None` without an
    /// arrival bound.
    pub interrupt_load: Option<f64>,
    pub interrupts: Vec<IrqBound>,
    /// QUEST-VCPU Eq. 1 (a sufficient test, reported next to the exact one).
    pub eq1: Option<Eq1>,
    pub servers: Vec<ServerBound>,
    /// Why nothing on this CPU is bounded, if so.
    pub note: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct IrqBound {
    pub device: String,
    pub top_half: u64,
    pub bottom_half: u64,
    /// `(count, period, jitter)`: at most `count ceil((w + jitter) /
    /// period)` arrivals in a window `w`.
    pub arrivals: Option<(u64, u64, u64)>,
    pub note: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Eq1 {
    pub demand: f64,
    pub bound: f64,
    pub passes: bool,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ServerBound {
    pub name: String,
    pub policy: &'static str,
    pub budget: Option<u64>,
    pub period: Option<u64>,
    /// Time to receive its budget (RTA), `None` above its period.
    pub response: Option<u64>,
    pub equation: &'static str,
    pub schedulable: bool,
    pub note: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TaskBound {
    pub name: String,
    pub server: String,
    pub cpu: usize,
    pub wcet: Option<u64>,
    pub period: Option<u64>,
    pub deadline: Option<u64>,
    pub response: Option<u64>,
    pub equation: String,
    pub schedulable: bool,
    pub note: Option<String>,
}

fn bad(path: &str, value: impl std::fmt::Display, rule: &str) -> SystemError {
    SystemError::Config {
        path: path.into(),
        value: value.to_string(),
        rule: rule.into(),
    }
}

/// The fixed-priority key of a server (smaller is more urgent; `None`:
/// the deadline class above every key, or a PIBS I/O VCPU).
fn fp_key(p: &PolicyCfg, rank: Option<u64>) -> Option<u64> {
    match p {
        PolicyCfg::Sporadic { period, .. }
        | PolicyCfg::Deferrable { period, .. }
        | PolicyCfg::Polling { period, .. } => Some(rank.unwrap_or(*period)),
        PolicyCfg::Unbounded {} => Some(rank.unwrap_or(u64::MAX)),
        PolicyCfg::Cbs { .. } | PolicyCfg::Pibs { .. } => None,
    }
}

/// `(budget, period, interference jitter)` of a budgeted server.
pub(crate) fn budget_of(p: &PolicyCfg) -> Option<(u64, u64, u64, &'static str)> {
    match *p {
        PolicyCfg::Sporadic { budget, period, .. } => Some((budget, period, 0, "sporadic")),
        PolicyCfg::Deferrable { budget, period } => {
            Some((budget, period, period - budget.min(period), "deferrable"))
        }
        PolicyCfg::Polling { budget, period } => {
            Some((budget, period, period - budget.min(period), "polling"))
        }
        PolicyCfg::Cbs { runtime, period } => {
            Some((runtime, period, period - runtime.min(period), "cbs"))
        }
        _ => None,
    }
}

/// The bounds of a `quest`, `quest-no-iovcpu` or `linux` configuration.
pub fn model_bounds(cfg: &SimConfig) -> Result<ModelBounds, SystemError> {
    if cfg.path == InterruptPath::Hypervisor {
        return Err(bad(
            "machine.path",
            "hypervisor",
            "use hypervisor_bounds for the VINT analysis",
        ));
    }
    cfg.check()?;
    let sources = arrivals::sources(cfg);
    let linux = cfg.path == InterruptPath::Linux;
    let mut cpus = Vec::new();
    let mut tasks: Vec<Option<TaskBound>> = vec![None; cfg.tasks.len()];
    for c in 0..cfg.cpus {
        let (cpu, rows) = cpu_bounds(cfg, c, &sources, linux);
        for (i, row) in rows {
            tasks[i] = Some(row);
        }
        if !cpu.interrupts.is_empty() || !cpu.servers.is_empty() {
            cpus.push(cpu);
        }
    }
    let tasks: Vec<TaskBound> = tasks.into_iter().flatten().collect();
    let mut failures = Vec::new();
    for c in &cpus {
        if let Some(n) = &c.note {
            failures.push(format!("cpu {}: {n}", c.cpu));
            continue; // its servers and tasks say the same
        }
        for s in c.servers.iter().filter(|s| !s.schedulable) {
            failures.push(format!(
                "server {}: {}",
                s.name,
                s.note.as_deref().unwrap_or("not schedulable")
            ));
        }
    }
    let noted = |c: usize| cpus.iter().any(|x| x.cpu == c && x.note.is_some());
    for t in tasks.iter().filter(|t| !t.schedulable && !noted(t.cpu)) {
        failures.push(format!(
            "task {}: {}",
            t.name,
            t.note.as_deref().unwrap_or("no bound")
        ));
    }
    let io = cfg
        .tasks
        .iter()
        .enumerate()
        .flat_map(|(ti, t)| {
            (0..cfg.devices.len())
                .filter(|&d| requests(&t.program, d) != Some(0))
                .map(move |d| (ti, d))
        })
        .map(|(ti, d)| read_latency(cfg, &sources, ti, d))
        .collect();
    Ok(ModelBounds {
        path: cfg.path.name().to_string(),
        io,
        ok: failures.is_empty(),
        failures,
        cpus,
        tasks,
    })
}

/// One CPU: its interrupts, servers, and the rows of its tasks.
fn cpu_bounds(
    cfg: &SimConfig,
    c: usize,
    sources: &[Source],
    linux: bool,
) -> (CpuBound, Vec<(usize, TaskBound)>) {
    let mine: Vec<&Source> = sources.iter().filter(|s| s.cpu == c).collect();
    let interrupts: Vec<IrqBound> = mine
        .iter()
        .map(|s| IrqBound {
            device: cfg.devices[s.device].name.clone(),
            top_half: s.top_half,
            bottom_half: s.bottom_half,
            arrivals: s.arrivals.clone().ok(),
            note: s.arrivals.clone().err(),
        })
        .collect();
    let irq: Option<Vec<Interferer>> = top_halves(sources, c, linux, None).ok();
    let load = irq.as_ref().map(|v| {
        v.iter()
            .filter(|i| i.period != arrivals::ONCE)
            .fold(0.0, |acc, i| acc + i.cost as f64 / i.period as f64)
    });
    let note = match (&irq, load) {
        (None, _) => {
            let s = mine
                .iter()
                .find(|s| s.arrivals.is_err())
                .map(|s| {
                    format!(
                        "{}: {}",
                        cfg.devices[s.device].name,
                        s.arrivals.clone().err().unwrap_or_default()
                    )
                })
                .unwrap_or_default();
            Some(format!("no bound on the interrupt load ({s})"))
        }
        (_, Some(u)) if u > 1.0 => Some(format!(
            "the interrupt load alone is {:.0}% of the CPU: it starves every task",
            u * 100.0
        )),
        _ => None,
    };
    let irq = irq.unwrap_or_default();
    let server_ids: Vec<usize> = (0..cfg.servers.len())
        .filter(|&s| cfg.servers[s].cpu == c)
        .collect();

    // PIBS I/O VCPUs: U (w + 2 T) above every Main VCPU of the CPU
    let pibs: Vec<Interferer> = pibs_interference(cfg, c)
        .into_iter()
        .map(|(_, i)| i)
        .collect();
    // QUEST-VCPU Eq. 1
    let eq1 = (!linux).then(|| {
        let main: Vec<(u64, u64)> = server_ids
            .iter()
            .filter_map(|&s| budget_of(&cfg.servers[s].policy).map(|(b, t, _, _)| (b, t)))
            .collect();
        let io: Vec<f64> = server_ids
            .iter()
            .filter_map(|&s| match cfg.servers[s].policy {
                PolicyCfg::Pibs { num, den, .. } => Some(num as f64 / den as f64),
                _ => None,
            })
            .collect();
        let r = quest::eq1(&main, &io);
        Eq1 {
            demand: r.demand,
            bound: r.bound,
            passes: r.passes,
        }
    });
    let eq1 = eq1.filter(|_| {
        server_ids
            .iter()
            .any(|&s| budget_of(&cfg.servers[s].policy).is_some())
    });

    // CBS servers: the sufficient EDF test with interrupts
    let cbs: Vec<(u64, u64)> = server_ids
        .iter()
        .filter_map(|&s| match cfg.servers[s].policy {
            PolicyCfg::Cbs { runtime, period } => Some((runtime, period)),
            _ => None,
        })
        .collect();
    let cbs_ok = {
        let u: f64 =
            cbs.iter().map(|&(q, p)| q as f64 / p as f64).sum::<f64>() + load.unwrap_or(0.0);
        let burst: u64 = irq.iter().map(|i| i.cost).sum();
        let pmin = cbs.iter().map(|x| x.1).min().unwrap_or(0);
        cbs.is_empty() || (u < 1.0 && (1.0 - u) * pmin as f64 >= burst as f64)
    };
    let background_server = server_ids.iter().find(|&&s| {
        matches!(
            cfg.servers[s].policy,
            PolicyCfg::Sporadic {
                background: true,
                ..
            }
        )
    });

    // interference on an FP entity of key `k` (server `me` excluded)
    let above = |me: usize, k: u64| -> Vec<Interferer> {
        let mut v = irq.clone();
        v.extend(pibs.iter().copied());
        for &s in &server_ids {
            if s == me {
                continue;
            }
            let p = &cfg.servers[s].policy;
            let more_urgent = match fp_key(p, cfg.servers[s].rank) {
                Some(ks) => ks <= k,
                None => matches!(p, PolicyCfg::Cbs { .. }),
            };
            if let (true, Some((b, t, j, _))) = (more_urgent, budget_of(p)) {
                v.push(Interferer::new(b, t, j));
            }
        }
        v
    };

    let mut servers = Vec::new();
    let mut supply: Vec<(usize, Result<Supply, String>)> = Vec::new();
    for &s in &server_ids {
        let sc = &cfg.servers[s];
        let (row, sup) = match (&sc.policy, budget_of(&sc.policy)) {
            (PolicyCfg::Cbs { .. }, Some((q, p, _, _))) => {
                let ok = cbs_ok && note.is_none();
                (
                    ServerBound {
                        name: sc.name.clone(),
                        policy: "cbs",
                        budget: Some(q),
                        period: Some(p),
                        response: None,
                        equation: "EDF: (1 - sum Q/P - U_irq) P_min >= sum C_irq",
                        schedulable: ok,
                        note: (!ok).then(|| {
                            "the CBS servers fail the EDF test with the interrupt load".into()
                        }),
                    },
                    if ok {
                        Ok(Supply::Periodic {
                            pi: p,
                            theta: q,
                            delay: 0,
                        })
                    } else {
                        Err(format!("its server {} fails the EDF test", sc.name))
                    },
                )
            }
            (p, Some((b, t, _, policy))) => {
                let k = fp_key(p, sc.rank).unwrap_or(0);
                let r = if note.is_some() {
                    None
                } else {
                    analyse_supplied(
                        Analysed::new(b, t, 0),
                        &above(s, k),
                        Origin::Release,
                        t,
                        Terms::ALL,
                        &Supply::Full,
                    )
                    .ok()
                    .map(|r| r.response)
                };
                let ok = (r.is_some() || b == 0) && note.is_none();
                (
                    ServerBound {
                        name: sc.name.clone(),
                        policy,
                        budget: Some(b),
                        period: Some(t),
                        response: r,
                        equation: "FP RTA (busy period) with top halves",
                        schedulable: ok,
                        note: match (&note, ok) {
                            (Some(n), _) => Some(n.clone()),
                            (None, false) => {
                                Some("it does not receive its budget within its period".into())
                            }
                            _ => None,
                        },
                    },
                    if ok && b > 0 {
                        Ok(Supply::Periodic {
                            pi: t,
                            theta: b,
                            delay: if policy == "polling" { b } else { 0 },
                        })
                    } else {
                        Err(format!(
                            "its server {} does not receive its budget within its period",
                            sc.name
                        ))
                    },
                )
            }
            (PolicyCfg::Pibs { num, den, .. }, _) => (
                ServerBound {
                    name: sc.name.clone(),
                    policy: "pibs",
                    budget: None,
                    period: None,
                    response: None,
                    equation: "QUEST-VCPU Eq. 3: U (w + 2 T) above every Main VCPU",
                    schedulable: true,
                    note: Some(format!("I/O VCPU, U = {num}/{den}")),
                },
                Err("an I/O VCPU runs bottom halves, not tasks".into()),
            ),
            _ => (
                ServerBound {
                    name: sc.name.clone(),
                    policy: "unbounded",
                    budget: None,
                    period: None,
                    response: None,
                    equation: "fixed priority (no budget)",
                    schedulable: true,
                    note: None,
                },
                match background_server {
                    Some(&b) => Err(format!(
                        "the background-mode server {} may run above it",
                        cfg.servers[b].name
                    )),
                    None => Ok(Supply::Full),
                },
            ),
        };
        servers.push(row);
        supply.push((s, sup));
    }

    // tasks
    let mut rows = Vec::new();
    for (i, t) in cfg.tasks.iter().enumerate() {
        let Some((_, sup)) = supply.iter().find(|(s, _)| *s == t.server) else {
            continue;
        };
        let sc = &cfg.servers[t.server];
        let mut row = TaskBound {
            name: t.name.clone(),
            server: sc.name.clone(),
            cpu: c,
            wcet: None,
            period: None,
            deadline: None,
            response: None,
            equation: String::new(),
            schedulable: false,
            note: None,
        };
        if is_background(&t.release, &t.program) {
            row.schedulable = true;
            row.note = Some("background task: no deadline".into());
            rows.push((i, row));
            continue;
        }
        // a task released once has no deadline: nothing to bound (its I/O
        // latency is bounded per class, its interference on others is
        // checked where they are)
        if matches!(t.release, irqlab_system::config::Release::Once { .. }) {
            row.schedulable = true;
            row.note = Some("released once: no deadline".into());
            rows.push((i, row));
            continue;
        }
        let (wcet, period, deadline) = match task_demand(cfg, sources, i) {
            Ok(x) => x,
            Err(why) => {
                row.note = Some(format!("no bound: {why}"));
                rows.push((i, row));
                continue;
            }
        };
        (row.wcet, row.period, row.deadline) = (Some(wcet), Some(period), Some(deadline));
        if let Some(n) = &note {
            row.note = Some(n.clone());
            rows.push((i, row));
            continue;
        }
        let sup = match sup {
            Ok(s) => *s,
            Err(why) => {
                row.note = Some(why.clone());
                rows.push((i, row));
                continue;
            }
        };
        // a background task above it in its server starves it
        if let Some(b) = cfg.tasks.iter().find(|o| {
            o.server == t.server && o.priority > t.priority && is_background(&o.release, &o.program)
        }) {
            row.note = Some(format!("below the background task {}", b.name));
            rows.push((i, row));
            continue;
        }
        // same-server tasks at or above its priority, and the bottom halves
        // that run above every task of the server
        let mut hp: Vec<Interferer> = Vec::new();
        for (k, o) in cfg.tasks.iter().enumerate() {
            if k == i || o.server != t.server || o.priority < t.priority {
                continue;
            }
            match task_demand(cfg, sources, k) {
                Ok((w, p, _)) => hp.push(Interferer::new(w, p, 0)),
                Err(_) => {
                    row.note = Some(format!("{} above it has no arrival bound", o.name));
                    break;
                }
            }
        }
        if row.note.is_some() {
            rows.push((i, row));
            continue;
        }
        if cfg.path == InterruptPath::QuestNoIovcpu {
            hp.extend(bottom_halves_in(cfg, t.server, sources));
        }
        let eq = match sup {
            Supply::Full => {
                let k = fp_key(&sc.policy, sc.rank).unwrap_or(u64::MAX);
                hp.extend(above(t.server, k));
                // unbounded servers of the CPU at or above its rank: their
                // tasks interfere
                for (k2, o) in cfg.tasks.iter().enumerate() {
                    let os = &cfg.servers[o.server];
                    if k2 == i
                        || o.server == t.server
                        || os.cpu != c
                        || !matches!(os.policy, PolicyCfg::Unbounded {})
                    {
                        continue;
                    }
                    if fp_key(&os.policy, os.rank).unwrap_or(u64::MAX) <= k {
                        match task_demand(cfg, sources, k2) {
                            Ok((w, p, _)) => hp.push(Interferer::new(w, p, 0)),
                            Err(_) => {
                                row.note =
                                    Some(format!("{} above it has no arrival bound", o.name));
                            }
                        }
                    }
                }
                "FP RTA (busy period) on the CPU, interrupt work and more urgent entities above"
            }
            Supply::Periodic { .. } => {
                hp.extend(irq.iter().copied());
                "FP RTA over the server's sbf (periodic resource), top halves charged to it"
            }
        };
        row.equation = eq.into();
        if row.note.is_some() {
            rows.push((i, row));
            continue;
        }
        if suspends(&t.program) {
            segmented_row(cfg, sources, i, &hp, &sup, &mut row);
            rows.push((i, row));
            continue;
        }
        match analyse_supplied(
            Analysed::new(wcet, period, 0),
            &hp,
            Origin::Release,
            deadline,
            Terms::ALL,
            &sup,
        ) {
            Ok(r) => {
                row.response = Some(r.response);
                row.schedulable = true;
            }
            Err(e) => row.note = Some(format!("exceeds its deadline ({e})")),
        }
        rows.push((i, row));
    }
    (
        CpuBound {
            cpu: c,
            interrupt_load: load,
            interrupts,
            eq1,
            servers,
            note,
        },
        rows,
    )
}
