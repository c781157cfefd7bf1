//! Sporadic server: the Main VCPU policy of QUEST-VCPU (Alg. 3-6, 11-13),
//! the corrected POSIX sporadic server of Stanovich et al.
//!
//! Design principles:
//! * The replenishment queue `V_R` is bounded (`max_repl`, default 32) and
//!   kept sorted by time; the sum of its amounts is always `C` (the invariant
//!   Quest's own source asserts; property-tested).
//! * Listing choices where the paper's text is ambiguous are explicit:
//!   - Alg. 12 line 8 schedules the consumed amount at `head_t + T` with
//!     `head_t` read after the full-queue `pop` of line 4, exactly as the
//!     listing orders the steps: when the queue is full the consumed budget
//!     comes back one period after the *next* replenishment (later than
//!     after the consumed one: safe, and the way a full queue "discards
//!     effective budget", QUEST-VCPU §3).
//!   - `unblock` (Alg. 13) runs only when the server goes from idle to
//!     runnable, as Quest's source does; a wake-up of a thread in an already
//!     active server changes nothing (its usage is not yet charged).
//! * `ops` counts replenishment-queue operations (add, pop, merge) for the
//!   scheduler-overhead model (QUEST-VCPU Figures 4 and 7).

use alloc::collections::VecDeque;

use crate::error::CoreError;
use crate::server::{check_budget_period, fp_key, Class, ServerPolicy, ServerPriority, UnblockCtx};
use crate::time::Nanos;

/// Default bound of the replenishment queue (QUEST-VCPU §3, "we arbitrarily
/// chose 32").
pub const DEFAULT_MAX_REPL: usize = 32;
/// Largest accepted `max_repl`: the queue grows on demand up to it, it is
/// never pre-allocated from the user's number.
pub const MAX_MAX_REPL: usize = 1024;

/// A replenishment `r`: amount `r_b` available from time `r_t`.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Replenishment {
    pub time: Nanos,
    pub amount: Nanos,
}

#[derive(Clone, Debug)]
pub struct SporadicServer {
    capacity_c: Nanos,
    period: Nanos,
    max_repl: usize,
    /// `fp_key(priority, period)`, fixed at creation: the scheduler asks
    /// for it after every hook (for speed, docs/performance.md).
    key: (Class, u64),
    background: bool,
    /// `V_R`, sorted by time.
    queue: VecDeque<Replenishment>,
    /// `V_u`: usage charged against the head replenishment.
    usage: Nanos,
    /// `V_b`.
    budget: Nanos,
    /// Foreground (false once depleted: Alg. 11 line 18).
    foreground: bool,
    /// Replenishment-queue operations so far.
    pub ops: u64,
}

impl SporadicServer {
    /// A sporadic server with budget `C = budget` per `period`, created at
    /// `now` (Alg. 6 posts the initial replenishment of `C` at `now`).
    pub fn new(
        budget: Nanos,
        period: Nanos,
        max_repl: usize,
        priority: ServerPriority,
        background: bool,
        now: Nanos,
    ) -> Result<SporadicServer, CoreError> {
        check_budget_period(budget, period)?;
        if max_repl < 2 {
            return Err(CoreError::MaxReplTooSmall(max_repl));
        }
        if max_repl > MAX_MAX_REPL {
            return Err(CoreError::MaxReplTooLarge(max_repl));
        }
        let mut s = SporadicServer {
            capacity_c: budget,
            period,
            max_repl,
            key: fp_key(priority, period),
            background,
            queue: VecDeque::with_capacity(max_repl.min(DEFAULT_MAX_REPL)),
            usage: Nanos::ZERO,
            budget: Nanos::ZERO,
            foreground: true,
            ops: 0,
        };
        // Alg. 6: add(V_R, V_C, t_cur).
        s.add(Replenishment {
            time: now,
            amount: budget,
        });
        s.budget = budget;
        Ok(s)
    }

