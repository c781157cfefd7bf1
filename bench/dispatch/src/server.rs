//! The echo server's side that every mechanism shares: the datagram format,
//! `recvmsg` with the kernel receive timestamp, and [`Handler`], the event
//! handler a mechanism calls for each datagram it delivers.
//!
//! Dispatch latency = (moment the handler starts) - (datagram's kernel receive
//! timestamp, SO_TIMESTAMPNS), or - (client's send timestamp in the payload)
//! where the mechanism cannot use recvmsg (glibc AIO reads with read(2)).
//! "Handler starts" is the first user-level instruction after the mechanism
//! hands control back: recvmsg returning (blocking), epoll_wait returning
//! (epoll), the completion being reaped (io_uring), the signal handler's first
//! line (sigio, aio). A datagram found by a drain loop after the first one of
//! the same wake-up, or one whose kernel timestamp is later than the wake-up
//! (it arrived while the handler ran), starts when its recvmsg returns.

use crate::sys;
use std::io;

/// Datagram header (little-endian u64s), the rest of the datagram is padding.
pub const KIND_STREAM: u64 = 1;
pub const KIND_LATENCY: u64 = 2;
pub const KIND_STOP: u64 = 3;
pub const HDR: usize = 24; // kind, seq, t_send (CLOCK_MONOTONIC ns)
pub const MAX_DGRAM: usize = 2048;
pub const CMSG_SPACE: usize = 64;

pub fn put_header(buf: &mut [u8], kind: u64, seq: u64, t_send: i64) {
    buf[0..8].copy_from_slice(&kind.to_le_bytes());
    buf[8..16].copy_from_slice(&seq.to_le_bytes());
    buf[16..24].copy_from_slice(&t_send.to_le_bytes());
}

pub fn get_header(buf: &[u8]) -> (u64, u64, i64) {
    let u = |i: usize| u64::from_le_bytes(buf[i..i + 8].try_into().unwrap());
    (u(0), u(8), u(16) as i64)
}

/// Receive buffers for [`recv_ts`] (owned by the mechanism, or static for
/// signal handlers).
pub struct RxBuf {
    pub data: [u8; MAX_DGRAM],
    pub cmsg: [u64; CMSG_SPACE / 8], // u64 for cmsghdr alignment
}

impl RxBuf {
    pub const fn new() -> Self {
        RxBuf {
            data: [0; MAX_DGRAM],
            cmsg: [0; CMSG_SPACE / 8],
        }
    }

    /// A msghdr pointing at this buffer (iov is written into `iov`).
    pub fn msghdr(&mut self, iov: &mut libc::iovec) -> libc::msghdr {
        iov.iov_base = self.data.as_mut_ptr() as *mut libc::c_void;
        iov.iov_len = MAX_DGRAM;
        let mut m: libc::msghdr = unsafe { std::mem::zeroed() };
        m.msg_iov = iov;
        m.msg_iovlen = 1;
        m.msg_control = self.cmsg.as_mut_ptr() as *mut libc::c_void;
        m.msg_controllen = CMSG_SPACE as _;
        m
    }
}

/// The SCM_TIMESTAMPNS control message of a received msghdr, in ns of
/// CLOCK_REALTIME.
pub fn timestamp_of(m: &libc::msghdr) -> Option<i64> {
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(m);
        while !c.is_null() {
            if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == sys::SCM_TIMESTAMPNS {
                let ts = std::ptr::read_unaligned(libc::CMSG_DATA(c) as *const libc::timespec);
                return Some(ts.tv_sec * 1_000_000_000 + ts.tv_nsec);
            }
            c = libc::CMSG_NXTHDR(m, c);
        }
    }
    None
}

/// recvmsg with the kernel receive timestamp; async-signal-safe.
pub fn recv_ts(
    fd: libc::c_int,
    rx: &mut RxBuf,
    flags: libc::c_int,
) -> io::Result<(usize, Option<i64>)> {
    let mut iov = libc::iovec {
        iov_base: std::ptr::null_mut(),
        iov_len: 0,
    };
    let mut m = rx.msghdr(&mut iov);
    let n = unsafe { libc::recvmsg(fd, &mut m, flags) };
    if n < 0 {
        return Err(sys::last_err());
    }
    Ok((n as usize, timestamp_of(&m)))
}

/// The event handler: echoes the datagram to the client (the server socket
/// is connected to it) and records the dispatch latency of latency-phase
/// datagrams. Never allocates (it runs inside signal handlers): sample
/// vectors are pre-sized, samples beyond the capacity are dropped.
pub struct Handler {
    pub fd: libc::c_int,
    real_minus_mono: i64,
    /// Handler start - kernel receive timestamp (ns), latency phase.
    pub kernel_lat: Vec<i64>,
    /// Handler start - client send timestamp (ns), latency phase.
    pub send_lat: Vec<i64>,
    pub stream_datagrams: u64,
    pub stream_wakeups: u64,
    pub send_errors: u64,
    pub stop: bool,
}

impl Handler {
    pub fn new(fd: libc::c_int, capacity: usize) -> Self {
        Handler {
            fd,
            real_minus_mono: sys::real_minus_mono(),
            kernel_lat: Vec::with_capacity(capacity),
            send_lat: Vec::with_capacity(capacity),
            stream_datagrams: 0,
            stream_wakeups: 0,
            send_errors: 0,
            stop: false,
        }
    }

    /// One datagram, just received: `t_wake` is when the mechanism handed
    /// control back for this wake-up (CLOCK_MONOTONIC ns), `first` whether
    /// this is the first datagram of the wake-up, `kernel_rx` its
    /// SO_TIMESTAMPNS (CLOCK_REALTIME ns).
    #[inline]
    pub fn handle(&mut self, t_wake: i64, first: bool, data: &[u8], kernel_rx: Option<i64>) {
        if data.len() < HDR {
            return;
        }
        let late = kernel_rx.is_some_and(|k| k - self.real_minus_mono > t_wake);
        let t_start = if first && !late {
            t_wake
        } else {
            sys::now_mono()
        };
        let (kind, _seq, t_send) = get_header(data);
        if kind == KIND_STOP {
            self.stop = true;
            return;
        }
        let n = unsafe { libc::send(self.fd, data.as_ptr() as *const libc::c_void, data.len(), 0) };
        if n < 0 {
            self.send_errors += 1;
        }
        match kind {
            KIND_STREAM => {
                self.stream_datagrams += 1;
                self.stream_wakeups += first as u64;
            }
            KIND_LATENCY => {
                if self.send_lat.len() < self.send_lat.capacity() {
                    self.send_lat.push(t_start - t_send);
                }
                if let Some(k) = kernel_rx {
                    if self.kernel_lat.len() < self.kernel_lat.capacity() {
                        self.kernel_lat.push(t_start + self.real_minus_mono - k);
                    }
                }
            }
            _ => {}
        }
    }
}
