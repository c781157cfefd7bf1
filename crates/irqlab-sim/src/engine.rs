//! The event engine: a queue of future events ordered by time and, at equal
//! times, by posting order -- the only source of ordering in the simulator.
//!
//! Design principles:
//! * Total, deterministic order: two events at the same instant run in the
//!   order they were posted, so a configuration and a seed give the same
//!   run bit for bit.
//! * Events carry no behaviour, only what happened and to whom; the machine
//!   (`machine.rs`) dispatches each to the module concerned.
//! * Stale events are not removed from the queue: their owner keeps an epoch
//!   (superseded arrivals) and ignores an event whose epoch is no longer
//!   current, which keeps every queue operation cheap.
//! * A CPU's check (re-evaluate it at a time) is not an event in the queue
//!   but one timer slot per CPU (`Timers`), stamped from the same posting
//!   sequence: re-arming overwrites the slot, so no stale check is ever
//!   queued or popped, and the machine takes the earlier of the queue's
//!   first event and the first timer in exactly the (time, posting) order
//!   one queue would give.
//! * A set of 33-512 tasks keeps each task's pending release in a slot of
//!   a tournament tree (`Slots`), stamped from the same sequence, instead
//!   of the radix heap, whose pops move every event of the lowest bucket
//!   (for speed: the 8-CPU and 200-task rows); a second pending release of
//!   a task goes to the queue. The machine takes the earliest of the
//!   three (`earliest`), again in exactly one queue's order. Fewer tasks
//!   fit in the sorted vector; more make the tree's replay dearer than
//!   the radix heap (docs/performance-log.md, rel20v10).

use std::collections::VecDeque;

/// What an event is about.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum EvKind {
    /// Nothing (the no-progress guard's tests post these).
    #[cfg(test)]
    Nop,
    Release {
        task: usize,
    },
    /// The deadline of the job of `task` released at `release` (posted
    /// only for tasks with `abort_on_miss`).
    Deadline {
        task: usize,
        release: u64,
    },
    Wake {
        thread: usize,
    },
    Arrival {
        device: usize,
        epoch: u64,
    },
    DiskDone {
        device: usize,
    },
    UsbDone {
        device: usize,
    },
    /// A vINT injection credit comes back (VINT §V-B counter).
    VirqCredit {
        virq: usize,
    },
    XhciIrq {
        controller: usize,
        interrupter: usize,
    },
    /// The oldest delayed bottom-half job reaches its thread (the
    /// `dispatch_delay` is one constant, so these fire in FIFO order).
    BhDispatch,
}

/// One queued event.
#[cfg(test)]
#[derive(Copy, Clone, Debug)]
pub(crate) struct Ev {
    pub(crate) time: u64,
    pub(crate) kind: EvKind,
}

/// CPUs to re-evaluate at the current instant, taken lowest index first
/// (the order is part of the deterministic schedule). A bit set: marking
/// is O(1) and finding the next is a scan of 64-CPU words, not of CPUs.
pub(crate) struct Dirty {
    words: Vec<u64>,
}

impl Dirty {
    /// Every one of `n` CPUs marked.
    pub(crate) fn all(n: usize) -> Dirty {
        let mut words = vec![u64::MAX; n.div_ceil(64)];
        if !n.is_multiple_of(64) {
            if let Some(last) = words.last_mut() {
                *last = (1u64 << (n % 64)) - 1;
            }
        }
        Dirty { words }
    }
    pub(crate) fn mark(&mut self, c: usize) {
        self.words[c / 64] |= 1 << (c % 64);
    }
    /// No CPU marked.
    pub(crate) fn is_empty(&self) -> bool {
        self.words.iter().all(|&w| w == 0)
    }
    /// The lowest marked CPU, unmarked.
    pub(crate) fn take_first(&mut self) -> Option<usize> {
        let (i, w) = self.words.iter_mut().enumerate().find(|(_, w)| **w != 0)?;
        let b = w.trailing_zeros() as usize;
        *w &= *w - 1;
        Some(i * 64 + b)
    }
}

/// When an event is due: its time, then its posting sequence number (the
/// order of events, and of CPU timers, of equal time).
pub(crate) type Key = (u64, u64);

/// One queued event: its time, posting sequence number and what it is
/// about.
#[derive(Copy, Clone, Debug)]
struct Item {
    time: u64,
    seq: u64,
    kind: EvKind,
}

