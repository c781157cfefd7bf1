use super::{install_signal_handler, suspend_until_stop, Mechanism, SavedErrno};
use crate::server::{Handler, RxBuf, MAX_DGRAM};
use crate::sys::{self, check};
use std::io;
use std::sync::atomic::{AtomicPtr, Ordering};

/// glibc POSIX AIO, as in the paper's GLIBC AIO server: one aio_read
/// outstanding with SIGEV_SIGNAL (SIGRTMIN+2); the signal handler takes the
/// result (aio_error/aio_return), echoes and submits the next aio_read. glibc
/// serves the request on a helper thread (blocking read(2) on the socket,
/// pread gives ESPIPE) that then queues the signal to the process; the helper
/// blocks all signals, so it lands on the server thread waiting in
/// sigsuspend. read(2) has no control messages, so dispatch latency is
/// measured from the client's send timestamp.
pub struct Aio;

static H: AtomicPtr<Handler> = AtomicPtr::new(std::ptr::null_mut());
static RX: AtomicPtr<RxBuf> = AtomicPtr::new(std::ptr::null_mut());
static CB: AtomicPtr<libc::aiocb> = AtomicPtr::new(std::ptr::null_mut());

/// glibc's `struct aioinit` (not in the libc crate).
#[repr(C)]
struct AioInit {
    aio_threads: libc::c_int,
    aio_num: libc::c_int,
    aio_locks: libc::c_int,
    aio_usedba: libc::c_int,
    aio_debug: libc::c_int,
    aio_numusers: libc::c_int,
    aio_idle_time: libc::c_int,
    aio_reserved: libc::c_int,
}

extern "C" {
    fn aio_init(init: *const AioInit);
}

extern "C" fn on_signal(_sig: libc::c_int, _info: *mut libc::siginfo_t, _ctx: *mut libc::c_void) {
    let t = sys::now_mono();
    let _errno = SavedErrno::save();
    let (h, rx, cb) = (
        H.load(Ordering::Relaxed),
        RX.load(Ordering::Relaxed),
        CB.load(Ordering::Relaxed),
    );
    if h.is_null() || cb.is_null() {
        return;
    }
    // Safety: the handler never nests; the main thread waits in sigsuspend
    // (holds no glibc AIO lock, so calling aio_read here cannot deadlock).
    let (h, rx) = unsafe { (&mut *h, &mut *rx) };
    unsafe {
        if libc::aio_error(cb) == libc::EINPROGRESS {
            return;
        }
        let n = libc::aio_return(cb);
        if n >= 0 {
            h.handle(t, true, &rx.data[..n as usize], None);
        }
        if !h.stop {
            libc::aio_read(cb);
        }
    }
}

impl Mechanism for Aio {
    fn name(&self) -> &'static str {
        "aio"
    }
    fn how(&self) -> &'static str {
        "glibc POSIX AIO: one aio_read outstanding, SIGEV_SIGNAL(SIGRTMIN+2) to a signal handler that aio_returns, echoes and resubmits; helper thread does read(2); handler starts at its first line"
    }
    fn kernel_timestamps(&self) -> bool {
        false
    }
    fn serve(&self, fd: libc::c_int, h: &mut Handler, ready: &mut dyn FnMut()) -> io::Result<()> {
        let sig = libc::SIGRTMIN() + 2;
        // One helper thread that stays alive between requests (the default
        // idle time of 1 s would put thread creation into some dispatches).
        let init = AioInit {
            aio_threads: 1,
            aio_num: 4,
            aio_locks: 0,
            aio_usedba: 0,
            aio_debug: 0,
            aio_numusers: 0,
            aio_idle_time: 3600,
            aio_reserved: 0,
        };
        unsafe { aio_init(&init) };
        let hp: *mut Handler = h;
        let rx = Box::into_raw(Box::new(RxBuf::new()));
        let cb: *mut libc::aiocb =
            Box::into_raw(Box::new(unsafe { std::mem::zeroed::<libc::aiocb>() }));
        unsafe {
            (*cb).aio_fildes = fd;
            (*cb).aio_buf = (*rx).data.as_mut_ptr() as *mut libc::c_void;
            (*cb).aio_nbytes = MAX_DGRAM;
            (*cb).aio_offset = 0;
            (*cb).aio_sigevent.sigev_notify = libc::SIGEV_SIGNAL;
            (*cb).aio_sigevent.sigev_signo = sig;
            (*cb).aio_sigevent.sigev_value = libc::sigval {
                sival_ptr: cb as *mut libc::c_void,
            };
        }
        H.store(hp, Ordering::SeqCst);
        RX.store(rx, Ordering::SeqCst);
        CB.store(cb, Ordering::SeqCst);
        let wait_mask = install_signal_handler(&[sig], on_signal)?;
        // Signal blocked here, so the first completion waits for sigsuspend.
        check(unsafe { libc::aio_read(cb) })?;
        ready();
        suspend_until_stop(hp, &wait_mask);
        H.store(std::ptr::null_mut(), Ordering::SeqCst);
        Ok(())
    }
}
