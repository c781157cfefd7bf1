//! Period-boundary servers: the deferrable server (VINT §III: full refill at
//! every period boundary; release jitter `T - C` in analysis) and the
//! classic polling server (budget lost when the server has no work).
//!
//! Design principles: period boundaries are `offset + k * T` from the
//! creation time; budget state is brought up to date lazily in
//! `update_budget` from `now`, so a server that sleeps for a million periods
//! costs O(1) to wake.

use crate::error::CoreError;
use crate::server::{check_budget_period, fp_key, Class, ServerPolicy, ServerPriority, UnblockCtx};
use crate::time::Nanos;

/// Period bookkeeping shared by the deferrable and polling servers.
#[derive(Clone, Debug)]
struct Periods {
    capacity_c: Nanos,
    period: Nanos,
    priority: ServerPriority,
    /// Start of the current period.
    start: Nanos,
    budget: Nanos,
}

impl Periods {
    fn new(
        budget: Nanos,
        period: Nanos,
        priority: ServerPriority,
        now: Nanos,
    ) -> Result<Periods, CoreError> {
        check_budget_period(budget, period)?;
        Ok(Periods {
            capacity_c: budget,
            period,
            priority,
            start: now,
            budget,
        })
    }

    fn next_boundary(&self) -> Nanos {
        self.start + self.period
    }

    /// Charge a slice of `used` ending at `now`. If it crossed a boundary,
    /// the budget becomes `refill` less only what the server used after the
    /// last boundary (`now - start` less the time others took there,
    /// `stolen_since(start)`): charging the whole slice to the new period
    /// would take budget it never used, charging none would give it free
    /// time.
    fn charge(
        &mut self,
        now: Nanos,
        used: Nanos,
        stolen_since: impl Fn(Nanos) -> Nanos,
        refill: Nanos,
    ) {
        if self.roll(now) {
            let run = (now - self.start).saturating_sub(stolen_since(self.start));
            self.budget = refill.saturating_sub(used.min(run));
        } else {
            self.budget = self.budget.saturating_sub(used);
        }
    }

    /// Move `start` to the last boundary `<= now`; returns whether at least
    /// one boundary was crossed.
    fn roll(&mut self, now: Nanos) -> bool {
        if now < self.next_boundary() {
            return false;
        }
        let k = (now - self.start).as_ns() / self.period.as_ns();
        self.start += self.period.saturating_mul(k);
        true
    }
}

/// Deferrable server: keeps unused budget until the end of its period and
/// gets the full budget back at every boundary.
#[derive(Clone, Debug)]
pub struct DeferrableServer {
    p: Periods,
}

impl DeferrableServer {
    pub fn new(
        budget: Nanos,
        period: Nanos,
        priority: ServerPriority,
        now: Nanos,
    ) -> Result<DeferrableServer, CoreError> {
        Ok(DeferrableServer {
            p: Periods::new(budget, period, priority, now)?,
        })
    }
    pub fn capacity_c(&self) -> Nanos {
        self.p.capacity_c
    }
    pub fn period(&self) -> Nanos {
        self.p.period
    }
}

impl DeferrableServer {
    /// `end_timeslice` knowing how much of the slice was taken by others
    /// from any instant on (`stolen_since(t)`: within `[t, now)`). A slice
    /// that crossed a boundary charges the new budget only with what the
    /// server used after the last boundary; charging the whole slice would
    /// take budget that period never used.
    pub fn charge(&mut self, now: Nanos, used: Nanos, stolen_since: impl Fn(Nanos) -> Nanos) {
        let c = self.p.capacity_c;
        self.p.charge(now, used, stolen_since, c);
    }
}

