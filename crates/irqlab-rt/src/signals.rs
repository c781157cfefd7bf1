//! Stopping a run early: SIGINT (Ctrl-C), SIGTERM and SIGHUP (a closed
//! terminal) set `STOP`, which `irqlab run` polls; the run then stops its
//! threads and still reports.
//!
//! Design principles: the handler only stores an atomic (async-signal
//! safe); the previous handlers are restored when the run ends, so a
//! library user's own handlers survive a run.

use std::sync::atomic::{AtomicBool, Ordering};

pub(crate) static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_stop_signal(_: libc::c_int) {
    STOP.store(true, Ordering::SeqCst);
}

/// Restores the previous SIGINT/SIGTERM/SIGHUP handlers on drop.
pub(crate) struct SignalGuard(Vec<(libc::c_int, libc::sigaction)>);

impl SignalGuard {
    pub(crate) fn install() -> SignalGuard {
        STOP.store(false, Ordering::SeqCst);
        let mut old = Vec::new();
        for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
            // SAFETY: valid sigaction structs; the handler only stores an
            // atomic.
            unsafe {
                let mut sa: libc::sigaction = std::mem::zeroed();
                sa.sa_sigaction = on_stop_signal as extern "C" fn(libc::c_int) as usize;
                libc::sigemptyset(&mut sa.sa_mask);
                let mut prev: libc::sigaction = std::mem::zeroed();
                if libc::sigaction(sig, &sa, &mut prev) == 0 {
                    old.push((sig, prev));
                }
            }
        }
        SignalGuard(old)
    }
}

impl Drop for SignalGuard {
    fn drop(&mut self) {
        for (sig, prev) in &self.0 {
            // SAFETY: restoring a sigaction read earlier.
            unsafe {
                libc::sigaction(*sig, prev, std::ptr::null_mut());
            }
        }
    }
}
