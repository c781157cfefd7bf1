//! vINT (VINT §V) on the real VMM: pseudo-VCPU parameters and the
//! injection counter.
//!
//! What it is: a managed virtual interrupt has a pseudo-VCPU, a budgeted
//! irqlab-rt server (sporadic or deferrable) at a rank above every regular
//! VCPU (§V-A), whose thread runs the original VCPU's guest context from
//! the injection until the guest reports the end of handling (`PORT_DONE`),
//! charged to the pseudo-VCPU (see `vcpu`). Injections are limited by a
//! counter (§V-B) of at most `ceil(T_p / T_i)` credits: under the
//! deferrable rule it refills completely at each period boundary of the
//! pseudo-VCPU, under the sporadic rule each credit used comes back one
//! period after its use. An event without a credit is held by the host
//! (counted as pending) and injected when a credit returns.
//!
//! Design principle: the counter is a pure state machine fed `now`, like
//! the core's servers, and tested by hand-checked sequences.

use std::collections::VecDeque;

use irqlab_core::Nanos;

/// Replenishment rule of a pseudo-VCPU (budget and counter), defined in
/// the core.
pub use irqlab_core::vint::Replenish;

/// A pseudo-VCPU for one managed virtual interrupt.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct PseudoVcpu {
    pub budget: Nanos,
    pub period: Nanos,
    /// Minimum inter-arrival time `T_i` of the virtual interrupt.
    pub min_interarrival: Nanos,
    pub policy: Replenish,
    /// Rank of the server (smaller is more urgent; ranks below every
    /// regular VCPU's period put it above them, VINT §V-A).
    pub rank: u64,
}

impl PseudoVcpu {
    /// VINT Eq. 1: `C_p = ceil(T_p / T_i) * C_i` (every virtual interrupt
    /// of the VCPU managed).
    pub fn eq1_budget(c_i: Nanos, t_i: Nanos, t_p: Nanos) -> Nanos {
        Nanos(irqlab_core::vint::pseudo_budget(c_i.0, t_i.0, t_p.0, 0))
    }
    /// Most injections per pseudo-VCPU period (§V-B): `ceil(T_p / T_i)`.
    pub fn counter_max(&self) -> u64 {
        self.period.0.div_ceil(self.min_interarrival.0.max(1))
    }
}

/// The injection counter of §V-B.
#[derive(Clone, Debug)]
pub struct Counter {
    max: u64,
    credits: u64,
    policy: Replenish,
    period: Nanos,
    /// Deferrable: the next period boundary.
    next_boundary: Nanos,
    /// Sporadic: when each used credit comes back.
    returns: VecDeque<Nanos>,
}

impl Counter {
    pub fn new(max: u64, policy: Replenish, period: Nanos, now: Nanos) -> Counter {
        Counter {
            max,
            credits: max,
            policy,
            period,
            next_boundary: now + period,
            returns: VecDeque::new(),
        }
    }

    pub fn credits(&self) -> u64 {
        self.credits
    }

    fn refresh(&mut self, now: Nanos) {
        match self.policy {
            Replenish::Deferrable => {
                if now >= self.next_boundary {
                    let k = (now - self.next_boundary).0 / self.period.0 + 1;
                    self.next_boundary += Nanos(k * self.period.0);
                    self.credits = self.max;
                }
            }
            Replenish::Sporadic => {
                while self.returns.front().is_some_and(|&t| t <= now) {
                    self.returns.pop_front();
                    self.credits = (self.credits + 1).min(self.max);
                }
            }
        }
    }

    /// Use a credit at `now` if one is left.
    pub fn take(&mut self, now: Nanos) -> bool {
        self.refresh(now);
        if self.credits == 0 {
            return false;
        }
        self.credits -= 1;
        if self.policy == Replenish::Sporadic {
            self.returns.push_back(now + self.period);
        }
        true
    }

    /// When a credit comes back next, if one is missing.
    pub fn next_return(&self) -> Option<Nanos> {
        if self.credits == self.max {
            return None;
        }
        match self.policy {
            Replenish::Deferrable => Some(self.next_boundary),
            Replenish::Sporadic => self.returns.front().copied(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn eq1_by_hand() {
        // T_p = 10 ms, T_i = 3 ms: 4 instances of 250 us.
        let c = PseudoVcpu::eq1_budget(Nanos::from_us(250), Nanos::from_ms(3), Nanos::from_ms(10));
        assert_eq!(c, Nanos::from_ms(1));
        let p = PseudoVcpu {
            budget: c,
            period: Nanos::from_ms(10),
            min_interarrival: Nanos::from_ms(3),
            policy: Replenish::Sporadic,
            rank: 1,
        };
        assert_eq!(p.counter_max(), 4);
    }

    #[test]
    fn deferrable_counter_refills_at_boundaries() {
        let ms = Nanos::from_ms;
        let mut c = Counter::new(2, Replenish::Deferrable, ms(10), ms(0));
        assert!(c.take(ms(1)) && c.take(ms(2)));
        assert!(!c.take(ms(3)), "two per period");
        assert_eq!(c.next_return(), Some(ms(10)));
        assert!(c.take(ms(10)), "full at the boundary");
        assert!(c.take(ms(19)));
        assert!(!c.take(ms(19)));
        // Skipping periods: one refill, boundary realigned.
        assert!(c.take(ms(45)) && c.take(ms(46)) && !c.take(ms(49)));
        assert_eq!(c.next_return(), Some(ms(50)));
    }

    #[test]
    fn sporadic_counter_returns_each_credit_one_period_after_use() {
        let ms = Nanos::from_ms;
        let mut c = Counter::new(2, Replenish::Sporadic, ms(10), ms(0));
        assert!(c.take(ms(1)) && c.take(ms(4)));
        assert!(!c.take(ms(10)));
        assert_eq!(c.next_return(), Some(ms(11)));
        assert!(c.take(ms(11)), "the first credit back at 1 + 10");
        assert!(!c.take(ms(13)));
        assert!(c.take(ms(14)));
        assert_eq!(c.credits(), 0);
        assert_eq!(c.next_return(), Some(ms(21)));
    }
}
