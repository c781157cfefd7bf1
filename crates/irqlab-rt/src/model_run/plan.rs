//! Lowering a validated system model (`irqlab_model::Model`) to what runs on
//! real threads, and refusing what cannot run for real with the field, the
//! value and the reason (docs/runtime.md, "irqlab run MODEL.yaml").
//!
//! Design principles: the model is loaded and validated by `irqlab_model`
//! alone (one loader, one set of messages); this module adds only the
//! rules of the real machine (what `irqlab-rt` and this kernel can carry
//! out), never a second reading of the model's meaning. Every model value
//! is either carried out, refused, or -- when the real machine supplies its
//! own cost (the kernel's softirq on the linux path) -- named in `notes`,
//! never dropped silently. Top-half costs are carried out on the quest
//! paths (spun by the top half per event) and refused on the linux path,
//! whose top half is the kernel's.

use irqlab_core::{Inherit, Nanos, Utilization};
use irqlab_model::handling::upcall_server;
use irqlab_model::model::{
    ArrivalKind, DeviceKindName, InheritMode, Ksoftirqd, PathKind, Policy, RunBackend, Source,
    Upcall, VcpuKind,
};
use irqlab_model::{device_class, Model};

use crate::error::RtError;
use crate::sys;

mod io;
use io::{request_device, xhci_plans, Lowering};

/// A server of the model, as the real run builds it.
#[derive(Clone, Debug)]
pub enum VcpuPolicy {
    Sporadic {
        budget: Nanos,
        period: Nanos,
    },
    Deferrable {
        budget: Nanos,
        period: Nanos,
    },
    Pibs {
        utilization: Utilization,
        inherit: Inherit,
    },
    /// A plain SCHED_FIFO priority (1..99), no budget.
    Fifo {
        priority: u32,
    },
    /// SCHED_DEADLINE (linux path only).
    Deadline {
        runtime: Nanos,
        period: Nanos,
    },
}

#[derive(Clone, Debug)]
pub struct VcpuPlan {
    pub name: String,
    pub io: bool,
    /// Index of the model CPU.
    pub cpu: usize,
    pub policy: VcpuPolicy,
    /// Explicit fixed priority (1..99, higher is more urgent) of a budgeted
    /// server instead of rate-monotonic.
    pub priority: Option<u32>,
    pub io_class: Option<String>,
}

/// One operation of a task's program.
#[derive(Clone, Debug)]
pub enum Op {
    Compute(Nanos),
    /// A blocking read of one item from device `devices[i]` (nic, generic).
    Read(usize),
    /// A blocking request (read or write) to `devices[i]` (usb, disk):
    /// submitted, served by the device, completed by its bottom half.
    Request(usize),
    /// `usb_set_iovcpu`: the endpoint's next requests complete through
    /// route `route` (an interrupter of the new class).
    Bind {
        dev: usize,
        route: usize,
    },
    Sleep(Nanos),
    /// `count` times, or forever (`None`).
    Loop {
        count: Option<u64>,
        body: Vec<Op>,
    },
}

#[derive(Clone, Debug)]
pub enum Release {
    Periodic {
        period: Nanos,
        deadline: Nanos,
        offset: Nanos,
        jobs: Option<u64>,
    },
    Once {
        offset: Nanos,
        deadline: Option<Nanos>,
    },
}

#[derive(Clone, Debug)]
pub struct TaskPlan {
    pub name: String,
    pub vcpu: usize,
    pub priority: u32,
    pub release: Release,
    pub program: Vec<Op>,
}

