//! Summary statistics of nanosecond samples, reported in microseconds.

use serde_json::{json, Map, Value};

pub struct Summary {
    pub mean: f64,
    pub std: f64,
    pub min: i64,
    pub p50: i64,
    pub p99: i64,
    pub max: i64,
}

/// Nearest-rank percentile of sorted samples.
fn pct(sorted: &[i64], p: f64) -> i64 {
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

pub fn summarize(samples: &[i64]) -> Option<Summary> {
    if samples.is_empty() {
        return None;
    }
    let mut s = samples.to_vec();
    s.sort_unstable();
    let n = s.len();
    let mean = s.iter().map(|&x| x as f64).sum::<f64>() / n as f64;
    // Sample standard deviation (n - 1), LATENCY-IP Eq. 4.
    let var = if n > 1 {
        s.iter().map(|&x| (x as f64 - mean).powi(2)).sum::<f64>() / (n - 1) as f64
    } else {
        0.0
    };
    Some(Summary {
        mean,
        std: var.sqrt(),
        min: s[0],
        p50: pct(&s, 50.0),
        p99: pct(&s, 99.0),
        max: s[n - 1],
    })
}

pub fn us(ns: f64) -> Value {
    json!((ns / 10.0).round() / 100.0)
}

/// `{prefix}_samples, _mean_us, _std_us, _min_us, _p50_us, _p99_us, _max_us`
/// (nulls when there are no samples).
pub fn insert(out: &mut Map<String, Value>, prefix: &str, samples: &[i64]) {
    let s = summarize(samples);
    out.insert(format!("{prefix}_samples"), json!(samples.len()));
    let fields: [(&str, Option<f64>); 6] = match &s {
        Some(s) => [
            ("mean", Some(s.mean)),
            ("std", Some(s.std)),
            ("min", Some(s.min as f64)),
            ("p50", Some(s.p50 as f64)),
            ("p99", Some(s.p99 as f64)),
            ("max", Some(s.max as f64)),
        ],
        None => [
            ("mean", None),
            ("std", None),
            ("min", None),
            ("p50", None),
            ("p99", None),
            ("max", None),
        ],
    };
    for (k, v) in fields {
        out.insert(format!("{prefix}_{k}_us"), v.map(us).unwrap_or(Value::Null));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank() {
        let s: Vec<i64> = (1..=100).collect();
        let r = summarize(&s).unwrap();
        assert_eq!((r.p50, r.p99, r.max, r.min), (50, 99, 100, 1));
        assert!((r.mean - 50.5).abs() < 1e-9);
        let one = summarize(&[7]).unwrap();
        assert_eq!((one.p50, one.p99, one.std), (7, 7, 0.0));
    }
}
