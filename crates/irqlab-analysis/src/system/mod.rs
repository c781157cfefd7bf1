//! The bounds `irqlab analyze` gives for a `quest`, `quest-no-iovcpu` or
//! `linux` machine (the hypervisor form is `hypervisor_bounds`): per CPU
//! the interrupt load, QUEST-VCPU Eq. 1 and each server's own response
//! (the fixed-priority RTA of `crate::rta`, top halves
//! included); per task its response over its server's supply.
//!
//! The mapping (docs/analysis.md states every condition; the equations
//! are `crate::server` S1-S3, `crate::pibs` P1-P3, `crate::suspension` J1):
//! * top halves run at arrival and are charged to whatever runs: on every
//!   CPU they are the highest-priority interference, for servers and for
//!   the tasks inside them (they take the server's budget too); arrival
//!   bounds come from `arrivals` (a device with two sound bounds keeps
//!   both, `rta::Interferer::or`);
//! * `linux`: bottom halves run in softirq context at IRQ exit or in
//!   ksoftirqd; wherever they run, counting each as interference above
//!   every task is safe (a softirq preempts everything; a ksoftirqd below a
//!   task only helps it);
//! * `quest-no-iovcpu`: a class's bottom halves run on a thread above every
//!   task of the consumer's Main VCPU: interference inside that VCPU;
//! * `quest`: bottom halves run on the class's PIBS I/O VCPU, which runs at
//!   the period it inherits (QUEST-VCPU Alg. 10): it counts only above the
//!   Main VCPUs of a period at least its shortest inheritable one (P2), by
//!   the smaller of P1 (`U (w + T + D - C_max)`, `D` its chunks' response
//!   at its lowest inheritable priority) and P3 (its work with the work's
//!   busy period as jitter);
//! * servers: sporadic `(C, T)` interferes as a periodic task, deferrable
//!   and polling ones with release jitter `T - C`, SCHED_DEADLINE (CBS)
//!   servers, above every fixed-priority server, with jitter `P - Q`; a
//!   server's response `R` is reported past its period too; one passing
//!   (`R <= T`) supplies S1, the blackout `(T - C) + (R - C)` (polling `T +
//!   R - C`); CBS servers pass the sufficient EDF test `(1 - sum Q/P -
//!   U_irq) P_min >= sum C_irq` and supply the periodic resource;
//! * tasks, most urgent first: a task alone in a sporadic server (computes,
//!   at most one read or sleep, computes) gets S2, its job's FP RTA at the
//!   server's priority; the periodic tasks of a sporadic server that
//!   never runs out (S3) their FP RTA at its priority; others
//!   the FP RTA over S1 (or the CBS server's periodic resource), a job that
//!   reads or sleeps segment by segment; in an unbounded (SCHED_FIFO)
//!   server the FP RTA on the CPU. A more urgent task that suspends
//!   interferes as J1 (`(E, T, R - E)`) once bounded within its period. A
//!   bound above the deadline is still reported (not `schedulable`) with
//!   its `terms`; everything else says why it has no bound.
//!
//! Design principles: the equations live in `irqlab_analysis`; this module
//! maps the configuration onto them and never invents a bound.

pub mod arrivals;
pub mod hypervisor;
mod hypervisor_inputs;
pub mod io;

pub use hypervisor::hypervisor_bounds;

use crate::quest;
use crate::rta::{
    analyse_over, analyse_supplied, Analysed, Interferer, Origin, Supply, SupplyBound, Terms,
};
use crate::server::{own_response, OwnJob, OwnSupply, Replenish};
use crate::suspension::jitter_interferer;
use crate::system::arrivals::{bottom_halves_in, is_background, requests, Source};
use crate::system::io::{
    execution, one_suspension, pibs_interference, read_latency, segmented_row, suspends,
    task_demand, top_halves, IoBound, PibsLoad, Suspension,
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
    /// Time to receive its budget (RTA), also past its period (then not
    /// `schedulable`); `None` without a bound.
    pub response: Option<u64>,
    /// S1's blackout `B` of the supply it gives its tasks (`(T - C) + (R -
    /// C)`, polling `T + R - C`), when it receives its budget in time.
    pub blackout: Option<u64>,
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
    /// The bound, also above the deadline (then not `schedulable`).
    pub response: Option<u64>,
    pub equation: String,
    pub schedulable: bool,
    pub note: Option<String>,
    /// What the bound is made of, largest first.
    pub terms: Vec<Term>,
}

