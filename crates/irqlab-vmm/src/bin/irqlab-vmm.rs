//! `irqlab-vmm`: command-line front end of the VMM.
//!
//! * `irqlab-vmm probe` -- which KVM features work here (JSON lines);
//! * `irqlab-vmm exits` -- the guest times 10,000 port-I/O exit round trips;
//! * `irqlab-vmm model FILE.yaml [--seconds S] [--trace FILE]` -- a hypervisor model of
//!   `irqlab-model` on the VMM (see `irqlab_vmm::model`), JSON;
//! * `irqlab-vmm rtt --scheme baseline|baseline_1ms|vint [--seconds S]` --
//!   VINT Figure 10's UDP round trips on this VMM (JSON);
//! * `irqlab-vmm storm --scheme baseline|vint [--util PCT] [--no-storm]
//!   [--seconds S] [--trace FILE] [--summary]` -- VINT Figure 12's decoder under an
//!   interrupt storm on this VMM (JSON; `--summary`: one line);
//! * `irqlab-vmm throughput --scheme baseline|baseline_1ms|vint [--util PCT]
//!   [--seconds S]` -- VINT Figure 11's UDP stream through the guest's echo,
//!   one 1500-byte datagram in flight (JSON);
//! * `irqlab-vmm cost --scheme baseline|vint [--events N]` -- VINT Table
//!   III's analogue: per-injection stage times and CPU per event (JSON);
//! * `irqlab-vmm echo [--events N] [--budget US --period US] [--dsr-cost US]
//!   [--cpu C] [--busy] [--vint T_I_US C_I_US] [--interval US] [--irqfd] [--split] [--trace FILE]` -- boot the
//!   guest with a UDP NIC, send N datagrams one at a time (at least
//!   `--interval` apart), print the report (JSON) with every
//!   stage's latency and the servers' CPU time (`--summary`: one line). `--busy`: the guest computes in the background; `--vint`:
//!   the NIC's interrupt is managed by vINT (pseudo-VCPU with `T_p = T_i`,
//!   Eq. 1 budget, sporadic, rank 1); `--irqfd`: inject through irqfd
//!   instead of `KVM_SIGNAL_MSI`; `--split`: the split irqchip (the guest's
//!   EOIs exit to the VMM);
//! * `--trace FILE` (echo, model): the run's Perfetto trace (`irqlab_vmm::trace`;
//!   `.json`: trace-event JSON, else Perfetto protobuf).
//!
//! Design principle: thin; every behaviour lives in the library.

use std::net::UdpSocket;
use std::process::ExitCode;
use std::time::Duration;

use irqlab_core::Nanos;
use irqlab_vmm::{DeviceConfig, DeviceKind, PseudoVcpu, Replenish, VcpuServer, Vmm, VmmConfig};

fn arg(args: &[String], name: &str) -> Result<Option<u64>, String> {
    match args.iter().position(|a| a == name) {
        None => Ok(None),
        Some(i) => {
            let v = args
                .get(i + 1)
                .ok_or_else(|| format!("{name}: a value is required"))?;
            v.parse()
                .map(Some)
                .map_err(|_| format!("{name}: {v:?} is not a non-negative integer"))
        }
    }
}

/// Start the VMM and wait for the guest to boot.
/// `--trace FILE`: write the run's Perfetto trace (`.json`: Chrome /
/// Perfetto JSON; anything else: Perfetto protobuf) and say so on stderr.
fn trace(args: &[String], r: &irqlab_vmm::VmmReport) -> Result<(), String> {
    let Some(i) = args.iter().position(|a| a == "--trace") else {
        return Ok(());
    };
    let path = args.get(i + 1).ok_or("--trace FILE")?;
    let format = if path.ends_with(".json") {
        irqlab_sim::TraceFormat::Json
    } else {
        irqlab_sim::TraceFormat::Perfetto
    };
    let f = std::fs::File::create(path).map_err(|e| format!("--trace {path}: {e}"))?;
    let mut w = std::io::BufWriter::new(f);
    let cut = irqlab_vmm::trace::write(r, &mut w, format, 2_000_000)
        .map_err(|e| format!("--trace {path}: {e}"))?;
    eprintln!(
        "trace written to {path}{}",
        if cut {
            " (cut at 2,000,000 events)"
        } else {
            ""
        }
    );
    Ok(())
}

fn boot(cfg: VmmConfig) -> Result<Vmm, String> {
    let vmm = Vmm::start(cfg).map_err(|e| e.to_string())?;
    if !vmm.wait_for(Duration::from_secs(10), |v| v.ready()) {
        let s = vmm.stop();
        return Err(format!(
            "guest did not boot: {}",
            s.error
                .map_or("no error reported".into(), |e| e.to_string())
        ));
    }
    Ok(vmm)
}