/// `(b < a, the smaller of a and b)` for two keys of a tournament tree,
/// chosen without a branch. A replay compares the keys of unrelated CPUs
/// or tasks, so a branch on the comparison is mispredicted about every
/// other level (callgrind's branch simulator on 8 CPUs x 10 tasks: 3,836
/// of the two trees' 8,888 compare branches, a fifth of the run's
/// mispredictions). The smaller key is taken through a mask that the
/// optimiser cannot see (`opaque`): a plain choice, or a mask it can
/// trace back to the comparison, it turns into a branch again. Callers
/// read the winner's index at the winning child, by the same flag.
#[inline(always)]
fn earlier_key(a: u128, b: u128) -> (bool, u128) {
    let take = b < a;
    let m = opaque(u64::from(take).wrapping_neg());
    let m = u128::from(m) << 64 | u128::from(m);
    (take, a ^ ((a ^ b) & m))
}

/// `x`, hidden from the optimiser (`earlier_key`). `black_box` passes it
/// through the stack (a store and a load); an empty `asm!` statement
/// would keep it in a register, but measured no faster (8 CPUs x 10
/// tasks: 0.897 of main's time against 0.882, 41 alternating rounds), so
/// the crate stays without `unsafe`. Should the hint ever do nothing, the
/// choice becomes a branch again, which costs time, never a result.
#[inline(always)]
fn opaque(x: u64) -> u64 {
    std::hint::black_box(x)
}

/// One check timer per CPU and the earliest of them, in a tournament tree
/// over the CPUs (a set is O(log CPUs); the earliest is read in O(1)):
/// the tree of the pending releases (`Slots`), one leaf per CPU. Its nodes
/// hold the winning keys, its indices are masked (no bounds checks) and
/// its compares have no branch; a tree of CPU numbers with the keys per
/// CPU took 142 instructions per set on 8 CPUs against 70 here.
pub(crate) struct Timers {
    tree: Slots,
}

impl Timers {
    pub(crate) fn new(cpus: usize) -> Timers {
        Timers {
            tree: Slots::new(cpus),
        }
    }

    /// Arm CPU `c`'s timer at `key` (replacing any), or disarm it (`None`).
    /// Only the path from its leaf to the root is replayed: at each level
    /// the winner so far meets the winner of the sibling subtree.
    #[inline]
    pub(crate) fn set(&mut self, c: usize, key: Option<Key>) {
        let key = key.map_or(u128::MAX, |(t, s)| (t as u128) << 64 | s as u128);
        self.tree.set(c, key);
    }

    /// The earliest armed timer: its key and CPU.
    #[inline]
    pub(crate) fn first(&self) -> Option<(Key, usize)> {
        self.tree.first()
    }
}

/// The most pending events the sorted vector holds (`Events::small`); one
/// more, and they move to the radix heap.
pub(crate) const SMALL: usize = 32;
/// Pending events left in the radix heap at which they move back to the
/// sorted vector (the gap to `SMALL` bounds the moves to one per
/// `SMALL - SMALL_BACK` operations).
const SMALL_BACK: usize = 8;

/// The most tasks whose pending releases are kept in `Slots` (more than
/// `SMALL`, up to this many; past it they stay in the radix heap). Where
/// the slots stop winning, measured on one CPU (docs/performance-log.md,
/// rel20v10; `partitioned(1, n)` sets, slots for every size against the
/// radix heap, time ratio per round, medians of 101 rounds): 384 tasks
/// 0.933, 512 tasks 0.951 (a 512-leaf tree, 9 levels); 640 tasks 1.003,
/// 768 tasks 1.040, 1,000 tasks 1.008 (a 1,024-leaf tree, 10 levels);
/// 10,000 tasks +5.1 % instructions. So slots up to 512 tasks, the last
/// tree size that wins.
pub(crate) const SLOTS_MAX: usize = 512;

/// One pending release per task, in a tournament tree over the tasks (a
/// post is a replay of one leaf-to-root path, O(log tasks); the earliest
/// is read at the root in O(1)). The radix heap moves every event of its
/// lowest bucket at each of its pops, and a periodic task set of a few
/// hundred tasks keeps one pending release per task there; a slot per
/// task replaces those moves by a replay of the task's path. Each node
/// holds the winning key itself, not only the winning task, so a replay
/// reads the sibling's key at an address known in advance (the loads of
/// the levels do not wait on one another's compares). The CPU timers are
/// the same tree, one leaf per CPU (`Timers`).
#[derive(Default)]
struct Slots {
    /// `keys[k]`: the earliest key below node `k`, as `time << 64 | seq`
    /// (one comparison orders two keys), `u128::MAX` for none; the leaves
    /// are `keys[n..2n]` (task `t` at `n + t`), the root `keys[1]`. Empty:
    /// no slots (the simulation keeps its releases in the queue).
    keys: Vec<u128>,
    /// `win[k]`: the task of `keys[k]`.
    win: Vec<u32>,
}

