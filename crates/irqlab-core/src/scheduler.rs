//! The per-CPU scheduler: QUEST-VCPU Alg. 1 (`schedule`) and Alg. 2
//! (`wakeup`), plus `block`.
//!
//! What it is: the one place where irqlab decides what runs. It owns the
//! servers of one physical CPU and their threads; the simulator and the Linux
//! runtime feed it time and events and carry out its `Dispatch`.
//!
//! Contract (LITMUS^RT reservation style): the caller passes `now` (never
//! decreasing) to every call; `schedule` charges the time since the previous
//! call to the server that was dispatched, decides, and returns
//! `next_update`, the latest time by which `schedule` must be called again
//! (budget exhaustion of the chosen server, the earliest replenishment of a
//! runnable server of higher priority, or the end of a round-robin slice).
//! The caller must also call `schedule` when `wakeup` asks for preemption and
//! when the running thread blocks.
//!
//! Design principles:
//! * O(log n) per decision in the number of servers (10,000 servers on a
//!   CPU is supported): servers with budget sit in a priority heap indexed
//!   by server (`IdHeap`: one sift per insert or removal); runnable
//!   servers waiting for budget sit in a time-ordered heap and in a
//!   priority-ordered index augmented with subtree minima (`PrioIndex`), so
//!   Alg. 1 lines 13-17 are a single O(log n) query. Quest scans lists.
//! * Order: class (deadline > fixed priority), then the policy key, then
//!   the server id (deterministic ties). Depleted servers in background mode
//!   run below every server with budget; their background time is not
//!   charged to their budget.
//! * Threads inside a server: fixed priority (FIFO among equals, like
//!   SCHED_FIFO) or round robin with a quantum.
//! * The hot path (for speed, docs/performance.md): a server's place holds the packed key it is
//!   filed under, and a server is moved only when its budget or key
//!   changed; the hooks a step needs in a row (`unblock`, `update_budget`,
//!   the key) run behind one dispatch (`Server::updated`,
//!   `Server::unblocked`); the order stays Alg. 1 and 2 as cited below.
//!   The commonest steps (an idle server woken with budget, the running
//!   thread blocking, a slice that leaves budget) are inlined; what they do
//!   not need (round robin, the periodic servers' stolen time, due
//!   replenishments, background and idle, a thread of the running server
//!   waking) is out of line. The dispatched server's key is kept with the
//!   dispatch for Alg. 2's preemption test. `schedule`, `wakeup` and
//!   `block` check first whether their commonest case applies (sporadic
//!   and unbounded servers with a fixed-priority queue), change nothing
//!   until it does, and otherwise run the general code out of line
//!   (`*_rest`), so that the common case holds nothing across a call; a
//!   property test checks them against the general code alone.

use alloc::collections::{BTreeSet, VecDeque};
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;
use core::cmp::Reverse;

use crate::error::CoreError;
use crate::id_heap::{id_of, IdHeap};
use crate::pibs::Pibs;
use crate::prio_index::PrioIndex;
use crate::server::{Class, PriorityKey, Server, ServerPolicy, UnblockCtx};
use crate::time::Nanos;

/// Index of a server in its scheduler.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ServerId(pub usize);

/// Index of a thread in its scheduler.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ThreadId(pub usize);

/// How a server picks among its runnable threads.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum ThreadPolicy {
    /// Highest thread priority first; FIFO among equal priorities.
    FixedPriority,
    /// Round robin with the given quantum.
    RoundRobin { quantum: Nanos },
}

/// What to run now, and until when at the latest.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Dispatch {
    /// `None`: idle.
    pub server: Option<ServerId>,
    pub thread: Option<ThreadId>,
    /// The server runs depleted, below every server with budget.
    pub background: bool,
    /// Call `schedule` again at this time at the latest (`None`: only on
    /// the next wake-up or block).
    pub next_update: Option<Nanos>,
}

/// Counters for the scheduler-overhead model (QUEST-VCPU Figures 4, 7).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct SchedStats {
    pub schedule_calls: u64,
    pub wakeups: u64,
    pub blocks: u64,
    /// Dispatches of a different server than before.
    pub server_switches: u64,
    /// Time charged to foreground servers and spent in background mode.
    pub busy: Nanos,
    pub background: Nanos,
}

#[derive(Clone, Debug, PartialEq, Eq)]
#[repr(u8)]
enum Place {
    /// Not runnable.
    Idle,
    /// Dispatched now.
    Running,
    /// Runnable with budget, in `ready` under this `packed` key.
    Ready(u128),
    /// Runnable without budget; replenishment at `time` if any.
    Waiting {
        key: u128,
        time: Option<Nanos>,
        background: bool,
    },
}

/// A fixed-priority run-queue entry: priority (higher first), wake-up
/// sequence (FIFO among equals), thread.
type FpEntry = (Reverse<u32>, u64, usize);

/// Threads of a fixed-priority server in dispatch order. Most servers have
/// one thread, or one runnable at a time: its entry is kept in place (no
/// heap block, no pointer to follow on a wake-up, a decision or a block).
/// A second runnable thread moves the queue to a sorted vector (a binary
/// search and a short move) up to `FP_SMALL` threads, an ordered set
/// beyond, so a server with thousands of threads stays O(log n). A queue
/// never moves back: one that has held two stays a vector.
#[derive(Clone, Debug)]
enum FpQueue {
    One(Option<FpEntry>),
    Small(Vec<FpEntry>),
    Large(BTreeSet<FpEntry>),
}

const FP_SMALL: usize = 32;

impl FpQueue {
    #[inline(always)]
    fn first(&self) -> Option<&FpEntry> {
        match self {
            FpQueue::One(e) => e.as_ref(),
            FpQueue::Small(v) => v.first(),
            FpQueue::Large(s) => s.first(),
        }
    }
    /// The common case in line (an empty queue in place), the rest apart.
    #[inline(always)]
    fn insert(&mut self, e: FpEntry) {
        match self {
            FpQueue::One(x @ None) => *x = Some(e),
            _ => self.insert_more(e),
        }
    }
    #[inline(never)]
    fn insert_more(&mut self, e: FpEntry) {
        match self {
            FpQueue::One(None) => *self = FpQueue::One(Some(e)),
            FpQueue::One(Some(x)) => {
                let x = *x;
                *self = FpQueue::Small(if x < e { vec![x, e] } else { vec![e, x] });
            }
            FpQueue::Small(v) => {
                let pos = v.partition_point(|x| *x < e);
                v.insert(pos, e);
                if v.len() > FP_SMALL {
                    *self = FpQueue::Large(v.drain(..).collect());
                }
            }
            FpQueue::Large(s) => {
                s.insert(e);
            }
        }
    }
    #[inline(always)]
    fn remove(&mut self, e: &FpEntry) {
        match self {
            FpQueue::One(x) => {
                if x.as_ref() == Some(e) {
                    *x = None;
                }
            }
            _ => self.remove_more(e),
        }
    }
    #[inline(never)]
    fn remove_more(&mut self, e: &FpEntry) {
        match self {
            FpQueue::One(_) => self.remove(e),
            FpQueue::Small(v) => {
                if let Ok(p) = v.binary_search(e) {
                    v.remove(p);
                }
            }
            FpQueue::Large(s) => {
                s.remove(e);
            }
        }
    }
}