impl ServerPolicy for DeferrableServer {
    /// Without knowing where others' time fell in the slice, its part after
    /// a crossed boundary is bounded by `now - start` (safe: it may charge
    /// an ISR's time there to the new budget). The scheduler uses `charge`.
    fn end_timeslice(&mut self, now: Nanos, used: Nanos, _runnable: bool) {
        self.charge(now, used, |_| Nanos::ZERO);
    }
    fn update_budget(&mut self, now: Nanos) {
        if self.p.roll(now) {
            self.p.budget = self.p.capacity_c;
        }
    }
    fn next_event(&self, now: Nanos) -> Option<Nanos> {
        let b = self.p.next_boundary();
        (b > now).then_some(b)
    }
    fn unblock(&mut self, now: Nanos, ctx: UnblockCtx) {
        // The running server's slice is not charged yet: rolling now would
        // charge the part before the boundary to the new budget.
        if !ctx.running {
            self.update_budget(now);
        }
    }
    fn budget(&self) -> Nanos {
        self.p.budget
    }
    fn key(&self) -> (Class, u64) {
        fp_key(self.p.priority, self.p.period)
    }
}

/// Polling server: at each boundary it gets `C` if it has work at that
/// instant; budget left when it runs out of work is lost until the next
/// boundary.
#[derive(Clone, Debug)]
pub struct PollingServer {
    p: Periods,
    /// Whether the server had work when the current period started.
    active: bool,
}

impl PollingServer {
    pub fn new(
        budget: Nanos,
        period: Nanos,
        priority: ServerPriority,
        now: Nanos,
    ) -> Result<PollingServer, CoreError> {
        Ok(PollingServer {
            p: Periods::new(budget, period, priority, now)?,
            active: false,
        })
    }
    pub fn capacity_c(&self) -> Nanos {
        self.p.capacity_c
    }
    pub fn period(&self) -> Nanos {
        self.p.period
    }
}

impl PollingServer {
    /// `end_timeslice` knowing where others' time fell in the slice (see
    /// `DeferrableServer::charge`): a running server is active, so a
    /// crossed boundary refills it, less what it used after the boundary.
    pub fn charge(
        &mut self,
        now: Nanos,
        used: Nanos,
        runnable: bool,
        stolen_since: impl Fn(Nanos) -> Nanos,
    ) {
        let refill = if self.active {
            self.p.capacity_c
        } else {
            Nanos::ZERO
        };
        self.p.charge(now, used, stolen_since, refill);
        if !runnable {
            // No work left: the rest of this period's budget is lost.
            self.active = false;
            self.p.budget = Nanos::ZERO;
        }
    }
}

