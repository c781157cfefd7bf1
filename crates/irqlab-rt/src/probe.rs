//! The platform-latency probe: an independent SCHED_FIFO sampler on each
//! managed CPU, so a deadline miss can be told apart: the platform's (the
//! CPU was taken from every thread) or the runtime's.
//!
//! What it is: a thread per managed CPU at the supervisors' priority (99),
//! pinned, that sleeps to absolute times `interval` apart
//! (`clock_nanosleep(TIMER_ABSTIME)`, cyclictest's loop) and records how
//! late it woke. Nothing of the runtime runs above it, so when it wakes
//! late something outside the runtime held the CPU (the fair server running
//! starved SCHED_OTHER work, a non-preemptible kernel section on a
//! `PREEMPT_NONE` kernel, softirqs, the host). A sample late by at least
//! `stall` is a **stall**: the interval `[due, woke]` is kept (time-ordered
//! and disjoint, since the next due time is after the last wake-up).
//!
//! A missed deadline is **attributed to the platform** only when a stall
//! the probe saw on the task's CPU overlaps the late job's window (release
//! to completion, or to the end of the run for a job that never finished);
//! every other miss is the runtime's own ("unexplained"), which is what the
//! isolation tests assert never happens with an I/O VCPU.
//!
//! Design principles: the probe shares nothing with the supervisor but the
//! stop flag; it has its own lock, taken once per sample; it keeps at most
//! `MAX_STALLS` stall intervals (later ones are counted, not kept, and can
//! then explain nothing: attribution stays conservative).

use std::sync::atomic::Ordering;
use std::sync::Arc;

use irqlab_core::{LatencyRecorder, Nanos};

use crate::{sys, CpuShared, Mode, Shared, SAMPLES};

/// Probe settings (`Config::probe`).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct ProbeConfig {
    /// Time between samples (10 us ..= 1 s).
    pub interval: Nanos,
    /// A sample at least this late is a platform stall.
    pub stall: Nanos,
}

impl Default for ProbeConfig {
    fn default() -> Self {
        ProbeConfig {
            interval: Nanos::from_ms(1),
            stall: Nanos::from_us(200),
        }
    }
}

/// Stall intervals kept per CPU.
pub(crate) const MAX_STALLS: usize = 1 << 16;

/// What one CPU's probe saw.
pub(crate) struct ProbeState {
    pub cfg: ProbeConfig,
    pub running: bool,
    pub fifo: bool,
    pub lateness: LatencyRecorder,
    /// `[due, woke]` of each stall, in time order, disjoint.
    pub stalls: Vec<(Nanos, Nanos)>,
    pub stall_count: u64,
    pub stall_time: Nanos,
}

impl ProbeState {
    pub fn new(cfg: ProbeConfig) -> ProbeState {
        ProbeState {
            cfg,
            running: false,
            fifo: false,
            lateness: LatencyRecorder::new(SAMPLES, None),
            stalls: Vec::new(),
            stall_count: 0,
            stall_time: Nanos::ZERO,
        }
    }

    fn record(&mut self, due: Nanos, woke: Nanos) {
        let late = woke.saturating_sub(due);
        self.lateness.record(late);
        if late >= self.cfg.stall {
            self.stall_count += 1;
            self.stall_time += late;
            if self.stalls.len() < MAX_STALLS {
                self.stalls.push((due, woke));
            }
        }
    }

    /// Did a kept stall overlap `[from, to]`?
    pub fn saw_stall(&self, from: Nanos, to: Nanos) -> bool {
        saw_stall(&self.stalls, from, to)
    }

    /// Of `n` jobs released at `first + i * period` (i < n) and unfinished
    /// at `end`, how many windows `[release, end]` a kept stall overlaps.
    pub fn unfinished_explained(&self, first: Nanos, period: Nanos, n: u64, end: Nanos) -> u64 {
        unfinished_explained(&self.stalls, first, period, n, end)
    }
}

fn saw_stall(stalls: &[(Nanos, Nanos)], from: Nanos, to: Nanos) -> bool {
    // Disjoint and ordered: the first stall ending after `from` is the only
    // candidate that can start before `to`.
    let i = stalls.partition_point(|s| s.1 <= from);
    stalls.get(i).is_some_and(|s| s.0 < to)
}