#[derive(Clone, Debug)]
enum RunQueue {
    Fp(FpQueue),
    Rr {
        quantum: Nanos,
        queue: VecDeque<usize>,
        slice_used: Nanos,
    },
}

impl RunQueue {
    #[inline(always)]
    fn first(&self) -> Option<usize> {
        match self {
            RunQueue::Fp(s) => s.first().map(|e| e.2),
            RunQueue::Rr { queue, .. } => queue.front().copied(),
        }
    }
}

#[derive(Clone, Debug)]
struct ServerSlot {
    name: String,
    server: Server,
    runq: RunQueue,
    /// Runnable threads (the length of `runq`, kept here so that the hot
    /// path does not look into the queue).
    nrun: u32,
    place: Place,
}

#[derive(Clone, Debug)]
struct ThreadSlot {
    name: String,
    server: usize,
    priority: u32,
    runnable: bool,
    /// While runnable, the wake-up sequence of its fixed-priority
    /// run-queue entry `(Reverse(priority), seq, thread)`.
    seq: u64,
}

#[derive(Copy, Clone, Debug)]
struct Current {
    server: usize,
    thread: usize,
    background: bool,
    /// The server's packed key now (`pkey(server)`): set at the dispatch
    /// and refreshed by the only calls that change a dispatched server's
    /// key between two `schedule`s (`unblock` of a thread of the running
    /// server, `io_service_done`), so the preemption test of Alg. 2 line 5
    /// reads it instead of asking the policy (for speed, docs/performance.md).
    key: u128,
}

/// One physical CPU's scheduler.
#[derive(Clone, Debug, Default)]
pub struct Scheduler {
    servers: Vec<ServerSlot>,
    threads: Vec<ThreadSlot>,
    /// Runnable servers with budget, by `packed` key.
    ready: IdHeap,
    /// Depleted runnable servers in background mode, by `packed` key.
    background: IdHeap,
    waiting: PrioIndex,
    /// Replenishment times of waiting servers, by `timer` key.
    timers: IdHeap,
    current: Option<Current>,
    t_prev: Nanos,
    /// Time since `t_prev` taken from the running server by someone else
    /// (a hypervisor's ISRs): not charged at the next `schedule`.
    stolen: Nanos,
    /// Where it fell, when known: `(end, length)` (see `exclude_until`).
    stolen_at: Vec<(Nanos, Nanos)>,
    last_now: Nanos,
    seq: u64,
    stats: SchedStats,
}

#[cfg(test)]
std::thread_local! {
    /// Tests: `true` sends every call past the fast paths of `schedule`,
    /// `wakeup` and `block` (to check them against the general code).
    static GENERAL_ONLY: core::cell::Cell<bool> = const { core::cell::Cell::new(false) };
}

/// May a call take its fast path? (Always, outside tests.)
#[inline(always)]
fn fast_paths() -> bool {
    #[cfg(test)]
    {
        !GENERAL_ONLY.with(|g| g.get())
    }
    #[cfg(not(test))]
    {
        true
    }
}

/// `pack` of a `PriorityKey`.
#[cfg(test)]
fn packed(k: &PriorityKey) -> u128 {
    pack(k.class, k.key, k.tie, k.id)
}

/// A priority key as one `u128` in the same order (class, key, tie, id),
/// the id in the low 32 bits (`IdHeap`'s rule; `add_server` keeps ids
/// below 2^32 - 1, so `PrioIndex` may add 1 to a key).
#[inline]
fn pack(class: Class, key: u64, tie: u8, id: usize) -> u128 {
    (u128::from(class as u8) << 127)
        | (u128::from(key) << 63)
        | (u128::from(tie) << 55)
        | id as u128
}

/// A replenishment timer as one `u128` ordered by (time, server).
#[inline]
fn timer(t: Nanos, id: usize) -> u128 {
    (u128::from(t.as_ns()) << 64) | id as u128
}

/// The time of a `timer` key.
#[inline]
fn timer_time(k: u128) -> Nanos {
    Nanos((k >> 64) as u64)
}

impl Scheduler {
    pub fn new() -> Scheduler {
        Scheduler::default()
    }

    fn check_time(&mut self, now: Nanos) -> Result<(), CoreError> {
        if now < self.last_now {
            return Err(CoreError::TimeWentBackwards {
                now,
                last: self.last_now,
            });
        }
        self.last_now = now;
        Ok(())
    }

    fn slot(&self, id: ServerId) -> Result<&ServerSlot, CoreError> {
        self.servers.get(id.0).ok_or(CoreError::UnknownServer(id.0))
    }

    fn thread_slot(&self, id: ThreadId) -> Result<&ThreadSlot, CoreError> {
        self.threads.get(id.0).ok_or(CoreError::UnknownThread(id.0))
    }

    /// Room for `servers` more servers and `threads` more threads, taken
    /// at once: a caller that knows its model's size saves the copies of
    /// tables that double as they fill (for speed, docs/performance.md). Only the speed differs.
    pub fn reserve(&mut self, servers: usize, threads: usize) {
        self.servers.reserve_exact(servers);
        self.threads.reserve_exact(threads);
        self.ready.reserve(self.servers.len() + servers);
    }

    /// Add a server. Servers start idle (no runnable thread).
    pub fn add_server(
        &mut self,
        name: impl Into<String>,
        server: Server,
        threads: ThreadPolicy,
    ) -> Result<ServerId, CoreError> {
        if self.servers.len() >= u32::MAX as usize {
            return Err(CoreError::TooManyServers);
        }
        let runq = match threads {
            ThreadPolicy::FixedPriority => RunQueue::Fp(FpQueue::One(None)),
            ThreadPolicy::RoundRobin { quantum } => {
                if quantum.is_zero() {
                    return Err(CoreError::ZeroQuantum);
                }
                RunQueue::Rr {
                    quantum,
                    queue: VecDeque::new(),
                    slice_used: Nanos::ZERO,
                }
            }
        };
        self.servers.push(ServerSlot {
            name: name.into(),
            server,
            runq,
            nrun: 0,
            place: Place::Idle,
        });
        Ok(ServerId(self.servers.len() - 1))
    }

