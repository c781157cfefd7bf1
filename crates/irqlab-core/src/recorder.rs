//! Latency recorder: the software twin of the Latencies IP (LATENCY-IP §4,
//! Table 2), used by the simulator, the runtime and the measurement tools.
//!
//! What it is: `irq(t)` / `ack(t)` pairs give a latency (LATENCY-IP Eq. 2:
//! ack time minus irq time); the recorder keeps `last`, `min`, `max`, `num`,
//! a sticky alarm against `alarm_lat`, the first `capacity` samples (like
//! the IP's sample RAM) and a log-linear histogram for long runs.
//!
//! Edge cases (same rules as the IP, hdl/latency_ip/README.md):
//! * a second `irq` before the `ack` is ignored (the latency is measured from
//!   the first) and counted in `irq_overruns`;
//! * an `ack` with no pending `irq` is ignored and counted in
//!   `spurious_acks`;
//! * when the sample store is full, statistics keep updating and further
//!   samples are counted in `samples_dropped`;
//! * the alarm (latency strictly above `alarm_lat`) stays set until
//!   `clear_alarm`.
//!
//! `LatencyStats` is the statistics part alone (histogram and sums), for a
//! caller that needs no sample store, alarm or edge counters (the
//! simulator's per-task response times); the recorder keeps one inside.

use alloc::vec::Vec;

use crate::time::Nanos;

/// Sub-bucket bits of the histogram: relative bucket width below 2^-(B-1)
/// (under 0.8 % for B = 8).
const B: u32 = 8;
const LIN: u64 = 1 << B;
const HALF: u64 = 1 << (B - 1);

/// One used bucket of a `Histogram`: its index and its count, in 12 bytes
/// (the count as two 32-bit halves: no padding, so a bucket costs what the
/// two columns it replaced did, in one allocation instead of two).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Cell {
    idx: u32,
    lo: u32,
    hi: u32,
}

impl Cell {
    fn new(idx: u32) -> Cell {
        Cell { idx, lo: 1, hi: 0 }
    }

    fn count(&self) -> u64 {
        (self.hi as u64) << 32 | self.lo as u64
    }

    fn add_one(&mut self) {
        let c = self.count() + 1;
        (self.lo, self.hi) = (c as u32, (c >> 32) as u32);
    }
}

/// The used buckets of a `Histogram`, in increasing index: the first two
/// inline, more on the heap. A recorder of one task of a many-task
/// simulation sees a few samples (10,000 tasks over 20 s: two each on
/// average), so most recorders never allocate; one vector of cells, not a
/// column per field, when they do.
#[derive(Clone, Debug)]
enum Cells {
    Inline { len: u8, cells: [Cell; 2] },
    Heap(Vec<Cell>),
}

impl Default for Cells {
    fn default() -> Cells {
        Cells::Inline {
            len: 0,
            cells: [Cell::default(); 2],
        }
    }
}

impl Cells {
    fn as_slice(&self) -> &[Cell] {
        match self {
            Cells::Inline { len, cells } => &cells[..*len as usize],
            Cells::Heap(v) => v,
        }
    }

    fn as_mut_slice(&mut self) -> &mut [Cell] {
        match self {
            Cells::Inline { len, cells } => &mut cells[..*len as usize],
            Cells::Heap(v) => v,
        }
    }

    /// Insert `c` at position `k` (at most the length).
    fn insert(&mut self, k: usize, c: Cell) {
        match self {
            Cells::Inline { len, cells } if (*len as usize) < cells.len() => {
                let n = *len as usize;
                cells.copy_within(k..n, k + 1);
                cells[k] = c;
                *len += 1;
            }
            Cells::Inline { cells, .. } => {
                let mut v = Vec::with_capacity(4);
                v.extend_from_slice(cells);
                v.insert(k, c);
                *self = Cells::Heap(v);
            }
            Cells::Heap(v) => v.insert(k, c),
        }
    }
}

/// Log-linear histogram of `u64` values (HDR-style): exact below 2^B, then
/// 2^(B-1) buckets per power of two. Only the buckets used are stored
/// (`Cells`: index and count, sorted by index), so a recorder costs memory
/// in proportion to the number of distinct buckets its values fall in --
/// not to their magnitude nor to their spread: a task whose responses fall
/// in two far apart buckets keeps two counters, not the range between
/// them.
#[derive(Clone, Debug, Default)]
pub struct Histogram {
    cells: Cells,
    total: u64,
    /// Smallest and largest recorded values (quantiles are clamped to them).
    min: u64,
    max: u64,
}

