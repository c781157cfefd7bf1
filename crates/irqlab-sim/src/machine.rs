//! The simulated machine: CPUs that run one context at a time (idle, a
//! thread, an interrupt top half), threads running small programs, devices
//! raising interrupts, and the `quest` / `quest-no-iovcpu` interrupt paths.
//!
//! Design principles:
//! * Every scheduling decision is `irqlab-core`'s: each CPU owns a core
//!   `Scheduler`; the machine only advances time, feeds events (wake-ups,
//!   blocks) and carries out the `Dispatch`.
//! * Discrete events ordered by (time, sequence number): deterministic for a
//!   configuration and seed, bit for bit.
//! * A CPU is re-evaluated only at the earlier of the core's `next_update`,
//!   the running context's completion, or an external event; stale CPU
//!   events are discarded by an epoch counter.
//! * Top halves run at arrival, FIFO, not preemptible; their time is charged
//!   to the server that was running (as in Quest, where the interrupted
//!   VCPU pays for the short top half). The bottom half is a job on the
//!   class's bottom-half thread: on the I/O VCPU on the `quest` path (the
//!   wake-up passes the served Main VCPU's period, PIBS Alg. 10), in the
//!   served task's Main VCPU on `quest-no-iovcpu`.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

use irqlab_core::rng::SplitMix64;
use irqlab_core::{
    Cbs, DeferrableServer, Inherit, LatencyRecorder, Nanos, Pibs, PollingServer, Scheduler, Server,
    ServerId, ServerPolicy, ServerPriority, SporadicServer, ThreadId, ThreadPolicy, Unbounded,
    Utilization,
};

use crate::config::{
    ArrivalCfg, DeviceKind, InterruptPath, Phase, PolicyCfg, Release, SimConfig, MICROFRAME_NS,
};
use crate::error::SimError;
use crate::metrics::{
    CpuMetrics, DeviceMetrics, Dist, Metrics, ServerMetrics, TaskMetrics, VirqMetrics,
};
use crate::supply::{Replenish, VcpuSupply};
use crate::trace::Trace;

const MAX_COMPLETIONS: usize = 10_000;
/// Program steps allowed at one instant before a program is declared
/// stuck (a loop that neither computes nor blocks).
const MAX_STEPS: u32 = 1_000_000;

#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum EvKind {
    CpuCheck {
        cpu: usize,
        epoch: u64,
    },
    Release {
        task: usize,
    },
    Wake {
        thread: usize,
    },
    Arrival {
        device: usize,
        epoch: u64,
    },
    DiskDone {
        device: usize,
    },
    UsbDone {
        device: usize,
    },
    /// A vINT injection credit comes back (VINT §V-B counter).
    VirqCredit {
        virq: usize,
    },
    XhciIrq {
        controller: usize,
        interrupter: usize,
    },
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Ev {
    time: u64,
    seq: u64,
    kind: EvKind,
}

#[derive(Clone, Debug)]
enum Op {
    Compute(u64),
    Io(usize),
    Sleep(u64),
    Bind { device: usize, class: usize },
    LoopStart { count: Option<u64> },
    LoopEnd { start: usize },
}

fn flatten(phases: &[Phase], out: &mut Vec<Op>) {
    for p in phases {
        match p {
            Phase::Compute { ns } => out.push(Op::Compute(*ns)),
            Phase::Io { device } => out.push(Op::Io(*device)),
            Phase::Sleep { ns } => out.push(Op::Sleep(*ns)),
            Phase::Bind { device, class } => out.push(Op::Bind {
                device: *device,
                class: *class,
            }),
            Phase::Loop { count, body } => {
                let start = out.len();
                out.push(Op::LoopStart { count: *count });
                flatten(body, out);
                out.push(Op::LoopEnd { start });
            }
        }
    }
}

/// What a bottom-half job does when it ends.
#[derive(Clone, Debug)]
enum Deliver {
    /// A NIC packet or generic event into the device's buffer.
    Event,
    /// A disk request: wake this thread.
    Request { thread: usize },
    /// The guest ISR of virtual interrupt `virq` ended: activate its DSR.
    VirqIsr(usize),
    /// The DSR of virtual interrupt `virq` ended: the flow is handled.
    VirqDsr(usize),
}

/// Run-time state of a virtual interrupt (VINT §III, §V).
struct VirqState {
    isr_thread: usize,
    dsr_thread: usize,
    /// Minimum inter-arrival times of the physical and virtual interrupt.
    min_interarrival: u64,
    /// vINT injection counter, its maximum, and delayed injections.
    counter: u64,
    max: u64,
    pending: VecDeque<u64>,
    refill_posted: bool,
    arrivals: u64,
    injected: u64,
    delayed: u64,
    handled: u64,
    serviceable: u64,
    handling: LatencyRecorder,
    within: Vec<u64>,
}

/// Bounds of the handling-time CDF in the metrics (ns).
const CDF_BOUNDS: [u64; 13] = [
    25_000, 50_000, 100_000, 150_000, 170_000, 200_000, 300_000, 500_000, 1_000_000, 2_000_000,
    5_000_000, 10_000_000, 20_000_000,
];

#[derive(Clone, Debug)]
struct BhJob {
    device: usize,
    work: u64,
    arrival: u64,
    period: Option<u64>,
    deliver: Deliver,
    flow: u64,
    /// Thread that runs it (`None`: softirq on the `linux` path).
    target: Option<usize>,
}

/// Where a top half comes from (for names in traces).
#[derive(Copy, Clone, Debug)]
enum IsrSource {
    Device(usize),
    /// Controller and interrupter (MSI vector `msi_base + interrupter`).
    Xhci(usize, usize),
    /// The IPI delivering virtual interrupt `virq` (physical arrival time).
    Ipi(usize, u64),
}

/// The softirq context of one CPU (`linux` path).
#[derive(Debug, Default)]
struct Softirq {
    running: bool,
    started: u64,
    restarts: u32,
    batch: VecDeque<BhJob>,
    current: Option<(BhJob, u64)>,
    pending: VecDeque<BhJob>,
}

/// Run-time state of an xHCI controller: per interrupter, its event ring,
/// the time of its last interrupt (moderation) and its bottom-half thread.
struct XhciState {
    rings: Vec<VecDeque<BhJob>>,
    last_irq: Vec<Option<u64>>,
    irq_posted: Vec<bool>,
    bh: Vec<usize>,
}

#[derive(Clone, Debug)]
struct TaskState {
    task: usize,
    ops: Vec<Op>,
    pc: usize,
    loops: Vec<Option<u64>>,
    /// Release time of the current job.
    job: Option<u64>,
    backlog: VecDeque<u64>,
    /// Device the task is blocked on, and when it asked.
    waiting_io: Option<(usize, u64)>,
    /// An I/O returning: record its latency when this compute ends.
    returning: Option<(usize, u64)>,
}

#[derive(Clone, Debug)]
enum Kind {
    Task(TaskState),
    BottomHalf {
        queue: VecDeque<BhJob>,
        current: Option<BhJob>,
    },
}

#[derive(Clone, Debug)]
struct Thread {
    name: String,
    cpu: usize,
    /// Global server index.
    server: usize,
    core: ThreadId,
    /// Compute left in the current step.
    remaining: u64,
    /// Runnable in the core.
    active: bool,
    kind: Kind,
}

impl Thread {
    /// A thread that serves a queue of bottom-half work items (device
    /// bottom halves, xHCI interrupters, guest ISR/DSR).
    fn bottom_half(name: String, cpu: usize, server: usize, core: ThreadId) -> Self {
        Thread {
            name,
            cpu,
            server,
            core,
            remaining: 0,
            active: false,
            kind: Kind::BottomHalf {
                queue: VecDeque::new(),
                current: None,
            },
        }
    }
}

#[derive(Clone, Debug)]
struct Isr {
    source: IsrSource,
    remaining: u64,
    started: u64,
    jobs: Vec<BhJob>,
    /// Higher preempts lower (nested interrupts).
    priority: u32,
}

struct Cpu {
    sched: Scheduler,
    /// Global server index of each local server id.
    servers: Vec<usize>,
    /// Sporadic servers waiting for a whole budget to start a VCPU job
    /// (`sporadic_whole` looks at these only, not at every server).
    whole_watch: Vec<usize>,
    /// Global thread index of each local (core) thread id.
    threads: Vec<usize>,
    running: Option<(usize, bool)>,
    next_update: Option<u64>,
    need_resched: bool,
    /// A woken thread should preempt (Linux `need_resched()`, which ends
    /// softirq restarts).
    wake_resched: bool,
    last: u64,
    epoch: u64,
    /// Time of the pending check of the current epoch.
    armed: Option<u64>,
    isrs: VecDeque<Isr>,
    softirq: Softirq,
    /// The ksoftirqd thread (`linux` path).
    ksoftirqd: Option<usize>,
    /// Start of the current run segment (for the trace).
    seg_start: u64,
    /// VCPU switch overhead model (`switch_overhead`): the execution
    /// context (`Simulation::ctx_of`) that ran last, when the CPU left it
    /// for idle (`None` while it runs), and the overhead still to spend
    /// before the dispatched thread progresses.
    ctx: Option<usize>,
    ctx_left: Option<u64>,
    switch_left: u64,
    /// Per window: schedule calls and replenishment-queue operations.
    calls_windows: Vec<u64>,
    ops_windows: Vec<u64>,
    metrics: CpuMetrics,
}

struct ServerInfo {
    name: String,
    cpu: usize,
    local: ServerId,
    period: Option<u64>,
    busy: u64,
    background: u64,
    windows: Vec<u64>,
    queue_max: usize,
    queue_sum: u64,
    queue_samples: u64,
    /// Replenishment-queue operations seen so far (sporadic servers).
    ops_seen: u64,
    /// VCPU response times (deferrable and sporadic servers).
    supply: Option<VcpuSupply>,
    /// In its CPU's `whole_watch`.
    whole_watched: bool,
}

