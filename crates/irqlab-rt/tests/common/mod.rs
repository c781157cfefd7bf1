//! Shared helpers of the runtime tests: one runtime at a time (they compete
//! for the same CPU), and a skip with the kernel's reason when SCHED_FIFO
//! is not permitted.

#![allow(dead_code)] // each test binary uses a subset of the helpers
use std::sync::{Mutex, MutexGuard};

use irqlab_rt::{Config, Runtime};

static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

pub fn serial() -> MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner())
}

/// A runtime that requires SCHED_FIFO, or `None` (test skipped, reason
/// printed) when the kernel does not permit it.
pub fn fifo_runtime() -> Option<Runtime> {
    let cfg = Config {
        require_fifo: true,
        ..Config::default()
    };
    match Runtime::new(cfg) {
        Ok(rt) => Some(rt),
        Err(e) if e.is_unavailable() => {
            eprintln!("SKIPPED: {e}");
            None
        }
        Err(e) => panic!("runtime: {e}"),
    }
}

/// Busy-wait `d` of CPU time on the calling thread.
pub fn spin_cpu(d: irqlab_core::Nanos) {
    let end = irqlab_rt::sys::own_cpu_time() + d;
    while irqlab_rt::sys::own_cpu_time() < end {
        std::hint::spin_loop();
    }
}
