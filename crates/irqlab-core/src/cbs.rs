//! Constant bandwidth server with Linux SCHED_DEADLINE semantics (Abeni &
//! Buttazzo; the Linux baseline of USB-DIFFSERV §IV-B).
//!
//! Design principles: relative deadline = period; the priority key is the
//! absolute deadline (EDF, deadline class above every fixed-priority
//! server); the CBS wake-up rule (a waking server whose remaining runtime
//! would exceed its bandwidth before the current deadline gets a fresh
//! deadline `now + P` and a full runtime); hard throttling when the runtime
//! is exhausted, until the current deadline, when the deadline is postponed
//! by `P` and the runtime refilled (overruns are carried, as Linux does).

use crate::error::CoreError;
use crate::server::{check_budget_period, Class, ServerPolicy, UnblockCtx};
use crate::time::Nanos;

#[derive(Clone, Debug)]
pub struct Cbs {
    runtime_q: Nanos,
    period: Nanos,
    /// Remaining runtime (negative after an overrun).
    remaining: i128,
    /// Absolute deadline.
    deadline: Nanos,
    throttled: bool,
}

impl Cbs {
    pub fn new(runtime: Nanos, period: Nanos, now: Nanos) -> Result<Cbs, CoreError> {
        check_budget_period(runtime, period)?;
        Ok(Cbs {
            runtime_q: runtime,
            period,
            remaining: runtime.as_ns() as i128,
            deadline: now + period,
            throttled: false,
        })
    }
    pub fn runtime(&self) -> Nanos {
        self.runtime_q
    }
    pub fn period(&self) -> Nanos {
        self.period
    }
    pub fn deadline(&self) -> Nanos {
        self.deadline
    }
    pub fn is_throttled(&self) -> bool {
        self.throttled
    }
    pub fn remaining(&self) -> i128 {
        self.remaining
    }
}

impl ServerPolicy for Cbs {
    fn end_timeslice(&mut self, now: Nanos, used: Nanos, _runnable: bool) {
        self.remaining -= used.as_ns() as i128;
        if self.remaining <= 0 {
            // Hard throttling until the current deadline (= next period).
            self.throttled = true;
        }
        self.update_budget(now);
    }

    fn update_budget(&mut self, now: Nanos) {
        if self.throttled && now >= self.deadline {
            // Replenish: postpone the deadline one period per refill until
            // the runtime is positive -- the n refills at once (an overrun
            // of hours is one step, not one loop turn per period).
            if self.remaining <= 0 {
                let q = (self.runtime_q.as_ns() as i128).max(1);
                let n = (-self.remaining) / q + 1;
                self.deadline = self.deadline.saturating_add(
                    self.period
                        .saturating_mul(u64::try_from(n).unwrap_or(u64::MAX)),
                );
                self.remaining += n * q;
            }
            self.throttled = false;
            if self.deadline <= now {
                self.deadline = now + self.period;
                self.remaining = self.runtime_q.as_ns() as i128;
            }
        }
    }

    fn next_event(&self, now: Nanos) -> Option<Nanos> {
        (self.throttled && self.deadline > now).then_some(self.deadline)
    }

    /// The CBS wake-up rule: keep `(q, d)` only if `q / (d - now) <= Q / P`.
    fn unblock(&mut self, now: Nanos, ctx: UnblockCtx) {
        if ctx.was_active {
            return;
        }
        self.update_budget(now);
        if self.throttled {
            return;
        }
        let overflow = self.remaining.max(0) * self.period.as_ns() as i128
            > (self.deadline.as_ns() as i128 - now.as_ns() as i128)
                * self.runtime_q.as_ns() as i128;
        if self.deadline <= now || overflow {
            self.deadline = now + self.period;
            self.remaining = self.runtime_q.as_ns() as i128;
        }
    }

