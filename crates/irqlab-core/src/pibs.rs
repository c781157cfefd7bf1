//! PIBS: the priority-inheritance bandwidth-preserving server of the I/O
//! VCPUs (QUEST-VCPU Alg. 7-10).
//!
//! Design principles:
//! * One replenishment `V_r`, an eligibility time `V_e` advanced by
//!   `ceil(V_u / V_U)` (exact rational arithmetic, rounded up at each
//!   advance so the server is never eligible early). The rounding is not
//!   carried: after `k` advances since `V_e` last caught up with the clock,
//!   `V_e` lies less than `k` ns after the exact rational sum (and never
//!   before it), so an I/O VCPU gets slightly less than `U`, never more.
//!   Carrying the remainder (exact to the nanosecond) was tried: it breaks
//!   the integer `(2 - U) U W` window bound of QUEST-VCPU Eq. 3 by 1 ns
//!   (`tests/properties.rs`, `pibs_alone_bounds`), so the rounding stays.
//!   `C_max = V_T * V_U` with `V_T` inherited from the Main VCPU being
//!   served.
//! * Inheritance mode is explicit: `Paper` is Alg. 10 (keep the highest
//!   inherited priority until the server blocks); `Strict` is the "stricter
//!   approach" of QUEST-VCPU §2.1 -- when service for one Main VCPU ends
//!   (`service_done`), drop to the next-highest waiting Main VCPU's period.

use alloc::collections::BTreeMap;

use crate::error::CoreError;
use crate::server::{Class, ServerPolicy, UnblockCtx};
use crate::time::{Nanos, Utilization};

/// How an I/O VCPU inherits the period of the Main VCPUs it serves.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Default)]
pub enum Inherit {
    /// QUEST-VCPU Alg. 10.
    #[default]
    Paper,
    /// Drop to the next-highest waiter when service for one Main VCPU ends.
    Strict,
}

#[derive(Clone, Debug)]
pub struct Pibs {
    utilization: Utilization,
    inherit: Inherit,
    /// `V_T`: inherited period (`None` before the first request: lowest
    /// priority, no budget).
    period: Option<Nanos>,
    /// `V_b`.
    budget: Nanos,
    /// `V_u`.
    usage: Nanos,
    /// `V_e`.
    eligibility: Nanos,
    /// `V_r`: (time, amount) when valid.
    repl: Option<(Nanos, Nanos)>,
    budgeted: bool,
    /// Strict mode: periods of Main VCPUs with outstanding requests (count
    /// per period).
    waiters: BTreeMap<Nanos, u32>,
}

impl Pibs {
    /// An I/O VCPU limited to utilization `U` in `(0, 1]`.
    pub fn new(utilization: Utilization, inherit: Inherit) -> Result<Pibs, CoreError> {
        if utilization.is_zero() || utilization > Utilization::ONE {
            return Err(CoreError::UtilizationOutOfRange {
                num: utilization.num(),
                den: utilization.den(),
            });
        }
        Ok(Pibs {
            utilization,
            inherit,
            period: None,
            budget: Nanos::ZERO,
            usage: Nanos::ZERO,
            eligibility: Nanos::ZERO,
            repl: None,
            budgeted: false,
            waiters: BTreeMap::new(),
        })
    }

    pub fn utilization(&self) -> Utilization {
        self.utilization
    }
    pub fn inherit(&self) -> Inherit {
        self.inherit
    }
    /// `V_T`, the inherited period.
    pub fn period(&self) -> Option<Nanos> {
        self.period
    }
    /// `V_e`.
    pub fn eligibility(&self) -> Nanos {
        self.eligibility
    }
    /// `V_u`.
    pub fn usage(&self) -> Nanos {
        self.usage
    }
    /// `V_r` as (time, amount), if valid.
    pub fn replenishment(&self) -> Option<(Nanos, Nanos)> {
        self.repl
    }
    pub fn is_budgeted(&self) -> bool {
        self.budgeted
    }
    /// `C_max = V_T * V_U` for the current inherited period.
    pub fn c_max(&self) -> Nanos {
        self.period
            .map_or(Nanos::ZERO, |t| self.utilization.mul_floor(t))
    }

