//! The YAML system model (docs/model.md): what a user writes.
//!
//! Design principles: every section is a plain serde type with
//! `deny_unknown_fields` (a typo is an error, never silently ignored); every
//! time, utilization, size and rate carries its unit (`units`); names, not
//! indices, link the parts (a task names its VCPU, a device its I/O class);
//! `validate` checks every rule and reports all violations with their field
//! path; `lower` (in irqlab-sim) turns a valid model into the simulator's
//! resolved configuration.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::units::{Duration, Rate, Size, Util};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Model {
    pub machine: Machine,
    #[serde(default)]
    pub simulation: Simulation,
    /// Required on every path but `hypervisor` (whose VCPUs are in `vms`).
    #[serde(default)]
    pub vcpus: Vec<Vcpu>,
    #[serde(default)]
    pub tasks: Vec<Task>,
    #[serde(default)]
    pub devices: Vec<Device>,
    #[serde(default)]
    pub xhci: Vec<Xhci>,
    /// `usb_set_iovcpu(fd, class)` at start: device name -> I/O class.
    #[serde(default)]
    pub bindings: BTreeMap<String, String>,
    /// Optional per-class settings (the task served by unsolicited events).
    #[serde(default)]
    pub classes: Vec<ClassSpec>,
    /// The hypervisor machine (`path: hypervisor` only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vms: Option<Vms>,
    /// What `irqlab calibrate` measured on a machine (`costs.rs`); the
    /// simulator and the analysis charge it. Absent: today's defaults.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub costs: Option<crate::costs::Costs>,
    /// Options of the real run (`irqlab run`, `irqlab compare`'s real
    /// column) only: where and how the threads run, not what the system
    /// is. The simulator and the analysis do not read them (docs/model.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runtime: Option<RunOptions>,
}

/// How `irqlab run` carries a model out on this machine (`runtime:`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema, Default)]
#[serde(deny_unknown_fields)]
pub struct RunOptions {
    /// The real CPU of each model CPU (one per `machine.cpus`, distinct);
    /// default: the last allowed CPUs.
    #[serde(default)]
    pub cpus: Option<Vec<u32>>,
    /// The real CPU of the event generators; default: an allowed CPU the
    /// run does not manage, if there is one.
    #[serde(default)]
    pub generator_cpu: Option<u32>,
    /// Refuse to run without SCHED_FIFO instead of falling back to
    /// park-only mode.
    #[serde(default)]
    pub require_fifo: bool,
    /// How the runtime's top half waits for events.
    #[serde(default)]
    pub backend: RunBackend,
    /// Keep the first N raw dispatch latencies of each event path in the
    /// report (`runtime.events[].dispatch_samples_ns`).
    #[serde(default)]
    pub report_samples: usize,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema, Default)]
#[serde(rename_all = "kebab-case")]
pub enum RunBackend {
    #[default]
    Epoll,
    IoUring,
}

/// Where a generic device's events come from in a real run (the simulator
/// draws the same arrival process, `min_interarrival` plus `jitter`, for
/// every source).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema, Default)]
#[serde(rename_all = "kebab-case")]
pub enum Source {
    /// An eventfd a generator thread writes (several arrivals before a
    /// read are one count).
    #[default]
    Eventfd,
    /// A kernel timer (timerfd) firing every `min_interarrival` exactly.
    Timerfd,
    /// A pipe a generator thread writes 8-byte items into.
    Pipe,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema, Default)]
#[serde(rename_all = "kebab-case")]
pub enum UpcallMode {
    /// The handler runs in the runtime's top half under its own sporadic
    /// server `(budget, period)` (UPCALL §3.2); the device has no class.
    #[default]
    User,
    /// An eBPF handler runs in the kernel's network softirq (nic only),
    /// `budget` of handler time (and at most `events` events) per `period`
    /// per CPU; the events past the budget go to the device's class.
    Kernel,
}