impl ServerInfo {
    fn new(
        name: String,
        cpu: usize,
        local: ServerId,
        period: Option<u64>,
        nwin: usize,
        supply: Option<VcpuSupply>,
    ) -> ServerInfo {
        ServerInfo {
            name,
            cpu,
            local,
            period,
            busy: 0,
            background: 0,
            windows: vec![0; nwin],
            queue_max: 0,
            queue_sum: 0,
            queue_samples: 0,
            ops_seen: 0,
            supply,
            whole_watched: false,
        }
    }
}

/// The response-time observer of a budgeted server, if it has a budget.
fn supply_of(p: &PolicyCfg) -> Option<VcpuSupply> {
    match *p {
        PolicyCfg::Deferrable { budget, period } => {
            Some(VcpuSupply::new(Replenish::Deferrable, budget, period, 0))
        }
        PolicyCfg::Sporadic { budget, period, .. } => {
            Some(VcpuSupply::new(Replenish::Sporadic, budget, period, 0))
        }
        _ => None,
    }
}

struct DeviceState {
    buffer: VecDeque<(u64, u64)>,
    /// Disk: pending requests (thread, submitted) and whether busy.
    disk_queue: VecDeque<(usize, u64)>,
    disk_busy: bool,
    /// Thread blocked on this device (NIC/generic), FIFO.
    waiters: VecDeque<usize>,
    interrupts: u64,
    handled: u64,
    dropped: u64,
    bytes: u64,
    bytes_windows: Vec<u64>,
    latency: LatencyRecorder,
    handling: LatencyRecorder,
    burst_left: u64,
    /// Packets between the top half and the end of their bottom half.
    in_ring: usize,
    /// Pending arrival event (ping flood: superseded by an earlier reply).
    arrival_epoch: u64,
    arrival_at: Option<u64>,
    /// I/O class the device's fd is bound to now (`usb_set_iovcpu`).
    class_now: usize,
    /// The last task that read the device.
    last_reader: Option<usize>,
    /// USB: queued requests (thread, submitted, interrupter).
    usb_queue: VecDeque<(usize, u64, usize)>,
    /// USB echo IN endpoint: echoed transfers available, readers waiting.
    echo_credit: u64,
    echo_waiters: VecDeque<(usize, u64)>,
}

struct TaskInfo {
    thread: usize,
    released: u64,
    completed: u64,
    misses: u64,
    response: LatencyRecorder,
    completions: Vec<u64>,
}

/// A simulation of one system, run once.
pub struct Simulation {
    cfg: SimConfig,
    now: u64,
    seq: u64,
    events: BinaryHeap<Reverse<Ev>>,
    cpus: Vec<Cpu>,
    threads: Vec<Thread>,
    servers: Vec<ServerInfo>,
    devices: Vec<DeviceState>,
    tasks: Vec<TaskInfo>,
    /// Bottom-half thread of each class (`usize::MAX`: none).
    class_bh: Vec<usize>,
    xhci: Vec<XhciState>,
    virqs: Vec<VirqState>,
    dirty: Vec<bool>,
    rng: SplitMix64,
    trace: Trace,
    /// Per thread: a bottom-half -> task arrow to end at its next dispatch.
    wake_flow: Vec<Option<u64>>,
    /// Per server: the execution context it runs (its own index; a
    /// pseudo-VCPU runs its original VCPU's, VINT §V-A).
    ctx_of: Vec<usize>,
    flow: u64,
    processed: u64,
}

/// Wrap a core error with context built only when there is an error.
fn core_err<F: FnOnce() -> String>(context: F) -> impl FnOnce(irqlab_core::CoreError) -> SimError {
    move |source| SimError::Core {
        context: context(),
        source,
    }
}

fn build_server(
    p: &PolicyCfg,
    rank: Option<u64>,
) -> Result<(Server, Option<u64>), irqlab_core::CoreError> {
    let prio = rank.map_or(ServerPriority::RateMonotonic, ServerPriority::Rank);
    Ok(match p {
        PolicyCfg::Sporadic {
            budget,
            period,
            max_repl,
            background,
        } => (
            Server::Sporadic(SporadicServer::new(
                Nanos(*budget),
                Nanos(*period),
                *max_repl,
                prio,
                *background,
                Nanos(0),
            )?),
            Some(*period),
        ),
        PolicyCfg::Pibs { num, den, strict } => (
            Server::Pibs(Pibs::new(
                Utilization::new(*num, *den)?,
                if *strict {
                    Inherit::Strict
                } else {
                    Inherit::Paper
                },
            )?),
            None,
        ),
        PolicyCfg::Deferrable { budget, period } => (
            Server::Deferrable(DeferrableServer::new(
                Nanos(*budget),
                Nanos(*period),
                prio,
                Nanos(0),
            )?),
            Some(*period),
        ),
        PolicyCfg::Polling { budget, period } => (
            Server::Polling(PollingServer::new(
                Nanos(*budget),
                Nanos(*period),
                prio,
                Nanos(0),
            )?),
            Some(*period),
        ),
        PolicyCfg::Cbs { runtime, period } => (
            Server::Cbs(Cbs::new(Nanos(*runtime), Nanos(*period), Nanos(0))?),
            Some(*period),
        ),
        PolicyCfg::Unbounded => (
            Server::Unbounded(Unbounded::new(rank.unwrap_or(u64::MAX))),
            None,
        ),
    })
}

