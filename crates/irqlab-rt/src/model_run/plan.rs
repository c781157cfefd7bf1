//! The resolved system (`irqlab_system::resolve`: the model lowered once,
//! for every back end) as it runs on real threads, refusing what cannot run
//! for real with the model's field, the value and the reason
//! (docs/runtime.md, "irqlab run MODEL.yaml").
//!
//! Design principles: the model is loaded and validated by `irqlab_model`
//! alone and resolved by `irqlab_system` alone (one loader, one lowering,
//! one set of messages); this module adds only the rules of the real
//! machine (what `irqlab-rt` and this kernel can carry out), never a second
//! reading of the model's meaning; field paths come from the resolved
//! system's `origin`. Measured `costs:` are not the runtime's (it pays
//! this machine's overheads itself): `resolve` leaves them out. Every
//! resolved value is either carried out, refused, or -- when the real
//! machine supplies its own cost (the kernel's softirq on the linux path)
//! -- named in `notes`, never dropped silently. Top-half costs are carried
//! out on the quest paths (spun by the top half per event) and refused on
//! the linux path, whose top half is the kernel's.

use irqlab_core::{Inherit, Nanos, Utilization};
use irqlab_model::model::{PathKind, RunBackend, RunOptions, Source, Upcall};
use irqlab_system::config::{
    ArrivalCfg, DeviceKind, InterruptPath, PolicyCfg, Release as SysRelease,
};
use irqlab_system::{Resolved, SystemError};

use crate::error::RtError;

mod host;
mod io;
use host::{linux_knobs, real_cpus};
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

/// A lowering error of the resolved system, with its field path.
fn system_error(e: SystemError) -> RtError {
    match e {
        SystemError::Config { path, value, rule } => RtError::config(path, value, rule),
        e => RtError::config("(model)", "", e.to_string()),
    }
}

/// The model's name of a resolved path.
fn path_kind(p: InterruptPath) -> PathKind {
    match p {
        InterruptPath::Quest => PathKind::Quest,
        InterruptPath::QuestNoIovcpu => PathKind::QuestNoIovcpu,
        InterruptPath::Linux => PathKind::Linux,
        InterruptPath::Hypervisor => PathKind::Hypervisor,
    }
}