impl Slots {
    fn new(tasks: usize) -> Slots {
        let n = tasks.max(1).next_power_of_two();
        let mut win = vec![0u32; 2 * n];
        for (i, x) in win[n..].iter_mut().enumerate() {
            *x = i as u32;
        }
        for k in (1..n).rev() {
            win[k] = win[2 * k];
        }
        Slots {
            keys: vec![u128::MAX; 2 * n],
            win,
        }
    }

    /// The earliest key and its leaf (task or CPU), if any.
    #[inline]
    fn first(&self) -> Option<(Key, usize)> {
        let key = *self.keys.get(1)?;
        let w = *self.win.get(1)? as usize;
        (key != u128::MAX).then_some((((key >> 64) as u64, key as u64), w))
    }

    /// Set task `t`'s slot to `key` (`u128::MAX`: empty) and replay its
    /// path: at each level the winner so far meets the sibling's. The
    /// indices are masked by `2n - 1` (the arrays' length is a power of
    /// two), so the loads need no bounds checks.
    #[inline]
    fn set(&mut self, t: usize, mut wk: u128) {
        let len = self.keys.len();
        let mask = len.wrapping_sub(1);
        let keys = &mut self.keys[..];
        let win = &mut self.win[..];
        if len == 0 || win.len() != len {
            return;
        }
        let mut node = (len / 2 + t) & mask;
        keys[node] = wk;
        while node > 1 {
            let sib = (node ^ 1) & mask;
            let (take, k) = earlier_key(wk, keys[sib]);
            wk = k;
            // the winner's task read at the winning child (`win[node]` is
            // the winner so far; a leaf's is its task), not chosen between
            // two values: the compiler made that choice a branch around
            // the sibling's load
            let w = win[(node ^ usize::from(take)) & mask];
            node = (node / 2) & mask;
            keys[node] = wk;
            win[node] = w;
        }
    }
}

/// The future events of one simulation, in (time, posting) order.
///
/// A few pending events (at most `SMALL`; a plain task set of a few tasks
/// keeps one release per task) are a vector sorted from the latest to the
/// earliest, ties latest posted first: a pop takes the last element and a
/// post moves the earlier ones up by one (a short copy; its one
/// data-dependent branch is the scan for its place). More events are in a
/// radix heap on the integer time (below). Both give exactly the (time, posting) order;
/// the sorted vector replaced the radix heap for small sets, where each
/// pop of the heap moved every pending event of its lowest bucket (issue
/// 20, docs/performance-log.md).
///
/// The radix heap (the times popped never decrease: an event is posted at
/// or after the instant being handled). An event whose time equals `last`,
/// the time of the latest event taken, is in `current`, in posting order.
/// Any other event is in bucket `b`, where `b` is the highest bit (from 0)
/// in which its time differs from `last`; so every event of a lower bucket
/// is earlier than every event of a higher one. When `current` is empty,
/// the first non-empty bucket is emptied: its earliest time becomes `last`
/// and its events move to lower buckets (or to `current`). Each event moves
/// at most 64 times, and in practice a few, so a post is O(1) and a pop
/// O(1) amortized plus the moves, with no comparisons between events.
/// Against the binary heap on (time, sequence) it replaced: the same
/// instructions, 3 % less time on 10 RM tasks and 11 % less on 10,000.
///
/// Within a bucket, events of equal time stay in posting order (they are
/// appended in posting order, and a bucket is emptied only into empty
/// lower buckets), so `current` is filled in posting order: the order is
/// exactly (time, posting order), as the binary heap's on (time, sequence
/// number) was.
pub(crate) struct Events {
    /// While `!large`: every pending event, latest first (by time, then
    /// by posting order), so the earliest is the last.
    small: Vec<Item>,
    /// The events are in the radix heap (`current`, `buckets`).
    large: bool,
    /// Releases go to `slots` (`reserve_slots`).
    slotted: bool,
    /// Events pending in the radix heap.
    len: usize,
    current: VecDeque<Item>,
    buckets: [Vec<Item>; 64],
    /// Bit `b` set: bucket `b` is not empty.
    nonempty: u64,
    /// The time of the latest event taken.
    last: u64,
    /// The next posting sequence number (events and CPU timers).
    seq: u64,
    /// The first event's key while `current` is empty, once `peek` found
    /// it (kept up to date by `post`, forgotten by a take).
    first: Option<Key>,
    /// Each task's pending release, for 33-512 tasks (`reserve_slots`);
    /// empty otherwise.
    slots: Slots,
    /// The task whose release was taken from its slot last and is still
    /// there (`NONE`: none): the task's next post overwrites it (one
    /// replay per release, not two), or the next `first_release` empties
    /// it.
    taken: usize,
}