impl Simulation {
    /// Build a simulation; the configuration is validated first.
    pub fn new(cfg: SimConfig) -> Result<Simulation, SimError> {
        cfg.check()?;
        let nwin = cfg.duration.div_ceil(cfg.window) as usize;
        let mut cpus: Vec<Cpu> = (0..cfg.cpus)
            .map(|_| Cpu {
                sched: Scheduler::new(),
                servers: Vec::new(),
                whole_watch: Vec::new(),
                threads: Vec::new(),
                running: None,
                next_update: None,
                need_resched: true,
                wake_resched: false,
                last: 0,
                epoch: 0,
                armed: None,
                isrs: VecDeque::new(),
                softirq: Softirq::default(),
                ksoftirqd: None,
                seg_start: 0,
                ctx: None,
                ctx_left: None,
                switch_left: 0,
                calls_windows: vec![0; nwin],
                ops_windows: vec![0; nwin],
                metrics: CpuMetrics::default(),
            })
            .collect();
        let mut servers = Vec::new();
        for (i, s) in cfg.servers.iter().enumerate() {
            let (server, period) = build_server(&s.policy, s.rank)
                .map_err(core_err(|| format!("servers[{i}] ({})", s.name)))?;
            let cpu = &mut cpus[s.cpu];
            let local = cpu
                .sched
                .add_server(s.name.clone(), server, ThreadPolicy::FixedPriority)
                .map_err(core_err(|| format!("servers[{i}]")))?;
            cpu.servers.push(i);
            servers.push(ServerInfo::new(
                s.name.clone(),
                s.cpu,
                local,
                period,
                nwin,
                supply_of(&s.policy),
            ));
        }
        let mut threads = Vec::new();
        let mut tasks = Vec::new();
        for (i, t) in cfg.tasks.iter().enumerate() {
            let cpu = cfg.servers[t.server].cpu;
            let core = cpus[cpu]
                .sched
                .add_thread(t.name.clone(), servers[t.server].local, t.priority)
                .map_err(core_err(|| format!("tasks[{i}]")))?;
            cpus[cpu].threads.push(threads.len());
            let mut ops = Vec::new();
            flatten(&t.program, &mut ops);
            tasks.push(TaskInfo {
                thread: threads.len(),
                released: 0,
                completed: 0,
                misses: 0,
                response: LatencyRecorder::new(0, None),
                completions: Vec::new(),
            });
            threads.push(Thread {
                name: t.name.clone(),
                cpu,
                server: t.server,
                core,
                remaining: 0,
                active: false,
                kind: Kind::Task(TaskState {
                    task: i,
                    ops,
                    pc: 0,
                    loops: Vec::new(),
                    job: None,
                    backlog: VecDeque::new(),
                    waiting_io: None,
                    returning: None,
                }),
            });
        }
        let mut class_bh = Vec::new();
        for (i, c) in cfg.classes.iter().enumerate() {
            // Where the bottom half runs: the I/O VCPU, or (quest-no-iovcpu)
            // the Main VCPU of the consumer task, else of the first task
            // doing I/O on the class.
            let home = match cfg.path {
                InterruptPath::Quest => c.iovcpu,
                InterruptPath::QuestNoIovcpu => c
                    .consumer
                    .map(|t| cfg.tasks[t].server)
                    .or_else(|| first_requester(&cfg, i)),
                InterruptPath::Linux | InterruptPath::Hypervisor => None,
            };
            let Some(server) = home else {
                // No bottom-half thread: the linux path (softirq), the
                // hypervisor path (virtual interrupts instead), or a class
                // nothing uses (validated by `SimConfig::check`).
                if matches!(cfg.path, InterruptPath::Linux | InterruptPath::Hypervisor)
                    || !cfg.class_used(i)
                {
                    class_bh.push(usize::MAX);
                    continue;
                }
                return Err(SimError::Config {
                    path: format!("classes[{i}]"),
                    value: c.name.clone(),
                    rule: "no server to run its bottom half: give an iovcpu or a consumer task"
                        .into(),
                });
            };
            let cpu = cfg.servers[server].cpu;
            // Bottom halves run above the tasks sharing their server.
            let core = cpus[cpu]
                .sched
                .add_thread(format!("{}.bh", c.name), servers[server].local, u32::MAX)
                .map_err(core_err(|| format!("classes[{i}]")))?;
            class_bh.push(threads.len());
            cpus[cpu].threads.push(threads.len());
            threads.push(Thread::bottom_half(
                format!("{}.bh", c.name),
                cpu,
                server,
                core,
            ));
        }
        // One bottom-half thread per xHCI interrupter, in its class's I/O
        // VCPU (USB-DIFFSERV §III-C, Figure 7); on quest-no-iovcpu the
        // class's thread (in the requester's Main VCPU) serves it.
        let mut xhci = Vec::new();
        for (xi, x) in cfg.xhci.iter().enumerate() {
            let mut bh = Vec::new();
            for (k, it) in x.interrupters.iter().enumerate() {
                let server = match cfg.path {
                    InterruptPath::Quest => cfg.classes[it.class].iovcpu,
                    _ => None,
                };
                let Some(server) = server else {
                    bh.push(class_bh[it.class]);
                    continue;
                };
                let cpu = cfg.servers[server].cpu;
                let name = format!("{}.int{k}", x.name);
                let core = cpus[cpu]
                    .sched
                    .add_thread(name.clone(), servers[server].local, u32::MAX)
                    .map_err(core_err(|| format!("xhci[{xi}].interrupters[{k}]")))?;
                bh.push(threads.len());
                cpus[cpu].threads.push(threads.len());
                threads.push(Thread::bottom_half(name, cpu, server, core));
            }
            let n = x.interrupters.len();
            xhci.push(XhciState {
                rings: vec![VecDeque::new(); n],
                last_irq: vec![None; n],
                irq_posted: vec![false; n],
                bh,
            });
        }
        if cfg.path == InterruptPath::Linux {
            for (c, cpu) in cpus.iter_mut().enumerate() {
                let (server, _) =
                    build_server(&cfg.linux.ksoftirqd, Some(cfg.linux.ksoftirqd_rank))
                        .map_err(core_err(|| "linux.ksoftirqd".to_owned()))?;
                let name = format!("ksoftirqd/{c}");
                let local = cpu
                    .sched
                    .add_server(name.clone(), server, ThreadPolicy::FixedPriority)
                    .map_err(core_err(|| "linux.ksoftirqd".to_owned()))?;
                cpu.servers.push(servers.len());
                servers.push(ServerInfo::new(name.clone(), c, local, None, nwin, None));
                let core = cpu
                    .sched
                    .add_thread(name.clone(), local, 1)
                    .map_err(core_err(|| "linux.ksoftirqd".to_owned()))?;
                cpu.ksoftirqd = Some(threads.len());
                cpu.threads.push(threads.len());
                threads.push(Thread::bottom_half(name, c, servers.len() - 1, core));
            }
        }
        // Virtual interrupts: a guest ISR thread (above every task) and a
        // DSR thread, in the VCPU -- or, managed by vINT, in their own
        // pseudo-VCPU server (VINT §V-A/B: the VCPU then runs on the
        // pseudo-VCPU's budget and priority).
        let mut virqs = Vec::new();
        let mut pseudo_home = Vec::new();
        for (k, v) in cfg.virqs.iter().enumerate() {
            let cpu = cfg.servers[v.vcpu].cpu;
            let phys_min = match cfg.devices[v.phys].kind {
                DeviceKind::Generic {
                    min_interarrival, ..
                } => min_interarrival,
                // a NIC has no declared minimum: the virq declares it
                _ => u64::MAX,
            };
            let t_vi = v.min_interarrival.unwrap_or(phys_min);
            let (server, max) = match &v.pseudo {
                None => (v.vcpu, 0),
                Some(p) => {
                    let srv = if p.deferrable {
                        Server::Deferrable(
                            DeferrableServer::new(
                                Nanos(p.budget),
                                Nanos(p.period),
                                ServerPriority::Rank(p.rank),
                                Nanos(0),
                            )
                            .map_err(core_err(|| format!("virqs[{k}].pseudo")))?,
                        )
                    } else {
                        Server::Sporadic(
                            SporadicServer::new(
                                Nanos(p.budget),
                                Nanos(p.period),
                                irqlab_core::DEFAULT_MAX_REPL,
                                ServerPriority::Rank(p.rank),
                                false,
                                Nanos(0),
                            )
                            .map_err(core_err(|| format!("virqs[{k}].pseudo")))?,
                        )
                    };
                    let name = format!("{}.pseudo", v.name);
                    let local = cpus[cpu]
                        .sched
                        .add_server(name.clone(), srv, ThreadPolicy::FixedPriority)
                        .map_err(core_err(|| format!("virqs[{k}].pseudo")))?;
                    cpus[cpu].servers.push(servers.len());
                    let policy = if p.deferrable {
                        Replenish::Deferrable
                    } else {
                        Replenish::Sporadic
                    };
                    servers.push(ServerInfo::new(
                        name,
                        cpu,
                        local,
                        Some(p.period),
                        nwin,
                        Some(VcpuSupply::new(policy, p.budget, p.period, 0)),
                    ));
                    pseudo_home.push((servers.len() - 1, v.vcpu));
                    // the counter's maximum: ceil(T_p / T_i) (VINT §V-B)
                    (servers.len() - 1, p.period.div_ceil(t_vi.max(1)))
                }
            };
            let mut mk = |name: String, prio: u32| -> Result<usize, SimError> {
                let core = cpus[cpu]
                    .sched
                    .add_thread(name.clone(), servers[server].local, prio)
                    .map_err(core_err(|| format!("virqs[{k}]")))?;
                cpus[cpu].threads.push(threads.len());
                threads.push(Thread::bottom_half(name, cpu, server, core));
                Ok(threads.len() - 1)
            };
            let isr_thread = mk(format!("{}.isr", v.name), 1_000_000 + v.priority)?;
            let dsr_thread = mk(format!("{}.dsr", v.name), v.dsr_priority)?;
            virqs.push(VirqState {
                isr_thread,
                dsr_thread,
                min_interarrival: phys_min.min(t_vi.max(1)),
                counter: max,
                max,
                pending: VecDeque::new(),
                refill_posted: false,
                arrivals: 0,
                injected: 0,
                delayed: 0,
                handled: 0,
                serviceable: 0,
                handling: LatencyRecorder::new(0, None),
                within: vec![0; CDF_BOUNDS.len()],
            });
        }
        let devices = cfg
            .devices
            .iter()
            .map(|dc| DeviceState {
                buffer: VecDeque::new(),
                disk_queue: VecDeque::new(),
                disk_busy: false,
                waiters: VecDeque::new(),
                interrupts: 0,
                handled: 0,
                dropped: 0,
                bytes: 0,
                bytes_windows: vec![0; nwin],
                latency: LatencyRecorder::new(0, None),
                handling: LatencyRecorder::new(0, None),
                burst_left: 0,
                in_ring: 0,
                arrival_epoch: 0,
                arrival_at: None,
                class_now: dc.class,
                last_reader: None,
                usb_queue: VecDeque::new(),
                echo_credit: 0,
                echo_waiters: VecDeque::new(),
            })
            .collect();
        let mut trace = Trace::new(cfg.trace.enabled, cfg.trace.until, cfg.trace.max_events);
        let names: Vec<(usize, String)> = servers.iter().map(|s| (s.cpu, s.name.clone())).collect();
        trace.names(cfg.cpus, &names);
        let mut ctx_of: Vec<usize> = (0..servers.len()).collect();
        for (pseudo, vcpu) in pseudo_home {
            ctx_of[pseudo] = vcpu;
        }
        let ncpu = cfg.cpus;
        let seed = cfg.seed;
        let nthreads = threads.len();
        let mut sim = Simulation {
            cfg,
            now: 0,
            seq: 0,
            events: BinaryHeap::new(),
            cpus,
            threads,
            servers,
            devices,
            tasks,
            class_bh,
            xhci,
            virqs,
            dirty: vec![true; ncpu],
            rng: SplitMix64::new(seed),
            wake_flow: vec![None; nthreads],
            ctx_of,
            trace,
            flow: 0,
            processed: 0,
        };
        for i in 0..sim.cfg.tasks.len() {
            let at = match sim.cfg.tasks[i].release {
                Release::Once { at } => at,
                Release::Periodic { offset, .. } => offset,
            };
            sim.post(at, EvKind::Release { task: i });
        }
        for d in 0..sim.cfg.devices.len() {
            if let Some(t) = sim.first_arrival(d) {
                sim.post_arrival(d, t);
            }
        }
        Ok(sim)
    }

    fn post(&mut self, time: u64, kind: EvKind) {
        self.seq += 1;
        self.events.push(Reverse(Ev {
            time,
            seq: self.seq,
            kind,
        }));
    }

    /// Post the next arrival of device `d` (superseding any pending one).
    fn post_arrival(&mut self, d: usize, t: u64) {
        self.devices[d].arrival_epoch += 1;
        self.devices[d].arrival_at = Some(t);
        let epoch = self.devices[d].arrival_epoch;
        self.post(t, EvKind::Arrival { device: d, epoch });
    }

    fn first_arrival(&mut self, d: usize) -> Option<u64> {
        match &self.cfg.devices[d].kind {
            DeviceKind::Nic { arrival, .. } => match arrival {
                ArrivalCfg::Periodic { start, .. } => Some(*start),
                ArrivalCfg::Poisson {
                    start, rate_per_s, ..
                } => {
                    let r = *rate_per_s;
                    Some(*start + self.rng.exponential_ns(r))
                }
                ArrivalCfg::Burst { start, count, .. } => {
                    self.devices[d].burst_left = *count;
                    Some(*start)
                }
                ArrivalCfg::Trace { times } => times.first().copied(),
                ArrivalCfg::PingFlood { start, .. } => Some(*start),
            },
            DeviceKind::Generic { start, .. } => Some(*start),
            DeviceKind::Disk { .. } | DeviceKind::Usb { .. } => None,
        }
    }

