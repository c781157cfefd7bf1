//! UPCALL Figures 4-6 on a stock Linux kernel: a 512-byte UDP echo over
//! loopback. The client (this process, pinned to the client CPU) sends
//! datagrams carrying a CLOCK_MONOTONIC send timestamp; the server (a forked
//! child pinned to the server CPU) receives them through one event-delivery
//! mechanism (src/mechanisms/) and echoes them from its handler. For each
//! (mechanism, number of CPU-bound processes) it measures
//!
//! * bandwidth: echoed datagrams/s and MB/s over the first half of the
//!   duration, `--window` datagrams outstanding (UPCALL Figure 4);
//! * round-trip time, mean and standard deviation ("jitter"), one datagram at
//!   a time over the second half (Figures 5 and 6);
//! * dispatch latency in that second half: handler start - kernel receive
//!   timestamp (SO_TIMESTAMPNS) or - send timestamp where the mechanism
//!   cannot recvmsg (see server.rs), p50/p99/max.
//!
//! The CPU-bound processes (busy loops, SCHED_OTHER, forked children) are
//! pinned to the *server's* CPU, so they compete with the server only; the
//! client keeps a CPU of its own. The server asks for SCHED_FIFO (`--sched
//! fifo`, falls back to SCHED_OTHER on EPERM) or runs SCHED_OTHER (`--sched
//! other`); the policy it got is in the output. cyclictest runs for the same
//! duration with the same hogs on the same CPU and policy as the timer
//! latency floor.
//!
//! One JSON line per (sched, hogs, mechanism), and one per (sched, hogs) for
//! cyclictest, to stdout and to `--out`.

mod mechanisms;
mod netns;
mod server;
mod stats;
mod sys;

use mechanisms::Mechanism;
use serde_json::{json, Map, Value};
use server::{get_header, put_header, Handler, KIND_LATENCY, KIND_STOP, KIND_STREAM};
use std::io::{self, Write};
use std::path::PathBuf;
use std::process::Command;

const USAGE: &str = "\
dispatch: UPCALL Figures 4-6 (UDP echo bandwidth, RTT, jitter, dispatch latency) per mechanism under 0-4 CPU hogs

  --duration SECS       per (mechanism, hogs) point, half bandwidth, half latency (default 1.0)
  --hogs LIST           numbers of CPU-bound processes (default 0,1,2,3,4)
  --mechanisms LIST     default: all of them (see --list)
  --sched LIST          server policy per sweep: fifo (falls back to other on EPERM), other (default fifo)
  --prio N              SCHED_FIFO priority of server, client and cyclictest (default 50)
  --server-cpu N        CPU of the server, the hogs and cyclictest (default 1)
  --client-cpu N        CPU of the client (default 0)
  --window N            outstanding datagrams in the bandwidth phase (default 16)
  --size BYTES          datagram size (default 512)
  --cyclictest-interval US  (default 100)
  --no-cyclictest
  --rps                 private network namespace whose lo steers receive processing (RPS)
                        to the server CPU: the NET_RX softirq runs there, as a NIC's would (root)
  --out PATH            JSON lines (default out/bench/dispatch.jsonl)
  --list                print the mechanisms and exit
";

struct Opts {
    duration: f64,
    hogs: Vec<usize>,
    mechanisms: Vec<&'static dyn Mechanism>,
    sched: Vec<String>,
    prio: i32,
    server_cpu: usize,
    client_cpu: usize,
    window: usize,
    size: usize,
    cyclictest: bool,
    rps: bool,
    ct_interval_us: u64,
    out: PathBuf,
}