fn echo(args: &[String]) -> Result<(), String> {
    let n = arg(args, "--events")?.unwrap_or(1000);
    let vint = match args.iter().position(|a| a == "--vint") {
        None => None,
        Some(i) => {
            let num = |k: usize| -> Result<u64, String> {
                let v = args.get(i + k).ok_or("--vint T_I_US C_I_US")?;
                v.parse()
                    .map_err(|_| format!("--vint: {v:?} is not a non-negative integer"))
            };
            let (t_i, c_i) = (Nanos::from_us(num(1)?), Nanos::from_us(num(2)?));
            Some(PseudoVcpu {
                budget: PseudoVcpu::eq1_budget(c_i, t_i, t_i),
                period: t_i,
                min_interarrival: t_i,
                policy: Replenish::Sporadic,
                rank: 1,
            })
        }
    };
    let busy = if args.iter().any(|a| a == "--busy") {
        irqlab_vmm::abi::FLAG_BUSY
    } else {
        0
    };
    let mut cfg = VmmConfig {
        devices: vec![DeviceConfig {
            name: "nic".into(),
            kind: DeviceKind::Udp {
                bind: "127.0.0.1:0".parse().map_err(|e| format!("{e}"))?,
            },
        }],
        dsr_cost: Nanos::from_us(arg(args, "--dsr-cost")?.unwrap_or(0)),
        flags: busy,
        vint: vec![vint],
        injection: if args.iter().any(|a| a == "--irqfd") {
            irqlab_vmm::Injection::Irqfd
        } else {
            irqlab_vmm::Injection::Msi
        },
        irqchip: if args.iter().any(|a| a == "--split") {
            irqlab_vmm::Irqchip::Split
        } else {
            irqlab_vmm::Irqchip::Kernel
        },
        ..Default::default()
    };
    if let Some(c) = arg(args, "--cpu")? {
        cfg.rt.cpus = vec![c as usize];
    }
    match (arg(args, "--budget")?, arg(args, "--period")?) {
        (Some(b), Some(p)) => {
            cfg.vcpu = VcpuServer::Sporadic {
                budget: Nanos::from_us(b),
                period: Nanos::from_us(p),
            }
        }
        (None, None) => {}
        _ => return Err("--budget and --period go together".into()),
    }
    let vmm = boot(cfg)?;
    let addr = vmm.device_addr(0).ok_or("no NIC address")?;
    let c = UdpSocket::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
    c.set_read_timeout(Some(Duration::from_secs(2)))
        .map_err(|e| e.to_string())?;
    let mut buf = [0u8; 64];
    let mut rtt = irqlab_core::LatencyRecorder::new(1024, None);
    let interval = Duration::from_micros(arg(args, "--interval")?.unwrap_or(0));
    for i in 0..n {
        let t = std::time::Instant::now();
        let pace = t + interval;
        c.send_to(&i.to_le_bytes(), addr)
            .map_err(|e| e.to_string())?;
        c.recv_from(&mut buf)
            .map_err(|e| format!("reply {i}: {e}"))?;
        rtt.record(Nanos(t.elapsed().as_nanos() as u64));
        if let Some(rest) = pace.checked_duration_since(std::time::Instant::now()) {
            std::thread::sleep(rest);
        }
    }
    let s = vmm.stop();
    trace(args, &s.report)?;
    if args.iter().any(|a| a == "--summary") {
        let d = &s.report.devices[0];
        let us = |v: Option<u64>| v.map_or("-".to_string(), |v| format!("{:.0}", v as f64 / 1e3));
        let r = irqlab_rt::report::Latency::of(&rtt);
        println!(
            "vINT {:<3} | round trip p50 {:>6} us p99 {:>6} us | event -> guest ISR p50 {:>6} us p99 {:>6} us max {:>6} us | received {} injected {} completed {} | {}",
            if vint.is_some() { "on" } else { "off" },
            us(r.p50),
            us(r.p99),
            us(d.to_isr.p50),
            us(d.to_isr.p99),
            us(d.to_isr.max),
            d.received,
            d.injected,
            d.completed,
            s.error.map_or("ok".to_string(), |e| e.to_string()),
        );
        return Ok(());
    }
    let mut j = serde_json::to_value(&s.report.devices).map_err(|e| e.to_string())?;
    strip_histograms(&mut j);
    let out = serde_json::json!({
        "rtt_client": irqlab_rt::report::Latency { histogram: vec![], ..irqlab_rt::report::Latency::of(&rtt) },
        "devices": j,
        "exits": s.report.exits,
        "servers": s.report.runtime.as_ref().map(|r| r.servers.iter()
            .map(|v| serde_json::json!({"name": v.name, "cpu_time_ns": v.cpu_time_ns, "share": v.share}))
            .collect::<Vec<_>>()),
        "vcpu_parks": s.report.vcpu_parks.len(),
        "error": s.error.map(|e| e.to_string()),
    });
    println!("{out}");
    Ok(())
}

