//! The irqlab runtime's two event paths (crates/irqlab-rt, DESIGN §7):
//! `irqlab-upcall` runs the handler directly in the runtime's top-half
//! thread (UPCALL §3.2, `register_upcall`), `irqlab-bottom-half` has the
//! top half queue a job on a PIBS I/O VCPU thread (`bind_fd`, QUEST-VCPU
//! Alg. 7-10) serving a Main VCPU. Budgets account for the handler's time
//! without throttling the echo load: the upcall's equals its period (100 %,
//! never deferred; with 9 ms / 10 ms the saturated bandwidth phase left a
//! budget debt that delayed the first ping-pong round trips by up to two
//! periods), the I/O VCPU has 90 %. The runtime's supervisor and top half
//! run on the server CPU, like the other mechanisms' server, and are
//! SCHED_FIFO whenever the kernel permits it, whatever `--sched` gives the
//! server process (the runtime's design: the top half plays the paper's
//! softirq context, out of reach of CPU-bound processes). With
//! `IRQLAB_BENCH_DEBUG` set, the runtime's own per-path counts and
//! latencies go to stderr.

use super::Mechanism;
use crate::server::{recv_ts, Handler, RxBuf};
use crate::sys;
use irqlab_core::{Inherit, Nanos, Utilization};
use irqlab_rt::{Backend, Config, IoServer, Runtime, UpcallBudget};
use std::io;

pub struct RtUpcall;
pub struct RtUpcallUring;
pub struct RtBottomHalf;

/// The handler lives on the serving thread's stack while the runtime's
/// thread runs it; `serve` does not return before the runtime has stopped,
/// and only one runtime thread calls it.
struct HandlerPtr(*mut Handler);
// SAFETY: see above: exclusive use by one thread at a time, outlived.
unsafe impl Send for HandlerPtr {}

fn serve_with(
    fd: libc::c_int,
    h: &mut Handler,
    ready: &mut dyn FnMut(),
    upcall: bool,
    backend: Backend,
) -> io::Result<()> {
    sys::set_nonblocking(fd, true)?;
    let cpu = unsafe { libc::sched_getcpu() };
    let cfg = Config {
        cpus: vec![cpu.max(0) as usize],
        backend,
        ..Config::default()
    };
    let err = |e: irqlab_rt::RtError| io::Error::other(e.to_string());
    let mut rt = Runtime::new(cfg).map_err(err)?;
    // The serving thread blocks until the handler sees the stop datagram
    // (polling a flag every millisecond put 1000 timer wake-ups a second on
    // the server CPU, visible in the p99).
    let (done_tx, done_rx) = std::sync::mpsc::sync_channel::<()>(1);
    let hp = HandlerPtr(h as *mut Handler);
    let mut rx = Box::new(RxBuf::new());
    let handler = move |ev: &mut irqlab_rt::Event| -> u64 {
        let hp = &hp;
        // SAFETY: see `HandlerPtr`.
        let h = unsafe { &mut *hp.0 };
        let t = ev.start.0 as i64;
        let mut first = true;
        let mut n = 0;
        while !h.stop {
            match recv_ts(fd, &mut rx, libc::MSG_DONTWAIT) {
                Ok((len, ts)) => {
                    h.handle(t, first, &rx.data[..len], ts);
                    first = false;
                    n += 1;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => break,
            }
        }
        if h.stop {
            let _ = done_tx.try_send(());
        }
        n
    };
    let period = Nanos::from_ms(10);
    if upcall {
        rt.register_upcall(
            "echo",
            fd,
            UpcallBudget {
                budget: period,
                period,
            },
            handler,
        )
        .map_err(err)?;
    } else {
        let app = rt
            .main_vcpu("app", Nanos::from_ms(9), period, None)
            .map_err(err)?;
        let class = rt
            .io_class(
                "echo",
                IoServer::Pibs {
                    utilization: Utilization::new(9, 10)
                        .map_err(|e| io::Error::other(e.to_string()))?,
                    serves: app,
                    inherit: Inherit::Paper,
                },
                None,
            )
            .map_err(err)?;
        rt.bind_fd(fd, class, handler).map_err(err)?;
    }
    rt.start().map_err(err)?;
    ready();
    let _ = done_rx.recv();
    let report = rt.stop();
    if std::env::var_os("IRQLAB_BENCH_DEBUG").is_some() {
        for e in &report.events {
            eprintln!(
                "# {}: events {} handled {} deferrals {} dispatch {:?}",
                e.name,
                e.events,
                e.handled,
                e.deferrals,
                (e.dispatch.p50, e.dispatch.p99, e.dispatch.max)
            );
        }
    }
    Ok(())
}

impl Mechanism for RtUpcall {
    fn name(&self) -> &'static str {
        "irqlab-upcall"
    }
    fn how(&self) -> &'static str {
        "irqlab-rt register_upcall: the top-half thread (FIFO 95) wakes from epoll_wait and runs the handler itself, charged to a 100 % budget (10 ms / 10 ms: accounted, never deferred); handler starts when the top half calls it; runtime threads are SCHED_FIFO whatever --sched says"
    }
    fn kernel_timestamps(&self) -> bool {
        true
    }
    fn serve(&self, fd: libc::c_int, h: &mut Handler, ready: &mut dyn FnMut()) -> io::Result<()> {
        serve_with(fd, h, ready, true, Backend::Epoll)
    }
}

impl Mechanism for RtBottomHalf {
    fn name(&self) -> &'static str {
        "irqlab-bottom-half"
    }
    fn how(&self) -> &'static str {
        "irqlab-rt bind_fd: the top half queues a job and wakes a PIBS I/O VCPU thread (90 %, serving a 9 ms / 10 ms Main VCPU) through the core and its supervisor; handler starts on that thread"
    }
    fn kernel_timestamps(&self) -> bool {
        true
    }
    fn serve(&self, fd: libc::c_int, h: &mut Handler, ready: &mut dyn FnMut()) -> io::Result<()> {
        serve_with(fd, h, ready, false, Backend::Epoll)
    }
}

impl Mechanism for RtUpcallUring {
    fn name(&self) -> &'static str {
        "irqlab-upcall-uring"
    }
    fn how(&self) -> &'static str {
        "irqlab-rt register_upcall with the io_uring top half (one IORING_OP_POLL_ADD per arming, reaped by io_uring_enter); otherwise as irqlab-upcall"
    }
    fn kernel_timestamps(&self) -> bool {
        true
    }
    fn serve(&self, fd: libc::c_int, h: &mut Handler, ready: &mut dyn FnMut()) -> io::Result<()> {
        serve_with(fd, h, ready, true, Backend::IoUring)
    }
}
