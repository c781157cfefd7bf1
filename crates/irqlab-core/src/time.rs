//! Time and utilization newtypes.
//!
//! Design principles (docs/architecture.md): time is integer nanoseconds everywhere;
//! utilization is an exact rational so that eligibility arithmetic
//! (QUEST-VCPU Alg. 7 line 5, `e += used / U`) is exact and deterministic.
//! Floats appear only when a value is turned into a report.

use core::fmt;
use core::ops::{Add, AddAssign, Sub, SubAssign};

use crate::error::CoreError;

/// A point in time or a duration, in integer nanoseconds.
#[derive(Copy, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Nanos(pub u64);

impl Nanos {
    pub const ZERO: Nanos = Nanos(0);
    pub const MAX: Nanos = Nanos(u64::MAX);

    pub const fn from_ns(ns: u64) -> Nanos {
        Nanos(ns)
    }
    pub const fn from_us(us: u64) -> Nanos {
        Nanos(us.saturating_mul(1_000))
    }
    pub const fn from_ms(ms: u64) -> Nanos {
        Nanos(ms.saturating_mul(1_000_000))
    }
    pub const fn from_secs(s: u64) -> Nanos {
        Nanos(s.saturating_mul(1_000_000_000))
    }
    pub const fn as_ns(self) -> u64 {
        self.0
    }
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 / 1e9
    }
    pub fn as_us_f64(self) -> f64 {
        self.0 as f64 / 1e3
    }
    pub const fn is_zero(self) -> bool {
        self.0 == 0
    }
    pub const fn saturating_sub(self, rhs: Nanos) -> Nanos {
        Nanos(self.0.saturating_sub(rhs.0))
    }
    pub const fn saturating_add(self, rhs: Nanos) -> Nanos {
        Nanos(self.0.saturating_add(rhs.0))
    }
    pub const fn checked_add(self, rhs: Nanos) -> Option<Nanos> {
        match self.0.checked_add(rhs.0) {
            Some(v) => Some(Nanos(v)),
            None => None,
        }
    }
    pub const fn saturating_mul(self, k: u64) -> Nanos {
        Nanos(self.0.saturating_mul(k))
    }
    pub fn min(self, other: Nanos) -> Nanos {
        if self <= other {
            self
        } else {
            other
        }
    }
    pub fn max(self, other: Nanos) -> Nanos {
        if self >= other {
            self
        } else {
            other
        }
    }
}

impl Add for Nanos {
    type Output = Nanos;
    /// Saturating: time never wraps around.
    fn add(self, rhs: Nanos) -> Nanos {
        self.saturating_add(rhs)
    }
}
impl AddAssign for Nanos {
    fn add_assign(&mut self, rhs: Nanos) {
        *self = *self + rhs;
    }
}
impl Sub for Nanos {
    type Output = Nanos;
    /// Saturating at zero: a duration is never negative.
    fn sub(self, rhs: Nanos) -> Nanos {
        self.saturating_sub(rhs)
    }
}
impl SubAssign for Nanos {
    fn sub_assign(&mut self, rhs: Nanos) {
        *self = *self - rhs;
    }
}

impl fmt::Debug for Nanos {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl fmt::Display for Nanos {
    /// The largest unit that shows the value exactly: `2ms`, `1500us`, `7ns`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ns = self.0;
        if ns == 0 {
            write!(f, "0")
        } else if ns.is_multiple_of(1_000_000_000) {
            write!(f, "{}s", ns / 1_000_000_000)
        } else if ns.is_multiple_of(1_000_000) {
            write!(f, "{}ms", ns / 1_000_000)
        } else if ns.is_multiple_of(1_000) {
            write!(f, "{}us", ns / 1_000)
        } else {
            write!(f, "{}ns", ns)
        }
    }
}

/// An exact, reduced, non-negative rational `num / den` (den > 0).
///
/// Used for server utilizations (`C / T`, the PIBS `U`) and for utilization
/// sums in the tests of QUEST-VCPU Eq. 1.
#[derive(Copy, Clone, PartialEq, Eq, Hash)]
pub struct Utilization {
    num: u64,
    den: u64,
}

const fn gcd(mut a: u64, mut b: u64) -> u64 {
    while b != 0 {
        let t = a % b;
        a = b;
        b = t;
    }
    a
}

impl Utilization {
    pub const ZERO: Utilization = Utilization { num: 0, den: 1 };
    pub const ONE: Utilization = Utilization { num: 1, den: 1 };

