//! Kernel upcalls (src/kupcall.rs): an eBPF handler in the NET_RX softirq
//! sees every datagram of a counted burst, replies for the echo handler,
//! stops handling in the kernel past its budget (the rest reach the fd,
//! counts add up exactly), and leaves nothing attached or loaded after
//! detach, drop or the death of its process. Needs root (CAP_BPF,
//! CAP_NET_ADMIN); skipped with the kernel's reason otherwise.

mod common;

use std::net::UdpSocket;
use std::os::fd::OwnedFd;
use std::time::{Duration, Instant};

use irqlab_core::Nanos;
use irqlab_rt::kupcall::{
    loaded_program_ids, Hook, KernelBudget, KernelHandler, KernelStats, KernelUpcall,
    KernelUpcallSpec,
};
use irqlab_rt::RtError;

/// Attach, or `None` (skip, with the kernel's reason) when BPF is not
/// permitted or not supported here.
fn attach(sock: UdpSocket, spec: &KernelUpcallSpec) -> Option<KernelUpcall> {
    match KernelUpcall::attach(OwnedFd::from(sock), spec) {
        Ok(k) => Some(k),
        Err(e) if e.is_unavailable() => {
            irqlab_rt::skipped!("{e}");
            None
        }
        Err(e) => panic!("kernel upcall: {e}"),
    }
}

fn receiver() -> UdpSocket {
    let s = UdpSocket::bind("127.0.0.1:0").expect("bind");
    s.set_nonblocking(true).expect("nonblocking");
    s
}

