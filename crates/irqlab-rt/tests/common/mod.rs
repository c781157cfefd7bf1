//! Shared helpers of the runtime tests: one runtime at a time (they compete
//! for the same CPU), and a skip with the kernel's reason when SCHED_FIFO
//! is not permitted.

#![allow(dead_code)] // each test binary uses a subset of the helpers
use std::sync::{Mutex, MutexGuard};

use irqlab_rt::{Config, Runtime};

static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

pub fn serial() -> MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner())
}

/// A runtime that requires SCHED_FIFO, or `None` (test skipped, reason
/// printed) when the kernel does not permit it.
pub fn fifo_runtime() -> Option<Runtime> {
    fifo_runtime_with(irqlab_rt::Backend::Epoll)
}

/// Same, with the top half on `backend` (io_uring may be disabled by the
/// kernel: skipped then too).
pub fn fifo_runtime_with(backend: irqlab_rt::Backend) -> Option<Runtime> {
    let cfg = Config {
        require_fifo: true,
        backend,
        ..Config::default()
    };
    match Runtime::new(cfg) {
        Ok(rt) => Some(rt),
        Err(e) if e.is_unavailable() => {
            irqlab_rt::skipped!("{e}");
            None
        }
        Err(e) => panic!("runtime: {e}"),
    }
}

/// Busy-wait a given CPU time on the calling thread (the library's own).
pub use irqlab_rt::sys::spin_cpu;

use std::net::UdpSocket;
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

/// A non-blocking UDP receiver on loopback.
pub fn udp_receiver() -> UdpSocket {
    let s = UdpSocket::bind("127.0.0.1:0").expect("bind");
    s.set_nonblocking(true).expect("nonblocking");
    s
}

/// Handler body: receive up to `batch` datagrams, spending `work` of CPU
/// on each (protocol processing); returns how many were received.
pub fn drain(sock: &UdpSocket, batch: usize, work: irqlab_core::Nanos) -> u64 {
    let mut buf = [0u8; 2048];
    let mut n = 0;
    while n < batch as u64 {
        match sock.recv(&mut buf) {
            Ok(_) => {
                n += 1;
                if work.0 > 0 {
                    spin_cpu(work);
                }
            }
            Err(_) => break,
        }
    }
    n
}

/// A sender thread on CPU 0 (not the runtime's CPU) sending 64-byte
/// datagrams to `to`, one every `gap` (zero: as fast as it can), until
/// `stop`; counts what it sent.
pub struct Sender {
    pub stop: Arc<AtomicBool>,
    pub sent: Arc<AtomicU64>,
    handle: Option<JoinHandle<()>>,
}

impl Sender {
    pub fn start(to: std::net::SocketAddr, gap: std::time::Duration) -> Sender {
        let stop = Arc::new(AtomicBool::new(false));
        let sent = Arc::new(AtomicU64::new(0));
        let (st, se) = (stop.clone(), sent.clone());
        let handle = std::thread::spawn(move || {
            let _ = irqlab_rt::sys::pin(0, 0);
            let s = UdpSocket::bind("127.0.0.1:0").expect("bind sender");
            let buf = [7u8; 64];
            let mut next = std::time::Instant::now();
            while !st.load(Ordering::Relaxed) {
                if s.send_to(&buf, to).is_ok() {
                    se.fetch_add(1, Ordering::Relaxed);
                }
                if !gap.is_zero() {
                    next += gap;
                    let now = std::time::Instant::now();
                    if next > now {
                        std::thread::sleep(next - now);
                    }
                }
            }
        });
        Sender {
            stop,
            sent,
            handle: Some(handle),
        }
    }

    /// Stop and return how many datagrams were sent.
    pub fn finish(mut self) -> u64 {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
        self.sent.load(Ordering::Relaxed)
    }
}

pub fn raw(s: &UdpSocket) -> i32 {
    s.as_raw_fd()
}

/// Time the hypervisor took from `cpu` so far (the `steal` column of
/// `/proc/stat`, in USER_HZ ticks of 10 ms): a test that misses a deadline
/// while this grows lost its CPU to the host, not to the runtime.
pub fn steal_ticks(cpu: usize) -> u64 {
    let text = std::fs::read_to_string("/proc/stat").unwrap_or_default();
    let name = format!("cpu{cpu}");
    text.lines()
        .find(|l| l.split_whitespace().next() == Some(name.as_str()))
        .and_then(|l| l.split_whitespace().nth(8))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}
