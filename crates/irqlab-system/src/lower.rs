//! Lowering a validated `irqlab_model::Model` (names, units) into the
//! simulator's resolved `SimConfig` (indices, integer ns).
//!
//! Design principles: the model has already been validated, but lowering
//! still never panics -- a dangling name is a `SystemError` naming it; SCHED_FIFO
//! priorities (1..99, higher is more urgent) become ranks `100 - priority`
//! on the scale where smaller is more urgent; trace CSV files are read
//! relative to the model's directory.
//!
//! The hypervisor machine (`vms`, VINT §III) lowers to servers (VCPUs),
//! tasks (periodic and background guest tasks), generic devices (physical
//! interrupts) and `virqs`; the DSR tasks of a virtual interrupt become its
//! DSR (their WCETs summed, at the lowest of their priorities, as
//! `C^vi` in VINT §III and `pi_D` in Eq. 8). `auto` pseudo-VCPU values are
//! resolved here: budgets by VINT Eq. 1 / Eq. 2 (`irqlab_core::vint`, the
//! same function the analyses use), priorities by the VINT §V-A order; the
//! resolved budgets are checked (at most the period, at most 100 % of a CPU
//! with the VCPUs), with the model's field path in the error.

use std::path::Path;

use irqlab_model::handling::upcall_server;
use irqlab_model::model::{
    ArrivalKind, AutoDuration, AutoPriority, DeviceKindName, InheritMode, Ksoftirqd, MapEntry,
    PathKind, Policy, Step, UpcallMode, VmPolicy, Vms,
};
use irqlab_model::{class_names, device_class, Model};

use crate::config::{
    ArrivalCfg, ClassCfg, DeviceCfg, DeviceKind, InterruptPath, InterrupterCfg, LinuxCfg, Phase,
    PolicyCfg, PseudoCfg, Release, ServerCfg, SimConfig, TaskCfg, TraceCfg, VirqCfg, XhciCfg,
};
use crate::error::SystemError;
use crate::origin::Resolved;

mod costs;
mod vms;
use vms::from_vms;

fn missing(path: String, what: &str) -> SystemError {
    SystemError::Config {
        path,
        value: what.to_owned(),
        rule: "not found".into(),
    }
}

fn index<T>(
    items: &[T],
    name: &str,
    key: impl Fn(&T) -> &str,
    path: &str,
) -> Result<usize, SystemError> {
    items
        .iter()
        .position(|x| key(x) == name)
        .ok_or_else(|| missing(path.to_owned(), name))
}

fn ns(d: Option<irqlab_model::units::Duration>) -> u64 {
    d.map_or(0, |d| d.0.as_ns())
}

/// Lower a model into a simulation configuration. `base` is the directory
/// of the model file (for trace CSV files).
pub fn from_model(m: &Model, base: &Path) -> Result<SimConfig, SystemError> {
    let mut cfg = lower(m, base)?;
    if let Some(c) = &m.costs {
        costs::apply(&mut cfg, c);
    }
    Ok(cfg)
}

/// Lower a model for a back end that runs it for real (the runtime, the
/// VMM): the resolved system as the model states it -- measured `costs:`
/// not folded in, since a real run pays this machine's overheads by
/// itself -- with the origin of each part (`origin.rs`). Everything else is
/// `from_model`'s lowering, the same code.
pub fn resolve(m: &Model, base: &Path) -> Result<Resolved, SystemError> {
    Ok(Resolved {
        config: lower(m, base)?,
        origin: crate::origin::of(m),
    })
}

