//! What a simulation measures (DESIGN.md §5), as plain serializable data:
//! the `metrics.json` of `irqlab simulate` (every field documented in
//! docs/metrics.md; JSON Schema in docs/schemas/metrics.schema.json,
//! generated from these types by `schemars`).
//!
//! Design principles: integers (ns, counts) wherever the value is exact;
//! floats only for derived statistics. JSON names carry their unit where
//! it is not a count (`_ns`, `_bytes_per_s`, `_fraction`, `_percent`).
//! Distributions go through the core's `LatencyRecorder` (min/max/mean/std
//! and HDR-style quantiles), the same recorder the runtime and the
//! measurement tools use.

use irqlab_core::{Histogram, LatencyRecorder, LatencyStats};
use schemars::JsonSchema;
use serde::Serialize;

/// Summary of a distribution of durations; every value but `count` is in
/// ns and `null` when `count` is 0.
#[derive(Clone, Debug, Default, Serialize, PartialEq, JsonSchema)]
pub struct Dist {
    /// Number of samples.
    pub count: u64,
    /// Smallest sample (ns).
    #[serde(rename = "min_ns")]
    pub min: Option<u64>,
    /// Arithmetic mean (ns).
    #[serde(rename = "mean_ns")]
    pub mean: Option<f64>,
    /// Largest sample (ns).
    #[serde(rename = "max_ns")]
    pub max: Option<u64>,
    /// Standard deviation (ns).
    #[serde(rename = "std_dev_ns")]
    pub std_dev: Option<f64>,
    /// Median (ns; HDR-style histogram, relative error below 1 %).
    #[serde(rename = "p50_ns")]
    pub p50: Option<u64>,
    /// 99th percentile (ns; HDR-style histogram).
    #[serde(rename = "p99_ns")]
    pub p99: Option<u64>,
    /// The samples in at most `HISTOGRAM_BINS` bins `[lo_ns, hi_ns, count]`
    /// (a sample `x` is in a bin when `lo_ns <= x < hi_ns`; bins are
    /// contiguous only where samples are: empty ranges are left out), in
    /// increasing order; for CDFs and histograms (`irqlab report`).
    #[serde(rename = "histogram_ns")]
    pub histogram: Vec<[u64; 3]>,
}

/// Upper bound on the bins of a `Dist::histogram` (keeps `metrics.json`
/// small for models with thousands of servers).
pub const HISTOGRAM_BINS: usize = 32;

/// Merge the histogram's non-empty buckets `(lo, width, count)` into at
/// most `HISTOGRAM_BINS` bins of consecutive buckets, in one vector (none
/// for an empty histogram).
fn bins(h: &Histogram) -> Vec<[u64; 3]> {
    let n = h.len();
    let per = n.div_ceil(HISTOGRAM_BINS).max(1);
    let mut out = Vec::with_capacity(n.div_ceil(per));
    let mut it = h.buckets().map(|(lo, w, c)| [lo, lo.saturating_add(w), c]);
    while let Some(mut bin) = it.next() {
        for b in it.by_ref().take(per - 1) {
            bin[1] = b[1];
            bin[2] += b[2];
        }
        out.push(bin);
    }
    out
}

impl Dist {
    pub fn from_recorder(r: &LatencyRecorder) -> Dist {
        Dist::from_stats(r.stats())
    }

    /// The distribution of a series kept without samples (a task's
    /// response times).
    pub fn from_stats(r: &LatencyStats) -> Dist {
        let h = r.histogram();
        let [p50, p99] = h.quantiles([0.5, 0.99]);
        Dist {
            count: r.num(),
            min: r.min().map(|x| x.as_ns()),
            mean: r.mean(),
            max: r.max().map(|x| x.as_ns()),
            std_dev: r.std_dev(),
            p50,
            p99,
            histogram: bins(h),
        }
    }
}

/// One physical CPU.
#[derive(Clone, Debug, Default, Serialize, PartialEq, JsonSchema)]
pub struct CpuMetrics {
    /// Scheduling decisions the core took on this CPU.
    pub schedule_calls: u64,
    /// Interrupts lost because the CPU already had the maximum of pending
    /// top halves (an interrupt storm beyond what the CPU can handle).
    pub lost_interrupts: u64,
    /// Thread wake-ups handed to the core.
    pub wakeups: u64,
    /// Dispatches that changed the running server.
    pub server_switches: u64,
    /// Replenishment-queue operations (insertions, merges, removals).
    pub replenishment_ops: u64,
    /// Time in interrupt top halves (ns).
    pub isr_ns: u64,
    /// Time in softirq context (`linux` path; ns).
    pub softirq_ns: u64,
    /// Time with nothing to run (ns).
    pub idle_ns: u64,
    /// Dispatches that loaded a VCPU's execution context: after another
    /// VCPU ran, or after the CPU idled (`switch_overhead`).
    pub vcpu_switches: u64,
    /// Time spent in VCPU switch overhead, charged to the incoming VCPU,
    /// and (thread-based paths) in thread switches (`switch_costs`), on
    /// nobody's budget (ns).
    pub switch_ns: u64,
    /// Scheduler-overhead model (QUEST-VCPU Figures 4, 7): percent (0-100)
    /// of the CPU spent in the scheduler.
    pub overhead_percent: f64,
    /// The same per window of `window_ns` (percent; replenishment-queue
    /// operations are attributed when their server is next descheduled).
    #[serde(rename = "overhead_windows_percent")]
    pub overhead_windows: Vec<f64>,
}