    /// The arrival after one at `now` (the `k`-th trace entry for traces).
    fn next_arrival(&mut self, d: usize) -> Option<u64> {
        let now = self.now;
        let stop_ok = |t: u64, stop: &Option<u64>| stop.is_none_or(|s| t < s);
        match &self.cfg.devices[d].kind {
            DeviceKind::Nic { arrival, .. } => match arrival {
                ArrivalCfg::Periodic { interval, stop, .. } => {
                    let t = now + interval;
                    stop_ok(t, stop).then_some(t)
                }
                ArrivalCfg::Poisson {
                    rate_per_s, stop, ..
                } => {
                    let (r, stop) = (*rate_per_s, *stop);
                    let t = now + self.rng.exponential_ns(r).max(1);
                    stop_ok(t, &stop).then_some(t)
                }
                ArrivalCfg::Burst {
                    count,
                    gap,
                    every,
                    stop,
                    start,
                } => {
                    let (count, gap, every, stop, start) = (*count, *gap, *every, *stop, *start);
                    let dev = &mut self.devices[d];
                    dev.burst_left = dev.burst_left.saturating_sub(1);
                    let t = if dev.burst_left > 0 {
                        now + gap.max(1)
                    } else {
                        dev.burst_left = count;
                        // next burst boundary after now
                        let k = (now.saturating_sub(start)) / every + 1;
                        start + k * every
                    };
                    stop_ok(t, &stop).then_some(t)
                }
                ArrivalCfg::Trace { times } => {
                    let i = times.partition_point(|&x| x <= now);
                    times.get(i).copied()
                }
                // The fallback send; a reply may bring it forward.
                ArrivalCfg::PingFlood { interval, stop, .. } => {
                    let t = now + interval;
                    stop_ok(t, stop).then_some(t)
                }
            },
            DeviceKind::Generic {
                min_interarrival,
                jitter,
                ..
            } => {
                let (m, j) = (*min_interarrival, *jitter);
                Some(now + m + if j > 0 { self.rng.below(j + 1) } else { 0 })
            }
            DeviceKind::Disk { .. } | DeviceKind::Usb { .. } => None,
        }
    }

    /// Run to the configured duration and return the metrics.
    pub fn run(mut self) -> Result<(Metrics, serde_json::Value), SimError> {
        let end = self.cfg.duration;
        while let Some(Reverse(ev)) = self.events.pop() {
            if ev.time > end {
                break;
            }
            self.now = ev.time;
            self.processed += 1;
            self.handle(ev.kind)?;
            self.settle()?;
        }
        self.now = end;
        for c in 0..self.cpus.len() {
            self.advance(c);
            self.close_segment(c);
        }
        for s in &mut self.servers {
            if let Some(sp) = s.supply.as_mut() {
                sp.finish(end);
            }
        }
        Ok(self.finish())
    }

    fn handle(&mut self, kind: EvKind) -> Result<(), SimError> {
        match kind {
            EvKind::CpuCheck { cpu, epoch } => {
                if self.cpus[cpu].epoch == epoch {
                    self.cpus[cpu].armed = None;
                    self.dirty[cpu] = true;
                }
            }
            EvKind::Release { task } => self.release(task)?,
            EvKind::Wake { thread } => self.resume_task(thread)?,
            EvKind::Arrival { device, epoch } => {
                if epoch != self.devices[device].arrival_epoch {
                    return Ok(()); // superseded ping-flood send
                }
                self.device_interrupt(device, None);
                if let Some(t) = self.next_arrival(device) {
                    self.post_arrival(device, t);
                }
            }
            EvKind::UsbDone { device } => self.usb_done(device),
            EvKind::VirqCredit { virq } => self.virq_credit(virq)?,
            EvKind::XhciIrq {
                controller,
                interrupter,
            } => {
                self.xhci[controller].irq_posted[interrupter] = false;
                self.xhci_fire(controller, interrupter);
            }
            EvKind::DiskDone { device } => {
                let req = self.devices[device].disk_queue.pop_front();
                self.devices[device].disk_busy = false;
                if let Some((thread, submitted)) = req {
                    self.device_interrupt(device, Some((thread, submitted)));
                }
                self.start_disk(device);
            }
        }
        Ok(())
    }

    /// Charge the time since the CPU's last update to what ran.
    fn advance(&mut self, c: usize) {
        let now = self.now;
        let cpu = &mut self.cpus[c];
        let dt = now - cpu.last;
        cpu.last = now;
        if dt == 0 {
            return;
        }
        if let Some(isr) = cpu.isrs.front_mut() {
            isr.remaining = isr.remaining.saturating_sub(dt);
            cpu.metrics.isr_ns += dt;
            if self.cfg.path == InterruptPath::Hypervisor {
                // physical ISRs are the hypervisor's time (VINT §III)
                cpu.sched.exclude_until(Nanos(now), Nanos(dt));
            }
            return;
        }
        if let Some((_, rem)) = cpu.softirq.current.as_mut() {
            *rem = rem.saturating_sub(dt);
            cpu.metrics.softirq_ns += dt;
            return;
        }
        match cpu.running {
            Some((t, background)) => {
                // a VCPU switch in progress: the VCPU's time, no guest
                // progress
                let sw = cpu.switch_left.min(dt);
                if sw > 0 {
                    cpu.switch_left -= sw;
                    cpu.metrics.switch_ns += sw;
                    let th = &self.threads[t];
                    self.trace
                        .switch(c, &self.servers[th.server].name, now - dt, now - dt + sw);
                }
                let th = &mut self.threads[t];
                th.remaining = th.remaining.saturating_sub(dt - sw);
                let s = &mut self.servers[th.server];
                if background {
                    s.background += dt;
                } else {
                    s.busy += dt;
                    add_windows(&mut s.windows, self.cfg.window, now - dt, now);
                    if let Some(sp) = s.supply.as_mut() {
                        sp.run(now - dt, now);
                        if sp.wants_whole() && !s.whole_watched {
                            s.whole_watched = true;
                            cpu.whole_watch.push(th.server);
                        }
                    }
                }
            }
            None => cpu.metrics.idle_ns += dt,
        }
    }

    fn close_segment(&mut self, c: usize) {
        let now = self.now;
        let start = self.cpus[c].seg_start;
        if let Some((t, bg)) = self.cpus[c].running {
            if now > start && self.cpus[c].isrs.is_empty() {
                let th = &self.threads[t];
                let s = &self.servers[th.server];
                self.trace
                    .run(c, th.server, &s.name, &th.name, start, now, bg);
            }
        }
        self.cpus[c].seg_start = now;
    }

    fn touch(&mut self, c: usize) {
        self.advance(c);
        self.dirty[c] = true;
    }

    /// Re-evaluate dirty CPUs until nothing changes at this instant.
    fn settle(&mut self) -> Result<(), SimError> {
        let mut guard = 0u32;
        while let Some(c) = self.dirty.iter().position(|&d| d) {
            self.dirty[c] = false;
            self.kick(c)?;
            guard += 1;
            if guard > MAX_STEPS {
                return Err(SimError::Config {
                    path: "tasks".into(),
                    value: format!("t = {} ns", self.now),
                    rule: "the system makes no progress at one instant (a program loop that neither computes nor blocks)".into(),
                });
            }
        }
        Ok(())
    }

    fn kick(&mut self, c: usize) -> Result<(), SimError> {
        let now = self.now;
        self.advance(c);
        // Top halves first: they own the CPU until done.
        while let Some(isr) = self.cpus[c].isrs.front() {
            if isr.remaining > 0 {
                let t = now + isr.remaining;
                self.arm(c, t);
                return Ok(());
            }
            let Some(isr) = self.cpus[c].isrs.pop_front() else {
                break;
            };
            if self.trace.enabled() {
                let name = match isr.source {
                    IsrSource::Device(d) => self.cfg.devices[d].name.clone(),
                    IsrSource::Xhci(x, it) => {
                        let xc = &self.cfg.xhci[x];
                        format!("{} MSI {}", xc.name, xc.msi_base as usize + it)
                    }
                    IsrSource::Ipi(v, _) => format!("IPI {}", self.cfg.virqs[v].name),
                };
                let flow = isr.jobs.first().map_or(0, |j| j.flow);
                self.trace.isr(c, &name, isr.started, now, flow);
            }
            self.cpus[c].seg_start = now;
            for job in isr.jobs {
                self.route_bh(c, job)?;
            }
            match isr.source {
                IsrSource::Device(d) if self.cfg.path == InterruptPath::Hypervisor => {
                    self.virqs_after_isr(c, d, isr.started)?
                }
                IsrSource::Ipi(v, arrival) => self.inject(v, arrival)?,
                _ => {}
            }
            self.cpus[c].need_resched = true;
        }
        // Then the softirq (linux path): it runs in interrupt context too.
        if self.softirq_step(c)? {
            return Ok(());
        }
        // The running thread finished its step?
        if let Some((t, _)) = self.cpus[c].running {
            if self.threads[t].remaining == 0 {
                self.step_done(t)?;
            }
        }
        let cpu = &self.cpus[c];
        if cpu.need_resched || cpu.next_update.is_some_and(|u| u <= now) {
            self.dispatch(c)?;
        }
        let mut t = self.cpus[c].next_update.unwrap_or(u64::MAX);
        if let Some((th, _)) = self.cpus[c].running {
            let left = self.cpus[c].switch_left;
            t = t.min(
                now.saturating_add(left)
                    .saturating_add(self.threads[th].remaining),
            );
        }
        if t != u64::MAX {
            self.arm(c, t);
        } else {
            self.cpus[c].epoch += 1;
            self.cpus[c].armed = None;
        }
        Ok(())
    }

    fn arm(&mut self, c: usize, t: u64) {
        if self.cpus[c].armed == Some(t) {
            // The pending check for this epoch already fires at `t`.
            return;
        }
        self.cpus[c].armed = Some(t);
        self.cpus[c].epoch += 1;
        let epoch = self.cpus[c].epoch;
        self.post(t, EvKind::CpuCheck { cpu: c, epoch });
    }

