//! The isolation scenario with its flood handled by a kernel upcall (UPCALL
//! §3.2 + VINT/QUEST-VCPU budgets on a stock kernel; DESIGN §7).
//!
//! A periodic control task (600 us every 10 ms, Main VCPU 1 ms / 10 ms)
//! runs on the runtime's CPU; a sender on another CPU floods a UDP socket
//! on loopback back to back; the socket's kernel upcall (count handler,
//! 20 us of work per datagram, like the flood handler of
//! crates/irqlab-rt/tests/isolation.rs) runs in the NET_RX softirq of the
//! runtime's CPU: loopback's receive processing is steered there with RPS,
//! the way a NIC's interrupt would land there. Past the kernel budget the
//! datagrams take the fd's normal path, a 5 % PIBS I/O VCPU.
//!
//! Variants: no flood; kernel upcall with a 5 % budget (500 us per 10 ms);
//! the same without a budget. Reported per variant (one JSON line): the
//! control task's jobs, misses and worst response; the kernel upcall's
//! counters and its handler time as a share of the CPU; the softirq and
//! ksoftirqd time of the CPU (/proc/stat, /proc/PID/stat) and the backlog
//! drops and time squeezes (/proc/net/softnet_stat).
//!
//! The process first moves into its own network and mount namespaces
//! (its own `lo`, a private sysfs to set that lo's rps_cpus), so nothing of
//! the machine's own loopback changes and nothing outlives the process.
//! Needs root. Usage: kupcall-flood [SECONDS] [CPU]  (default 3, last CPU)

use std::net::UdpSocket;
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use irqlab_core::{Inherit, Nanos, Utilization};
use irqlab_rt::kupcall::{KernelBudget, KernelUpcallSpec};
use irqlab_rt::{Config, IoServer, Runtime};
use serde_json::{json, Value};

#[path = "../netns.rs"]
mod netns;
use netns::private_loopback;

const WORK: Nanos = Nanos::from_us(20);

/// (softirq ticks of `cpu` from /proc/stat, ksoftirqd/cpu's utime+stime
/// ticks, softnet dropped, softnet time_squeeze).
fn kernel_counters(cpu: usize) -> (u64, u64, u64, u64) {
    let stat = std::fs::read_to_string("/proc/stat").unwrap_or_default();
    let softirq = stat
        .lines()
        .find(|l| l.starts_with(&format!("cpu{cpu} ")))
        .and_then(|l| l.split_whitespace().nth(7))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let mut ksoft = 0;
    if let Ok(dir) = std::fs::read_dir("/proc") {
        for e in dir.flatten() {
            let p = e.path();
            let comm = std::fs::read_to_string(p.join("comm")).unwrap_or_default();
            if comm.trim() == format!("ksoftirqd/{cpu}") {
                let st = std::fs::read_to_string(p.join("stat")).unwrap_or_default();
                if let Some((_, rest)) = st.rsplit_once(')') {
                    // after ")": state ppid ... ; utime and stime are fields
                    // 14 and 15 of the line, 11 and 12 here
                    let f: Vec<&str> = rest.split_whitespace().collect();
                    let num = |i: usize| f.get(i).and_then(|x| x.parse::<u64>().ok()).unwrap_or(0);
                    ksoft = num(11) + num(12);
                }
            }
        }
    }
    let softnet = std::fs::read_to_string("/proc/net/softnet_stat").unwrap_or_default();
    let (mut dropped, mut squeezed) = (0, 0);
    for l in softnet.lines() {
        let f: Vec<u64> = l
            .split_whitespace()
            .filter_map(|x| u64::from_str_radix(x, 16).ok())
            .collect();
        // column 13 (0-based 12) is the CPU id on kernels >= 5.10
        if f.get(12).copied() == Some(cpu as u64) {
            dropped = f.get(1).copied().unwrap_or(0);
            squeezed = f.get(2).copied().unwrap_or(0);
        }
    }
    (softirq, ksoft, dropped, squeezed)
}

fn spin_cpu(d: Nanos) {
    let end = irqlab_rt::sys::own_cpu_time() + d;
    while irqlab_rt::sys::own_cpu_time() < end {
        std::hint::spin_loop();
    }
}

