//! The per-CPU supervisor: `irqlab-core`'s scheduler run in real time.
//!
//! What it is: a SCHED_FIFO 99 thread pinned to its CPU. Each time it
//! wakes (its doorbell, or the core's `next_update`) it (1) charges the
//! dispatched server with the CPU time its threads really used, read from
//! their per-thread CPU clocks (wall time the server did not use -- the top
//! half, the supervisor itself, unmanaged blocking -- is excluded through
//! `Scheduler::exclude`); (2) releases timed waits that are due; (3) calls
//! `schedule(now)` (QUEST-VCPU Alg. 1); (4) carries out the `Dispatch`:
//! the chosen server's threads get foreground FIFO priorities in the
//! server's thread order, every other managed thread a low FIFO background
//! priority, and the runnable threads of a depleted server without
//! background mode are parked (see `park`); (5) sleeps until the earlier of
//! `next_update` and the next timed release, never less than the
//! minimum-sleep guard (a sleep of a few microseconds may return without a
//! context switch and would starve the thread it is meant to let run).
//!
//! Design principles (the LITMUS^RT reservation contract): the core decides,
//! the supervisor only feeds it time and events and carries out the
//! decision; it never re-implements a policy. All shared state sits behind
//! one lock per CPU; threads that block or wake take it briefly, tell the
//! core, and ring the doorbell.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use irqlab_core::{Class, Nanos, PriorityKey, ServerId, ServerPolicy, ThreadId};

use crate::sys;
use crate::{CpuShared, CpuState, Mode, Shared};

