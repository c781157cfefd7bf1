//! The latency of a blocking read on a `quest` or `linux` machine -- from
//! the task's request to its wake-up -- and the bounds of the tasks that
//! make such reads, for `model_bounds`.
//!
//! A read of a USB endpoint or a disk goes through these steps, each
//! bounded on its own and summed (every step starts when the previous one
//! ends, so the sum is a bound on the whole):
//!
//! 1. **device**: a disk takes its `latency`; a USB transfer takes `bytes /
//!    rate` plus up to `jitter`, and when it does not fit in what is left
//!    of the current 125 us microframe, that rest too (USB-DIFFSERV §I, the
//!    simulator's `usb_start`): at most `125 us + bytes / rate + jitter`;
//! 2. **moderation** (USB): the interrupter holds its interrupt up to its
//!    moderation interval (USB-DIFFSERV §III-C);
//! 3. **top half**: the fixed-priority RTA of the top half with every other
//!    top half of its CPU above it (`arrivals`);
//! 4. **eligibility**: the class's PIBS I/O VCPU may still be ineligible
//!    after serving this task's previous request: at most `ceil(u / U) +
//!    1` ns with `u` its `Omega_IO` and the top halves charged to it while
//!    it ran (QUEST-VCPU
//!    Alg. 7 line 5, rounded up once per advance; top halves are charged to
//!    whatever runs, the I/O VCPU included);
//! 5. **bottom half**: `Omega_IO` at the Main VCPU's inherited period
//!    (QUEST-VCPU Alg. 10), the RTA with the CPU's top halves, the other
//!    I/O VCPUs that can inherit that period or a shorter one at their
//!    derived window bound (`irqlab_analysis::pibs` P1, P2) and every Main
//!    VCPU at or above that period interfering.
//!
//! `Omega_Main` (USB-DIFFSERV Eq. 1) runs in the task's own thread after
//! the wake-up: it is the task's execution, not the read's latency. The
//! task's own response is bounded segment by segment (`segmented`: each
//! run of computes by its RTA over the server's supply, plus every read's
//! bound and every sleep); as interference on other tasks its whole job,
//! reads included, counts as execution (`task_demand`: the
//! suspension-oblivious analysis, safe; Chen et al., "Many suspensions,
//! many problems", §4).
//!
//! On `linux` steps 4-5 are one: the bottom half runs in softirq context
//! or in ksoftirqd, no later than at ksoftirqd's SCHED_FIFO priority
//! (`linux_bottom_half`).
//!
//! Conditions on `quest` (otherwise the read says why it has no bound):
//! the I/O VCPU serves this task alone (every device of its classes is a
//! USB endpoint or disk requested by this task only, no `bind` phase moves
//! one, no echo endpoint), so one request is outstanding at a time;
//! `Omega_IO <= U T` (one budget serves a request); no explicit ranks on
//! the CPU of the I/O VCPU (priorities are the periods). USB-DIFFSERV's
//! own Eq. 1-3 (the paper's bound, without the device and top-half terms)
//! stay in `irqlab.analysis.usb_io_bounds`.
//!
//! Design principle: every term names where it comes from, and a read
//! without a bound says why instead of guessing one.

use crate::pibs;
use crate::rta::{
    analyse_over, analyse_supplied, Analysed, Interferer, Origin, Supply, SupplyBound, Terms,
};
use crate::system::arrivals::{requests, served_periods, Source, ONCE};
use crate::system::{budget_of, TaskBound};
use irqlab_system::config::{DeviceKind, InterruptPath, Phase, PolicyCfg, Release, SimConfig};
use serde::Serialize;

/// The bound of one read (a task's blocking request to one device).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct IoBound {
    pub task: String,
    pub device: String,
    /// Request to wake-up, ns; `None` without a bound (see `note`).
    pub latency: Option<u64>,
    /// The five terms of the module doc, in order, when bounded.
    pub terms: Option<IoTerms>,
    pub equation: &'static str,
    pub note: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct IoTerms {
    pub device: u64,
    pub moderation: u64,
    pub top_half: u64,
    pub eligibility: u64,
    pub bottom_half: u64,
}

pub const EQUATION: &str = "device + moderation + top-half RTA + PIBS eligibility \
     ceil(Omega_IO / U) + bottom-half RTA (QUEST-VCPU Alg. 7-10, Eq. 3)";