    pub fn capacity_c(&self) -> Nanos {
        self.capacity_c
    }
    pub fn period(&self) -> Nanos {
        self.period
    }
    pub fn max_repl(&self) -> usize {
        self.max_repl
    }
    pub fn usage(&self) -> Nanos {
        self.usage
    }
    pub fn is_foreground(&self) -> bool {
        self.foreground
    }
    /// The replenishment queue, earliest first.
    pub fn replenishments(&self) -> impl Iterator<Item = &Replenishment> {
        self.queue.iter()
    }
    pub fn queue_len(&self) -> usize {
        self.queue.len()
    }

    /// From when the whole budget `C` is available if the server uses
    /// nothing meanwhile: `None` while usage is charged against the head
    /// replenishment, else the latest replenishment's time. The queue's
    /// amounts sum to `C` after every hook (module doc) and it is sorted by
    /// time, so this is its last entry, read in O(1) -- not a scan of
    /// `V_R` (for speed: the simulator asks while a backlogged server waits
    /// for its whole budget, `sporadic_whole`). Only this server's hooks
    /// change it: `end_timeslice` and `unblock` (`update_budget` reads the
    /// queue, it does not change it).
    #[inline]
    pub fn whole_budget_from(&self) -> Option<Nanos> {
        if !self.usage.is_zero() {
            return None;
        }
        self.queue.back().map(|r| r.time)
    }

    /// `add(V_R, r)`: insert keeping time order (after equal times).
    fn add(&mut self, r: Replenishment) {
        self.ops += 1;
        let pos = self.queue.partition_point(|q| q.time <= r.time);
        self.queue.insert(pos, r);
    }

    fn pop(&mut self) -> Option<Replenishment> {
        self.ops += 1;
        self.queue.pop_front()
    }

    fn head(&self) -> Option<Replenishment> {
        self.queue.front().copied()
    }

    /// `capacity(V)` of QUEST-VCPU §2.1: 0 if the head replenishment is in
    /// the future, else `head_b - V_u`. That may be negative after an
    /// overrun; every use only compares it with 0 or takes it as a budget,
    /// so it is kept at 0 or above (a negative capacity is no budget).
    #[inline]
    fn capacity(&self, now: Nanos) -> Nanos {
        self.capacity_with(now, self.usage)
    }

    /// `capacity(now)` were the usage `usage`.
    #[inline]
    fn capacity_with(&self, now: Nanos, usage: Nanos) -> Nanos {
        match self.queue.front() {
            Some(h) if h.time <= now => h.amount.saturating_sub(usage),
            _ => Nanos::ZERO,
        }
    }

    /// Alg. 11 `budget-check`, past its line 1 (the caller found the
    /// capacity not positive).
    fn budget_check_depleted(&mut self, now: Nanos) {
        self.skip_whole_rounds();
        self.exhaust_used();
        // Lines 9-16: overrun -- delay the head by the overrun, merging into
        // the following replenishment when they overlap.
        if !self.usage.is_zero() {
            if let Some(h) = self.queue.front_mut() {
                h.time += self.usage;
            }
            if self.queue.len() > 1 {
                let (h, s) = (self.queue[0], self.queue[1]);
                if h.time + h.amount >= s.time {
                    let _ = self.pop();
                    self.ops += 1;
                    if let Some(n) = self.queue.front_mut() {
                        n.amount += h.amount;
                        n.time = h.time;
                    }
                }
            }
        }
        // Lines 17-20: depleted -> background; back to foreground at
        // head_t (the scheduler learns that time through `next_event`).
        if self.capacity(now).is_zero() {
            self.foreground = false;
        }
    }

    /// Alg. 11 lines 2-8: exhaust fully used replenishments and reschedule
    /// them one period later.
    fn exhaust_used(&mut self) {
        while let Some(h) = self.head() {
            if h.amount > self.usage {
                break;
            }
            self.usage -= h.amount;
            let _ = self.pop();
            self.add(Replenishment {
                time: h.time + self.period,
                amount: h.amount,
            });
        }
    }