    /// Add a thread to a server; threads start blocked. `priority`: higher
    /// is more urgent (used by fixed-priority servers).
    pub fn add_thread(
        &mut self,
        name: impl Into<String>,
        server: ServerId,
        priority: u32,
    ) -> Result<ThreadId, CoreError> {
        self.slot(server)?;
        self.threads.push(ThreadSlot {
            name: name.into(),
            server: server.0,
            priority,
            runnable: false,
            seq: 0,
        });
        Ok(ThreadId(self.threads.len() - 1))
    }

    pub fn num_servers(&self) -> usize {
        self.servers.len()
    }
    pub fn num_threads(&self) -> usize {
        self.threads.len()
    }
    pub fn server(&self, id: ServerId) -> Result<&Server, CoreError> {
        Ok(&self.slot(id)?.server)
    }
    pub fn server_name(&self, id: ServerId) -> Result<&str, CoreError> {
        Ok(&self.slot(id)?.name)
    }
    pub fn thread_name(&self, id: ThreadId) -> Result<&str, CoreError> {
        Ok(&self.thread_slot(id)?.name)
    }
    pub fn thread_server(&self, id: ThreadId) -> Result<ServerId, CoreError> {
        Ok(ServerId(self.thread_slot(id)?.server))
    }
    pub fn thread_runnable(&self, id: ThreadId) -> Result<bool, CoreError> {
        Ok(self.thread_slot(id)?.runnable)
    }
    /// The server's priority key as the scheduler orders it now.
    pub fn priority_key(&self, id: ServerId) -> Result<PriorityKey, CoreError> {
        self.slot(id)?;
        Ok(self.key_of(id.0))
    }
    pub fn is_runnable(&self, id: ServerId) -> Result<bool, CoreError> {
        Ok(self.slot(id)?.nrun > 0)
    }
    pub fn stats(&self) -> SchedStats {
        self.stats
    }
    /// The dispatched server and thread, if any.
    pub fn current(&self) -> Option<(ServerId, ThreadId)> {
        self.current
            .map(|c| (ServerId(c.server), ThreadId(c.thread)))
    }
    /// Replenishment-queue operations of every sporadic server so far.
    pub fn replenishment_ops(&self) -> u64 {
        self.servers
            .iter()
            .map(|s| match &s.server {
                Server::Sporadic(ss) => ss.ops,
                _ => 0,
            })
            .sum()
    }

    fn key_of(&self, id: usize) -> PriorityKey {
        let (class, key, tie) = self.servers[id].server.order();
        PriorityKey {
            class,
            key,
            tie,
            id,
        }
    }

    /// `packed(&self.key_of(id))`.
    #[inline]
    fn pkey(&self, id: usize) -> u128 {
        let (class, key, tie) = self.servers[id].server.order();
        pack(class, key, tie, id)
    }

    /// Remove a server from whichever set holds it.
    #[inline(always)]
    fn unplace(&mut self, id: usize) {
        match self.servers[id].place {
            Place::Idle => return,
            Place::Running => {}
            Place::Ready(_) => self.ready.remove(id),
            Place::Waiting {
                time, background, ..
            } => self.unplace_waiting(id, time.is_some(), background),
        }
        self.servers[id].place = Place::Idle;
    }

    /// `unplace` of a server waiting for budget (out of line: not the
    /// scheduler's commonest step).
    #[inline(never)]
    fn unplace_waiting(&mut self, id: usize, timed: bool, background: bool) {
        if timed {
            self.waiting.remove(id);
            self.timers.remove(id);
        }
        if background {
            self.background.remove(id);
        }
    }

    /// Move a server to where it belongs at `now`. A ready server that stays
    /// ready with the same key is left in place: no set operation (the
    /// common case of a dispatched server that keeps its budget).
    #[inline(always)]
    fn replace(&mut self, id: usize, now: Nanos) {
        let slot = &mut self.servers[id];
        if slot.nrun == 0 {
            self.unplace(id);
            return;
        }
        // Alg. 1 line 3: `update-budget` before checking the budget.
        let (budget, (class, key, tie)) = slot.server.updated(now);
        self.replace_updated(id, now, pack(class, key, tie, id), budget);
    }

    /// `replace` for a runnable server whose budget is up to date: its
    /// packed key and budget.
    #[inline(always)]
    fn replace_updated(&mut self, id: usize, now: Nanos, key: u128, budget: Nanos) {
        if let Place::Ready(old) = self.servers[id].place {
            if old == key && !budget.is_zero() {
                return;
            }
        }
        self.unplace(id);
        self.place_updated(id, now, key, budget);
    }

    /// Put an unplaced server where it belongs at `now` (Alg. 1 line 3:
    /// `update-budget` before checking the budget).
    fn place(&mut self, id: usize, now: Nanos) {
        let slot = &mut self.servers[id];
        if slot.nrun == 0 {
            slot.place = Place::Idle;
            return;
        }
        let (budget, (class, key, tie)) = slot.server.updated(now);
        self.place_updated(id, now, pack(class, key, tie, id), budget);
    }

    /// `place` for a runnable server whose budget is up to date: its
    /// packed key and budget.
    #[inline(always)]
    fn place_updated(&mut self, id: usize, now: Nanos, key: u128, budget: Nanos) {
        if !budget.is_zero() {
            self.ready.insert(key);
            self.servers[id].place = Place::Ready(key);
            return;
        }
        let s = &self.servers[id].server;
        let time = s.next_event(now);
        let background = s.background();
        if let Some(t) = time {
            self.waiting.insert(key, t);
            self.timers.insert(timer(t, id));
        }
        if background {
            self.background.insert(key);
        }
        self.servers[id].place = Place::Waiting {
            key,
            time,
            background,
        };
    }