pub const LINUX_EQUATION: &str = "device + moderation + top-half RTA + bottom-half RTA at \
     ksoftirqd's priority (every top and bottom half of the CPU, SCHED_DEADLINE servers and \
     more urgent FIFO tasks above)";

/// The top halves of CPU `c` as interference (on `linux` with their bottom
/// halves), every source but `except`; `Err`: a source without an arrival
/// bound.
pub(crate) fn top_halves(
    sources: &[Source],
    c: usize,
    linux: bool,
    except: Option<usize>,
) -> Result<Vec<Interferer>, String> {
    sources
        .iter()
        .filter(|s| s.cpu == c && Some(s.device) != except)
        .map(|s| {
            s.interferer(linux)
                .ok_or_else(|| s.arrivals.clone().err().unwrap_or_default())
        })
        .collect()
}

/// A PIBS I/O VCPU of a CPU as interference (`irqlab_analysis::pibs`).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct PibsLoad {
    pub server: usize,
    /// P2: the shortest period it may inherit; it preempts only entities
    /// of that key or a larger one.
    pub t_min: u64,
    /// P1: `U (w + T + D - C_max)`; `None`: no bound on its chunks (the
    /// entities it can preempt then have none either).
    pub interferer: Option<Interferer>,
    /// P3: its work, the bottom halves of its classes' devices, each
    /// `(n C_bh, T, J + Delta)` with `Delta` its work's busy period over
    /// its own supply; `None` without one.
    pub work: Option<Vec<Interferer>>,
}

impl PibsLoad {
    /// Its interference on an entity of key `k`: none below P2's reach,
    /// else the smaller of P1 and P3 in a window `k` (both are sound: the
    /// choice only moves tightness); without a bound, the whole CPU.
    pub fn on(&self, k: u64) -> Vec<Interferer> {
        if self.t_min > k {
            return Vec::new();
        }
        let p1 = self.interferer.map(|i| vec![i]);
        match (p1, &self.work) {
            (Some(a), Some(b)) => {
                if crate::rta::demand(b, k) < crate::rta::demand(&a, k) {
                    b.clone()
                } else {
                    a
                }
            }
            (Some(a), None) => a,
            (None, Some(b)) => b.clone(),
            (None, None) => vec![Interferer::new(1, 1, 0)],
        }
    }
}

/// P3 (`PibsLoad::work`): an I/O VCPU executes only its classes' bottom
/// halves. While it has work its chunks of `C_max` come at least every `T`
/// (`V_e += used / U`, `used <= C_max`, plus 1 ns of rounding) and end
/// within `D` of their due time, so it supplies its work like S1 with `(C
/// = C_max, T + 1, R = D + 1)`; every unit of work completes within the
/// busy period `Delta` of that work (with the top halves charged to it)
/// over that supply; so a window `w`
/// holds at most the work that arrived in `w + Delta` before it ends: each
/// device's bottom halves with jitter `J + Delta`.
fn pibs_work(
    cfg: &SimConfig,
    sources: &[Source],
    irq: &[Interferer],
    s: usize,
    c_max: u64,
    t_max: u64,
    d: u64,
) -> Option<Vec<Interferer>> {
    let mut work = Vec::new();
    for src in sources {
        let class = cfg.devices.get(src.device)?.class;
        if cfg.classes.get(class).and_then(|k| k.iovcpu) == Some(s) {
            work.push(src.bottom_halves()?);
        }
    }
    pibs::work_interferers(c_max, t_max, d, &work, irq)
}