/// One server (VCPU, I/O VCPU, pseudo-VCPU, softirq thread...).
#[derive(Clone, Debug, Default, Serialize, PartialEq, JsonSchema)]
pub struct ServerMetrics {
    /// Name from the model.
    pub name: String,
    /// Index of its CPU.
    pub cpu: usize,
    /// Policy: `sporadic`, `pibs`, `deferrable`, `polling`, `cbs` or
    /// `unbounded`.
    // the core's static name: no string allocated per server
    pub kind: &'static str,
    /// Foreground execution time (ns).
    pub busy_ns: u64,
    /// Execution in background mode, not charged to the budget (ns).
    pub background_ns: u64,
    /// `busy_ns / duration_ns` (a fraction, 0-1).
    #[serde(rename = "share_fraction")]
    pub share: f64,
    /// CPU share in consecutive windows of `window_ns` (fractions, 0-1).
    #[serde(rename = "share_windows_fraction")]
    pub share_windows: Vec<f64>,
    /// Sporadic servers: longest replenishment queue over the dispatches of
    /// this server (entries).
    pub max_queue: usize,
    /// Sporadic servers: mean replenishment-queue length over the same
    /// dispatches (entries).
    pub mean_queue: f64,
    /// Deferrable and sporadic servers (VCPUs, pseudo-VCPUs, Main VCPUs):
    /// the time from a release with the whole budget to its consumption or
    /// the end of the work (what VINT Eq. 3 bounds; see `supply`); `null`
    /// for other policies.
    pub response: Option<Dist>,
    /// Deferrable servers: periods in which the server was backlogged from
    /// the boundary on and did not receive its budget; `null` otherwise.
    pub budget_misses: Option<u64>,
}

/// One task (periodic, sporadic or I/O reader).
#[derive(Clone, Debug, Default, Serialize, PartialEq, JsonSchema)]
pub struct TaskMetrics {
    /// Name from the model.
    pub name: String,
    /// Jobs released.
    pub released: u64,
    /// Jobs finished.
    pub completed: u64,
    /// Finished jobs later than their deadline plus
    /// `unfinished_past_deadline`.
    pub deadline_misses: u64,
    /// Released jobs unfinished at the end of the run although their
    /// deadline had passed.
    pub unfinished_past_deadline: u64,
    /// Jobs aborted at their deadline (`abort_on_miss`; each is also a
    /// deadline miss).
    pub aborted: u64,
    /// Response time of the finished jobs: release to completion (ns).
    pub response: Dist,
    /// Completion times of the first jobs (ns since the start; for
    /// exact-schedule checks and comparisons with other simulators): the
    /// first `max_completions` (default 10,000); `completed` counts all.
    #[serde(rename = "completions_ns")]
    pub completions: Vec<u64>,
}

/// One device (NIC, USB device, disk, timer...).
#[derive(Clone, Debug, Default, Serialize, PartialEq, JsonSchema)]
pub struct DeviceMetrics {
    /// Name from the model.
    pub name: String,
    /// Interrupts raised.
    pub interrupts: u64,
    /// Events/requests handled by the bottom half.
    pub handled: u64,
    /// Events dropped because the buffer was full.
    pub dropped: u64,
    /// Bytes delivered to the bottom half.
    pub bytes: u64,
    /// Bytes per second over the run (delivered to the bottom half).
    #[serde(rename = "throughput_bytes_per_s")]
    pub throughput_bps: f64,
    /// Bytes per second in consecutive windows of `window_ns`.
    #[serde(rename = "throughput_windows_bytes_per_s")]
    pub throughput_windows: Vec<f64>,
    /// Per request: submission (or arrival) to return to the task (ns).
    pub latency: Dist,
    /// Arrival to end of the bottom half (VINT Def. 2 style handling time;
    /// ns).
    pub handling: Dist,
}

