//! A model task's program on a real thread: releases (periodic from the
//! run's start plus `offset`, or once), compute steps as CPU time on the
//! thread's own clock, blocking reads and requests (usb, disk), bind steps
//! (`usb_set_iovcpu`), sleeps and loops; per-task jobs,
//! response times, deadline misses and release delays (the host's timer
//! stalls).
//!
//! Design principles: one interpreter for every path; what a thread
//! records (which may allocate) is recorded inside `park::critical`, so the
//! supervisor never parks a thread holding the allocator's lock that it
//! needs itself (a deadlock seen with 24 Main VCPUs); what differs (how a
//! thread sleeps and how it reads a device) is the `Exec` of the path. The
//! job semantics are the simulator's (irqlab-sim `program.rs`): a release
//! while a job is unfinished waits (backlog), and a released job still
//! unfinished past its deadline at the end of the run is a miss.

use std::sync::Mutex;

use irqlab_core::{LatencyRecorder, Nanos};

use super::plan::{Op, Release, TaskPlan};
use crate::sys;

/// Response samples kept per task (for the CDF plots).
pub(crate) const KEEP: usize = 20_000;

/// How a path's thread sleeps and reads.
pub(crate) trait Exec {
    /// Sleep until `t` (CLOCK_MONOTONIC); `false` when the run stops.
    fn sleep_until(&mut self, t: Nanos) -> bool;
    /// Block until one item of device `dev` is there and take it; `false`
    /// when the run stops.
    fn read(&mut self, dev: usize) -> bool;
    /// Submit a request to device `dev` (usb, disk), block until it
    /// completed and return; `false` when the run stops.
    fn request(&mut self, dev: usize) -> bool;
    /// `usb_set_iovcpu`: device `dev`'s next requests complete through
    /// route `route`.
    fn bind(&mut self, dev: usize, route: usize);
    /// The run goes on (checked after each compute step, so a `forever`
    /// loop of computing ends at the stop).
    fn running(&self) -> bool;
}

/// Spend `work` of this thread's CPU time.
pub(crate) use crate::sys::spin_cpu as spin;

/// What one task did.
pub(crate) struct TaskRec {
    pub completed: u64,
    pub late: u64,
    pub response: LatencyRecorder,
    /// Release to the thread running again (the timer's lateness).
    pub release_delay: LatencyRecorder,
    pub cpu_time: Nanos,
}

impl Default for TaskRec {
    fn default() -> Self {
        TaskRec {
            completed: 0,
            late: 0,
            response: LatencyRecorder::new(KEEP, None),
            release_delay: LatencyRecorder::new(KEEP, None),
            cpu_time: Nanos::ZERO,
        }
    }
}

/// Run `ops`; `false` if the run stopped inside.
fn steps<E: Exec>(e: &mut E, ops: &[Op]) -> bool {
    for op in ops {
        let ok = match op {
            Op::Compute(ns) => {
                spin(*ns);
                e.running()
            }
            Op::Sleep(ns) => e.sleep_until(sys::now() + *ns),
            Op::Read(d) => e.read(*d),
            Op::Request(d) => e.request(*d),
            Op::Bind { dev, route } => {
                e.bind(*dev, *route);
                true
            }
            Op::Loop { count, body } => {
                let mut k = 0;
                loop {
                    if count.is_some_and(|c| k >= c) {
                        break true;
                    }
                    if !steps(e, body) {
                        break false;
                    }
                    k += 1;
                }
            }
        };
        if !ok {
            return false;
        }
    }
    true
}

/// The body of task `t`'s thread, from run start `t0`.
pub(crate) fn run_task<E: Exec>(e: &mut E, t: &TaskPlan, t0: Nanos, rec: &Mutex<TaskRec>) {
    let (period, deadline, offset, jobs) = match t.release {
        Release::Periodic {
            period,
            deadline,
            offset,
            jobs,
        } => (Some(period), Some(deadline), offset, jobs),
        Release::Once { offset, deadline } => (None, deadline, offset, Some(1)),
    };
    let mut k = 0u64;
    while jobs.is_none_or(|j| k < j) {
        let rel = t0 + offset + Nanos(period.map_or(0, |p| p.0.saturating_mul(k)));
        if !e.sleep_until(rel) {
            break;
        }
        let woke = sys::now();
        crate::park::critical(|| {
            if let Ok(mut r) = rec.lock() {
                r.release_delay.record(woke.saturating_sub(rel));
            }
        });
        if !steps(e, &t.program) {
            break;
        }
        let done = sys::now();
        crate::park::critical(|| {
            if let Ok(mut r) = rec.lock() {
                let resp = done.saturating_sub(rel);
                r.response.record(resp);
                r.completed += 1;
                if deadline.is_some_and(|d| resp > d) {
                    r.late += 1;
                }
            }
        });
        k += 1;
    }
    if let Ok(mut r) = rec.lock() {
        r.cpu_time = sys::own_cpu_time();
    }
}

/// Jobs of `t` released by `t_end` (run from `t0`), and those among the
/// unfinished ones whose deadline passed before `t_end`.
pub(crate) fn released_and_overdue(
    t: &TaskPlan,
    t0: Nanos,
    t_end: Nanos,
    completed: u64,
) -> (u64, u64) {
    let (period, deadline, offset, jobs) = match t.release {
        Release::Periodic {
            period,
            deadline,
            offset,
            jobs,
        } => (period.0.max(1), Some(deadline.0), offset.0, jobs),
        Release::Once { offset, deadline } => (u64::MAX, deadline.map(|d| d.0), offset.0, Some(1)),
    };
    let first = t0.0.saturating_add(offset);
    let cap = |n: u64| jobs.map_or(n, |j| n.min(j));
    if t_end.0 < first {
        return (0, 0);
    }
    let released = cap((t_end.0 - first) / period + 1);
    let overdue = match deadline {
        // Jobs j with first + j*period + deadline < t_end.
        Some(d) if t_end.0 > first.saturating_add(d) => {
            let due = cap((t_end.0 - first - d - 1) / period + 1);
            due.saturating_sub(completed)
        }
        _ => 0,
    };
    (released, overdue)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task(period: u64, deadline: u64, offset: u64, jobs: Option<u64>) -> TaskPlan {
        TaskPlan {
            name: "t".into(),
            vcpu: 0,
            priority: 1,
            release: Release::Periodic {
                period: Nanos(period),
                deadline: Nanos(deadline),
                offset: Nanos(offset),
                jobs,
            },
            program: vec![],
        }
    }

    #[test]
    fn releases_and_overdue_jobs_by_hand() {
        // Releases at 100, 110, ..., 190 by t_end = 195: 10 released; the
        // jobs due (release + 5 < 195) are those released up to 185: 9.
        let t = task(10, 5, 0, None);
        assert_eq!(released_and_overdue(&t, Nanos(100), Nanos(195), 0), (10, 9));
        assert_eq!(released_and_overdue(&t, Nanos(100), Nanos(195), 9), (10, 0));
        // A job finishing exactly at its deadline is in time: at t_end = 105
        // the first job (due 105) is not overdue.
        assert_eq!(released_and_overdue(&t, Nanos(100), Nanos(105), 0), (1, 0));
        // The job limit caps both.
        let t = task(10, 5, 0, Some(3));
        assert_eq!(released_and_overdue(&t, Nanos(100), Nanos(195), 1), (3, 2));
        // Nothing before the offset.
        let t = task(10, 5, 50, None);
        assert_eq!(released_and_overdue(&t, Nanos(100), Nanos(140), 0), (0, 0));
    }
}