/// The PIBS I/O VCPUs of CPU `c` on `quest`, each with P1 (its
/// consumption in a window, from `D`, the time a chunk takes at its
/// lowest inheritable priority with the CPU's top halves, the servers of
/// shorter periods and the other I/O VCPUs above it: `pibs::
/// chunk_responses`) and P2 (the shortest period it may inherit).
pub(crate) fn pibs_interference(cfg: &SimConfig, sources: &[Source], c: usize) -> Vec<PibsLoad> {
    if cfg.path != InterruptPath::Quest {
        return Vec::new();
    }
    let irq = top_halves(sources, c, false, None).ok();
    let mut ios = Vec::new();
    let mut ids = Vec::new();
    for s in (0..cfg.servers.len()).filter(|&s| cfg.servers[s].cpu == c) {
        let PolicyCfg::Pibs { num, den, .. } = cfg.servers[s].policy else {
            continue;
        };
        let periods = served_periods(cfg, s);
        let (Some(&t_min), Some(&t_max)) = (periods.iter().min(), periods.iter().max()) else {
            continue; // never inherits a period: never has a budget
        };
        let mut hp = irq.clone().unwrap_or_default();
        for (o, sc) in cfg.servers.iter().enumerate() {
            if o == s || sc.cpu != c {
                continue;
            }
            let key = match sc.policy {
                PolicyCfg::Cbs { .. } => Some(0),
                PolicyCfg::Pibs { .. } => None,
                PolicyCfg::Unbounded {} => {
                    // a plain thread above it: no budget to bound it by
                    if sc.rank.unwrap_or(u64::MAX) < t_max {
                        hp.push(Interferer::new(1, 1, 0));
                    }
                    None
                }
                _ => budget_of(&sc.policy).map(|(_, t, _, _)| sc.rank.unwrap_or(t)),
            };
            if let (Some(k), Some((b, t, j, _))) = (key, budget_of(&sc.policy)) {
                // an I/O VCPU ranks before a Main VCPU of its own period
                if k < t_max {
                    hp.push(Interferer::new(b, t, j));
                }
            }
        }
        ios.push(pibs::IoVcpu {
            num,
            den,
            t_max,
            t_min,
            hp,
        });
        ids.push(s);
    }
    let ds = pibs::chunk_responses(&ios, ONCE / 1024);
    ios.iter()
        .zip(ids)
        .zip(ds)
        .map(|((v, server), d)| PibsLoad {
            server,
            t_min: v.t_min,
            interferer: match (&irq, d) {
                (Some(_), Some(d)) => Some(pibs::interferer(v.num, v.den, v.t_max, d)),
                _ => None,
            },
            work: match (&irq, d) {
                (Some(irq), Some(d)) => pibs_work(
                    cfg,
                    sources,
                    irq,
                    server,
                    pibs::c_max(v.num, v.den, v.t_max),
                    v.t_max,
                    d,
                ),
                _ => None,
            },
        })
        .collect()
}

/// The bound of task `ti`'s reads of device `d` on a `quest` machine.
pub fn read_latency(cfg: &SimConfig, sources: &[Source], ti: usize, d: usize) -> IoBound {
    let mut row = IoBound {
        task: cfg.tasks[ti].name.clone(),
        device: cfg.devices[d].name.clone(),
        latency: None,
        terms: None,
        equation: if cfg.path == InterruptPath::Linux {
            LINUX_EQUATION
        } else {
            EQUATION
        },
        note: None,
    };
    match terms(cfg, sources, ti, d) {
        Ok(t) => {
            row.latency = Some(
                [
                    t.device,
                    t.moderation,
                    t.top_half,
                    t.eligibility,
                    t.bottom_half,
                ]
                .iter()
                .fold(0u64, |a, &x| a.saturating_add(x)),
            );
            row.terms = Some(t);
        }
        Err(why) => row.note = Some(why),
    }
    row
}