/// One supervisor pass with the CPU's lock held. Returns when to wake next.
pub(crate) fn step(st: &mut CpuState, shared: &Shared, now: Nanos) -> Option<Nanos> {
    // Stopping: the stop restores every thread's policy under this lock;
    // a later pass must not undo it.
    if shared.stop.load(Ordering::SeqCst) {
        return None;
    }
    st.passes += 1;
    // (1) Charge the dispatched server with its threads' CPU time.
    let current = st.sched.current().map(|(s, _)| s);
    let mut used = Nanos::ZERO;
    for t in st.threads.iter_mut() {
        let Some(clock) = t.clock else { continue };
        let cpu = sys::clock(clock).unwrap_or(t.last_cpu);
        let d = cpu.saturating_sub(t.last_cpu);
        t.last_cpu = cpu;
        t.cpu_total += d;
        if Some(t.server) == current {
            used += d;
        }
    }
    let wall = now.saturating_sub(st.last_step);
    st.last_step = now;
    st.starved = current.is_some() && used.is_zero() && !wall.is_zero();
    if let Some(sid) = current {
        st.sched.exclude(wall.saturating_sub(used));
        // Enforcement precision: CPU time used beyond the budget the
        // server had left when it was dispatched.
        let left = st
            .sched
            .server(sid)
            .map(|s| s.budget())
            .unwrap_or(Nanos::MAX);
        if left != Nanos::MAX && used > left && !st.dispatched_background {
            st.servers[sid.0].overrun.record(used - left);
        }
    }
    // (2) Timed waits that are due.
    let mut next_release: Option<Nanos> = None;
    for i in 0..st.threads.len() {
        let Some(r) = st.threads[i].release else {
            continue;
        };
        if r <= now {
            st.threads[i].release = None;
            // A thread id handed out by this CPU's scheduler: cannot fail.
            let _ = st.sched.wakeup(now, ThreadId(i), None);
            st.threads[i].sh.gate.open();
        } else {
            next_release = Some(next_release.map_or(r, |n: Nanos| n.min(r)));
        }
    }
    // (3) QUEST-VCPU Alg. 1.
    let Ok(d) = st.sched.schedule(now) else {
        return next_release;
    };
    // (4) Carry out the dispatch.
    for i in 0..st.threads.len() {
        let Some(tid) = st.threads[i].tid else {
            continue;
        };
        let sid = st.threads[i].server;
        let dispatched = d.server == Some(sid);
        if shared.mode == Mode::Fifo {
            let want = if dispatched {
                let key = st.sched.priority_key(sid).ok();
                fg_priority(shared.cfg.fg_base, key, st.threads[i].prio)
            } else {
                shared.cfg.bg_priority
            };
            if st.threads[i].applied != Some(want) {
                if sys::set_fifo(tid, want).is_ok() {
                    st.threads[i].applied = Some(want);
                    st.prio_changes += 1;
                } else {
                    st.errors += 1;
                }
            }
        }
        // The cooperative budget check's limit (see `io`).
        let limit = match st.sched.server(sid) {
            Ok(s) if dispatched && !d.background && s.budget() != Nanos::MAX => {
                (st.threads[i].last_cpu + s.budget()).0
            }
            _ => 0,
        };
        st.threads[i].sh.cpu_limit.store(limit, Ordering::Relaxed);
        let runnable = st.sched.thread_runnable(ThreadId(i)).unwrap_or(false);
        let throttle = runnable && !dispatched && depleted(st, sid);
        if throttle {
            if !st.threads[i].sh.park.is_wanted() {
                st.throttles += 1;
                if st.threads[i].sh.park.park(tid).is_err() {
                    st.errors += 1;
                }
            }
        } else {
            st.threads[i].sh.park.unpark();
        }
    }
    st.dispatched = d.server;
    st.dispatched_background = d.background;
    match (d.next_update, next_release) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// Levels of server priority in the foreground band, and of thread
/// priority inside a server.
pub(crate) const SERVER_LEVELS: i32 = 60;
pub(crate) const THREAD_LEVELS: u32 = 20;

/// The SCHED_FIFO priority of a thread of the dispatched server: the
/// server's priority key mapped monotonically onto `SERVER_LEVELS` levels
/// (a quarter octave of period each: 10 us is near the top, 1 s at the
/// bottom; deadline-class servers at the top), plus the thread's own
/// priority (capped) to order threads inside the server. A PIBS I/O VCPU
/// that inherits a Main VCPU's period (QUEST-VCPU Alg. 10) thus shows that
/// Main VCPU's level.
pub(crate) fn fg_priority(fg_base: i32, key: Option<PriorityKey>, thread_prio: u32) -> i32 {
    let level = match key {
        Some(k) if k.class == Class::Deadline => SERVER_LEVELS - 1,
        Some(k) => {
            let quarter_octaves = (4.0 * (k.key.max(1) as f64).log2()).floor() as i32;
            (SERVER_LEVELS - 1 - (quarter_octaves - 52)).clamp(0, SERVER_LEVELS - 1)
        }
        None => 0,
    };
    fg_base + level + thread_prio.min(THREAD_LEVELS - 1) as i32
}

/// A server that has no budget and may not run in background mode.
fn depleted(st: &CpuState, sid: ServerId) -> bool {
    st.sched
        .server(sid)
        .map(|s| s.budget().is_zero() && !s.background())
        .unwrap_or(false)
}

/// How long the supervisor sleeps before its next pass at `next`, when this
/// pass ended at `now` after `pass` awake: until `next`, but at least
/// `min_sleep` (shorter sleeps return without a context switch) and at least
/// `pass` -- the duty-cycle guard, which keeps the supervisor's share of its
/// CPU at or below about half. Without it, a dispatched server with a few
/// microseconds of budget left whose thread does not get the CPU (a top
/// half above it) is polled every `min_sleep`; on a slow host (nested KVM,
/// passes of 40-55 us) those passes starved the top half, which starved the
/// thread, which kept the budget -- and the polling -- until the period
/// ended (`irqlab-vmm storm`, vINT at 80 %: 6 ms of every 10 ms, the decoder
/// down to 2-7 fps). Enforcement is then as precise as one pass is long.
fn sleep_for(next: Nanos, now: Nanos, pass: Nanos, min_sleep: Nanos) -> Nanos {
    next.saturating_sub(now).max(min_sleep).max(pass)
}

/// The starved-poll guard's cap, in units of the minimum sleep.
const BACKOFF_MAX: u64 = 16;

/// The least sleep after a pass, given the one after the previous pass:
/// while timer wakes find the dispatched server starved (its threads got
/// no CPU time since the previous pass: the top half or another thread
/// above every managed thread holds the CPU), the sleep doubles from twice
/// the minimum to `BACKOFF_MAX` times it; a doorbell, or any CPU time the
/// server used, ends it. The duty-cycle guard of `sleep_for` is not enough
/// on its own: here a poll of 10-25 us returned without a context switch,
/// so a supervisor polling a starved server's last microseconds of budget
/// kept the CPU from the very top half that starved it (the VMM's top half
/// took 10-40 ms for a dozen events, `irqlab-vmm` tests/vint.rs). The
/// price: when the CPU comes back, the server's thread may run up to one
/// such sleep (at most `BACKOFF_MAX` x `min_sleep`) beyond its budget
/// before the next pass stops it, once per starved stretch.
fn starved_backoff(prev: Nanos, starved_timer_wake: bool, min_sleep: Nanos) -> Nanos {
    if !starved_timer_wake {
        return Nanos::ZERO;
    }
    Nanos(prev.0.saturating_mul(2)).clamp(
        Nanos(min_sleep.0.saturating_mul(2)),
        Nanos(min_sleep.0.saturating_mul(BACKOFF_MAX)),
    )
}

/// The supervisor thread's body.
pub(crate) fn run(shared: Arc<Shared>, cpu: Arc<CpuShared>) {
    let min_sleep = shared.cfg.min_sleep;
    let mut woke = sys::now();
    let (mut rung, mut backoff) = (true, Nanos::ZERO);
    loop {
        let (next, starved) = {
            let mut st = cpu.lock();
            let now = sys::now();
            let next = step(&mut st, &shared, now);
            (next, st.starved)
        };
        if shared.stop.load(Ordering::SeqCst) {
            break;
        }
        let before = sys::now();
        backoff = starved_backoff(backoff, starved && !rung, min_sleep);
        let timeout =
            next.map(|t| sleep_for(t, before, before.saturating_sub(woke), min_sleep).max(backoff));
        rung = sys::wait_readable(cpu.doorbell.0, timeout);
        if let (false, Some(d)) = (rung, timeout) {
            // Woken by the timer: how late (the enforcement floor).
            let late = sys::now().saturating_sub(before + d);
            cpu.lock().timer_latency.record(late);
        }
        sys::eventfd_drain(cpu.doorbell.0);
        woke = sys::now();
        if shared.stop.load(Ordering::SeqCst) {
            break;
        }
    }
    let mut st = cpu.lock();
    st.supervisor_cpu = sys::own_cpu_time();
    // A last pass may have parked a thread after `stop` unparked it.
    for t in &st.threads {
        t.sh.park.unpark();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sleep_until_next_update_but_never_shorter_than_the_pass_or_the_minimum() {
        let us = Nanos::from_us;
        let (now, min) = (us(1_000), us(10));
        // far ahead: the core's next update
        assert_eq!(sleep_for(us(3_000), now, us(40), min), us(2_000));
        // a few microseconds of budget left: at least the minimum sleep...
        assert_eq!(sleep_for(us(1_003), now, us(4), min), us(10));
        // ...and at least as long as this pass took (the duty-cycle guard)
        assert_eq!(sleep_for(us(1_003), now, us(45), min), us(45));
        assert_eq!(sleep_for(us(1_030), now, us(45), min), us(45));
        // an update already due
        assert_eq!(sleep_for(us(900), now, us(5), min), us(10));
    }

    #[test]
    fn starved_timer_wakes_back_off_to_the_cap_and_anything_else_ends_it() {
        let us = Nanos::from_us;
        let min = us(10);
        let mut b = Nanos::ZERO;
        let mut seen = Vec::new();
        for _ in 0..7 {
            b = starved_backoff(b, true, min);
            seen.push(b);
        }
        assert_eq!(
            seen,
            [us(20), us(40), us(80), us(160), us(160), us(160), us(160)]
        );
        // A doorbell or CPU time used by the server: back to the plain rule.
        assert_eq!(starved_backoff(us(160), false, min), Nanos::ZERO);
        assert_eq!(starved_backoff(Nanos::ZERO, true, min), us(20));
    }
}
