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
//! Design principles: `arm` may be called from any thread (bottom halves
//! re-arm their fd); only the top half calls `wait`. The io_uring
//! submission queue is shared under a lock; completions are reaped by the
//! top half alone.

use std::os::fd::RawFd;
use std::sync::Mutex;

use io_uring::{opcode, types, IoUring};

use crate::error::RtError;
use crate::io::Backend;
use crate::sys::Fd;

/// One readiness report: the fd and its poll flags (`EPOLLIN`, `EPOLLERR`,
/// `EPOLLHUP` have the values of `POLLIN`, `POLLERR`, `POLLHUP`).
pub(crate) type Ready = (RawFd, u32);

pub(crate) enum Waiter {
    Epoll(Fd),
    Uring { ring: Box<IoUring>, sq: Mutex<()> },
}

const IN: u32 = libc::EPOLLIN as u32;
const ONESHOT: u32 = libc::EPOLLONESHOT as u32;
const ERR: u32 = (libc::EPOLLERR | libc::EPOLLHUP) as u32;

fn epoll_ctl(ep: RawFd, op: libc::c_int, fd: RawFd, events: u32) -> Result<(), RtError> {
    let mut ev = libc::epoll_event {
        events,
        u64: fd as u64,
    };
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

    /// Start watching `fd`: one-shot, or level-triggered (`level`, epoll
    /// only; io_uring is always one-shot).
    pub fn add(&self, fd: RawFd, level: bool) -> Result<(), RtError> {
        match self {
            Waiter::Epoll(ep) => epoll_ctl(
                ep.0,
                libc::EPOLL_CTL_ADD,
                fd,
                if level { IN } else { IN | ONESHOT },
            ),
            Waiter::Uring { .. } => self.arm(fd),
        }
    }

    /// Report `fd` once more (after its handler ran).
    pub fn arm(&self, fd: RawFd) -> Result<(), RtError> {
        match self {
            Waiter::Epoll(ep) => epoll_ctl(ep.0, libc::EPOLL_CTL_MOD, fd, IN | ONESHOT),
            Waiter::Uring { ring, sq } => {
                let e = opcode::PollAdd::new(types::Fd(fd), libc::POLLIN as u32)
                    .build()
                    .user_data(fd as u64);
                {
                    let _g = sq.lock().unwrap_or_else(|p| p.into_inner());
                    // SAFETY: the submission queue is only touched under
                    // `sq`; the entry owns no buffers.
                    let mut q = unsafe { ring.submission_shared() };
                    if q.is_full() {
                        drop(q);
                        ring.submit()
                            .map_err(|e| RtError::from_io("io_uring_enter", e))?;
                        q = unsafe { ring.submission_shared() };
                    }
                    unsafe { q.push(&e) }
                        .map_err(|_| RtError::State("io_uring submission queue full".into()))?;
                    q.sync();
                }
                ring.submit()
                    .map(|_| ())
                    .map_err(|e| RtError::from_io(format!("io_uring poll on fd {fd}"), e))
            }
        }
    }

    /// Re-enable a level-triggered upcall fd after a deferral.
    pub fn arm_level(&self, fd: RawFd) -> Result<(), RtError> {
        match self {
            Waiter::Epoll(ep) => epoll_ctl(ep.0, libc::EPOLL_CTL_MOD, fd, IN),
            Waiter::Uring { .. } => self.arm(fd),
        }
    }

    /// After a level-triggered fd's event was handled: nothing for epoll,
    /// a new poll request for io_uring.
    pub fn rearm_level(&self, fd: RawFd) -> Result<(), RtError> {
        match self {
            Waiter::Epoll(_) => Ok(()),
            Waiter::Uring { .. } => self.arm(fd),
        }
    }

    /// Stop reporting a level-triggered fd (its upcall budget is spent).
    pub fn disarm(&self, fd: RawFd) {
        if let Waiter::Epoll(ep) = self {
            let _ = epoll_ctl(ep.0, libc::EPOLL_CTL_MOD, fd, 0);
        }
    }

    /// Forget `fd` (after an error or hang-up it is no longer armed under
    /// io_uring).
    pub fn remove(&self, fd: RawFd) {
        if let Waiter::Epoll(ep) = self {
            let _ = epoll_ctl(ep.0, libc::EPOLL_CTL_DEL, fd, 0);
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
                    out.push((ev.u64 as RawFd, ev.events));
                }
            }
            Waiter::Uring { ring, .. } => {
                let _ = ring.submit_and_wait(1);
                // SAFETY: only the top half reaps completions.
                let mut cq = unsafe { ring.completion_shared() };
                cq.sync();
                for c in &mut cq {
                    let r = c.result();
                    let flags = if r < 0 { ERR } else { r as u32 };
                    out.push((c.user_data() as RawFd, flags));
                }
            }
        }
    }
}