/// One term of a bound.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Term {
    pub name: String,
    pub ns: u64,
}

impl Term {
    pub fn new(name: &str, ns: u64) -> Term {
        Term {
            name: name.into(),
            ns,
        }
    }
}

/// Sort terms largest first.
pub(crate) fn ranked(mut v: Vec<Term>) -> Vec<Term> {
    v.retain(|t| t.ns > 0);
    v.sort_by_key(|t| std::cmp::Reverse(t.ns));
    v
}

/// A bound above its deadline is still computed up to this many
/// deadlines (or periods), so it can be reported.
pub(crate) const REPORT: u64 = 64;

/// What the tasks of a server run on.
#[derive(Copy, Clone, Debug, PartialEq)]
pub(crate) enum TaskSupply {
    Full,
    /// A CBS server's periodic resource.
    Prm(Supply),
    /// A budgeted fixed-priority server's supply from its own response
    /// (S1, `irqlab_analysis::server`).
    Own(OwnSupply),
    /// A sporadic server that never runs out of budget (S3): the CPU at
    /// the server's priority.
    NoStall,
}

impl SupplyBound for TaskSupply {
    fn time_to(&self, x: u64) -> u64 {
        match self {
            TaskSupply::Full | TaskSupply::NoStall => x,
            TaskSupply::Prm(s) => s.time_to(x),
            TaskSupply::Own(s) => s.time_to(x),
        }
    }
    fn rate(&self) -> f64 {
        match self {
            TaskSupply::Full | TaskSupply::NoStall => 1.0,
            TaskSupply::Prm(s) => s.rate(),
            TaskSupply::Own(s) => s.rate(),
        }
    }
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