/// VINT §VII-C / Figure 10 on this VMM: UDP round trips to a busy guest
/// (the busy loop of the case study; no MPlayer, the guest has no task
/// scheduler yet) whose NIC DSR costs 30 us, requests every 1 to 1.5 ms
/// (uniform), under one of the paper's schemes: Baseline (deferrable
/// 4 ms / 10 ms), Baseline_1ms (0.4 ms / 1 ms) or vINT (2 ms / 10 ms plus a
/// deferrable pseudo-VCPU of 2 ms / 10 ms, the interrupt declared at 100 us
/// minimum inter-arrival: a counter of 100).
fn rtt(args: &[String]) -> Result<(), String> {
    let scheme = args
        .iter()
        .position(|a| a == "--scheme")
        .and_then(|i| args.get(i + 1))
        .ok_or("--scheme baseline|baseline_1ms|vint is required")?;
    let ms = Nanos::from_ms;
    let (budget, period, vint) = match scheme.as_str() {
        "baseline" => (ms(4), ms(10), false),
        "baseline_1ms" => (Nanos::from_us(400), ms(1), false),
        "vint" => (ms(2), ms(10), true),
        s => {
            return Err(format!(
                "--scheme: {s:?} is not baseline, baseline_1ms or vint"
            ))
        }
    };
    let secs = arg(args, "--seconds")?.unwrap_or(5);
    let pseudo = PseudoVcpu {
        budget: ms(2),
        period: ms(10),
        min_interarrival: Nanos::from_us(100),
        policy: Replenish::Deferrable,
        rank: 1,
    };
    let cfg = VmmConfig {
        vcpu: VcpuServer::Deferrable { budget, period },
        flags: irqlab_vmm::abi::FLAG_BUSY,
        dsr_cost: Nanos::from_us(30),
        devices: vec![DeviceConfig {
            name: "nic".into(),
            kind: DeviceKind::Udp {
                bind: "127.0.0.1:0".parse().map_err(|e| format!("{e}"))?,
            },
        }],
        vint: vec![vint.then_some(pseudo)],
        ..Default::default()
    };
    let vmm = boot(cfg)?;
    pin_client();
    // The requests' schedule is the client's: at normal priority on a
    // loaded CPU its wake-ups come milliseconds late and the requests
    // leave in bursts, which queue in the guest and count against every
    // scheme (the paper's Netperf client has a machine of its own). Above
    // normal load, as `throughput`'s client; the receiver inherits it.
    let _ = irqlab_rt::sys::set_fifo(0, 50);
    let addr = vmm.device_addr(0).ok_or("no NIC address")?;
    // Open loop, as the simulator's model: requests leave on their
    // schedule whether or not earlier replies came back; a receiver thread
    // matches replies by sequence number.
    let c = UdpSocket::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
    c.set_read_timeout(Some(Duration::from_millis(50)))
        .map_err(|e| e.to_string())?;
    let rx = c.try_clone().map_err(|e| e.to_string())?;
    let t0 = std::time::Instant::now();
    let sent: std::sync::Arc<std::sync::Mutex<Vec<Option<Duration>>>> = Default::default();
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let receiver = {
        let (sent, done) = (sent.clone(), done.clone());
        std::thread::spawn(move || {
            let mut buf = [0u8; 64];
            let mut samples = Vec::new();
            while !done.load(std::sync::atomic::Ordering::SeqCst) {
                let Ok((8, _)) = rx.recv_from(&mut buf) else {
                    continue;
                };
                let now = t0.elapsed();
                let seq = u64::from_le_bytes(buf[..8].try_into().unwrap_or_default()) as usize;
                let at = sent
                    .lock()
                    .map(|v| v.get(seq).copied().flatten())
                    .ok()
                    .flatten();
                if let Some(at) = at {
                    samples.push((now - at).as_nanos() as u64);
                }
            }
            samples
        })
    };
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    let mut next = Duration::ZERO;
    let mut i = 0u64;
    while next < Duration::from_secs(secs) {
        if let Some(rest) = next.checked_sub(t0.elapsed()) {
            std::thread::sleep(rest);
        }
        if let Ok(mut v) = sent.lock() {
            v.push(Some(t0.elapsed()));
        }
        c.send_to(&i.to_le_bytes(), addr)
            .map_err(|e| e.to_string())?;
        i += 1;
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        next += Duration::from_micros(1000 + seed % 501);
    }
    // Let the last replies come back (a VCPU waits at most one period).
    std::thread::sleep(Duration::from_millis(100));
    done.store(true, std::sync::atomic::Ordering::SeqCst);
    let mut samples = receiver.join().map_err(|_| "receiver thread panicked")?;
    let lost = i - samples.len() as u64;
    let s = vmm.stop();
    if let Some(e) = s.error {
        return Err(e.to_string());
    }
    samples.sort_unstable();
    let n = samples.len().max(1);
    let within = |x: u64| 100.0 * samples.partition_point(|&v| v <= x) as f64 / n as f64;
    let q = |p: f64| samples.get(((n as f64 * p) as usize).min(n - 1)).copied();
    let cdf: Vec<(f64, f64)> = (1..=100)
        .filter_map(|k| q(k as f64 / 100.0).map(|v| (v as f64 / 1000.0, k as f64)))
        .collect();
    let d = &s.report.devices[0];
    // The VMM's own view, as the simulator models a round trip: from the
    // request's arrival in the top half to the echo leaving, plus 30 us on
    // the wire (no client scheduling in it).
    const WIRE: u64 = 30_000;
    let mut host: Vec<u64> = s
        .report
        .events
        .iter()
        .map(|e| e.done_ns.saturating_sub(e.arrival_ns) + WIRE)
        .collect();
    host.sort_unstable();
    let hn = host.len().max(1);
    let h_within = |x: u64| 100.0 * host.partition_point(|&v| v <= x) as f64 / hn as f64;
    let hq = |p: f64| host.get(((hn as f64 * p) as usize).min(hn - 1)).copied();
    let stall = s.report.host_stall_ns();
    println!(
        "{}",
        serde_json::json!({
            "scheme": scheme, "requests": i, "replies": samples.len(), "lost": lost,
            "vmm_within_200us": h_within(200_000), "vmm_within_500us": h_within(500_000),
            "vmm_p50_ns": hq(0.5), "vmm_p95_ns": hq(0.95),
            "host_stall_ns": stall,
            "within_200us": within(200_000), "within_500us": within(500_000),
            "p50_ns": q(0.5), "p95_ns": q(0.95), "p99_ns": q(0.99), "max_ns": samples.last(),
            "cdf_us_pct": cdf,
            "received": d.received, "injected": d.injected, "dropped": d.dropped,
            "pending": d.pending, "completed": d.completed,
            "handling_p50_ns": d.to_dsr_end.p50, "handling_p99_ns": d.to_dsr_end.p99,
            "pseudo_slices": s.report.exits.pseudo_slices,
            "servers": s.report.runtime.as_ref().map(|r| r.servers.iter()
                .map(|v| serde_json::json!({"name": v.name, "share": v.share}))
                .collect::<Vec<_>>()),
        })
    );
    Ok(())
}