/// Poll the counters until `done` (the softirq may run after `send`
/// returns, e.g. in ksoftirqd), at most 5 s.
fn settle(k: &KernelUpcall, done: impl Fn(&KernelStats) -> bool) -> KernelStats {
    let t0 = Instant::now();
    loop {
        let s = k.stats().expect("stats");
        if done(&s) || t0.elapsed() > Duration::from_secs(5) {
            return s;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Datagrams waiting in the socket (drained).
fn drain(fd: i32) -> u64 {
    let mut n = 0;
    let mut buf = [0u8; 2048];
    loop {
        // SAFETY: recv into a local buffer.
        let r = unsafe {
            libc::recv(
                fd,
                buf.as_mut_ptr() as *mut libc::c_void,
                buf.len(),
                libc::MSG_DONTWAIT,
            )
        };
        if r < 0 {
            return n;
        }
        n += 1;
    }
}

/// Is the program with this id still loaded (by anyone)?
fn loaded(id: Option<u32>) -> bool {
    let id = id.expect("the kernel gave the program an id");
    loaded_program_ids()
        .expect("list programs")
        .iter()
        .any(|(i, _)| *i == id)
}

/// Unloaded within 5 s (the kernel frees a program after an RCU grace
/// period).
fn unloaded(id: Option<u32>) -> bool {
    let t0 = Instant::now();
    while loaded(id) {
        if t0.elapsed() > Duration::from_secs(5) {
            return false;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    true
}

/// Whether `bpftool` (when installed) lists program `id` as loaded, and
/// any BPF link still holding it.
fn bpftool_sees(id: Option<u32>) -> Option<bool> {
    let id = id?.to_string();
    let prog = std::process::Command::new("bpftool")
        .args(["prog", "show", "id", &id])
        .output()
        .ok()?;
    let links = std::process::Command::new("bpftool")
        .args(["link", "show"])
        .output()
        .ok()?;
    let links = String::from_utf8_lossy(&links.stdout);
    let linked = links.lines().any(|l| l.contains(&format!("prog {id}")));
    Some(prog.status.success() || linked)
}

fn burst(to: std::net::SocketAddr, n: u64, len: usize) {
    let tx = UdpSocket::bind("127.0.0.1:0").expect("bind");
    let buf = vec![7u8; len];
    for _ in 0..n {
        tx.send_to(&buf, to).expect("send");
    }
}

#[test]
fn counts_every_datagram_of_a_burst_at_each_hook_and_detaches() {
    let _g = common::serial();
    for hook in [Hook::Tc, Hook::Xdp, Hook::SocketFilter] {
        let rx = receiver();
        let to = rx.local_addr().expect("addr");
        let spec = KernelUpcallSpec {
            hook,
            ..Default::default()
        };
        let Some(mut k) = attach(rx, &spec) else {
            return;
        };
        let id = k.program_id();
        assert!(loaded(id));
        assert_ne!(bpftool_sees(id), Some(false), "{hook:?}: bpftool disagrees");
        let n = 2000;
        burst(to, n, 64);
        let s = settle(&k, |s| s.seen >= n);
        assert_eq!(s.seen, n, "{hook:?}: {s:?}");
        assert_eq!(s.handled, n, "{hook:?}: {s:?}");
        assert_eq!(s.deferred + s.filtered + s.orphaned + s.errors, 0);
        // Handled in the kernel: none reached the socket.
        assert_eq!(drain(k.fd()), 0, "{hook:?}");
        let last = k.detach().expect("stats at detach");
        assert_eq!(last.handled, n);
        assert!(unloaded(id), "{hook:?}: program still loaded after detach");
        assert_ne!(
            bpftool_sees(id),
            Some(true),
            "{hook:?}: bpftool still sees it"
        );
        // Detached: the next datagrams take the normal path.
        burst(to, 10, 64);
        std::thread::sleep(Duration::from_millis(50));
        assert_eq!(drain(k.fd()), 10, "{hook:?}");
    }
}

#[test]
fn dropping_the_upcall_or_closing_its_fd_detaches() {
    let _g = common::serial();
    let rx = receiver();
    let to = rx.local_addr().expect("addr");
    let Some(k) = attach(rx, &KernelUpcallSpec::default()) else {
        return;
    };
    let id = k.program_id();
    assert!(loaded(id));
    drop(k);
    assert!(unloaded(id), "still loaded after drop");
    let rx = receiver();
    let Some(k) = attach(rx, &KernelUpcallSpec::default()) else {
        return;
    };
    let id = k.program_id();
    burst(to, 3, 16);
    let s = k.close().expect("close");
    assert_eq!(s.seen, 0, "another port's datagrams are not ours");
    assert!(unloaded(id), "still loaded after close");
}

#[test]
fn a_killed_process_leaves_nothing_attached() {
    // The child attaches and is killed by SIGKILL (no destructor runs): the
    // TCX link dies with its last fd, so the kernel detaches and unloads.
    if std::env::var_os("IRQLAB_KUPCALL_CHILD").is_some() {
        let Some(k) = attach(receiver(), &KernelUpcallSpec::default()) else {
            println!("UNAVAILABLE");
            return;
        };
        println!("\nKUPCALL_ID={}", k.program_id().unwrap_or(0));
        std::thread::sleep(Duration::from_secs(60));
        return;
    }
    let _g = common::serial();
    let exe = std::env::current_exe().expect("test binary");
    let mut child = std::process::Command::new(exe)
        .args([
            "--exact",
            "a_killed_process_leaves_nothing_attached",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("IRQLAB_KUPCALL_CHILD", "1")
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("spawn child");
    use std::io::BufRead;
    let out = child.stdout.take().expect("stdout");
    let mut id = None;
    for line in std::io::BufReader::new(out).lines() {
        let line = line.expect("line");
        if line.contains("UNAVAILABLE") {
            break;
        }
        if let Some((_, v)) = line.split_once("KUPCALL_ID=") {
            id = v.trim().parse::<u32>().ok();
            break;
        }
    }
    let Some(id) = id else {
        let _ = child.kill();
        let _ = child.wait();
        irqlab_rt::skipped!("the child could not attach a kernel upcall");
        return;
    };
    assert!(loaded(Some(id)));
    child.kill().expect("kill");
    child.wait().expect("wait");
    assert!(unloaded(Some(id)), "program {id} survived its process");
    assert_ne!(bpftool_sees(Some(id)), Some(true), "bpftool still sees it");
}

#[test]
fn bad_specs_are_refused_with_the_rule() {
    let rx = receiver();
    let spec = KernelUpcallSpec {
        hook: Hook::SocketFilter,
        handler: KernelHandler::Echo,
        ..Default::default()
    };
    let e = KernelUpcall::load(OwnedFd::from(rx), &spec).err();
    if let Some(RtError::Unsupported { .. }) = e {
        irqlab_rt::skipped!("{}", e.map(|e| e.to_string()).unwrap_or_default());
        return;
    }
    let e = e.expect("refused").to_string();
    assert!(e.contains("socket filter cannot send a reply"), "{e}");
    let budget = KernelBudget {
        period: Nanos::from_ms(10),
        time: Some(Nanos::from_ms(20)),
        events: None,
    };
    let spec = KernelUpcallSpec {
        budget: Some(budget),
        ..Default::default()
    };
    let e = KernelUpcall::load(OwnedFd::from(receiver()), &spec)
        .err()
        .expect("refused")
        .to_string();
    assert!(e.contains("budget.time") && e.contains("period"), "{e}");
    // An unbound socket has no port to match.
    let raw = std::net::UdpSocket::bind("127.0.0.1:0").expect("bind");
    let tcp = std::net::TcpListener::bind("127.0.0.1:0").expect("tcp");
    drop(raw);
    let e = KernelUpcall::load(OwnedFd::from(tcp), &KernelUpcallSpec::default())
        .err()
        .expect("refused")
        .to_string();
    assert!(e.contains("IPv4 UDP socket"), "{e}");
}

/// A budget far longer than a burst (boundaries at multiples of an hour
/// since boot: a burst of a few ms straddles one with probability ~1e-6).
fn one_period(time: Option<Nanos>, events: Option<u64>) -> Option<KernelBudget> {
    Some(KernelBudget {
        period: Nanos::from_ms(3_600_000),
        time,
        events,
    })
}

#[test]
fn an_event_budget_leaves_the_rest_to_the_fd_exactly() {
    let _g = common::serial();
    for hook in [Hook::Tc, Hook::Xdp, Hook::SocketFilter] {
        let rx = receiver();
        let to = rx.local_addr().expect("addr");
        let spec = KernelUpcallSpec {
            hook,
            budget: one_period(None, Some(500)),
            ..Default::default()
        };
        let Some(k) = attach(rx, &spec) else {
            return;
        };
        let n = 2000;
        burst(to, n, 64);
        let s = settle(&k, |s| s.seen >= n);
        assert_eq!((s.seen, s.handled, s.deferred), (n, 500, 1500), "{hook:?}");
        assert_eq!(s.exhausted_periods, 1, "{hook:?}");
        // Every deferred datagram reached the socket, and only those (queued,
        // or dropped there by the kernel for a full receive buffer).
        // (A socket filter's consumed datagrams count as socket drops too.)
        let mut dropped = irqlab_rt::io::socket_drops(k.fd()).expect("drops");
        if hook == Hook::SocketFilter {
            dropped -= s.handled;
        }
        assert_eq!(drain(k.fd()) + dropped, s.deferred, "{hook:?}");
    }
}

#[test]
fn a_time_budget_stops_the_handler_within_one_event_of_it() {
    let _g = common::serial();
    let rx = receiver();
    let to = rx.local_addr().expect("addr");
    let (cost, budget) = (Nanos::from_us(20), Nanos::from_ms(1));
    let spec = KernelUpcallSpec {
        cost,
        budget: one_period(Some(budget), None),
        ..Default::default()
    };
    let Some(k) = attach(rx, &spec) else {
        return;
    };
    let n = 300;
    burst(to, n, 64);
    let s = settle(&k, |s| s.seen >= n);
    assert_eq!(s.seen, n);
    // Each handled event cost at least `cost`; the budget is checked before
    // each one, so the last handled event started under it.
    assert!(s.busy_ns >= budget.0, "{s:?}");
    assert!(s.handled * cost.0 <= s.busy_ns, "{s:?}");
    assert!(s.handled <= budget.0 / cost.0 + 1, "{s:?}");
    let per_event = s.busy_ns / s.handled;
    assert!(s.busy_ns - per_event < budget.0 + per_event, "{s:?}");
    assert_eq!(s.deferred, n - s.handled);
    let dropped = irqlab_rt::io::socket_drops(k.fd()).expect("drops");
    assert_eq!(drain(k.fd()) + dropped, s.deferred);
}

#[test]
fn the_echo_handler_replies_from_the_softirq() {
    let _g = common::serial();
    for hook in [Hook::Tc, Hook::Xdp] {
        let rx = receiver();
        let server = rx.local_addr().expect("addr");
        let spec = KernelUpcallSpec {
            hook,
            handler: KernelHandler::Echo,
            budget: one_period(None, Some(40)),
            ..Default::default()
        };
        let Some(k) = attach(rx, &spec) else {
            return;
        };
        let client = UdpSocket::bind("127.0.0.1:0").expect("bind");
        client
            .set_read_timeout(Some(Duration::from_secs(2)))
            .expect("timeout");
        let n = 100u64;
        let mut replies = Vec::new();
        for i in 0..n {
            let msg = format!("echo {i:04} {hook:?}");
            client.send_to(msg.as_bytes(), server).expect("send");
            if i < 40 {
                let mut buf = [0u8; 128];
                let (len, from) = client.recv_from(&mut buf).expect("reply");
                assert_eq!(from, server, "{hook:?}: the reply comes from the server");
                replies.push(String::from_utf8_lossy(&buf[..len]).into_owned());
            }
        }
        let expect: Vec<String> = (0..40).map(|i| format!("echo {i:04} {hook:?}")).collect();
        assert_eq!(replies, expect);
        let s = settle(&k, |s| s.seen >= n);
        assert_eq!((s.handled, s.deferred, s.errors), (40, 60, 0), "{hook:?}");
        // Past the budget: no reply, the datagrams reach the server socket.
        client.set_nonblocking(true).expect("nonblocking");
        let mut buf = [0u8; 128];
        assert!(client.recv_from(&mut buf).is_err(), "{hook:?}: extra reply");
        assert_eq!(drain(k.fd()), 60, "{hook:?}");
    }
}

#[test]
fn in_a_runtime_deferred_events_reach_the_fds_io_class() {
    let _g = common::serial();
    let Some(mut rt) = common::fifo_runtime() else {
        return;
    };
    let app = rt
        .main_vcpu("app", Nanos::from_ms(2), Nanos::from_ms(10), None)
        .expect("vcpu");
    let _ = app;
    let class = rt
        .io_class(
            "net",
            irqlab_rt::IoServer::Sporadic {
                budget: Nanos::from_ms(2),
                period: Nanos::from_ms(10),
            },
            None,
        )
        .expect("class");
    let rx = receiver();
    let to = rx.local_addr().expect("addr");
    let fd = std::os::fd::AsRawFd::as_raw_fd(&rx);
    let spec = KernelUpcallSpec {
        budget: one_period(None, Some(300)),
        ..Default::default()
    };
    let normal = move |_: &mut irqlab_rt::Event| {
        let mut n = 0;
        let mut buf = [0u8; 2048];
        // SAFETY: recv on the runtime-owned socket into a local buffer.
        while unsafe {
            libc::recv(
                fd,
                buf.as_mut_ptr() as *mut libc::c_void,
                buf.len(),
                libc::MSG_DONTWAIT,
            )
        } >= 0
        {
            n += 1;
        }
        n
    };
    match rt.register_kernel_upcall("count", OwnedFd::from(rx), &spec, class, normal) {
        Ok(_) => {}
        Err(e) if e.is_unavailable() => {
            irqlab_rt::skipped!("{e}");
            return;
        }
        Err(e) => panic!("{e}"),
    }
    rt.start().expect("start");
    let n = 1000;
    burst(to, n, 64);
    std::thread::sleep(Duration::from_millis(300));
    let r = rt.stop();
    let ku = &r.kernel_upcalls[0];
    let s = ku.stats.expect("counters");
    assert_eq!((s.seen, s.handled, s.deferred), (n, 300, 700), "{s:?}");
    let class = r
        .events
        .iter()
        .find(|e| e.name.contains("net"))
        .expect("class");
    // The class took exactly the deferred ones (handled, or dropped by the
    // kernel at its full socket buffer).
    assert_eq!(class.items + class.kernel_drops, 700, "{class:?}");
    assert_eq!(ku.handling.count, 300);
}

#[test]
fn fallback_only_when_asked() {
    // Without privilege (or kernel support) the registration fails with the
    // kernel's reason unless `fallback` is set; with it the fd's class
    // takes every event. Run as root, both load: then nothing to check.
    let _g = common::serial();
    let rx = receiver();
    match KernelUpcall::load(OwnedFd::from(rx), &KernelUpcallSpec::default()) {
        Ok(_) => irqlab_rt::skipped!("kernel upcalls load here (root): no fallback to test"),
        Err(e) => {
            assert!(e.is_unavailable(), "{e}");
            let Some(mut rt) = common::fifo_runtime() else {
                return;
            };
            let class = rt
                .io_class(
                    "net",
                    irqlab_rt::IoServer::Sporadic {
                        budget: Nanos::from_ms(2),
                        period: Nanos::from_ms(10),
                    },
                    None,
                )
                .expect("class");
            let spec = KernelUpcallSpec::default();
            let e = rt
                .register_kernel_upcall("k", OwnedFd::from(receiver()), &spec, class, |_| 0)
                .expect_err("refused without fallback");
            assert!(e.is_unavailable());
            let spec = KernelUpcallSpec {
                fallback: true,
                ..Default::default()
            };
            rt.register_kernel_upcall("k", OwnedFd::from(receiver()), &spec, class, |_| 0)
                .expect("falls back");
        }
    }
}

#[test]
fn forwarded_control_messages_reach_the_fd_and_samples_are_kept() {
    let _g = common::serial();
    let rx = receiver();
    let to = rx.local_addr().expect("addr");
    let spec = KernelUpcallSpec {
        forward_byte: Some((0, b'S')),
        send_time_offset: Some(8),
        ..Default::default()
    };
    let Some(k) = attach(rx, &spec) else {
        return;
    };
    let tx = UdpSocket::bind("127.0.0.1:0").expect("bind");
    let mut sent_at = Vec::new();
    for i in 0..30u64 {
        let mut msg = [0u8; 32];
        msg[0] = if i % 10 == 9 { b'S' } else { b'D' };
        let t = irqlab_rt::sys::now().0;
        msg[8..16].copy_from_slice(&t.to_le_bytes());
        tx.send_to(&msg, to).expect("send");
        if msg[0] == b'D' {
            sent_at.push(t);
        }
    }
    let s = settle(&k, |s| s.seen >= 30);
    assert_eq!((s.handled, s.filtered), (27, 3), "{s:?}");
    assert_eq!(drain(k.fd()), 3, "the control messages reached the fd");
    let samples = k.samples().expect("samples");
    assert_eq!(samples.len(), 27);
    for (smp, t) in samples.iter().zip(&sent_at) {
        assert_eq!(smp.head & 0xff, u64::from(b'D'));
        assert_eq!(smp.t_send, *t);
        assert!(smp.start >= smp.t_send && smp.end >= smp.start, "{smp:?}");
    }
}

const KERNEL_MODEL: &str = "
machine: {cpus: 1, path: quest}
simulation: {duration: 500ms}
vcpus:
  - {name: bulk, policy: sporadic, budget: 5ms, period: 50ms}
  - {name: io.flood, kind: io, policy: pibs, utilization: 5%, io_class: flood}
devices:
  - {name: flood, kind: nic, class: flood, arrival: {kind: flood, interval: 20us},
     top_half: 0us, bottom_half: 20us, packet: 64B,
     upcall: {mode: kernel, budget: 500us, period: 10ms}}
";

#[test]
fn a_model_runs_a_kernel_upcall_under_its_budget() {
    let _g = common::serial();
    let r = match irqlab_rt::model_run::run_model("kernel", KERNEL_MODEL, None, None) {
        Ok(r) => r,
        Err(e) if e.is_unavailable() => {
            irqlab_rt::skipped!("{e}");
            return;
        }
        Err(e) => panic!("{e}"),
    };
    let rep = r.runtime.as_ref().expect("irqlab-rt's report");
    let k = &rep.kernel_upcalls[0];
    let s = k.stats.expect("counters");
    assert_eq!(s.seen, s.handled + s.deferred + s.filtered + s.orphaned);
    // A flood at 20 us per datagram overruns 500 us per 10 ms: the kernel
    // handled some, deferred the rest to the class, which took some.
    assert!(s.handled > 0 && s.deferred > 0, "{s:?}");
    assert!(s.exhausted_periods > 0, "{s:?}");
    let class = rep.event("io.flood").expect("class");
    assert!(class.items > 0, "{class:?}");
    assert_eq!(k.budget_time_ns, Some(500_000));
    // Each period's handler time stops within one event past the budget.
    let per_event = s.busy_ns / s.handled.max(1);
    let periods = rep.duration_ns / 10_000_000 + 2;
    assert!(s.busy_ns <= periods * (500_000 + per_event), "{s:?}");
}

#[test]
fn a_model_refuses_a_kernel_upcall_it_cannot_run() {
    let check = |text: &str| {
        irqlab_rt::model_run::check_model("bad", text)
            .expect_err("refused")
            .to_string()
    };
    let bad = KERNEL_MODEL
        .replace("kind: nic", "kind: generic")
        .replace(
            "arrival: {kind: flood, interval: 20us},\n     top_half: 0us, bottom_half: 20us, packet: 64B,",
            "min_interarrival: 1ms, isr: 0us, dsr: 20us,",
        );
    let e = check(&bad);
    assert!(
        e.contains("devices[0].upcall.mode: kernel: kernel upcalls handle nic devices"),
        "{e}"
    );
    let e = check(&KERNEL_MODEL.replace("mode: kernel", "mode: kernal"));
    assert!(
        e.contains("kernal") && e.contains("user") && e.contains("kernel"),
        "{e}"
    );
    let e = check(&KERNEL_MODEL.replace("class: flood, arrival", "arrival"));
    assert!(e.contains("devices[0].class: missing"), "{e}");
    // The kernel side's rules name the model's keys.
    let bad = KERNEL_MODEL.replace("budget: 500us, period: 10ms", "budget: 20ms, period: 10ms");
    let e = check(&bad);
    assert!(e.contains("devices[0].upcall.budget: 20ms"), "{e}");
}