fn run(variant: &str, secs: f64, cpu: usize, gen_cpu: usize) -> Value {
    let cfg = Config {
        cpus: vec![cpu],
        require_fifo: true,
        ..Config::default()
    };
    let mut rt = match Runtime::new(cfg) {
        Ok(rt) => rt,
        Err(e) => return json!({"variant": variant, "error": e.to_string()}),
    };
    let ctl = rt
        .main_vcpu("ctl", Nanos::from_ms(1), Nanos::from_ms(10), None)
        .expect("ctl");
    let bulk = rt
        .main_vcpu("bulk", Nanos::from_ms(5), Nanos::from_ms(50), None)
        .expect("bulk");
    rt.spawn_periodic(
        ctl,
        "control",
        0,
        Nanos::from_ms(10),
        Nanos::from_ms(10),
        |_| spin_cpu(Nanos::from_us(600)),
    )
    .expect("control");
    let class = rt
        .io_class(
            "flood",
            IoServer::Pibs {
                utilization: Utilization::new(5, 100).expect("5 %"),
                serves: bulk,
                inherit: Inherit::Paper,
            },
            None,
        )
        .expect("class");
    let rx = UdpSocket::bind("127.0.0.1:0").expect("bind");
    rx.set_nonblocking(true).expect("nonblocking");
    let to = rx.local_addr().expect("addr");
    let fd = rx.as_raw_fd();
    let budget = match variant {
        "kernel-budget-5%" => Some(KernelBudget {
            period: Nanos::from_ms(10),
            time: Some(Nanos::from_us(500)),
            events: None,
        }),
        _ => None,
    };
    let spec = KernelUpcallSpec {
        cost: WORK,
        budget,
        ..Default::default()
    };
    let normal = move |_: &mut irqlab_rt::Event| {
        let mut buf = [0u8; 2048];
        let mut n = 0;
        while n < 32
            && unsafe {
                libc::recv(
                    fd,
                    buf.as_mut_ptr() as *mut libc::c_void,
                    buf.len(),
                    libc::MSG_DONTWAIT,
                )
            } >= 0
        {
            spin_cpu(WORK);
            n += 1;
        }
        n
    };
    let flood = variant != "no-flood";
    if let Err(e) = rt.register_kernel_upcall("flood", OwnedFd::from(rx), &spec, class, normal) {
        return json!({"variant": variant, "error": e.to_string()});
    }
    let k0 = kernel_counters(cpu);
    rt.start().expect("start");
    let stop = Arc::new(AtomicBool::new(false));
    let sent = Arc::new(AtomicU64::new(0));
    let sender = flood.then(|| {
        let (st, se) = (stop.clone(), sent.clone());
        std::thread::spawn(move || {
            let _ = irqlab_rt::sys::pin(0, gen_cpu);
            let s = UdpSocket::bind("127.0.0.1:0").expect("bind sender");
            let buf = [7u8; 64];
            while !st.load(Ordering::Relaxed) {
                if s.send_to(&buf, to).is_ok() {
                    se.fetch_add(1, Ordering::Relaxed);
                }
            }
        })
    });
    std::thread::sleep(Duration::from_secs_f64(secs));
    stop.store(true, Ordering::SeqCst);
    if let Some(s) = sender {
        let _ = s.join();
    }
    let r = rt.stop();
    let k1 = kernel_counters(cpu);
    let tick_ns = 1e9 / unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
    let dur = r.duration_ns as f64;
    let t = r.task("control").expect("control");
    let ku = &r.kernel_upcalls[0];
    let st = ku.stats.unwrap_or_default();
    let class = r.event("flood");
    json!({
        "bench": "kupcall_flood",
        "variant": variant,
        "seconds": dur / 1e9,
        "sent": sent.load(Ordering::Relaxed),
        "control_jobs": t.jobs,
        "control_misses": t.deadline_misses,
        "control_unfinished_past_deadline": t.unfinished_past_deadline,
        "control_response_max_us": t.response.as_ref().and_then(|x| x.max).map(|v| v as f64 / 1e3),
        "kernel_seen": st.seen,
        "kernel_handled": st.handled,
        "kernel_deferred": st.deferred,
        "kernel_handler_share": st.busy_ns as f64 / dur,
        "kernel_exhausted_periods": st.exhausted_periods,
        "class_items": class.map(|c| c.items),
        "class_kernel_drops": class.map(|c| c.kernel_drops),
        "class_share": r.server("flood").map(|s| s.share),
        "cpu_softirq_share": (k1.0 - k0.0) as f64 * tick_ns / dur,
        "ksoftirqd_share": (k1.1 - k0.1) as f64 * tick_ns / dur,
        "backlog_drops": k1.2 - k0.2,
        "time_squeezes": k1.3 - k0.3,
        "supervisor_timer_late_max_us": r.supervisors.iter().filter_map(|s| s.timer_latency.max).max().map(|v| v as f64 / 1e3),
    })
}

fn main() {
    let mut args = std::env::args().skip(1);
    let secs: f64 = args.next().and_then(|a| a.parse().ok()).unwrap_or(3.0);
    let cpus = irqlab_rt::sys::allowed_cpus();
    let cpu: usize = args
        .next()
        .and_then(|a| a.parse().ok())
        .unwrap_or_else(|| cpus.last().copied().unwrap_or(0));
    let gen_cpu = cpus.iter().copied().find(|&c| c != cpu).unwrap_or(cpu);
    if let Err(e) = private_loopback(cpu) {
        println!("{}", json!({"bench": "kupcall_flood", "error": e}));
        return;
    }
    let variants: Vec<String> = match args.next() {
        Some(v) => v.split(',').map(str::to_string).collect(),
        None => ["no-flood", "kernel-budget-5%", "kernel-no-budget"]
            .map(String::from)
            .to_vec(),
    };
    for v in &variants {
        println!("{}", run(v, secs, cpu, gen_cpu));
    }
}