    fn budget(&self) -> Nanos {
        if self.throttled {
            Nanos::ZERO
        } else {
            Nanos(self.remaining.clamp(0, u64::MAX as i128) as u64)
        }
    }

    fn key(&self) -> (Class, u64) {
        (Class::Deadline, self.deadline.as_ns())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx() -> UnblockCtx {
        UnblockCtx::default()
    }

    /// Q = 2, P = 10, created at 0 (d = 10). Exhausting the runtime at 2
    /// throttles until 10; then d = 20 and q = 2.
    #[test]
    fn throttles_and_postpones_deadline() {
        let mut c = Cbs::new(Nanos(2), Nanos(10), Nanos(0)).unwrap();
        c.unblock(Nanos(0), ctx());
        assert_eq!(c.key(), (Class::Deadline, 10));
        c.end_timeslice(Nanos(2), Nanos(2), true);
        assert!(c.is_throttled());
        assert_eq!(c.budget(), Nanos(0));
        assert_eq!(c.next_event(Nanos(2)), Some(Nanos(10)));
        c.update_budget(Nanos(10));
        assert!(!c.is_throttled());
        assert_eq!(c.deadline(), Nanos(20));
        assert_eq!(c.budget(), Nanos(2));
    }

    /// Overrun of 1 (ran 3 with runtime 2): after the refill at 10 the
    /// runtime is 2 - 1 = 1 with deadline 20.
    #[test]
    fn overrun_is_carried() {
        let mut c = Cbs::new(Nanos(2), Nanos(10), Nanos(0)).unwrap();
        c.end_timeslice(Nanos(3), Nanos(3), true);
        c.update_budget(Nanos(10));
        assert_eq!(c.deadline(), Nanos(20));
        assert_eq!(c.budget(), Nanos(1));
    }

    /// An overrun of many periods is carried in one step: Q = 2, P = 10,
    /// charged 25 by 25 -> q = -23; at the refill 12 periods are needed
    /// (d = 10 + 120, q = -23 + 24 = 1). Charged 10^15 at once (5 * 10^14
    /// loop turns before): d = 10 + 10 * 5 * 10^14, q = 2.
    #[test]
    fn a_long_overrun_is_refilled_at_once() {
        let mut c = Cbs::new(Nanos(2), Nanos(10), Nanos(0)).unwrap();
        c.end_timeslice(Nanos(25), Nanos(25), true);
        assert_eq!((c.deadline(), c.budget()), (Nanos(130), Nanos(1)));
        let mut c = Cbs::new(Nanos(2), Nanos(10), Nanos(0)).unwrap();
        let t = Nanos(1_000_000_000_000_000);
        c.end_timeslice(t, t, true);
        assert_eq!(
            (c.deadline(), c.budget()),
            (Nanos(5_000_000_000_000_010), Nanos(2))
        );
        let mut c = Cbs::new(Nanos(2), Nanos(10), Nanos(0)).unwrap();
        c.end_timeslice(Nanos::MAX, Nanos::MAX, true);
        assert_eq!(c.deadline(), Nanos::MAX);
    }

    /// Wake-up rule: Q = 2, P = 10. Run 1 (q = 1, d = 10) and block. Wake at
    /// 5: 1/(10-5) = 0.2 <= 0.2 -> keep (q, d). Wake at 9.5 instead:
    /// 1/0.5 > 0.2 -> fresh d = 19.5, q = 2.
    #[test]
    fn wakeup_rule() {
        let mut c = Cbs::new(Nanos(20), Nanos(100), Nanos(0)).unwrap();
        c.end_timeslice(Nanos(10), Nanos(10), false);
        let mut keep = c.clone();
        keep.unblock(Nanos(50), ctx());
        assert_eq!((keep.deadline(), keep.budget()), (Nanos(100), Nanos(10)));
        c.unblock(Nanos(95), ctx());
        assert_eq!((c.deadline(), c.budget()), (Nanos(195), Nanos(20)));
    }
}
