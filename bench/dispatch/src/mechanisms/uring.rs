use super::Mechanism;
use crate::server::{timestamp_of, Handler, RxBuf};
use crate::sys;
use io_uring::{opcode, types};
use std::io;

/// io_uring: one IORING_OP_RECVMSG in flight; submit it and wait for its
/// completion in one io_uring_enter, handle, resubmit.
pub struct IoUring;

impl Mechanism for IoUring {
    fn name(&self) -> &'static str {
        "io_uring"
    }
    fn how(&self) -> &'static str {
        "io_uring IORING_OP_RECVMSG (one in flight), submit_and_wait(1); handler starts when the completion is reaped"
    }
    fn kernel_timestamps(&self) -> bool {
        true
    }
    fn serve(&self, fd: libc::c_int, h: &mut Handler, ready: &mut dyn FnMut()) -> io::Result<()> {
        let mut ring = io_uring::IoUring::new(8)?;
        let mut rx = Box::new(RxBuf::new());
        let mut iov = libc::iovec {
            iov_base: std::ptr::null_mut(),
            iov_len: 0,
        };
        ready();
        while !h.stop {
            // The msghdr lives on this frame until its completion is reaped.
            let mut m = rx.msghdr(&mut iov);
            let sqe = opcode::RecvMsg::new(types::Fd(fd), &mut m)
                .build()
                .user_data(1);
            unsafe {
                ring.submission()
                    .push(&sqe)
                    .map_err(|_| io::Error::other("submission queue full"))?;
            }
            let res = loop {
                match ring.submit_and_wait(1) {
                    Ok(_) => {}
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    Err(e) => return Err(e),
                }
                if let Some(cqe) = ring.completion().next() {
                    break cqe.result();
                }
            };
            let t = sys::now_mono();
            if res == -libc::EINTR || res == -libc::EAGAIN {
                continue;
            }
            if res < 0 {
                return Err(io::Error::from_raw_os_error(-res));
            }
            let ts = timestamp_of(&m);
            h.handle(t, true, &rx.data[..res as usize], ts);
        }
        Ok(())
    }
}