/// VINT §VII-C / Figure 12 on this VMM (`irqlab_vmm::case::storm`).
fn storm(args: &[String]) -> Result<(), String> {
    let scheme = args
        .iter()
        .position(|a| a == "--scheme")
        .and_then(|i| args.get(i + 1))
        .ok_or("--scheme baseline|vint is required")?;
    let vint = match scheme.as_str() {
        "baseline" => false,
        "vint" => true,
        s => return Err(format!("--scheme: {s:?} is not baseline or vint")),
    };
    let util = arg(args, "--util")?.unwrap_or(80);
    let with_storm = !args.iter().any(|a| a == "--no-storm");
    let secs = arg(args, "--seconds")?.unwrap_or(5);
    if !(1..=600).contains(&secs) {
        return Err(format!("--seconds: {secs} must be 1..600"));
    }
    let mut cfg = irqlab_vmm::case::storm(util, vint, with_storm).map_err(|e| e.to_string())?;
    cfg.reraise = !args.iter().any(|a| a == "--no-reraise");
    let wall = std::time::Instant::now();
    let vmm = boot(cfg)?;
    std::thread::sleep(Duration::from_secs(secs));
    let s = vmm.stop();
    // Every injection happened within this wall time (the vINT counter's
    // boundaries are counted over it).
    let wall_ns = wall.elapsed().as_nanos() as u64;
    if let Some(e) = s.error {
        return Err(e.to_string());
    }
    trace(args, &s.report)?;
    let g = &s.report.guest;
    let dec = g.tasks.first().ok_or("no decoder task in the report")?;
    let seconds = s.report.duration_ns as f64 / 1e9;
    if args.iter().any(|a| a == "--summary") {
        let storm = s
            .report
            .devices
            .first()
            .map_or("no storm".to_string(), |d| {
                format!("storm: {} of {} events injected", d.injected, d.received)
            });
        println!(
            "VCPU {util} % {:<8} | decoder {:>5.1} fps (29.97 released) | {storm}",
            if vint { "+ vINT" } else { "Baseline" },
            dec.completed as f64 / seconds,
        );
        return Ok(());
    }
    let mut devices = serde_json::to_value(&s.report.devices).map_err(|e| e.to_string())?;
    strip_histograms(&mut devices);
    println!(
        "{}",
        serde_json::json!({
            "scheme": scheme, "util": util, "storm": with_storm, "seconds": seconds,
            "wall_ns": wall_ns,
            "fps": dec.completed as f64 / seconds,
            "frames_released": dec.releases, "frames_completed": dec.completed,
            "frame_response_p50_ns": dec.response.p50, "frame_response_max_ns": dec.response.max,
            "timer_interrupts": g.timer_interrupts, "work_loop_ns": g.work_loop_ns,
            "devices": devices,
            "pseudo_slices": s.report.exits.pseudo_slices,
            "reraises": s.report.exits.reraises,
            "host_stall_ns": s.report.host_stall_ns(),
            "servers": s.report.runtime.as_ref().map(|r| r.servers.iter()
                .map(|v| serde_json::json!({"name": v.name, "budget_ns": v.budget_ns,
                    "period_ns": v.period_ns, "cpu_time_ns": v.cpu_time_ns, "share": v.share}))
                .collect::<Vec<_>>()),
        })
    );
    Ok(())
}