    /// QUEST-VCPU Alg. 1 `schedule`.
    ///
    /// The commonest decision is done here (for speed, docs/performance.md): the server that ran
    /// is an unbounded server, or a foreground sporadic server whose slice
    /// end (Alg. 3, and Alg. 4 when it stays runnable) is Alg. 3's common
    /// case (`SporadicServer::slice_ended`), with a fixed-priority queue;
    /// no replenishment fell due, and a server has budget. It checks all
    /// that before it changes anything; every other decision is
    /// `schedule_rest`, the whole of Alg. 1 with the periodic servers'
    /// charge with stolen time, round robin, due replenishments, and the
    /// background and idle choices.
    pub fn schedule(&mut self, now: Nanos) -> Result<Dispatch, CoreError> {
        self.check_time(now)?;
        let (Some(cur), true) = (self.current, fast_paths()) else {
            return Ok(self.schedule_rest(now));
        };
        // Lines 1-2: the elapsed time, less what was taken from the server
        // (see `exclude`).
        let dt = (now - self.t_prev) - self.stolen;
        let slot = &mut self.servers[cur.server];
        let runnable = slot.nrun > 0;
        let (RunQueue::Fp(_), Place::Ready(old), false) = (&slot.runq, &slot.place, cur.background)
        else {
            return Ok(self.schedule_rest(now));
        };
        let ended = match &mut slot.server {
            Server::Sporadic(ss) => ss.slice_ended(now, dt, runnable),
            // (its hooks do nothing, its budget is unlimited)
            Server::Unbounded(_) => true,
            _ => false,
        };
        if !ended {
            return Ok(self.schedule_rest(now));
        }
        // A server that stays runnable stays where it is filed when its
        // budget stays positive: under its key, as the key of a sporadic
        // or unbounded server is fixed at creation (`replace_updated`
        // finds `old == key`).
        debug_assert!(
            !runnable
                || *old == {
                    let (class, key, tie) = slot.server.order();
                    pack(class, key, tie, cur.server)
                }
        );
        // (from here on as `schedule_rest`, which would take the same
        // steps; `current` is overwritten by the dispatch, or taken by
        // `pick_cold`)
        self.stats.schedule_calls += 1;
        self.stats.busy += dt;
        self.stolen = Nanos::ZERO;
        if !runnable {
            // the server blocked: `unplace` from `ready`
            self.ready.remove(cur.server);
            self.servers[cur.server].place = Place::Idle;
        }
        self.stolen_at.clear();
        match self.ready.first() {
            Some(key) if self.timers.first().is_none_or(|k| timer_time(k) > now) => {
                Ok(self.pick_ready(now, Some(cur), key))
            }
            _ => Ok(self.pick_cold(now)),
        }
    }

    /// `schedule` past its commonest case (the time is checked).
    #[inline(never)]
    fn schedule_rest(&mut self, now: Nanos) -> Dispatch {
        self.stats.schedule_calls += 1;
        // Lines 1-2: charge the elapsed time to the current VCPU (less what
        // was taken from it, see `exclude`).
        let dt = (now - self.t_prev) - core::mem::take(&mut self.stolen);
        let prev = self.current.take();
        if let Some(cur) = prev {
            let charged = if cur.background {
                self.stats.background += dt;
                Nanos::ZERO
            } else {
                self.stats.busy += dt;
                dt
            };
            let slot = &mut self.servers[cur.server];
            let runnable = slot.nrun > 0;
            let rr = matches!(slot.runq, RunQueue::Rr { .. });
            // (a server that stays runnable gets Alg. 1 line 3's
            // update-budget in the same dispatch: `updated`, for `replace`)
            let updated = match &mut slot.server {
                Server::Deferrable(_) | Server::Polling(_) => {
                    self.charge_periodic(cur.server, now, charged, runnable);
                    None
                }
                s if runnable => Some(s.ended(now, charged)),
                s => {
                    s.end_timeslice(now, charged, false);
                    None
                }
            };
            if rr {
                self.rr_charge(cur, dt);
            }
            match updated {
                // (the round-robin step does not touch the server)
                Some((budget, (class, key, tie))) => {
                    self.replace_updated(cur.server, now, pack(class, key, tie, cur.server), budget)
                }
                None => self.replace(cur.server, now),
            }
        }
        self.pick(now, prev)
    }

    /// `pick` out of line (`schedule`'s fast path when a replenishment fell
    /// due or no server has budget).
    #[cold]
    #[inline(never)]
    fn pick_cold(&mut self, now: Nanos) -> Dispatch {
        let prev = self.current.take();
        self.pick(now, prev)
    }

    /// Alg. 1 from line 3, the server that ran charged and re-placed
    /// (`prev`: it, if any).
    #[inline(always)]
    fn pick(&mut self, now: Nanos, prev: Option<Current>) -> Dispatch {
        // A new slice starts (the buffer is kept).
        self.stolen_at.clear();
        // Replenishments due by now (Alg. 1 line 3, update-budget).
        if self.timers.first().is_some_and(|k| timer_time(k) <= now) {
            self.replenish(now);
        }
        // Line 3: highest priority with budget; else background; else idle.
        let Some(key) = self.ready.first() else {
            return self.pick_background(now, prev);
        };
        self.pick_ready(now, prev, key)
    }

    /// Line 3 of Alg. 1 when a server has budget: `key`, the first of
    /// `ready`, and lines 7 and 13-21.
    #[inline(always)]
    fn pick_ready(&mut self, now: Nanos, prev: Option<Current>, key: u128) -> Dispatch {
        // (A placed server's key is its key now: a key changes only in a
        // hook, and the scheduler re-places a server after calling one,
        // the running server at the top of `schedule`.)
        let sid = id_of(key);
        debug_assert_eq!(key, self.pkey(sid));
        // It stays in `ready` while it runs (its key is `key`): the next
        // `schedule` moves it only if its budget or key changed.
        // Line 13: budget exhaustion of the chosen VCPU.
        let b = self.servers[sid].server.budget();
        let mut next = (b != Nanos::MAX).then(|| now + b);
        // Lines 14-17: earliest next-event of a higher-priority VCPU.
        if let Some(t) = self.waiting.min_time_below(key) {
            next = Some(next.map_or(t, |n| n.min(t)));
        }
        self.dispatch(now, prev, sid, key, false, next)
    }

    /// Lines 7 and 19-21 of Alg. 1: dispatch the next thread of server
    /// `sid` (filed under `key`), with `next` the earliest time found so
    /// far for `next_update`.
    #[inline(always)]
    fn dispatch(
        &mut self,
        now: Nanos,
        prev: Option<Current>,
        sid: usize,
        key: u128,
        background: bool,
        mut next: Option<Nanos>,
    ) -> Dispatch {
        // Line 7: next thread of the chosen VCPU (the run queue is not
        // empty: only runnable servers are placed).
        let slot = &self.servers[sid];
        let tid = slot.runq.first().unwrap_or(usize::MAX);
        if matches!(slot.runq, RunQueue::Rr { .. }) {
            next = self.rr_dispatch(now, prev, sid, tid, next);
        }
        if prev.is_none_or(|p| p.server != sid) {
            self.stats.server_switches += 1;
        }
        // Lines 19-21.
        self.t_prev = now;
        self.current = Some(Current {
            server: sid,
            thread: tid,
            background,
            key,
        });
        Dispatch {
            server: Some(ServerId(sid)),
            thread: Some(ThreadId(tid)),
            background,
            next_update: next,
        }
    }

