//! A control task next to a flooded network class, on real threads.
//!
//! `cargo run --release -p irqlab-rt --example control_and_flood [unbounded]`
//!
//! A periodic control task (600 us of CPU every 10 ms) runs in a 1 ms /
//! 10 ms Main VCPU. A UDP socket on loopback is flooded from another CPU;
//! its bottom half (20 us per datagram) runs on a 5 % PIBS I/O VCPU serving
//! a low-priority "bulk" Main VCPU. The control task meets every deadline.
//! With the argument `unbounded` the same flood is handled without an I/O
//! VCPU, above the control task, and the control task misses. Needs
//! SCHED_FIFO (root or CAP_SYS_NICE) for the priority order; without it
//! the runtime says so and runs in park-only mode.

use std::net::UdpSocket;
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use irqlab_core::{Inherit, Nanos, Utilization};
use irqlab_rt::{sys, Config, IoServer, Runtime};

fn spin(d: Nanos) {
    let end = sys::own_cpu_time() + d;
    while sys::own_cpu_time() < end {}
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let unbounded = std::env::args().any(|a| a == "unbounded");
    let mut rt = Runtime::new(Config::default())?;
    let ctl = rt.main_vcpu("ctl", Nanos::from_ms(1), Nanos::from_ms(10), None)?;
    let bulk = rt.main_vcpu("bulk", Nanos::from_ms(5), Nanos::from_ms(50), None)?;
    rt.spawn_periodic(
        ctl,
        "control",
        0,
        Nanos::from_ms(10),
        Nanos::from_ms(10),
        |_| spin(Nanos::from_us(600)),
    )?;
    let server = if unbounded {
        IoServer::Unbounded { rank: 0 }
    } else {
        IoServer::Pibs {
            utilization: Utilization::new(5, 100)?,
            serves: bulk,
            inherit: Inherit::Paper,
        }
    };
    let net = rt.io_class("net", server, None)?;
    let sock = UdpSocket::bind("127.0.0.1:0")?;
    sock.set_nonblocking(true)?;
    let to = sock.local_addr()?;
    rt.bind_fd(sock.as_raw_fd(), net, move |_ev| {
        let mut buf = [0u8; 2048];
        let mut n = 0;
        while n < 32 && sock.recv(&mut buf).is_ok() {
            spin(Nanos::from_us(20));
            n += 1;
        }
        n
    })?;
    rt.start()?;
    let stop = Arc::new(AtomicBool::new(false));
    let s2 = stop.clone();
    let flood = std::thread::spawn(move || {
        let _ = sys::pin(0, 0);
        let tx = UdpSocket::bind("127.0.0.1:0").expect("sender socket");
        while !s2.load(Ordering::Relaxed) {
            let _ = tx.send_to(&[0u8; 64], to);
        }
    });
    std::thread::sleep(Duration::from_secs(2));
    stop.store(true, Ordering::Relaxed);
    let _ = flood.join();
    let report = rt.stop();
    for w in &report.warnings {
        println!("warning: {w}");
    }
    if let Some(t) = report.task("control") {
        println!(
            "control: {:?} jobs, {:?} deadline misses",
            t.jobs, t.deadline_misses
        );
    }
    if let Some(e) = report.event("net") {
        println!(
            "net: {} events, {} datagrams handled, {} dropped by the kernel, \
             handling p99 {:?} ns",
            e.events, e.items, e.kernel_drops, e.handling.p99
        );
    }
    print!("{}", report.cyclictest_summary());
    Ok(())
}