/// `ceil(x)` as an integer for `x >= 0` (a rank: `x` is at most 2^64),
/// exactly as `libm::ceil(x) as u64` but without the general rounding
/// code: the truncation is exact (an `f64` of 2^52 or more is already an
/// integer), so one comparison tells whether `x` had a fraction.
fn ceil_rank(x: f64) -> u64 {
    let t = x as u64;
    if (t as f64) < x {
        t + 1
    } else {
        t
    }
}

/// `x as f64` (the same value, rounded the same way): in one instruction
/// when `x` fits in `i64` (a sum of samples under 292 years of
/// nanoseconds), else by the general 128-bit conversion.
fn u128_to_f64(x: u128) -> f64 {
    match i64::try_from(x) {
        Ok(i) => i as f64,
        Err(_) => x as f64,
    }
}

impl Histogram {
    pub fn new() -> Histogram {
        Histogram::default()
    }

    fn index(v: u64) -> usize {
        if v < LIN {
            return v as usize;
        }
        let msb = 63 - v.leading_zeros() as u64;
        let shift = msb - (B as u64 - 1);
        (LIN + (shift - 1) * HALF + ((v >> shift) - HALF)) as usize
    }

    /// `(lowest value, width)` of bucket `i`.
    fn bucket(i: usize) -> (u64, u64) {
        let i = i as u64;
        if i < LIN {
            return (i, 1);
        }
        let j = i - LIN;
        let shift = j / HALF + 1;
        ((HALF + j % HALF) << shift, 1 << shift)
    }

    pub fn record(&mut self, v: u64) {
        // at most LIN + 57 * HALF buckets: the index fits in u32
        let i = Histogram::index(v) as u32;
        let cells = self.cells.as_mut_slice();
        let n = cells.len();
        // values mostly repeat the largest bucket so far: check it first
        match cells.last_mut() {
            Some(l) if l.idx == i => l.add_one(),
            Some(l) if l.idx > i => match cells.binary_search_by_key(&i, |c| c.idx) {
                Ok(k) => cells[k].add_one(),
                Err(k) => self.cells.insert(k, Cell::new(i)),
            },
            _ => self.cells.insert(n, Cell::new(i)),
        }
        if self.total == 0 {
            (self.min, self.max) = (v, v);
        } else {
            self.min = self.min.min(v);
            self.max = self.max.max(v);
        }
        self.total += 1;
    }

    pub fn total(&self) -> u64 {
        self.total
    }

    /// The value at quantile `q` in [0, 1]: the highest value of the bucket
    /// holding the `ceil(q * n)`-th smallest sample, clamped to the recorded
    /// minimum and maximum (never below the truth, above it by less than
    /// one bucket width, never above the maximum nor below the minimum).
    pub fn quantile(&self, q: f64) -> Option<u64> {
        self.quantiles([q])[0]
    }

    /// `quantile` of each of `qs` (in any order), in one pass over the
    /// buckets.
    pub fn quantiles<const N: usize>(&self, qs: [f64; N]) -> [Option<u64>; N] {
        let mut out = [None; N];
        if self.total == 0 {
            return out;
        }
        let ranks = qs.map(|q| ceil_rank(q.clamp(0.0, 1.0) * self.total as f64).max(1));
        let mut left = N;
        let mut seen = 0;
        for c in self.cells.as_slice() {
            seen += c.count();
            for (o, &rank) in out.iter_mut().zip(&ranks) {
                if o.is_none() && seen >= rank {
                    let (lo, w) = Histogram::bucket(c.idx as usize);
                    *o = Some((lo + (w - 1)).clamp(self.min, self.max));
                    left -= 1;
                }
            }
            if left == 0 {
                break;
            }
        }
        out
    }

    /// Non-empty buckets as `(lowest value, width, count)`.
    pub fn buckets(&self) -> impl Iterator<Item = (u64, u64, u64)> + '_ {
        self.cells.as_slice().iter().map(|c| {
            let (lo, w) = Histogram::bucket(c.idx as usize);
            (lo, w, c.count())
        })
    }

    /// Number of non-empty buckets.
    pub fn len(&self) -> usize {
        self.cells.as_slice().len()
    }

    pub fn is_empty(&self) -> bool {
        self.total == 0
    }
}

