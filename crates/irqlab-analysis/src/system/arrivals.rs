//! Arrival bounds of a machine's interrupt sources, for the analysis of
//! `quest`, `quest-no-iovcpu` and `linux` models (`model_bounds`): per
//! device, the most top halves (and bottom halves) any window can hold, as
//! `rta::Interferer`s `ceil((w + J) / T) * C`, or the reason there is no
//! such bound.
//!
//! Design principles: only what the model guarantees counts -- a declared
//! minimum inter-arrival time, a periodic or burst pattern, a trace's
//! shortest gap, or the requests of the tasks that drive a device (a disk
//! or USB endpoint completes only what a task asked for); a Poisson
//! process or an endless request loop has no bound, and says so. Also the
//! task and class facts the bounds need: which tasks are periodic compute
//! or background, the longest period a PIBS I/O VCPU may inherit, and the
//! bottom halves charged to a Main VCPU on `quest-no-iovcpu`.

use crate::rta::Interferer;
use irqlab_system::config::{ArrivalCfg, DeviceKind, Phase, Release, SimConfig};

/// "Never again" as a period: one arrival in total.
pub const ONCE: u64 = u64::MAX / 4;

/// The interrupt work of one device.
#[derive(Clone, Debug, PartialEq)]
pub struct Source {
    pub device: usize,
    /// CPU of the top half.
    pub cpu: usize,
    pub top_half: u64,
    pub bottom_half: u64,
    /// Arrivals: `(count per period, period, jitter)`; `Err` = why none.
    pub arrivals: Result<(u64, u64, u64), String>,
    /// A second sound arrival bound, when the device has two (a disk's or
    /// endpoint's own pace and its requesters' count): the interference
    /// takes the smaller in each window.
    pub alt: Option<(u64, u64, u64)>,
}

impl Source {
    /// The top halves (and, with `with_bottom`, the bottom halves) as
    /// interference.
    pub fn interferer(&self, with_bottom: bool) -> Option<Interferer> {
        let cost = self.top_half + if with_bottom { self.bottom_half } else { 0 };
        self.scaled(cost)
    }
    /// The bottom halves alone.
    pub fn bottom_halves(&self) -> Option<Interferer> {
        self.scaled(self.bottom_half)
    }
    fn scaled(&self, cost: u64) -> Option<Interferer> {
        let (n, t, j) = self.arrivals.as_ref().ok()?;
        let i = Interferer::new(n.saturating_mul(cost), *t, *j);
        Some(match self.alt {
            Some((n2, t2, j2)) => i.or(n2.saturating_mul(cost), t2, j2),
            None => i,
        })
    }
}

/// How many requests to `device` one run of `program` makes (`None`:
/// unbounded, an endless loop).
pub fn requests(program: &[Phase], device: usize) -> Option<u64> {
    let mut n = 0u64;
    for p in program {
        n = n.saturating_add(match p {
            Phase::Io { device: d } if *d == device => 1,
            Phase::Loop { count, body } => {
                let k = requests(body, device)?;
                match count {
                    Some(c) => k.saturating_mul(*c),
                    None if k == 0 => 0,
                    None => return None,
                }
            }
            _ => 0,
        });
    }
    Some(n)
}

/// Arrivals of a device completed only on request: every task's requests
/// (a periodic task's `n` requests per job fall within its deadline, a
/// one-shot task's are counted once).
fn requested(cfg: &SimConfig, device: usize) -> Result<(u64, u64, u64), String> {
    let mut out: Option<(u64, u64, u64)> = None;
    let mut total_once = 0u64;
    let requesters = cfg
        .tasks
        .iter()
        .filter(|t| requests(&t.program, device) != Some(0))
        .count();
    for t in &cfg.tasks {
        let Some(n) = requests(&t.program, device) else {
            return if requesters == 1 {
                paced(cfg, t, device)
            } else {
                Err(format!(
                    "task {} requests it in an endless loop, beside other requesters \
                     (not covered)",
                    t.name
                ))
            };
        };
        if n == 0 {
            continue;
        }
        match t.release {
            Release::Periodic {
                period, deadline, ..
            } => {
                if out.is_some() {
                    return Err("more than one periodic task requests it (not covered)".into());
                }
                let d = deadline.unwrap_or(period);
                out = Some((n, period, d));
            }
            Release::Once { .. } => total_once = total_once.saturating_add(n),
        }
    }
    match (out, total_once) {
        (Some(_), k) if k > 0 => {
            Err("periodic and one-shot tasks both request it (not covered)".into())
        }
        (Some(x), _) => Ok(x),
        (None, k) => Ok((k, ONCE, 0)),
    }
}

