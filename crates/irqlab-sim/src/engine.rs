//! The event engine: a queue of future events ordered by (time, sequence
//! number), the only source of ordering in the simulator.
//!
//! Design principles:
//! * Total, deterministic order: two events at the same instant run in the
//!   order they were posted (the sequence number breaks every tie), so a
//!   configuration and a seed give the same run bit for bit.
//! * Events carry no behaviour, only what happened and to whom; the machine
//!   (`machine.rs`) dispatches each to the module concerned.
//! * Stale events are not removed from the queue: their owner keeps an epoch
//!   (CPU checks, superseded arrivals) and ignores an event whose epoch is no
//!   longer current, which keeps every queue operation O(log n).

use std::collections::BinaryHeap;

/// What an event is about.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum EvKind {
    CpuCheck {
        cpu: usize,
        epoch: u64,
    },
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
#[derive(Copy, Clone, Debug)]
pub(crate) struct Ev {
    pub(crate) time: u64,
    pub(crate) kind: EvKind,
}

/// A queued event with its order as one integer, `(time, seq)`, the
/// earliest first. The sequence number is unique, so this is the whole
/// order: one `u128` comparison per heap step instead of comparing the
/// event field by field (about a fifth of a plain run's time, issue 20).
#[derive(Copy, Clone, Debug)]
struct Queued {
    /// `!(time << 64 | seq)`: `BinaryHeap` is a max-heap.
    rank: u128,
    kind: EvKind,
}

impl PartialEq for Queued {
    fn eq(&self, o: &Queued) -> bool {
        self.rank == o.rank
    }
}
impl Eq for Queued {}
impl PartialOrd for Queued {
    fn partial_cmp(&self, o: &Queued) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Queued {
    fn cmp(&self, o: &Queued) -> std::cmp::Ordering {
        self.rank.cmp(&o.rank)
    }
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
    /// The lowest marked CPU, unmarked.
    pub(crate) fn take_first(&mut self) -> Option<usize> {
        let (i, w) = self.words.iter_mut().enumerate().find(|(_, w)| **w != 0)?;
        let b = w.trailing_zeros() as usize;
        *w &= *w - 1;
        Some(i * 64 + b)
    }
}

/// The future events of one simulation.
#[derive(Default)]
pub(crate) struct Events {
    heap: BinaryHeap<Queued>,
    seq: u64,
}

impl Events {
    /// Queue `kind` at `time`, after every event already queued at `time`.
    pub(crate) fn post(&mut self, time: u64, kind: EvKind) {
        self.seq += 1;
        self.heap.push(Queued {
            rank: !((u128::from(time) << 64) | u128::from(self.seq)),
            kind,
        });
    }

    /// The earliest event if it is due at or before `until`.
    pub(crate) fn pop_until(&mut self, until: u64) -> Option<Ev> {
        let rank = !self.heap.peek()?.rank;
        let time = (rank >> 64) as u64;
        if time > until {
            return None;
        }
        self.heap.pop().map(|q| Ev { time, kind: q.kind })
    }
}