/// A device whose events are handled by an upcall instead of a bottom half
/// on an I/O VCPU (`devices[].upcall`). The handler's work per item is the
/// device's `bottom_half` (nic) or `dsr` (generic).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Upcall {
    #[serde(default)]
    pub mode: UpcallMode,
    pub budget: Duration,
    pub period: Duration,
    /// kernel mode: at most this many events handled per period too.
    #[serde(default)]
    pub events: Option<u64>,
    /// kernel mode: without BPF privilege or support, leave every event to
    /// the class (with a warning) instead of failing.
    #[serde(default)]
    pub fallback: bool,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema, Default)]
#[serde(rename_all = "kebab-case")]
pub enum PathKind {
    #[default]
    Quest,
    QuestNoIovcpu,
    Linux,
    /// Two-level scheduling under a hypervisor (VINT §III), with or without
    /// vINT; the machine is described in `vms`.
    Hypervisor,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Machine {
    #[serde(default = "one")]
    pub cpus: u32,
    #[serde(default)]
    pub path: PathKind,
    #[serde(default)]
    pub linux: Option<LinuxSpec>,
}

fn one() -> u32 {
    1
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LinuxSpec {
    #[serde(default)]
    pub max_softirq_restart: Option<u32>,
    #[serde(default)]
    pub max_softirq_time: Option<Duration>,
    /// PREEMPT_RT: every bottom half in the ksoftirqd thread.
    #[serde(default)]
    pub threaded_bh: bool,
    #[serde(default, with = "serde_yaml::with::singleton_map_recursive")]
    #[schemars(with = "Option<Ksoftirqd>")]
    pub ksoftirqd: Option<Ksoftirqd>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub enum Ksoftirqd {
    /// SCHED_FIFO priority (1..99).
    Fifo(u32),
    /// SCHED_DEADLINE runtime / period.
    Deadline { runtime: Duration, period: Duration },
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Simulation {
    #[serde(default = "default_duration")]
    pub duration: Duration,
    #[serde(default)]
    pub seed: u64,
    #[serde(default = "default_duration")]
    pub window: Duration,
    #[serde(default)]
    pub trace: bool,
    #[serde(default)]
    pub trace_until: Option<Duration>,
    /// Trace events recorded at most (default 1,000,000); past it the trace
    /// is cut and the run says so.
    #[serde(default)]
    pub trace_max_events: Option<u64>,
    /// Completion times kept per task in the metrics (default 10,000).
    #[serde(default)]
    pub max_completions: Option<u64>,
    /// Values kept in all the per-window series together (default 65,536);
    /// a longer run gets wider windows, stated in the metrics.
    #[serde(default)]
    pub max_window_values: Option<u64>,
    /// Per-job and per-request records (default off): `true` for both, or
    /// `{jobs: true, requests: false}`.
    #[serde(default)]
    pub records: Option<Records>,
}

/// `simulation.records`: `true` / `false` (both tables or none) or a map
/// choosing each table.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum Records {
    All(bool),
    Select {
        /// One row per finished job.
        #[serde(default)]
        jobs: bool,
        /// One row per finished I/O request.
        #[serde(default)]
        requests: bool,
    },
}

impl Records {
    /// `(jobs, requests)`.
    pub fn tables(self) -> (bool, bool) {
        match self {
            Records::All(b) => (b, b),
            Records::Select { jobs, requests } => (jobs, requests),
        }
    }
}

/// Deserialized by hand so that a wrong value gets one clear message
/// (serde's untagged enums only say that no variant matched).
impl<'de> Deserialize<'de> for Records {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Records, D::Error> {
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        struct Select {
            #[serde(default)]
            jobs: bool,
            #[serde(default)]
            requests: bool,
        }
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Form {
            All(bool),
            Select(Select),
        }
        match Form::deserialize(d) {
            Ok(Form::All(b)) => Ok(Records::All(b)),
            Ok(Form::Select(s)) => Ok(Records::Select {
                jobs: s.jobs,
                requests: s.requests,
            }),
            Err(_) => Err(serde::de::Error::custom(
                "expected true, false or a map of `jobs` and `requests` (true/false), \
                 no other keys",
            )),
        }
    }
}

fn default_duration() -> Duration {
    Duration(irqlab_core::Nanos::from_secs(1))
}

impl Default for Simulation {
    fn default() -> Self {
        Simulation {
            duration: default_duration(),
            seed: 0,
            window: default_duration(),
            trace: false,
            trace_until: None,
            trace_max_events: None,
            max_completions: None,
            max_window_values: None,
            records: None,
        }
    }
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema, Default)]
#[serde(rename_all = "kebab-case")]
pub enum VcpuKind {
    #[default]
    Main,
    Io,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Policy {
    Sporadic,
    Pibs,
    Deferrable,
    Polling,
    /// SCHED_DEADLINE (constant bandwidth server).
    Cbs,
    /// A plain SCHED_FIFO thread container (no budget).
    Fifo,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum InheritMode {
    Paper,
    Strict,
}

/// A server. Which fields apply depends on `policy` (checked by
/// `validate`): sporadic/deferrable/polling `budget` + `period`; pibs
/// `utilization` (+ `inherit`); cbs `runtime` + `period`; fifo `priority`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Vcpu {
    pub name: String,
    #[serde(default)]
    pub kind: VcpuKind,
    #[serde(default)]
    pub cpu: u32,
    pub policy: Policy,
    #[serde(default)]
    pub budget: Option<Duration>,
    #[serde(default)]
    pub runtime: Option<Duration>,
    #[serde(default)]
    pub period: Option<Duration>,
    #[serde(default)]
    pub utilization: Option<Util>,
    #[serde(default)]
    pub max_repl: Option<usize>,
    #[serde(default)]
    pub background: Option<bool>,
    #[serde(default)]
    pub inherit: Option<InheritMode>,
    /// SCHED_FIFO priority 1..99 (fifo policy), or an explicit fixed
    /// priority for a budgeted server instead of rate-monotonic.
    #[serde(default)]
    pub priority: Option<u32>,
    /// The I/O class an I/O VCPU serves.
    #[serde(default)]
    pub io_class: Option<String>,
}

/// One step of a task's program.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub enum Step {
    Compute(Duration),
    /// A blocking read on a device (by name).
    Read(String),
    /// A blocking write on a device (by name).
    Write(String),
    Sleep(Duration),
    /// `usb_set_iovcpu`: rebind a device's fd to another I/O class.
    Bind {
        device: String,
        class: String,
    },
    /// Repeat `do` `count` times.
    Loop {
        count: u64,
        #[serde(rename = "do")]
        body: Vec<Step>,
    },
    /// Repeat forever.
    Forever(Vec<Step>),
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Task {
    pub name: String,
    /// The Main VCPU the task runs on.
    pub vcpu: String,
    #[serde(default = "one")]
    pub priority: u32,
    /// Periodic release; without it the task is released once at `offset`.
    #[serde(default)]
    pub period: Option<Duration>,
    #[serde(default)]
    pub deadline: Option<Duration>,
    #[serde(default)]
    pub offset: Option<Duration>,
    #[serde(default)]
    pub jobs: Option<u64>,
    /// Abort a job still unfinished at its deadline (SimSo's
    /// `abort_on_miss`); default: late jobs run to completion.
    #[serde(default)]
    pub abort_on_miss: bool,
    /// Steps as single-key maps: `- compute: 300us`, `- read: cdrom`.
    #[serde(with = "serde_yaml::with::singleton_map_recursive")]
    #[schemars(with = "Vec<Step>")]
    pub program: Vec<Step>,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum DeviceKindName {
    Nic,
    Disk,
    Generic,
    Usb,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum ArrivalKind {
    Periodic,
    Poisson,
    Burst,
    /// Back-to-back packets at `interval` (a flood at line rate).
    Flood,
    /// `ping -f`: the next request one `rtt` after each reply.
    PingFlood,
    /// Arrival times from a CSV file (one duration per line).
    Trace,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Arrival {
    pub kind: ArrivalKind,
    #[serde(default)]
    pub interval: Option<Duration>,
    /// Poisson rate, packets per second.
    #[serde(default)]
    pub rate: Option<f64>,
    #[serde(default)]
    pub count: Option<u64>,
    #[serde(default)]
    pub gap: Option<Duration>,
    #[serde(default)]
    pub every: Option<Duration>,
    #[serde(default)]
    pub rtt: Option<Duration>,
    #[serde(default)]
    pub start: Option<Duration>,
    #[serde(default)]
    pub stop: Option<Duration>,
    #[serde(default)]
    pub file: Option<String>,
}

/// A device. Which fields apply depends on `kind` (checked by `validate`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Device {
    pub name: String,
    pub kind: DeviceKindName,
    /// The I/O class its fd is bound to (see also `bindings`).
    #[serde(default)]
    pub class: Option<String>,
    #[serde(default)]
    pub cpu: u32,
    /// Software cost on the task's Main VCPU when a request returns
    /// (USB-DIFFSERV Omega_Main).
    #[serde(default)]
    pub omega_main: Option<Duration>,
    // nic
    #[serde(default)]
    pub arrival: Option<Arrival>,
    #[serde(default)]
    pub top_half: Option<Duration>,
    #[serde(default)]
    pub bottom_half: Option<Duration>,
    #[serde(default)]
    pub packet: Option<Size>,
    #[serde(default)]
    pub buffer: Option<usize>,
    #[serde(default)]
    pub ring: Option<usize>,
    // disk
    #[serde(default)]
    pub latency: Option<Duration>,
    #[serde(default)]
    pub per_sector: Option<Duration>,
    #[serde(default)]
    pub sectors: Option<u64>,
    #[serde(default)]
    pub sector: Option<Size>,
    // generic
    #[serde(default)]
    pub min_interarrival: Option<Duration>,
    #[serde(default)]
    pub jitter: Option<Duration>,
    #[serde(default)]
    pub isr: Option<Duration>,
    #[serde(default)]
    pub dsr: Option<Duration>,
    #[serde(default)]
    pub start: Option<Duration>,
    /// How a real run produces the events (default eventfd).
    #[serde(default)]
    pub source: Option<Source>,
    // nic and generic: handled by an upcall instead of a bottom half
    #[serde(default)]
    pub upcall: Option<Upcall>,
    // usb
    #[serde(default)]
    pub controller: Option<String>,
    #[serde(default)]
    pub request: Option<Size>,
    #[serde(default)]
    pub rate: Option<Rate>,
    #[serde(default)]
    pub omega_io: Option<Duration>,
    #[serde(default)]
    pub kfree: Option<Duration>,
    #[serde(default)]
    pub echo_of: Option<String>,
}

/// An entry of the interrupter-to-I/O-VCPU map: a class name, or the
/// terminating `0` of Quest's C array.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum MapEntry {
    Class(String),
    Number(i64),
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Xhci {
    pub name: String,
    #[serde(default)]
    pub cpu: u32,
    /// How many interrupters the controller implements (1..1024).
    #[serde(default = "default_interrupters")]
    pub max_interrupters: usize,
    #[serde(default = "default_msi_base")]
    pub msi_base: u32,
    pub top_half: Duration,
    #[serde(default)]
    pub moderation: Option<Duration>,
    /// `xHCI_interrupter_to_IOVCPU_map` (USB-DIFFSERV §III-C): entry i is
    /// the class of interrupter i; may end with 0.
    pub interrupter_map: Vec<MapEntry>,
    #[serde(default)]
    pub random_frame_phase: bool,
}

fn default_interrupters() -> usize {
    8
}
fn default_msi_base() -> u32 {
    32
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ClassSpec {
    pub name: String,
    /// Task on whose behalf unsolicited events of the class are handled.
    #[serde(default)]
    pub consumer: Option<String>,
}

// ---- the hypervisor machine (VINT §III, §V) ------------------------------

/// A hypervisor machine (`machine.path: hypervisor`): physical interrupts
/// handled by the hypervisor, guests (VMs) with VCPUs, guest tasks and
/// virtual interrupts, some of them managed by vINT.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Vms {
    /// Cost of the inter-processor interrupt that delivers a virtual
    /// interrupt to a VCPU on another CPU than its physical interrupt's
    /// (VINT §III, Figure 2(b)); charged to the hypervisor on the VCPU's CPU.
    #[serde(default)]
    pub ipi: Option<Duration>,
    /// Cost of the trapped and emulated EOI at the end of every guest ISR
    /// (VINT §III, Step 3), charged to the VCPU (or its pseudo-VCPU); a
    /// virtual interrupt may override it.
    #[serde(default)]
    pub eoi: Option<Duration>,
    /// VCPU switch overhead (default 0): when a CPU starts running a
    /// VCPU's context after another VCPU or after idling (the VCPU was
    /// descheduled), the VCPU spends this long, on its own budget, before
    /// its guest makes progress (VM exit/entry, host context switch, cache
    /// and TLB refill). A pseudo-VCPU runs its VCPU's context: switching
    /// between the two costs nothing.
    #[serde(default)]
    pub switch_overhead: Option<Duration>,
    #[serde(default)]
    pub physical_interrupts: Vec<PhysInterrupt>,
    pub guests: Vec<Guest>,
}

/// A physical interrupt `I^pi = (C, T)` (VINT §III): pinned to `cpu`, its
/// hypervisor ISR (`isr`, C) preempts every VCPU and every ISR of lower
/// `priority`; one arrives every `min_interarrival` (T) plus up to
/// `jitter`, from `start`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PhysInterrupt {
    pub name: String,
    #[serde(default)]
    pub cpu: u32,
    /// Priority at the interrupt controller (higher preempts lower).
    #[serde(default)]
    pub priority: u32,
    pub isr: Duration,
    pub min_interarrival: Duration,
    #[serde(default)]
    pub jitter: Option<Duration>,
    #[serde(default)]
    pub start: Option<Duration>,
}

/// A guest VM: its VCPUs (with their tasks) and its virtual interrupts.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Guest {
    pub name: String,
    pub vcpus: Vec<GuestVcpu>,
    #[serde(default)]
    pub virtual_interrupts: Vec<VirtInterrupt>,
}

/// VCPU budget replenishment (VINT §III); also the replenishment of a
/// pseudo-VCPU and of its injection counter (VINT §V-B).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum VmPolicy {
    /// Full refill at every period boundary (release jitter `T - C`).
    Deferrable,
    /// What was used comes back one period after its use (no jitter).
    Sporadic,
}

/// A VCPU `(C^v, T^v)` pinned to a physical CPU (VINT §III).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GuestVcpu {
    pub name: String,
    #[serde(default)]
    pub cpu: u32,
    pub policy: VmPolicy,
    pub budget: Duration,
    pub period: Duration,
    /// Fixed priority 1..99 (higher is more urgent) instead of
    /// rate-monotonic.
    #[serde(default)]
    pub priority: Option<u32>,
    /// Sporadic only: replenishment queue bound (default 32).
    #[serde(default)]
    pub max_repl: Option<usize>,
    #[serde(default)]
    pub tasks: Vec<GuestTask>,
}

/// A guest task `(C, T)` with a fixed priority inside its VCPU (VINT §III):
/// periodic (`period`), a background busy loop (`background: true`), or a
/// DSR task, activated by the ISR of the virtual interrupt whose `dsr`
/// names it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GuestTask {
    pub name: String,
    /// Higher is more urgent; unique inside the VCPU.
    #[serde(default = "one")]
    pub priority: u32,
    /// WCET (C); not for a background task.
    #[serde(default)]
    pub wcet: Option<Duration>,
    /// Minimum inter-arrival time (T): released every period.
    #[serde(default)]
    pub period: Option<Duration>,
    /// First release (periodic) or start (background).
    #[serde(default)]
    pub offset: Option<Duration>,
    /// Always ready: computes for ever at its priority.
    #[serde(default)]
    pub background: bool,
}

