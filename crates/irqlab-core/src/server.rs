//! Servers (VCPUs): the common interface and the policy enum.
//!
//! What it is: every budgeted server of irqlab implements the four hooks of
//! QUEST-VCPU Alg. 1 -- `end_timeslice`, `update_budget`, `next_event`,
//! `unblock` -- plus a priority key. The scheduler (`crate::scheduler`) is the
//! only caller; it owns the run queues and the clock contract.
//!
//! Design principles:
//! * A policy sees only time values the caller passes in (`now`), never a clock.
//! * Hooks are total functions: valid state and any `now` >= the last `now`
//!   never panic; arithmetic saturates.
//! * Policies are a closed enum (no trait objects): static dispatch, `no_std`.

use crate::cbs::Cbs;
use crate::error::CoreError;
use crate::periodic::{DeferrableServer, PollingServer};
use crate::pibs::Pibs;
use crate::sporadic::SporadicServer;
use crate::time::Nanos;

/// Scheduling class, compared first (QUEST-VCPU has only the fixed-priority
/// class; the deadline class models Linux SCHED_DEADLINE for baselines).
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Class {
    /// EDF by absolute deadline (`Cbs`), above every fixed-priority server.
    Deadline = 0,
    /// Fixed priority: rate-monotonic by period or an explicit rank.
    FixedPriority = 1,
}

/// Total order of servers: class, then the policy's key, then I/O VCPUs
/// before other servers of the same key (an I/O VCPU that inherits a Main
/// VCPU's period works on that VCPU's behalf: its task waits for it), then
/// the server id (deterministic ties). Smaller is more urgent.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PriorityKey {
    pub class: Class,
    pub key: u64,
    /// 0 for I/O VCPUs (PIBS), 1 for the others.
    pub tie: u8,
    pub id: usize,
}

/// How a fixed-priority server gets its key.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum ServerPriority {
    /// Rate-monotonic: key = period in ns (QUEST-VCPU §2.1, "priorities are
    /// set inversely proportional to VCPU periods"). For PIBS: the inherited
    /// period (Alg. 10).
    RateMonotonic,
    /// An explicit rank on the same scale: smaller is more urgent. Ranks sit
    /// among RM servers as if they were periods in ns (rank 1..99 is above
    /// every RM server with a period of 100 ns or more).
    Rank(u64),
}

/// What a wake-up tells the server (QUEST-VCPU Alg. 2 line 3 / Alg. 10).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Default)]
pub struct UnblockCtx {
    /// The server was already running or runnable before this wake-up.
    pub was_active: bool,
    /// The server is the one currently dispatched on the CPU.
    pub running: bool,
    /// For an I/O VCPU: the period `M_T` of the Main VCPU whose I/O is being
    /// served (PIBS priority inheritance, Alg. 10).
    pub inherit_period: Option<Nanos>,
}

/// The four hooks of QUEST-VCPU Alg. 1, plus what the scheduler needs to
/// order servers.
pub trait ServerPolicy {
    /// Alg. 1 line 2: the server ran for `used` ending at `now`; `runnable`
    /// says whether it still has work (false: it blocked).
    fn end_timeslice(&mut self, now: Nanos, used: Nanos, runnable: bool);
    /// Alg. 1 line 3 / Alg. 2 line 4: bring the budget up to date at `now`.
    fn update_budget(&mut self, now: Nanos);
    /// Alg. 1 line 15: the next time the budget can change on its own
    /// (a replenishment), if any, strictly after `now`.
    fn next_event(&self, now: Nanos) -> Option<Nanos>;
    /// Alg. 2 line 3: a thread of this server woke up.
    fn unblock(&mut self, now: Nanos, ctx: UnblockCtx);
    /// Budget available now (as of the last `update_budget`/`end_timeslice`).
    fn budget(&self) -> Nanos;
    /// Class and key (the id is added by the scheduler).
    fn key(&self) -> (Class, u64);
    /// May this server run below every server with budget once depleted?
    fn background(&self) -> bool {
        false
    }
    /// Rank among servers with an equal key (see [`PriorityKey`]).
    fn tie(&self) -> u8 {
        1
    }
}

/// A server policy with its parameters and state.
#[derive(Clone, Debug)]
#[repr(u8)]
pub enum Server {
    Sporadic(SporadicServer),
    Pibs(Pibs),
    Deferrable(DeferrableServer),
    Polling(PollingServer),
    Cbs(Cbs),
    Unbounded(Unbounded),
}

macro_rules! dispatch {
    ($self:expr, $s:ident => $e:expr) => {
        match $self {
            Server::Sporadic($s) => $e,
            Server::Pibs($s) => $e,
            Server::Deferrable($s) => $e,
            Server::Polling($s) => $e,
            Server::Cbs($s) => $e,
            Server::Unbounded($s) => $e,
        }
    };
}

impl ServerPolicy for Server {
    #[inline]
    fn end_timeslice(&mut self, now: Nanos, used: Nanos, runnable: bool) {
        dispatch!(self, s => s.end_timeslice(now, used, runnable))
    }
    #[inline]
    fn update_budget(&mut self, now: Nanos) {
        dispatch!(self, s => s.update_budget(now))
    }
    #[inline]
    fn next_event(&self, now: Nanos) -> Option<Nanos> {
        dispatch!(self, s => s.next_event(now))
    }
    #[inline]
    fn unblock(&mut self, now: Nanos, ctx: UnblockCtx) {
        dispatch!(self, s => s.unblock(now, ctx))
    }
    #[inline]
    fn budget(&self) -> Nanos {
        dispatch!(self, s => s.budget())
    }
    fn key(&self) -> (Class, u64) {
        dispatch!(self, s => s.key())
    }
    fn background(&self) -> bool {
        dispatch!(self, s => s.background())
    }
    fn tie(&self) -> u8 {
        dispatch!(self, s => s.tie())
    }
}