fn parse_args() -> Result<Opts, String> {
    let mut o = Opts {
        duration: 1.0,
        hogs: vec![0, 1, 2, 3, 4],
        mechanisms: mechanisms::ALL.to_vec(),
        sched: vec!["fifo".into()],
        prio: 50,
        server_cpu: 1,
        client_cpu: 0,
        window: 16,
        size: 512,
        cyclictest: true,
        rps: false,
        ct_interval_us: 100,
        out: PathBuf::from("out/bench/dispatch.jsonl"),
    };
    let mut args = std::env::args().skip(1);
    fn num<T: std::str::FromStr>(flag: &str, v: Option<String>) -> Result<T, String> {
        let v = v.ok_or(format!("{flag} needs a value"))?;
        v.parse().map_err(|_| format!("bad value for {flag}: {v}"))
    }
    fn list(v: &str) -> Vec<String> {
        v.split(',')
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
            .collect()
    }
    while let Some(a) = args.next() {
        match a.as_str() {
            "--duration" => o.duration = num(&a, args.next())?,
            "--hogs" => {
                let v: String = num(&a, args.next())?;
                o.hogs = list(&v)
                    .iter()
                    .map(|s| s.parse().map_err(|_| format!("bad hogs: {s}")))
                    .collect::<Result<_, _>>()?;
            }
            "--mechanisms" => {
                let v: String = num(&a, args.next())?;
                o.mechanisms = list(&v)
                    .iter()
                    .map(|s| {
                        mechanisms::by_name(s).ok_or(format!("unknown mechanism {s} (try --list)"))
                    })
                    .collect::<Result<_, _>>()?;
            }
            "--sched" => {
                let v: String = num(&a, args.next())?;
                o.sched = list(&v);
                if let Some(bad) = o.sched.iter().find(|s| *s != "fifo" && *s != "other") {
                    return Err(format!("--sched takes fifo and/or other, not {bad}"));
                }
            }
            "--prio" => o.prio = num(&a, args.next())?,
            "--server-cpu" => o.server_cpu = num(&a, args.next())?,
            "--client-cpu" => o.client_cpu = num(&a, args.next())?,
            "--window" => o.window = num(&a, args.next())?,
            "--size" => o.size = num(&a, args.next())?,
            "--cyclictest-interval" => o.ct_interval_us = num(&a, args.next())?,
            "--no-cyclictest" => o.cyclictest = false,
            "--rps" => o.rps = true,
            "--out" => o.out = PathBuf::from(num::<String>(&a, args.next())?),
            "--list" => {
                for m in mechanisms::ALL {
                    println!("{:10} {}", m.name(), m.how());
                }
                std::process::exit(0);
            }
            "-h" | "--help" => {
                print!("{USAGE}");
                std::process::exit(0);
            }
            _ => return Err(format!("unknown argument {a}\n{USAGE}")),
        }
    }
    if o.size < server::HDR || o.size > server::MAX_DGRAM {
        return Err(format!(
            "--size must be in {}..={}",
            server::HDR,
            server::MAX_DGRAM
        ));
    }
    if o.window == 0 || o.duration <= 0.0 {
        return Err("--window and --duration must be positive".into());
    }
    Ok(o)
}

/// CPU-bound background processes: busy loops pinned to `cpu`, SCHED_OTHER
/// (the parent sets SCHED_RESET_ON_FORK). Killed on drop.
struct Hogs(Vec<libc::pid_t>);

impl Hogs {
    fn start(n: usize, cpu: usize) -> io::Result<Hogs> {
        let mut hogs = Hogs(Vec::new());
        for _ in 0..n {
            hogs.0.push(sys::fork_child(|| {
                let _ = sys::pin_to_cpu(cpu);
                let mut x = 0u64;
                loop {
                    x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
                }
            })?);
        }
        Ok(hogs)
    }
}

impl Drop for Hogs {
    fn drop(&mut self) {
        for &pid in &self.0 {
            sys::kill_and_reap(pid);
        }
    }
}