/// The SCHED_FIFO priority (1..99) of a resolved rank (`100 - priority`).
fn fifo_priority(rank: u64) -> u32 {
    u32::try_from(100u64.saturating_sub(rank)).unwrap_or(0)
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

const HYPERVISOR: &str = "irqlab run carries out quest, quest-no-iovcpu and linux machines; a \
                          hypervisor model runs on the KVM VMM (`irqlab vmm`), which does not \
                          take a model file yet";

/// Parse and validate `text` with the model's own loader, resolve it
/// (`irqlab_system::resolve`), then plan it for a real run
/// (`duration`/`seed` override `simulation.duration`/`seed`). `name` is the
/// model file's path: files it names (arrival traces) are read relative to
/// its directory, and the run is named by its file name.
pub fn plan(
    name: &str,
    text: &str,
    duration: Option<Nanos>,
    seed: Option<u64>,
) -> Result<Plan, RtError> {
    let (m, _warnings) = irqlab_model::load_str(text)
        .map_err(|e| RtError::config(name, "(model)", e.to_string()))?;
    if m.machine.path == PathKind::Hypervisor {
        // refused before it is resolved: its lowering's complaints are not
        // the runtime's to report
        return Err(refuse("machine.path", "hypervisor", HYPERVISOR));
    }
    let file = std::path::Path::new(name);
    let short = file
        .file_name()
        .map_or(name.into(), |f| f.to_string_lossy());
    let base = file.parent().unwrap_or(std::path::Path::new(""));
    let system = irqlab_system::resolve(&m, base).map_err(system_error)?;
    let opts = RunOpts {
        runtime: m.runtime.clone().unwrap_or_default(),
        duration,
        seed,
    };
    lower(&short, &system, &opts)
}

/// The run's own options: the model's `runtime:` section (which the
/// simulator and the analysis do not read) and the command line's
/// overrides of `simulation.duration` and `seed`.
#[derive(Clone, Debug, Default)]
pub struct RunOpts {
    pub runtime: RunOptions,
    pub duration: Option<Nanos>,
    pub seed: Option<u64>,
}

/// Plan a resolved system for a real run, or refuse what cannot run for
/// real.
pub fn lower(name: &str, r: &Resolved, opts: &RunOpts) -> Result<Plan, RtError> {
    let (c, o) = (&r.config, &r.origin);
    let path = path_kind(c.path);
    if path == PathKind::Hypervisor {
        return Err(refuse("machine.path", "hypervisor", HYPERVISOR));
    }
    let (cpus, gen_cpu) = real_cpus(c.cpus, &opts.runtime)?;
    let run = &opts.runtime;
    if run.report_samples > crate::SAMPLES {
        return Err(refuse(
            "runtime.report_samples",
            run.report_samples,
            &format!("at most {} (the recorder's capacity)", crate::SAMPLES),
        ));
    }
    let mut notes = Vec::new();
    let xhci = xhci_plans(c, path)?;
    let ksoftirqd = linux_knobs(&c.linux, o.ksoftirqd_fifo, path)?;
    // VCPUs: the model's (the servers of user upcalls follow them).
    let mut vcpus = Vec::new();
    for (i, (v, vo)) in c.servers.iter().zip(&o.servers).enumerate() {
        if vo.upcall_of.is_some() {
            continue;
        }
        let f = |k: &str| format!("{}.{k}", vo.path);
        if let PolicyCfg::Sporadic {
            max_repl,
            background,
            ..
        } = v.policy
        {
            if max_repl != irqlab_core::DEFAULT_MAX_REPL {
                return Err(refuse(
                    f("max_repl"),
                    max_repl,
                    "irqlab-rt's sporadic servers keep the default replenishment queue (32)",
                ));
            }
            if background {
                return Err(refuse(
                    f("background"),
                    "true",
                    "irqlab-rt parks a depleted server; it has no background mode",
                ));
            }
        }
        let io = vo.io;
        let linux = path == PathKind::Linux;
        let name_of = |p: &PolicyCfg| match p {
            PolicyCfg::Sporadic { .. } => "sporadic",
            PolicyCfg::Pibs { .. } => "pibs",
            PolicyCfg::Deferrable { .. } => "deferrable",
            PolicyCfg::Polling { .. } => "polling",
            PolicyCfg::Cbs { .. } => "cbs",
            PolicyCfg::Unbounded {} => "fifo",
        };
        let policy = match (&v.policy, linux) {
            (PolicyCfg::Unbounded {}, _) => VcpuPolicy::Fifo {
                priority: v.rank.map_or(1, fifo_priority).clamp(1, 98),
            },
            (&PolicyCfg::Cbs { runtime, period }, true) if !io => VcpuPolicy::Deadline {
                runtime: Nanos(runtime),
                period: Nanos(period),
            },
            (p, true) => {
                return Err(refuse(
                    f("policy"),
                    name_of(p),
                    "the linux baseline runs tasks as plain SCHED_FIFO (fifo) or SCHED_DEADLINE \
                     (cbs, Main VCPUs) threads, without irqlab servers; use path quest for \
                     budgeted servers",
                ))
            }
            (&PolicyCfg::Sporadic { budget, period, .. }, false) => VcpuPolicy::Sporadic {
                budget: Nanos(budget),
                period: Nanos(period),
            },
            (&PolicyCfg::Deferrable { budget, period }, false) if !io => VcpuPolicy::Deferrable {
                budget: Nanos(budget),
                period: Nanos(period),
            },
            (&PolicyCfg::Pibs { num, den, strict }, false) if io => VcpuPolicy::Pibs {
                utilization: Utilization::new(num, den).unwrap_or(Utilization::ZERO),
                inherit: if strict {
                    Inherit::Strict
                } else {
                    Inherit::Paper
                },
            },
            (p, false) => {
                return Err(refuse(
                    f("policy"),
                    name_of(p),
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
        let priority = v.rank.map(fifo_priority);
        if priority.is_some() && budgeted && io {
            return Err(refuse(
                f("priority"),
                priority.unwrap_or_default(),
                "irqlab-rt ranks a sporadic I/O VCPU by its period (rate-monotonic)",
            ));
        }
        vcpus.push(VcpuPlan {
            name: v.name.clone(),
            io,
            cpu: v.cpu,
            policy,
            priority: if budgeted { priority } else { None },
            io_class: c.classes[..o.model_classes]
                .iter()
                .find(|k| k.iovcpu == Some(i))
                .map(|k| k.name.clone()),
        });
    }
    // Devices.
    let mut devices = Vec::new();
    let mut routes = Vec::new();
    for (i, (d, dorig)) in c.devices.iter().zip(&o.devices).enumerate() {
        let f = |k: &str| format!("{}.{k}", dorig.path);
        let class = c.classes[d.class].name.clone();
        let source = dorig.source.unwrap_or_default();
        let upcall = dorig.upcall.clone();
        let (kind, arrival, (top, bottom), (tk, bk), bytes, buffer) = match &d.kind {
            DeviceKind::Nic {
                arrival,
                top_half,
                bottom_half,
                bytes,
                buffer,
                ..
            } => (
                DevKind::Nic,
                nic_arrival(arrival),
                (Nanos(*top_half), Nanos(*bottom_half)),
                ("top_half", "bottom_half"),
                *bytes,
                *buffer as u64,
            ),
            DeviceKind::Generic {
                min_interarrival,
                jitter,
                isr,
                dsr,
                start,
            } => (
                DevKind::Generic,
                Arrival::Sporadic {
                    min: Nanos(*min_interarrival),
                    jitter: Nanos(*jitter),
                    start: Nanos(*start),
                },
                (Nanos(*isr), Nanos(*dsr)),
                ("isr", "dsr"),
                64,
                1024,
            ),
            DeviceKind::Disk { .. } | DeviceKind::Usb { .. } => {
                devices.push(request_device(c, o, i, class, path, &mut routes)?);
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
        let top = top_half_cost(path, f(tk), top)?;
        if path == PathKind::Linux && !bottom.is_zero() {
            notes.push(format!(
                "{} = {bottom}: not added; on the linux path the kernel's own softirq is the \
                 bottom half",
                f(bk)
            ));
        }
        if dorig.ring.is_some() {
            notes.push(format!(
                "{}: the kernel's loopback backlog replaces the model's receive ring",
                f("ring")
            ));
        }
        if bytes > 65_507 {
            return Err(refuse(
                f("packet"),
                format!("{bytes}B"),
                "a UDP datagram on loopback carries at most 65507 bytes",
            ));
        }
        devices.push(DevPlan {
            name: d.name.clone(),
            kind,
            class,
            arrival: Some(arrival),
            bytes: bytes as usize,
            buffer,
            bottom_half: if path == PathKind::Linux {
                Nanos::ZERO
            } else {
                bottom
            },
            top_half: top,
            omega_main: Nanos(d.omega_main),
            readers: Vec::new(),
            source,
            upcall,
            usb: None,
            latency: Nanos::ZERO,
            routes: Vec::new(),
        });
    }
    // Tasks.
    let mut tasks = Vec::new();
    for (i, (t, to)) in c.tasks.iter().zip(&o.tasks).enumerate() {
        let f = |k: &str| format!("{}.{k}", to.path);
        if t.abort_on_miss {
            return Err(refuse(
                f("abort_on_miss"),
                "true",
                "a real thread's job cannot be aborted at its deadline",
            ));
        }
        let vcpu = t.server;
        if vcpu >= vcpus.len() {
            return Err(refuse(f("vcpu"), vcpu, "no such VCPU"));
        }
        let release = match t.release {
            SysRelease::Periodic {
                period,
                deadline,
                offset,
                jobs,
            } => Release::Periodic {
                period: Nanos(period),
                deadline: Nanos(deadline.unwrap_or(period)),
                offset: Nanos(offset),
                jobs,
            },
            SysRelease::Once { at } => Release::Once {
                offset: Nanos(at),
                deadline: None,
            },
        };
        let mut lw = Lowering {
            c,
            task: i,
            writes: to.writes.iter(),
            devices: &mut devices,
            routes: &mut routes,
            xhci: &xhci,
        };
        let program = lw.ops(&t.program, &f("program"))?;
        // The model orders a VCPU's tasks by priority; on the linux path a
        // fifo VCPU's tasks are threads at its one SCHED_FIFO priority,
        // which the kernel orders by wake-up instead.
        if let (VcpuPolicy::Fifo { .. }, PathKind::Linux) = (&vcpus[vcpu].policy, path) {
            if let Some(u) = c
                .tasks
                .iter()
                .find(|u| u.server == t.server && u.priority != t.priority)
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
            if c.tasks.iter().filter(|u| u.server == t.server).count() > 1 {
                return Err(refuse(
                    f("vcpu"),
                    &vcpus[vcpu].name,
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
    let model_classes = &c.classes[..o.model_classes];
    Ok(Plan {
        name: name.to_string(),
        path,
        cpus,
        gen_cpu,
        duration: opts.duration.unwrap_or(Nanos(c.duration)),
        seed: opts.seed.unwrap_or(c.seed),
        vcpus,
        tasks,
        devices,
        xhci,
        routes,
        classes: model_classes.iter().map(|k| k.name.clone()).collect(),
        consumers: model_classes.iter().map(|k| k.consumer).collect(),
        notes,
        require_fifo: run.require_fifo,
        backend: match run.backend {
            RunBackend::Epoll => crate::Backend::Epoll,
            RunBackend::IoUring => crate::Backend::IoUring,
        },
        report_samples: run.report_samples,
        ksoftirqd,
    })
}

/// A nic's arrivals.
fn nic_arrival(a: &ArrivalCfg) -> Arrival {
    match a {
        &ArrivalCfg::Periodic {
            interval,
            start,
            stop,
        } => Arrival::Periodic {
            interval: Nanos(interval),
            start: Nanos(start),
            stop: stop.map(Nanos),
        },
        &ArrivalCfg::Poisson {
            rate_per_s,
            start,
            stop,
        } => Arrival::Poisson {
            rate_per_s,
            start: Nanos(start),
            stop: stop.map(Nanos),
        },
        &ArrivalCfg::Burst {
            count,
            gap,
            every,
            start,
            stop,
        } => Arrival::Burst {
            count: count.max(1),
            gap: Nanos(gap),
            every: Nanos(every),
            start: Nanos(start),
            stop: stop.map(Nanos),
        },
        &ArrivalCfg::PingFlood {
            rtt,
            interval,
            start,
            stop,
        } => Arrival::PingFlood {
            rtt: Nanos(rtt),
            interval: Nanos(interval),
            start: Nanos(start),
            stop: stop.map(Nanos),
        },
        ArrivalCfg::Trace { times } => Arrival::Trace {
            times: times.iter().copied().map(Nanos).collect(),
        },
    }
}