/// No task (`Events::taken`).
const NONE: usize = usize::MAX;

/// Which of the three sources comes next (`earliest`).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Next {
    /// A CPU's check timer (`Timers`).
    Timer(usize),
    /// The queue's first event (`Events::pop`).
    Queued,
    /// The first pending release in a slot (`Events::take_release`).
    Release(usize),
}

/// The earliest of the first CPU timer, the queue's first event and the
/// first pending release, by (time, posting sequence): the sequence
/// numbers of the three are distinct (one counter stamps them all), so
/// this is the order one queue holding all of them would give.
#[inline]
pub(crate) fn earliest(
    timer: Option<(Key, usize)>,
    queued: Option<Key>,
    release: Option<(Key, usize)>,
) -> Option<(Key, Next)> {
    let mut best = queued.map(|q| (q, Next::Queued));
    if let Some((k, c)) = timer {
        if best.is_none_or(|(b, _)| k < b) {
            best = Some((k, Next::Timer(c)));
        }
    }
    if let Some((k, t)) = release {
        if best.is_none_or(|(b, _)| k < b) {
            best = Some((k, Next::Release(t)));
        }
    }
    best
}

impl Default for Events {
    fn default() -> Events {
        Events {
            small: Vec::new(),
            large: false,
            slotted: false,
            len: 0,
            current: VecDeque::new(),
            buckets: std::array::from_fn(|_| Vec::new()),
            nonempty: 0,
            last: 0,
            seq: 0,
            first: None,
            slots: Slots::default(),
            taken: NONE,
        }
    }
}

impl Events {
    /// The next posting sequence number, taken (a CPU timer armed now is
    /// ordered after every event posted before it, before every later one).
    pub(crate) fn stamp(&mut self) -> u64 {
        self.seq += 1;
        self.seq
    }

    /// One slot per task for `tasks` tasks, before any post: from then on
    /// a task's release goes to its slot unless the slot already holds one
    /// (a second pending release goes to the queue).
    pub(crate) fn reserve_slots(&mut self, tasks: usize) {
        self.slots = Slots::new(tasks);
        self.slotted = true;
        self.taken = NONE;
    }

    /// Whether releases go to slots (`reserve_slots`).
    #[inline]
    pub(crate) fn has_slots(&self) -> bool {
        self.slotted
    }

    /// Queue `kind` at `time`, after every event already queued at `time`.
    pub(crate) fn post(&mut self, time: u64, kind: EvKind) {
        let seq = self.stamp();
        if self.has_slots() {
            if let EvKind::Release { task } = kind {
                if self.post_release(task, time, seq) {
                    return;
                }
            }
        }
        let item = Item { time, seq, kind };
        if !self.large {
            if self.small.len() < SMALL {
                // before every event of equal time (posted earlier, so
                // taken earlier) and after every later one
                let pos = self
                    .small
                    .iter()
                    .position(|i| i.time <= time)
                    .unwrap_or(self.small.len());
                self.small.insert(pos, item);
                return;
            }
            self.grow();
        }
        self.len += 1;
        if let Some(f) = self.first {
            // a later event goes to a bucket: the earliest in the buckets
            // may change (one at `last` goes to `current`, which comes
            // first anyway)
            if time < f.0 && time > self.last {
                self.first = Some((time, seq));
            }
        }
        if time < self.last {
            // never from the machine (it posts at or after the instant it
            // handles), but kept exact: rebuild from the new earliest time
            self.rebuild(item);
        } else {
            self.place(item);
        }
    }

    /// Put task `task`'s release in its slot if the slot is free (or
    /// holds the release just taken); false: the queue takes it.
    fn post_release(&mut self, task: usize, time: u64, seq: u64) -> bool {
        let n = self.slots.keys.len() / 2;
        if task >= n {
            return false;
        }
        let leaf = n + task;
        if task == self.taken {
            self.taken = NONE;
        } else if self.slots.keys.get(leaf) != Some(&u128::MAX) {
            return false;
        }
        self.slots.set(task, (time as u128) << 64 | seq as u128);
        true
    }