    /// `num / den`, reduced. Errors when `den == 0`.
    pub fn new(num: u64, den: u64) -> Result<Utilization, CoreError> {
        if den == 0 {
            return Err(CoreError::ZeroDenominator);
        }
        let g = gcd(num, den).max(1);
        Ok(Utilization {
            num: num / g,
            den: den / g,
        })
    }

    /// `budget / period`. Errors when the period is zero.
    pub fn of(budget: Nanos, period: Nanos) -> Result<Utilization, CoreError> {
        if period.is_zero() {
            return Err(CoreError::ZeroPeriod);
        }
        Utilization::new(budget.0, period.0)
    }

    /// From a percentage with up to 3 decimals, e.g. `1.0` -> 1/100.
    pub fn from_percent_milli(pct_milli: u64) -> Utilization {
        // pct_milli thousandths of a percent: value = pct_milli / 100_000
        match Utilization::new(pct_milli, 100_000) {
            Ok(u) => u,
            Err(_) => Utilization::ZERO,
        }
    }

    pub const fn num(self) -> u64 {
        self.num
    }
    pub const fn den(self) -> u64 {
        self.den
    }
    pub fn is_zero(self) -> bool {
        self.num == 0
    }
    pub fn as_f64(self) -> f64 {
        self.num as f64 / self.den as f64
    }

    /// `floor(t * U)`: e.g. `C_max = T * U` (QUEST-VCPU §2.1).
    pub fn mul_floor(self, t: Nanos) -> Nanos {
        let v = (t.0 as u128 * self.num as u128) / self.den as u128;
        Nanos(v.min(u64::MAX as u128) as u64)
    }

    /// `ceil(t / U)`: e.g. the eligibility advance `used / U` of QUEST-VCPU
    /// Alg. 7 line 5. Rounded up so that a server is never eligible early.
    /// `U = 0` gives `Nanos::MAX` (never eligible again).
    pub fn div_ceil(self, t: Nanos) -> Nanos {
        if self.num == 0 {
            return if t.is_zero() { Nanos::ZERO } else { Nanos::MAX };
        }
        let n = t.0 as u128 * self.den as u128;
        let d = self.num as u128;
        let v = n.div_ceil(d);
        Nanos(v.min(u64::MAX as u128) as u64)
    }

    /// Exact sum (errors on overflow of the reduced terms).
    pub fn checked_add(self, o: Utilization) -> Option<Utilization> {
        let den = (self.den as u128).checked_mul(o.den as u128)?;
        let num = (self.num as u128) * (o.den as u128) + (o.num as u128) * (self.den as u128);
        let g = gcd128(num, den).max(1);
        let (num, den) = (num / g, den / g);
        if num > u64::MAX as u128 || den > u64::MAX as u128 {
            return None;
        }
        Some(Utilization {
            num: num as u64,
            den: den as u64,
        })
    }
}

const fn gcd128(mut a: u128, mut b: u128) -> u128 {
    while b != 0 {
        let t = a % b;
        a = b;
        b = t;
    }
    a
}

impl PartialOrd for Utilization {
    fn partial_cmp(&self, other: &Self) -> Option<core::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Utilization {
    fn cmp(&self, other: &Self) -> core::cmp::Ordering {
        (self.num as u128 * other.den as u128).cmp(&(other.num as u128 * self.den as u128))
    }
}

impl fmt::Debug for Utilization {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.num, self.den)
    }
}
impl fmt::Display for Utilization {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}%", self.as_f64() * 100.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_picks_exact_unit() {
        assert_eq!(Nanos::from_ms(2).to_string(), "2ms");
        assert_eq!(Nanos::from_us(1500).to_string(), "1500us");
        assert_eq!(Nanos(7).to_string(), "7ns");
        assert_eq!(Nanos::from_secs(3).to_string(), "3s");
    }

    #[test]
    fn utilization_is_reduced_and_exact() {
        let u = Utilization::of(Nanos(2), Nanos(4)).unwrap();
        assert_eq!((u.num(), u.den()), (1, 2));
        assert_eq!(u.mul_floor(Nanos(4)), Nanos(2));
        assert_eq!(u.div_ceil(Nanos(1)), Nanos(2));
        let third = Utilization::new(1, 3).unwrap();
        assert_eq!(third.div_ceil(Nanos(1)), Nanos(3));
        assert_eq!(third.mul_floor(Nanos(10)), Nanos(3));
        assert!(Utilization::new(1, 0).is_err());
        assert_eq!(
            third.checked_add(third).unwrap(),
            Utilization::new(2, 3).unwrap()
        );
        assert!(Utilization::new(1, 3).unwrap() < Utilization::new(1, 2).unwrap());
    }
}