/// A virtual interrupt's flows (VINT Definitions 1-3).
#[derive(Clone, Debug, Default, Serialize, PartialEq, JsonSchema)]
pub struct VirqMetrics {
    /// Name from the model.
    pub name: String,
    /// Physical interrupts that led to it.
    pub arrivals: u64,
    /// Virtual interrupts injected into the guest.
    pub injected: u64,
    /// Injections delayed because the vINT counter was empty.
    pub delayed_injections: u64,
    /// Flows completed (ISR and DSR done).
    pub handled: u64,
    /// Flows within the minimum inter-arrival time (Definition 3).
    pub serviceable: u64,
    /// Total interrupt handling time (Definition 2; ns).
    pub handling: Dist,
    /// Cumulative distribution: pairs `[bound_ns, flows handled within
    /// bound_ns]`.
    pub handled_within: Vec<(u64, u64)>,
}

/// The whole `metrics.json` of one simulation run.
#[derive(Clone, Debug, Default, Serialize, PartialEq, JsonSchema)]
pub struct Metrics {
    /// Simulated time (ns).
    pub duration_ns: u64,
    /// Seed of the random arrivals.
    pub seed: u64,
    /// Interrupt path: `quest`, `quest-no-iovcpu`, `linux` or `hypervisor`.
    pub path: String,
    /// Length of the windows of the `*_windows_*` series (ns).
    pub window_ns: u64,
    /// The window the configuration asked for, when it was widened to
    /// `window_ns` to keep the series within `max_window_values` values
    /// (memory flat in simulated time); absent from the JSON otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window_requested_ns: Option<u64>,
    /// Events the simulator processed.
    pub events: u64,
    /// The run was stopped before its configured duration (`duration_ns`
    /// is then the time reached); absent from the JSON when false.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub partial: bool,
    /// The trace reached its event limit (`trace.max_events`) and stopped
    /// recording; absent from the JSON when false.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub trace_truncated: bool,
    /// Per physical CPU, by index.
    pub cpus: Vec<CpuMetrics>,
    /// Per server, in model order.
    pub servers: Vec<ServerMetrics>,
    /// Per task, in model order.
    pub tasks: Vec<TaskMetrics>,
    /// Per device, in model order (`hypervisor` path: per physical
    /// interrupt).
    pub devices: Vec<DeviceMetrics>,
    /// Per virtual interrupt (`hypervisor` path).
    pub virqs: Vec<VirqMetrics>,
}

/// The JSON Schema of `metrics.json` (draft 2020-12), from these types.
pub fn metrics_schema() -> serde_json::Value {
    serde_json::to_value(schemars::schema_for!(Metrics)).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use irqlab_core::Nanos;

    #[test]
    fn histogram_keeps_every_sample_in_bounded_bins() {
        let mut r = LatencyRecorder::new(0, None);
        for x in 0..100_000u64 {
            r.record(Nanos::from_ns(x * 37 % 1_000_003));
        }
        let d = Dist::from_recorder(&r);
        assert!(d.histogram.len() <= HISTOGRAM_BINS);
        assert_eq!(d.histogram.iter().map(|b| b[2]).sum::<u64>(), 100_000);
        assert!(d.histogram.windows(2).all(|w| w[0][1] <= w[1][0]));
        assert!(d.histogram[0][0] <= d.min.unwrap());
        assert!(d.histogram.last().unwrap()[1] > d.max.unwrap());
    }

    /// The bins are the buckets in `ceil(n / HISTOGRAM_BINS)`-sized runs
    /// (the last one shorter), for every number of buckets around the
    /// bound.
    #[test]
    fn bins_are_runs_of_consecutive_buckets() {
        for n in 0..150u64 {
            let mut r = LatencyRecorder::new(0, None);
            for x in 0..n {
                for _ in 0..=x % 3 {
                    r.record(Nanos::from_ns(x));
                }
            }
            let all: Vec<[u64; 3]> = r
                .histogram()
                .buckets()
                .map(|(lo, w, c)| [lo, lo + w, c])
                .collect();
            let per = all.len().div_ceil(HISTOGRAM_BINS).max(1);
            let want: Vec<[u64; 3]> = all
                .chunks(per)
                .map(|c| [c[0][0], c[c.len() - 1][1], c.iter().map(|b| b[2]).sum()])
                .collect();
            assert_eq!(Dist::from_recorder(&r).histogram, want, "{n} buckets");
        }
    }

    #[test]
    fn histogram_of_few_values_is_exact() {
        let mut r = LatencyRecorder::new(0, None);
        for x in [5u64, 5, 7] {
            r.record(Nanos::from_ns(x));
        }
        assert_eq!(
            Dist::from_recorder(&r).histogram,
            vec![[5, 6, 2], [7, 8, 1]]
        );
    }
}