    /// The first pending release in a slot: its key and task (none without
    /// slots). The release taken last, if still in its slot, is emptied
    /// first.
    #[inline]
    pub(crate) fn first_release(&mut self) -> Option<(Key, usize)> {
        if !self.has_slots() {
            return None;
        }
        if self.taken != NONE {
            self.slots.set(self.taken, u128::MAX);
            self.taken = NONE;
        }
        self.slots.first()
    }

    /// Take task `task`'s release from its slot (the one `first_release`
    /// returned): it stays there until the task's next post overwrites it
    /// or the next `first_release` empties it.
    #[inline]
    pub(crate) fn take_release(&mut self, task: usize) -> EvKind {
        self.taken = task;
        EvKind::Release { task }
    }

    /// The sorted vector is full: its events move to the radix heap, from
    /// the earliest (`last`) on, in (time, posting) order.
    #[cold]
    #[inline(never)]
    fn grow(&mut self) {
        self.large = true;
        self.len = self.small.len();
        self.first = None;
        if let Some(i) = self.small.last() {
            self.last = i.time;
        }
        while let Some(i) = self.small.pop() {
            self.place(i);
        }
    }

    /// Few events are left in the radix heap: back to the sorted vector.
    #[cold]
    #[inline(never)]
    fn shrink(&mut self) {
        let mut all: Vec<Item> = self.current.drain(..).collect();
        for b in &mut self.buckets {
            all.append(b);
        }
        self.nonempty = 0;
        self.first = None;
        self.large = false;
        self.len = 0;
        all.sort_by_key(|i| std::cmp::Reverse((i.time, i.seq)));
        self.small.clear();
        self.small.extend(all);
    }

    fn place(&mut self, item: Item) {
        let x = item.time ^ self.last;
        if x == 0 {
            self.current.push_back(item);
        } else {
            let b = 63 - x.leading_zeros() as usize;
            self.buckets[b].push(item);
            self.nonempty |= 1 << b;
        }
    }

    /// Re-place every event after an event earlier than `last`. Events of
    /// equal time are in one bucket (or `current`), in posting order, and
    /// the sort is stable, so they stay in posting order, `item` last.
    fn rebuild(&mut self, item: Item) {
        let mut all: Vec<Item> = self.current.drain(..).collect();
        for b in &mut self.buckets {
            all.append(b);
        }
        all.push(item);
        all.sort_by_key(|i| i.time);
        self.nonempty = 0;
        self.first = None;
        self.last = all.first().map_or(self.last, |i| i.time);
        for i in all {
            self.place(i);
        }
    }

    /// The key of the earliest event, if any. It does not move events
    /// (`last` stays the time of the latest event taken, so an event
    /// handled before this one may still post earlier ones cheaply): while
    /// `current` is empty, the earliest of the lowest bucket is found once
    /// and kept.
    pub(crate) fn peek(&mut self) -> Option<Key> {
        if !self.large {
            return self.small.last().map(|i| (i.time, i.seq));
        }
        if let Some(i) = self.current.front() {
            return Some((i.time, i.seq));
        }
        if self.first.is_none() && self.nonempty != 0 {
            let b = self.nonempty.trailing_zeros() as usize;
            // the earliest time, first posted among equals
            let mut best = (u64::MAX, u64::MAX);
            for i in &self.buckets[b] {
                if i.time < best.0 {
                    best = (i.time, i.seq);
                }
            }
            self.first = Some(best);
        }
        self.first
    }

    /// Take the earliest event.
    pub(crate) fn pop(&mut self) -> Option<EvKind> {
        if !self.large {
            return self.small.pop().map(|i| i.kind);
        }
        if self.current.is_empty() {
            if self.nonempty == 0 {
                return None;
            }
            let b = self.nonempty.trailing_zeros() as usize;
            self.nonempty &= !(1 << b);
            // every event of bucket `b` moves to a lower bucket (they all
            // agree with the new `last` above bit `b`): its allocation is
            // put back empty; the new `last` is the earliest time, which
            // `peek` may have found already
            let mut moving = std::mem::take(&mut self.buckets[b]);
            self.last = match self.first.take() {
                Some((t, _)) => t,
                None => moving.iter().map(|i| i.time).min().unwrap_or(self.last),
            };
            for i in moving.drain(..) {
                self.place(i);
            }
            self.buckets[b] = moving;
        }
        let kind = self.current.pop_front().map(|i| i.kind);
        self.len -= usize::from(kind.is_some());
        if self.len <= SMALL_BACK {
            self.shrink();
        }
        kind
    }

    /// The key of the earliest event, queued or in a slot (the machine's
    /// choice, `earliest`, without timers).
    #[cfg(test)]
    pub(crate) fn peek_any(&mut self) -> Option<Key> {
        let queued = self.peek();
        let release = self.first_release();
        earliest(None, queued, release).map(|(k, _)| k)
    }