fn terms(cfg: &SimConfig, sources: &[Source], ti: usize, d: usize) -> Result<IoTerms, String> {
    if !matches!(cfg.path, InterruptPath::Quest | InterruptPath::Linux) {
        return Err(format!(
            "blocking I/O on the {} path is not covered (docs/analysis.md)",
            cfg.path.name()
        ));
    }
    let dev = &cfg.devices[d];
    let task = &cfg.tasks[ti];
    // the class serving the read, its I/O VCPU, and the device's own terms
    let (class, device, moderation, top, bottom, th_cpu) = match &dev.kind {
        DeviceKind::Disk {
            latency,
            top_half,
            per_sector,
            sectors,
            ..
        } => (
            dev.class,
            *latency,
            0,
            *top_half,
            per_sector.saturating_mul(*sectors),
            dev.cpu,
        ),
        DeviceKind::Usb {
            controller,
            bytes,
            rate,
            jitter,
            omega_io,
            kfree,
            echo_of,
        } => {
            if echo_of.is_some() {
                return Err("an echo endpoint waits for the data written to it".into());
            }
            let x = cfg.xhci.get(*controller).ok_or("no such xHCI controller")?;
            let it = match x.interrupters.iter().find(|i| i.class == dev.class) {
                Some(it) => it,
                None if cfg.path == InterruptPath::Linux => x
                    .interrupters
                    .iter()
                    .max_by_key(|i| i.moderation)
                    .ok_or("an xHCI controller without interrupters")?,
                None => {
                    return Err("no interrupter of its class (it would use another class's)".into())
                }
            };
            let xfer = u64::try_from(
                (u128::from(*bytes) * 1_000_000_000).div_ceil(u128::from((*rate).max(1))),
            )
            .unwrap_or(u64::MAX);
            (
                dev.class,
                irqlab_system::config::MICROFRAME_NS
                    .saturating_add(xfer)
                    .saturating_add(*jitter),
                it.moderation,
                x.top_half,
                omega_io.saturating_add(*kfree),
                x.cpu,
            )
        }
        _ => return Err("a read of this device waits for traffic, not a request".into()),
    };
    // 3: the top half behind every other top half of its CPU
    let th_hp = top_halves(sources, th_cpu, false, Some(d))?;
    let top_half = response(top, &th_hp).ok_or("the top half has no bound on its CPU")?;
    if cfg.path == InterruptPath::Linux {
        let bottom_half = linux_bottom_half(cfg, sources, ti, d, bottom, th_cpu)?;
        return Ok(IoTerms {
            device,
            moderation,
            top_half,
            eligibility: 0,
            bottom_half,
        });
    }
    let io = cfg.classes[class]
        .iovcpu
        .ok_or("its class has no I/O VCPU")?;
    let PolicyCfg::Pibs { num, den, .. } = cfg.servers[io].policy else {
        return Err("its class's I/O VCPU is not PIBS".into());
    };
    exclusive(cfg, ti, io)?;
    let (_, t_main, _, _) = budget_of(&cfg.servers[task.server].policy)
        .ok_or("its Main VCPU has no budget and period to inherit")?;
    if u128::from(bottom) * u128::from(den) > u128::from(num) * u128::from(t_main) {
        return Err(format!(
            "Omega_IO {bottom} ns exceeds the I/O VCPU's C_max = U T = {num}/{den} x {t_main} ns"
        ));
    }
    // 5: the bottom half at the inherited period
    let c = cfg.servers[io].cpu;
    let irq = top_halves(sources, c, false, None)?;
    let mut hp = irq.clone();
    // the other I/O VCPUs that can inherit a period at or above this one
    // (ties count: two I/O VCPUs of one key go by id)
    hp.extend(
        pibs_interference(cfg, sources, c)
            .into_iter()
            .filter(|p| p.server != io)
            .flat_map(|p| p.on(t_main)),
    );
    for sc in cfg.servers.iter().filter(|sc| sc.cpu == c) {
        if sc.rank.is_some() {
            return Err(format!(
                "server {} has an explicit rank: priorities are not the periods",
                sc.name
            ));
        }
        // Main VCPUs above the inherited period (an I/O VCPU ranks before a
        // Main VCPU of its own period: the core's `tie`)
        if let Some((b, t, j, _)) = budget_of(&sc.policy) {
            if t < t_main {
                hp.push(Interferer::new(b, t, j));
            }
        }
    }
    let bottom_half = response(bottom, &hp).ok_or("the bottom half has no bound on its CPU")?;
    // 4: eligibility, rounded up once per advance: the previous request's
    // chunk used its `Omega_IO` plus the top halves charged to the I/O VCPU
    // while it ran (top halves are charged to whatever runs), each advancing
    // V_e by used / U (QUEST-VCPU Alg. 7 line 5)
    let used = bottom.saturating_add(crate::rta::demand(&irq, bottom_half));
    let eligibility =
        u64::try_from((u128::from(used) * u128::from(den)).div_ceil(u128::from(num.max(1))))
            .unwrap_or(u64::MAX)
            .saturating_add(1);
    Ok(IoTerms {
        device,
        moderation,
        top_half,
        eligibility,
        bottom_half,
    })
}