/// Equal when they hold the same counts in the same buckets (however the
/// stored range grew).
impl PartialEq for Histogram {
    fn eq(&self, other: &Histogram) -> bool {
        self.total == other.total
            && self.min == other.min
            && self.max == other.max
            && self.buckets().eq(other.buckets())
    }
}

impl Eq for Histogram {}

/// The statistics of a latency series: its histogram (count, minimum,
/// maximum and quantiles), and the sums for the mean and the standard
/// deviation (LATENCY-IP Eq. 4) -- the recorder without the IP's
/// sample store, alarm and edge counters. A simulation keeps one per task
/// (96 bytes, not the recorder's 192, for memory); the recorder keeps one and
/// answers its statistics from it, so both compute them one way.
#[derive(Clone, Debug, Default)]
pub struct LatencyStats {
    histogram: Histogram,
    sum: u128,
    sum_sq: u128,
}

impl LatencyStats {
    pub fn new() -> LatencyStats {
        LatencyStats::default()
    }

    /// Add one latency.
    #[inline]
    pub fn record(&mut self, lat: Nanos) {
        let v = lat.as_ns() as u128;
        self.sum += v;
        self.sum_sq += v * v;
        self.histogram.record(lat.as_ns());
    }

    pub fn num(&self) -> u64 {
        self.histogram.total
    }
    pub fn min(&self) -> Option<Nanos> {
        (self.num() > 0).then_some(Nanos(self.histogram.min))
    }
    pub fn max(&self) -> Option<Nanos> {
        (self.num() > 0).then_some(Nanos(self.histogram.max))
    }
    pub fn histogram(&self) -> &Histogram {
        &self.histogram
    }
    /// Mean of all recorded latencies, in ns.
    pub fn mean(&self) -> Option<f64> {
        let n = self.num();
        (n > 0).then(|| u128_to_f64(self.sum) / n as f64)
    }
    /// Sample standard deviation (LATENCY-IP Eq. 4, divisor n - 1).
    pub fn std_dev(&self) -> Option<f64> {
        let n = self.num();
        if n < 2 {
            return None;
        }
        let n = n as f64;
        let mean = u128_to_f64(self.sum) / n;
        let var = (u128_to_f64(self.sum_sq) - n * mean * mean) / (n - 1.0);
        Some(libm::sqrt(var.max(0.0)))
    }
}

/// Interrupt-latency recorder (LATENCY-IP §4).
///
/// Kept small, as a simulation holds one per device: the count, minimum
/// and maximum are the histogram's (it records every sample too), and the
/// last sample is meaningful once there is one.
#[derive(Clone, Debug)]
pub struct LatencyRecorder {
    stats: LatencyStats,
    last: Nanos,
    capacity: usize,
    samples: Vec<Nanos>,
    alarm_lat: Option<Nanos>,
    pending_irq: Option<Nanos>,
    alarm: bool,
    pub irq_overruns: u64,
    pub spurious_acks: u64,
    pub samples_dropped: u64,
}

impl LatencyRecorder {
    /// Keep up to `capacity` samples (the IP's RAM holds 512).
    pub fn new(capacity: usize, alarm_lat: Option<Nanos>) -> LatencyRecorder {
        LatencyRecorder {
            stats: LatencyStats::new(),
            last: Nanos(0),
            capacity,
            samples: Vec::new(),
            alarm_lat,
            pending_irq: None,
            alarm: false,
            irq_overruns: 0,
            spurious_acks: 0,
            samples_dropped: 0,
        }
    }

    /// Rising edge of `irq_in` at `t`.
    pub fn irq(&mut self, t: Nanos) {
        if self.pending_irq.is_some() {
            self.irq_overruns += 1;
        } else {
            self.pending_irq = Some(t);
        }
    }

    /// Rising edge of `ack_in` at `t`: records `t - irq` (Eq. 2).
    pub fn ack(&mut self, t: Nanos) -> Option<Nanos> {
        match self.pending_irq.take() {
            Some(i) => {
                let lat = t - i;
                self.record(lat);
                Some(lat)
            }
            None => {
                self.spurious_acks += 1;
                None
            }
        }
    }

    /// Record a latency measured elsewhere.
    pub fn record(&mut self, lat: Nanos) {
        self.last = lat;
        if self.alarm_lat.is_some_and(|a| lat > a) {
            self.alarm = true;
        }
        if self.samples.len() < self.capacity {
            self.samples.push(lat);
        } else {
            self.samples_dropped += 1;
        }
        self.stats.record(lat);
    }

