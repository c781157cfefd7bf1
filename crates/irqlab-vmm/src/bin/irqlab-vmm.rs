//! `irqlab-vmm`: command-line front end of the VMM.
//!
//! * `irqlab-vmm probe` -- which KVM features work here (JSON lines);
//! * `irqlab-vmm exits` -- the guest times 10,000 port-I/O exit round trips;
//! * `irqlab-vmm echo [--events N] [--budget US --period US] [--dsr-cost US]
//!   [--cpu C] [--busy] [--vint T_I_US C_I_US] [--interval US]` -- boot the
//!   guest with a UDP NIC, send N datagrams one at a time (at least
//!   `--interval` apart), print the report (JSON) with every
//!   stage's latency and the servers' CPU time. `--busy`: the guest computes in the background; `--vint`:
//!   the NIC's interrupt is managed by vINT (pseudo-VCPU with `T_p = T_i`,
//!   Eq. 1 budget, sporadic, rank 1).
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
    let vmm = Vmm::start(cfg).map_err(|e| e.to_string())?;
    if !vmm.wait_for(Duration::from_secs(10), |v| v.ready()) {
        let s = vmm.stop();
        return Err(format!(
            "guest did not boot: {:?}",
            s.error.map(|e| e.to_string())
        ));
    }
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
                            "exits": s.report.exits.io })
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
        _ => Err("usage: irqlab-vmm probe | exits | echo [--events N] [--budget US --period US] [--dsr-cost US] [--cpu C] [--busy] [--vint T_I_US C_I_US] [--interval US]".into()),
    };
    match r {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("irqlab-vmm: {e}");
            ExitCode::FAILURE
        }
    }
}