/// The lowering itself, without the measured costs.
fn lower(m: &Model, base: &Path) -> Result<SimConfig, SystemError> {
    if m.machine.path == PathKind::Hypervisor {
        let vms = m.vms.as_ref().ok_or_else(|| missing("vms".into(), "vms"))?;
        return from_vms(m, vms);
    }
    // A user upcall (irqlab_model::handling) is its own class, served by a
    // sporadic server of the upcall's budget above every VCPU of its CPU.
    let upcalls = upcall_servers(m);
    let mut classes = class_names(m);
    classes.extend(upcalls.iter().map(|s| s.name.clone()));
    let class_idx = |c: &str, path: &str| index(&classes, c, |x| x.as_str(), path);
    let mut servers: Vec<ServerCfg> = m
        .vcpus
        .iter()
        .map(|v| {
            let rank = v.priority.map(|p| 100u64.saturating_sub(p as u64));
            let b = ns(v.budget);
            let t = ns(v.period);
            let policy = match v.policy {
                Policy::Sporadic => PolicyCfg::Sporadic {
                    budget: b,
                    period: t,
                    max_repl: v.max_repl.unwrap_or(irqlab_core::DEFAULT_MAX_REPL),
                    background: v.background.unwrap_or(false),
                },
                Policy::Pibs => {
                    let u = v
                        .utilization
                        .map(|u| u.0)
                        .unwrap_or(irqlab_core::Utilization::ZERO);
                    PolicyCfg::Pibs {
                        num: u.num(),
                        den: u.den(),
                        strict: v.inherit == Some(InheritMode::Strict),
                    }
                }
                Policy::Deferrable => PolicyCfg::Deferrable {
                    budget: b,
                    period: t,
                },
                Policy::Polling => PolicyCfg::Polling {
                    budget: b,
                    period: t,
                },
                Policy::Cbs => PolicyCfg::Cbs {
                    runtime: ns(v.runtime),
                    period: t,
                },
                Policy::Fifo => PolicyCfg::Unbounded {},
            };
            ServerCfg {
                name: v.name.clone(),
                cpu: v.cpu as usize,
                policy,
                rank,
            }
        })
        .collect();
    servers.extend(upcalls);
    let dev_idx = |d: &str, path: &str| index(&m.devices, d, |x| x.name.as_str(), path);
    fn steps(
        s: &[Step],
        path: &str,
        dev: &dyn Fn(&str, &str) -> Result<usize, SystemError>,
        cls: &dyn Fn(&str, &str) -> Result<usize, SystemError>,
    ) -> Result<Vec<Phase>, SystemError> {
        s.iter()
            .enumerate()
            .map(|(k, st)| {
                let here = format!("{path}[{k}]");
                Ok(match st {
                    Step::Compute(d) => Phase::Compute { ns: d.0.as_ns() },
                    Step::Sleep(d) => Phase::Sleep { ns: d.0.as_ns() },
                    Step::Read(d) | Step::Write(d) => Phase::Io {
                        device: dev(d, &here)?,
                    },
                    Step::Bind { device, class } => Phase::Bind {
                        device: dev(device, &here)?,
                        class: cls(class, &here)?,
                    },
                    Step::Loop { count, body } => Phase::Loop {
                        count: Some(*count),
                        body: steps(body, &here, dev, cls)?,
                    },
                    Step::Forever(body) => Phase::Loop {
                        count: None,
                        body: steps(body, &here, dev, cls)?,
                    },
                })
            })
            .collect()
    }
    let mut tasks = Vec::new();
    for (i, t) in m.tasks.iter().enumerate() {
        let path = format!("tasks[{i}]");
        let release = match t.period {
            Some(p) => Release::Periodic {
                period: p.0.as_ns(),
                deadline: t.deadline.map(|d| d.0.as_ns()),
                offset: ns(t.offset),
                jobs: t.jobs,
            },
            None => Release::Once { at: ns(t.offset) },
        };
        tasks.push(TaskCfg {
            name: t.name.clone(),
            server: index(
                &m.vcpus,
                &t.vcpu,
                |v| v.name.as_str(),
                &format!("{path}.vcpu"),
            )?,
            priority: t.priority,
            release,
            program: steps(&t.program, &format!("{path}.program"), &dev_idx, &class_idx)?,
            abort_on_miss: t.abort_on_miss,
        });
    }
    let xhci_idx = |x: &str, path: &str| index(&m.xhci, x, |c| c.name.as_str(), path);
    let mut devices = Vec::new();
    for (i, d) in m.devices.iter().enumerate() {
        let path = format!("devices[{i}]");
        let own = upcall_server(&d.name);
        let class = device_class(m, &d.name)
            .or_else(|| d.upcall.is_some().then_some(own.as_str()))
            .ok_or_else(|| missing(format!("{path}.class"), "class"))?;
        let kind = match d.kind {
            DeviceKindName::Nic => {
                let a = d
                    .arrival
                    .as_ref()
                    .ok_or_else(|| missing(format!("{path}.arrival"), "arrival"))?;
                let (start, stop) = (ns(a.start), a.stop.map(|s| s.0.as_ns()));
                let arrival = match a.kind {
                    ArrivalKind::Periodic | ArrivalKind::Flood => ArrivalCfg::Periodic {
                        interval: ns(a.interval),
                        start,
                        stop,
                    },
                    ArrivalKind::Poisson => ArrivalCfg::Poisson {
                        rate_per_s: a.rate.unwrap_or(0.0),
                        start,
                        stop,
                    },
                    ArrivalKind::Burst => ArrivalCfg::Burst {
                        count: a.count.unwrap_or(0),
                        gap: ns(a.gap),
                        every: ns(a.every),
                        start,
                        stop,
                    },
                    ArrivalKind::PingFlood => ArrivalCfg::PingFlood {
                        rtt: ns(a.rtt),
                        interval: 10_000_000,
                        start,
                        stop,
                    },
                    ArrivalKind::Trace => {
                        let file = a.file.clone().unwrap_or_default();
                        ArrivalCfg::Trace {
                            times: read_trace(&base.join(&file), &format!("{path}.arrival.file"))?,
                        }
                    }
                };
                DeviceKind::Nic {
                    arrival,
                    top_half: ns(d.top_half),
                    bottom_half: ns(d.bottom_half),
                    bytes: d.packet.map_or(64, |s| s.0),
                    buffer: d.buffer.unwrap_or(1024),
                    ring: d.ring.unwrap_or(256),
                }
            }
            DeviceKindName::Disk => DeviceKind::Disk {
                latency: ns(d.latency),
                top_half: ns(d.top_half),
                per_sector: ns(d.per_sector),
                sectors: d.sectors.unwrap_or(1),
                sector_bytes: d.sector.map_or(512, |s| s.0),
            },
            DeviceKindName::Generic => DeviceKind::Generic {
                min_interarrival: ns(d.min_interarrival),
                jitter: ns(d.jitter),
                isr: ns(d.isr),
                dsr: ns(d.dsr),
                start: ns(d.start),
            },
            DeviceKindName::Usb => DeviceKind::Usb {
                controller: xhci_idx(
                    d.controller.as_deref().unwrap_or(""),
                    &format!("{path}.controller"),
                )?,
                bytes: d.request.map_or(512, |s| s.0),
                rate: d.rate.map_or(0, |r| r.0),
                jitter: ns(d.jitter),
                omega_io: ns(d.omega_io),
                kfree: ns(d.kfree),
                echo_of: match &d.echo_of {
                    Some(e) => Some(dev_idx(e, &format!("{path}.echo_of"))?),
                    None => None,
                },
            },
        };
        devices.push(DeviceCfg {
            name: d.name.clone(),
            irq_priority: 0,
            cpu: d.cpu as usize,
            class: class_idx(class, &format!("{path}.class"))?,
            omega_main: ns(d.omega_main),
            kind,
        });
    }
    let mut class_cfgs = Vec::new();
    for c in &classes {
        let iovcpu = m
            .vcpus
            .iter()
            .position(|v| v.io_class.as_deref() == Some(c.as_str()))
            .or_else(|| {
                let k = servers[m.vcpus.len()..].iter().position(|s| &s.name == c)?;
                Some(m.vcpus.len() + k)
            });
        let consumer = match m
            .classes
            .iter()
            .find(|s| &s.name == c)
            .and_then(|s| s.consumer.as_deref())
        {
            Some(t) => Some(index(
                &m.tasks,
                t,
                |x| x.name.as_str(),
                &format!("classes ({c}).consumer"),
            )?),
            None => None,
        };
        class_cfgs.push(ClassCfg {
            name: c.clone(),
            iovcpu,
            consumer,
        });
    }
    let mut xhci = Vec::new();
    for (i, x) in m.xhci.iter().enumerate() {
        let mut ints = Vec::new();
        for e in &x.interrupter_map {
            if let MapEntry::Class(c) = e {
                ints.push(InterrupterCfg {
                    class: class_idx(c, &format!("xhci[{i}].interrupter_map"))?,
                    moderation: ns(x.moderation),
                });
            }
        }
        xhci.push(XhciCfg {
            name: x.name.clone(),
            cpu: x.cpu as usize,
            msi_base: x.msi_base,
            top_half: x.top_half.0.as_ns(),
            interrupters: ints,
            random_frame_phase: x.random_frame_phase,
        });
    }
    let mut linux = LinuxCfg::default();
    if let Some(l) = &m.machine.linux {
        if let Some(r) = l.max_softirq_restart {
            linux.max_restart = r;
        }
        if let Some(t) = l.max_softirq_time {
            linux.max_softirq_time = t.0.as_ns();
        }
        linux.threaded_bh = l.threaded_bh;
        match &l.ksoftirqd {
            Some(Ksoftirqd::Fifo(p)) => linux.ksoftirqd_rank = 100u64.saturating_sub(*p as u64),
            Some(Ksoftirqd::Deadline { runtime, period }) => {
                linux.ksoftirqd = PolicyCfg::Cbs {
                    runtime: runtime.0.as_ns(),
                    period: period.0.as_ns(),
                }
            }
            None => {}
        }
    }
    let s = &m.simulation;
    let cfg = SimConfig {
        cpus: m.machine.cpus as usize,
        path: match m.machine.path {
            PathKind::Quest => InterruptPath::Quest,
            PathKind::QuestNoIovcpu => InterruptPath::QuestNoIovcpu,
            PathKind::Linux => InterruptPath::Linux,
            PathKind::Hypervisor => InterruptPath::Hypervisor,
        },
        duration: s.duration.0.as_ns(),
        seed: s.seed,
        window: s.window.0.as_ns(),
        servers,
        tasks,
        devices,
        classes: class_cfgs,
        xhci,
        virqs: Vec::new(),
        ipi: 0,
        switch_overhead: 0,
        dispatch_delay: 0,
        switch_costs: Default::default(),
        linux,
        trace: trace_cfg(s),
        overhead: Default::default(),
        max_completions: max_completions(s),
        max_window_values: max_window_values(s),
        records: records(s),
    };
    Ok(cfg)
}