impl Server {
    /// `key()` and `tie()` in one dispatch (the scheduler's hot path).
    #[inline]
    pub fn order(&self) -> (Class, u64, u8) {
        dispatch!(self, s => {
            let (class, key) = s.key();
            (class, key, s.tie())
        })
    }

    /// `update_budget(now)`, then `budget()` and `order()`, in one dispatch
    /// (the scheduler's hot path: Alg. 1 line 3 and the key it orders by).
    #[inline]
    pub(crate) fn updated(&mut self, now: Nanos) -> (Nanos, (Class, u64, u8)) {
        dispatch!(self, s => updated(s, now))
    }

    /// `unblock(now, ctx)`, then `updated(now)`, in one dispatch (QUEST-VCPU
    /// Alg. 2 lines 3-4 on the scheduler's hot path). For the sporadic
    /// server the capacity is computed once (`SporadicServer::unblocked`).
    #[inline]
    pub(crate) fn unblocked(&mut self, now: Nanos, ctx: UnblockCtx) -> (Nanos, (Class, u64, u8)) {
        match self {
            // the capacity computed once (see `SporadicServer::unblocked`)
            Server::Sporadic(s) => {
                s.unblocked(now, ctx);
                let (class, key) = s.key();
                (s.budget(), (class, key, s.tie()))
            }
            _ => self.unblocked_other(now, ctx),
        }
    }

    /// `unblocked` of the other policies (out of line, so that the
    /// sporadic server's wake-up builds no context it does not read).
    #[inline(never)]
    fn unblocked_other(&mut self, now: Nanos, ctx: UnblockCtx) -> (Nanos, (Class, u64, u8)) {
        dispatch!(self, s => {
            s.unblock(now, ctx);
            updated(s, now)
        })
    }

    /// `end_timeslice(now, used, true)`, then `updated(now)`, in one
    /// dispatch (Alg. 1 lines 2-3 for a server that stays runnable; the
    /// scheduler's hot path). For the sporadic server the second capacity
    /// computation is skipped: it would read the state `end_timeslice`
    /// just left at the same `now` (see `SporadicServer::ended`).
    #[inline]
    pub(crate) fn ended(&mut self, now: Nanos, used: Nanos) -> (Nanos, (Class, u64, u8)) {
        match self {
            Server::Sporadic(s) => {
                s.ended(now, used);
                let (class, key) = s.key();
                (s.budget(), (class, key, s.tie()))
            }
            _ => self.ended_other(now, used),
        }
    }

    /// `ended` of the other policies (out of line, as `unblocked_other`).
    #[inline(never)]
    fn ended_other(&mut self, now: Nanos, used: Nanos) -> (Nanos, (Class, u64, u8)) {
        dispatch!(self, s => {
            s.end_timeslice(now, used, true);
            updated(s, now)
        })
    }

    /// Short policy name for reports and traces.
    pub fn kind(&self) -> &'static str {
        match self {
            Server::Sporadic(_) => "sporadic",
            Server::Pibs(_) => "pibs",
            Server::Deferrable(_) => "deferrable",
            Server::Polling(_) => "polling",
            Server::Cbs(_) => "cbs",
            Server::Unbounded(_) => "unbounded",
        }
    }
}

/// `Server::updated` for one policy.
#[inline]
fn updated<P: ServerPolicy>(s: &mut P, now: Nanos) -> (Nanos, (Class, u64, u8)) {
    s.update_budget(now);
    let (class, key) = s.key();
    (s.budget(), (class, key, s.tie()))
}

/// A plain fixed-priority thread container with no budget limit (e.g.
/// Linux ksoftirqd under SCHED_FIFO). Always has budget.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unbounded {
    rank: u64,
}

impl Unbounded {
    /// `rank`: smaller is more urgent (see [`ServerPriority::Rank`]).
    pub fn new(rank: u64) -> Unbounded {
        Unbounded { rank }
    }
}

impl ServerPolicy for Unbounded {
    fn end_timeslice(&mut self, _now: Nanos, _used: Nanos, _runnable: bool) {}
    fn update_budget(&mut self, _now: Nanos) {}
    fn next_event(&self, _now: Nanos) -> Option<Nanos> {
        None
    }
    fn unblock(&mut self, _now: Nanos, _ctx: UnblockCtx) {}
    fn budget(&self) -> Nanos {
        Nanos::MAX
    }
    fn key(&self) -> (Class, u64) {
        (Class::FixedPriority, self.rank)
    }
}

/// Shared parameter check: `0 < budget <= period`.
pub(crate) fn check_budget_period(budget: Nanos, period: Nanos) -> Result<(), CoreError> {
    if period.is_zero() {
        return Err(CoreError::ZeroPeriod);
    }
    if budget.is_zero() {
        return Err(CoreError::ZeroBudget);
    }
    if budget > period {
        return Err(CoreError::BudgetExceedsPeriod { budget, period });
    }
    Ok(())
}

/// Key of a fixed-priority server with a period.
pub(crate) fn fp_key(priority: ServerPriority, period: Nanos) -> (Class, u64) {
    match priority {
        ServerPriority::RateMonotonic => (Class::FixedPriority, period.as_ns()),
        ServerPriority::Rank(r) => (Class::FixedPriority, r),
    }
}
