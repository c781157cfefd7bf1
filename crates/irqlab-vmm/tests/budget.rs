//! The guest VCPU runs inside an irqlab-rt sporadic server (VINT §III):
//! out of budget it does not run (the busy guest sees gaps), and without
//! vINT an interrupt arriving in such a gap waits for the replenishment
//! (its ISR is no earlier than the end of the gap: the paper's Baseline).
mod common;

use std::net::UdpSocket;
use std::time::Duration;

use irqlab_core::Nanos;
use irqlab_vmm::abi::FLAG_BUSY;
use irqlab_vmm::{DeviceConfig, DeviceKind, VcpuServer, VmmConfig};

const C: Nanos = Nanos::from_ms(2);
const T: Nanos = Nanos::from_ms(10);

fn cfg() -> VmmConfig {
    VmmConfig {
        vcpu: VcpuServer::Sporadic {
            budget: C,
            period: T,
        },
        flags: FLAG_BUSY,
        gap_min: Nanos::from_ms(1),
        devices: vec![DeviceConfig {
            name: "nic".into(),
            kind: DeviceKind::Udp {
                bind: "127.0.0.1:0".parse().expect("address"),
            },
        }],
        ..Default::default()
    }
}

#[test]
fn a_vcpu_out_of_budget_does_not_run_and_its_interrupts_wait() {
    require_kvm!();
    let vmm = common::start(cfg());
    let addr = vmm.device_addr(0).expect("NIC address");
    let client = UdpSocket::bind("127.0.0.1:0").expect("socket");
    // Events every 1.7 ms for 0.4 s: most arrive while the VCPU (20 %
    // budget) is out of budget.
    for i in 0u64..235 {
        client.send_to(&i.to_le_bytes(), addr).expect("send");
        std::thread::sleep(Duration::from_micros(1700));
    }
    assert!(
        vmm.wait_for(Duration::from_secs(2), |v| v.completed(0) == 235),
        "not every event completed"
    );
    let r = common::stop_ok(vmm);
    let d = &r.devices[0];
    assert_eq!((d.received, d.injected, d.completed), (235, 235, 235));

    // Budget enforcement: the VCPU's CPU time is at most one budget per
    // started period plus the enforcement overrun (bounded generously).
    let rt = r.runtime.as_ref().expect("runtime report");
    let s = rt
        .servers
        .iter()
        .find(|s| s.name == "vcpu0")
        .expect("vcpu0");
    let periods = rt.duration_ns.div_ceil(T.0) + 1;
    assert!(
        s.cpu_time_ns <= periods * (C.0 + 500_000),
        "VCPU used {} ns in {} ns ({periods} periods of {} ns budget)",
        s.cpu_time_ns,
        rt.duration_ns,
        C.0
    );
    assert!(s.cpu_time_ns >= C.0, "the VCPU ran");

    // The busy guest saw the gaps: long intervals it did not run (a
    // sporadic server at 20 % leaves about T - C = 8 ms per period).
    let long: Vec<_> = r.gaps.iter().filter(|g| g.1 - g.0 > 4_000_000).collect();
    assert!(long.len() >= 5, "gaps: {:?}", r.gaps);

    // Baseline (no vINT): an event arriving in a gap is not handled inside
    // it -- its ISR is at the end of the gap (within the ISR's own time and
    // the TSC conversion's error), so its latency is at least the
    // remaining gap.
    let tol = 300_000;
    let mut inside = 0;
    for e in &r.events {
        if let Some(g) = r
            .gaps
            .iter()
            .find(|g| g.0 + 100_000 < e.arrival_ns && e.arrival_ns + tol < g.1)
        {
            inside += 1;
            assert!(
                e.isr_ns + tol >= g.1,
                "event {} arrived at {} in gap {:?} and entered its ISR at {} (inside the gap)",
                e.seq,
                e.arrival_ns,
                g,
                e.isr_ns
            );
            assert!(e.isr_ns - e.arrival_ns + tol >= g.1 - e.arrival_ns);
        }
    }
    assert!(inside >= 20, "only {inside} events arrived inside a gap");
    println!(
        "vcpu cpu {} ns in {} ns; {} gaps; {inside} events in gaps; to_isr p50 {:?} max {:?}",
        s.cpu_time_ns,
        rt.duration_ns,
        r.gaps.len(),
        d.to_isr.p50,
        d.to_isr.max
    );
}