/// The servers of the model's user upcalls, in device order: each runs its
/// device's handler under the upcall's `(budget, period)` at rank 0, above
/// every VCPU of the device's CPU, as irqlab-rt's top half runs it above
/// every managed thread (UPCALL §3.2).
fn upcall_servers(m: &Model) -> Vec<ServerCfg> {
    m.devices
        .iter()
        .filter_map(|d| {
            let u = d.upcall.as_ref().filter(|u| u.mode == UpcallMode::User)?;
            Some(ServerCfg {
                name: upcall_server(&d.name),
                cpu: d.cpu as usize,
                policy: PolicyCfg::Sporadic {
                    budget: u.budget.0.as_ns(),
                    period: u.period.0.as_ns(),
                    max_repl: irqlab_core::DEFAULT_MAX_REPL,
                    background: false,
                },
                rank: Some(0),
            })
        })
        .collect()
}

/// Fold measured `costs:` into an already resolved configuration, as
/// `from_model` does for a model with the section (`lower/costs.rs` says
/// what goes where): for experiments that build their configuration
/// directly (e.g. USB-DIFFSERV Table I's Linux path).
pub fn apply_costs(cfg: &mut SimConfig, c: &irqlab_model::costs::Costs) {
    costs::apply(cfg, c);
}

/// The trace settings of the model's `simulation` section.
fn trace_cfg(s: &irqlab_model::model::Simulation) -> TraceCfg {
    TraceCfg {
        enabled: s.trace,
        until: s.trace_until.map(|d| d.0.as_ns()),
        max_events: s
            .trace_max_events
            .map_or(TraceCfg::default().max_events, |n| {
                usize::try_from(n).unwrap_or(usize::MAX)
            }),
    }
}