/// Run a hypervisor model (`irqlab-model` YAML) on the VMM: the model's
/// physical interrupts become UDP senders (open loop, `min_interarrival`
/// plus a uniform share of `jitter`), for the model's duration or
/// `--seconds`.
fn model(args: &[String]) -> Result<(), String> {
    let path = args.first().ok_or("model FILE.yaml [--seconds S]")?;
    let text = std::fs::read_to_string(path).map_err(|e| format!("{path}: {e}"))?;
    let (m, warnings) = irqlab_model::load_str(&text).map_err(|e| format!("{path}: {e}"))?;
    let base = std::path::Path::new(path)
        .parent()
        .unwrap_or(std::path::Path::new(""));
    let run = irqlab_vmm::model::from_model(&m, base).map_err(|e| format!("{path}: {e}"))?;
    let dur = match arg(args, "--seconds")? {
        Some(s) => Duration::from_secs(s),
        None => Duration::from_nanos(run.duration.0),
    };
    let vmm = boot(run.cfg)?;
    let t0 = std::time::Instant::now();
    let mut senders = Vec::new();
    for (k, src) in run.sources.iter().enumerate() {
        let addr = vmm.device_addr(src.device).ok_or("no device address")?;
        let src = src.clone();
        let sock = UdpSocket::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
        senders.push(std::thread::spawn(move || {
            let mut seed = 0x9e37_79b9_7f4a_7c15u64 ^ k as u64;
            let mut next = Duration::from_nanos(src.start.0);
            let mut n = 0u64;
            while next < dur {
                if let Some(rest) = next.checked_sub(t0.elapsed()) {
                    std::thread::sleep(rest);
                }
                let _ = sock.send_to(&n.to_le_bytes(), addr);
                n += 1;
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                let jitter = if src.jitter.0 > 0 {
                    seed % (src.jitter.0 + 1)
                } else {
                    0
                };
                next += Duration::from_nanos(src.min_interarrival.0 + jitter);
            }
            n
        }));
    }
    let sent: Vec<u64> = senders.into_iter().map(|h| h.join().unwrap_or(0)).collect();
    std::thread::sleep(Duration::from_millis(100));
    let s = vmm.stop();
    trace(args, &s.report)?;
    // Histograms kept: `irqlab vmm --out` writes them as the simulator's
    // `histogram_ns` (CDFs in `irqlab report`).
    let devices = serde_json::to_value(&s.report.devices).map_err(|e| e.to_string())?;
    let tasks = serde_json::to_value(&s.report.guest.tasks).map_err(|e| e.to_string())?;
    let stall = s.report.host_stall_ns();
    println!(
        "{}",
        serde_json::json!({
            "model": path, "tasks": tasks, "warnings": warnings, "seconds": dur.as_secs_f64(),
            "sources": run.sources.iter().zip(&sent).map(|(src, n)| serde_json::json!({
                "physical": src.name, "device": src.device, "sent": n})).collect::<Vec<_>>(),
            "devices": devices,
            "servers": s.report.runtime.as_ref().map(|r| r.servers.iter()
                .map(|v| serde_json::json!({"name": v.name, "kind": v.kind,
                    "budget_ns": v.budget_ns, "period_ns": v.period_ns, "share": v.share}))
                .collect::<Vec<_>>()),
            "vcpu_parks": s.report.vcpu_parks.len(),
            "host_stall_ns": stall,
            "error": s.error.map(|e| e.to_string()),
        })
    );
    Ok(())
}

