//! What a simulation measures (DESIGN.md §5), as plain serializable data.
//!
//! Design principles: integers (ns, counts) wherever the value is exact;
//! floats only for derived statistics. Distributions go through the core's
//! `LatencyRecorder` (min/max/mean/std and HDR-style quantiles), the same
//! recorder the runtime and the measurement tools use.

use irqlab_core::LatencyRecorder;
use serde::Serialize;

/// Summary of a distribution of durations (ns).
#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct Dist {
    pub count: u64,
    pub min: Option<u64>,
    pub mean: Option<f64>,
    pub max: Option<u64>,
    pub std_dev: Option<f64>,
    pub p50: Option<u64>,
    pub p99: Option<u64>,
}

impl Dist {
    pub fn from_recorder(r: &LatencyRecorder) -> Dist {
        let h = r.histogram();
        Dist {
            count: r.num(),
            min: r.min().map(|x| x.as_ns()),
            mean: r.mean(),
            max: r.max().map(|x| x.as_ns()),
            std_dev: r.std_dev(),
            p50: h.quantile(0.5),
            p99: h.quantile(0.99),
        }
    }
}

#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct CpuMetrics {
    pub schedule_calls: u64,
    /// Interrupts lost because the CPU already had the maximum of pending
    /// top halves (an interrupt storm beyond what the CPU can handle).
    pub lost_interrupts: u64,
    pub wakeups: u64,
    pub server_switches: u64,
    pub replenishment_ops: u64,
    /// Time in interrupt top halves.
    pub isr_ns: u64,
    /// Time in softirq context (`linux` path).
    pub softirq_ns: u64,
    pub idle_ns: u64,
    /// Dispatches that loaded a VCPU's execution context: after another
    /// VCPU ran, or after the CPU idled (`switch_overhead`).
    pub vcpu_switches: u64,
    /// Time spent in VCPU switch overhead, charged to the incoming VCPU.
    pub switch_ns: u64,
    /// Scheduler-overhead model (QUEST-VCPU Figures 4, 7): percent of the
    /// CPU spent in the scheduler.
    pub overhead_percent: f64,
    /// The same per window (replenishment-queue operations are attributed
    /// when their server is next descheduled).
    pub overhead_windows: Vec<f64>,
}

#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct ServerMetrics {
    pub name: String,
    pub cpu: usize,
    pub kind: String,
    /// Foreground execution time.
    pub busy_ns: u64,
    /// Execution in background mode (not charged to the budget).
    pub background_ns: u64,
    /// busy / duration.
    pub share: f64,
    /// CPU share in consecutive windows of `window` ns.
    pub share_windows: Vec<f64>,
    /// Sporadic servers: replenishment-queue length, max and mean over the
    /// dispatches of this server.
    pub max_queue: usize,
    pub mean_queue: f64,
    /// Deferrable and sporadic servers (VCPUs, pseudo-VCPUs, Main VCPUs):
    /// the time from a release with the whole budget to its consumption or
    /// the end of the work (what VINT Eq. 3 bounds; see `supply`).
    pub response: Option<Dist>,
    /// Deferrable servers: periods in which the server was backlogged from
    /// the boundary on and did not receive its budget.
    pub budget_misses: Option<u64>,
}

#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct TaskMetrics {
    pub name: String,
    pub released: u64,
    pub completed: u64,
    /// Finished jobs later than their deadline plus
    /// `unfinished_past_deadline`.
    pub deadline_misses: u64,
    /// Released jobs unfinished at the end of the run although their
    /// deadline had passed.
    pub unfinished_past_deadline: u64,
    pub response: Dist,
    /// Completion times of the first jobs (for exact-schedule checks and
    /// comparisons with other simulators), capped at 10,000.
    pub completions: Vec<u64>,
}

#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct DeviceMetrics {
    pub name: String,
    pub interrupts: u64,
    /// Events/requests handled by the bottom half.
    pub handled: u64,
    /// Events dropped because the buffer was full.
    pub dropped: u64,
    pub bytes: u64,
    /// Bytes per second over the run (delivered to the bottom half).
    pub throughput_bps: f64,
    /// Bytes per second in consecutive windows.
    pub throughput_windows: Vec<f64>,
    /// Per request: submission (or arrival) to return to the task.
    pub latency: Dist,
    /// Arrival to end of the bottom half (VINT Def. 2 style handling time).
    pub handling: Dist,
}

/// A virtual interrupt's flows (VINT Definitions 1-3).
#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct VirqMetrics {
    pub name: String,
    /// Physical interrupts that led to it.
    pub arrivals: u64,
    pub injected: u64,
    /// Injections delayed because the vINT counter was empty.
    pub delayed_injections: u64,
    /// Flows completed (ISR and DSR done).
    pub handled: u64,
    /// Flows within the minimum inter-arrival time (Definition 3).
    pub serviceable: u64,
    /// Total interrupt handling time (Definition 2).
    pub handling: Dist,
    /// Cumulative distribution: flows handled within each bound (ns).
    pub handled_within: Vec<(u64, u64)>,
}

#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct Metrics {
    pub duration_ns: u64,
    pub seed: u64,
    pub path: String,
    pub window_ns: u64,
    pub events: u64,
    /// The run was stopped before its configured duration (`duration_ns`
    /// is then the time reached); absent from the JSON when false.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub partial: bool,
    /// The trace reached its event limit (`trace.max_events`) and stopped
    /// recording; absent from the JSON when false.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub trace_truncated: bool,
    pub cpus: Vec<CpuMetrics>,
    pub servers: Vec<ServerMetrics>,
    pub tasks: Vec<TaskMetrics>,
    pub devices: Vec<DeviceMetrics>,
    pub virqs: Vec<VirqMetrics>,
}
