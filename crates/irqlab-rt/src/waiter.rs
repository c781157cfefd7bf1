//! How the top half waits on the bound file descriptors: epoll (default)
//! or io_uring poll requests (`Backend::IoUring`).
//!
//! Both give the same contract, the "masked interrupt" of the top half: a
//! descriptor reports readiness once and is then disarmed until `arm` is
//! called again (epoll `EPOLLONESHOT`, or one `IORING_OP_POLL_ADD` per
//! arming). Upcall descriptors under epoll are level-triggered instead (the
//! handler runs in the top half itself, so there is nothing to re-arm after
//! each event) and are disarmed only while their budget is spent.
//!
//! Every watched fd has a **key** (a binding's slot index, or one of the
//! runtime's own keys) that readiness reports carry instead of the fd
//! number: a number can be closed and reused, a key is never reused.
//!
//! Design principles: `arm` may be called from any thread (bottom halves
//! re-arm their fd); only the top half calls `wait`. The io_uring
//! submission queue is shared under a lock; completions are reaped by the
//! top half alone.

use std::os::fd::RawFd;
use std::sync::Mutex;

use io_uring::{opcode, squeue, types, IoUring};

use crate::error::RtError;
use crate::io::Backend;
use crate::sys::Fd;

/// One readiness report: the fd's key and its poll flags (`EPOLLIN`,
/// `EPOLLERR`, `EPOLLHUP` have the values of `POLLIN`, `POLLERR`,
/// `POLLHUP`).
pub(crate) type Ready = (u64, u32);

/// The completion key of io_uring poll removals (ignored).
const CANCEL_KEY: u64 = u64::MAX;

pub(crate) enum Waiter {
    Epoll(Fd),
    Uring { ring: Box<IoUring>, sq: Mutex<()> },
}

const IN: u32 = libc::EPOLLIN as u32;
const ONESHOT: u32 = libc::EPOLLONESHOT as u32;
const ERR: u32 = (libc::EPOLLERR | libc::EPOLLHUP) as u32;

fn epoll_ctl(ep: RawFd, op: libc::c_int, fd: RawFd, key: u64, events: u32) -> Result<(), RtError> {
    let mut ev = libc::epoll_event { events, u64: key };
    // SAFETY: `ev` is valid for the call.
    if unsafe { libc::epoll_ctl(ep, op, fd, &mut ev) } != 0 {
        return Err(RtError::last_os(format!("epoll_ctl(op {op}, fd {fd})")));
    }
    Ok(())
}

impl Waiter {
    pub fn new(backend: Backend) -> Result<Waiter, RtError> {
        match backend {
            Backend::Epoll => {
                // SAFETY: creates a descriptor owned by `Fd`.
                let ep = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
                if ep < 0 {
                    return Err(RtError::last_os("epoll_create1"));
                }
                Ok(Waiter::Epoll(Fd(ep)))
            }
            Backend::IoUring => {
                let ring =
                    IoUring::new(256).map_err(|e| RtError::from_io("io_uring_setup(256)", e))?;
                Ok(Waiter::Uring {
                    ring: Box::new(ring),
                    sq: Mutex::new(()),
                })
            }
        }
    }

    /// Start watching `fd` under `key`: one-shot, or level-triggered
    /// (`level`, epoll only; io_uring is always one-shot).
    pub fn add(&self, fd: RawFd, key: u64, level: bool) -> Result<(), RtError> {
        match self {
            Waiter::Epoll(ep) => epoll_ctl(
                ep.0,
                libc::EPOLL_CTL_ADD,
                fd,
                key,
                if level { IN } else { IN | ONESHOT },
            ),
            Waiter::Uring { .. } => self.arm(fd, key),
        }
    }