/// A virtual interrupt `I^vi = (C, T)` (VINT §III): injected into `vcpu`
/// when the ISR of physical interrupt `physical` completes; its guest ISR
/// (`isr` plus the trapped EOI) runs above every task of the VCPU, then its
/// DSR tasks (`dsr`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct VirtInterrupt {
    pub name: String,
    /// The physical interrupt (by name) whose ISR injects it.
    pub physical: String,
    /// The VCPU of the same guest it is pinned to.
    pub vcpu: String,
    /// Priority at the emulated interrupt controller, unique in the VCPU.
    #[serde(default)]
    pub priority: u32,
    pub isr: Duration,
    /// EOI trap cost (default: `vms.eoi`).
    #[serde(default)]
    pub eoi: Option<Duration>,
    /// Declared minimum inter-arrival time T^vi (default: the physical
    /// interrupt's).
    #[serde(default)]
    pub min_interarrival: Option<Duration>,
    /// The DSR tasks (names of tasks of `vcpu`) its ISR activates.
    pub dsr: Vec<String>,
    /// Managed by vINT: its pseudo-VCPU (VINT §V).
    #[serde(default)]
    pub vint: Option<Vint>,
}

/// The pseudo-VCPU of a virtual interrupt managed by vINT (VINT §V-A/B).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Vint {
    /// Replenishment of the pseudo-VCPU and of its injection counter
    /// (default: the VCPU's policy).
    #[serde(default)]
    pub policy: Option<VmPolicy>,
    /// `T_p >= T^vi` (default: T^vi).
    #[serde(default)]
    pub period: Option<Duration>,
    /// A duration, or `auto` (default): VINT Eq. 1, or Eq. 2 when the VCPU
    /// has virtual interrupts not managed by vINT.
    #[serde(default)]
    pub budget: AutoDuration,
    /// 1..999 (higher is more urgent), or `auto` (default): the VINT §V-A
    /// order, by the original VCPU's priority, then by DSR priority.
    #[serde(default)]
    pub priority: AutoPriority,
}