    /// Lines 2-8 of Alg. 11, a whole queue at a time: a usage of `k + 1`
    /// budgets or more (a caller that charged a long interval at once, e.g.
    /// `schedule` called long after `next_update`) would loop once per
    /// replenishment per budget -- O(usage / C), a hang for a usage of
    /// hours. While the usage covers the whole queue (sum `C`) every entry
    /// is popped and re-added one period later; when the queue spans at
    /// most one period each lands behind the others, so one round shifts
    /// the queue by `T` unchanged, and `k` rounds shift it by `k * T`. `k`
    /// leaves between `C` and `2C` of usage to the loop (at most two
    /// rounds). Same result and `ops` count as the loop.
    fn skip_whole_rounds(&mut self) {
        let c = self.capacity_c.as_ns();
        let (Some(first), Some(last)) = (self.queue.front(), self.queue.back()) else {
            return;
        };
        if c == 0 || self.usage.as_ns() / c < 2 || last.time > first.time + self.period {
            return;
        }
        let k = self.usage.as_ns() / c - 1;
        self.usage = Nanos(self.usage.as_ns() - k * c);
        let shift = self.period.saturating_mul(k);
        for r in self.queue.iter_mut() {
            r.time += shift;
        }
        let n = self.queue.len() as u64;
        self.ops = self.ops.saturating_add(k.saturating_mul(2 * n));
    }

    /// Alg. 12 `split-check`.
    fn split_check(&mut self, now: Nanos) {
        let Some(h) = self.head() else { return };
        if self.usage.is_zero() || h.time > now {
            return;
        }
        let used = self.usage;
        let remnant = h.amount - used;
        if self.queue.len() >= self.max_repl {
            // Line 3-5: queue full -- push the remnant into the next one.
            let _ = self.pop();
            if let Some(n) = self.queue.front_mut() {
                n.amount += remnant;
            }
        } else if let Some(f) = self.queue.front_mut() {
            // Line 7.
            f.amount = remnant;
        }
        // Line 8: the consumed part comes back one period after the (now)
        // head replenishment.
        let head_t = self.queue.front().map_or(h.time, |f| f.time);
        self.add(Replenishment {
            time: head_t + self.period,
            amount: used,
        });
        // Line 9. (The remnant is positive: Alg. 3 splits only when
        // capacity > 0.)
        self.usage = Nanos::ZERO;
    }

    /// Alg. 13 `unblock-check`.
    #[inline]
    fn unblock_check(&mut self, now: Nanos) {
        let cap = self.capacity(now);
        let _ = self.unblock_check_with(now, cap);
    }

    /// `unblock_check` with `capacity(now)` already computed as `cap`.
    /// Returns whether it merged replenishments (only a merge changes the
    /// capacity: the head it moves to `now` was already due).
    #[inline]
    fn unblock_check_with(&mut self, now: Nanos, cap: Nanos) -> bool {
        let mut merged = false;
        if !cap.is_zero() {
            self.foreground = true;
            // Line 4: advance the earliest replenishment to now.
            if let Some(f) = self.queue.front_mut() {
                f.time = now;
            }
            // Lines 5-12: merge replenishments that are available before the
            // head's budget would run out.
            while self.queue.len() > 1 {
                let b = self.queue[0].amount;
                let second_t = self.queue[1].time;
                if second_t <= (now + b) - self.usage {
                    let _ = self.pop();
                    self.ops += 1;
                    merged = true;
                    if let Some(f) = self.queue.front_mut() {
                        f.amount += b;
                        f.time = now;
                    }
                } else {
                    break;
                }
            }
        }
        // Line 14: otherwise foreground again at head_t, which `next_event`
        // reports.
        merged
    }

    /// `end_timeslice(now, used, true)` then `update_budget(now)` (Alg. 3,
    /// then Alg. 4), with Alg. 4's capacity taken from Alg. 3: both read
    /// the same queue, usage and `now`, so the budget is the one
    /// `end_timeslice` set, and only Alg. 4's foreground flag is left to
    /// apply (property-tested against the two calls).
    #[inline]
    pub(crate) fn ended(&mut self, now: Nanos, used: Nanos) {
        self.end_timeslice(now, used, true);
        if !self.budget.is_zero() {
            self.foreground = true;
        }
    }

