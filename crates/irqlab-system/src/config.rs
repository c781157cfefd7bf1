//! The resolved system the simulator runs: servers, tasks, devices and
//! I/O classes with every reference already an index and every time in
//! integer nanoseconds.
//!
//! Design principles: this is the simulator's input contract, independent
//! of how a user wrote the system (the YAML model of `irqlab-model` is
//! validated and lowered into it). It still validates itself (`check`), so
//! a `SimConfig` built by hand or from JSON can never make the simulator
//! panic; errors name the field path, the value and the rule.

use serde::{Deserialize, Serialize};

use crate::error::SystemError;

mod check;
mod fast;

pub use fast::exact_errors;

/// Which interrupt path the machine uses (DESIGN.md §4).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum InterruptPath {
    /// Top half at arrival, bottom half on the class's I/O VCPU (PIBS
    /// inheriting the served Main VCPU's period).
    #[default]
    Quest,
    /// Top half at arrival, bottom half charged to the Main VCPU of the task
    /// it serves.
    QuestNoIovcpu,
    /// Linux (USB-DIFFSERV §II): the hard IRQ is charged to the interrupted
    /// thread; the softirq runs at IRQ exit, restarting at most
    /// `max_restart` times and for at most `max_softirq_time`, and stops
    /// early when a woken task needs the CPU; what is left goes to a
    /// per-CPU ksoftirqd thread. With `threaded_bh` (PREEMPT_RT forced
    /// threading) every bottom half runs in that thread.
    Linux,
    /// A hypervisor (VINT §III): physical ISRs run at arrival, nested by
    /// priority, charged to the hypervisor; each then injects its virtual
    /// interrupts (`virqs`) into their VCPUs (or, managed by vINT, their
    /// pseudo-VCPUs), where the guest ISR and the DSR task run.
    Hypervisor,
}

impl InterruptPath {
    /// The path's name as the model spells it (`machine.path`).
    pub fn name(self) -> &'static str {
        match self {
            InterruptPath::Quest => "quest",
            InterruptPath::QuestNoIovcpu => "quest-no-iovcpu",
            InterruptPath::Linux => "linux",
            InterruptPath::Hypervisor => "hypervisor",
        }
    }

    /// Top-half time is the hypervisor's, not the running VCPU's.
    pub fn hypervisor_pays_top_halves(self) -> bool {
        self == InterruptPath::Hypervisor
    }

    /// A device interrupt carries a bottom-half job of its own (on the
    /// hypervisor path its handling is the virtual interrupts it raises,
    /// and the NIC's receive ring is not modelled).
    pub fn has_bottom_halves(self) -> bool {
        self != InterruptPath::Hypervisor
    }
}

/// Parameters of the `linux` interrupt path.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinuxCfg {
    /// `MAX_SOFTIRQ_RESTART`.
    #[serde(default = "default_max_restart")]
    pub max_restart: u32,
    /// `MAX_SOFTIRQ_TIME` (2 ms).
    #[serde(default = "default_softirq_time")]
    pub max_softirq_time: u64,
    /// Bottom halves always run in the ksoftirqd thread (PREEMPT_RT).
    #[serde(default)]
    pub threaded_bh: bool,
    /// ksoftirqd's policy: SCHED_FIFO priority 50 by default (an unbounded
    /// server of rank 100 - priority, the scale tasks use too), or
    /// SCHED_DEADLINE (`cbs` with runtime and period).
    #[serde(default = "default_ksoftirqd")]
    pub ksoftirqd: PolicyCfg,
    /// Rank of a FIFO ksoftirqd (100 - SCHED_FIFO priority).
    #[serde(default = "default_ksoftirqd_rank")]
    pub ksoftirqd_rank: u64,
}

fn default_max_restart() -> u32 {
    10
}
fn default_softirq_time() -> u64 {
    2_000_000
}
fn default_ksoftirqd() -> PolicyCfg {
    PolicyCfg::Unbounded {}
}
fn default_ksoftirqd_rank() -> u64 {
    50
}