/// A duration, or `auto`.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Default)]
pub enum AutoDuration {
    #[default]
    Auto,
    Value(Duration),
}

/// A priority, or `auto`.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Default)]
pub enum AutoPriority {
    #[default]
    Auto,
    Value(u32),
}

impl<'de> Deserialize<'de> for AutoDuration {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = AutoDuration;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a duration like 2ms, or auto")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<AutoDuration, E> {
                if v.trim() == "auto" {
                    return Ok(AutoDuration::Auto);
                }
                crate::units::parse_duration(v)
                    .map(|n| AutoDuration::Value(Duration(n)))
                    .map_err(E::custom)
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<AutoDuration, E> {
                Err(E::custom(format!(
                    "{v} has no unit (a duration like 2ms, or auto)"
                )))
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<AutoDuration, E> {
                Err(E::custom(format!(
                    "{v} has no unit (a duration like 2ms, or auto)"
                )))
            }
            fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<AutoDuration, E> {
                Err(E::custom(format!(
                    "{v} has no unit (a duration like 2ms, or auto)"
                )))
            }
        }
        d.deserialize_any(V)
    }
}

impl Serialize for AutoDuration {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            AutoDuration::Auto => s.serialize_str("auto"),
            AutoDuration::Value(d) => d.serialize(s),
        }
    }
}