    /// Alg. 3's common case, for the scheduler's fast decision (for speed, docs/performance.md):
    /// when the slice of `used` ending at `now` leaves a positive capacity
    /// and nothing for Alg. 12 to split (`runnable`, or no usage), does
    /// `ended(now, used)` (`runnable`) or `end_timeslice(now, used, false)`
    /// and returns `true`; else changes nothing and returns `false`.
    #[inline(always)]
    pub(crate) fn slice_ended(&mut self, now: Nanos, used: Nanos, runnable: bool) -> bool {
        let mut usage = self.usage;
        usage += used;
        let cap = self.capacity_with(now, usage);
        if cap.is_zero() || !(runnable || usage.is_zero()) {
            return false;
        }
        self.usage = usage;
        self.budget = cap;
        if runnable {
            // Alg. 4's foreground flag (`ended`)
            self.foreground = true;
        }
        true
    }

    /// `end_timeslice` past its common case: Alg. 11 on a depleted
    /// capacity `cap`, Alg. 12 on a block.
    #[inline(never)]
    fn end_timeslice_rest(&mut self, now: Nanos, runnable: bool, mut cap: Nanos) {
        if cap.is_zero() {
            self.budget_check_depleted(now);
            cap = self.capacity(now);
        }
        if !cap.is_zero() && !runnable {
            self.split_check(now);
            cap = self.capacity(now);
        }
        self.budget = cap;
    }

    /// `unblock(now, ctx)` then `update_budget(now)` (Alg. 13, then Alg.
    /// 4), with the capacity computed once for both unless Alg. 13 merged
    /// replenishments: it acts only when the capacity is positive, i.e.
    /// the head is due, and moving a due head to `now` leaves the capacity
    /// as it was (property-tested against the two calls).
    #[inline]
    pub(crate) fn unblocked(&mut self, now: Nanos, ctx: UnblockCtx) {
        let mut cap = self.capacity(now);
        if !ctx.was_active && !cap.is_zero() && self.unblock_check_with(now, cap) {
            cap = self.capacity(now);
        }
        self.budget = cap;
        if !cap.is_zero() {
            self.foreground = true;
        }
    }

    /// `unblocked(now, ctx)` of a server woken from idle (`!ctx.was_active`)
    /// when its capacity is positive; returns `false` and changes nothing
    /// when the capacity is zero (the scheduler's fast wake-up, for speed).
    /// Alg. 13 inline up to its merge loop (lines 5-12), which only a queue
    /// of two or more replenishments can need (`unblocked_merge`).
    #[inline(always)]
    pub(crate) fn unblocked_idle(&mut self, now: Nanos) -> bool {
        let cap = self.capacity(now);
        if cap.is_zero() {
            return false;
        }
        if self.queue.len() > 1 {
            self.unblocked_merge(now, cap);
            return true;
        }
        // Alg. 13 line 3-4 (a positive capacity: the head is due), then
        // Alg. 4 on the unchanged capacity.
        self.foreground = true;
        if let Some(f) = self.queue.front_mut() {
            f.time = now;
        }
        self.budget = cap;
        true
    }

    /// `unblocked_idle` of a server with two or more replenishments.
    #[inline(never)]
    fn unblocked_merge(&mut self, now: Nanos, mut cap: Nanos) {
        if self.unblock_check_with(now, cap) {
            cap = self.capacity(now);
        }
        self.budget = cap;
        if !cap.is_zero() {
            self.foreground = true;
        }
    }

    /// Sum of queued replenishment amounts (== C, the invariant; a scan of
    /// `V_R`, for checks).
    pub fn queued_sum(&self) -> Nanos {
        self.queue.iter().fold(Nanos::ZERO, |a, r| a + r.amount)
    }
}