impl Default for LinuxCfg {
    fn default() -> Self {
        LinuxCfg {
            max_restart: default_max_restart(),
            max_softirq_time: default_softirq_time(),
            threaded_bh: false,
            ksoftirqd: default_ksoftirqd(),
            ksoftirqd_rank: default_ksoftirqd_rank(),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "policy", rename_all = "kebab-case", deny_unknown_fields)]
pub enum PolicyCfg {
    Sporadic {
        budget: u64,
        period: u64,
        #[serde(default = "default_max_repl")]
        max_repl: usize,
        #[serde(default)]
        background: bool,
    },
    Pibs {
        /// Utilization numerator / denominator.
        num: u64,
        den: u64,
        #[serde(default)]
        strict: bool,
    },
    Deferrable {
        budget: u64,
        period: u64,
    },
    Polling {
        budget: u64,
        period: u64,
    },
    Cbs {
        runtime: u64,
        period: u64,
    },
    /// No budget; ordered by the server's `rank` (required). A struct
    /// variant, so that `deny_unknown_fields` refuses other keys beside it
    /// (serde ignores them next to a unit variant).
    Unbounded {},
}

fn default_max_repl() -> usize {
    irqlab_core::DEFAULT_MAX_REPL
}

// No `deny_unknown_fields` here: serde cannot combine it with `flatten`;
// unknown keys still fail in the flattened, tagged `PolicyCfg`, which
// receives every key this struct does not use.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ServerCfg {
    pub name: String,
    #[serde(default)]
    pub cpu: usize,
    #[serde(flatten)]
    pub policy: PolicyCfg,
    /// Explicit rank (smaller is more urgent) instead of rate-monotonic.
    #[serde(default)]
    pub rank: Option<u64>,
}