/// Completion times kept per task (`simulation.max_completions`).
fn max_completions(s: &irqlab_model::model::Simulation) -> usize {
    s.max_completions
        .map_or(crate::config::default_max_completions(), |n| {
            usize::try_from(n).unwrap_or(usize::MAX)
        })
}

/// Values kept in the per-window series (`simulation.max_window_values`).
fn max_window_values(s: &irqlab_model::model::Simulation) -> usize {
    s.max_window_values
        .map_or(crate::config::default_max_window_values(), |n| {
            usize::try_from(n).unwrap_or(usize::MAX)
        })
}

/// Per-job and per-request records (`simulation.records`).
fn records(s: &irqlab_model::model::Simulation) -> crate::config::RecordsCfg {
    let (jobs, requests) = s.records.map_or((false, false), |r| r.tables());
    crate::config::RecordsCfg { jobs, requests }
}

/// A nic's arrival trace (`irqlab_model::limits::read_trace_file`).
fn read_trace(file: &Path, path: &str) -> Result<Vec<u64>, SystemError> {
    irqlab_model::limits::read_trace_file(file).map_err(|(line, value, rule)| SystemError::Config {
        path: match line {
            Some(k) => format!("{path} line {k}"),
            None => path.to_owned(),
        },
        value,
        rule,
    })
}
