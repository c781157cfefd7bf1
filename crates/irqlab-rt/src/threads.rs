//! The runtime's own threads (supervisors, probes, top half, I/O VCPU
//! threads, spawned tasks) and the bounded stop.
//!
//! What it is: every thread the runtime starts is spawned through
//! [`spawn`], which records its kernel id and the scheduling policy it had
//! before the runtime changed it, and marks it done when its body returns
//! (or unwinds). [`join_within`] waits for all of them until a deadline.
//! Early in the wait (after `RESTORE_AFTER` or half the bound) every thread
//! still running is given back its original scheduling policy and the
//! process's CPU affinity: a thread stuck below another process's
//! real-time thread on its CPU can then finish elsewhere, and a runaway
//! thread no longer holds a SCHED_FIFO priority nobody supervises. At the
//! deadline those that returned are joined, the others -- a handler or a
//! task body that never returns -- are reported and detached.
//!
//! Design principles: `stop` never waits on a thread without a deadline;
//! a thread that does not return costs a warning, never a hang.

use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use irqlab_core::Nanos;

use crate::error::RtError;
use crate::sys::{self, SchedPolicy};

/// The policy a thread gets back when nothing else was recorded.
pub(crate) const OTHER: SchedPolicy = SchedPolicy {
    policy: libc::SCHED_OTHER,
    priority: 0,
};

/// What the runtime knows of one of its threads.
pub(crate) struct RtThread {
    /// What the thread is, for reports ("task control", "I/O VCPU io.flood").
    pub what: String,
    tid: AtomicI32,
    original: Mutex<Option<SchedPolicy>>,
    done: AtomicBool,
}

impl RtThread {
    fn original(&self) -> SchedPolicy {
        self.original
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .unwrap_or(OTHER)
    }
}

/// A started thread and its join handle.
pub(crate) struct Spawned {
    pub rec: Arc<RtThread>,
    handle: JoinHandle<()>,
}

struct MarkDone(Arc<RtThread>);

impl Drop for MarkDone {
    fn drop(&mut self) {
        self.0.done.store(true, Ordering::SeqCst);
    }
}

/// Start `body` on a new thread named `name` (the kernel's 15-character
/// name), described as `what` in reports.
pub(crate) fn spawn(
    name: String,
    what: String,
    body: impl FnOnce() + Send + 'static,
) -> Result<Spawned, RtError> {
    let rec = Arc::new(RtThread {
        what,
        tid: AtomicI32::new(0),
        original: Mutex::new(None),
        done: AtomicBool::new(false),
    });
    let r2 = rec.clone();
    let handle = std::thread::Builder::new()
        .name(name)
        .spawn(move || {
            *r2.original.lock().unwrap_or_else(|e| e.into_inner()) = sys::get_policy(0).ok();
            r2.tid.store(sys::gettid(), Ordering::SeqCst);
            let _done = MarkDone(r2);
            body();
        })
        .map_err(|e| RtError::from_io("spawn a runtime thread", e))?;
    Ok(Spawned { rec, handle })
}

/// Give thread `tid` back `policy` and `affinity` (best effort; a thread
/// that already ended is not an error).
pub(crate) fn restore(tid: sys::Tid, policy: SchedPolicy, affinity: Option<&libc::cpu_set_t>) {
    let _ = sys::set_policy(tid, policy);
    if let Some(set) = affinity {
        sys::set_affinity(tid, set);
    }
}

/// When the threads still running at a stop get their policy back.
const RESTORE_AFTER: Nanos = Nanos::from_ms(100);

/// Wait until every thread of `threads` returned or `bound` passed,
/// giving the ones still running their original policy and `affinity`
/// after `RESTORE_AFTER` (or half the bound). The threads that returned
/// are joined; the others are detached and described in the result.
pub(crate) fn join_within(
    threads: Vec<Spawned>,
    bound: Nanos,
    affinity: Option<&libc::cpu_set_t>,
) -> Vec<String> {
    let t0 = sys::now();
    let (restore_at, deadline) = (t0 + RESTORE_AFTER.min(Nanos(bound.0 / 2)), t0 + bound);
    let running = |threads: &[Spawned]| threads.iter().any(|t| !t.rec.done.load(Ordering::SeqCst));
    for until in [restore_at, deadline] {
        while running(&threads) && sys::now() < until {
            std::thread::sleep(Duration::from_millis(1));
        }
        for t in threads
            .iter()
            .filter(|t| !t.rec.done.load(Ordering::SeqCst))
        {
            let tid = t.rec.tid.load(Ordering::SeqCst);
            if tid > 0 {
                restore(tid, t.rec.original(), affinity);
            }
        }
    }
    let mut stuck = Vec::new();
    for t in threads {
        if t.rec.done.load(Ordering::SeqCst) {
            let _ = t.handle.join();
            continue;
        }
        let tid = t.rec.tid.load(Ordering::SeqCst);
        let p = t.rec.original();
        stuck.push(format!(
            "{} (tid {}) did not return within {} ms of the stop: left running, detached, \
             its scheduling policy restored to {} {}",
            t.rec.what,
            if tid > 0 {
                tid.to_string()
            } else {
                "unknown".into()
            },
            bound.0 / 1_000_000,
            p.name(),
            p.priority
        ));
        drop(t.handle); // detached
    }
    stuck
}