    fn dispatch(&mut self, c: usize) -> Result<(), SimError> {
        let now = self.now;
        self.close_segment(c);
        let prev = self.cpus[c].running.map(|(t, _)| self.threads[t].server);
        let win = (now / self.cfg.window) as usize;
        if let Some(w) = self.cpus[c].calls_windows.get_mut(win) {
            *w += 1;
        }
        let d = self.cpus[c]
            .sched
            .schedule(Nanos(now))
            .map_err(core_err(|| format!("cpu {c}")))?;
        if let Some(g) = prev {
            // replenishment-queue occupancy after the previous server's
            // end_timeslice
            if let Ok(Server::Sporadic(ss)) = self.cpus[c].sched.server(self.servers[g].local) {
                let s = &mut self.servers[g];
                let n = ss.queue_len();
                s.queue_max = s.queue_max.max(n);
                s.queue_sum += n as u64;
                s.queue_samples += 1;
                let delta = ss.ops - s.ops_seen;
                s.ops_seen = ss.ops;
                if let Some(w) = self.cpus[c].ops_windows.get_mut(win) {
                    *w += delta;
                }
            }
        }
        self.sporadic_whole(c, now);
        let cpu = &mut self.cpus[c];
        cpu.need_resched = false;
        cpu.wake_resched = false;
        cpu.next_update = d.next_update.map(|x| x.as_ns());
        cpu.running = match (d.server, d.thread) {
            (Some(s), Some(t)) => {
                let g = cpu.servers[s.0];
                let th = *cpu.threads.get(t.0).ok_or_else(|| SimError::Config {
                    path: format!("cpu {c}"),
                    value: format!("{t:?}"),
                    rule: "dispatched thread unknown to the machine".into(),
                })?;
                if self.trace.enabled() {
                    let budget = cpu
                        .sched
                        .server(s)
                        .ok()
                        .map(|x| x.budget().as_ns())
                        .filter(|&b| b != u64::MAX);
                    self.trace.budget(c, &self.servers[g].name, now, budget);
                    if let Some(f) = self.wake_flow[th].take() {
                        self.trace.flow_step(c, now, f, "bh->task", true);
                    }
                }
                Some((th, d.background))
            }
            _ => None,
        };
        self.switch_context(c);
        Ok(())
    }

    /// VCPU switch overhead (`SimConfig::switch_overhead`): after a
    /// dispatch, a context other than the one that ran last, or the same
    /// one after the CPU idled for a while, starts a switch; the same
    /// context continuing (another of its threads, its pseudo-VCPU, a
    /// zero-length idle) keeps what is left of a switch in progress.
    fn switch_context(&mut self, c: usize) {
        let now = self.now;
        let new = self.cpus[c]
            .running
            .map(|(t, _)| self.ctx_of[self.threads[t].server]);
        let o = self.cfg.switch_overhead;
        let cpu = &mut self.cpus[c];
        match new {
            Some(x) => {
                let resumed = cpu.ctx == Some(x) && cpu.ctx_left.is_none_or(|t| t == now);
                if !resumed {
                    cpu.metrics.vcpu_switches += 1;
                    cpu.switch_left = o;
                }
                cpu.ctx = Some(x);
                cpu.ctx_left = None;
            }
            None => {
                if cpu.ctx_left.is_none() {
                    cpu.ctx_left = Some(now);
                }
            }
        }
    }

    // ---- threads -------------------------------------------------------

    /// Core wake-up of a thread whose next step is computed.
    fn wake(&mut self, t: usize, inherit: Option<u64>) -> Result<(), SimError> {
        let c = self.threads[t].cpu;
        self.touch(c);
        let core = self.threads[t].core;
        let preempt = self.cpus[c]
            .sched
            .wakeup(Nanos(self.now), core, inherit.map(Nanos))
            .map_err(core_err(|| format!("wakeup of {}", self.threads[t].name)))?;
        self.threads[t].active = true;
        self.note_backlog(t);
        if preempt {
            self.cpus[c].need_resched = true;
            self.cpus[c].wake_resched = true;
        }
        Ok(())
    }

    /// After a decision on CPU `c`: a backlogged sporadic server whose
    /// every replenishment is due and that used nothing since has its whole
    /// budget (VCPU response times, `supply`).
    fn sporadic_whole(&mut self, c: usize, now: u64) {
        let cpu = &mut self.cpus[c];
        let servers = &mut self.servers;
        cpu.whole_watch.retain(|&g| {
            let s = &mut servers[g];
            let Some(sp) = s.supply.as_mut() else {
                return false;
            };
            if let Ok(Server::Sporadic(ss)) = cpu.sched.server(s.local) {
                if ss.usage().is_zero() && ss.queued_sum() == ss.capacity_c() {
                    let last_due = ss.replenishments().map(|r| r.time.as_ns()).max();
                    if let Some(t) = last_due.filter(|&t| t <= now) {
                        sp.whole_since(t);
                    }
                }
            }
            s.whole_watched = sp.wants_whole();
            s.whole_watched
        });
    }

    /// Tell the server of thread `t` whether it is backlogged now.
    fn note_backlog(&mut self, t: usize) {
        let g = self.threads[t].server;
        let s = &self.servers[g];
        if s.supply.is_none() {
            return;
        }
        let c = s.cpu;
        let backlogged = self.cpus[c].sched.is_runnable(s.local).unwrap_or(false);
        let s = &mut self.servers[g];
        if let Some(sp) = s.supply.as_mut() {
            sp.backlog(self.now, backlogged);
            if sp.wants_whole() && !s.whole_watched {
                s.whole_watched = true;
                self.cpus[c].whole_watch.push(g);
            }
        }
    }

    fn block(&mut self, t: usize) -> Result<(), SimError> {
        let c = self.threads[t].cpu;
        self.touch(c);
        let core = self.threads[t].core;
        let was_running = self.cpus[c]
            .sched
            .block(Nanos(self.now), core)
            .map_err(core_err(|| format!("block of {}", self.threads[t].name)))?;
        self.threads[t].active = false;
        self.note_backlog(t);
        if was_running {
            self.cpus[c].need_resched = true;
        }
        Ok(())
    }

    /// The running thread finished its compute step.
    fn step_done(&mut self, t: usize) -> Result<(), SimError> {
        match &mut self.threads[t].kind {
            Kind::Task(ts) => {
                if let Some((dev, since)) = ts.returning.take() {
                    let lat = self.now - since;
                    self.devices[dev].latency.record(Nanos(lat));
                }
                self.run_program(t)
            }
            Kind::BottomHalf { current, .. } => {
                if let Some(job) = current.take() {
                    self.bh_done(t, job)?;
                }
                self.next_bh_job(t)
            }
        }
    }

    /// Execute program steps until the next compute step or a block.
    /// Precondition: the thread is a task.
    fn run_program(&mut self, t: usize) -> Result<(), SimError> {
        let now = self.now;
        let mut steps = 0u32;
        loop {
            steps += 1;
            if steps > MAX_STEPS {
                return Err(SimError::Config {
                    path: format!("tasks ({})", self.threads[t].name),
                    value: format!("t = {now} ns"),
                    rule: "the program makes no progress (a loop that neither computes nor blocks)"
                        .into(),
                });
            }
            let Kind::Task(ts) = &mut self.threads[t].kind else {
                return Ok(());
            };
            if ts.pc >= ts.ops.len() {
                // job complete
                let task = ts.task;
                if let Some(rel) = ts.job.take() {
                    self.job_done(task, rel);
                }
                let Kind::Task(ts) = &mut self.threads[t].kind else {
                    return Ok(());
                };
                ts.pc = 0;
                ts.loops.clear();
                if let Some(r) = ts.backlog.pop_front() {
                    ts.job = Some(r);
                    continue;
                }
                return self.park(t);
            }
            let op = ts.ops[ts.pc].clone();
            match op {
                Op::Compute(ns) => {
                    ts.pc += 1;
                    self.threads[t].remaining = ns;
                    return self.ensure_active(t);
                }
                Op::Sleep(ns) => {
                    ts.pc += 1;
                    self.post(now + ns, EvKind::Wake { thread: t });
                    return self.park(t);
                }
                Op::LoopStart { count } => {
                    ts.loops.push(count);
                    ts.pc += 1;
                }
                Op::LoopEnd { start } => {
                    let again = match ts.loops.last_mut() {
                        Some(Some(n)) => {
                            *n -= 1;
                            *n > 0
                        }
                        Some(None) => true,
                        None => false,
                    };
                    if again {
                        ts.pc = start + 1;
                    } else {
                        ts.loops.pop();
                        ts.pc += 1;
                    }
                }
                Op::Bind { device, class } => {
                    ts.pc += 1;
                    self.devices[device].class_now = class;
                }
                Op::Io(dev) => {
                    ts.pc += 1;
                    ts.waiting_io = Some((dev, now));
                    self.devices[dev].last_reader = Some(t);
                    if let DeviceKind::Usb { echo_of, .. } = self.cfg.devices[dev].kind {
                        if echo_of.is_some() && self.devices[dev].echo_credit == 0 {
                            // an echo read waits for data written to the OUT endpoint
                            self.devices[dev].echo_waiters.push_back((t, now));
                        } else {
                            if echo_of.is_some() {
                                self.devices[dev].echo_credit -= 1;
                            }
                            self.usb_submit(dev, t, now);
                        }
                        return self.park(t);
                    }
                    let disk = matches!(self.cfg.devices[dev].kind, DeviceKind::Disk { .. });
                    if disk {
                        self.devices[dev].disk_queue.push_back((t, now));
                        self.start_disk(dev);
                        return self.park(t);
                    }
                    if self.devices[dev].buffer.pop_front().is_some() {
                        // data already there: the read returns after
                        // Omega_Main
                        if self.io_return(t)? {
                            return Ok(());
                        }
                        continue;
                    }
                    self.devices[dev].waiters.push_back(t);
                    return self.park(t);
                }
            }
        }
    }

    /// The task's pending I/O returns now: it spends Omega_Main (returns
    /// true: a compute step was set) or records the latency at once.
    fn io_return(&mut self, t: usize) -> Result<bool, SimError> {
        let Kind::Task(ts) = &mut self.threads[t].kind else {
            return Ok(false);
        };
        let Some((dev, since)) = ts.waiting_io.take() else {
            return Ok(false);
        };
        let omega = self.cfg.devices[dev].omega_main;
        if omega > 0 {
            ts.returning = Some((dev, since));
            self.threads[t].remaining = omega;
            self.ensure_active(t)?;
            Ok(true)
        } else {
            self.devices[dev].latency.record(Nanos(self.now - since));
            Ok(false)
        }
    }

    fn ensure_active(&mut self, t: usize) -> Result<(), SimError> {
        if !self.threads[t].active {
            self.wake(t, None)?;
        }
        Ok(())
    }