impl<'de> Deserialize<'de> for AutoPriority {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = AutoPriority;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a priority (an integer), or auto")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<AutoPriority, E> {
                if v.trim() == "auto" {
                    Ok(AutoPriority::Auto)
                } else {
                    Err(E::custom(format!(
                        "\"{v}\" is not a priority (an integer, or auto)"
                    )))
                }
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<AutoPriority, E> {
                u32::try_from(v)
                    .map(AutoPriority::Value)
                    .map_err(|_| E::custom(format!("{v} is too large for a priority")))
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<AutoPriority, E> {
                if v < 0 {
                    Err(E::custom(format!("{v} is negative")))
                } else {
                    self.visit_u64(v as u64)
                }
            }
        }
        d.deserialize_any(V)
    }
}

impl Serialize for AutoPriority {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            AutoPriority::Auto => s.serialize_str("auto"),
            AutoPriority::Value(p) => s.serialize_u32(*p),
        }
    }
}

impl JsonSchema for AutoDuration {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "AutoDuration".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "description": "A duration with its unit (500us, 2ms, 1.5s), or auto.",
            "type": "string",
            "pattern": crate::units::DURATION_OR_AUTO_PATTERN,
        })
    }
}

impl JsonSchema for AutoPriority {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "AutoPriority".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "description": "A priority (an integer), or auto.",
            "oneOf": [{"type": "integer", "minimum": 0}, {"const": "auto"}],
        })
    }
}

/// The JSON Schema of a model file (draft 2020-12; for editor completion),
/// from these types.
pub fn model_schema() -> serde_json::Value {
    serde_json::to_value(schemars::schema_for!(Model)).unwrap_or_default()
}