impl ServerPolicy for SporadicServer {
    /// Alg. 3 `MAIN-VCPU-end-of-timeslice`.
    #[inline]
    fn end_timeslice(&mut self, now: Nanos, used: Nanos, runnable: bool) {
        self.usage += used;
        // Alg. 11 line 1: the capacity is computed once while nothing
        // changes it. The common slice leaves budget and has nothing for
        // Alg. 12 to split (the server stays runnable, or used nothing
        // since its last split): inlined into the scheduler (for speed, docs/performance.md).
        let cap = self.capacity(now);
        if !cap.is_zero() && (runnable || self.usage.is_zero()) {
            self.budget = cap;
            return;
        }
        self.end_timeslice_rest(now, runnable, cap);
    }

    /// Alg. 4 `MAIN-VCPU-update-budget`.
    fn update_budget(&mut self, now: Nanos) {
        self.budget = self.capacity(now);
        if !self.budget.is_zero() {
            self.foreground = true;
        }
    }

    /// Alg. 5 `MAIN-VCPU-next-event`.
    fn next_event(&self, now: Nanos) -> Option<Nanos> {
        self.queue.iter().map(|r| r.time).find(|&t| t > now)
    }

    /// Alg. 2 line 3 -> Alg. 13, for an idle server only (module doc).
    fn unblock(&mut self, now: Nanos, ctx: UnblockCtx) {
        if !ctx.was_active {
            self.unblock_check(now);
        }
    }

    fn budget(&self) -> Nanos {
        self.budget
    }

    fn key(&self) -> (Class, u64) {
        self.key
    }