/// The one task requesting `device` does so in an endless loop: each
/// iteration executes at least `w` (its computes and the `Omega_Main` of
/// its reads) in the task's server, and a sporadic server executes at most
/// `C` in any window of length `T` (deferrable and polling: at most
/// `ceil((D + T - C) / T) C` in a window `D`). Between the first and the
/// last iteration with a completion in a window, every iteration runs
/// entirely inside it, so a window `D` holds completions of at most
/// `ceil((D + J) / T) ceil(C / w) + 2` iterations, `k` requests each: the
/// bound `(k ceil(C / w), T, J + 2 T)`, plus the requests made before the
/// loop.
fn paced(
    cfg: &SimConfig,
    task: &irqlab_system::config::TaskCfg,
    device: usize,
) -> Result<(u64, u64, u64), String> {
    let no = |why: &str| {
        Err(format!(
            "task {} requests it in an endless loop ({why}): no arrival bound",
            task.name
        ))
    };
    let server = &cfg.servers[task.server];
    let (c, t, j) = match server.policy {
        irqlab_system::config::PolicyCfg::Sporadic {
            background: true, ..
        } => return no("its server runs in background mode past its budget"),
        irqlab_system::config::PolicyCfg::Sporadic { .. }
        | irqlab_system::config::PolicyCfg::Deferrable { .. }
        | irqlab_system::config::PolicyCfg::Polling { .. } => {
            match crate::system::budget_of(&server.policy) {
                Some((c, t, j, _)) => (c, t, j),
                None => return no("its server has no budget"),
            }
        }
        _ => return no("its server has no budget and period"),
    };
    let (mut before, mut body) = (0u64, None);
    for (i, ph) in task.program.iter().enumerate() {
        match ph {
            Phase::Loop {
                count: None,
                body: b,
            } if i + 1 == task.program.len() => body = Some(b),
            _ => {
                let one = std::slice::from_ref(ph);
                match requests(one, device) {
                    Some(n) => before = before.saturating_add(n),
                    None => return no("a nested endless loop"),
                }
            }
        }
    }
    let Some(body) = body else {
        return no("a nested endless loop");
    };
    let k = match requests(body, device) {
        Some(k) => k,
        None => return no("a nested endless loop"),
    };
    let w = execution(cfg, body).ok_or_else(|| {
        format!(
            "task {} requests it in an endless loop (a nested endless loop): no arrival bound",
            task.name
        )
    })?;
    if w == 0 || t == 0 {
        return no("an iteration executes nothing: the device alone paces it");
    }
    let n = k.saturating_mul(c.div_ceil(w));
    if n == 0 {
        return Ok((before, ONCE, 0)); // a server without budget never runs
    }
    let extra = before.div_ceil(n.max(1)).saturating_mul(t);
    Ok((
        n,
        t,
        j.saturating_add(t.saturating_mul(2)).saturating_add(extra),
    ))
}

/// The execution of one run of `program` in its task's thread: computes and
/// `Omega_Main` per request (`None`: an endless loop).
pub(crate) fn execution(cfg: &SimConfig, program: &[Phase]) -> Option<u64> {
    program.iter().try_fold(0u64, |acc, ph| {
        Some(acc.saturating_add(match ph {
            Phase::Compute { ns } => *ns,
            Phase::Io { device } => cfg.devices.get(*device).map_or(0, |d| d.omega_main),
            Phase::Loop {
                count: Some(c),
                body,
            } => execution(cfg, body)?.saturating_mul(*c),
            Phase::Loop { count: None, .. } => return None,
            Phase::Sleep { .. } | Phase::Bind { .. } => 0,
        }))
    })
}

/// A USB endpoint serves one request at a time (the simulator's
/// `usb_start`): the next transfer starts no earlier than the previous
/// completion and takes at least `bytes / rate`, so completions are at
/// least that far apart whatever the tasks request -- the bound of an
/// endpoint read in an endless loop (USB-DIFFSERV §II-A: the host
/// controller schedules every transfer; a device never interrupts
/// unasked).
fn usb_endpoint(bytes: u64, rate: u64) -> Result<(u64, u64, u64), String> {
    let gap = (u128::from(bytes) * 1_000_000_000).div_ceil(u128::from(rate.max(1)));
    match u64::try_from(gap) {
        Ok(g) if g > 0 => Ok((1, g, 0)),
        _ => Err("a zero-byte transfer takes no time: no arrival bound".into()),
    }
}