/// `linux`: the bottom half runs in softirq context at IRQ exit or, once
/// work is deferred, in the CPU's ksoftirqd (SCHED_FIFO): either way no
/// later than at ksoftirqd's priority behind every other top and bottom
/// half of the CPU, the SCHED_DEADLINE servers and the FIFO tasks at or
/// above ksoftirqd's priority. The device serves only this task (one
/// request outstanding).
fn linux_bottom_half(
    cfg: &SimConfig,
    sources: &[Source],
    ti: usize,
    d: usize,
    bottom: u64,
    c: usize,
) -> Result<u64, String> {
    if let Some((_, t)) = cfg
        .tasks
        .iter()
        .enumerate()
        .find(|(o, t)| *o != ti && requests(&t.program, d) != Some(0))
    {
        return Err(format!("{} requests the device too", t.name));
    }
    fn binds(p: &[Phase], d: usize) -> bool {
        p.iter().any(|ph| match ph {
            Phase::Bind { device, .. } => *device == d,
            Phase::Loop { body, .. } => binds(body, d),
            _ => false,
        })
    }
    if let Some(t) = cfg.tasks.iter().find(|t| binds(&t.program, d)) {
        return Err(format!("task {} rebinds the device at run time", t.name));
    }
    if !matches!(cfg.linux.ksoftirqd, PolicyCfg::Unbounded {}) {
        return Err("a SCHED_DEADLINE ksoftirqd is not covered".into());
    }
    let rank = cfg.linux.ksoftirqd_rank;
    let mut hp = top_halves(sources, c, true, Some(d))?;
    for (s, sc) in cfg.servers.iter().enumerate().filter(|(_, sc)| sc.cpu == c) {
        match sc.policy {
            PolicyCfg::Cbs { .. } => {
                if let Some((q, p, j, _)) = budget_of(&sc.policy) {
                    hp.push(Interferer::new(q, p, j));
                }
            }
            PolicyCfg::Unbounded {} if sc.rank.unwrap_or(u64::MAX) <= rank => {
                // the reader itself waits for this bottom half
                for (k, t) in cfg
                    .tasks
                    .iter()
                    .enumerate()
                    .filter(|&(k, t)| t.server == s && k != ti)
                {
                    let (w, p, _) =
                        job_demand(cfg, k, &|_| Err("it suspends".into())).map_err(|why| {
                            format!(
                                "task {} above ksoftirqd has no arrival bound ({why})",
                                t.name
                            )
                        })?;
                    hp.push(Interferer::new(w, p, 0));
                }
            }
            PolicyCfg::Unbounded {} => {}
            _ => {
                return Err(format!(
                    "server {}: budgeted fixed-priority servers beside ksoftirqd are not covered",
                    sc.name
                ))
            }
        }
    }
    response(bottom, &hp)
        .ok_or_else(|| "the bottom half has no bound at ksoftirqd's priority".into())
}

/// The response of one job of `c` with `hp` above it, on a whole CPU.
fn response(c: u64, hp: &[Interferer]) -> Option<u64> {
    analyse_supplied(
        Analysed::new(c, ONCE, 0),
        hp,
        Origin::Arrival,
        ONCE,
        Terms::ALL,
        &Supply::Full,
    )
    .ok()
    .map(|r| r.response)
}

/// The I/O VCPU `io` serves task `ti` alone: one request outstanding.
pub(crate) fn exclusive(cfg: &SimConfig, ti: usize, io: usize) -> Result<(), String> {
    let mine = |k: usize| cfg.classes.get(k).is_some_and(|c| c.iovcpu == Some(io));
    for (k, class) in cfg.classes.iter().enumerate().filter(|&(k, _)| mine(k)) {
        if class.consumer.is_some_and(|c| c != ti) {
            return Err(format!("its I/O VCPU also serves class {}", class.name));
        }
        for (d, dev) in cfg.devices.iter().enumerate().filter(|(_, x)| x.class == k) {
            let served = matches!(dev.kind, DeviceKind::Disk { .. })
                || matches!(dev.kind, DeviceKind::Usb { echo_of: None, .. });
            if !served {
                return Err(format!("its I/O VCPU also serves {}", dev.name));
            }
            for (o, t) in cfg.tasks.iter().enumerate() {
                if o != ti && requests(&t.program, d) != Some(0) {
                    return Err(format!("its I/O VCPU also serves {}'s requests", t.name));
                }
            }
        }
    }
    // a `bind` (USB-DIFFSERV Table III's mode change) moving a device into
    // or out of the I/O VCPU's classes
    fn moves(cfg: &SimConfig, p: &[Phase], mine: &dyn Fn(usize) -> bool) -> Option<usize> {
        p.iter().find_map(|ph| match ph {
            Phase::Bind { device, class } => {
                let from = cfg.devices.get(*device).map_or(0, |d| d.class);
                (mine(from) || mine(*class)).then_some(*device)
            }
            Phase::Loop { body, .. } => moves(cfg, body, mine),
            _ => None,
        })
    }
    for t in &cfg.tasks {
        if let Some(d) = moves(cfg, &t.program, &mine) {
            return Err(format!(
                "task {} rebinds {} into or out of its I/O VCPU's classes",
                t.name, cfg.devices[d].name
            ));
        }
    }
    Ok(())
}