/// The guest times 10,000 port-I/O exits (an unbounded VCPU).
fn exits() -> Result<(), String> {
    let vmm = Vmm::start(VmmConfig {
        flags: irqlab_vmm::abi::FLAG_PING,
        ..Default::default()
    })
    .map_err(|e| e.to_string())?;
    let ok = vmm.wait_for(Duration::from_secs(20), |v| v.ping_done());
    let s = vmm.stop();
    if let Some(e) = s.error {
        return Err(e.to_string());
    }
    if !ok {
        return Err("the guest did not finish its exit measurement".into());
    }
    println!(
        "{}",
        serde_json::json!({ "exit_round_trip_ns": s.report.exit_round_trip_ns,
                            "rdtsc_ns": s.report.rdtsc_ns,
                            "exits": s.report.exits.io })
    );
    Ok(())
}

fn scheme_arg(args: &[String]) -> Result<&str, String> {
    args.iter()
        .position(|a| a == "--scheme")
        .and_then(|i| args.get(i + 1))
        .map(String::as_str)
        .ok_or_else(|| "--scheme is required".to_string())
}

/// Pin the calling thread (a client) away from the VMM's CPU (the last).
fn pin_client() {
    let cpus = irqlab_rt::sys::allowed_cpus();
    if cpus.len() > 1 {
        let _ = irqlab_rt::sys::pin(0, cpus[0]);
    }
}

/// p50 / p99 / max / mean of a sample, ns.
fn stats(mut v: Vec<u64>) -> serde_json::Value {
    v.sort_unstable();
    let n = v.len();
    let q = |p: f64| {
        v.get(((n as f64 * p) as usize).min(n.saturating_sub(1)))
            .copied()
    };
    let mean = v.iter().sum::<u64>() as f64 / n.max(1) as f64;
    serde_json::json!({"n": n, "p50": q(0.5), "p99": q(0.99), "max": v.last(),
                       "mean": (n > 0).then_some(mean)})
}

fn servers_json(r: &irqlab_vmm::VmmReport) -> serde_json::Value {
    serde_json::json!(r.runtime.as_ref().map(|r| r
        .servers
        .iter()
        .map(
            |v| serde_json::json!({"name": v.name, "budget_ns": v.budget_ns,
            "period_ns": v.period_ns, "cpu_time_ns": v.cpu_time_ns, "share": v.share})
        )
        .collect::<Vec<_>>()))
}

