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

use alloc::vec::Vec;

use crate::time::Nanos;

/// Sub-bucket bits of the histogram: relative bucket width below 2^-(B-1)
/// (under 0.8 % for B = 8).
const B: u32 = 8;
const LIN: u64 = 1 << B;
const HALF: u64 = 1 << (B - 1);

/// Log-linear histogram of `u64` values (HDR-style): exact below 2^B, then
/// 2^(B-1) buckets per power of two. Only the buckets used are stored, as
/// two sorted columns (`idx[k]` is a bucket index, `counts[k]` its count;
/// 12 bytes per used bucket), so a recorder costs memory in proportion to
/// the number of distinct buckets its values fall in -- not to their
/// magnitude nor to their spread: a task whose responses fall in two far
/// apart buckets keeps two counters, not the range between them.
#[derive(Clone, Debug, Default)]
pub struct Histogram {
    idx: Vec<u32>,
    counts: Vec<u64>,
    total: u64,
    /// Smallest and largest recorded values (quantiles are clamped to them).
    min: u64,
    max: u64,
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
        // values mostly repeat the largest bucket so far: check it first
        match self.idx.last() {
            Some(&l) if l == i => {
                if let Some(c) = self.counts.last_mut() {
                    *c += 1;
                }
            }
            Some(&l) if l < i => {
                self.idx.push(i);
                self.counts.push(1);
            }
            _ => match self.idx.binary_search(&i) {
                Ok(k) => self.counts[k] += 1,
                Err(k) => {
                    self.idx.insert(k, i);
                    self.counts.insert(k, 1);
                }
            },
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
        if self.total == 0 {
            return None;
        }
        let rank = (libm::ceil(q.clamp(0.0, 1.0) * self.total as f64) as u64).max(1);
        let mut seen = 0;
        for (&i, &c) in self.idx.iter().zip(&self.counts) {
            seen += c;
            if seen >= rank {
                let (lo, w) = Histogram::bucket(i as usize);
                return Some((lo + (w - 1)).clamp(self.min, self.max));
            }
        }
        None
    }

    /// Non-empty buckets as `(lowest value, width, count)`.
    pub fn buckets(&self) -> impl Iterator<Item = (u64, u64, u64)> + '_ {
        self.idx.iter().zip(&self.counts).map(|(&i, &c)| {
            let (lo, w) = Histogram::bucket(i as usize);
            (lo, w, c)
        })
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

/// Interrupt-latency recorder (LATENCY-IP §4).
#[derive(Clone, Debug)]
pub struct LatencyRecorder {
    capacity: usize,
    alarm_lat: Option<Nanos>,
    pending_irq: Option<Nanos>,
    last: Option<Nanos>,
    min: Option<Nanos>,
    max: Option<Nanos>,
    num: u64,
    sum: u128,
    sum_sq: u128,
    alarm: bool,
    samples: Vec<Nanos>,
    histogram: Histogram,
    pub irq_overruns: u64,
    pub spurious_acks: u64,
    pub samples_dropped: u64,
}

impl LatencyRecorder {
    /// Keep up to `capacity` samples (the IP's RAM holds 512).
    pub fn new(capacity: usize, alarm_lat: Option<Nanos>) -> LatencyRecorder {
        LatencyRecorder {
            capacity,
            alarm_lat,
            pending_irq: None,
            last: None,
            min: None,
            max: None,
            num: 0,
            sum: 0,
            sum_sq: 0,
            alarm: false,
            samples: Vec::new(),
            histogram: Histogram::new(),
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
        self.last = Some(lat);
        self.min = Some(self.min.map_or(lat, |m| m.min(lat)));
        self.max = Some(self.max.map_or(lat, |m| m.max(lat)));
        self.num += 1;
        let v = lat.as_ns() as u128;
        self.sum += v;
        self.sum_sq += v * v;
        if self.alarm_lat.is_some_and(|a| lat > a) {
            self.alarm = true;
        }
        if self.samples.len() < self.capacity {
            self.samples.push(lat);
        } else {
            self.samples_dropped += 1;
        }
        self.histogram.record(lat.as_ns());
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
        self.last
    }
    pub fn min(&self) -> Option<Nanos> {
        self.min
    }
    pub fn max(&self) -> Option<Nanos> {
        self.max
    }
    pub fn num(&self) -> u64 {
        self.num
    }
    pub fn samples(&self) -> &[Nanos] {
        &self.samples
    }
    pub fn histogram(&self) -> &Histogram {
        &self.histogram
    }
    /// Mean of all recorded latencies, in ns.
    pub fn mean(&self) -> Option<f64> {
        (self.num > 0).then(|| self.sum as f64 / self.num as f64)
    }
    /// Sample standard deviation (LATENCY-IP Eq. 4, divisor n - 1).
    pub fn std_dev(&self) -> Option<f64> {
        if self.num < 2 {
            return None;
        }
        let n = self.num as f64;
        let mean = self.sum as f64 / n;
        let var = (self.sum_sq as f64 - n * mean * mean) / (n - 1.0);
        Some(libm::sqrt(var.max(0.0)))
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
        assert_eq!(h.counts.len(), 1, "one bucket for one value");
        // far apart values: one counter each, not the range between them
        let mut far = Histogram::new();
        for v in [3, 5_000_000_000, 7_000, 3] {
            far.record(v);
        }
        assert_eq!(far.idx.len(), 3);
        let b: Vec<u64> = far.buckets().map(|(_, _, c)| c).collect();
        assert_eq!(b, vec![2, 1, 1]);
        assert_eq!(far.quantile(0.5), Some(3));
        // 1 ms .. 2 ms: parts of two powers of two (buckets of 4 and 8 us)
        for v in (1_000_000..2_000_000).step_by(997) {
            h.record(v);
        }
        assert!(h.counts.len() <= 3 * 128, "{} buckets", h.counts.len());
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
}