/// One step of a task's program (rt-app-like phases).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "kebab-case", deny_unknown_fields)]
pub enum Phase {
    /// Run on the CPU for `ns`.
    Compute { ns: u64 },
    /// Blocking request on device `device` (index): a disk read, or waiting
    /// for the next packet/event delivered by the device's bottom half.
    Io { device: usize },
    /// Sleep `ns`.
    Sleep { ns: u64 },
    /// Rebind device `device`'s file descriptor to I/O class `class`
    /// (`usb_set_iovcpu`, USB-DIFFSERV §III-B): later requests carry the
    /// interrupter of the new class.
    Bind { device: usize, class: usize },
    /// Repeat `body` `count` times (forever when absent).
    Loop {
        #[serde(default)]
        count: Option<u64>,
        body: Vec<Phase>,
    },
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case", deny_unknown_fields)]
pub enum Release {
    /// One job released at `at`.
    Once {
        #[serde(default)]
        at: u64,
    },
    /// A job every `period` from `offset`, relative deadline `deadline`
    /// (default: the period), at most `jobs` jobs.
    Periodic {
        period: u64,
        #[serde(default)]
        deadline: Option<u64>,
        #[serde(default)]
        offset: u64,
        #[serde(default)]
        jobs: Option<u64>,
    },
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TaskCfg {
    pub name: String,
    /// Main VCPU (server index).
    pub server: usize,
    /// Thread priority inside the server (higher is more urgent).
    #[serde(default = "one")]
    pub priority: u32,
    #[serde(deserialize_with = "fast::release")]
    pub release: Release,
    #[serde(deserialize_with = "fast::phases")]
    pub program: Vec<Phase>,
    /// A job still unfinished at its deadline is aborted then (SimSo's
    /// `abort_on_miss`): counted as a miss and dropped, so later jobs are
    /// not delayed by it. A job blocked in I/O or a sleep is dropped when
    /// it resumes. Default: late jobs run to completion.
    #[serde(default)]
    pub abort_on_miss: bool,
}

fn one() -> u32 {
    1
}

/// How a NIC's packets arrive.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case", deny_unknown_fields)]
pub enum ArrivalCfg {
    /// One packet every `interval` in `[start, stop)`.
    Periodic {
        interval: u64,
        #[serde(default)]
        start: u64,
        #[serde(default)]
        stop: Option<u64>,
    },
    /// Poisson arrivals at `rate_per_s` in `[start, stop)`.
    Poisson {
        rate_per_s: f64,
        #[serde(default)]
        start: u64,
        #[serde(default)]
        stop: Option<u64>,
    },
    /// `count` back-to-back packets `gap` apart every `every`.
    Burst {
        count: u64,
        gap: u64,
        every: u64,
        #[serde(default)]
        start: u64,
        #[serde(default)]
        stop: Option<u64>,
    },
    /// Explicit arrival times (e.g. from a trace CSV).
    Trace { times: Vec<u64> },
    /// `ping -f`: a closed loop. The next request arrives `rtt` after the
    /// previous one's reply (the end of its bottom half), or `interval`
    /// (10 ms) after the previous request if no reply came back earlier.
    PingFlood {
        rtt: u64,
        #[serde(default = "default_ping_interval")]
        interval: u64,
        #[serde(default)]
        start: u64,
        #[serde(default)]
        stop: Option<u64>,
    },
}

fn default_ping_interval() -> u64 {
    10_000_000
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case", deny_unknown_fields)]
pub enum DeviceKind {
    /// Packets arrive on their own; each costs `top_half` in interrupt
    /// context and `bottom_half` in the class's bottom-half thread, then is
    /// delivered to the class's socket buffer (`buffer` packets).
    Nic {
        arrival: ArrivalCfg,
        top_half: u64,
        bottom_half: u64,
        bytes: u64,
        /// Socket buffer (packets handled, not yet read by a task).
        #[serde(default = "default_buffer")]
        buffer: usize,
        /// RX ring: packets taken by the top half and waiting for the
        /// bottom half; a packet arriving to a full ring is dropped.
        #[serde(default = "default_ring")]
        ring: usize,
    },
    /// PIO disk: a request completes `latency` after the device starts it
    /// (FIFO); the bottom half copies `sectors` sectors at `per_sector`
    /// each.
    Disk {
        latency: u64,
        top_half: u64,
        per_sector: u64,
        sectors: u64,
        sector_bytes: u64,
    },
    /// A USB endpoint behind xHCI controller `controller`
    /// (USB-DIFFSERV §II-A, §IV): each request moves `bytes` at the
    /// device's `rate` (bytes/s, plus up to `jitter` ns of device response
    /// time) within the current 125 us microframe, or, when it does not fit
    /// in what is left of it, in the next microframe; then it posts an event on the
    /// interrupter of the class bound to the device; the bottom half costs
    /// `omega_io` (plus `kfree` when memory is freed in the bottom half).
    /// `echo_of`: this IN endpoint returns what the host wrote to that OUT
    /// endpoint (a CDC-ACM echo device); a read waits for echoed data.
    Usb {
        controller: usize,
        #[serde(default = "default_usb_bytes")]
        bytes: u64,
        rate: u64,
        #[serde(default)]
        jitter: u64,
        omega_io: u64,
        #[serde(default)]
        kfree: u64,
        #[serde(default)]
        echo_of: Option<usize>,
    },
    /// An interrupt source with minimum inter-arrival time `min_interarrival`
    /// (plus uniform random extra up to `jitter`), ISR cost `isr` and
    /// deferred (bottom-half) cost `dsr`.
    Generic {
        min_interarrival: u64,
        #[serde(default)]
        jitter: u64,
        isr: u64,
        dsr: u64,
        #[serde(default)]
        start: u64,
    },
}

fn default_buffer() -> usize {
    1024
}

fn default_usb_bytes() -> u64 {
    512
}

/// An xHCI interrupter: its I/O class (the `xHCI_interrupter_to_IOVCPU_map`
/// entry, USB-DIFFSERV §III-C) and its moderation interval.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InterrupterCfg {
    pub class: usize,
    /// Minimum time between two interrupts of this interrupter.
    #[serde(default)]
    pub moderation: u64,
}

/// An xHCI host controller with up to 1024 interrupters; interrupter `i`
/// signals MSI vector `msi_base + i`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct XhciCfg {
    pub name: String,
    #[serde(default)]
    pub cpu: usize,
    #[serde(default = "default_msi_base")]
    pub msi_base: u32,
    /// Top-half cost per interrupt.
    pub top_half: u64,
    pub interrupters: Vec<InterrupterCfg>,
    /// The controller's microframe clock runs unsynchronised with the CPU
    /// clock: each transfer starts at a uniformly random phase of the
    /// microframe. Off: microframes start at multiples of 125 us.
    #[serde(default)]
    pub random_frame_phase: bool,
}

fn default_msi_base() -> u32 {
    32
}

/// xHCI supports up to 1024 interrupters (USB-DIFFSERV §II-A).
pub const MAX_INTERRUPTERS: usize = 1024;
/// USB microframe length (USB-DIFFSERV §I).
pub const MICROFRAME_NS: u64 = 125_000;

fn default_ring() -> usize {
    256
}

// See `ServerCfg` on unknown keys: `DeviceKind` rejects them.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DeviceCfg {
    pub name: String,
    /// Priority of its interrupt handler: a higher-priority ISR preempts a
    /// lower one (equal priorities run in arrival order).
    #[serde(default)]
    pub irq_priority: u32,
    /// CPU that takes the interrupt.
    #[serde(default)]
    pub cpu: usize,
    /// I/O class (index) whose bottom-half thread handles it.
    pub class: usize,
    /// Software cost on the task's Main VCPU when an I/O returns
    /// (USB-DIFFSERV Omega_Main).
    #[serde(default)]
    pub omega_main: u64,
    #[serde(flatten)]
    pub kind: DeviceKind,
}