impl ServerPolicy for PollingServer {
    fn end_timeslice(&mut self, now: Nanos, used: Nanos, runnable: bool) {
        self.charge(now, used, runnable, |_| Nanos::ZERO);
    }
    fn update_budget(&mut self, now: Nanos) {
        if self.p.roll(now) {
            // Only a server with work at the boundary gets its budget; an
            // active server is still runnable (it would have blocked).
            self.p.budget = if self.active {
                self.p.capacity_c
            } else {
                Nanos::ZERO
            };
        }
    }
    fn next_event(&self, now: Nanos) -> Option<Nanos> {
        let b = self.p.next_boundary();
        (b > now).then_some(b)
    }
    fn unblock(&mut self, now: Nanos, ctx: UnblockCtx) {
        if ctx.was_active {
            return;
        }
        // Idle until now: this period's budget is lost, unless the wake-up is
        // exactly at the period start (the poll happens now).
        self.p.roll(now);
        self.p.budget = if self.p.start == now {
            self.p.capacity_c
        } else {
            Nanos::ZERO
        };
        self.active = true;
    }
    fn budget(&self) -> Nanos {
        self.p.budget
    }
    fn key(&self) -> (Class, u64) {
        fp_key(self.p.priority, self.p.period)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx() -> UnblockCtx {
        UnblockCtx::default()
    }

    /// Deferrable: C = 2, T = 10. Work arriving at 9 runs 2 units across
    /// the boundary: 1 unit from the old period's remaining budget... here
    /// the whole old budget (2) is available at 9, and the full 2 again at
    /// 10: up to 4 units back to back (the DS "double hit").
    #[test]
    fn deferrable_keeps_budget_and_refills_at_boundary() {
        let mut d =
            DeferrableServer::new(Nanos(2), Nanos(10), ServerPriority::RateMonotonic, Nanos(0))
                .unwrap();
        d.unblock(Nanos(9), ctx());
        assert_eq!(d.budget(), Nanos(2));
        d.end_timeslice(Nanos(10), Nanos(1), true);
        // boundary at 10 refills fully
        assert_eq!(d.budget(), Nanos(2));
        d.end_timeslice(Nanos(12), Nanos(2), true);
        assert_eq!(d.budget(), Nanos(0));
        assert_eq!(d.next_event(Nanos(12)), Some(Nanos(20)));
        d.update_budget(Nanos(35));
        assert_eq!(d.budget(), Nanos(2));
        assert_eq!(d.next_event(Nanos(35)), Some(Nanos(40)));
    }

    /// A slice across the boundary pays the new period only for its part
    /// after it: deferrable and polling, C = 2, T = 10, running [19, 21)
    /// with 1 unit left: 1 of the new 2 is used (charging it all to the
    /// new period would leave 0; to the old one, 2).
    #[test]
    fn slice_across_boundary_is_split() {
        let mut d =
            DeferrableServer::new(Nanos(2), Nanos(10), ServerPriority::RateMonotonic, Nanos(0))
                .unwrap();
        d.update_budget(Nanos(10));
        d.end_timeslice(Nanos(19), Nanos(1), true);
        assert_eq!(d.budget(), Nanos(1));
        d.end_timeslice(Nanos(21), Nanos(2), true);
        assert_eq!(d.budget(), Nanos(1));
        // with 1 unit of it taken by an ISR at [20, 21): nothing charged
        let mut d2 =
            DeferrableServer::new(Nanos(2), Nanos(10), ServerPriority::RateMonotonic, Nanos(0))
                .unwrap();
        d2.update_budget(Nanos(10));
        d2.end_timeslice(Nanos(19), Nanos(1), true);
        d2.charge(Nanos(21), Nanos(1), |from| Nanos(21 - from.as_ns().max(20)));
        assert_eq!(d2.budget(), Nanos(2));
        let mut p =
            PollingServer::new(Nanos(2), Nanos(10), ServerPriority::RateMonotonic, Nanos(0))
                .unwrap();
        p.unblock(Nanos(10), ctx());
        assert_eq!(p.budget(), Nanos(2));
        p.end_timeslice(Nanos(19), Nanos(1), true);
        p.end_timeslice(Nanos(21), Nanos(2), true);
        assert_eq!(p.budget(), Nanos(1));
    }

    /// Polling: C = 2, T = 10. Work arriving at 3 (after the boundary at 0
    /// passed while idle) waits for the boundary at 10.
    #[test]
    fn polling_loses_budget_when_idle() {
        let mut p =
            PollingServer::new(Nanos(2), Nanos(10), ServerPriority::RateMonotonic, Nanos(0))
                .unwrap();
        // idle since creation: the first period is lost once idle
        p.end_timeslice(Nanos(0), Nanos(0), false);
        p.unblock(Nanos(3), ctx());
        assert_eq!(p.budget(), Nanos(0));
        assert_eq!(p.next_event(Nanos(3)), Some(Nanos(10)));
        p.update_budget(Nanos(10));
        assert_eq!(p.budget(), Nanos(2));
        // runs 1 and the work is done: the other unit is lost
        p.end_timeslice(Nanos(11), Nanos(1), false);
        assert_eq!(p.budget(), Nanos(0));
        p.unblock(Nanos(12), ctx());
        assert_eq!(p.budget(), Nanos(0));
        p.update_budget(Nanos(20));
        assert_eq!(p.budget(), Nanos(2));
    }
}
