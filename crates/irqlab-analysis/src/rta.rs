//! Fixed-priority response-time analysis with release jitter (Joseph &
//! Pandya; Audsley et al.), the fixed-point iteration every VINT equation
//! (Eq. 3-8) is an instance of.
//!
//! Design principles: integer nanoseconds, exact ceilings; the iteration
//! stops as soon as the response exceeds the caller's `limit` (the
//! deadline), so a failing test costs no more than a passing one.

/// A source of interference: `ceil((w + jitter) / period) * cost`.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Interferer {
    pub cost: u64,
    pub period: u64,
    pub jitter: u64,
}

impl Interferer {
    pub fn new(cost: u64, period: u64, jitter: u64) -> Interferer {
        Interferer {
            cost,
            period,
            jitter,
        }
    }
    /// Interference in a window of length `w`.
    pub fn demand(&self, w: u64) -> u64 {
        if self.period == 0 {
            return u64::MAX;
        }
        (w + self.jitter)
            .div_ceil(self.period)
            .saturating_mul(self.cost)
    }
}

/// Smallest `w >= c` with `w = c + sum demand(w)`; `None` when it exceeds
/// `limit` (unschedulable within the limit).
pub fn response_time(c: u64, interferers: &[Interferer], limit: u64) -> Option<u64> {
    let mut w = c;
    loop {
        if w > limit {
            return None;
        }
        let next = interferers
            .iter()
            .fold(c, |acc, i| acc.saturating_add(i.demand(w)));
        if next == w {
            return Some(w);
        }
        w = next;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Textbook example (Burns & Wellings): tasks (C, T) = (3, 7), (3, 12),
    /// (5, 20) under RM. R1 = 3; R2 = 3 + ceil(6/7)3 = 6; R3: 5 -> 5 + 3 + 3
    /// = 11 -> 5 + 2*3 + 3 = 14 -> 5 + 2*3 + 2*3 = 17 -> 5 + 3*3 + 2*3 = 20
    /// -> 5 + 3*3 + 2*3 = 20.
    #[test]
    fn textbook_rm() {
        let t1 = Interferer::new(3, 7, 0);
        let t2 = Interferer::new(3, 12, 0);
        assert_eq!(response_time(3, &[], 7), Some(3));
        assert_eq!(response_time(3, &[t1], 12), Some(6));
        assert_eq!(response_time(5, &[t1, t2], 20), Some(20));
        assert_eq!(response_time(5, &[t1, t2], 19), None);
    }

    /// Release jitter: C = 4 below (C 2, T 10). Without jitter: 4 + 2 = 6.
    /// With J = 7: w = 4 -> ceil(11/10) = 2 hits -> 8; ceil(15/10) = 2 -> 8.
    #[test]
    fn jitter() {
        assert_eq!(response_time(4, &[Interferer::new(2, 10, 0)], 100), Some(6));
        assert_eq!(response_time(4, &[Interferer::new(2, 10, 7)], 100), Some(8));
    }
}