/// The forked server: pin, set the policy, run the mechanism, send the
/// samples back as one JSON object on `result_fd`.
fn server_main(
    o: &Opts,
    mech: &dyn Mechanism,
    fifo: bool,
    fd: libc::c_int,
    ready_fd: libc::c_int,
    result_fd: libc::c_int,
) -> i32 {
    let report = |v: Value| {
        let _ = sys::write_all(result_fd, v.to_string().as_bytes());
    };
    if let Err(e) = sys::pin_to_cpu(o.server_cpu) {
        report(json!({"error": format!("sched_setaffinity: {e}")}));
        return 1;
    }
    let sched = match sys::set_sched(fifo, o.prio, false) {
        Ok(s) => s,
        Err(e) => {
            report(json!({"error": format!("sched_setscheduler: {e}")}));
            return 1;
        }
    };
    let mlock = unsafe { libc::mlockall(libc::MCL_CURRENT | libc::MCL_FUTURE) } == 0;
    if let Err(e) = sys::setsockopt_int(fd, libc::SOL_SOCKET, sys::SO_TIMESTAMPNS, 1) {
        report(json!({"error": format!("SO_TIMESTAMPNS: {e}")}));
        return 1;
    }
    // Latency phase: at most one datagram per few us for duration/2.
    let cap = ((o.duration * 0.5 * 1e6) as usize).clamp(1024, 4_000_000);
    let mut h = Handler::new(fd, cap);
    let mut ready = || {
        let _ = sys::write_all(ready_fd, b"r");
    };
    let res = mech.serve(fd, &mut h, &mut ready);
    report(json!({
        "error": res.err().map(|e| e.to_string()),
        "sched": sched.name(),
        "prio": sched.prio(),
        "mlock": mlock,
        "kernel_lat": h.kernel_lat,
        "send_lat": h.send_lat,
        "stream_datagrams": h.stream_datagrams,
        "stream_wakeups": h.stream_wakeups,
        "send_errors": h.send_errors,
    }));
    0
}

fn send_dgram(fd: libc::c_int, buf: &[u8]) {
    unsafe { libc::send(fd, buf.as_ptr() as *const libc::c_void, buf.len(), 0) };
}

/// Blocking recv with the socket's SO_RCVTIMEO; None on timeout.
fn recv_dgram(fd: libc::c_int, buf: &mut [u8]) -> Option<usize> {
    loop {
        let n = unsafe { libc::recv(fd, buf.as_mut_ptr() as *mut libc::c_void, buf.len(), 0) };
        if n >= 0 {
            return Some(n as usize);
        }
        match sys::last_err().raw_os_error() {
            Some(libc::EINTR) => continue,
            // ECONNREFUSED: an ICMP error from an earlier send; keep waiting.
            Some(libc::ECONNREFUSED) => continue,
            _ => return None,
        }
    }
}

struct StreamResult {
    received: u64,
    lost: u64,
    elapsed_ns: i64,
}

/// Figure 4: keep `window` datagrams outstanding for `dur_ns`, count echoes.
fn stream_phase(
    fd: libc::c_int,
    size: usize,
    window: usize,
    dur_ns: i64,
) -> io::Result<StreamResult> {
    sys::set_rcvtimeo(fd, 100_000_000)?;
    let mut tx = vec![0u8; size];
    let mut rx = vec![0u8; server::MAX_DGRAM];
    let (mut seq, mut outstanding, mut received, mut lost) = (0u64, 0usize, 0u64, 0u64);
    let start = sys::now_mono();
    let end = start + dur_ns;
    let mut now = start;
    while now < end {
        while outstanding < window {
            put_header(&mut tx, KIND_STREAM, seq, sys::now_mono());
            send_dgram(fd, &tx);
            seq += 1;
            outstanding += 1;
        }
        match recv_dgram(fd, &mut rx) {
            Some(n) if n >= server::HDR && get_header(&rx).0 == KIND_STREAM => {
                received += 1;
                outstanding -= 1;
            }
            Some(_) => {}
            None => {
                lost += outstanding as u64;
                outstanding = 0;
            }
        }
        now = sys::now_mono();
    }
    // Drain what is still in flight so that the latency phase starts clean.
    sys::set_rcvtimeo(fd, 20_000_000)?;
    while outstanding > 0 && recv_dgram(fd, &mut rx).is_some() {
        outstanding -= 1;
    }
    Ok(StreamResult {
        received,
        lost,
        elapsed_ns: now - start,
    })
}