fn unfinished_explained(
    stalls: &[(Nanos, Nanos)],
    first: Nanos,
    period: Nanos,
    n: u64,
    end: Nanos,
) -> u64 {
    // The windows share their end, so a release is explained iff it is
    // before the end of the last stall that started before `end`.
    let k = stalls.partition_point(|s| s.0 < end);
    let Some(&(_, last_end)) = k.checked_sub(1).and_then(|k| stalls.get(k)) else {
        return 0;
    };
    if last_end <= first || period.is_zero() {
        return 0;
    }
    last_end.saturating_sub(first).0.div_ceil(period.0).min(n)
}

/// The probe thread of `cpu`.
pub(crate) fn run(shared: Arc<Shared>, cpu: Arc<CpuShared>) {
    let fifo = shared.mode == Mode::Fifo
        && sys::set_fifo(0, shared.cfg.supervisor_priority).is_ok()
        && sys::pin(0, cpu.cpu).is_ok();
    if shared.mode == Mode::ParkOnly {
        let _ = sys::pin(0, cpu.cpu);
    }
    let interval = {
        let mut p = cpu.probe();
        p.running = true;
        p.fifo = fifo;
        p.cfg.interval
    };
    shared.wait_start();
    let mut due = sys::now() + interval;
    while !shared.stop.load(Ordering::SeqCst) {
        let ts = libc::timespec {
            tv_sec: (due.0 / 1_000_000_000) as libc::time_t,
            tv_nsec: (due.0 % 1_000_000_000) as libc::c_long,
        };
        // SAFETY: `ts` is valid for the call; no remainder is asked for.
        let r = unsafe {
            libc::clock_nanosleep(
                libc::CLOCK_MONOTONIC,
                libc::TIMER_ABSTIME,
                &ts,
                std::ptr::null_mut(),
            )
        };
        let woke = sys::now();
        if r != 0 && woke < due {
            continue; // interrupted early: sleep again
        }
        cpu.probe().record(due, woke);
        due += interval;
        if due <= woke {
            due = woke + interval; // samples missed in a stall are skipped
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn us(v: u64) -> Nanos {
        Nanos::from_us(v)
    }

    #[test]
    fn a_stall_is_a_sample_late_by_at_least_the_threshold() {
        let mut p = ProbeState::new(ProbeConfig {
            interval: Nanos::from_ms(1),
            stall: us(200),
        });
        p.record(us(1_000), us(1_010));
        p.record(us(2_000), us(2_199));
        p.record(us(3_000), us(3_200));
        p.record(us(4_000), us(9_000));
        assert_eq!(p.lateness.num(), 4);
        assert_eq!(p.stall_count, 2);
        assert_eq!(p.stall_time, us(5_200));
        assert_eq!(
            p.stalls,
            vec![(us(3_000), us(3_200)), (us(4_000), us(9_000))]
        );
    }

    #[test]
    fn a_miss_is_explained_only_by_an_overlapping_stall() {
        let stalls = [(us(100), us(300)), (us(1_000), us(4_000))];
        assert!(saw_stall(&stalls, us(0), us(101)));
        assert!(
            !saw_stall(&stalls, us(0), us(100)),
            "ends as the stall starts"
        );
        assert!(
            !saw_stall(&stalls, us(300), us(1_000)),
            "between the stalls"
        );
        assert!(saw_stall(&stalls, us(299), us(1_000)));
        assert!(saw_stall(&stalls, us(2_000), us(2_500)), "inside one");
        assert!(!saw_stall(&stalls, us(4_000), us(9_000)), "after the last");
        assert!(!saw_stall(&[], us(0), us(9_000)));
    }

    #[test]
    fn unfinished_jobs_are_explained_up_to_the_last_stall() {
        let stalls = [(us(100), us(300)), (us(1_000), us(4_000))];
        // Releases at 0, 1000, 2000, ... ms-scale in us; run ends at 10_000.
        let n = |first, period, k, end| {
            unfinished_explained(&stalls, us(first), us(period), k, us(end))
        };
        // Releases 0, 1000, 2000, 3000 are before the stall's end (4000).
        assert_eq!(n(0, 1_000, 10, 10_000), 4);
        assert_eq!(n(0, 1_000, 2, 10_000), 2, "at most the unfinished jobs");
        assert_eq!(n(4_000, 1_000, 6, 10_000), 0, "all released after it");
        // A run that ended before the second stall started: only the first.
        assert_eq!(n(0, 100, 10, 900), 3);
        assert_eq!(unfinished_explained(&[], us(0), us(1), 5, us(10)), 0);
    }
}