    fn background(&self) -> bool {
        self.background
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ss(c: u64, t: u64, max: usize) -> SporadicServer {
        SporadicServer::new(
            Nanos(c),
            Nanos(t),
            max,
            ServerPriority::RateMonotonic,
            false,
            Nanos(0),
        )
        .unwrap()
    }

    fn q(s: &SporadicServer) -> alloc::vec::Vec<(u64, u64)> {
        s.replenishments()
            .map(|r| (r.time.as_ns(), r.amount.as_ns()))
            .collect()
    }

    #[test]
    fn rejects_bad_parameters() {
        let e = SporadicServer::new(
            Nanos(12),
            Nanos(10),
            32,
            ServerPriority::RateMonotonic,
            false,
            Nanos(0),
        );
        assert_eq!(
            e.unwrap_err().to_string(),
            "budget 12ns exceeds period 10ns"
        );
        let e = SporadicServer::new(
            Nanos(1),
            Nanos(10),
            1,
            ServerPriority::RateMonotonic,
            false,
            Nanos(0),
        );
        assert!(matches!(e, Err(CoreError::MaxReplTooSmall(1))));
    }

    proptest::proptest! {
        /// `ended` leaves the server exactly as `end_timeslice(.., true)`
        /// then `update_budget` do (queue, usage, budget, foreground), along
        /// random runs of slices, blocks and wake-ups.
        #[test]
        fn ended_is_end_timeslice_then_update_budget(
            steps in proptest::collection::vec((0u64..7, 0u64..5, 0u8..3), 1..60)) {
            let mut s = ss(4, 10, 3);
            let mut now = 0;
            for (dt, used, what) in steps {
                now += dt;
                let used = Nanos(used);
                match what {
                    0 => {
                        let mut want = s.clone();
                        want.end_timeslice(Nanos(now), used, true);
                        want.update_budget(Nanos(now));
                        s.ended(Nanos(now), used);
                        proptest::prop_assert_eq!(q(&s), q(&want));
                        proptest::prop_assert_eq!(
                            (s.usage, s.budget, s.foreground, s.ops),
                            (want.usage, want.budget, want.foreground, want.ops));
                    }
                    1 => s.end_timeslice(Nanos(now), used, false),
                    _ => {
                        s.unblock(Nanos(now), UnblockCtx::default());
                        s.update_budget(Nanos(now));
                    }
                }
            }
        }

        /// `unblocked` leaves the server exactly as `unblock` then
        /// `update_budget` do (queue, usage, budget, foreground, operation
        /// count), for idle and already active servers, along random runs
        /// of slices, blocks and wake-ups.
        #[test]
        fn unblocked_is_unblock_then_update_budget(
            steps in proptest::collection::vec((0u64..7, 0u64..5, 0u8..3, proptest::bool::ANY), 1..60),
            max in 2usize..5) {
            let mut s = ss(4, 10, max);
            let mut now = 0;
            for (dt, used, what, was_active) in steps {
                now += dt;
                match what {
                    0 => s.end_timeslice(Nanos(now), Nanos(used), true),
                    1 => s.end_timeslice(Nanos(now), Nanos(used), false),
                    _ => {
                        let ctx = UnblockCtx { was_active, ..UnblockCtx::default() };
                        let mut want = s.clone();
                        want.unblock(Nanos(now), ctx);
                        want.update_budget(Nanos(now));
                        s.unblocked(Nanos(now), ctx);
                        proptest::prop_assert_eq!(q(&s), q(&want));
                        proptest::prop_assert_eq!(
                            (s.usage, s.budget, s.foreground, s.ops),
                            (want.usage, want.budget, want.foreground, want.ops));
                    }
                }
            }
        }
    }

    /// Alg. 12: C=4, T=10. Run 1 unit from 0 and block at 1: the head
    /// splits into a remnant (0, 3) and the consumed (10, 1).
    /// Alg. 13: wake at 3 -> head moves to 3; (10,1) is not mergeable
    /// (10 > 3 + 3). Run 3 -> exhausted at 6: (13, 3) rescheduled; queue
    /// (10,1),(13,3).
    #[test]
    fn split_on_block_and_reschedule_on_exhaustion() {
        let mut s = ss(4, 10, 32);
        s.end_timeslice(Nanos(1), Nanos(1), false);
        assert_eq!(q(&s), [(0, 3), (10, 1)]);
        assert_eq!(s.budget(), Nanos(3));
        s.unblock(Nanos(3), UnblockCtx::default());
        s.update_budget(Nanos(3));
        assert_eq!(q(&s), [(3, 3), (10, 1)]);
        assert_eq!(s.budget(), Nanos(3));
        s.end_timeslice(Nanos(6), Nanos(3), true);
        assert_eq!(q(&s), [(10, 1), (13, 3)]);
        assert_eq!(s.budget(), Nanos(0));
        assert!(!s.is_foreground());
        assert_eq!(s.next_event(Nanos(6)), Some(Nanos(10)));
        assert_eq!(s.queued_sum(), Nanos(4));
    }

    /// Alg. 13 merge: C=4, T=5. Run 2 from 0, block at 2: (0,2),(5,2).
    /// Wake at 4: head -> 4 with b=2; second_t=5 <= 4+2 -> merge into
    /// (4,4): the server may run 4 contiguous units.
    #[test]
    fn merge_on_unblock() {
        let mut s = ss(4, 5, 32);
        s.end_timeslice(Nanos(2), Nanos(2), false);
        assert_eq!(q(&s), [(0, 2), (5, 2)]);
        s.unblock(Nanos(4), UnblockCtx::default());
        assert_eq!(q(&s), [(4, 4)]);
        s.update_budget(Nanos(4));
        assert_eq!(s.budget(), Nanos(4));
    }

    /// Alg. 11 overrun: C=2, T=10, budget 2 but the server is charged 3
    /// (a non-preemptible section). Head (0,2) is exhausted and goes to
    /// (10,2); no other replenishment, so the 1-unit overrun delays the head
    /// to 11 (line 10).
    #[test]
    fn overrun_delays_head() {
        let mut s = ss(2, 10, 32);
        s.end_timeslice(Nanos(3), Nanos(3), true);
        assert_eq!(q(&s), [(11, 2)]);
        assert_eq!(s.budget(), Nanos(0));
        assert_eq!(s.next_event(Nanos(3)), Some(Nanos(11)));
    }

    /// Alg. 11 lines 11-16: an overrun that makes the head overlap the
    /// following replenishment merges them at the head's time.
    #[test]
    fn overrun_merges_into_following() {
        let mut s = ss(4, 10, 32);
        // run 1 and block: (0,3),(10,1)
        s.end_timeslice(Nanos(1), Nanos(1), false);
        // wake at 1, run 3 + 6 overrun = 9 (until 10): head (1,3) exhausted
        // -> (11,3); queue (10,1),(11,3); usage 6 >= 1 -> (10,1) exhausted
        // too -> (20,1); usage 5 < 3? no: loop continues on (11,3): 5>=3 ->
        // (21,3), usage 2; head (20,1): 2 >= 1 -> (30,1), usage 1; head
        // (21,3): overrun 1 -> (22,3); 22+3 >= 30? no.
        s.unblock(Nanos(1), UnblockCtx::default());
        s.end_timeslice(Nanos(10), Nanos(9), true);
        assert_eq!(q(&s), [(22, 3), (30, 1)]);
        assert_eq!(s.queued_sum(), Nanos(4));
    }

    /// A usage of many budgets at once (a caller that charges hours in one
    /// slice): `skip_whole_rounds` then the loop give exactly the loop's
    /// queue, usage and operation count, on queues built by random
    /// slices, blocks and wake-ups; the skip does fire (fewer loop turns).
    #[test]
    fn whole_rounds_skip_equals_the_loop() {
        let mut rng = 0x9e37_79b9_7f4a_7c15_u64;
        let mut next = |m: u64| {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            rng % m
        };
        let mut skipped = 0;
        for _ in 0..2_000 {
            let (c, t) = (1 + next(20), 21 + next(30));
            let mut s = ss(c, t, 2 + next(6) as usize);
            let mut now = 0;
            for _ in 0..next(8) {
                now += next(2 * t);
                s.unblock(Nanos(now), UnblockCtx::default());
                s.update_budget(Nanos(now));
                let used = next(s.budget().as_ns() + 1);
                now += used;
                s.end_timeslice(Nanos(now), Nanos(used), next(2) == 0);
            }
            s.usage = Nanos(s.usage.as_ns() + next(60 * c));
            let mut slow = s.clone();
            slow.exhaust_used();
            let ops = s.ops;
            s.skip_whole_rounds();
            skipped += u64::from(s.ops != ops);
            s.exhaust_used();
            assert_eq!((q(&s), s.usage, s.ops), (q(&slow), slow.usage, slow.ops));
        }
        assert!(skipped > 500, "the skip fired {skipped} times");
    }

    /// The hang it removes: budget 2 ns per 10 ns charged 10^15 ns at once
    /// (5 * 10^14 loop turns before); and a charge near `u64::MAX`.
    #[test]
    fn a_huge_overrun_is_one_step() {
        let mut s = ss(2, 10, 32);
        s.end_timeslice(
            Nanos(1_000_000_000_000_000),
            Nanos(1_000_000_000_000_000),
            true,
        );
        // 5 * 10^14 rounds of (0,2) -> (10 * 5 * 10^14, 2), no overrun left
        assert_eq!(q(&s), [(5_000_000_000_000_000, 2)]);
        assert_eq!(s.usage(), Nanos(0));
        let mut s = ss(2, 10, 32);
        s.end_timeslice(Nanos::MAX, Nanos::MAX, true);
        assert_eq!(q(&s), [(u64::MAX, 2)]);
        assert_eq!(s.usage(), Nanos(1));
    }

    /// Alg. 12 full queue: with max_repl = 2 and two replenishments queued,
    /// a block pushes the remnant into the next replenishment.
    #[test]
    fn full_queue_pushes_remnant_into_next() {
        let mut s = ss(4, 10, 2);
        s.end_timeslice(Nanos(1), Nanos(1), false); // (0,3),(10,1)
        s.unblock(Nanos(2), UnblockCtx::default()); // (2,3),(10,1)
        s.end_timeslice(Nanos(3), Nanos(1), false);
        // queue full: pop (2,3), remnant 2 goes into (10,1) -> (10,3); then
        // add the consumed 1 one period after the new head: 10 + 10 = 20.
        assert_eq!(q(&s), [(10, 3), (20, 1)]);
        assert_eq!(s.queued_sum(), Nanos(4));
        // the remnant is no longer available now: capacity 0 until 10
        assert_eq!(s.budget(), Nanos(0));
        assert_eq!(s.queue_len(), 2);
    }
}