/// Figures 5 and 6: one datagram at a time for `dur_ns`; RTT samples (ns).
fn latency_phase(fd: libc::c_int, size: usize, dur_ns: i64) -> io::Result<(Vec<i64>, u64)> {
    sys::set_rcvtimeo(fd, 100_000_000)?;
    let mut tx = vec![0u8; size];
    let mut rx = vec![0u8; server::MAX_DGRAM];
    let mut rtts = Vec::with_capacity(200_000);
    let mut lost = 0u64;
    let end = sys::now_mono() + dur_ns;
    let mut seq = 1u64 << 40;
    while sys::now_mono() < end {
        seq += 1;
        let t0 = sys::now_mono();
        put_header(&mut tx, KIND_LATENCY, seq, t0);
        send_dgram(fd, &tx);
        loop {
            match recv_dgram(fd, &mut rx) {
                Some(n) if n >= server::HDR => {
                    let (kind, s, _) = get_header(&rx);
                    if kind == KIND_LATENCY && s == seq {
                        rtts.push(sys::now_mono() - t0);
                        break;
                    }
                }
                Some(_) => {}
                None => {
                    lost += 1;
                    break;
                }
            }
        }
    }
    Ok((rtts, lost))
}

fn as_i64s(v: &Value) -> Vec<i64> {
    v.as_array()
        .map(|a| a.iter().filter_map(|x| x.as_i64()).collect())
        .unwrap_or_default()
}

/// One (mechanism, hogs) point.
fn run_point(o: &Opts, mech: &dyn Mechanism, fifo: bool) -> io::Result<Map<String, Value>> {
    let (sfd, saddr) = sys::udp_loopback()?;
    let (cfd, caddr) = sys::udp_loopback()?;
    sys::connect_to(sfd, &caddr)?;
    sys::connect_to(cfd, &saddr)?;
    let (ready_r, ready_w) = sys::pipe()?;
    let (res_r, res_w) = sys::pipe()?;
    let pid = sys::fork_child(|| {
        sys::close(cfd);
        sys::close(ready_r);
        sys::close(res_r);
        server_main(o, mech, fifo, sfd, ready_w, res_w)
    })?;
    sys::close(sfd);
    sys::close(ready_w);
    sys::close(res_w);
    let mut b = [0u8; 1];
    let ready = unsafe { libc::read(ready_r, b.as_mut_ptr() as *mut libc::c_void, 1) } == 1;
    sys::close(ready_r);

    let half = (o.duration * 0.5 * 1e9) as i64;
    let mut phases = None;
    if ready {
        let stream = stream_phase(cfd, o.size, o.window, half)?;
        let (rtts, lat_lost) = latency_phase(cfd, o.size, half)?;
        phases = Some((stream, rtts, lat_lost));
    }
    // Stop the server: resend STOP until it reports (or give up and kill it).
    let mut stop = vec![0u8; o.size];
    put_header(&mut stop, KIND_STOP, 0, 0);
    let mut reported = false;
    for _ in 0..20 {
        send_dgram(cfd, &stop);
        let mut p = libc::pollfd {
            fd: res_r,
            events: libc::POLLIN,
            revents: 0,
        };
        if unsafe { libc::poll(&mut p, 1, 250) } > 0 {
            reported = true;
            break;
        }
    }
    let raw = if reported {
        sys::read_to_end(res_r)?
    } else {
        Vec::new()
    };
    sys::close(res_r);
    sys::close(cfd);
    if !sys::wait_timeout(pid, 2_000_000_000) {
        sys::kill_and_reap(pid);
    }
    let srv: Value = serde_json::from_slice(&raw)
        .unwrap_or_else(|_| json!({"error": "server reported nothing"}));

    let mut out = Map::new();
    out.insert("mechanism".into(), json!(mech.name()));
    out.insert(
        "sched".into(),
        srv.get("sched").cloned().unwrap_or(Value::Null),
    );
    out.insert(
        "prio".into(),
        srv.get("prio").cloned().unwrap_or(Value::Null),
    );
    out.insert(
        "mlock".into(),
        srv.get("mlock").cloned().unwrap_or(Value::Null),
    );
    if let Some(e) = srv.get("error").filter(|e| !e.is_null()) {
        out.insert("error".into(), e.clone());
    }
    let Some((stream, rtts, lat_lost)) = phases else {
        out.entry("error")
            .or_insert(json!("server never became ready"));
        return Ok(out);
    };
    let secs = stream.elapsed_ns as f64 / 1e9;
    let dps = stream.received as f64 / secs;
    out.insert("bandwidth_dgrams_per_s".into(), json!(dps.round()));
    out.insert(
        "bandwidth_mb_per_s".into(),
        json!((dps * o.size as f64 / 1e4).round() / 100.0),
    );
    out.insert("stream_echoed".into(), json!(stream.received));
    out.insert("stream_lost".into(), json!(stream.lost));
    let dg = srv
        .get("stream_datagrams")
        .and_then(Value::as_u64)
        .unwrap_or(0);
    let wk = srv
        .get("stream_wakeups")
        .and_then(Value::as_u64)
        .unwrap_or(0);
    out.insert(
        "stream_datagrams_per_wakeup".into(),
        if wk > 0 {
            json!((dg as f64 / wk as f64 * 100.0).round() / 100.0)
        } else {
            Value::Null
        },
    );
    stats::insert(&mut out, "rtt", &rtts);
    out.insert("rtt_lost".into(), json!(lat_lost));
    let kernel = as_i64s(&srv["kernel_lat"]);
    let send = as_i64s(&srv["send_lat"]);
    let (src, primary) = if mech.kernel_timestamps() && !kernel.is_empty() {
        ("kernel", &kernel)
    } else {
        ("send", &send)
    };
    out.insert("dispatch_from".into(), json!(src));
    stats::insert(&mut out, "dispatch", primary);
    stats::insert(&mut out, "send_to_handler", &send);
    out.insert(
        "server_send_errors".into(),
        srv.get("send_errors").cloned().unwrap_or(Value::Null),
    );
    out.insert("how".into(), json!(mech.how()));
    Ok(out)
}

