//! Bound file descriptors, tracked by identity, not by number.
//!
//! What it is: `bind_fd` / `register_upcall` make a [`Slot`] per fd: the
//! number the program knows (given to the handler), a close-on-exec
//! duplicate -- the **anchor** -- that the top half watches (so epoll and
//! io_uring see the bound file whatever happens to the number), the
//! handler, and a key that names the slot in the waiter (never the fd
//! number). Before every handler call the fd number is checked to still
//! name the anchor's file (`kcmp(KCMP_FILE)`, or device/inode/access mode
//! where kcmp is missing): a program that closed a bound fd -- and maybe
//! opened something that reused the number -- gets it reported, the slot
//! unbound, and the old handler is never called again; the handler is then
//! leaked, not dropped, since dropping it would close the number, which now
//! belongs to someone else. A closure with no event after it is found at
//! the stop. `unbind` is the safe way out: after it returns the handler is
//! gone and will never run, and the fd may be closed or reused.
//!
//! Design principles: a slot's handler and anchor sit behind one lock,
//! held for a handler call and for every (re-)arming; unbinding takes the
//! same lock (with a deadline: a handler that never returns cannot hang
//! the caller), so an anchor is closed only when nobody can arm it.

use std::os::fd::RawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, TryLockError};
use std::time::Duration;

use irqlab_core::Nanos;

use crate::error::RtError;
use crate::io::{socket_drops, Handler};
use crate::sys::{self, Fd, FileId};
use crate::Shared;

/// Where a bound fd's events go.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Target {
    /// An I/O class; `inherit`: the period of the Main VCPU waiting on
    /// this fd, if it overrides the class's.
    Class {
        cpu: usize,
        index: usize,
        inherit: Option<Nanos>,
    },
    /// An upcall (index into the top half's upcalls).
    Upcall(usize),
}

pub(crate) struct SlotInner {
    pub handler: Option<Handler>,
    /// The duplicate the waiter watches; `None` once unbound.
    pub anchor: Option<Fd>,
}

/// One bound fd.
pub(crate) struct Slot {
    /// The program's number for the fd.
    pub fd: RawFd,
    pub target: Target,
    /// The device's top-half cost, spun by the top half per ready report.
    pub top_half: Nanos,
    /// Identity for the fallback comparison (no kcmp).
    id: Option<FileId>,
    retired: AtomicBool,
    inner: Mutex<SlotInner>,
    notes: Mutex<Notes>,
}

/// What the report says of a slot.
#[derive(Default, Clone)]
pub(crate) struct Notes {
    /// Kernel drops on the bound socket (read when it is unbound).
    pub drops: u64,
    /// Why it was unbound other than by `unbind` (hang-up, error, closure).
    pub closed: Vec<String>,
}

/// Why a slot's fd can no longer be used.
pub(crate) enum Gone {
    /// Unbound (by `unbind`, a hang-up, an error, or a detected closure).
    Unbound,
    /// The number no longer names the bound file.
    Closed,
}

impl Slot {
    pub fn new(
        fd: RawFd,
        target: Target,
        top_half: Nanos,
        handler: Handler,
    ) -> Result<Slot, RtError> {
        let anchor = sys::dup(fd)?;
        Ok(Slot {
            fd,
            target,
            top_half,
            id: sys::file_id(fd),
            retired: AtomicBool::new(false),
            inner: Mutex::new(SlotInner {
                handler: Some(handler),
                anchor: Some(anchor),
            }),
            notes: Mutex::new(Notes::default()),
        })
    }

    pub fn is_retired(&self) -> bool {
        self.retired.load(Ordering::SeqCst)
    }

