//! The guest boots into long mode, prints on the console, takes N injected
//! interrupts from N host events and completes all N; failures (exception,
//! triple fault, hang, console flood) stop the VM with the guest RIP and
//! every host thread joined.
mod common;

use std::net::UdpSocket;
use std::time::Duration;

use irqlab_core::Nanos;
use irqlab_vmm::abi::*;
use irqlab_vmm::{DeviceConfig, DeviceKind, VmmConfig, VmmError};

fn nic() -> DeviceConfig {
    DeviceConfig {
        name: "nic".into(),
        kind: DeviceKind::Udp {
            bind: "127.0.0.1:0".parse().expect("address"),
        },
    }
}

#[test]
fn boots_and_prints() {
    require_kvm!();
    let vmm = common::start(VmmConfig::default());
    let r = common::stop_ok(vmm);
    assert!(r.console.contains("irqlab-guest: boot"), "{}", r.console);
    assert!(
        r.console.contains("lapic id 0x0000000000000000"),
        "{}",
        r.console
    );
}

#[test]
fn exit_round_trips_are_measured() {
    require_kvm!();
    let vmm = common::start(VmmConfig {
        flags: FLAG_PING,
        ..Default::default()
    });
    assert!(vmm.wait_for(Duration::from_secs(10), |v| v.ping_done()));
    let r = common::stop_ok(vmm);
    let rt = r.exit_round_trip_ns.expect("measured");
    assert!(r.exits.io >= PING_COUNT, "{:?}", r.exits);
    assert!(rt > 0.0);
    let rdtsc = r
        .rdtsc_ns
        .expect("rdtsc measured before the round trips are published");
    assert!(rdtsc > 0.0);
    println!("exit round trip {rt:.0} ns; guest rdtsc {rdtsc:.0} ns");
}

#[test]
fn n_host_events_n_interrupts_n_completions() {
    require_kvm!();
    let cfg = VmmConfig {
        devices: vec![nic()],
        ..Default::default()
    };
    let vmm = common::start(cfg);
    let addr = vmm.device_addr(0).expect("NIC address");
    let client = UdpSocket::bind("127.0.0.1:0").expect("client socket");
    client
        .set_read_timeout(Some(Duration::from_secs(2)))
        .expect("timeout");
    let n = 50u64;
    let mut buf = [0u8; 64];
    for i in 0..n {
        let msg = format!("ping {i}");
        client.send_to(msg.as_bytes(), addr).expect("send");
        // One at a time: each event is its own interrupt (no coalescing).
        let (len, _) = client.recv_from(&mut buf).expect("echo reply");
        assert_eq!(&buf[..len], msg.as_bytes());
    }
    let r = common::stop_ok(vmm);
    let d = &r.devices[0];
    assert_eq!(d.received, n);
    assert_eq!(d.injected, n);
    assert_eq!(d.completed, n);
    assert_eq!((d.dropped, d.pending, d.in_guest), (0, 0, 0));
    assert_eq!(
        d.guest_isr_entries, n,
        "one guest ISR per injected interrupt"
    );
    assert_eq!(d.guest_dsr_runs, n);
    assert_eq!(r.events.len() as u64, n);
    // Every event's stages in order on the host clock (the guest TSC
    // conversion is good to a few microseconds).
    let slack = 20_000;
    for e in &r.events {
        assert!(e.arrival_ns <= e.inject_ns, "{e:?}");
        assert!(e.inject_ns <= e.isr_ns + slack, "{e:?}");
        assert!(
            e.isr_ns <= e.dsr_start_ns && e.dsr_start_ns <= e.dsr_end_ns,
            "{e:?}"
        );
        assert!(e.dsr_end_ns <= e.done_ns + slack, "{e:?}");
    }
    println!("{}", serde_json::to_string(&r.devices).expect("json"));
}