/// A vINT pseudo-VCPU (VINT §V-A): its own budget and priority for one
/// virtual interrupt; `budget` is usually VINT Eq. 1 or 2.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PseudoCfg {
    /// Deferrable (`deferrable: true`) or sporadic replenishment.
    #[serde(default)]
    pub deferrable: bool,
    pub budget: u64,
    pub period: u64,
    /// Rank (smaller is more urgent); it must be above every regular VCPU.
    pub rank: u64,
}

/// A virtual interrupt (VINT §III): injected into VCPU `vcpu` when the ISR
/// of physical interrupt `phys` (a device) completes; the guest ISR (`isr`
/// plus the trapped EOI `eoi`) runs above every task of the VCPU, then the
/// DSR task (`dsr` at `dsr_priority`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VirqCfg {
    pub name: String,
    pub phys: usize,
    pub vcpu: usize,
    pub isr: u64,
    #[serde(default)]
    pub eoi: u64,
    pub dsr: u64,
    pub dsr_priority: u32,
    /// Priority among the virtual interrupts of the VCPU.
    #[serde(default)]
    pub priority: u32,
    /// Minimum inter-arrival time (for the injection counter and
    /// serviceability); defaults to the physical interrupt's.
    #[serde(default)]
    pub min_interarrival: Option<u64>,
    /// Managed by vINT: its pseudo-VCPU.
    #[serde(default)]
    pub pseudo: Option<PseudoCfg>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClassCfg {
    pub name: String,
    /// The class's I/O VCPU (server index); required on the `quest` path.
    #[serde(default)]
    pub iovcpu: Option<usize>,
    /// Task on whose behalf unsolicited events (packets, generic
    /// interrupts) are handled; its Main VCPU's period is inherited.
    #[serde(default)]
    pub consumer: Option<usize>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TraceCfg {
    #[serde(default)]
    pub enabled: bool,
    /// Stop recording trace events after this time.
    #[serde(default)]
    pub until: Option<u64>,
    #[serde(default = "default_max_events")]
    pub max_events: usize,
}

fn default_max_events() -> usize {
    1_000_000
}

impl Default for TraceCfg {
    fn default() -> Self {
        TraceCfg {
            enabled: false,
            until: None,
            max_events: default_max_events(),
        }
    }
}

/// Per-operation costs of the scheduler-overhead model (QUEST-VCPU
/// Figures 4 and 7): overhead = schedule calls x (`schedule_ns` +
/// `scan_ns_per_server` x servers on the CPU) + replenishment-queue
/// operations x `repl_op_ns`. `scan_ns_per_server` models a scheduler that
/// scans every VCPU per decision, as Quest does (0 for irqlab's own
/// O(log n) scheduler).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OverheadCfg {
    pub schedule_ns: f64,
    pub repl_op_ns: f64,
    #[serde(default)]
    pub scan_ns_per_server: f64,
}

impl Default for OverheadCfg {
    fn default() -> Self {
        // Calibrated from `make bench` (bench/bench_core.py): about 80 ns per
        // decision with a few servers; a queue operation costs a few ns.
        OverheadCfg {
            schedule_ns: 80.0,
            repl_op_ns: 5.0,
            scan_ns_per_server: 0.0,
        }
    }
}

/// Costs charged where they physically occur when a thread-based path
/// (`quest`, `quest-no-iovcpu`: irqlab-rt's supervisor; `linux`: the
/// kernel's scheduler) switches threads or wakes on a timer, measured by
/// `irqlab calibrate` (`lower/costs.rs` says which statistic goes where).
/// All 0 (the default): none, and the schedule is the one without them.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SwitchCosts {
    /// When a CPU goes straight from one thread to a different one (a
    /// preemption, or a block with another thread runnable), the incoming
    /// thread makes no progress for this long: the kernel's context
    /// switch. Not charged after idle (the wake-up from idle is the
    /// dispatch delay or the timer latency) nor when the same thread
    /// resumes after a top half. The time is the kernel's (or the
    /// supervisor's), not the thread's: excluded from its server's budget
    /// and CPU share, as irqlab-rt's supervisor excludes it.
    #[serde(default)]
    pub context_switch: u64,
    /// `quest*` only: per thread whose SCHED_FIFO priority the supervisor
    /// changes to carry out a decision that changes the dispatched server
    /// (the outgoing server's threads drop to the background priority, the
    /// incoming server's rise), added to that switch's cost.
    #[serde(default)]
    pub priority_switch: u64,
    /// A timer wakes its thread this late: every periodic release (the
    /// task's, or on `quest*` the supervisor's timed wait) and, on
    /// `quest*`, the supervisor's wake-up at the core's `next_update`
    /// (budget exhaustion, replenishment), before its decision. The job's
    /// release time stays the nominal one, so its response includes it.
    #[serde(default)]
    pub timer_latency: u64,
}

