use super::Mechanism;
use crate::server::{recv_ts, Handler, RxBuf};
use crate::sys;
use std::io;

/// Blocking recvmsg in a loop: the thread sleeps in the socket's wait queue
/// and the network softirq wakes it.
pub struct Blocking;

impl Mechanism for Blocking {
    fn name(&self) -> &'static str {
        "blocking"
    }
    fn how(&self) -> &'static str {
        "blocking recvmsg; handler starts when recvmsg returns"
    }
    fn kernel_timestamps(&self) -> bool {
        true
    }
    fn serve(&self, fd: libc::c_int, h: &mut Handler, ready: &mut dyn FnMut()) -> io::Result<()> {
        let mut rx = Box::new(RxBuf::new());
        ready();
        while !h.stop {
            match recv_ts(fd, &mut rx, 0) {
                Ok((n, ts)) => {
                    let t = sys::now_mono();
                    h.handle(t, true, &rx.data[..n], ts);
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }
}