    /// Lines 1-2 of Alg. 1 for a deferrable or polling server: its charge
    /// splits a slice that crossed its period boundary, less the time
    /// taken from it (`exclude_until`).
    #[cold]
    #[inline(never)]
    fn charge_periodic(&mut self, id: usize, now: Nanos, charged: Nanos, runnable: bool) {
        let stolen_at = &self.stolen_at;
        let stolen_since = |from: Nanos| {
            stolen_at
                .iter()
                .map(|&(end, d)| end.min(now).saturating_sub((end - d).max(from)))
                .fold(Nanos::ZERO, |a, x| a + x)
        };
        match &mut self.servers[id].server {
            Server::Deferrable(ds) => ds.charge(now, charged, stolen_since),
            Server::Polling(ps) => ps.charge(now, charged, runnable, stolen_since),
            _ => {}
        }
    }

    /// A round-robin server's slice: the thread that ran used `dt` of its
    /// quantum; at the end of the quantum the next thread's turn comes.
    #[cold]
    #[inline(never)]
    fn rr_charge(&mut self, cur: Current, dt: Nanos) {
        if let RunQueue::Rr {
            quantum,
            queue,
            slice_used,
        } = &mut self.servers[cur.server].runq
        {
            if queue.front() == Some(&cur.thread) {
                *slice_used += dt;
                if *slice_used >= *quantum && queue.len() > 1 {
                    queue.rotate_left(1);
                    *slice_used = Nanos::ZERO;
                }
            }
        }
    }

    /// A round-robin server dispatches thread `tid`: a new thread starts
    /// a new quantum, and the end of the quantum bounds `next`.
    #[cold]
    #[inline(never)]
    fn rr_dispatch(
        &mut self,
        now: Nanos,
        prev: Option<Current>,
        sid: usize,
        tid: usize,
        next: Option<Nanos>,
    ) -> Option<Nanos> {
        if let RunQueue::Rr {
            quantum,
            queue,
            slice_used,
        } = &mut self.servers[sid].runq
        {
            if prev.is_none_or(|p| p.thread != tid) {
                *slice_used = Nanos::ZERO;
            }
            if queue.len() > 1 {
                let t = now + (*quantum - *slice_used);
                return Some(next.map_or(t, |n| n.min(t)));
            }
        }
        next
    }

    /// Replenishments due by `now` (Alg. 1 line 3, update-budget): each
    /// server whose timer fell due is re-placed.
    #[inline(never)]
    fn replenish(&mut self, now: Nanos) {
        while let Some(k) = self.timers.first() {
            let (t, id) = (timer_time(k), id_of(k));
            if t > now {
                break;
            }
            self.replace(id, now);
        }
    }

    /// Line 3 of Alg. 1 when no server has budget: the most urgent
    /// depleted server in background mode, else idle.
    #[inline(never)]
    fn pick_background(&mut self, now: Nanos, prev: Option<Current>) -> Dispatch {
        let Some(key) = self.background.first() else {
            self.t_prev = now;
            return Dispatch {
                server: None,
                thread: None,
                background: false,
                next_update: self.timers.first().map(timer_time),
            };
        };
        let sid = id_of(key);
        debug_assert_eq!(key, self.pkey(sid));
        self.unplace(sid);
        self.servers[sid].place = Place::Running;
        // Any replenishment, its own included, brings a foreground server
        // back.
        let mut next = self.timers.first().map(timer_time);
        if let Some(t) = self.servers[sid].server.next_event(now) {
            next = Some(next.map_or(t, |n| n.min(t)));
        }
        self.dispatch(now, prev, sid, key, true, next)
    }

    /// The latest time by which `schedule` must be called because a
    /// runnable server waits for a replenishment that would change the
    /// current decision: the earliest replenishment of a server above the
    /// dispatched one, or of any server when the CPU is idle or runs a
    /// server in background (Alg. 1 lines 14-17).
    ///
    /// A caller that does not call `schedule` after every `wakeup` (a
    /// simulator: `wakeup` asks for a decision only on preemption) merges
    /// this into the `next_update` it holds after a wake-up: a depleted
    /// server woken now may wait for a replenishment earlier than the
    /// `next_update` the last `schedule` returned.
    pub fn replenishment_due(&self) -> Option<Nanos> {
        match self.current {
            Some(c) if !c.background => {
                debug_assert_eq!(c.key, self.pkey(c.server));
                self.waiting.min_time_below(c.key)
            }
            _ => self.timers.first().map(timer_time),
        }
    }

    /// Time `d` of the current slice was taken from the running server by
    /// someone else -- a hypervisor's physical ISR, which VINT §III charges
    /// to the hypervisor, not to the interrupted VCPU: the next `schedule`
    /// does not charge it. No effect when the CPU is idle.
    pub fn exclude(&mut self, d: Nanos) {
        if self.current.is_some() {
            self.stolen += d;
        }
    }

    /// `exclude` for time taken over `[end - d, end)`: a deferrable server
    /// whose slice crosses its period boundary is then charged exactly for
    /// what it used after the boundary.
    pub fn exclude_until(&mut self, end: Nanos, d: Nanos) {
        if self.current.is_some() && !d.is_zero() {
            self.stolen += d;
            match self.stolen_at.last_mut() {
                Some((e, len)) if *e == end - d => {
                    *e = end;
                    *len += d;
                }
                _ => self.stolen_at.push((end, d)),
            }
        }
    }