/// cyclictest on the server CPU for `duration`: its summary (min/avg/max,
/// us) and the p99 from its histogram.
fn cyclictest(o: &Opts, fifo: bool) -> Map<String, Value> {
    let mut out = Map::new();
    out.insert("mechanism".into(), json!("cyclictest"));
    let loops = ((o.duration * 1e6) as u64 / o.ct_interval_us).max(1);
    let hist_max = 100_000; // us; beyond that counts as overflow
    let mut cmd = Command::new("cyclictest");
    cmd.args([
        "-q",
        "-m",
        "-t1",
        "-a",
        &o.server_cpu.to_string(),
        "-i",
        &o.ct_interval_us.to_string(),
    ]);
    cmd.args(["-l", &loops.to_string(), "-h", &hist_max.to_string()]);
    if fifo {
        cmd.args(["--policy=fifo", "-p", &o.prio.to_string()]);
    } else {
        cmd.args(["--policy=other"]);
    }
    out.insert(
        "sched".into(),
        json!(if fifo { "SCHED_FIFO" } else { "SCHED_OTHER" }),
    );
    out.insert("prio".into(), json!(if fifo { o.prio } else { 0 }));
    out.insert("interval_us".into(), json!(o.ct_interval_us));
    let output = match cmd.output() {
        Ok(x) => x,
        Err(e) => {
            out.insert(
                "error".into(),
                json!(format!("cyclictest: {e} (Debian package rt-tests)")),
            );
            return out;
        }
    };
    let text = String::from_utf8_lossy(&output.stdout);
    let mut hist: Vec<(u64, u64)> = Vec::new();
    let mut overflows = 0u64;
    for line in text.lines() {
        let field = |name: &str| {
            line.strip_prefix(name)
                .and_then(|r| r.trim().parse::<f64>().ok())
        };
        if let Some(v) = field("# Min Latencies:") {
            out.insert("min_us".into(), json!(v));
        } else if let Some(v) = field("# Avg Latencies:") {
            out.insert("avg_us".into(), json!(v));
        } else if let Some(v) = field("# Max Latencies:") {
            out.insert("max_us".into(), json!(v));
        } else if let Some(v) = field("# Histogram Overflows:") {
            overflows = v as u64;
        } else if !line.starts_with('#') {
            let mut it = line.split_whitespace().map(|s| s.parse::<u64>());
            if let (Some(Ok(us)), Some(Ok(c)), None) = (it.next(), it.next(), it.next()) {
                hist.push((us, c));
            }
        }
    }
    let total: u64 = hist.iter().map(|h| h.1).sum::<u64>() + overflows;
    out.insert("cycles".into(), json!(total));
    out.insert("overflows".into(), json!(overflows));
    let rank = (total as f64 * 0.99).ceil() as u64;
    let mut acc = 0;
    let mut p99 = Value::Null;
    for (us, c) in &hist {
        acc += c;
        if total > 0 && acc >= rank {
            p99 = json!(*us as f64);
            break;
        }
    }
    out.insert("p99_us".into(), p99);
    if !output.status.success() || !out.contains_key("max_us") {
        out.insert(
            "error".into(),
            json!(format!(
                "cyclictest exited {}: {}",
                output.status,
                String::from_utf8_lossy(&output.stderr).trim()
            )),
        );
    }
    out
}