    fn park(&mut self, t: usize) -> Result<(), SimError> {
        self.threads[t].remaining = 0;
        if self.threads[t].active {
            self.block(t)?;
        }
        Ok(())
    }

    /// A blocked task resumes (sleep end, I/O completion).
    fn resume_task(&mut self, t: usize) -> Result<(), SimError> {
        if self.threads[t].active {
            return Ok(());
        }
        if self.io_return(t)? {
            return Ok(());
        }
        self.run_program(t)
    }

    fn release(&mut self, task: usize) -> Result<(), SimError> {
        let now = self.now;
        let t = self.tasks[task].thread;
        self.tasks[task].released += 1;
        if let Release::Periodic { period, jobs, .. } = self.cfg.tasks[task].release {
            if jobs.is_none_or(|j| self.tasks[task].released < j) {
                self.post(now + period, EvKind::Release { task });
            }
        }
        let Kind::Task(ts) = &mut self.threads[t].kind else {
            return Ok(());
        };
        if ts.job.is_some() {
            ts.backlog.push_back(now);
            return Ok(());
        }
        ts.job = Some(now);
        ts.pc = 0;
        ts.loops.clear();
        self.run_program(t)
    }

    fn job_done(&mut self, task: usize, release: u64) {
        let now = self.now;
        let deadline = match self.cfg.tasks[task].release {
            Release::Periodic {
                period, deadline, ..
            } => Some(deadline.unwrap_or(period)),
            Release::Once { .. } => None,
        };
        let info = &mut self.tasks[task];
        info.completed += 1;
        info.response.record(Nanos(now - release));
        if deadline.is_some_and(|d| now > release + d) {
            info.misses += 1;
        }
        if info.completions.len() < MAX_COMPLETIONS {
            info.completions.push(now);
        }
    }

    // ---- devices and bottom halves -------------------------------------

    fn start_disk(&mut self, d: usize) {
        if self.devices[d].disk_busy || self.devices[d].disk_queue.is_empty() {
            return;
        }
        if let DeviceKind::Disk { latency, .. } = self.cfg.devices[d].kind {
            self.devices[d].disk_busy = true;
            self.post(self.now + latency, EvKind::DiskDone { device: d });
        }
    }

    /// An interrupt from device `d`: top half on its CPU, then a
    /// bottom-half job.
    fn device_interrupt(&mut self, d: usize, request: Option<(usize, u64)>) {
        let now = self.now;
        let dev = &self.cfg.devices[d];
        let (top, work) = match &dev.kind {
            DeviceKind::Nic {
                top_half,
                bottom_half,
                ..
            } => (*top_half, *bottom_half),
            DeviceKind::Disk {
                top_half,
                per_sector,
                sectors,
                ..
            } => (*top_half, per_sector * sectors),
            DeviceKind::Generic { isr, dsr, .. } => (*isr, *dsr),
            // USB events go through `usb_event` and the xHCI interrupter.
            DeviceKind::Usb { .. } => (0, 0),
        };
        let class = self.devices[d].class_now;
        // The Main VCPU served (QUEST-VCPU §2.1: every I/O event is handled
        // on behalf of a task): the requester's, else the class consumer's,
        // else the task waiting on (or that last read) the device.
        let served = request
            .map(|(t, _)| t)
            .or_else(|| {
                self.cfg
                    .classes
                    .get(class)
                    .and_then(|c| c.consumer)
                    .map(|k| self.tasks[k].thread)
            })
            .or_else(|| self.devices[d].waiters.front().copied())
            .or(self.devices[d].last_reader);
        let period = served.and_then(|t| self.servers[self.threads[t].server].period);
        let deliver = match request {
            Some((thread, _)) => Deliver::Request { thread },
            None => Deliver::Event,
        };
        self.flow += 2;
        let target = self.bh_target_class(class, dev.cpu);
        let job = BhJob {
            device: d,
            work,
            arrival: now,
            period,
            deliver,
            flow: self.flow,
            target,
        };
        if let (DeviceKind::Nic { ring, .. }, false) =
            (&dev.kind, self.cfg.path == InterruptPath::Hypervisor)
        {
            if self.devices[d].in_ring >= *ring {
                // RX ring full: the NIC drops the packet, no interrupt.
                self.devices[d].dropped += 1;
                return;
            }
            self.devices[d].in_ring += 1;
        }
        self.devices[d].interrupts += 1;
        let (c, priority) = (dev.cpu, dev.irq_priority);
        // on the hypervisor path a physical interrupt's handling is its
        // virtual interrupts, injected when its ISR completes
        let jobs = if self.cfg.path == InterruptPath::Hypervisor {
            Vec::new()
        } else {
            vec![job]
        };
        self.push_isr(
            c,
            Isr {
                source: IsrSource::Device(d),
                remaining: top,
                started: now,
                jobs,
                priority,
            },
        );
    }

    /// A top half arrives on CPU `c`: it runs before every ISR of lower
    /// priority (preempting the running one), after those of equal or
    /// higher priority (nested interrupts, VINT §III).
    fn push_isr(&mut self, c: usize, isr: Isr) {
        self.touch(c);
        if self.cpus[c].isrs.is_empty() {
            self.close_segment(c);
        }
        let q = &mut self.cpus[c].isrs;
        let pos = q
            .iter()
            .position(|x| x.priority < isr.priority)
            .unwrap_or(q.len());
        q.insert(pos, isr);
    }

    // ---- hypervisor and vINT (VINT §III, §V) ---------------------------

    /// The ISR of physical interrupt `d` on CPU `c` completed: deliver its
    /// virtual interrupts, through an IPI when the VCPU is on another CPU.
    fn virqs_after_isr(&mut self, c: usize, d: usize, arrival: u64) -> Result<(), SimError> {
        for v in 0..self.cfg.virqs.len() {
            if self.cfg.virqs[v].phys != d {
                continue;
            }
            self.virqs[v].arrivals += 1;
            let target = self.cfg.servers[self.cfg.virqs[v].vcpu].cpu;
            if target != c && self.cfg.ipi > 0 {
                let priority = u32::MAX; // IPIs above device interrupts
                self.push_isr(
                    target,
                    Isr {
                        source: IsrSource::Ipi(v, arrival),
                        remaining: self.cfg.ipi,
                        started: self.now,
                        jobs: Vec::new(),
                        priority,
                    },
                );
            } else {
                self.inject(v, arrival)?;
            }
        }
        Ok(())
    }

    /// Inject virtual interrupt `v` (physical arrival `arrival`): with vINT
    /// only while its counter is above zero, else the injection waits for a
    /// credit (VINT §V-B).
    fn inject(&mut self, v: usize, arrival: u64) -> Result<(), SimError> {
        let managed = self.cfg.virqs[v].pseudo.clone();
        if let Some(p) = managed {
            let st = &mut self.virqs[v];
            if st.counter == 0 {
                st.pending.push_back(arrival);
                st.delayed += 1;
                return Ok(());
            }
            st.counter -= 1;
            let now = self.now;
            if p.deferrable {
                // full refill at the next period boundary of the pseudo-VCPU
                if !st.refill_posted {
                    st.refill_posted = true;
                    let at = (now / p.period + 1) * p.period;
                    self.post(at, EvKind::VirqCredit { virq: v });
                }
            } else {
                // one credit back one period after its use
                self.post(now + p.period, EvKind::VirqCredit { virq: v });
            }
        }
        self.virqs[v].injected += 1;
        let cfg = &self.cfg.virqs[v];
        let job = BhJob {
            device: cfg.phys,
            work: cfg.isr + cfg.eoi,
            arrival,
            period: None,
            deliver: Deliver::VirqIsr(v),
            flow: 0,
            target: Some(self.virqs[v].isr_thread),
        };
        let t = self.virqs[v].isr_thread;
        self.enqueue_bh(t, job)
    }

    fn virq_credit(&mut self, v: usize) -> Result<(), SimError> {
        let Some(p) = self.cfg.virqs[v].pseudo.clone() else {
            return Ok(());
        };
        let st = &mut self.virqs[v];
        if p.deferrable {
            st.refill_posted = false;
            st.counter = st.max;
        } else {
            st.counter = (st.counter + 1).min(st.max);
        }
        while self.virqs[v].counter > 0 {
            let Some(arrival) = self.virqs[v].pending.pop_front() else {
                break;
            };
            self.inject(v, arrival)?;
        }
        Ok(())
    }

    /// Hand a bottom-half job to its thread, or to the softirq context.
    fn route_bh(&mut self, c: usize, job: BhJob) -> Result<(), SimError> {
        match job.target {
            Some(t) => self.enqueue_bh(t, job),
            None => self.raise_softirq(c, job),
        }
    }

    /// The thread that runs bottom halves of `class` for an interrupt on
    /// `cpu` (`None`: softirq).
    fn bh_target_class(&self, class: usize, cpu: usize) -> Option<usize> {
        match self.cfg.path {
            InterruptPath::Linux => self.linux_target(cpu),
            InterruptPath::Hypervisor => None,
            _ => self
                .class_bh
                .get(class)
                .copied()
                .filter(|&t| t != usize::MAX),
        }
    }

    /// Linux: softirq at IRQ exit (`None`), or the ksoftirqd thread of the
    /// interrupted CPU with forced threading (PREEMPT_RT).
    fn linux_target(&self, c: usize) -> Option<usize> {
        if self.cfg.linux.threaded_bh {
            self.cpus[c].ksoftirqd
        } else {
            None
        }
    }

    /// Whether ksoftirqd of CPU `c` has work (Linux then leaves new
    /// softirqs to it instead of running them at IRQ exit).
    fn ksoftirqd_busy(&self, c: usize) -> Option<usize> {
        let t = self.cpus[c].ksoftirqd?;
        match &self.threads[t].kind {
            Kind::BottomHalf { queue, current } if current.is_some() || !queue.is_empty() => {
                Some(t)
            }
            _ => None,
        }
    }