    /// Report `fd` once more (after its handler ran).
    pub fn arm(&self, fd: RawFd, key: u64) -> Result<(), RtError> {
        match self {
            Waiter::Epoll(ep) => epoll_ctl(ep.0, libc::EPOLL_CTL_MOD, fd, key, IN | ONESHOT),
            Waiter::Uring { .. } => {
                let e = opcode::PollAdd::new(types::Fd(fd), libc::POLLIN as u32)
                    .build()
                    .user_data(key);
                self.submit(&e)
                    .map_err(|e| RtError::from_io(format!("io_uring poll on fd {fd}"), e))
            }
        }
    }

    /// Queue one io_uring request and submit it.
    fn submit(&self, e: &squeue::Entry) -> std::io::Result<()> {
        let Waiter::Uring { ring, sq } = self else {
            return Ok(());
        };
        {
            let _g = sq.lock().unwrap_or_else(|p| p.into_inner());
            // SAFETY: the submission queue is only touched under `sq`; the
            // entry owns no buffers.
            let mut q = unsafe { ring.submission_shared() };
            if q.is_full() {
                drop(q);
                ring.submit()?;
                // SAFETY: as above.
                q = unsafe { ring.submission_shared() };
            }
            // SAFETY: as above.
            unsafe { q.push(e) }.map_err(|_| std::io::Error::other("submission queue full"))?;
            q.sync();
        }
        ring.submit().map(|_| ())
    }

    /// Re-enable a level-triggered upcall fd after a deferral.
    pub fn arm_level(&self, fd: RawFd, key: u64) -> Result<(), RtError> {
        match self {
            Waiter::Epoll(ep) => epoll_ctl(ep.0, libc::EPOLL_CTL_MOD, fd, key, IN),
            Waiter::Uring { .. } => self.arm(fd, key),
        }
    }

    /// After a level-triggered fd's event was handled: nothing for epoll,
    /// a new poll request for io_uring.
    pub fn rearm_level(&self, fd: RawFd, key: u64) -> Result<(), RtError> {
        match self {
            Waiter::Epoll(_) => Ok(()),
            Waiter::Uring { .. } => self.arm(fd, key),
        }
    }

    /// Stop reporting a level-triggered fd (its upcall budget is spent).
    pub fn disarm(&self, fd: RawFd, key: u64) {
        if let Waiter::Epoll(ep) = self {
            let _ = epoll_ctl(ep.0, libc::EPOLL_CTL_MOD, fd, key, 0);
        }
    }

    /// Forget `fd` (key `key`): epoll deletes it; io_uring cancels its poll
    /// request if one is pending (a completion of it that was already
    /// queued is ignored by the top half: the key is retired).
    pub fn remove(&self, fd: RawFd, key: u64) {
        match self {
            Waiter::Epoll(ep) => {
                let _ = epoll_ctl(ep.0, libc::EPOLL_CTL_DEL, fd, key, 0);
            }
            Waiter::Uring { .. } => {
                let e = opcode::PollRemove::new(key).build().user_data(CANCEL_KEY);
                let _ = self.submit(&e);
            }
        }
    }

    /// Block until at least one fd is ready; append what is ready to `out`.
    /// Interrupted waits return with nothing.
    pub fn wait(&self, out: &mut Vec<Ready>) {
        match self {
            Waiter::Epoll(ep) => {
                let mut evs = [libc::epoll_event { events: 0, u64: 0 }; 64];
                // SAFETY: `evs` is a valid buffer of 64 events.
                let n = unsafe { libc::epoll_wait(ep.0, evs.as_mut_ptr(), 64, -1) };
                for ev in evs.iter().take(n.max(0) as usize) {
                    out.push((ev.u64, ev.events));
                }
            }
            Waiter::Uring { ring, .. } => {
                let _ = ring.submit_and_wait(1);
                // SAFETY: only the top half reaps completions.
                let mut cq = unsafe { ring.completion_shared() };
                cq.sync();
                for c in &mut cq {
                    if c.user_data() == CANCEL_KEY {
                        continue;
                    }
                    let r = c.result();
                    let flags = if r < 0 { ERR } else { r as u32 };
                    out.push((c.user_data(), flags));
                }
            }
        }
    }
}