    /// Strict inheritance: service for one request of a Main VCPU with
    /// period `main_period` has finished. The server's period drops to the
    /// shortest period still waiting (if any). No effect in `Paper` mode.
    pub fn service_done(&mut self, main_period: Nanos) {
        if let Some(n) = self.waiters.get_mut(&main_period) {
            *n -= 1;
            if *n == 0 {
                self.waiters.remove(&main_period);
            }
        }
        if self.inherit == Inherit::Strict {
            if let Some((&t, _)) = self.waiters.iter().next() {
                self.period = Some(t);
                if let Some((_, b)) = self.repl.as_mut() {
                    *b = self.utilization.mul_floor(t);
                }
                let c_max = self.c_max();
                if self.budget > c_max {
                    self.budget = c_max;
                }
            }
        }
    }
}

impl ServerPolicy for Pibs {
    /// Alg. 7 `IO-VCPU-end-of-timeslice`.
    fn end_timeslice(&mut self, _now: Nanos, used: Nanos, runnable: bool) {
        self.budget = self.budget.saturating_sub(used);
        self.usage += used;
        if !runnable || self.budget.is_zero() {
            // Line 5: V_e += V_u / V_U.
            self.eligibility += self.utilization.div_ceil(self.usage);
            let c_max = self.c_max();
            // Lines 6-9.
            match self.repl.as_mut() {
                None => self.repl = Some((self.eligibility, c_max)),
                Some((t, _)) => *t = self.eligibility,
            }
            self.usage = Nanos::ZERO;
            self.budget = Nanos::ZERO;
            if !runnable {
                self.budgeted = false;
            }
        }
    }

    /// Alg. 8 `IO-VCPU-update-budget`.
    fn update_budget(&mut self, now: Nanos) {
        if let Some((t, b)) = self.repl {
            if t <= now {
                self.budget = b;
                self.repl = None;
            }
        }
    }

    /// Alg. 9 `IO-VCPU-next-event`.
    fn next_event(&self, now: Nanos) -> Option<Nanos> {
        match self.repl {
            Some((t, _)) if now < t => Some(t),
            _ => None,
        }
    }

    /// Alg. 10 `IO-VCPU-unblock`. `ctx.inherit_period` is `M_T`; a wake-up
    /// without it (e.g. a stray event) keeps the current period.
    fn unblock(&mut self, now: Nanos, ctx: UnblockCtx) {
        if let Some(m_t) = ctx.inherit_period {
            *self.waiters.entry(m_t).or_insert(0) += 1;
            // Line 1-2.
            let higher = self.period.is_none_or(|v_t| m_t < v_t);
            if higher || !ctx.was_active {
                self.period = Some(m_t);
            }
        }
        if self.period.is_none() {
            return;
        }
        // Lines 3-4: an inactive I/O VCPU's eligibility catches up with now.
        if !ctx.running && self.eligibility < now {
            self.eligibility = now;
        }
        let c_max = self.c_max();
        match self.repl.as_mut() {
            // Lines 5-7.
            None => {
                if !self.budgeted {
                    self.repl = Some((self.eligibility, c_max));
                }
            }
            // Lines 8-9: the pending replenishment is for the new C_max.
            Some((_, b)) => *b = c_max,
        }
        // Line 10.
        self.budgeted = true;
    }

    fn budget(&self) -> Nanos {
        self.budget
    }

    fn key(&self) -> (Class, u64) {
        (
            Class::FixedPriority,
            self.period.map_or(u64::MAX, |t| t.as_ns()),
        )
    }

