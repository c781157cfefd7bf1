use super::Mechanism;
use crate::server::{recv_ts, Handler, RxBuf};
use crate::sys::{self, check};
use std::io;

/// epoll_wait on the (non-blocking) socket, then drain it with recvmsg.
pub struct Epoll;

impl Mechanism for Epoll {
    fn name(&self) -> &'static str {
        "epoll"
    }
    fn how(&self) -> &'static str {
        "epoll_wait (level-triggered EPOLLIN) then non-blocking recvmsg until EAGAIN; handler starts when epoll_wait returns"
    }
    fn kernel_timestamps(&self) -> bool {
        true
    }
    fn serve(&self, fd: libc::c_int, h: &mut Handler, ready: &mut dyn FnMut()) -> io::Result<()> {
        sys::set_nonblocking(fd, true)?;
        let ep = check(unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) })?;
        let mut ev = libc::epoll_event {
            events: libc::EPOLLIN as u32,
            u64: fd as u64,
        };
        check(unsafe { libc::epoll_ctl(ep, libc::EPOLL_CTL_ADD, fd, &mut ev) })?;
        let mut rx = Box::new(RxBuf::new());
        ready();
        let result = loop {
            if h.stop {
                break Ok(());
            }
            let mut out = libc::epoll_event { events: 0, u64: 0 };
            let n = unsafe { libc::epoll_wait(ep, &mut out, 1, -1) };
            let t = sys::now_mono();
            if n < 0 {
                let e = sys::last_err();
                if e.kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                break Err(e);
            }
            let mut first = true;
            while !h.stop {
                match recv_ts(fd, &mut rx, libc::MSG_DONTWAIT) {
                    Ok((n, ts)) => {
                        h.handle(t, first, &rx.data[..n], ts);
                        first = false;
                    }
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                    Err(e) => return Err(e),
                }
            }
        };
        sys::close(ep);
        result
    }
}