    // PIBS I/O VCPUs: P1 at the keys they can inherit (P2)
    let pibs: Vec<PibsLoad> = pibs_interference(cfg, sources, c);
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
        v.extend(pibs.iter().filter(|p| p.server != me).flat_map(|p| p.on(k)));
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
    let mut supply: Vec<(usize, Result<TaskSupply, String>)> = Vec::new();
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
                        blackout: None,
                        equation: "EDF: (1 - sum Q/P - U_irq) P_min >= sum C_irq",
                        schedulable: ok,
                        note: (!ok).then(|| {
                            "the CBS servers fail the EDF test with the interrupt load".into()
                        }),
                    },
                    if ok {
                        Ok(TaskSupply::Prm(Supply::Periodic {
                            pi: p,
                            theta: q,
                            delay: 0,
                        }))
                    } else {
                        Err(format!("its server {} fails the EDF test", sc.name))
                    },
                )
            }
            (p, Some((b, t, _, policy))) => {
                let k = fp_key(p, sc.rank).unwrap_or(0);
                // its response, reported past its period too (up to
                // `REPORT` periods)
                let r = if note.is_some() {
                    None
                } else {
                    analyse_supplied(
                        Analysed::new(b, t, 0),
                        &above(s, k),
                        Origin::Release,
                        t.saturating_mul(REPORT),
                        Terms::ALL,
                        &Supply::Full,
                    )
                    .ok()
                    .map(|r| r.response)
                };
                let within = r.filter(|&r| r <= t);
                let ok = (within.is_some() || b == 0) && note.is_none();
                let replenish = match policy {
                    "deferrable" => Replenish::Deferrable,
                    "polling" => Replenish::Polling,
                    _ => Replenish::Sporadic,
                };
                let own = within.and_then(|r| OwnSupply::new(replenish, b, t, r.max(b)).ok());
                (
                    ServerBound {
                        name: sc.name.clone(),
                        policy,
                        budget: Some(b),
                        period: Some(t),
                        response: r,
                        blackout: own.map(|o| o.blackout()),
                        equation: "FP RTA (busy period) with top halves and the I/O VCPUs \
                                   that can inherit its priority",
                        schedulable: ok,
                        note: match (&note, ok) {
                            (Some(n), _) => Some(n.clone()),
                            (None, false) => {
                                Some("it does not receive its budget within its period".into())
                            }
                            _ => None,
                        },
                    },
                    if let (true, Some(own)) = (ok && b > 0, own) {
                        Ok(TaskSupply::Own(own))
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
                    blackout: None,
                    equation: "P1: U (w + D - C_max) + C_max at the priorities it can inherit \
                               (P2; QUEST-VCPU Alg. 7-10)",
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
                    blackout: None,
                    equation: "fixed priority (no budget)",
                    schedulable: true,
                    note: None,
                },
                match background_server {
                    Some(&b) => Err(format!(
                        "the background-mode server {} may run above it",
                        cfg.servers[b].name
                    )),
                    None => Ok(TaskSupply::Full),
                },
            ),
        };
        servers.push(row);
        supply.push((s, sup));
    }

    // tasks, most urgent first (a suspending task's bound is its jitter
    // on the tasks below it: J1)
    let mut order: Vec<usize> = (0..cfg.tasks.len())
        .filter(|&i| supply.iter().any(|(s, _)| *s == cfg.tasks[i].server))
        .collect();
    order.sort_by_key(|&i| {
        let sc = &cfg.servers[cfg.tasks[i].server];
        (
            fp_key(&sc.policy, sc.rank).unwrap_or(0),
            std::cmp::Reverse(cfg.tasks[i].priority),
        )
    });
    let mut bounds: Vec<Option<u64>> = vec![None; cfg.tasks.len()];
    // the interference of task `k` on the tasks below it: J1 when it
    // suspends and has a bound within its period, else its whole job as
    // execution (suspension-oblivious)
    let as_hp = |k: usize, bounds: &[Option<u64>]| -> Result<Interferer, String> {
        let o = &cfg.tasks[k];
        if suspends(&o.program) {
            if let (Some(r), irqlab_system::config::Release::Periodic { period, .. }) =
                (bounds[k], &o.release)
            {
                if r <= *period {
                    let e = execution(cfg, k)?;
                    if let Some(j) = jitter_interferer(e, *period, r) {
                        return Ok(j);
                    }
                }
            }
        }
        task_demand(cfg, sources, k).map(|(w, p, _)| Interferer::new(w, p, 0))
    };
    // S3: sporadic servers whose compute-only periodic tasks never let
    // them run out of budget; their tasks get the FP RTA at the server's
    // priority
    let no_stall: Vec<usize> = supply
        .iter()
        .filter_map(|(s, sup)| match sup {
            Ok(TaskSupply::Own(own)) => {
                never_runs_out(cfg, sources, *s, own, &above, &irq).then_some(*s)
            }
            _ => None,
        })
        .collect();
    let mut rows = Vec::new();
    for i in order {
        let t = &cfg.tasks[i];
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
            terms: Vec::new(),
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
            match as_hp(k, &bounds) {
                Ok(x) => hp.push(x),
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
        let in_server: Vec<Interferer> = if cfg.path == InterruptPath::QuestNoIovcpu {
            bottom_halves_in(cfg, t.server, sources)
        } else {
            Vec::new()
        };
        hp.extend(in_server.iter().copied());
        let k = fp_key(&sc.policy, sc.rank).unwrap_or(u64::MAX);
        // S2: the task alone in a sporadic server
        let alone = !cfg
            .tasks
            .iter()
            .enumerate()
            .any(|(o, x)| o != i && x.server == t.server);
        // (nothing else in the server: no bottom halves run in it)
        if let (true, TaskSupply::Own(own), true) = (
            alone && deadline <= period && in_server.is_empty(),
            sup,
            matches!(
                sc.policy,
                PolicyCfg::Sporadic {
                    background: false,
                    ..
                }
            ),
        ) {
            // an I/O VCPU serving this task alone runs only while it waits
            // for its read: it never preempts the task's runs
            let mut above_me = above(t.server, k);
            for p in pibs
                .iter()
                .filter(|p| crate::system::io::exclusive(cfg, i, p.server).is_ok())
            {
                for x in p.on(k) {
                    if let Some(pos) = above_me.iter().position(|y| *y == x) {
                        above_me.remove(pos);
                    }
                }
            }
            if let Some(b) = s2_row(
                cfg, sources, i, &own, period, deadline, &above_me, &irq, &in_server,
            ) {
                row.wcet = Some(b.1);
                row.equation = b.2.into();
                row.response = Some(b.0);
                row.schedulable = b.0 <= deadline;
                row.terms = b.3;
                if !row.schedulable {
                    row.note = Some(format!("its bound {} ns exceeds its deadline", b.0));
                }
                bounds[i] = Some(b.0);
                rows.push((i, row));
                continue;
            }
        }
        let sup = if no_stall.contains(&t.server) {
            TaskSupply::NoStall
        } else {
            sup
        };
        let eq = match sup {
            TaskSupply::NoStall => {
                hp.extend(above(t.server, k));
                "S3: FP RTA at the server's priority (its tasks never let it run out of budget: \
                 sum E ceil((T + R) / T_i) + top halves < C)"
            }
            TaskSupply::Full => {
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
                        match as_hp(k2, &bounds) {
                            Ok(x) => hp.push(x),
                            Err(_) => {
                                row.note =
                                    Some(format!("{} above it has no arrival bound", o.name));
                            }
                        }
                    }
                }
                "FP RTA (busy period) on the CPU, interrupt work and more urgent entities above"
            }
            TaskSupply::Prm(_) => {
                hp.extend(irq.iter().copied());
                "FP RTA over the server's sbf (periodic resource), top halves charged to it"
            }
            TaskSupply::Own(_) => {
                hp.extend(irq.iter().copied());
                "FP RTA over the server's supply from its own response (S1: blackout (T - C) + \
                 (R - C)), top halves charged to it"
            }
        };
        row.equation = eq.into();
        if row.note.is_some() {
            rows.push((i, row));
            continue;
        }
        if suspends(&t.program) {
            segmented_row(cfg, sources, i, &hp, &sup, &mut row);
            if row.schedulable {
                bounds[i] = row.response;
            }
            rows.push((i, row));
            continue;
        }
        match analyse_over(
            Analysed::new(wcet, period, 0),
            &hp,
            Origin::Release,
            deadline.saturating_mul(REPORT),
            Terms::ALL,
            &sup,
        ) {
            Ok(r) => {
                let blackout = match sup {
                    TaskSupply::Own(o) => o.blackout(),
                    _ => 0,
                };
                row.response = Some(r.response);
                row.schedulable = r.response <= deadline;
                row.terms = ranked(vec![
                    Term::new("execution", wcet),
                    Term::new("supply blackout", blackout),
                    Term::new(
                        "interference",
                        r.response.saturating_sub(wcet).saturating_sub(blackout),
                    ),
                ]);
                if row.schedulable {
                    bounds[i] = Some(r.response);
                } else {
                    row.note = Some(format!("its bound {} ns exceeds its deadline", r.response));
                }
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

/// S2 for task `i`, alone in the sporadic server `own`: `(bound,
/// execution, equation, terms)`, `None` when a condition fails (the caller
/// uses S1).
#[allow(clippy::too_many_arguments)]
fn s2_row(
    cfg: &SimConfig,
    sources: &[Source],
    i: usize,
    own: &OwnSupply,
    period: u64,
    deadline: u64,
    above_server: &[Interferer],
    irq: &[Interferer],
    in_server: &[Interferer],
) -> Option<(u64, u64, &'static str, Vec<Term>)> {
    let (c0, sus, c1) = one_suspension(cfg, i)?;
    let suspension = match sus {
        Suspension::None => 0,
        Suspension::Sleep(ns) => ns,
        Suspension::Read(d) => read_latency(cfg, sources, i, d).latency?,
    };
    let (head, demand) = match sus {
        Suspension::None => (0, c0.saturating_add(c1)),
        _ => (c0, c1),
    };
    let mut hp = above_server.to_vec();
    hp.extend(in_server.iter().copied());
    // what runs inside the server's budget while the job runs: top halves
    // (charged to whatever runs) and, on quest-no-iovcpu, its bottom halves
    let mut charged = irq.to_vec();
    charged.extend(in_server.iter().copied());
    let job = OwnJob {
        head,
        suspension,
        demand,
        min_interarrival: period,
    };
    let b = own_response(
        own.budget,
        own.period,
        job,
        &hp,
        &charged,
        deadline.saturating_mul(REPORT),
    );
    let b = b.ok()?;
    let terms = ranked(vec![
        Term::new("read or sleep bound", suspension),
        Term::new(
            "run after the suspension (FP RTA at the server's priority)",
            b.last_chunk,
        ),
        Term::new(
            "earlier runs and budget periods",
            b.response
                .saturating_sub(b.last_chunk)
                .saturating_sub(suspension),
        ),
    ]);
    Some((
        b.response,
        c0.saturating_add(c1),
        "S2: the task alone in its sporadic server: FP RTA of its job at the server's priority \
         (r(c0) + L + r(c1); beyond one budget (k - 1) T + r(last))",
        terms,
    ))
}

/// S3 for server `s` (`irqlab_analysis::server::never_depleted`): every
/// task of it periodic (a suspending one with its deadline and its
/// segmented bound within its period), nothing else in it (no bottom
/// halves), and `sum E ceil((T + R) / T_i) + top halves in T < C` with
/// each `R` the FP RTA at the server's priority (segment by segment for a
/// job that suspends) and `E` its execution.
fn never_runs_out(
    cfg: &SimConfig,
    sources: &[Source],
    s: usize,
    own: &OwnSupply,
    above: &dyn Fn(usize, u64) -> Vec<Interferer>,
    irq: &[Interferer],
) -> bool {
    let sc = &cfg.servers[s];
    if cfg.path == InterruptPath::QuestNoIovcpu
        || !matches!(
            sc.policy,
            PolicyCfg::Sporadic {
                background: false,
                ..
            }
        )
    {
        return false;
    }
    let k = fp_key(&sc.policy, sc.rank).unwrap_or(u64::MAX);
    let mine: Vec<usize> = (0..cfg.tasks.len())
        .filter(|&i| cfg.tasks[i].server == s)
        .collect();
    let mut clients = Vec::new();
    for &i in &mine {
        let t = &cfg.tasks[i];
        let irqlab_system::config::Release::Periodic {
            period: p,
            deadline,
            ..
        } = t.release
        else {
            return false;
        };
        // its execution (a suspending job's computes and Omega_Main)
        let e = if suspends(&t.program) {
            if deadline.unwrap_or(p) > p {
                return false;
            }
            match execution(cfg, i) {
                Ok(e) => e,
                Err(_) => return false,
            }
        } else {
            match task_demand(cfg, sources, i) {
                Ok((e, _, _)) => e,
                Err(_) => return false,
            }
        };
        let mut hp = above(s, k);
        for &o in mine
            .iter()
            .filter(|&&o| o != i && cfg.tasks[o].priority >= t.priority)
        {
            match task_demand(cfg, sources, o) {
                Ok((w, q, _)) => hp.push(Interferer::new(w, q, 0)),
                Err(_) => return false,
            }
        }
        let r = if suspends(&t.program) {
            // segment by segment at the server's priority, one job at a time
            let rta = |c: u64| {
                analyse_supplied(
                    Analysed::new(c, arrivals::ONCE, 0),
                    &hp,
                    Origin::Arrival,
                    p,
                    Terms::ALL,
                    &Supply::Full,
                )
                .ok()
                .map(|r| r.response)
            };
            match crate::system::io::segmented(cfg, sources, i, &rta) {
                Ok((b, _)) if b <= p => b,
                _ => return false,
            }
        } else {
            match analyse_supplied(
                Analysed::new(e, p, 0),
                &hp,
                Origin::Release,
                p,
                Terms::ALL,
                &Supply::Full,
            ) {
                Ok(r) => r.response,
                Err(_) => return false,
            }
        };
        clients.push((e, p, r));
    }
    !clients.is_empty()
        && crate::server::never_depleted(
            own.budget,
            own.period,
            &clients,
            crate::rta::demand(irq, own.period),
        )
}