    fn tie(&self) -> u8 {
        0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn io(now: u64, m_t: u64, was_active: bool, running: bool) -> (Nanos, UnblockCtx) {
        (
            Nanos(now),
            UnblockCtx {
                was_active,
                running,
                inherit_period: Some(Nanos(m_t)),
            },
        )
    }

    /// QUEST-VCPU §2.1 / Figure 2: T = 4, U = 0.5. The I/O VCPU runs
    /// C_actual = 1 at e1 = 0 and blocks: e2 = 0 + 1/0.5 = 2. A new request
    /// arrives at 1; at 2 it gets C_max = 2 and runs it all: 3 units inside
    /// the window [0, 4) = (2 - U) * U * 4. The next eligibility is 6.
    #[test]
    fn figure2_worst_case() {
        let mut p = Pibs::new(Utilization::new(1, 2).unwrap(), Inherit::Paper).unwrap();
        let (t, c) = io(0, 4, false, false);
        p.unblock(t, c);
        assert_eq!(p.replenishment(), Some((Nanos(0), Nanos(2))));
        p.update_budget(Nanos(0));
        assert_eq!(p.budget(), Nanos(2));
        // runs 1 unit, blocks
        p.end_timeslice(Nanos(1), Nanos(1), false);
        assert_eq!(p.eligibility(), Nanos(2));
        assert_eq!(p.replenishment(), Some((Nanos(2), Nanos(2))));
        assert_eq!(p.budget(), Nanos(0));
        // new request at 1
        let (t, c) = io(1, 4, false, false);
        p.unblock(t, c);
        p.update_budget(Nanos(1));
        assert_eq!(p.budget(), Nanos(0));
        assert_eq!(p.next_event(Nanos(1)), Some(Nanos(2)));
        p.update_budget(Nanos(2));
        assert_eq!(p.budget(), Nanos(2));
        p.end_timeslice(Nanos(4), Nanos(2), true);
        assert_eq!(p.eligibility(), Nanos(6));
        // 1 + 2 = 3 units in [0, 4): (2 - 1/2) * 1/2 * 4 = 3
    }

    #[test]
    fn inherits_highest_period_until_blocked() {
        let mut p = Pibs::new(Utilization::new(1, 10).unwrap(), Inherit::Paper).unwrap();
        let (t, c) = io(0, 100, false, false);
        p.unblock(t, c);
        assert_eq!(p.period(), Some(Nanos(100)));
        // a request from a shorter-period (higher priority) Main VCPU raises it
        let (t, c) = io(1, 20, true, false);
        p.unblock(t, c);
        assert_eq!(p.period(), Some(Nanos(20)));
        // a longer period while active does not lower it (Alg. 10 line 1)
        let (t, c) = io(2, 50, true, false);
        p.unblock(t, c);
        assert_eq!(p.period(), Some(Nanos(20)));
        // paper mode ignores service_done
        p.service_done(Nanos(20));
        assert_eq!(p.period(), Some(Nanos(20)));
        // after blocking, the next requester sets it
        p.end_timeslice(Nanos(3), Nanos(0), false);
        let (t, c) = io(30, 50, false, false);
        p.unblock(t, c);
        assert_eq!(p.period(), Some(Nanos(50)));
    }

    #[test]
    fn strict_mode_drops_to_next_waiter() {
        let mut p = Pibs::new(Utilization::new(1, 10).unwrap(), Inherit::Strict).unwrap();
        let (t, c) = io(0, 100, false, false);
        p.unblock(t, c);
        let (t, c) = io(0, 20, true, false);
        p.unblock(t, c);
        assert_eq!(p.period(), Some(Nanos(20)));
        p.service_done(Nanos(20));
        assert_eq!(p.period(), Some(Nanos(100)));
    }

    #[test]
    fn budgeted_state_prevents_double_replenishment() {
        let mut p = Pibs::new(Utilization::new(1, 2).unwrap(), Inherit::Paper).unwrap();
        let (t, c) = io(0, 4, false, false);
        p.unblock(t, c);
        p.update_budget(Nanos(0));
        assert!(p.is_budgeted());
        // more requests while budgeted and active: no new replenishment
        let (t, c) = io(0, 4, true, true);
        p.unblock(t, c);
        assert_eq!(p.replenishment(), None);
        assert_eq!(p.budget(), Nanos(2));
    }

    #[test]
    fn rejects_bad_utilization() {
        assert!(Pibs::new(Utilization::ZERO, Inherit::Paper).is_err());
        assert!(Pibs::new(Utilization::new(3, 2).unwrap(), Inherit::Paper).is_err());
    }
}