    /// `raise_softirq` at the end of a hard IRQ on CPU `c`.
    fn raise_softirq(&mut self, c: usize, job: BhJob) -> Result<(), SimError> {
        if let Some(t) = self.ksoftirqd_busy(c) {
            return self.enqueue_bh(t, job);
        }
        let now = self.now;
        let sq = &mut self.cpus[c].softirq;
        sq.pending.push_back(job);
        if !sq.running {
            sq.running = true;
            sq.started = now;
            sq.restarts = 0;
            sq.batch = std::mem::take(&mut sq.pending);
        }
        self.dirty[c] = true;
        Ok(())
    }

    /// Advance the softirq context of CPU `c` (`__do_softirq`): run the
    /// batch of pending bottom halves; when more were raised meanwhile,
    /// restart up to `max_restart` times within `max_softirq_time` unless a
    /// woken task needs the CPU; leave the rest to ksoftirqd. Returns true
    /// while the softirq owns the CPU (a check is armed).
    fn softirq_step(&mut self, c: usize) -> Result<bool, SimError> {
        let now = self.now;
        loop {
            if let Some((_, rem)) = &self.cpus[c].softirq.current {
                if *rem > 0 {
                    let t = now + *rem;
                    self.arm(c, t);
                    return Ok(true);
                }
                if let Some((job, _)) = self.cpus[c].softirq.current.take() {
                    self.deliver(c, job)?;
                }
                continue;
            }
            let sq = &mut self.cpus[c].softirq;
            if !sq.running {
                return Ok(false);
            }
            if let Some(job) = sq.batch.pop_front() {
                let w = job.work;
                sq.current = Some((job, w));
                self.cpus[c].seg_start = now;
                continue;
            }
            if sq.pending.is_empty() {
                sq.running = false;
                return Ok(false);
            }
            let l = &self.cfg.linux;
            let resched = self.cpus[c].wake_resched;
            let sq = &mut self.cpus[c].softirq;
            if sq.restarts < l.max_restart && now - sq.started < l.max_softirq_time && !resched {
                sq.restarts += 1;
                sq.batch = std::mem::take(&mut sq.pending);
                continue;
            }
            // Too many restarts, too long, or a task to run: wake ksoftirqd.
            let rest = std::mem::take(&mut sq.pending);
            sq.running = false;
            if let Some(t) = self.cpus[c].ksoftirqd {
                for job in rest {
                    self.enqueue_bh(t, job)?;
                }
            }
            return Ok(false);
        }
    }

    // ---- USB (xHCI) ----------------------------------------------------

    /// Submit a USB request of `thread` on endpoint `d`; it carries the
    /// interrupter of the class the fd is bound to (USB-DIFFSERV §III-C).
    fn usb_submit(&mut self, d: usize, thread: usize, submitted: u64) {
        let DeviceKind::Usb { controller, .. } = self.cfg.devices[d].kind else {
            return;
        };
        let class = self.devices[d].class_now;
        let it = self.cfg.xhci[controller]
            .interrupters
            .iter()
            .position(|i| i.class == class)
            .unwrap_or(0);
        self.devices[d].usb_queue.push_back((thread, submitted, it));
        self.usb_start(d);
    }

    /// Start the endpoint's next transfer: `bytes / rate` (plus jitter),
    /// completing at the next 125 us microframe boundary.
    fn usb_start(&mut self, d: usize) {
        if self.devices[d].disk_busy || self.devices[d].usb_queue.is_empty() {
            return;
        }
        let DeviceKind::Usb {
            bytes,
            rate,
            jitter,
            controller,
            ..
        } = self.cfg.devices[d].kind
        else {
            return;
        };
        self.devices[d].disk_busy = true;
        let xfer = (bytes as u128 * 1_000_000_000).div_ceil(rate as u128) as u64;
        let extra = if jitter > 0 {
            self.rng.below(jitter + 1)
        } else {
            0
        };
        let need = xfer + extra;
        // Where in its microframe the controller is now.
        let phase = if self.cfg.xhci[controller].random_frame_phase {
            self.rng.below(MICROFRAME_NS)
        } else {
            self.now % MICROFRAME_NS
        };
        let left = MICROFRAME_NS - phase;
        // A transfer that misses its microframe completes in the next one.
        let done = if need <= left {
            self.now + need
        } else {
            self.now + left + need
        };
        self.post(done, EvKind::UsbDone { device: d });
    }

    fn usb_done(&mut self, d: usize) {
        self.devices[d].disk_busy = false;
        let Some((thread, _, it)) = self.devices[d].usb_queue.pop_front() else {
            return;
        };
        let DeviceKind::Usb {
            controller,
            omega_io,
            kfree,
            ..
        } = self.cfg.devices[d].kind
        else {
            return;
        };
        // an echo device returns what was written to this OUT endpoint
        for e in 0..self.cfg.devices.len() {
            if matches!(self.cfg.devices[e].kind, DeviceKind::Usb { echo_of: Some(o), .. } if o == d)
            {
                match self.devices[e].echo_waiters.pop_front() {
                    Some((reader, since)) => self.usb_submit(e, reader, since),
                    None => self.devices[e].echo_credit += 1,
                }
            }
        }
        let class = self.cfg.xhci[controller].interrupters[it].class;
        let period = self.servers[self.threads[thread].server].period;
        let target = match self.cfg.path {
            InterruptPath::Quest | InterruptPath::Hypervisor => Some(self.xhci[controller].bh[it]),
            InterruptPath::QuestNoIovcpu => Some(self.class_bh[class]),
            InterruptPath::Linux => self.linux_target(self.cfg.xhci[controller].cpu),
        }
        .filter(|&t| t != usize::MAX);
        self.flow += 2;
        let job = BhJob {
            device: d,
            work: omega_io + kfree,
            arrival: self.now,
            period,
            deliver: Deliver::Request { thread },
            flow: self.flow,
            target,
        };
        self.devices[d].interrupts += 1;
        self.xhci[controller].rings[it].push_back(job);
        self.xhci_fire(controller, it);
        self.usb_start(d);
    }

    /// Interrupter `it` signals its MSI vector if it has events and its
    /// moderation interval has passed; otherwise it fires when it has.
    fn xhci_fire(&mut self, x: usize, it: usize) {
        let now = self.now;
        if self.xhci[x].rings[it].is_empty() {
            return;
        }
        let moderation = self.cfg.xhci[x].interrupters[it].moderation;
        if let Some(l) = self.xhci[x].last_irq[it] {
            if now < l + moderation {
                if !self.xhci[x].irq_posted[it] {
                    self.xhci[x].irq_posted[it] = true;
                    self.post(
                        l + moderation,
                        EvKind::XhciIrq {
                            controller: x,
                            interrupter: it,
                        },
                    );
                }
                return;
            }
        }
        let c = self.cfg.xhci[x].cpu;
        // An interrupt of this interrupter not yet serviced takes the new
        // events too: its top half drains the event ring.
        let pending = self.cpus[c]
            .isrs
            .iter()
            .position(|i| matches!(i.source, IsrSource::Xhci(a, b) if a == x && b == it));
        if let Some(k) = pending {
            let jobs: Vec<BhJob> = self.xhci[x].rings[it].drain(..).collect();
            self.cpus[c].isrs[k].jobs.extend(jobs);
            return;
        }
        self.xhci[x].last_irq[it] = Some(now);
        let jobs: Vec<BhJob> = self.xhci[x].rings[it].drain(..).collect();
        let remaining = self.cfg.xhci[x].top_half;
        self.push_isr(
            c,
            Isr {
                source: IsrSource::Xhci(x, it),
                remaining,
                started: now,
                jobs,
                priority: 0,
            },
        );
    }

    fn enqueue_bh(&mut self, t: usize, job: BhJob) -> Result<(), SimError> {
        let period = job.period;
        if let Kind::BottomHalf { queue, .. } = &mut self.threads[t].kind {
            queue.push_back(job);
        }
        if !self.threads[t].active {
            self.next_bh_job(t)?;
        }
        // Every I/O event runs Alg. 10 once for the Main VCPU it serves
        // (PIBS inheritance; also for an already active I/O VCPU).
        let c = self.threads[t].cpu;
        self.touch(c);
        let core = self.threads[t].core;
        if self.cpus[c]
            .sched
            .wakeup(Nanos(self.now), core, period.map(Nanos))
            .map_err(core_err(|| "bottom-half request".to_owned()))?
        {
            self.cpus[c].need_resched = true;
        }
        self.threads[t].active = true;
        self.note_backlog(t);
        Ok(())
    }

    /// Take the next bottom-half job, or block when there is none.
    fn next_bh_job(&mut self, t: usize) -> Result<(), SimError> {
        let Kind::BottomHalf { queue, current } = &mut self.threads[t].kind else {
            return Ok(());
        };
        let Some(job) = queue.pop_front() else {
            return self.park(t);
        };
        let (work, flow) = (job.work, job.flow);
        *current = Some(job);
        let cpu = self.threads[t].cpu;
        self.trace.flow_step(cpu, self.now, flow, "irq->bh", true);
        self.threads[t].remaining = work.max(1);
        Ok(())
    }

    fn bh_done(&mut self, t: usize, job: BhJob) -> Result<(), SimError> {
        let cpu = self.threads[t].cpu;
        self.deliver(cpu, job)
    }

    /// A closed-loop source (`ping -f`, a TCP window of one) sends its next
    /// request `rtt` after the reply to the previous one.
    fn closed_loop_reply(&mut self, d: usize) {
        if let DeviceKind::Nic {
            arrival: ArrivalCfg::PingFlood { rtt, stop, .. },
            ..
        } = &self.cfg.devices[d].kind
        {
            let t = self.now + rtt;
            if stop.is_none_or(|s| t < s) && self.devices[d].arrival_at.is_some_and(|a| t < a) {
                self.post_arrival(d, t);
            }
        }
    }

