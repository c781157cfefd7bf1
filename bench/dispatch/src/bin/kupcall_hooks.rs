//! Which hook for a kernel upcall: tc ingress, generic XDP or a socket
//! filter (irqlab-rt `kupcall`)? For each, a sender pinned to one CPU sends
//! `N` 64-byte datagrams one at a time on loopback to a socket whose kernel
//! upcall counts and consumes them; per datagram it records the program's
//! entry time minus the sender's time stamp (dispatch: the receive path up
//! to the hook), the handler time, and the sender's CPU time per
//! `send` (on loopback the NET_RX softirq runs in the sender's context, so
//! this is the whole receive path's cost up to where the hook consumes the
//! datagram). "none" is the same path with no program (datagrams queued to
//! the socket, drained between sends, outside the timed part). One JSON
//! line per hook on stdout.
//!
//! Usage: kupcall-hooks [N] [CPU]   (default 20000, CPU 1; needs root)

use std::net::UdpSocket;
use std::os::fd::{AsRawFd, OwnedFd};

use irqlab_rt::kupcall::{Hook, KernelUpcall, KernelUpcallSpec};
use serde_json::json;

fn clock_ns(clock: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    unsafe { libc::clock_gettime(clock, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

fn pct(v: &mut [u64], p: f64) -> Option<u64> {
    if v.is_empty() {
        return None;
    }
    v.sort_unstable();
    let rank = ((p / 100.0) * v.len() as f64).ceil() as usize;
    Some(v[rank.clamp(1, v.len()) - 1])
}

fn main() {
    let mut args = std::env::args().skip(1);
    let n: u64 = args.next().and_then(|a| a.parse().ok()).unwrap_or(20_000);
    let cpu: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(1);
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
    }
    for hook in [
        None,
        Some(Hook::Tc),
        Some(Hook::Xdp),
        Some(Hook::SocketFilter),
    ] {
        let rx = UdpSocket::bind("127.0.0.1:0").expect("bind");
        rx.set_nonblocking(true).expect("nonblocking");
        let to = rx.local_addr().expect("addr");
        let rxfd = rx.as_raw_fd();
        let spec = KernelUpcallSpec {
            hook: hook.unwrap_or_default(),
            send_time_offset: Some(0),
            ..Default::default()
        };
        let (ku, _keep) = match hook {
            None => (None, Some(rx)),
            Some(_) => match KernelUpcall::attach(OwnedFd::from(rx), &spec) {
                Ok(k) => (Some(k), None),
                Err(e) => {
                    println!(
                        "{}",
                        json!({"hook": format!("{hook:?}"), "error": e.to_string()})
                    );
                    continue;
                }
            },
        };
        let tx = UdpSocket::bind("127.0.0.1:0").expect("bind");
        tx.connect(to).expect("connect");
        let mut cpu_per = Vec::with_capacity(n as usize);
        let mut buf = [0u8; 64];
        let mut sink = [0u8; 2048];
        for _ in 0..n {
            let c0 = clock_ns(libc::CLOCK_THREAD_CPUTIME_ID);
            buf[..8].copy_from_slice(&clock_ns(libc::CLOCK_MONOTONIC).to_le_bytes());
            let _ = tx.send(&buf);
            cpu_per.push(clock_ns(libc::CLOCK_THREAD_CPUTIME_ID) - c0);
            if ku.is_none() {
                while unsafe {
                    libc::recv(rxfd, sink.as_mut_ptr() as *mut libc::c_void, sink.len(), 0)
                } > 0
                {}
            }
        }
        let name = hook.map_or("none".to_string(), |h| format!("{h:?}"));
        let mut line = json!({
            "bench": "kupcall_hooks",
            "hook": name,
            "datagrams": n,
            "send_cpu_p50_ns": pct(&mut cpu_per, 50.0),
            "send_cpu_p99_ns": pct(&mut cpu_per, 99.0),
        });
        if let Some(k) = ku {
            let samples = k.samples().expect("samples");
            let mut disp: Vec<u64> = samples
                .iter()
                .map(|s| s.start.saturating_sub(s.t_send))
                .collect();
            let mut hand: Vec<u64> = samples.iter().map(|s| s.end - s.start).collect();
            let st = k.close().expect("close");
            line["handled"] = json!(st.handled);
            line["dispatch_p50_ns"] = json!(pct(&mut disp, 50.0));
            line["dispatch_p99_ns"] = json!(pct(&mut disp, 99.0));
            line["handler_p50_ns"] = json!(pct(&mut hand, 50.0));
        }
        println!("{line}");
    }
}
