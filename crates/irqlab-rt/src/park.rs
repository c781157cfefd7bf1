//! Throttling a thread whose server has no budget: the "park" signal.
//!
//! What it is: the supervisor cannot stop a CPU-bound thread by priority
//! alone (a background SCHED_FIFO thread still runs on an otherwise idle
//! CPU). It sets the thread's `want_park` word and sends it a real-time
//! signal; the handler, running on that thread, waits on the futex until
//! the supervisor clears the word at the replenishment. System calls the
//! thread was blocked in restart (`SA_RESTART`).
//!
//! Design principles: the handler only loads an atomic and calls futex
//! (async-signal-safe); the thread finds its cell through a thread-local
//! pointer set when it joins the runtime. Cooperative code (bottom halves)
//! checks the same word between handlers and parks without a signal.

use std::cell::Cell;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Once;

use crate::error::RtError;
use crate::sys::{self, Tid};

/// Per-thread throttle word shared by the thread and its supervisor.
#[derive(Debug, Default)]
pub struct ParkCell {
    want_park: AtomicU32,
    /// How often the thread actually stopped in the handler.
    pub parks: AtomicU64,
}

impl ParkCell {
    pub fn is_wanted(&self) -> bool {
        self.want_park.load(Ordering::SeqCst) != 0
    }

    /// Ask `tid` to park: set the word and signal it (once per request).
    pub fn park(&self, tid: Tid) -> Result<(), RtError> {
        if self.want_park.swap(1, Ordering::SeqCst) == 0 {
            sys::tgkill(tid, park_signal())?;
        }
        Ok(())
    }

    /// Let the thread go on.
    pub fn unpark(&self) {
        if self.want_park.swap(0, Ordering::SeqCst) != 0 {
            sys::futex_wake(&self.want_park);
        }
    }

    /// Park here while wanted (the cooperative path and the handler).
    pub fn wait_while_wanted(&self) {
        let mut counted = false;
        while self.want_park.load(Ordering::SeqCst) != 0 {
            if !counted {
                self.parks.fetch_add(1, Ordering::Relaxed);
                counted = true;
            }
            sys::futex_wait(&self.want_park, 1, None);
        }
    }
}

thread_local! {
    static CELL: Cell<*const ParkCell> = const { Cell::new(std::ptr::null()) };
    /// Inside a runtime critical section (holding a CPU lock): the handler
    /// must not park now, or the supervisor would wait on the lock forever.
    static CRITICAL: Cell<bool> = const { Cell::new(false) };
    /// A park request arrived inside a critical section.
    static PENDING: Cell<bool> = const { Cell::new(false) };
}

/// Run `f` (which takes a runtime lock) with parking deferred to its end.
pub fn critical<R>(f: impl FnOnce() -> R) -> R {
    let _c = Critical::enter();
    f()
}

/// A critical section as a guard: while it lives, a park request on this
/// thread is deferred; the thread parks when the outermost guard drops.
/// Hold one while holding a lock that a thread of higher priority takes
/// (the top half, the supervisor): parked with the lock held, the thread
/// would make that thread wait for its replenishment.
#[must_use = "parking is deferred only while the guard lives"]
pub struct Critical {
    outer: bool,
    /// Thread-local state: the guard must drop on the thread that made it.
    _not_send: std::marker::PhantomData<*const ()>,
}

impl Critical {
    pub fn enter() -> Critical {
        Critical {
            outer: !CRITICAL.with(|c| c.replace(true)),
            _not_send: std::marker::PhantomData,
        }
    }
}

impl Drop for Critical {
    fn drop(&mut self) {
        if !self.outer {
            return;
        }
        CRITICAL.with(|c| c.set(false));
        if PENDING.with(|p| p.replace(false)) {
            let p = CELL.with(|c| c.get());
            if !p.is_null() {
                // SAFETY: see `on_park`.
                unsafe { (*p).wait_while_wanted() };
            }
        }
    }
}

/// The signal used to park threads (SIGRTMIN + 3, clear of glibc's own).
pub fn park_signal() -> libc::c_int {
    libc::SIGRTMIN() + 3
}

