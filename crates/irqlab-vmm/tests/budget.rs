//! The guest VCPU runs inside an irqlab-rt sporadic server (VINT §III):
//! out of budget it does not run -- its CPU time stays within one budget
//! per period and the busy guest itself sees the gaps -- and every event
//! is still handled once the budget returns. (What an interrupt arriving in
//! a gap waits for, with and without vINT, is tested in `vint.rs`.)
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
fn a_vcpu_out_of_budget_does_not_run() {
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
    let Some(vmm) = common::wait_completed(vmm, 0, 235, 2) else {
        return;
    };
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

    println!(
        "vcpu cpu {} ns in {} ns; {} gaps; to_isr p50 {:?} max {:?}",
        s.cpu_time_ns,
        rt.duration_ns,
        r.gaps.len(),
        d.to_isr.p50,
        d.to_isr.max
    );
}