/// `(demand, period, deadline)` of task `ti`'s job (a task released once:
/// period and deadline `ONCE`): its computes, `Omega_Main` per read and every read's latency bound
/// (suspension-oblivious); `Err`: why it has none.
pub fn task_demand(
    cfg: &SimConfig,
    sources: &[Source],
    ti: usize,
) -> Result<(u64, u64, u64), String> {
    job_demand(cfg, ti, &|d| {
        let r = read_latency(cfg, sources, ti, d);
        r.latency.ok_or_else(|| r.note.unwrap_or_default())
    })
}

fn job_demand(
    cfg: &SimConfig,
    ti: usize,
    latency: &dyn Fn(usize) -> Result<u64, String>,
) -> Result<(u64, u64, u64), String> {
    fn sum(
        cfg: &SimConfig,
        p: &[Phase],
        latency: &dyn Fn(usize) -> Result<u64, String>,
    ) -> Result<u64, String> {
        p.iter().try_fold(0u64, |acc, ph| {
            Ok(acc.saturating_add(match ph {
                Phase::Compute { ns } => *ns,
                Phase::Bind { .. } => 0,
                Phase::Loop {
                    count: Some(c),
                    body,
                } => sum(cfg, body, latency)?.saturating_mul(*c),
                Phase::Loop { count: None, .. } => return Err("an endless loop".into()),
                Phase::Io { device } => latency(*device)
                    .map_err(|why| format!("blocking I/O on {}: {why}", cfg.devices[*device].name))?
                    .saturating_add(cfg.devices[*device].omega_main),
                Phase::Sleep { .. } => return Err("a sleep inside the job".into()),
            }))
        })
    }
    let t = &cfg.tasks[ti];
    match t.release {
        Release::Periodic {
            period, deadline, ..
        } => Ok((
            sum(cfg, &t.program, latency)?,
            period,
            deadline.unwrap_or(period),
        )),
        // one job in all: as interference, its demand once
        Release::Once { .. } => Ok((sum(cfg, &t.program, latency)?, ONCE, ONCE)),
    }
}

/// A job that suspends (reads, sleeps), segment by segment: each run of
/// computes between suspensions bounded by `rta` (a job of that size
/// arriving at any instant: the critical instant of the busy-period
/// analysis), each read by its latency bound, each sleep by its length,
/// `Omega_Main` after a read as a segment of its own, and a loop as its
/// count times its body. Splitting a segment never loses safety (the first
/// part ends within its bound, the rest within its own from there).
/// `Ok((bound, execution))`; `Err`: why there is none.
pub fn segmented(
    cfg: &SimConfig,
    sources: &[Source],
    ti: usize,
    rta: &dyn Fn(u64) -> Option<u64>,
) -> Result<(u64, u64), String> {
    struct Walk<'a> {
        cfg: &'a SimConfig,
        sources: &'a [Source],
        ti: usize,
        rta: &'a dyn Fn(u64) -> Option<u64>,
    }
    impl Walk<'_> {
        fn seg(&self, c: u64) -> Result<u64, String> {
            if c == 0 {
                return Ok(0);
            }
            (self.rta)(c).ok_or_else(|| format!("a {c} ns segment has no bound in its server"))
        }
        fn walk(&self, p: &[Phase]) -> Result<(u64, u64), String> {
            let (mut bound, mut exec, mut run) = (0u64, 0u64, 0u64);
            for ph in p {
                let (b, e) = match ph {
                    Phase::Compute { ns } => {
                        run = run.saturating_add(*ns);
                        continue;
                    }
                    Phase::Bind { .. } => continue,
                    Phase::Io { device } => {
                        let r = read_latency(self.cfg, self.sources, self.ti, *device);
                        let l = r.latency.ok_or_else(|| {
                            format!(
                                "blocking I/O on {}: {}",
                                self.cfg.devices[*device].name,
                                r.note.unwrap_or_default()
                            )
                        })?;
                        let om = self.cfg.devices[*device].omega_main;
                        (l.saturating_add(self.seg(om)?), om)
                    }
                    Phase::Sleep { ns } => (*ns, 0),
                    Phase::Loop {
                        count: Some(c),
                        body,
                    } => {
                        let (b, e) = self.walk(body)?;
                        (b.saturating_mul(*c), e.saturating_mul(*c))
                    }
                    Phase::Loop { count: None, .. } => return Err("an endless loop".into()),
                };
                bound = bound.saturating_add(self.seg(run)?).saturating_add(b);
                exec = exec.saturating_add(run).saturating_add(e);
                run = 0;
            }
            Ok((
                bound.saturating_add(self.seg(run)?),
                exec.saturating_add(run),
            ))
        }
    }
    let w = Walk {
        cfg,
        sources,
        ti,
        rta,
    };
    w.walk(&cfg.tasks[ti].program)
}