    /// Take the earliest event, queued or in a slot.
    #[cfg(test)]
    pub(crate) fn pop_any(&mut self) -> Option<EvKind> {
        let queued = self.peek();
        let release = self.first_release();
        match earliest(None, queued, release)?.1 {
            Next::Queued => self.pop(),
            Next::Release(t) => Some(self.take_release(t)),
            Next::Timer(_) => None,
        }
    }

    /// The earliest event, queued or in a slot, if it is due at or before
    /// `until`.
    #[cfg(test)]
    pub(crate) fn pop_until(&mut self, until: u64) -> Option<Ev> {
        let time = self.peek_any()?.0;
        if time > until {
            return None;
        }
        self.pop_any().map(|kind| Ev { time, kind })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::cmp::Reverse;
    use std::collections::BinaryHeap;

    /// Reference: a binary heap on (time, sequence number).
    #[derive(Default)]
    struct Reference {
        heap: BinaryHeap<Reverse<(u64, u64, usize)>>,
        seq: u64,
    }

    fn check(ops: &[(u8, u64)]) {
        let mut q = Events::default();
        let mut r = Reference::default();
        let mut now = 0u64;
        for (k, &(op, x)) in ops.iter().enumerate() {
            match op % 4 {
                // post at or after the current instant (what the machine does)
                0 | 1 => {
                    let t = now.saturating_add(x % (1 << (op as u32 % 60)));
                    q.post(t, EvKind::Wake { thread: k });
                    r.seq += 1;
                    r.heap.push(Reverse((t, r.seq, k)));
                }
                // post at any time, earlier than the last one taken too
                2 => {
                    q.post(x, EvKind::Wake { thread: k });
                    r.seq += 1;
                    r.heap.push(Reverse((x, r.seq, k)));
                }
                // take what is due by `until`
                _ => {
                    let until = now.saturating_add(x);
                    loop {
                        let got = q.pop_until(until).map(|e| match e.kind {
                            EvKind::Wake { thread } => (e.time, thread),
                            _ => unreachable!(),
                        });
                        let want = match r.heap.peek() {
                            Some(&Reverse((t, _, i))) if t <= until => {
                                r.heap.pop();
                                Some((t, i))
                            }
                            _ => None,
                        };
                        assert_eq!(got, want);
                        let Some((t, _)) = got else { break };
                        now = t;
                    }
                }
            }
        }
        // drain
        while let Some(Reverse((t, _, i))) = r.heap.pop() {
            let e = q
                .pop_until(u64::MAX)
                .expect("as many events as the reference");
            assert_eq!(
                (
                    e.time,
                    matches!(e.kind, EvKind::Wake { thread } if thread == i)
                ),
                (t, true)
            );
        }
        assert!(q.pop_until(u64::MAX).is_none());
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]
        /// The radix queue pops exactly what a binary heap on (time,
        /// sequence number) pops, for posts at or after the last time taken
        /// (the machine's case), ties included, and for earlier posts too.
        #[test]
        fn same_order_as_a_heap_on_time_and_sequence(
            ops in proptest::collection::vec((any::<u8>(), 0u64..5_000), 0..400)
        ) {
            check(&ops);
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]
        /// Both forms of the queue and the moves between them: bursts of
        /// posts (many ties) that fill the sorted vector past `SMALL`, then
        /// takes that drain the radix heap to `SMALL_BACK` and below; every
        /// take and every peeked key (time, posting sequence) is the
        /// reference heap's.
        #[test]
        fn same_order_across_the_small_and_radix_forms(
            bursts in proptest::collection::vec(
                (proptest::collection::vec(0u64..64, 0..3 * SMALL), 0usize..3 * SMALL, 1u64..1 << 40),
                1..10)
        ) {
            let mut q = Events::default();
            let mut r = Reference::default();
            let mut now = 0u64;
            let mut k = 0usize;
            for (posts, takes, scale) in bursts {
                for x in posts {
                    // a timer stamp now and then: sequence numbers with gaps
                    if x % 7 == 0 {
                        q.stamp();
                        r.seq += 1;
                    }
                    let t = now + (x % 8) * scale;
                    q.post(t, EvKind::Wake { thread: k });
                    r.seq += 1;
                    r.heap.push(Reverse((t, r.seq, k)));
                    k += 1;
                }
                for _ in 0..takes {
                    let want = r.heap.peek().map(|&Reverse((t, s, _))| (t, s));
                    prop_assert_eq!(q.peek(), want);
                    let got = q.pop().map(|e| match e {
                        EvKind::Wake { thread } => thread,
                        _ => unreachable!(),
                    });
                    let want = r.heap.pop().map(|Reverse((t, _, i))| {
                        now = t;
                        i
                    });
                    prop_assert_eq!(got, want);
                }
            }
        }
    }

