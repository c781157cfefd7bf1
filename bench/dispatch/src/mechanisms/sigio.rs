use super::{install_signal_handler, suspend_until_stop, Mechanism, SavedErrno};
use crate::server::{recv_ts, Handler, RxBuf};
use crate::sys::{self, check};
use std::io;
use std::sync::atomic::{AtomicI32, AtomicPtr, Ordering};

/// O_ASYNC + F_SETSIG: the kernel queues a real-time signal (SIGRTMIN+1,
/// carrying si_fd) to the server thread (F_SETOWN_EX, F_OWNER_TID) for every
/// datagram it queues on the socket; the *signal handler* reads one datagram
/// and echoes it, as in the paper's SIGIO server ("invoked upon arrival of
/// each message"). The thread waits in sigsuspend. Plain SIGIO, which the
/// kernel sends instead when the real-time signal queue is full, runs the
/// same handler and drains the socket.
///
/// One datagram per real-time signal, not a drain per signal: draining
/// leaves one stale queued signal per datagram taken early, and under load
/// tens of thousands of them pile up (SigQ) and cost a handler call each.
pub struct SigIo;

static H: AtomicPtr<Handler> = AtomicPtr::new(std::ptr::null_mut());
static RX: AtomicPtr<RxBuf> = AtomicPtr::new(std::ptr::null_mut());
static FD: AtomicI32 = AtomicI32::new(-1);

extern "C" fn on_signal(sig: libc::c_int, _info: *mut libc::siginfo_t, _ctx: *mut libc::c_void) {
    let t = sys::now_mono();
    let _errno = SavedErrno::save();
    let (h, rx, fd) = (
        H.load(Ordering::Relaxed),
        RX.load(Ordering::Relaxed),
        FD.load(Ordering::Relaxed),
    );
    if h.is_null() || rx.is_null() {
        return;
    }
    // Safety: the handler never nests (both signals are in sa_mask) and the
    // main thread touches neither while it waits in sigsuspend.
    let (h, rx) = unsafe { (&mut *h, &mut *rx) };
    let drain = sig == libc::SIGIO;
    let mut first = true;
    while !h.stop {
        match recv_ts(fd, rx, libc::MSG_DONTWAIT) {
            Ok((n, ts)) => {
                h.handle(t, first, &rx.data[..n], ts);
                first = false;
                if !drain {
                    break;
                }
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => break, // EAGAIN: drained, or a signal for a datagram a SIGIO drain took
        }
    }
}

impl Mechanism for SigIo {
    fn name(&self) -> &'static str {
        "sigio"
    }
    fn how(&self) -> &'static str {
        "O_ASYNC + F_SETSIG(SIGRTMIN+1) + F_SETOWN_EX(tid); signal handler reads one datagram per signal (non-blocking recvmsg) and echoes (SIGIO on queue overflow: drain); thread waits in sigsuspend; handler starts at its first line"
    }
    fn kernel_timestamps(&self) -> bool {
        true
    }
    fn serve(&self, fd: libc::c_int, h: &mut Handler, ready: &mut dyn FnMut()) -> io::Result<()> {
        let sig = libc::SIGRTMIN() + 1;
        let hp: *mut Handler = h;
        let rx = Box::into_raw(Box::new(RxBuf::new()));
        H.store(hp, Ordering::SeqCst);
        RX.store(rx, Ordering::SeqCst);
        FD.store(fd, Ordering::SeqCst);
        let wait_mask = install_signal_handler(&[sig, libc::SIGIO], on_signal)?;
        unsafe {
            let owner = sys::FOwnerEx {
                kind: sys::F_OWNER_TID,
                pid: libc::gettid(),
            };
            check(libc::fcntl(
                fd,
                sys::F_SETOWN_EX,
                &owner as *const sys::FOwnerEx,
            ))?;
            check(libc::fcntl(fd, sys::F_SETSIG, sig))?;
            let fl = check(libc::fcntl(fd, libc::F_GETFL))?;
            check(libc::fcntl(
                fd,
                libc::F_SETFL,
                fl | libc::O_ASYNC | libc::O_NONBLOCK,
            ))?;
        }
        ready();
        suspend_until_stop(hp, &wait_mask);
        unsafe {
            let fl = check(libc::fcntl(fd, libc::F_GETFL))?;
            check(libc::fcntl(fd, libc::F_SETFL, fl & !libc::O_ASYNC))?;
        }
        H.store(std::ptr::null_mut(), Ordering::SeqCst);
        Ok(())
    }
}