/// The tighter of two sound bounds: the one with fewer arrivals in a
/// window `w` (the longest server period of the machine, the windows the
/// RTAs look at); the error of the second when neither holds. Either is
/// safe, so the choice only moves tightness.
/// `(count, period, jitter)` arrivals, or why there are none.
type Arrivals = Result<(u64, u64, u64), String>;

/// With both bounds holding, the other one is kept too (`Source::alt`):
/// the interference takes the smaller in every window.
fn tighter(
    a: Result<(u64, u64, u64), String>,
    b: Result<(u64, u64, u64), String>,
    w: u64,
) -> (Arrivals, Option<(u64, u64, u64)>) {
    let eta = |(n, t, j): (u64, u64, u64)| Interferer::new(n, t, j).demand(w);
    match (a, b) {
        (Ok(x), Ok(y)) if eta(x) < eta(y) => (Ok(x), Some(y)),
        (Ok(x), Ok(y)) => (Ok(y), Some(x)),
        (Ok(x), Err(_)) => (Ok(x), None),
        (Err(_), y) => (y, None),
    }
}

/// The arrival bound of a NIC's packets.
fn nic(arrival: &ArrivalCfg) -> Result<(u64, u64, u64), String> {
    match arrival {
        ArrivalCfg::Periodic { interval, .. } if *interval > 0 => Ok((1, *interval, 0)),
        // `count` packets `gap` apart every `every`: the bursts overlapping
        // a window w start within w + (count - 1) gap of each other
        ArrivalCfg::Burst {
            count, gap, every, ..
        } if *every > 0 => Ok((*count, *every, count.saturating_sub(1) * gap)),
        ArrivalCfg::Trace { times } => {
            let mut v = times.clone();
            v.sort_unstable();
            let gap = v.windows(2).map(|w| w[1] - w[0]).min();
            match gap {
                None => Ok((v.len() as u64, ONCE, 0)),
                Some(0) => Err("two trace arrivals at the same instant".into()),
                Some(g) => Ok((1, g, 0)),
            }
        }
        ArrivalCfg::PingFlood { rtt, interval, .. } if (*rtt).min(*interval) > 0 => {
            Ok((1, (*rtt).min(*interval), 0))
        }
        ArrivalCfg::Poisson { .. } => {
            Err("Poisson arrivals have no minimum inter-arrival time".into())
        }
        _ => Err("a zero inter-arrival time".into()),
    }
}

/// Every device's interrupt work and arrival bound.
pub fn sources(cfg: &SimConfig) -> Vec<Source> {
    let w = cfg
        .servers
        .iter()
        .filter_map(|s| crate::system::budget_of(&s.policy).map(|b| b.1))
        .max()
        .unwrap_or(1_000_000_000);
    cfg.devices
        .iter()
        .enumerate()
        .map(|(d, dev)| {
            let (cpu, top, bottom, arrivals) = match &dev.kind {
                DeviceKind::Generic {
                    min_interarrival,
                    isr,
                    dsr,
                    ..
                } => (
                    dev.cpu,
                    *isr,
                    *dsr,
                    (
                        if *min_interarrival > 0 {
                            Ok((1, *min_interarrival, 0))
                        } else {
                            Err("a zero minimum inter-arrival time".into())
                        },
                        None,
                    ),
                ),
                DeviceKind::Nic {
                    arrival,
                    top_half,
                    bottom_half,
                    ..
                } => (dev.cpu, *top_half, *bottom_half, (nic(arrival), None)),
                // one request at a time (FIFO): completions `latency` apart
                DeviceKind::Disk {
                    latency,
                    top_half,
                    per_sector,
                    sectors,
                    ..
                } => (
                    dev.cpu,
                    *top_half,
                    per_sector.saturating_mul(*sectors),
                    tighter(
                        if *latency > 0 {
                            Ok((1, *latency, 0))
                        } else {
                            Err("a zero disk latency".into())
                        },
                        requested(cfg, d),
                        w,
                    ),
                ),
                DeviceKind::Usb {
                    controller,
                    omega_io,
                    kfree,
                    echo_of,
                    bytes,
                    rate,
                    ..
                } => {
                    let x = cfg.xhci.get(*controller);
                    let own = usb_endpoint(*bytes, *rate);
                    // an echo endpoint completes when data comes back:
                    // only its own transfer time bounds it
                    let arrivals = match echo_of {
                        Some(_) => (own, None),
                        None => tighter(own, requested(cfg, d), w),
                    };
                    (
                        x.map_or(dev.cpu, |x| x.cpu),
                        x.map_or(0, |x| x.top_half),
                        omega_io + kfree,
                        arrivals,
                    )
                }
            };
            let (arrivals, alt) = arrivals;
            Source {
                device: d,
                cpu,
                top_half: top,
                bottom_half: bottom,
                arrivals,
                alt,
            }
        })
        .collect()
}