/// When the items of a device arrive (relative to the run's start).
#[derive(Clone, Debug)]
pub enum Arrival {
    Periodic {
        interval: Nanos,
        start: Nanos,
        stop: Option<Nanos>,
    },
    Poisson {
        rate_per_s: f64,
        start: Nanos,
        stop: Option<Nanos>,
    },
    Burst {
        count: u64,
        gap: Nanos,
        every: Nanos,
        start: Nanos,
        stop: Option<Nanos>,
    },
    /// `ping -f`: the next packet `rtt` after the reply to the previous one
    /// (its bottom half's end), or `interval` after it was sent, whichever
    /// is first (irqlab-sim `nic.rs`).
    PingFlood {
        rtt: Nanos,
        interval: Nanos,
        start: Nanos,
        stop: Option<Nanos>,
    },
    /// The times of a trace file, sorted.
    Trace { times: Vec<Nanos> },
    /// A generic device: every `min` plus a uniform `jitter`.
    Sporadic {
        min: Nanos,
        jitter: Nanos,
        start: Nanos,
    },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DevKind {
    /// UDP datagrams on loopback.
    Nic,
    /// An eventfd written at the model's inter-arrival times.
    Generic,
    /// A USB endpoint behind an xHCI controller: requests served by the
    /// controller thread (`requests.rs`), completing through its routes.
    Usb,
    /// A disk: requests served one at a time in `latency`, completing
    /// through its route.
    Disk,
}

impl DevKind {
    /// Served per request (usb, disk) rather than arriving by itself.
    pub fn is_request(self) -> bool {
        matches!(self, DevKind::Usb | DevKind::Disk)
    }
}

/// An xHCI controller (USB-DIFFSERV §III-C).
#[derive(Clone, Debug)]
pub struct XhciPlan {
    pub name: String,
    /// The I/O class of each interrupter (`xHCI_interrupter_to_IOVCPU_map`).
    pub interrupters: Vec<String>,
    /// Interrupter moderation: at least this long between two interrupts of
    /// one interrupter.
    pub moderation: Nanos,
    /// The controller's interrupt handler (`xhci.top_half`), spent by the
    /// runtime's top half per ready report of each of its routes.
    pub top_half: Nanos,
    /// Each transfer starts at a random phase of its microframe (else the
    /// phase of the time since the run's start).
    pub random_frame_phase: bool,
}

/// A USB endpoint's transfer.
#[derive(Clone, Debug)]
pub struct UsbPlan {
    pub controller: usize,
    /// Transfer size (`request`).
    pub bytes: u64,
    /// Device rate, bytes per second.
    pub rate: u64,
    /// Uniform extra transfer time, at most this.
    pub jitter: Nanos,
}

/// Where a request device's completions arrive: one fd (a disk's, or one
/// USB endpoint's through one interrupter) bound to `class` -- the fd
/// group of an interrupter is its routes.
#[derive(Clone, Debug)]
pub struct RoutePlan {
    pub dev: usize,
    /// `(controller, interrupter)` of a USB route.
    pub interrupter: Option<(usize, usize)>,
    pub class: String,
}

#[derive(Clone, Debug)]
pub struct DevPlan {
    pub name: String,
    pub kind: DevKind,
    pub class: String,
    /// When items arrive by themselves (nic, generic); `None` for request
    /// devices (usb, disk).
    pub arrival: Option<Arrival>,
    /// Datagram size (nic); bytes per request (usb, disk).
    pub bytes: usize,
    /// Items delivered but not yet read, at most (the socket buffer).
    pub buffer: u64,
    /// Bottom-half work per item (quest paths: on the class's server).
    pub bottom_half: Nanos,
    /// The device's interrupt handler (`top_half`, a generic device's
    /// `isr`), spent by the top half per ready report of its fd (quest
    /// paths; always zero on the linux path, which refuses it).
    pub top_half: Nanos,
    /// Omega_Main: CPU time of the reading task when a read returns.
    pub omega_main: Nanos,
    /// Tasks whose programs read it (or send it requests).
    pub readers: Vec<usize>,
    /// How a generic device's events are produced (nic: UDP).
    pub source: Source,
    /// Handled by an upcall instead of (user) or before (kernel) its class.
    pub upcall: Option<Upcall>,
    /// usb: the endpoint's transfers.
    pub usb: Option<UsbPlan>,
    /// disk: the service time of one request.
    pub latency: Nanos,
    /// usb, disk: its routes (indices into `Plan::routes`), the first the
    /// one bound at the start.
    pub routes: Vec<usize>,
}

/// A model lowered for a real run.
#[derive(Clone, Debug)]
pub struct Plan {
    pub name: String,
    pub path: PathKind,
    /// The real CPU of each model CPU.
    pub cpus: Vec<usize>,
    /// The CPU of the generators (`None`: shared with the managed CPUs).
    pub gen_cpu: Option<usize>,
    pub duration: Nanos,
    pub seed: u64,
    pub vcpus: Vec<VcpuPlan>,
    pub tasks: Vec<TaskPlan>,
    pub devices: Vec<DevPlan>,
    pub xhci: Vec<XhciPlan>,
    /// The completion fds of the request devices.
    pub routes: Vec<RoutePlan>,
    /// I/O class names, in model order.
    pub classes: Vec<String>,
    /// The task on whose behalf a class's unsolicited events are handled.
    pub consumers: Vec<Option<usize>>,
    /// Model values the real machine replaces with its own (stated, not
    /// dropped).
    pub notes: Vec<String>,
    /// The model's `runtime:` options for irqlab-rt.
    pub require_fifo: bool,
    pub backend: crate::Backend,
    pub report_samples: usize,
    /// `linux`: the SCHED_FIFO priority the kernel's ksoftirqd threads get
    /// for the run (`machine.linux.ksoftirqd`; `ksoftirqd.rs`).
    pub ksoftirqd: Option<u32>,
}

/// A ping flood's send when no reply came (irqlab-sim's `PingFlood`
/// fallback interval).
pub const PING_FALLBACK: Nanos = Nanos::from_ms(10);

impl Plan {
    /// The top-half cost of route `r`'s fd: its xHCI controller's for a
    /// USB route, else its device's (a disk's completion).
    pub fn route_top_half(&self, r: usize) -> Nanos {
        let route = &self.routes[r];
        match route.interrupter {
            Some((x, _)) => self.xhci[x].top_half,
            None => self.devices[route.dev].top_half,
        }
    }
}

fn refuse(field: impl Into<String>, value: impl ToString, why: &str) -> RtError {
    RtError::config(field, value, why)
}

fn ns(d: Option<irqlab_model::units::Duration>) -> Nanos {
    d.map_or(Nanos::ZERO, |d| d.0)
}

/// A model's top-half cost `field = cost` as the real run spends it: on
/// the quest paths the runtime's top half spins it per event (at least
/// `MIN_TOP_HALF`); on the linux path the kernel's own interrupt handler
/// is the top half, which user space cannot lengthen, so a non-zero cost
/// is refused (the kernel's measured cost is `costs.kernel`'s hard IRQ).
fn top_half_cost(path: PathKind, field: String, cost: Nanos) -> Result<Nanos, RtError> {
    if path == PathKind::Linux && !cost.is_zero() {
        return Err(refuse(
            field,
            cost,
            "on the linux path the top half is the kernel's own interrupt handler, which \
             user space cannot lengthen: state 0 (the simulator charges the kernel's \
             measured hard-IRQ cost from `costs:`), or run the model as quest / \
             quest-no-iovcpu",
        ));
    }
    crate::io::check_top_half(field, cost)?;
    Ok(cost)
}

/// Parse and validate `text` with the model's own loader, then lower it for
/// a real run (`duration`/`seed` override `simulation.duration`/`seed`).
/// `name` is the model file's path: files it names (arrival traces) are
/// read relative to its directory, and the run is named by its file name.
pub fn plan(
    name: &str,
    text: &str,
    duration: Option<Nanos>,
    seed: Option<u64>,
) -> Result<Plan, RtError> {
    let (m, _warnings) = irqlab_model::load_str(text)
        .map_err(|e| RtError::config(name, "(model)", e.to_string()))?;
    let file = std::path::Path::new(name);
    let short = file
        .file_name()
        .map_or(name.into(), |f| f.to_string_lossy());
    lower(
        &short,
        &m,
        file.parent().unwrap_or(std::path::Path::new("")),
        duration,
        seed,
    )
}

/// Lower a valid model, or refuse what cannot run for real.
pub fn lower(
    name: &str,
    m: &Model,
    base: &std::path::Path,
    duration: Option<Nanos>,
    seed: Option<u64>,
) -> Result<Plan, RtError> {
    let path = m.machine.path;
    if path == PathKind::Hypervisor {
        return Err(refuse(
            "machine.path",
            "hypervisor",
            "irqlab run carries out quest, quest-no-iovcpu and linux machines; a hypervisor \
             model runs on the KVM VMM (`irqlab vmm`), which does not take a model file yet",
        ));
    }
    let (cpus, gen_cpu) = real_cpus(m)?;
    let opts = m.runtime.clone().unwrap_or_default();
    if opts.report_samples > crate::SAMPLES {
        return Err(refuse(
            "runtime.report_samples",
            opts.report_samples,
            &format!("at most {} (the recorder's capacity)", crate::SAMPLES),
        ));
    }
    let mut notes = Vec::new();
    let xhci = xhci_plans(m, path)?;
    let ksoftirqd = match &m.machine.linux {
        Some(l) => linux_knobs(l, path)?,
        None => None,
    };
    // VCPUs.
    let mut vcpus = Vec::new();
    for (i, v) in m.vcpus.iter().enumerate() {
        let f = |k: &str| format!("vcpus[{i}].{k}");
        if v.max_repl
            .is_some_and(|r| r != irqlab_core::DEFAULT_MAX_REPL)
        {
            return Err(refuse(
                f("max_repl"),
                v.max_repl.unwrap_or_default(),
                "irqlab-rt's sporadic servers keep the default replenishment queue (32)",
            ));
        }
        if v.background == Some(true) {
            return Err(refuse(
                f("background"),
                "true",
                "irqlab-rt parks a depleted server; it has no background mode",
            ));
        }
        let io = v.kind == VcpuKind::Io;
        let bp = || (ns(v.budget), ns(v.period));
        let linux = path == PathKind::Linux;
        let policy =
            match (v.policy, linux) {
                (Policy::Fifo, _) => VcpuPolicy::Fifo {
                    priority: v.priority.unwrap_or(1).clamp(1, 98),
                },
                (Policy::Cbs, true) if !io => VcpuPolicy::Deadline {
                    runtime: ns(v.runtime),
                    period: ns(v.period),
                },
                (p, true) => return Err(refuse(
                    f("policy"),
                    format!("{p:?}").to_lowercase(),
                    "the linux baseline runs tasks as plain SCHED_FIFO (fifo) or SCHED_DEADLINE \
                     (cbs, Main VCPUs) threads, without irqlab servers; use path quest for \
                     budgeted servers",
                )),
                (Policy::Sporadic, false) => {
                    let (budget, period) = bp();
                    VcpuPolicy::Sporadic { budget, period }
                }
                (Policy::Deferrable, false) if !io => {
                    let (budget, period) = bp();
                    VcpuPolicy::Deferrable { budget, period }
                }
                (Policy::Pibs, false) if io => VcpuPolicy::Pibs {
                    utilization: v.utilization.map_or(Utilization::ZERO, |u| u.0),
                    inherit: match v.inherit {
                        Some(InheritMode::Strict) => Inherit::Strict,
                        _ => Inherit::Paper,
                    },
                },
                (p, false) => {
                    return Err(refuse(
                        f("policy"),
                        format!("{p:?}").to_lowercase(),
                        if io {
                            "an I/O VCPU on real threads is pibs, sporadic or fifo"
                        } else {
                            "a Main VCPU on real threads is sporadic, deferrable or fifo \
                         (irqlab-rt has no polling server, and CBS only on the linux path)"
                        },
                    ))
                }
            };
        let budgeted = matches!(
            policy,
            VcpuPolicy::Sporadic { .. } | VcpuPolicy::Deferrable { .. }
        );
        if v.priority.is_some() && budgeted && io {
            return Err(refuse(
                f("priority"),
                v.priority.unwrap_or_default(),
                "irqlab-rt ranks a sporadic I/O VCPU by its period (rate-monotonic)",
            ));
        }
        vcpus.push(VcpuPlan {
            name: v.name.clone(),
            io,
            cpu: v.cpu as usize,
            policy,
            priority: if budgeted { v.priority } else { None },
            io_class: v.io_class.clone(),
        });
    }
    let vidx = |n: &str| vcpus.iter().position(|v| v.name == n);
    // Devices.
    let classes = irqlab_model::class_names(m);
    let mut devices = Vec::new();
    let mut routes = Vec::new();
    for (i, d) in m.devices.iter().enumerate() {
        let f = |k: &str| format!("devices[{i}].{k}");
        // A user upcall's events are on no class: its path is named like
        // the simulator's server for it.
        let class = device_class(m, &d.name).map_or_else(|| upcall_server(&d.name), str::to_string);
        let (kind, arrival) = match d.kind {
            DeviceKindName::Nic => {
                let Some(a) = d.arrival.as_ref() else {
                    return Err(refuse(f("arrival"), "(missing)", "a nic has an arrival"));
                };
                let (start, stop) = (ns(a.start), a.stop.map(|s| s.0));
                let arrival = match a.kind {
                    ArrivalKind::Periodic | ArrivalKind::Flood => Arrival::Periodic {
                        interval: ns(a.interval),
                        start,
                        stop,
                    },
                    ArrivalKind::Poisson => Arrival::Poisson {
                        rate_per_s: a.rate.unwrap_or(0.0),
                        start,
                        stop,
                    },
                    ArrivalKind::Burst => Arrival::Burst {
                        count: a.count.unwrap_or(1).max(1),
                        gap: ns(a.gap),
                        every: ns(a.every),
                        start,
                        stop,
                    },
                    ArrivalKind::PingFlood => Arrival::PingFlood {
                        rtt: ns(a.rtt),
                        interval: PING_FALLBACK,
                        start,
                        stop,
                    },
                    ArrivalKind::Trace => {
                        let file = base.join(a.file.as_deref().unwrap_or_default());
                        let times = irqlab_model::limits::read_trace_file(&file).map_err(
                            |(line, value, rule)| {
                                let at = line.map_or(String::new(), |k| format!(" line {k}"));
                                refuse(format!("{}{at}", f("arrival.file")), value, &rule)
                            },
                        )?;
                        Arrival::Trace {
                            times: times.into_iter().map(Nanos).collect(),
                        }
                    }
                };
                (DevKind::Nic, arrival)
            }
            DeviceKindName::Generic => (
                DevKind::Generic,
                Arrival::Sporadic {
                    min: ns(d.min_interarrival),
                    jitter: ns(d.jitter),
                    start: ns(d.start),
                },
            ),
            DeviceKindName::Disk | DeviceKindName::Usb => {
                devices.push(request_device(m, i, class, path, &mut routes)?);
                continue;
            }
        };
        if let Arrival::Periodic { interval, .. } = &arrival {
            if interval.is_zero() {
                return Err(refuse(
                    f("arrival.interval"),
                    "0",
                    "a real generator needs a positive interval",
                ));
            }
        }
        let ((top, bottom), (tk, bk)) = match kind {
            DevKind::Nic => (
                (ns(d.top_half), ns(d.bottom_half)),
                ("top_half", "bottom_half"),
            ),
            _ => ((ns(d.isr), ns(d.dsr)), ("isr", "dsr")),
        };
        let top = top_half_cost(path, f(tk), top)?;
        if path == PathKind::Linux && !bottom.is_zero() {
            notes.push(format!(
                "{} = {bottom}: not added; on the linux path the kernel's own softirq is the \
                 bottom half",
                f(bk)
            ));
        }
        if d.ring.is_some() {
            notes.push(format!(
                "{}: the kernel's loopback backlog replaces the model's receive ring",
                f("ring")
            ));
        }
        let bytes = d.packet.map_or(64, |s| s.0);
        if bytes > 65_507 {
            return Err(refuse(
                f("packet"),
                format!("{bytes}B"),
                "a UDP datagram on loopback carries at most 65507 bytes",
            ));
        }
        let bytes = bytes as usize;
        devices.push(DevPlan {
            name: d.name.clone(),
            kind,
            class,
            arrival: Some(arrival),
            bytes,
            buffer: d.buffer.unwrap_or(1024) as u64,
            bottom_half: if path == PathKind::Linux {
                Nanos::ZERO
            } else {
                bottom
            },
            top_half: top,
            omega_main: ns(d.omega_main),
            readers: Vec::new(),
            source: d.source.unwrap_or_default(),
            upcall: d.upcall.clone(),
            usb: None,
            latency: Nanos::ZERO,
            routes: Vec::new(),
        });
    }
    // Tasks.
    let mut tasks = Vec::new();
    for (i, t) in m.tasks.iter().enumerate() {
        let f = |k: &str| format!("tasks[{i}].{k}");
        if t.abort_on_miss {
            return Err(refuse(
                f("abort_on_miss"),
                "true",
                "a real thread's job cannot be aborted at its deadline",
            ));
        }
        let vcpu = vidx(&t.vcpu).ok_or_else(|| refuse(f("vcpu"), &t.vcpu, "no such VCPU"))?;
        let release = match t.period {
            Some(p) => Release::Periodic {
                period: p.0,
                deadline: t.deadline.map_or(p.0, |d| d.0),
                offset: ns(t.offset),
                jobs: t.jobs,
            },
            None => Release::Once {
                offset: ns(t.offset),
                deadline: t.deadline.map(|d| d.0),
            },
        };
        let mut lw = Lowering {
            m,
            task: i,
            devices: &mut devices,
            routes: &mut routes,
            xhci: &xhci,
        };
        let program = lw.ops(&t.program, &f("program"))?;
        // The model orders a VCPU's tasks by priority; on the linux path a
        // fifo VCPU's tasks are threads at its one SCHED_FIFO priority,
        // which the kernel orders by wake-up instead.
        if let (VcpuPolicy::Fifo { .. }, PathKind::Linux) = (&vcpus[vcpu].policy, path) {
            if let Some(u) = m
                .tasks
                .iter()
                .find(|u| u.vcpu == t.vcpu && u.priority != t.priority)
            {
                return Err(refuse(
                    f("priority"),
                    t.priority,
                    &format!(
                        "on the linux path the tasks of a fifo VCPU are threads at its one \
                         SCHED_FIFO priority, which the kernel runs in wake-up order, not by \
                         task priority ({} has {}): give them one priority, or each task its \
                         own fifo VCPU",
                        u.name, u.priority
                    ),
                ));
            }
        }
        if let VcpuPolicy::Deadline { .. } = vcpus[vcpu].policy {
            if m.tasks.iter().filter(|u| u.vcpu == t.vcpu).count() > 1 {
                return Err(refuse(
                    f("vcpu"),
                    &t.vcpu,
                    "SCHED_DEADLINE reserves per thread: a cbs VCPU runs one task on the linux \
                     path",
                ));
            }
        }
        tasks.push(TaskPlan {
            name: t.name.clone(),
            vcpu,
            priority: t.priority,
            release,
            program,
        });
    }
    let consumers = classes
        .iter()
        .map(|c| {
            m.classes
                .iter()
                .find(|s| &s.name == c)
                .and_then(|s| s.consumer.as_deref())
                .and_then(|n| tasks.iter().position(|t| t.name == n))
        })
        .collect();
    Ok(Plan {
        name: name.to_string(),
        path,
        cpus,
        gen_cpu,
        duration: duration.unwrap_or(m.simulation.duration.0),
        seed: seed.unwrap_or(m.simulation.seed),
        vcpus,
        tasks,
        devices,
        xhci,
        routes,
        classes,
        consumers,
        notes,
        require_fifo: opts.require_fifo,
        backend: match opts.backend {
            RunBackend::Epoll => crate::Backend::Epoll,
            RunBackend::IoUring => crate::Backend::IoUring,
        },
        report_samples: opts.report_samples,
        ksoftirqd,
    })
}

/// The real CPU of each model CPU (`runtime.cpus`, else the last allowed
/// ones) and the generators' (`runtime.generator_cpu`, else an allowed CPU
/// the run does not manage, if any).
fn real_cpus(m: &Model) -> Result<(Vec<usize>, Option<usize>), RtError> {
    let allowed = sys::allowed_cpus();
    let ncpu = m.machine.cpus as usize;
    let opts = m.runtime.as_ref();
    let usable = |field: String, c: u32| {
        if allowed.contains(&(c as usize)) {
            Ok(c as usize)
        } else {
            Err(refuse(
                field,
                c,
                &format!("not a CPU this run may use ({allowed:?})"),
            ))
        }
    };
    let cpus: Vec<usize> = match opts.and_then(|o| o.cpus.as_ref()) {
        Some(c) => c
            .iter()
            .enumerate()
            .map(|(k, &x)| usable(format!("runtime.cpus[{k}]"), x))
            .collect::<Result<_, _>>()?,
        None if ncpu > allowed.len() => {
            return Err(refuse(
                "machine.cpus",
                ncpu,
                &format!(
                    "this machine lets the run use {} CPU(s) ({:?})",
                    allowed.len(),
                    allowed
                ),
            ))
        }
        None => allowed[allowed.len() - ncpu..].to_vec(),
    };
    let gen_cpu = match opts.and_then(|o| o.generator_cpu) {
        Some(g) => Some(usable("runtime.generator_cpu".into(), g)?),
        None => allowed.iter().copied().find(|c| !cpus.contains(c)),
    };
    Ok((cpus, gen_cpu))
}

/// The kernel's own softirq handling is what the linux path measures: the
/// model's knobs for it must match this kernel, or be refused; returns the
/// ksoftirqd priority to apply for the run.
fn linux_knobs(l: &irqlab_model::model::LinuxSpec, path: PathKind) -> Result<Option<u32>, RtError> {
    if path != PathKind::Linux {
        return Ok(None);
    }
    if let Some(n) = l.max_softirq_restart.filter(|&n| n != 10) {
        return Err(refuse(
            "machine.linux.max_softirq_restart",
            n,
            "this kernel's MAX_SOFTIRQ_RESTART is 10, a compile-time constant",
        ));
    }
    if let Some(t) = l.max_softirq_time.filter(|t| t.0 != Nanos::from_ms(2)) {
        return Err(refuse(
            "machine.linux.max_softirq_time",
            t.0,
            "this kernel's MAX_SOFTIRQ_TIME is 2ms, a compile-time constant",
        ));
    }
    let rt = std::fs::read_to_string("/sys/kernel/realtime").is_ok_and(|s| s.trim() == "1");
    if l.threaded_bh && !rt {
        return Err(refuse(
            "machine.linux.threaded_bh",
            "true",
            "this kernel is not PREEMPT_RT (/sys/kernel/realtime): its bottom halves are not \
             all threaded",
        ));
    }
    match &l.ksoftirqd {
        None => Ok(None),
        Some(Ksoftirqd::Fifo(p)) => Ok(Some(*p)),
        Some(Ksoftirqd::Deadline { runtime, period }) => Err(refuse(
            "machine.linux.ksoftirqd",
            format!(
                "deadline {{runtime: {} ns, period: {} ns}}",
                runtime.0.as_ns(),
                period.0.as_ns()
            ),
            "ksoftirqd/N is bound to its CPU and the kernel admits SCHED_DEADLINE only for a \
             task whose affinity spans its root domain; a one-CPU root domain needs an \
             exclusive cpuset partition, which a per-CPU kernel thread cannot join: use fifo",
        )),
    }
}