    proptest! {
        /// `earlier_key` is the comparison and the minimum, for keys
        /// that differ in the time (high half), in the sequence (low
        /// half) only, or not at all.
        #[test]
        fn earlier_key_is_the_minimum(
            a in any::<u128>(),
            b in any::<u128>(),
            hi in any::<u64>(),
            lo in any::<(u64, u64)>()
        ) {
            let same_time = (u128::from(hi) << 64 | u128::from(lo.0), u128::from(hi) << 64 | u128::from(lo.1));
            for (x, y) in [(a, b), (b, a), (a, a), same_time, (same_time.1, same_time.0)] {
                prop_assert_eq!(earlier_key(x, y), (y < x, x.min(y)));
            }
        }

        /// The timers' first is the earliest armed key, through any
        /// sequence of arms and disarms (keys are distinct: their sequence
        /// numbers are).
        #[test]
        fn timers_first_is_the_earliest(
            cpus in 1usize..70,
            ops in proptest::collection::vec((0usize..70, 0u64..20, any::<bool>()), 0..300)
        ) {
            let mut t = Timers::new(cpus);
            let mut keys: Vec<Option<Key>> = vec![None; cpus];
            for (k, &(c, time, arm)) in ops.iter().enumerate() {
                let c = c % cpus;
                let key = arm.then_some((time, k as u64));
                t.set(c, key);
                keys[c] = key;
                let want = keys
                    .iter()
                    .enumerate()
                    .filter_map(|(i, k)| k.map(|k| (k, i)))
                    .min();
                prop_assert_eq!(t.first(), want);
            }
        }
    }

    /// One step of `slots_check`.
    #[derive(Clone, Debug)]
    enum SlotOp {
        /// A release of task `task` (with or without a slot) `dt` after now.
        Release { task: usize, dt: u64 },
        /// Another event `dt` after now.
        Other { dt: u64 },
        /// `n` posts at once (releases and other events, many ties): past
        /// `SMALL`, the queue takes its radix form.
        Burst { n: usize, dt: u64 },
        /// A sequence number stamped for a CPU timer (a gap).
        Stamp,
        /// Take `n` events; after a release, post the task's next release
        /// right away if `again` (what the machine's handler does).
        Take { n: usize, again: bool, dt: u64 },
    }

    fn slot_op() -> impl Strategy<Value = SlotOp> {
        prop_oneof![
            4 => (0usize..16, 0u64..40).prop_map(|(task, dt)| SlotOp::Release { task, dt }),
            2 => (0u64..40).prop_map(|dt| SlotOp::Other { dt }),
            1 => (0usize..3 * SMALL, 0u64..8).prop_map(|(n, dt)| SlotOp::Burst { n, dt }),
            1 => Just(SlotOp::Stamp),
            4 => (0usize..8, any::<bool>(), 0u64..40)
                .prop_map(|(n, again, dt)| SlotOp::Take { n, again, dt }),
        ]
    }

    /// Post `kind` at `t` to the queue and to the reference.
    fn post_both(
        q: &mut Events,
        r: &mut BinaryHeap<Reverse<(u64, u64, EvKind)>>,
        t: u64,
        kind: EvKind,
    ) {
        q.post(t, kind);
        r.push(Reverse((t, q.seq, kind)));
    }

