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
            eprintln!("SKIPPED: {e}");
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
        eprintln!("SKIPPED: the child could not attach a kernel upcall");
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
        eprintln!("SKIPPED: {}", e.map(|e| e.to_string()).unwrap_or_default());
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