    /// QUEST-VCPU Alg. 2 `wakeup` of a thread. `inherit_period` is the
    /// period of the Main VCPU on whose behalf an I/O VCPU's thread is woken
    /// (PIBS, Alg. 10); it may be given again for a thread that is already
    /// runnable (a further request). Returns `true` when the caller must
    /// call `schedule` now (line 5-6: preemption).
    ///
    /// The commonest wake-up, of the one thread of an idle fixed-priority
    /// queue of a sporadic server that gets budget or of an unbounded
    /// server, is done here with nothing live across a call; every other
    /// case is `wakeup_rest` (for speed, docs/performance.md).
    pub fn wakeup(
        &mut self,
        now: Nanos,
        thread: ThreadId,
        inherit_period: Option<Nanos>,
    ) -> Result<bool, CoreError> {
        self.check_time(now)?;
        let Scheduler {
            servers,
            threads,
            ready,
            current,
            seq,
            stats,
            ..
        } = self;
        let ts = threads
            .get_mut(thread.0)
            .ok_or(CoreError::UnknownThread(thread.0))?;
        let sid = ts.server;
        let slot = &mut servers[sid];
        if !ts.runnable
            && fast_paths()
            && slot.nrun == 0
            && matches!(slot.place, Place::Idle)
            && current.is_none_or(|c| c.server != sid)
        {
            if let RunQueue::Fp(q) = &mut slot.runq {
                // empty: `nrun` is its length
                debug_assert!(q.first().is_none());
                // Lines 2-4 of Alg. 2 (`unblock`, then `update_budget`;
                // the sporadic server's Alg. 13 and 4): only when the
                // server gets budget, else nothing changed yet. (An
                // unbounded server's hooks do nothing.)
                let got = match &mut slot.server {
                    Server::Sporadic(ss) => ss
                        .unblocked_idle(now)
                        .then(|| (ss.budget(), ss.key(), ss.tie())),
                    Server::Unbounded(u) => Some((u.budget(), u.key(), u.tie())),
                    _ => None,
                };
                if let Some((budget, (class, key), tie)) = got {
                    let k = pack(class, key, tie, sid);
                    // Line 1: the thread on its VCPU's run queue.
                    stats.wakeups += 1;
                    *seq += 1;
                    slot.nrun = 1;
                    q.insert((Reverse(ts.priority), *seq, thread.0));
                    ts.runnable = true;
                    ts.seq = *seq;
                    if budget.is_zero() {
                        return Ok(self.wakeup_depleted(now, sid, k));
                    }
                    ready.insert(k);
                    slot.place = Place::Ready(k);
                    // Line 5: preempt an idle CPU, a server in background,
                    // or one of lower priority.
                    return Ok(current.is_none_or(|c| {
                        debug_assert_eq!(c.key, self.pkey(c.server));
                        c.background || k < c.key
                    }));
                }
            }
        }
        self.wakeup_rest(now, thread, inherit_period)
    }

    /// `wakeup`'s fast path when the woken server got no budget (it does
    /// not happen: Alg. 13 acts only on a positive capacity and a merge
    /// adds to it; kept for exactness): placed as `wakeup_rest` would.
    #[cold]
    #[inline(never)]
    fn wakeup_depleted(&mut self, now: Nanos, sid: usize, k: u128) -> bool {
        self.replace_updated(sid, now, k, Nanos::ZERO);
        self.current.is_none()
            && matches!(
                self.servers[sid].place,
                Place::Waiting {
                    background: true,
                    ..
                }
            )
    }

    /// `wakeup` past its commonest case (the time is checked).
    #[inline(never)]
    fn wakeup_rest(
        &mut self,
        now: Nanos,
        thread: ThreadId,
        inherit_period: Option<Nanos>,
    ) -> Result<bool, CoreError> {
        // (the fields borrowed apart: one look-up of the thread and of its
        // server on the hot path)
        let Scheduler {
            servers,
            threads,
            ready,
            current,
            seq,
            stats,
            ..
        } = self;
        let ts = threads
            .get_mut(thread.0)
            .ok_or(CoreError::UnknownThread(thread.0))?;
        let was_runnable = ts.runnable;
        if was_runnable && inherit_period.is_none() {
            return Ok(false);
        }
        stats.wakeups += 1;
        let sid = ts.server;
        let slot = &mut servers[sid];
        let running = current.is_some_and(|c| c.server == sid);
        let was_active = running || slot.nrun > 0;
        // Line 1: place the thread on its VCPU's run queue.
        if !was_runnable {
            *seq += 1;
            slot.nrun += 1;
            match &mut slot.runq {
                RunQueue::Fp(set) => set.insert((Reverse(ts.priority), *seq, thread.0)),
                RunQueue::Rr { queue, .. } => queue.push_back(thread.0),
            }
            ts.runnable = true;
            ts.seq = *seq;
        }
        if running {
            return Ok(self.wakeup_running(now, sid, inherit_period, was_runnable));
        }
        // Lines 2-4: VCPU on the run queue, unblock, update-budget (the
        // server has a runnable thread now: `replace` in one dispatch).
        let ctx = UnblockCtx {
            was_active,
            running,
            inherit_period,
        };
        let (budget, (class, key, tie)) = slot.server.unblocked(now, ctx);
        let k = pack(class, key, tie, sid);
        // The commonest wake-up, an idle server that gets budget, is
        // `place_updated`'s first case, inlined here (for speed, docs/performance.md).
        let placed = !budget.is_zero() && matches!(slot.place, Place::Idle);
        if placed {
            ready.insert(k);
            slot.place = Place::Ready(k);
        } else {
            self.replace_updated(sid, now, k, budget);
        }
        // Line 5: preempt if the VCPU has budget (it is in `ready` under
        // `k`) and the current one is idle, in background, or of lower
        // priority.
        if budget.is_zero() {
            return Ok(self.current.is_none()
                && matches!(
                    self.servers[sid].place,
                    Place::Waiting {
                        background: true,
                        ..
                    }
                ));
        }
        Ok(match self.current {
            None => true,
            Some(c) => {
                debug_assert_eq!(c.key, self.pkey(c.server));
                c.background || k < c.key
            }
        })
    }

    /// Lines 2-4 of Alg. 2 for a thread of the running server (out of
    /// line: the commonest wake-up is of a server that is not running).
    /// Returns whether the woken thread preempts the running one.
    #[inline(never)]
    fn wakeup_running(
        &mut self,
        now: Nanos,
        sid: usize,
        inherit_period: Option<Nanos>,
        was_runnable: bool,
    ) -> bool {
        let ctx = UnblockCtx {
            was_active: true,
            running: true,
            inherit_period,
        };
        self.servers[sid].server.unblock(now, ctx);
        // (PIBS: a further request may raise the running server's key)
        let key = self.pkey(sid);
        if let Some(c) = self.current.as_mut() {
            c.key = key;
        }
        // Thread-level preemption inside the running server.
        let first = self.servers[sid].runq.first();
        let cur = self.current.map(|c| c.thread);
        first != cur && !was_runnable
    }