    /// The events of `slots` tasks in slots, and everything else in the
    /// queue, come out exactly as from one binary heap on (time, sequence
    /// number): every peeked key and every taken event.
    fn slots_check(slots: usize, ops: &[SlotOp]) -> Result<(), TestCaseError> {
        let mut q = Events::default();
        if slots > 0 {
            q.reserve_slots(slots);
        }
        let mut r: BinaryHeap<Reverse<(u64, u64, EvKind)>> = BinaryHeap::new();
        let mut now = 0u64;
        let mut k = 0usize;
        let take =
            |q: &mut Events, r: &mut BinaryHeap<Reverse<(u64, u64, EvKind)>>, now: &mut u64| {
                let want = r.peek().map(|&Reverse((t, s, _))| (t, s));
                prop_assert_eq!(q.peek_any(), want);
                let got = q.pop_any();
                let want = r.pop().map(|Reverse((t, _, kind))| {
                    *now = t;
                    kind
                });
                prop_assert_eq!(got, want);
                Ok(got)
            };
        for op in ops {
            match *op {
                SlotOp::Release { task, dt } => {
                    post_both(&mut q, &mut r, now + dt, EvKind::Release { task });
                }
                SlotOp::Other { dt } => {
                    k += 1;
                    post_both(&mut q, &mut r, now + dt, EvKind::Wake { thread: k });
                }
                SlotOp::Burst { n, dt } => {
                    for i in 0..n {
                        let t = now + (i as u64 * 7 + dt) % 5;
                        let kind = if i % 3 == 0 {
                            EvKind::Release { task: i % 16 }
                        } else {
                            k += 1;
                            EvKind::Wake { thread: k }
                        };
                        post_both(&mut q, &mut r, t, kind);
                    }
                }
                SlotOp::Stamp => {
                    q.stamp();
                }
                SlotOp::Take { n, again, dt } => {
                    for _ in 0..n {
                        let got = take(&mut q, &mut r, &mut now)?;
                        if let (Some(EvKind::Release { task }), true) = (got, again) {
                            post_both(&mut q, &mut r, now + dt, EvKind::Release { task });
                        }
                    }
                }
            }
        }
        while take(&mut q, &mut r, &mut now)?.is_some() {}
        Ok(())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]
        /// Releases in slots keep the order of one queue: 0-11 tasks with a
        /// slot, releases of tasks with and without one, second releases of
        /// a task (its slot taken: to the queue), re-posts right after a
        /// take (over the taken slot), bursts past `SMALL` (the radix form),
        /// sequence gaps; every peeked key and every taken event is one
        /// binary heap's on (time, sequence number).
        #[test]
        fn releases_in_slots_keep_the_order_of_one_queue(
            slots in 0usize..12,
            ops in proptest::collection::vec(slot_op(), 0..200)
        ) {
            slots_check(slots, &ops)?;
        }
    }

    #[test]
    fn earliest_orders_by_time_then_sequence() {
        let k = |t, s| (t, s);
        assert_eq!(earliest(None, None, None), None);
        assert_eq!(
            earliest(Some((k(5, 3), 1)), Some(k(5, 2)), Some((k(5, 4), 7))),
            Some((k(5, 2), Next::Queued))
        );
        assert_eq!(
            earliest(Some((k(5, 3), 1)), Some(k(5, 9)), Some((k(5, 1), 7))),
            Some((k(5, 1), Next::Release(7)))
        );
        assert_eq!(
            earliest(Some((k(4, 30), 1)), Some(k(5, 2)), Some((k(5, 1), 7))),
            Some((k(4, 30), Next::Timer(1)))
        );
    }

    /// The queue takes the radix form past `SMALL` pending events and the
    /// sorted vector again at `SMALL_BACK`, in order throughout (times
    /// posted from the latest down, with ties, so that every post lands
    /// first in the vector).
    #[test]
    fn moves_between_the_forms_in_order() {
        let mut q = Events::default();
        let times: Vec<u64> = (0..=SMALL as u64).rev().map(|i| 10 + i / 2).collect();
        for (k, &t) in times.iter().enumerate() {
            q.post(t, EvKind::Wake { thread: k });
            assert_eq!(q.large, k == SMALL, "post {k}");
        }
        let mut want: Vec<(u64, usize)> = times.iter().copied().zip(0..).collect();
        want.sort_by_key(|&(t, k)| (t, k));
        let mut got = Vec::new();
        while let Some(e) = q.pop_until(u64::MAX) {
            let EvKind::Wake { thread } = e.kind else {
                unreachable!()
            };
            got.push((e.time, thread));
            let left = want.len() - got.len();
            assert_eq!(q.large, left > SMALL_BACK, "{left} left");
        }
        assert_eq!(got, want);
    }

    #[test]
    fn ties_and_far_times_in_posting_order() {
        let mut q = Events::default();
        for (i, t) in [5u64, 5, u64::MAX, 0, 5, 1 << 40, u64::MAX, 0]
            .into_iter()
            .enumerate()
        {
            q.post(t, EvKind::Wake { thread: i });
        }
        let order: Vec<(u64, usize)> = std::iter::from_fn(|| q.pop_until(u64::MAX))
            .map(|e| match e.kind {
                EvKind::Wake { thread } => (e.time, thread),
                _ => unreachable!(),
            })
            .collect();
        assert_eq!(
            order,
            [
                (0, 3),
                (0, 7),
                (5, 0),
                (5, 1),
                (5, 4),
                (1 << 40, 5),
                (u64::MAX, 2),
                (u64::MAX, 6)
            ]
        );
    }
}
