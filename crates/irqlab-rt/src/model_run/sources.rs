//! A generic device's event sources on real descriptors
//! (`devices[].source`): an eventfd (the default), a timerfd the kernel
//! fires every `min_interarrival` from the device's `start`, or a pipe of
//! 8-byte items. `devices.rs` opens, reads and feeds them through these.
//!
//! Design principles: the timerfd is armed on the run's own clock
//! (CLOCK_MONOTONIC, absolute from the run's start), so its events keep the
//! model's times without a generator thread writing them; what it "sent"
//! is the number of expirations up to the run's end, as the kernel counts
//! them; pipe and eventfd writers never block (a full pipe is a lost item,
//! not a stalled generator).

use std::os::fd::RawFd;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use irqlab_core::Nanos;
use irqlab_model::model::Source;

use crate::error::RtError;
use crate::sys;

/// A generic device's descriptor: `(read end, write end)` (the write end:
/// a pipe's).
pub(crate) fn open(source: Source) -> Result<(sys::Fd, Option<sys::Fd>), RtError> {
    match source {
        Source::Eventfd => Ok((sys::eventfd()?, None)),
        Source::Timerfd => Ok((sys::timerfd()?, None)),
        Source::Pipe => {
            let mut fds = [0 as libc::c_int; 2];
            // SAFETY: fills two descriptors owned below.
            if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_NONBLOCK | libc::O_CLOEXEC) } != 0 {
                return Err(RtError::last_os("pipe2"));
            }
            Ok((sys::Fd(fds[0]), Some(sys::Fd(fds[1]))))
        }
    }
}

/// Take at most `max` items: a pipe's 8-byte items, or the count of an
/// eventfd or timerfd (one read takes all of it).
pub(crate) fn take(source: Source, fd: RawFd, max: u64) -> u64 {
    match source {
        Source::Eventfd | Source::Timerfd => sys::eventfd_drain(fd),
        Source::Pipe => {
            let mut n = 0;
            let mut buf = [0u8; 8];
            while n < max {
                // SAFETY: reads into a live buffer of its length.
                let r = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), 8) };
                if r != 8 {
                    break;
                }
                n += 1;
            }
            n
        }
    }
}

/// Write one item (8 bytes) to an eventfd or a pipe; `false` if it did not
/// fit.
pub(crate) fn put(fd: RawFd) -> bool {
    let one: u64 = 1;
    // SAFETY: writes 8 bytes from a live u64.
    unsafe { libc::write(fd, (&one as *const u64).cast(), 8) == 8 }
}

fn timespec(t: Nanos) -> libc::timespec {
    libc::timespec {
        tv_sec: (t.0 / 1_000_000_000) as libc::time_t,
        tv_nsec: (t.0 % 1_000_000_000) as libc::c_long,
    }
}

/// Arm timerfd `fd` to fire at `first` (absolute, CLOCK_MONOTONIC) and
/// every `interval` after, then wait on a thread until `stop`, disarm it
/// and count the expirations up to then into `sent`.
pub(crate) fn run_timerfd(
    name: &str,
    fd: RawFd,
    first: Nanos,
    interval: Nanos,
    sent: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
) -> Result<std::thread::JoinHandle<()>, RtError> {
    if interval.is_zero() {
        return Err(RtError::config(
            format!("devices ({name}).min_interarrival"),
            "0",
            "a timerfd needs a positive period",
        ));
    }
    let spec = libc::itimerspec {
        it_interval: timespec(interval),
        it_value: timespec(first.max(Nanos(1))),
    };
    // SAFETY: a valid itimerspec on a live timerfd.
    if unsafe { libc::timerfd_settime(fd, libc::TFD_TIMER_ABSTIME, &spec, std::ptr::null_mut()) }
        != 0
    {
        return Err(RtError::last_os("timerfd_settime"));
    }
    std::thread::Builder::new()
        .name(format!("irqlab-gen-{name}"))
        .spawn(move || {
            while super::devices::sleep_abs(sys::now() + Nanos::from_secs(1), &stop) {}
            // Disarm, then count: every expiration the handler can still
            // see is at or before `now`.
            let off = libc::itimerspec {
                it_interval: timespec(Nanos::ZERO),
                it_value: timespec(Nanos::ZERO),
            };
            // SAFETY: a valid itimerspec; the device keeps the fd open
            // until the run's threads are joined.
            unsafe { libc::timerfd_settime(fd, 0, &off, std::ptr::null_mut()) };
            let now = sys::now();
            if now >= first {
                sent.store((now - first).0 / interval.0 + 1, Ordering::Relaxed);
            }
        })
        .map_err(|e| RtError::from_io("spawn timerfd counter", e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pipe_items_and_eventfd_counts() {
        let (r, w) = open(Source::Pipe).expect("pipe");
        let w = w.expect("write end");
        assert!(put(w.0) && put(w.0) && put(w.0));
        assert_eq!(take(Source::Pipe, r.0, 2), 2);
        assert_eq!(take(Source::Pipe, r.0, 2), 1);
        assert_eq!(take(Source::Pipe, r.0, 2), 0);
        let (e, none) = open(Source::Eventfd).expect("eventfd");
        assert!(none.is_none());
        assert!(put(e.0) && put(e.0));
        assert_eq!(take(Source::Eventfd, e.0, 1), 2);
    }

    #[test]
    fn timerfd_fires_on_the_run_clock_and_counts() {
        let (t, _) = open(Source::Timerfd).expect("timerfd");
        let (sent, stop) = (
            Arc::new(AtomicU64::new(0)),
            Arc::new(AtomicBool::new(false)),
        );
        let first = sys::now() + Nanos::from_ms(1);
        let h = run_timerfd(
            "t",
            t.0,
            first,
            Nanos::from_ms(2),
            sent.clone(),
            stop.clone(),
        )
        .expect("armed");
        while sys::now() < first + Nanos::from_ms(9) {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        // Expirations at 1, 3, 5, 7, 9 ms after arming (and maybe 11 ms
        // if this thread was late): all of them in one read.
        let n = take(Source::Timerfd, t.0, 1);
        stop.store(true, Ordering::Relaxed);
        h.join().expect("joined");
        let s = sent.load(Ordering::Relaxed);
        assert!(n >= 5 && s >= n, "read {n}, counted {s}");
        let bad = run_timerfd("t", t.0, first, Nanos::ZERO, sent, stop);
        assert!(bad.is_err_and(|e| e.to_string().contains("positive period")));
    }
}