extern "C" fn on_park(_sig: libc::c_int) {
    let saved = std::io::Error::last_os_error().raw_os_error();
    if CRITICAL.with(|c| c.get()) {
        PENDING.with(|p| p.set(true));
        return;
    }
    let p = CELL.with(|c| c.get());
    if !p.is_null() {
        // SAFETY: the pointer was set by `attach` from an `Arc<ParkCell>`
        // that the runtime keeps alive until after `detach`.
        unsafe { (*p).wait_while_wanted() };
    }
    if let Some(e) = saved {
        // SAFETY: restore errno for the interrupted code.
        unsafe { *libc::__errno_location() = e };
    }
}

static INSTALL: Once = Once::new();

/// Install the park handler (process-wide, once).
pub fn install() {
    INSTALL.call_once(|| {
        // SAFETY: a sigaction with a valid handler and an empty mask.
        unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = on_park as extern "C" fn(libc::c_int) as usize;
            sa.sa_flags = libc::SA_RESTART;
            libc::sigemptyset(&mut sa.sa_mask);
            libc::sigaction(park_signal(), &sa, std::ptr::null_mut());
        }
    });
}

/// Make `cell` the calling thread's park cell. The caller keeps `cell`
/// alive until `detach`.
pub fn attach(cell: &ParkCell) {
    install();
    CELL.with(|c| c.set(cell as *const ParkCell));
}

/// Forget the calling thread's park cell.
pub fn detach() {
    CELL.with(|c| c.set(std::ptr::null()));
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicBool;
    use std::sync::{Arc, Barrier, Mutex};
    use std::time::{Duration, Instant};

    fn wait_until(what: &str, cond: impl Fn() -> bool) {
        let end = Instant::now() + Duration::from_secs(10);
        while !cond() {
            assert!(Instant::now() < end, "timed out waiting for {what}");
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    /// A park request that arrives while a `Critical` guard lives does not
    /// stop the thread, so a lock it holds stays free for others; the
    /// thread parks when the guard drops, and goes on at the unpark.
    #[test]
    fn a_park_inside_a_critical_guard_waits_for_its_drop() {
        let cell = Arc::new(ParkCell::default());
        let lock = Arc::new(Mutex::new(0u64));
        let (tid, entered) = (Arc::new(AtomicU64::new(0)), Arc::new(Barrier::new(2)));
        let (release, done) = (
            Arc::new(AtomicBool::new(false)),
            Arc::new(AtomicBool::new(false)),
        );
        let t = {
            let (cell, lock, tid, entered) =
                (cell.clone(), lock.clone(), tid.clone(), entered.clone());
            let (release, done) = (release.clone(), done.clone());
            std::thread::spawn(move || {
                attach(&cell);
                tid.store(sys::gettid() as u64, Ordering::SeqCst);
                {
                    let _c = Critical::enter();
                    let mut g = lock.lock().expect("lock");
                    entered.wait();
                    // The park request arrives here; keep working.
                    while !release.load(Ordering::SeqCst) {
                        *g += 1;
                        std::hint::spin_loop();
                    }
                }
                // Parked at the guard's drop until `unpark`.
                done.store(true, Ordering::SeqCst);
                detach();
            })
        };
        entered.wait();
        cell.park(tid.load(Ordering::SeqCst) as Tid)
            .expect("signal");
        // The request is taken by the handler and deferred, not parked.
        std::thread::sleep(Duration::from_millis(20));
        assert_eq!(
            cell.parks.load(Ordering::SeqCst),
            0,
            "parked inside the guard"
        );
        release.store(true, Ordering::SeqCst);
        // Dropping the guard parks it (the lock is free meanwhile).
        wait_until("the park at the guard's drop", || {
            cell.parks.load(Ordering::SeqCst) == 1
        });
        let progressed = *lock.lock().expect("lock is free while parked");
        assert!(progressed > 0);
        std::thread::sleep(Duration::from_millis(20));
        assert!(!done.load(Ordering::SeqCst), "went on while parked");
        cell.unpark();
        wait_until("the unpark", || done.load(Ordering::SeqCst));
        t.join().expect("thread");
    }
}
