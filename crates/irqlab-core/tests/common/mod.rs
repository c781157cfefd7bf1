//! A minimal fake machine for host tests of the core (the Hubris pattern:
//! portable logic tested with a fake architecture). One CPU, threads that
//! receive work at given times and block when they have none; the scheduler
//! decides everything.

#![allow(dead_code)]

use irqlab_core::{Nanos, Scheduler, ServerId, ServerPolicy, ThreadId};

/// Work `amount` arriving for `thread` at `at`; `inherit` is passed to
/// `wakeup` (PIBS Main VCPU period).
#[derive(Clone, Debug)]
pub struct Arrival {
    pub at: u64,
    pub thread: ThreadId,
    pub amount: u64,
    pub inherit: Option<u64>,
}

/// One contiguous execution segment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Segment {
    pub server: ServerId,
    pub thread: ThreadId,
    pub start: u64,
    pub end: u64,
    pub background: bool,
}

/// Observer called after every `schedule` with the scheduler and `now`.
pub type Check<'a> = dyn FnMut(&Scheduler, u64) + 'a;

/// Run until `horizon`. `forever` threads are CPU-bound (never block).
pub fn run(
    sched: &mut Scheduler,
    mut arrivals: Vec<Arrival>,
    forever: &[ThreadId],
    horizon: u64,
    check: &mut Check<'_>,
) -> Vec<Segment> {
    arrivals.sort_by_key(|a| a.at);
    let mut work = vec![0u64; sched.num_threads()];
    for t in forever {
        work[t.0] = u64::MAX;
        sched.wakeup(Nanos(0), *t, None).unwrap();
    }
    let mut segs: Vec<Segment> = Vec::new();
    let mut now = 0u64;
    let mut i = 0;
    loop {
        // arrivals due now
        while i < arrivals.len() && arrivals[i].at <= now {
            let a = &arrivals[i];
            work[a.thread.0] = work[a.thread.0].saturating_add(a.amount);
            sched
                .wakeup(Nanos(now), a.thread, a.inherit.map(Nanos))
                .unwrap();
            i += 1;
        }
        if now >= horizon {
            break;
        }
        let d = sched.schedule(Nanos(now)).unwrap();
        check(sched, now);
        if let (Some(s), false) = (d.server, d.background) {
            // No server runs with zero budget unless in background mode.
            let b = sched.server(s).unwrap().budget();
            assert!(
                !b.is_zero(),
                "server {s:?} dispatched with zero budget at {now}"
            );
        }
        let mut until = horizon;
        if let Some(t) = d.next_update {
            assert!(t.as_ns() > now, "next_update {t} not after now {now}");
            until = until.min(t.as_ns());
        }
        if i < arrivals.len() {
            until = until.min(arrivals[i].at);
        }
        if let (Some(s), Some(t)) = (d.server, d.thread) {
            until = until.min(now.saturating_add(work[t.0]));
            if until > now {
                match segs.last_mut() {
                    Some(l)
                        if l.server == s
                            && l.thread == t
                            && l.end == now
                            && l.background == d.background =>
                    {
                        l.end = until
                    }
                    _ => segs.push(Segment {
                        server: s,
                        thread: t,
                        start: now,
                        end: until,
                        background: d.background,
                    }),
                }
            }
            work[t.0] -= until - now;
            now = until;
            if work[t.0] == 0 && sched.block(Nanos(now), t).unwrap() {
                // The running thread blocked: the scheduler runs at once
                // (before anything else can happen at this instant).
                sched.schedule(Nanos(now)).unwrap();
                check(sched, now);
            }
        } else {
            now = until;
        }
    }
    segs
}

/// Time `server` executed (foreground) inside `[a, b)`.
pub fn consumed(segs: &[Segment], server: ServerId, a: u64, b: u64) -> u64 {
    segs.iter()
        .filter(|s| s.server == server && !s.background)
        .map(|s| s.end.min(b).saturating_sub(s.start.max(a)))
        .sum()
}

/// The largest consumption of `server` in any window of length `len`
/// (the maximum is reached by a window starting at a segment start).
pub fn max_window(segs: &[Segment], server: ServerId, len: u64) -> u64 {
    segs.iter()
        .filter(|s| s.server == server)
        .map(|s| consumed(segs, server, s.start, s.start + len))
        .max()
        .unwrap_or(0)
}