impl SwitchCosts {
    pub fn is_zero(&self) -> bool {
        *self == SwitchCosts::default()
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SimConfig {
    #[serde(default = "one_cpu")]
    pub cpus: usize,
    #[serde(default)]
    pub path: InterruptPath,
    pub duration: u64,
    #[serde(default)]
    pub seed: u64,
    /// Window of the per-server CPU-share series.
    #[serde(default = "default_window")]
    pub window: u64,
    #[serde(deserialize_with = "fast::servers")]
    pub servers: Vec<ServerCfg>,
    #[serde(default)]
    pub tasks: Vec<TaskCfg>,
    #[serde(default)]
    pub devices: Vec<DeviceCfg>,
    #[serde(default)]
    pub classes: Vec<ClassCfg>,
    #[serde(default)]
    pub xhci: Vec<XhciCfg>,
    #[serde(default)]
    pub virqs: Vec<VirqCfg>,
    /// Cost of the inter-processor interrupt that delivers a virtual
    /// interrupt to a VCPU on another CPU (VINT §III).
    #[serde(default)]
    pub ipi: u64,
    /// VCPU switch overhead (`hypervisor` path only; 0: none). When a CPU
    /// starts running a VCPU's execution context after it ran something
    /// else -- another VCPU, or nothing (the VCPU had been descheduled:
    /// budget exhausted, halted, preempted) -- the incoming VCPU spends
    /// this long before its guest makes progress: the VM exit/entry, the
    /// host's context switch and the refill of the guest's cache and TLB
    /// state. It is the VCPU's time, charged to its budget. A pseudo-VCPU
    /// has no execution context of its own (VINT §V-A): switching between
    /// a VCPU and its own pseudo-VCPU costs nothing, a pseudo-VCPU
    /// dispatched after idle or another VCPU pays it. Resuming a VCPU after
    /// a physical ISR costs nothing here (the ISR's cost covers that exit).
    #[serde(default)]
    pub switch_overhead: u64,
    /// Dispatch delay (0: none): a bottom-half job handed to a thread (an
    /// I/O VCPU's or a class's bottom-half thread, ksoftirqd) becomes
    /// runnable this long after its top half ended -- the thread's wake-up
    /// through the kernel, measured by `irqlab calibrate` (`costs:`).
    /// Softirqs at IRQ exit run at once (interrupt context).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub dispatch_delay: u64,
    /// Measured costs of switching threads and of timer wake-ups
    /// (`quest`, `quest-no-iovcpu`, `linux`; all 0: none), from `costs:`.
    #[serde(default, skip_serializing_if = "SwitchCosts::is_zero")]
    pub switch_costs: SwitchCosts,
    #[serde(default)]
    pub linux: LinuxCfg,
    #[serde(default)]
    pub trace: TraceCfg,
    #[serde(default)]
    pub overhead: OverheadCfg,
    /// Completion times kept per task in the metrics (`completions_ns`:
    /// the first this many jobs; `completed` counts them all).
    #[serde(default = "default_max_completions")]
    pub max_completions: usize,
    /// Values kept in all the per-window series together (every server's
    /// CPU share, every device's throughput, every CPU's overhead). A run
    /// with more windows than fit gets wider windows -- the smallest
    /// multiple of `window` that fits -- so memory does not grow with
    /// simulated time; the metrics then state the window used
    /// (`window_ns`) and the one asked for (`window_requested_ns`).
    #[serde(default = "default_max_window_values")]
    pub max_window_values: usize,
    /// Per-job and per-request records (off by default; every row is kept).
    #[serde(default)]
    pub records: RecordsCfg,
}

impl SimConfig {
    /// The configuration in `text` (JSON), read as `serde_json::from_str`
    /// reads it; an error is worded and located as serde's derive words it
    /// (the tagged objects are read again inside [`exact_errors`]).
    pub fn from_json_str(text: &str) -> Result<SimConfig, serde_json::Error> {
        serde_json::from_str(text).or_else(|_| exact_errors(|| serde_json::from_str(text)))
    }
}

pub fn default_max_window_values() -> usize {
    1 << 16
}

pub(crate) fn default_max_completions() -> usize {
    10_000
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

fn one_cpu() -> usize {
    1
}

fn default_window() -> u64 {
    1_000_000_000
}

/// Which records to keep.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RecordsCfg {
    /// One row per finished job: task, release, completion, late.
    #[serde(default)]
    pub jobs: bool,
    /// One row per finished I/O request: device, submission (or arrival),
    /// return to the task.
    #[serde(default)]
    pub requests: bool,
}