fn main() {
    let o = match parse_args() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(2);
        }
    };
    if let Some(dir) = o.out.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).expect("create output directory");
    }
    let mut file = std::fs::File::create(&o.out).expect("create output file");
    if o.rps {
        if let Err(e) = netns::private_loopback(o.server_cpu) {
            eprintln!("--rps: {e}");
            std::process::exit(2);
        }
    }
    sys::pin_to_cpu(o.client_cpu).expect("pin the client");
    // The client gets SCHED_FIFO whenever permitted, whatever the server's
    // policy: it has its own CPU and should not add noise of its own. Its
    // children (hogs, servers, cyclictest) start as SCHED_OTHER.
    let client_sched = sys::set_sched(true, o.prio, true).expect("sched_setscheduler");
    let fifo_ok = client_sched != sys::Sched::Other;
    unsafe { libc::mlockall(libc::MCL_CURRENT | libc::MCL_FUTURE) };
    let kernel = sys::kernel_release();
    let mut emit = |mut m: Map<String, Value>, policy: &str, hogs: usize| {
        let mut line = Map::new();
        line.insert("bench".into(), json!("dispatch"));
        line.insert(
            "mechanism".into(),
            m.shift_remove("mechanism").unwrap_or(Value::Null),
        );
        line.insert("hogs".into(), json!(hogs));
        line.insert("sched_requested".into(), json!(policy));
        line.extend(m);
        line.insert("client_sched".into(), json!(client_sched.name()));
        line.insert("server_cpu".into(), json!(o.server_cpu));
        line.insert("hog_cpu".into(), json!(o.server_cpu));
        line.insert("client_cpu".into(), json!(o.client_cpu));
        line.insert("duration_s".into(), json!(o.duration));
        line.insert("size".into(), json!(o.size));
        line.insert("window".into(), json!(o.window));
        line.insert("kernel".into(), json!(kernel));
        line.insert("rps".into(), json!(o.rps));
        let s = Value::Object(line).to_string();
        println!("{s}");
        let _ = io::stdout().flush();
        writeln!(file, "{s}").expect("write output");
    };
    for policy in &o.sched {
        let fifo = policy == "fifo";
        for &n in &o.hogs {
            let _hogs = Hogs::start(n, o.server_cpu).expect("fork hogs");
            std::thread::sleep(std::time::Duration::from_millis(100));
            if o.cyclictest {
                eprintln!("# dispatch: {policy} hogs={n} cyclictest");
                emit(cyclictest(&o, fifo && fifo_ok), policy, n);
            }
            for &m in &o.mechanisms {
                eprintln!("# dispatch: {policy} hogs={n} {}", m.name());
                match run_point(&o, m, fifo) {
                    Ok(r) => emit(r, policy, n),
                    Err(e) => {
                        let mut r = Map::new();
                        r.insert("mechanism".into(), json!(m.name()));
                        r.insert("error".into(), json!(e.to_string()));
                        emit(r, policy, n);
                    }
                }
            }
        }
    }
}