    /// A thread blocks. Returns `true` when it was the running thread (the
    /// caller must call `schedule` now).
    ///
    /// The commonest block, the running thread of a fixed-priority server
    /// with that one runnable thread, is done here with nothing live
    /// across a call; every other case is `block_rest` (for speed: the hot
    /// path then saves no registers).
    pub fn block(&mut self, now: Nanos, thread: ThreadId) -> Result<bool, CoreError> {
        self.check_time(now)?;
        let Scheduler {
            servers,
            threads,
            stats,
            current,
            ..
        } = self;
        let ts = threads
            .get_mut(thread.0)
            .ok_or(CoreError::UnknownThread(thread.0))?;
        if !ts.runnable {
            return Ok(false);
        }
        ts.runnable = false;
        stats.blocks += 1;
        let sid = ts.server;
        let entry = (Reverse(ts.priority), ts.seq, thread.0);
        let slot = &mut servers[sid];
        slot.nrun -= 1;
        if let (Some(c), RunQueue::Fp(q)) = (*current, &mut slot.runq) {
            // the only runnable thread of the running server:
            // `block_rest` would only take its entry out
            if c.server == sid && slot.nrun == 0 && fast_paths() {
                q.remove(&entry);
                return Ok(c.thread == thread.0);
            }
        }
        Ok(self.block_rest(now, sid, entry))
    }

    /// `block` past its commonest case: the thread's entry `entry` leaves
    /// the run queue of server `sid`, whose `nrun` already counts it out.
    #[inline(never)]
    fn block_rest(&mut self, now: Nanos, sid: usize, entry: FpEntry) -> bool {
        let thread = entry.2;
        match &mut self.servers[sid].runq {
            RunQueue::Fp(set) => set.remove(&entry),
            RunQueue::Rr { .. } => self.rr_block(sid, thread),
        }
        let is_current = self.current.is_some_and(|c| c.thread == thread);
        let server_running = self.current.is_some_and(|c| c.server == sid);
        if !server_running {
            // A non-running server's thread left: re-place (it may now be
            // idle). Its budget is unaffected: it did not run.
            self.replace(sid, now);
        }
        is_current
    }

    /// A thread of a round-robin server left its queue (a new thread at
    /// the front starts a new quantum).
    #[cold]
    #[inline(never)]
    fn rr_block(&mut self, sid: usize, thread: usize) {
        if let RunQueue::Rr {
            queue, slice_used, ..
        } = &mut self.servers[sid].runq
        {
            if queue.front() == Some(&thread) {
                *slice_used = Nanos::ZERO;
            }
            queue.retain(|&x| x != thread);
        }
    }

    /// Strict PIBS inheritance: service of one request for a Main VCPU of
    /// period `main_period` by I/O server `server` has finished.
    pub fn io_service_done(
        &mut self,
        now: Nanos,
        server: ServerId,
        main_period: Nanos,
    ) -> Result<(), CoreError> {
        self.check_time(now)?;
        let slot = self
            .servers
            .get_mut(server.0)
            .ok_or(CoreError::UnknownServer(server.0))?;
        let Server::Pibs(p) = &mut slot.server else {
            return Err(CoreError::NotPibs(server.0));
        };
        p.service_done(main_period);
        let running = self.current.is_some_and(|c| c.server == server.0);
        if running {
            // its key may have dropped: the dispatch's copy follows
            let key = self.pkey(server.0);
            if let Some(c) = self.current.as_mut() {
                c.key = key;
            }
        } else if !matches!(slot.place, Place::Running | Place::Idle) {
            self.unplace(server.0);
            self.place(server.0, now);
        }
        Ok(())
    }