/// VINT §VII-C / Figure 11 on this VMM (`irqlab_vmm::case::throughput`): a
/// client on another CPU sends 1500-byte datagrams with one in flight (the
/// simulator's model of TCP: a window of one), the next 20 us after the
/// echo of the previous came back (a reply missing for 50 ms is counted
/// and the stream goes on).
fn throughput(args: &[String]) -> Result<(), String> {
    use irqlab_vmm::case;
    let scheme = case::Scheme::parse(scheme_arg(args)?).map_err(|e| e.to_string())?;
    let util = arg(args, "--util")?.unwrap_or(40);
    let secs = arg(args, "--seconds")?.unwrap_or(5);
    if !(1..=600).contains(&secs) {
        return Err(format!("--seconds: {secs} must be 1..600"));
    }
    let cfg = case::throughput(util, scheme).map_err(|e| e.to_string())?;
    let vmm = boot(cfg)?;
    pin_client();
    // The stream's pace is the client's: at normal priority on a shared
    // CPU its wake-ups, not the VCPU's budget, set the throughput.
    let _ = irqlab_rt::sys::set_fifo(0, 50);
    let addr = vmm.device_addr(0).ok_or("no NIC address")?;
    let c = UdpSocket::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
    c.set_read_timeout(Some(Duration::from_millis(50)))
        .map_err(|e| e.to_string())?;
    let mut out = [0u8; case::SEGMENT];
    let mut buf = [0u8; 2048];
    let (mut sent, mut replies, mut timeouts) = (0u64, 0u64, 0u64);
    let t0 = std::time::Instant::now();
    let end = t0 + Duration::from_secs(secs);
    while std::time::Instant::now() < end {
        out[..8].copy_from_slice(&sent.to_le_bytes());
        c.send_to(&out, addr).map_err(|e| e.to_string())?;
        loop {
            match c.recv_from(&mut buf) {
                Ok((n, _)) if n >= 8 && buf[..8] == out[..8] => {
                    replies += 1;
                    break;
                }
                Ok(_) => continue, // a late echo of an earlier datagram
                Err(_) => {
                    timeouts += 1;
                    break;
                }
            }
        }
        sent += 1;
        let t = std::time::Instant::now();
        while t.elapsed() < Duration::from_micros(20) {
            std::hint::spin_loop();
        }
    }
    let wall = t0.elapsed().as_secs_f64();
    let s = vmm.stop();
    if let Some(e) = s.error {
        return Err(e.to_string());
    }
    let d = &s.report.devices[0];
    let cpu: u64 = s
        .report
        .runtime
        .as_ref()
        .map_or(0, |r| r.servers.iter().map(|v| v.cpu_time_ns).sum());
    // From the end of a datagram's DSR to the next datagram's arrival in
    // the top half (the VMM's echo, loopback, the client and its 20 us):
    // the simulator's ping-flood `rtt`.
    let ev = &s.report.events;
    let gap = stats(
        ev.windows(2)
            .filter(|w| w[1].seq == w[0].seq + 1 && w[0].dsr_end_ns > 0)
            .map(|w| w[1].arrival_ns.saturating_sub(w[0].dsr_end_ns))
            .collect(),
    );
    println!(
        "{}",
        serde_json::json!({
            "scheme": scheme_arg(args)?, "util": util, "seconds": wall,
            "sent": sent, "replies": replies, "timeouts": timeouts,
            "mbps": replies as f64 * case::SEGMENT as f64 * 8.0 / wall / 1e6,
            "cpu_per_packet_ns": cpu as f64 / d.completed.max(1) as f64,
            "dsr_end_to_next_arrival_ns": gap,
            "handling_ns": stats(ev.iter().filter(|e| e.dsr_end_ns >= e.arrival_ns)
                .map(|e| e.dsr_end_ns - e.arrival_ns).collect()),
            "received": d.received, "injected": d.injected, "dropped": d.dropped,
            "pending": d.pending, "completed": d.completed, "in_guest": d.in_guest,
            "pseudo_slices": s.report.exits.pseudo_slices,
            "reraises": s.report.exits.reraises,
            "host_stall_ns": s.report.host_stall_ns(),
            "servers": servers_json(&s.report),
        })
    );
    Ok(())
}