#[test]
fn a_burst_is_accounted_exactly() {
    require_kvm!();
    let cfg = VmmConfig {
        devices: vec![nic()],
        dsr_cost: Nanos::from_us(200),
        ..Default::default()
    };
    let vmm = common::start(cfg);
    let addr = vmm.device_addr(0).expect("NIC address");
    let client = UdpSocket::bind("127.0.0.1:0").expect("client socket");
    let n = 300u64;
    for i in 0..n {
        client.send_to(&i.to_le_bytes(), addr).expect("send");
    }
    // Stop while the guest is still working through the burst.
    std::thread::sleep(Duration::from_millis(20));
    let r = common::stop_ok(vmm);
    let d = &r.devices[0];
    // Every datagram the kernel queued was read by the top half, then
    // injected or dropped (ring full); every injected one completed or is
    // still in the guest.
    assert!(d.received > 0);
    assert_eq!(d.received, d.injected + d.dropped + d.pending, "{d:?}");
    assert_eq!(d.injected, d.completed + d.in_guest, "{d:?}");
    assert!(d.injected <= d.completed + RING_SLOTS);
    println!("{}", serde_json::to_string(&r.devices).expect("json"));
}

fn failing(flags: u64, limit: usize) -> (irqlab_vmm::VmmReport, VmmError) {
    let cfg = VmmConfig {
        flags,
        console_limit: limit,
        watchdog: Nanos::from_ms(300),
        devices: vec![nic()],
        ..Default::default()
    };
    let vmm = irqlab_vmm::Vmm::start(cfg).expect("start");
    assert!(vmm.wait_for(Duration::from_secs(5), |v| v.ready() || v.stopped()));
    if let Some(a) = vmm.device_addr(0) {
        // An interrupt the hung guest will never acknowledge.
        let c = UdpSocket::bind("127.0.0.1:0").expect("socket");
        c.send_to(b"x", a).expect("send");
    }
    assert!(
        vmm.wait_for(Duration::from_secs(5), |v| v.stopped()),
        "VM did not stop"
    );
    // The failure stopped the guest, not the host threads: the stop joins
    // every one of them.
    let alive = common::vmm_threads();
    assert!(alive.len() >= 2, "the VMM's threads: {alive:?}");
    let failed = common::stop_err(vmm);
    let left = common::vmm_threads();
    assert!(left.is_empty(), "threads left after the stop: {left:?}");
    failed
}

#[test]
fn guest_exception_names_vector_and_rip() {
    require_kvm!();
    let (_, e) = failing(FLAG_FAULT, 1 << 16);
    match e {
        VmmError::GuestException { vector, rip, .. } => {
            assert_eq!(vector, 6, "ud2 is #UD");
            assert!(
                (KERNEL_ADDR..KERNEL_ADDR + 0x10000).contains(&rip),
                "{rip:#x}"
            );
        }
        e => panic!("wrong error {e}"),
    }
}

#[test]
fn triple_fault_names_rip() {
    require_kvm!();
    let (_, e) = failing(FLAG_TRIPLE, 1 << 16);
    // A shutdown exit where KVM sees the triple fault; on these machines
    // (KVM under a hypervisor) the failed delivery surfaces as an emulation
    // failure instead (docs/vmm.md). Either way the VM stops at the int3.
    let rip = match e {
        VmmError::TripleFault { rip } => rip,
        VmmError::InternalError {
            suberror: 1, rip, ..
        } => rip,
        e => panic!("wrong error {e}"),
    };
    assert!(
        (KERNEL_ADDR..KERNEL_ADDR + 0x10000).contains(&rip),
        "{rip:#x}"
    );
}

#[test]
fn hung_guest_is_stopped_by_the_watchdog() {
    require_kvm!();
    let (_, e) = failing(FLAG_HANG, 1 << 16);
    match e {
        VmmError::GuestHung {
            what,
            rip: Some(rip),
            ..
        } => {
            assert!(what.contains("1 of device 0"), "{what}");
            assert!(
                (KERNEL_ADDR..KERNEL_ADDR + 0x10000).contains(&rip),
                "{rip:#x}"
            );
        }
        e => panic!("wrong error {e}"),
    }
}

#[test]
fn console_flood_is_stopped() {
    require_kvm!();
    let (r, e) = failing(FLAG_FLOOD, 4096);
    assert!(
        matches!(e, VmmError::ConsoleFlood { limit: 4096, .. }),
        "{e}"
    );
    assert!(r.console.len() <= 4096 + 8);
}

