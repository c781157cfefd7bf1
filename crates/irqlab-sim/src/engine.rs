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

use std::cmp::Reverse;
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
}

/// One queued event.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Ev {
    pub(crate) time: u64,
    seq: u64,
    pub(crate) kind: EvKind,
}

/// The future events of one simulation.
#[derive(Default)]
pub(crate) struct Events {
    heap: BinaryHeap<Reverse<Ev>>,
    seq: u64,
}

impl Events {
    /// Queue `kind` at `time`, after every event already queued at `time`.
    pub(crate) fn post(&mut self, time: u64, kind: EvKind) {
        self.seq += 1;
        self.heap.push(Reverse(Ev {
            time,
            seq: self.seq,
            kind,
        }));
    }

    /// The earliest event if it is due at or before `until`.
    pub(crate) fn pop_until(&mut self, until: u64) -> Option<Ev> {
        if self.heap.peek()?.0.time > until {
            return None;
        }
        self.heap.pop().map(|Reverse(e)| e)
    }
}