    /// The end of a bottom half (in a thread or in softirq context on
    /// `cpu`): account it and deliver its result.
    fn deliver(&mut self, cpu: usize, job: BhJob) -> Result<(), SimError> {
        let now = self.now;
        match job.deliver {
            Deliver::VirqIsr(v) => {
                // the guest ISR ended (its EOI trapped): activate the DSR
                let t = self.virqs[v].dsr_thread;
                let dsr = BhJob {
                    work: self.cfg.virqs[v].dsr,
                    deliver: Deliver::VirqDsr(v),
                    target: Some(t),
                    ..job
                };
                return self.enqueue_bh(t, dsr);
            }
            Deliver::VirqDsr(v) => {
                // Definition 2: physical arrival to the end of ISR and DSR
                let st = &mut self.virqs[v];
                let h = now - job.arrival;
                st.handled += 1;
                st.handling.record(Nanos(h));
                let phys = self.cfg.virqs[v].phys;
                self.closed_loop_reply(phys);
                let st = &mut self.virqs[v];
                for (k, &b) in CDF_BOUNDS.iter().enumerate() {
                    if h <= b {
                        st.within[k] += 1;
                    }
                }
                if h <= st.min_interarrival {
                    st.serviceable += 1; // Definition 3
                }
                return Ok(());
            }
            _ => {}
        }
        let d = job.device;
        let bytes = match &self.cfg.devices[d].kind {
            DeviceKind::Nic { bytes, .. } => *bytes,
            DeviceKind::Disk {
                sectors,
                sector_bytes,
                ..
            } => sectors * sector_bytes,
            DeviceKind::Generic { .. } => 0,
            DeviceKind::Usb { bytes, .. } => *bytes,
        };
        let dev = &mut self.devices[d];
        dev.in_ring = dev.in_ring.saturating_sub(1);
        dev.handled += 1;
        dev.bytes += bytes;
        if let Some(w) = dev.bytes_windows.get_mut((now / self.cfg.window) as usize) {
            *w += bytes;
        }
        dev.handling.record(Nanos(now - job.arrival));
        // strict PIBS: service for this Main VCPU ends
        if let (Some(p), Some(srv)) = (
            job.period,
            self.cfg.classes[self.devices[d].class_now].iovcpu,
        ) {
            if matches!(
                self.cfg.servers[srv].policy,
                PolicyCfg::Pibs { strict: true, .. }
            ) && self.cfg.path == InterruptPath::Quest
            {
                let c = self.servers[srv].cpu;
                let local = self.servers[srv].local;
                self.cpus[c]
                    .sched
                    .io_service_done(Nanos(now), local, Nanos(p))
                    .map_err(core_err(|| "io_service_done".to_owned()))?;
            }
        }
        match job.deliver {
            Deliver::Request { thread, .. } => {
                // an arrow from the end of the bottom half to the woken
                // task's next dispatch
                if self.trace.enabled() {
                    self.trace.flow_start(cpu, now, job.flow + 1, "bh->task");
                    self.wake_flow[thread] = Some(job.flow + 1);
                }
                self.resume_task(thread)?;
            }
            Deliver::VirqIsr(_) | Deliver::VirqDsr(_) => {} // handled above
            Deliver::Event => {
                self.closed_loop_reply(d);
                let cap = match &self.cfg.devices[d].kind {
                    DeviceKind::Nic { buffer, .. } => *buffer,
                    _ => default_event_buffer(),
                };
                if let Some(w) = self.devices[d].waiters.pop_front() {
                    self.resume_task(w)?;
                } else if self.devices[d].buffer.len() < cap {
                    self.devices[d].buffer.push_back((job.arrival, now));
                } else {
                    self.devices[d].dropped += 1;
                }
            }
        }
        Ok(())
    }

    /// Jobs of `task` released but unfinished at the end of the run whose
    /// deadline had passed (the current job and the backlog): misses that
    /// `job_done` never sees, e.g. of a task starved from its first release.
    fn unfinished_past_deadline(&self, task: usize) -> u64 {
        let Release::Periodic {
            period, deadline, ..
        } = self.cfg.tasks[task].release
        else {
            return 0;
        };
        let d = deadline.unwrap_or(period);
        let Kind::Task(ts) = &self.threads[self.tasks[task].thread].kind else {
            return 0;
        };
        let end = self.cfg.duration;
        ts.job
            .iter()
            .chain(ts.backlog.iter())
            .filter(|&&rel| end > rel + d)
            .count() as u64
    }

    fn finish(self) -> (Metrics, serde_json::Value) {
        let dur = self.cfg.duration;
        let w = self.cfg.window;
        let cpus = self
            .cpus
            .iter()
            .map(|c| {
                let st = c.sched.stats();
                let ops = c.sched.replenishment_ops();
                let o = &self.cfg.overhead;
                let per_call = o.schedule_ns + o.scan_ns_per_server * c.servers.len() as f64;
                let cost = st.schedule_calls as f64 * per_call + ops as f64 * o.repl_op_ns;
                CpuMetrics {
                    schedule_calls: st.schedule_calls,
                    wakeups: st.wakeups,
                    server_switches: st.server_switches,
                    replenishment_ops: ops,
                    isr_ns: c.metrics.isr_ns,
                    softirq_ns: c.metrics.softirq_ns,
                    idle_ns: c.metrics.idle_ns,
                    vcpu_switches: c.metrics.vcpu_switches,
                    switch_ns: c.metrics.switch_ns,
                    overhead_percent: 100.0 * cost / dur as f64,
                    overhead_windows: c
                        .calls_windows
                        .iter()
                        .zip(&c.ops_windows)
                        .enumerate()
                        .map(|(k, (&n, &ops))| {
                            100.0 * (n as f64 * per_call + ops as f64 * o.repl_op_ns)
                                / window_len(k, w, dur) as f64
                        })
                        .collect(),
                }
            })
            .collect();
        let servers = self
            .servers
            .iter()
            .map(|s| {
                let kind = self.cpus[s.cpu]
                    .sched
                    .server(s.local)
                    .map(|x| x.kind())
                    .unwrap_or("?");
                ServerMetrics {
                    name: s.name.clone(),
                    cpu: s.cpu,
                    kind: kind.to_owned(),
                    busy_ns: s.busy,
                    background_ns: s.background,
                    share: s.busy as f64 / dur as f64,
                    share_windows: window_fractions(&s.windows, w, dur),
                    max_queue: s.queue_max,
                    mean_queue: if s.queue_samples > 0 {
                        s.queue_sum as f64 / s.queue_samples as f64
                    } else {
                        0.0
                    },
                    response: s.supply.as_ref().map(|x| Dist::from_recorder(&x.response)),
                    budget_misses: s.supply.as_ref().map(|x| x.misses),
                }
            })
            .collect();
        let tasks = self
            .tasks
            .iter()
            .enumerate()
            .map(|(i, t)| {
                let unfinished = self.unfinished_past_deadline(i);
                TaskMetrics {
                    name: self.cfg.tasks[i].name.clone(),
                    released: t.released,
                    completed: t.completed,
                    deadline_misses: t.misses + unfinished,
                    unfinished_past_deadline: unfinished,
                    response: Dist::from_recorder(&t.response),
                    completions: t.completions.clone(),
                }
            })
            .collect();
        let devices = self
            .devices
            .iter()
            .enumerate()
            .map(|(i, d)| DeviceMetrics {
                name: self.cfg.devices[i].name.clone(),
                interrupts: d.interrupts,
                handled: d.handled,
                dropped: d.dropped,
                bytes: d.bytes,
                throughput_bps: d.bytes as f64 / (dur as f64 / 1e9),
                throughput_windows: d
                    .bytes_windows
                    .iter()
                    .enumerate()
                    .map(|(k, &b)| b as f64 / (window_len(k, w, dur) as f64 / 1e9))
                    .collect(),
                latency: Dist::from_recorder(&d.latency),
                handling: Dist::from_recorder(&d.handling),
            })
            .collect();
        let path = match self.cfg.path {
            InterruptPath::Quest => "quest",
            InterruptPath::QuestNoIovcpu => "quest-no-iovcpu",
            InterruptPath::Linux => "linux",
            InterruptPath::Hypervisor => "hypervisor",
        };
        let virqs = self
            .virqs
            .iter()
            .enumerate()
            .map(|(i, v)| VirqMetrics {
                name: self.cfg.virqs[i].name.clone(),
                arrivals: v.arrivals,
                injected: v.injected,
                delayed_injections: v.delayed,
                handled: v.handled,
                serviceable: v.serviceable,
                handling: Dist::from_recorder(&v.handling),
                handled_within: CDF_BOUNDS
                    .iter()
                    .copied()
                    .zip(v.within.iter().copied())
                    .collect(),
            })
            .collect();
        let m = Metrics {
            duration_ns: dur,
            seed: self.cfg.seed,
            path: path.to_owned(),
            window_ns: w,
            events: self.processed,
            cpus,
            servers,
            tasks,
            devices,
            virqs,
        };
        (m, self.trace.to_json())
    }
}

fn default_event_buffer() -> usize {
    1024
}

fn first_requester(cfg: &SimConfig, class: usize) -> Option<usize> {
    fn uses(phases: &[Phase], cfg: &SimConfig, class: usize) -> bool {
        phases.iter().any(|p| match p {
            Phase::Io { device } => cfg.devices.get(*device).is_some_and(|d| d.class == class),
            Phase::Loop { body, .. } => uses(body, cfg, class),
            _ => false,
        })
    }
    cfg.tasks
        .iter()
        .find(|t| uses(&t.program, cfg, class))
        .map(|t| t.server)
}

fn window_len(k: usize, w: u64, dur: u64) -> u64 {
    let start = k as u64 * w;
    (start + w).min(dur) - start
}

fn window_fractions(v: &[u64], w: u64, dur: u64) -> Vec<f64> {
    v.iter()
        .enumerate()
        .map(|(k, &b)| b as f64 / window_len(k, w, dur) as f64)
        .collect()
}

/// Add the interval `[a, b)` to per-window totals of width `w`.
fn add_windows(win: &mut [u64], w: u64, a: u64, b: u64) {
    let mut t = a;
    while t < b {
        let k = (t / w) as usize;
        let end = ((k as u64 + 1) * w).min(b);
        if let Some(x) = win.get_mut(k) {
            *x += end - t;
        }
        t = end;
    }
}
