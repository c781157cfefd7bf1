//! What a simulation measures (docs/simulator.md), as plain serializable data:
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

use std::borrow::Cow;

use irqlab_core::{Histogram, LatencyRecorder, LatencyStats};
use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::ser::SerializeSeq;
use serde::{Serialize, Serializer};

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

/// A series of values per window of `window_ns` in which most values
/// may be zero: only the others are stored, with their window index.
///
/// Why: a server runs in few of the windows of a model with many
/// servers (200 servers over 200 windows: 2,098 of 40,000 values are
/// not zero), and a dense store is written on every one of its pages (a
/// first simulation in a process paid about 80 page faults for it, half
/// its setup time). It is written (JSON, Python) as the full list, zeros
/// included, exactly as a `Vec<f64>` of the same values would be; `iter`
/// and `to_vec` give that list.
///
/// Invariant: the stored values are in increasing window order, each
/// index below `len` and at most once, and none has the bits of `0.0`
/// (so two series are equal when their lists are).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Windows {
    len: usize,
    nonzero: Vec<(usize, f64)>,
}

impl Windows {
    /// The series of the values `v` (window `k` holds `v[k]`).
    pub fn from_dense(v: &[f64]) -> Windows {
        Windows {
            len: v.len(),
            nonzero: v
                .iter()
                .enumerate()
                .filter(|(_, x)| x.to_bits() != 0)
                .map(|(k, &x)| (k, x))
                .collect(),
        }
    }

    /// The series of `len` windows with these values (the invariant
    /// above holds: the caller's values are built in window order).
    pub(crate) fn from_sorted(len: usize, nonzero: Vec<(usize, f64)>) -> Windows {
        debug_assert!(nonzero.windows(2).all(|p| p[0].0 < p[1].0));
        debug_assert!(nonzero.iter().all(|&(k, x)| k < len && x.to_bits() != 0));
        Windows { len, nonzero }
    }

    /// Number of windows.
    pub fn len(&self) -> usize {
        self.len
    }

    /// No windows at all.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The value of window `k` (`None` past the last window).
    pub fn get(&self, k: usize) -> Option<f64> {
        if k >= self.len {
            return None;
        }
        Some(match self.nonzero.binary_search_by_key(&k, |&(i, _)| i) {
            Ok(i) => self.nonzero[i].1,
            Err(_) => 0.0,
        })
    }

    /// The windows that are not zero, `(index, value)`, in window order.
    pub fn nonzero(&self) -> &[(usize, f64)] {
        &self.nonzero
    }

    /// Every window's value, in order (zeros included).
    pub fn iter(&self) -> WindowsIter<'_> {
        WindowsIter {
            k: 0,
            len: self.len,
            rest: &self.nonzero,
        }
    }

    /// Every window's value, as a vector.
    pub fn to_vec(&self) -> Vec<f64> {
        let mut v = vec![0.0; self.len];
        for &(k, x) in &self.nonzero {
            v[k] = x;
        }
        v
    }
}

/// Every value of a [`Windows`] in window order (zeros included).
#[derive(Clone, Debug)]
pub struct WindowsIter<'a> {
    k: usize,
    len: usize,
    rest: &'a [(usize, f64)],
}

impl Iterator for WindowsIter<'_> {
    type Item = f64;

    fn next(&mut self) -> Option<f64> {
        if self.k >= self.len {
            return None;
        }
        let k = self.k;
        self.k += 1;
        match self.rest.split_first() {
            Some((&(i, x), rest)) if i == k => {
                self.rest = rest;
                Some(x)
            }
            _ => Some(0.0),
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = self.len - self.k;
        (n, Some(n))
    }
}

impl ExactSizeIterator for WindowsIter<'_> {}

impl<'a> IntoIterator for &'a Windows {
    type Item = f64;
    type IntoIter = WindowsIter<'a>;

    fn into_iter(self) -> WindowsIter<'a> {
        self.iter()
    }
}

impl From<Vec<f64>> for Windows {
    fn from(v: Vec<f64>) -> Windows {
        Windows::from_dense(&v)
    }
}

/// The full list, as `Vec<f64>` writes it.
impl Serialize for Windows {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(self.len))?;
        for x in self {
            seq.serialize_element(&x)?;
        }
        seq.end()
    }
}

/// The schema of the list it is written as (`Vec<f64>`'s).
impl JsonSchema for Windows {
    fn inline_schema() -> bool {
        <Vec<f64>>::inline_schema()
    }

    fn schema_name() -> Cow<'static, str> {
        <Vec<f64>>::schema_name()
    }

    fn schema_id() -> Cow<'static, str> {
        <Vec<f64>>::schema_id()
    }

    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        <Vec<f64>>::json_schema(generator)
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
    // kept sparse (`Windows`), written as the full list
    #[serde(rename = "share_windows_fraction")]
    pub share_windows: Windows,
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

    /// A sparse series is written, and described, as the list of its
    /// values: the same JSON text as a `Vec<f64>` (zeros as `0.0`, `-0.0`
    /// kept), the same schema as the CPUs' windowed series (a `Vec<f64>`),
    /// and its accessors agree with the list.
    #[test]
    fn windows_are_written_as_the_full_list() {
        let dense = vec![0.0, 0.25, 0.0, 0.0, -0.0, 1.0, 1e-300, 0.0];
        let w = Windows::from_dense(&dense);
        assert_eq!(w.nonzero().len(), 4);
        assert_eq!(
            serde_json::to_string(&w).unwrap(),
            serde_json::to_string(&dense).unwrap()
        );
        assert_eq!(w.len(), dense.len());
        let bits = |v: Vec<f64>| v.into_iter().map(f64::to_bits).collect::<Vec<_>>();
        assert_eq!(bits(w.to_vec()), bits(dense.clone()));
        assert_eq!(bits(w.iter().collect()), bits(dense.clone()));
        assert_eq!(w.iter().len(), dense.len());
        let got: Vec<Option<f64>> = (0..=dense.len()).map(|k| w.get(k)).collect();
        let want: Vec<Option<f64>> = (0..=dense.len()).map(|k| dense.get(k).copied()).collect();
        assert_eq!(format!("{got:?}"), format!("{want:?}"));
        assert_eq!(Windows::from(dense.clone()), w);
        assert_ne!(Windows::from_dense(&dense[..7]), w);
        let empty = Windows::default();
        assert!(empty.is_empty() && empty.iter().next().is_none());
        assert_eq!(serde_json::to_string(&empty).unwrap(), "[]");

        let schema = metrics_schema();
        let defs = &schema["$defs"];
        let sparse = &defs["ServerMetrics"]["properties"]["share_windows_fraction"];
        let dense = &defs["CpuMetrics"]["properties"]["overhead_windows_percent"];
        assert_eq!(sparse["type"], "array");
        for key in ["type", "items"] {
            assert_eq!(sparse[key], dense[key], "{key}");
        }
        let keys = |v: &serde_json::Value| v.as_object().map(|o| o.len());
        assert_eq!(keys(sparse), keys(dense));
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