    pub fn set_alarm_lat(&mut self, alarm_lat: Option<Nanos>) {
        self.alarm_lat = alarm_lat;
    }
    pub fn clear_alarm(&mut self) {
        self.alarm = false;
    }
    pub fn alarm(&self) -> bool {
        self.alarm
    }
    pub fn last(&self) -> Option<Nanos> {
        (self.num() > 0).then_some(self.last)
    }
    pub fn min(&self) -> Option<Nanos> {
        self.stats.min()
    }
    pub fn max(&self) -> Option<Nanos> {
        self.stats.max()
    }
    pub fn num(&self) -> u64 {
        self.stats.num()
    }
    pub fn samples(&self) -> &[Nanos] {
        &self.samples
    }
    pub fn histogram(&self) -> &Histogram {
        self.stats.histogram()
    }
    /// The statistics of every latency recorded (kept or not).
    pub fn stats(&self) -> &LatencyStats {
        &self.stats
    }
    /// Mean of all recorded latencies, in ns.
    pub fn mean(&self) -> Option<f64> {
        self.stats.mean()
    }
    /// Sample standard deviation (LATENCY-IP Eq. 4, divisor n - 1).
    pub fn std_dev(&self) -> Option<f64> {
        self.stats.std_dev()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pairs_and_edge_cases() {
        let mut r = LatencyRecorder::new(2, Some(Nanos(50)));
        assert_eq!(r.ack(Nanos(5)), None);
        assert_eq!(r.spurious_acks, 1);
        r.irq(Nanos(10));
        r.irq(Nanos(12));
        assert_eq!(r.irq_overruns, 1);
        assert_eq!(r.ack(Nanos(40)), Some(Nanos(30)));
        assert!(!r.alarm());
        r.irq(Nanos(100));
        assert_eq!(r.ack(Nanos(160)), Some(Nanos(60)));
        assert!(r.alarm());
        r.irq(Nanos(200));
        r.ack(Nanos(210));
        assert!(r.alarm(), "alarm is sticky");
        r.clear_alarm();
        assert!(!r.alarm());
        assert_eq!(
            (r.min(), r.max(), r.last(), r.num()),
            (Some(Nanos(10)), Some(Nanos(60)), Some(Nanos(10)), 3)
        );
        assert_eq!(r.samples(), &[Nanos(30), Nanos(60)]);
        assert_eq!(r.samples_dropped, 1);
        assert_eq!(r.mean(), Some(100.0 / 3.0));
        // sample std dev of 30, 60, 10: mean 33.33, var = (11.11+711.11+544.44)/2
        let sd = r.std_dev().unwrap();
        assert!((sd - (1900.0_f64 / 3.0).sqrt()).abs() < 1e-9, "{sd}");
    }

    #[test]
    fn histogram_stores_only_the_buckets_it_uses() {
        let mut h = Histogram::new();
        for _ in 0..1000 {
            h.record(5_000_000);
        }
        assert_eq!(h.len(), 1, "one bucket for one value");
        // far apart values: one counter each, not the range between them
        let mut far = Histogram::new();
        for v in [3, 5_000_000_000, 7_000, 3] {
            far.record(v);
        }
        assert_eq!(far.len(), 3);
        let b: Vec<u64> = far.buckets().map(|(_, _, c)| c).collect();
        assert_eq!(b, vec![2, 1, 1]);
        assert_eq!(far.quantile(0.5), Some(3));
        // 1 ms .. 2 ms: parts of two powers of two (buckets of 4 and 8 us)
        for v in (1_000_000..2_000_000).step_by(997) {
            h.record(v);
        }
        assert!(h.len() <= 3 * 128, "{} buckets", h.len());
        // the same values recorded in another order: an equal histogram
        let mut g = Histogram::new();
        let vals: Vec<u64> = (1_000_000..2_000_000).step_by(997).collect();
        for &v in vals.iter().rev() {
            g.record(v);
        }
        for _ in 0..1000 {
            g.record(5_000_000);
        }
        assert_eq!(g, h);
        assert_eq!(g.quantile(0.99), h.quantile(0.99));
        assert_eq!(h.quantile(1.0), Some(5_000_000));
        let q0 = h.quantile(0.0).unwrap_or(0);
        assert!((1_000_000..1_000_000 + 4_096).contains(&q0), "{q0}");
    }

    #[test]
    fn histogram_quantiles_within_one_bucket() {
        let mut h = Histogram::new();
        let vals: Vec<u64> = (0..10_000u64).map(|i| i * 997 % 1_000_003).collect();
        for &v in &vals {
            h.record(v);
        }
        let mut sorted = vals.clone();
        sorted.sort_unstable();
        for q in [0.01, 0.5, 0.9, 0.99, 1.0] {
            let exact = sorted[((q * 10_000f64).ceil() as usize).max(1) - 1];
            let got = h.quantile(q).unwrap();
            assert!(
                got >= exact && (got - exact) as f64 <= exact as f64 / 128.0 + 1.0,
                "q {q}: {got} vs {exact}"
            );
        }
        // a quantile never leaves [min, max]: every sample 100,000 ns (its
        // bucket ends at 100,351) gives 100,000 at every quantile
        let mut one = Histogram::new();
        for _ in 0..50 {
            one.record(100_000);
        }
        for q in [0.0, 0.5, 0.99, 1.0] {
            assert_eq!(one.quantile(q), Some(100_000));
        }
        // bucket layout is contiguous
        for i in 0..3000 {
            let (lo, w) = Histogram::bucket(i);
            let (lo2, _) = Histogram::bucket(i + 1);
            assert_eq!(lo + w, lo2, "bucket {i}");
            assert_eq!(Histogram::index(lo), i);
            assert_eq!(Histogram::index(lo + w - 1), i);
        }
    }

    /// The compact histogram (two cells inline, then one vector of cells)
    /// against a plain model: a sorted map of bucket counts. Same buckets,
    /// counts, quantiles (one pass or one at a time) for any sequence --
    /// including the moves from inline to heap and inserts before, between
    /// and after the stored buckets.
    #[test]
    fn histogram_matches_a_sorted_map() {
        use alloc::collections::BTreeMap;
        use proptest::prelude::*;
        use proptest::test_runner::{Config, TestRunner};
        let vals = prop_oneof![0u64..600, 0u64..5_000_000, any::<u64>()];
        let mut runner = TestRunner::new(Config::with_cases(400));
        runner
            .run(&proptest::collection::vec(vals, 0..40), |vs| {
                let mut h = Histogram::new();
                let mut model: BTreeMap<usize, u64> = BTreeMap::new();
                for &v in &vs {
                    h.record(v);
                    *model.entry(Histogram::index(v)).or_default() += 1;
                }
                let want: Vec<(u64, u64, u64)> = model
                    .iter()
                    .map(|(&i, &c)| {
                        let (lo, w) = Histogram::bucket(i);
                        (lo, w, c)
                    })
                    .collect();
                prop_assert_eq!(h.buckets().collect::<Vec<_>>(), want);
                prop_assert_eq!(h.len(), model.len());
                prop_assert_eq!(h.total(), vs.len() as u64);
                let qs = [0.0, 0.1, 0.5, 0.99, 1.0];
                let one_pass = h.quantiles(qs);
                let mut sorted = vs.clone();
                sorted.sort_unstable();
                for (k, &q) in qs.iter().enumerate() {
                    prop_assert_eq!(one_pass[k], h.quantile(q));
                    // the model: the bucket of the ceil(q n)-th smallest,
                    // its highest value, clamped to [min, max]
                    let got = one_pass[k];
                    let exp = (!sorted.is_empty()).then(|| {
                        let rank = (libm::ceil(q * sorted.len() as f64) as usize).max(1);
                        let (lo, w) = Histogram::bucket(Histogram::index(sorted[rank - 1]));
                        (lo + (w - 1)).clamp(sorted[0], sorted[sorted.len() - 1])
                    });
                    prop_assert_eq!(got, exp);
                }
                Ok(())
            })
            .unwrap();
    }

    /// `LatencyStats` alone gives exactly the recorder's statistics, and
    /// they are those of the values: count, extremes, the mean of the exact
    /// sum, the standard deviation of Eq. 4 and the same histogram.
    #[test]
    fn stats_alone_match_the_recorder_and_the_values() {
        use proptest::prelude::*;
        use proptest::test_runner::{Config, TestRunner};
        let vals = prop_oneof![0u64..300, 0u64..1_000_000, 0u64..1_000_000_000_000_000];
        TestRunner::new(Config::with_cases(256))
            .run(&proptest::collection::vec(vals, 0..60), |vs| {
                let mut st = LatencyStats::new();
                let mut r = LatencyRecorder::new(vs.len(), None);
                for &v in &vs {
                    st.record(Nanos(v));
                    r.record(Nanos(v));
                }
                prop_assert_eq!(st.num(), vs.len() as u64);
                prop_assert_eq!(st.min(), vs.iter().min().map(|&v| Nanos(v)));
                prop_assert_eq!(st.max(), vs.iter().max().map(|&v| Nanos(v)));
                let sum: u128 = vs.iter().map(|&v| u128::from(v)).sum();
                let mean = (!vs.is_empty()).then(|| sum as f64 / vs.len() as f64);
                prop_assert_eq!(st.mean(), mean);
                prop_assert_eq!(st.mean(), r.mean());
                prop_assert_eq!(
                    st.std_dev().map(f64::to_bits),
                    r.std_dev().map(f64::to_bits)
                );
                if vs.len() >= 2 {
                    let n = vs.len() as f64;
                    let m = sum as f64 / n;
                    let sq: u128 = vs.iter().map(|&v| u128::from(v) * u128::from(v)).sum();
                    let var = ((sq as f64 - n * m * m) / (n - 1.0)).max(0.0);
                    prop_assert_eq!(st.std_dev(), Some(libm::sqrt(var)));
                } else {
                    prop_assert_eq!(st.std_dev(), None);
                }
                prop_assert_eq!(st.histogram(), r.histogram());
                prop_assert_eq!((r.min(), r.max(), r.num()), (st.min(), st.max(), st.num()));
                prop_assert_eq!(r.samples().len(), vs.len());
                Ok(())
            })
            .unwrap();
    }

    /// The shortcuts of the statistics give exactly what the general
    /// operations give.
    #[test]
    fn exact_shortcuts() {
        for x in [
            0.0,
            -0.0,
            0.5,
            1.0,
            1.5,
            2.0 - f64::EPSILON,
            4_503_599_627_370_495.5,
            4_503_599_627_370_496.0,
            9.1e18,
            18_446_744_073_709_551_616.0,
            f64::NAN,
        ] {
            assert_eq!(ceil_rank(x), libm::ceil(x) as u64, "{x}");
        }
        for k in 0..10_000u64 {
            let x = (k as f64) * 0.37 + (k % 7) as f64 / 8.0;
            assert_eq!(ceil_rank(x), libm::ceil(x) as u64, "{x}");
        }
        for x in [
            0u128,
            1,
            (1 << 53) + 1,
            i64::MAX as u128,
            i64::MAX as u128 + 1,
            u128::MAX,
        ] {
            assert_eq!(u128_to_f64(x).to_bits(), (x as f64).to_bits(), "{x}");
        }
        // a bucket's count carries from its low half into its high half
        let mut c = Cell::new(7);
        c.lo = u32::MAX;
        c.add_one();
        assert_eq!((c.count(), c.idx), (1 << 32, 7));
        c.add_one();
        assert_eq!(c.count(), (1 << 32) + 1);
    }

    /// The count, minimum and maximum the recorder reports are those of
    /// its samples (they live in the histogram), from none to many.
    #[test]
    fn recorder_statistics_follow_the_samples() {
        let mut r = LatencyRecorder::new(4, None);
        assert_eq!((r.num(), r.min(), r.max(), r.last()), (0, None, None, None));
        assert_eq!((r.mean(), r.std_dev()), (None, None));
        let vals = [700u64, 3, 90_000, 3, 5_000_000_000, 41];
        for (k, &v) in vals.iter().enumerate() {
            r.record(Nanos(v));
            let seen = &vals[..=k];
            assert_eq!(r.num(), seen.len() as u64);
            assert_eq!(r.min(), seen.iter().min().map(|&m| Nanos(m)));
            assert_eq!(r.max(), seen.iter().max().map(|&m| Nanos(m)));
            assert_eq!(r.last(), Some(Nanos(v)));
        }
        let mean = vals.iter().map(|&v| v as f64).sum::<f64>() / 6.0;
        assert!((r.mean().unwrap() - mean).abs() < 1e-6 * mean);
        assert_eq!(r.samples().len(), 4);
        assert_eq!(r.samples_dropped, 2);
    }
}