/// VINT Table III's analogue on this VMM (`irqlab_vmm::case::cost`): N
/// datagrams one at a time, 2 ms apart, to an idle guest; per injection
/// the host's stage times (arrival -> injection ioctl -> guest ISR entry
/// -> DSR start; DSR end -> the VMM's completion), with vINT the pseudo-VCPU
/// thread's wake-up (injection -> it asks for the VCPU) and handoff (asks
/// -> holds it); CPU per event of the servers, the top half and the
/// supervisor.
fn cost(args: &[String]) -> Result<(), String> {
    let vint = match scheme_arg(args)? {
        "baseline" => false,
        "vint" => true,
        s => return Err(format!("--scheme: {s:?} is not baseline or vint")),
    };
    let n = arg(args, "--events")?.unwrap_or(1000);
    if !(10..=100_000).contains(&n) {
        return Err(format!("--events: {n} must be 10..100000"));
    }
    let vmm = boot(irqlab_vmm::case::cost(vint))?;
    pin_client();
    let addr = vmm.device_addr(0).ok_or("no NIC address")?;
    let c = UdpSocket::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
    c.set_read_timeout(Some(Duration::from_millis(100)))
        .map_err(|e| e.to_string())?;
    let mut buf = [0u8; 64];
    let mut lost = 0u64;
    for i in 0..n {
        let pace = std::time::Instant::now() + Duration::from_millis(2);
        c.send_to(&i.to_le_bytes(), addr)
            .map_err(|e| e.to_string())?;
        if c.recv_from(&mut buf).is_err() {
            lost += 1;
        }
        if let Some(rest) = pace.checked_duration_since(std::time::Instant::now()) {
            std::thread::sleep(rest);
        }
    }
    std::thread::sleep(Duration::from_millis(50));
    let s = vmm.stop();
    if let Some(e) = s.error {
        return Err(e.to_string());
    }
    let r = &s.report;
    let ev = &r.events;
    let gap = |f: fn(&irqlab_vmm::EventRecord) -> (u64, u64)| {
        stats(
            ev.iter()
                .map(f)
                .filter(|&(a, b)| a > 0 && b >= a)
                .map(|(a, b)| b - a)
                .collect(),
        )
    };
    // Each event's pseudo-VCPU slice: the first handoff asked at or after
    // its injection and before the next event's.
    let (mut wake, mut handoff) = (Vec::new(), Vec::new());
    let h = &r.pseudo_handoffs;
    for (k, e) in ev.iter().enumerate() {
        let next = ev.get(k + 1).map_or(u64::MAX, |x| x.inject_ns);
        let i = h.partition_point(|&(a, _)| a < e.inject_ns);
        if let Some(&(a, g)) = h.get(i).filter(|&&(a, g)| a < next && g >= a) {
            wake.push(a - e.inject_ns);
            handoff.push(g - a);
        }
    }
    let d = &r.devices[0];
    let done = d.completed.max(1) as f64;
    let rt = r.runtime.as_ref();
    let cpu: u64 = rt.map_or(0, |r| r.servers.iter().map(|v| v.cpu_time_ns).sum());
    let (sup_cpu, passes) = rt.map_or((0, 0), |r| {
        r.supervisors
            .iter()
            .fold((0, 0), |(c, p), s| (c + s.cpu_time_ns, p + s.passes))
    });
    println!(
        "{}",
        serde_json::json!({
            "scheme": scheme_arg(args)?, "events": n, "lost": lost,
            "received": d.received, "injected": d.injected, "dropped": d.dropped,
            "pending": d.pending, "completed": d.completed,
            "to_inject": gap(|e| (e.arrival_ns, e.inject_ns)),
            "inject_to_isr": gap(|e| (e.inject_ns, e.isr_ns)),
            "isr_to_dsr": gap(|e| (e.isr_ns, e.dsr_start_ns)),
            "dsr_end_to_done": gap(|e| (e.dsr_end_ns, e.done_ns)),
            "to_done": gap(|e| (e.arrival_ns, e.done_ns)),
            "wake": stats(wake), "handoff": stats(handoff),
            "cpu_per_event_ns": cpu as f64 / done,
            "top_half_cpu_per_event_ns": rt.map_or(0, |r| r.top_half_cpu_ns) as f64 / done,
            "supervisor_cpu_per_pass_ns": sup_cpu as f64 / passes.max(1) as f64,
            "supervisor_passes_per_event": passes as f64 / done,
            "pseudo_slices": r.exits.pseudo_slices,
            "host_stall_ns": r.host_stall_ns(),
            "servers": servers_json(r),
        })
    );
    Ok(())
}

fn strip_histograms(v: &mut serde_json::Value) {
    match v {
        serde_json::Value::Object(m) => {
            m.remove("histogram");
            m.values_mut().for_each(strip_histograms);
        }
        serde_json::Value::Array(a) => a.iter_mut().for_each(strip_histograms),
        _ => {}
    }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let r = match args.first().map(String::as_str) {
        Some("probe") => irqlab_vmm::probe::probe().map(|facts| {
            for f in facts {
                println!("{}", serde_json::to_string(&f).unwrap_or_default());
            }
        }),
        Some("echo") => echo(&args[1..]),
        Some("exits") => exits(),
        Some("rtt") => rtt(&args[1..]),
        Some("model") => model(&args[1..]),
        Some("storm") => storm(&args[1..]),
        Some("throughput") => throughput(&args[1..]),
        Some("cost") => cost(&args[1..]),
        _ => Err("usage: irqlab-vmm probe | exits | model FILE.yaml [--seconds S] [--trace FILE] | rtt --scheme baseline|baseline_1ms|vint [--seconds S] | storm --scheme baseline|vint [--util PCT] [--no-storm] [--no-reraise] [--seconds S] [--trace FILE] [--summary] | throughput --scheme baseline|baseline_1ms|vint [--util PCT] [--seconds S] | cost --scheme baseline|vint [--events N] | echo [--events N] [--budget US --period US] [--dsr-cost US] [--cpu C] [--busy] [--vint T_I_US C_I_US] [--interval US] [--irqfd] [--split] [--trace FILE] [--summary]".into()),
    };
    match r {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("irqlab-vmm: {e}");
            ExitCode::FAILURE
        }
    }
}