/// Runs whenever nothing above it in its server does, forever.
pub fn is_background(release: &Release, program: &[Phase]) -> bool {
    matches!(release, Release::Once { .. })
        && matches!(program, [Phase::Loop { count: None, body }]
            if !body.iter().any(|p| matches!(p, Phase::Io { .. } | Phase::Sleep { .. })))
}

/// The longest period a PIBS I/O VCPU `s` may inherit: the Main VCPUs of
/// the tasks that use its classes (consumers and requesters).
pub fn served_period(cfg: &SimConfig, s: usize) -> u64 {
    served_periods(cfg, s).into_iter().max().unwrap_or(0)
}

/// Every period a PIBS I/O VCPU `s` may inherit (QUEST-VCPU Alg. 10): the
/// periods of the Main VCPUs of the tasks that use its classes (consumers
/// and requesters), in any order.
pub fn served_periods(cfg: &SimConfig, s: usize) -> Vec<u64> {
    let classes: Vec<usize> = (0..cfg.classes.len())
        .filter(|&k| cfg.classes[k].iovcpu == Some(s))
        .collect();
    let mut out = Vec::new();
    for (ti, task) in cfg.tasks.iter().enumerate() {
        let uses = classes.iter().any(|&k| {
            cfg.classes[k].consumer == Some(ti)
                || cfg
                    .devices
                    .iter()
                    .enumerate()
                    .any(|(d, dev)| dev.class == k && requests(&task.program, d) != Some(0))
        });
        if uses {
            if let Some((_, p, _, _)) = crate::system::budget_of(&cfg.servers[task.server].policy) {
                out.push(p);
            }
        }
    }
    out
}

/// `quest-no-iovcpu`: the bottom halves that run in server `s` (those of
/// the classes whose consumer, or first requester, is in it).
pub fn bottom_halves_in(cfg: &SimConfig, s: usize, sources: &[Source]) -> Vec<Interferer> {
    sources
        .iter()
        .filter(|src| {
            let class = cfg.devices[src.device].class;
            let home = cfg
                .classes
                .get(class)
                .and_then(|k| k.consumer)
                .map(|t| cfg.tasks[t].server)
                .or_else(|| {
                    cfg.tasks
                        .iter()
                        .find(|t| {
                            cfg.devices.iter().enumerate().any(|(d, dev)| {
                                dev.class == class && requests(&t.program, d) != Some(0)
                            })
                        })
                        .map(|t| t.server)
                });
            home == Some(s)
        })
        .filter_map(|src| src.bottom_halves())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nic_bounds() {
        let burst = ArrivalCfg::Burst {
            count: 4,
            gap: 10,
            every: 1000,
            start: 0,
            stop: None,
        };
        assert_eq!(nic(&burst), Ok((4, 1000, 30)));
        let trace = ArrivalCfg::Trace {
            times: vec![50, 10, 35],
        };
        assert_eq!(nic(&trace), Ok((1, 15, 0)));
        let p = ArrivalCfg::Poisson {
            rate_per_s: 1.0,
            start: 0,
            stop: None,
        };
        assert!(nic(&p).is_err());
    }

    #[test]
    fn request_counts() {
        let prog = vec![
            Phase::Io { device: 1 },
            Phase::Loop {
                count: Some(3),
                body: vec![Phase::Io { device: 1 }, Phase::Io { device: 2 }],
            },
        ];
        assert_eq!(requests(&prog, 1), Some(4));
        assert_eq!(requests(&prog, 2), Some(3));
        let endless = vec![Phase::Loop {
            count: None,
            body: vec![Phase::Io { device: 1 }],
        }];
        assert_eq!(requests(&endless, 1), None);
        assert_eq!(requests(&endless, 2), Some(0));
    }
}