/// The program blocks (reads or sleeps) somewhere.
pub fn suspends(p: &[Phase]) -> bool {
    p.iter().any(|ph| match ph {
        Phase::Io { .. } | Phase::Sleep { .. } => true,
        Phase::Loop { body, .. } => suspends(body),
        _ => false,
    })
}

/// A periodic task that reads or sleeps: `io::segmented` over its
/// server's supply (one job at a time: a deadline within the period).
pub(crate) fn segmented_row(
    cfg: &SimConfig,
    sources: &[Source],
    i: usize,
    hp: &[Interferer],
    sup: &dyn SupplyBound,
    row: &mut TaskBound,
) {
    let (Some(period), Some(deadline)) = (row.period, row.deadline) else {
        return;
    };
    if deadline > period {
        row.note = Some("a deadline beyond its period with suspensions (not covered)".into());
        return;
    }
    let rta = |c: u64| {
        analyse_over(
            Analysed::new(c, ONCE, 0),
            hp,
            Origin::Arrival,
            deadline.saturating_mul(crate::system::REPORT),
            Terms::ALL,
            sup,
        )
        .ok()
        .map(|r| r.response)
    };
    row.equation = "segments: FP RTA of each compute run over the server's supply, plus each \
                    read's latency bound and each sleep (io_bounds)"
        .into();
    match segmented(cfg, sources, i, &rta) {
        Ok((bound, exec)) => {
            row.wcet = Some(exec);
            row.response = Some(bound);
            row.terms = crate::system::ranked(vec![
                crate::system::Term::new("execution", exec),
                crate::system::Term::new(
                    "suspensions, supply and interference",
                    bound.saturating_sub(exec),
                ),
            ]);
            if bound <= deadline {
                row.schedulable = true;
            } else {
                row.note = Some(format!(
                    "its segmented bound {bound} ns exceeds its deadline"
                ));
            }
        }
        Err(why) => row.note = Some(format!("no bound: {why}")),
    }
}

/// A job's one suspension, for S2 (`irqlab_analysis::server`).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Suspension {
    None,
    Read(usize),
    Sleep(u64),
}

/// The job of task `ti` as S2 sees it: `(c0, suspension, c1)`, computes
/// (loops of computes included), at most one read or sleep, computes;
/// `Omega_Main` of the read belongs to `c1`. `None` for any other shape.
pub(crate) fn one_suspension(cfg: &SimConfig, ti: usize) -> Option<(u64, Suspension, u64)> {
    let (mut c0, mut sus, mut c1) = (0u64, Suspension::None, 0u64);
    for ph in &cfg.tasks[ti].program {
        let run = match ph {
            Phase::Compute { ns } => *ns,
            Phase::Loop {
                count: Some(_),
                body,
            } if !suspends(body) && !body.iter().any(|p| matches!(p, Phase::Bind { .. })) => {
                crate::system::arrivals::execution(cfg, std::slice::from_ref(ph))?
            }
            Phase::Io { device } if sus == Suspension::None => {
                sus = Suspension::Read(*device);
                cfg.devices.get(*device)?.omega_main
            }
            Phase::Sleep { ns } if sus == Suspension::None => {
                sus = Suspension::Sleep(*ns);
                0
            }
            _ => return None,
        };
        if matches!(ph, Phase::Io { .. }) || sus != Suspension::None {
            c1 = c1.saturating_add(run);
        } else {
            c0 = c0.saturating_add(run);
        }
    }
    Some((c0, sus, c1))
}

/// The execution of task `ti`'s job in its thread (computes and
/// `Omega_Main` per read; reads' latencies and sleeps are suspensions).
pub(crate) fn execution(cfg: &SimConfig, ti: usize) -> Result<u64, String> {
    crate::system::arrivals::execution(cfg, &cfg.tasks[ti].program)
        .ok_or_else(|| "an endless loop".into())
}