#[test]
fn bad_elf_is_a_clear_error() {
    // One VMM at a time: `failing` counts the VMM threads of this process.
    let _serial = common::serial();
    let cfg = VmmConfig {
        image: Some(b"\x7fELF\x01".to_vec()),
        ..Default::default()
    };
    match irqlab_vmm::Vmm::start(cfg) {
        Err(VmmError::BadElf(m)) => {
            assert!(m.contains("not an ELF") || m.contains("EI_CLASS"), "{m}")
        }
        Err(e) => panic!("wrong error {e}"),
        Ok(_) => panic!("a bad ELF started"),
    }
}

#[test]
fn timer_ticks_are_injected_and_accounted() {
    require_kvm!();
    let cfg = VmmConfig {
        devices: vec![
            nic(),
            DeviceConfig {
                name: "tick".into(),
                kind: DeviceKind::Timer {
                    period: Nanos::from_ms(1),
                },
            },
        ],
        ..Default::default()
    };
    let vmm = common::start(cfg);
    assert!(vmm.wait_for(Duration::from_secs(5), |v| v.completed(1) >= 100));
    let r = common::stop_ok(vmm);
    let t = &r.devices[1];
    assert_eq!((t.kind, t.vector), ("timer", VEC_BASE + 1));
    assert!(t.completed >= 100, "{t:?}");
    assert_eq!(t.received, t.injected + t.dropped + t.pending, "{t:?}");
    assert_eq!(t.injected, t.completed + t.in_guest, "{t:?}");
    assert_eq!(r.devices[0].received, 0, "the NIC saw nothing");
}

/// Events that arrive while the guest boots (its LAPIC not yet enabled:
/// their MSIs are discarded) are not lost: with a VCPU of 300 us per
/// 10 ms the guest's boot spans many periods, in which 40 datagrams
/// arrive; the VMM raises the device again when the guest says it is
/// ready. The watchdog's re-raise, which would also recover them, is off.
/// (Without the raise at `PORT_READY` the guest never sees those events:
/// the watchdog stops it. Timer devices start only at `PORT_READY`, so a
/// storm no longer runs during the boot; datagrams still can.)
#[test]
fn events_before_the_guest_is_ready_are_not_lost() {
    require_kvm!();
    let cfg = VmmConfig {
        vcpu: irqlab_vmm::VcpuServer::Sporadic {
            budget: Nanos::from_us(300),
            period: Nanos::from_ms(10),
        },
        devices: vec![nic()],
        reraise: false,
        ..Default::default()
    };
    let vmm = irqlab_vmm::Vmm::start(cfg).expect("VMM starts");
    let addr = vmm.device_addr(0).expect("NIC address");
    let c = UdpSocket::bind("127.0.0.1:0").expect("client socket");
    for i in 0..40u64 {
        c.send_to(&i.to_le_bytes(), addr).expect("send");
    }
    // The guest needs several 10 ms periods of 300 us to boot.
    assert!(
        !vmm.ready(),
        "the datagrams must arrive before the boot ends"
    );
    let Some(vmm) = common::wait_completed(vmm, 0, 40, 15) else {
        return;
    };
    let r = common::stop_ok(vmm);
    let t = &r.devices[0];
    assert_eq!((t.received, t.completed, t.dropped), (40, 40, 0), "{t:?}");
    assert_eq!(r.exits.reraises, 0);
}

#[test]
fn bad_configurations_are_rejected_with_the_field() {
    let _serial = common::serial();
    let e = |cfg: VmmConfig| match irqlab_vmm::Vmm::start(cfg) {
        Err(e) => e.to_string(),
        Ok(_) => panic!("accepted"),
    };
    let m = e(VmmConfig {
        devices: vec![nic(), nic(), nic()],
        ..Default::default()
    });
    assert!(m.contains("devices") && m.contains("2 device slots"), "{m}");
    let m = e(VmmConfig {
        devices: vec![nic()],
        vint: vec![Some(irqlab_vmm::PseudoVcpu {
            budget: Nanos::from_ms(1),
            period: Nanos::from_ms(10),
            min_interarrival: Nanos::from_ms(1),
            policy: irqlab_vmm::Replenish::Sporadic,
            rank: 1,
        })],
        ..Default::default()
    });
    assert!(m.contains("vint[0].rank") && m.contains("§V-A"), "{m}");
    let m = e(VmmConfig {
        watchdog: Nanos::from_ms(1),
        ..Default::default()
    });
    assert!(m.contains("watchdog"), "{m}");
}