    pub fn notes(&self) -> Notes {
        self.notes.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Record why the fd was unbound.
    pub fn closed(&self, why: String) {
        self.notes
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .closed
            .push(why);
    }

    pub fn lock(&self) -> MutexGuard<'_, SlotInner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// With the lock held: the anchor's number if the fd is still bound
    /// and its number still names the bound file.
    pub fn check(&self, g: &SlotInner) -> Result<RawFd, Gone> {
        let Some(a) = g.anchor.as_ref().map(|a| a.0) else {
            return Err(Gone::Unbound);
        };
        if sys::same_file(self.fd, a, self.id) {
            Ok(a)
        } else {
            Err(Gone::Closed)
        }
    }

    /// With the lock held: unbind. `drop_handler`: drop it (the fd is
    /// still the program's); otherwise leak it (its number was reused).
    /// The anchor's kernel drop count (UDP sockets) goes to the notes.
    pub fn retire(&self, shared: &Shared, key: u64, g: &mut SlotInner, drop_handler: bool) {
        self.retired.store(true, Ordering::SeqCst);
        if let Some(a) = g.anchor.take() {
            shared.io.waiter.remove(a.0, key);
            let drops = socket_drops(a.0).unwrap_or(0);
            self.notes.lock().unwrap_or_else(|e| e.into_inner()).drops += drops;
        }
        match g.handler.take() {
            Some(h) if !drop_handler => std::mem::forget(h),
            h => drop(h),
        }
    }

    /// The message for a closure found `when`.
    pub fn closed_message(&self, when: &str) -> String {
        format!(
            "fd {} was closed while bound (found {when}; the number is {}): unbound, its \
             handler never called again and leaked, not dropped (it would close the number)",
            self.fd,
            // SAFETY: F_GETFD only queries the descriptor.
            if unsafe { libc::fcntl(self.fd, libc::F_GETFD) } < 0 {
                "not open"
            } else {
                "now another file"
            }
        )
    }
}

/// Every slot of a runtime, in key order (a key is an index).
pub(crate) type Slots = Vec<Arc<Slot>>;

/// Lock `slot` within `bound` (a handler that never returns must not hang
/// the caller).
fn lock_within(slot: &Slot, bound: Nanos) -> Option<MutexGuard<'_, SlotInner>> {
    let deadline = sys::now() + bound;
    loop {
        match slot.inner.try_lock() {
            Ok(g) => return Some(g),
            Err(TryLockError::Poisoned(p)) => return Some(p.into_inner()),
            Err(TryLockError::WouldBlock) if sys::now() < deadline => {
                std::thread::sleep(Duration::from_micros(200))
            }
            Err(TryLockError::WouldBlock) => return None,
        }
    }
}

/// Unbind `fd`: no event of it reaches its handler from now on; returns
/// once the handler is not running, and has been dropped with what it
/// owns (waiting at most `Config::stop_timeout` for a running handler).
pub(crate) fn unbind(shared: &Shared, fd: RawFd) -> Result<(), RtError> {
    let found = {
        let slots = shared.io.slots.lock().unwrap_or_else(|e| e.into_inner());
        slots
            .iter()
            .enumerate()
            .find(|(_, s)| s.fd == fd && !s.is_retired())
            .map(|(k, s)| (k as u64, s.clone()))
    };
    let Some((key, slot)) = found else {
        return Err(RtError::config("fd", fd, "not bound to this runtime"));
    };
    // Stop queuing its events now, whatever the handler is doing.
    slot.retired.store(true, Ordering::SeqCst);
    let bound = shared.cfg.stop_timeout;
    let Some(mut g) = lock_within(&slot, bound) else {
        return Err(RtError::State(format!(
            "unbind fd {fd}: its handler is still running after {} ms; it will not be called \
             again, but it still owns what it owns (do not close the fd yet)",
            bound.0 / 1_000_000
        )));
    };
    let still_ours = slot.check(&g).is_ok();
    if !still_ours {
        slot.closed(slot.closed_message("at unbind"));
    }
    slot.retire(shared, key, &mut g, still_ours);
    Ok(())
}

/// At the stop (every thread stopped or given up on): unbind what is still
/// bound, reading its kernel drops from the anchor and finding fds closed
/// behind the runtime's back. A slot whose handler is still running (a
/// thread that did not return) is left alone.
pub(crate) fn finish(shared: &Shared) {
    for (k, slot) in shared.io.slot_list().iter().enumerate() {
        let Ok(mut g) = slot.inner.try_lock() else {
            continue;
        };
        if g.anchor.is_none() {
            continue;
        }
        let ours = slot.check(&g).is_ok();
        if !ours {
            slot.closed(slot.closed_message("at the stop"));
        }
        slot.retire(shared, k as u64, &mut g, ours);
    }
}