    /// The PIBS state of an I/O server.
    pub fn pibs(&self, server: ServerId) -> Result<&Pibs, CoreError> {
        match &self.slot(server)?.server {
            Server::Pibs(p) => Ok(p),
            _ => Err(CoreError::NotPibs(server.0)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::server::Class;
    use proptest::prelude::*;

    fn key(c: bool, key: u64, tie: u8, id: u32) -> PriorityKey {
        PriorityKey {
            class: if c {
                Class::Deadline
            } else {
                Class::FixedPriority
            },
            key,
            tie,
            id: id as usize,
        }
    }

    /// One call to a scheduler, for the property tests below (`apply`).
    #[derive(Clone, Copy, Debug)]
    enum Op {
        Advance(u64),
        Wakeup(usize, Option<u64>),
        Block(usize),
        Schedule,
        Exclude(u64),
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            3 => (0u64..40).prop_map(Op::Advance),
            4 => (0usize..12, proptest::option::weighted(0.2, 1u64..200)).prop_map(|(t, p)| Op::Wakeup(t, p)),
            3 => (0usize..12).prop_map(Op::Block),
            4 => Just(Op::Schedule),
            1 => (0u64..5).prop_map(Op::Exclude),
        ]
    }

    /// One call of `op` at `now` on `s`, its result as text.
    fn apply(s: &mut Scheduler, op: Op, now: u64) -> alloc::string::String {
        match op {
            Op::Advance(_) => alloc::string::String::new(),
            Op::Wakeup(t, p) => {
                alloc::format!("{:?}", s.wakeup(Nanos(now), ThreadId(t), p.map(Nanos)))
            }
            Op::Block(t) => alloc::format!("{:?}", s.block(Nanos(now), ThreadId(t))),
            Op::Schedule => alloc::format!("{:?}", s.schedule(Nanos(now))),
            Op::Exclude(d) => {
                s.exclude(Nanos(d));
                alloc::string::String::new()
            }
        }
    }

    /// The servers `build` makes: kind, budget, period, round-robin.
    fn kinds() -> impl Strategy<Value = Vec<(u8, u64, u64, bool)>> {
        proptest::collection::vec(
            (
                prop_oneof![5 => 0u8..5, 2 => Just(7u8), 2 => prop_oneof![5u8..7, 8u8..10]],
                1u64..30,
                5u64..60,
                proptest::bool::weighted(0.15),
            ),
            1..9,
        )
    }

    /// Servers of every kind (mostly sporadic, the fast paths' kind), with
    /// one to three threads under either thread policy; threads 0..12 are
    /// spread over them.
    fn build(kinds: &[(u8, u64, u64, bool)]) -> Scheduler {
        build_reserved(kinds, false)
    }

    /// `build`, with room for its servers and threads taken first
    /// (`reserve`) when `reserved`.
    fn build_reserved(kinds: &[(u8, u64, u64, bool)], reserved: bool) -> Scheduler {
        let mut s = Scheduler::new();
        if reserved {
            s.reserve(kinds.len(), 12);
        }
        for (i, &(kind, c, t, rr)) in kinds.iter().enumerate() {
            let (c, t) = (Nanos(c.min(t)), Nanos(t));
            let server = match kind {
                0..=4 => Server::Sporadic(
                    SporadicServer::new(
                        c,
                        t,
                        2 + (kind as usize % 3),
                        ServerPriority::RateMonotonic,
                        kind == 4,
                        Nanos(0),
                    )
                    .unwrap(),
                ),
                5 => Server::Deferrable(
                    crate::periodic::DeferrableServer::new(
                        c,
                        t,
                        ServerPriority::RateMonotonic,
                        Nanos(0),
                    )
                    .unwrap(),
                ),
                6 => Server::Pibs(
                    Pibs::new(
                        crate::time::Utilization::new(c.as_ns(), t.as_ns()).unwrap(),
                        crate::pibs::Inherit::Paper,
                    )
                    .unwrap(),
                ),
                7 => Server::Unbounded(crate::server::Unbounded::new(t.as_ns())),
                8 => Server::Polling(
                    crate::periodic::PollingServer::new(
                        c,
                        t,
                        ServerPriority::RateMonotonic,
                        Nanos(0),
                    )
                    .unwrap(),
                ),
                _ => Server::Cbs(crate::cbs::Cbs::new(c, t, Nanos(0)).unwrap()),
            };
            let policy = if rr {
                ThreadPolicy::RoundRobin { quantum: Nanos(7) }
            } else {
                ThreadPolicy::FixedPriority
            };
            s.add_server(alloc::format!("v{i}"), server, policy)
                .unwrap();
        }
        for th in 0..12 {
            let sid = ServerId(th % kinds.len());
            s.add_thread("t", sid, (th as u32 * 7) % 3).unwrap();
        }
        s
    }

    use crate::server::ServerPriority;
    use crate::sporadic::SporadicServer;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]
        /// `schedule`, `wakeup` and `block` return the same and leave the
        /// same state (every field, by `Debug`) with their fast paths as
        /// with the general code alone, over random calls (for speed, docs/performance.md).
        #[test]
        fn fast_paths_match_the_general_code(
            kinds in kinds(),
            ops in proptest::collection::vec(op(), 1..400),
        ) {
            let mut fast = build(&kinds);
            let mut general = fast.clone();
            let mut now = 0u64;
            for op in ops {
                if let Op::Advance(d) = op {
                    now += d;
                }
                let call = |s: &mut Scheduler, g: bool| -> alloc::string::String {
                    GENERAL_ONLY.with(|c| c.set(g));
                    let out = apply(s, op, now);
                    GENERAL_ONLY.with(|c| c.set(false));
                    out
                };
                let a = call(&mut fast, false);
                let b = call(&mut general, true);
                prop_assert_eq!(&a, &b, "{:?} at {}", op, now);
                prop_assert_eq!(alloc::format!("{fast:?}"), alloc::format!("{general:?}"), "{:?} at {}", op, now);
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]
        /// `reserve` only sizes the tables: a scheduler built after it
        /// returns the same and keeps the same state as one built without,
        /// over random calls, and its server and thread tables and ready
        /// heap never move (grow) once built (for speed, docs/performance.md).
        #[test]
        fn reserve_changes_nothing_but_growth(
            kinds in kinds(),
            ops in proptest::collection::vec(op(), 1..400),
        ) {
            let mut plain = build(&kinds);
            let mut sized = build_reserved(&kinds, true);
            let built = (sized.servers.as_ptr(), sized.threads.as_ptr(), sized.ready.buffers());
            let mut now = 0u64;
            for op in ops {
                if let Op::Advance(d) = op {
                    now += d;
                }
                prop_assert_eq!(apply(&mut plain, op, now), apply(&mut sized, op, now), "{:?} at {}", op, now);
                prop_assert_eq!(alloc::format!("{plain:?}"), alloc::format!("{sized:?}"));
            }
            prop_assert_eq!(built, (sized.servers.as_ptr(), sized.threads.as_ptr(), sized.ready.buffers()));
        }
    }

    /// The entries of `q` in its order.
    fn fp_entries(q: &FpQueue) -> Vec<FpEntry> {
        match q {
            FpQueue::One(e) => e.iter().copied().collect(),
            FpQueue::Small(v) => v.clone(),
            FpQueue::Large(s) => s.iter().copied().collect(),
        }
    }

    proptest! {
        /// A fixed-priority run queue in each of its forms (one entry in
        /// place, a sorted vector, an ordered set) holds the entries of an
        /// ordered set, in its order, over random insertions (of absent
        /// entries, as a thread's is unique) and removals (of present and
        /// absent ones); up to 120 entries, so every form and each change
        /// of form is taken (for speed, docs/performance.md).
        #[test]
        fn fp_queue_keeps_the_order_of_a_set(
            ops in proptest::collection::vec(
                (proptest::bool::weighted(0.7), 0u32..3, 0u64..20, 0usize..2),
                1..300,
            ),
        ) {
            let mut q = FpQueue::One(None);
            let mut set = BTreeSet::new();
            for (insert, p, seq, th) in ops {
                let e = (Reverse(p), seq, th);
                if !insert {
                    q.remove(&e);
                    set.remove(&e);
                } else if set.insert(e) {
                    q.insert(e);
                }
                prop_assert_eq!(q.first(), set.first());
                prop_assert_eq!(fp_entries(&q), set.iter().copied().collect::<Vec<_>>());
            }
        }
    }

    proptest! {
        /// Packed keys order exactly as priority keys and keep the id;
        /// timer keys order as (time, server).
        #[test]
        fn packed_keys_keep_the_order(a in (any::<bool>(), any::<u64>(), any::<u8>(), any::<u32>()),
                                      b in (any::<bool>(), any::<u64>(), any::<u8>(), any::<u32>()),
                                      same_key in any::<bool>()) {
            let x = key(a.0, a.1, a.2, a.3);
            let mut y = key(b.0, b.1, b.2, b.3);
            if same_key {
                (y.class, y.key) = (x.class, x.key);
            }
            prop_assert_eq!(packed(&x).cmp(&packed(&y)), x.cmp(&y));
            prop_assert_eq!(id_of(packed(&x)), x.id);
            let (tx, ty) = (Nanos(a.1), Nanos(b.1));
            prop_assert_eq!(timer(tx, x.id).cmp(&timer(ty, y.id)), (tx, x.id).cmp(&(ty, y.id)));
            prop_assert_eq!(timer_time(timer(tx, x.id)), tx);
            prop_assert_eq!(id_of(timer(tx, x.id)), x.id);
        }
    }
}
