//! vINT on the real VMM (VINT §V) against the Baseline, same machine: a
//! busy guest VCPU in a 2 ms / 10 ms sporadic server, a NIC event every
//! 2.5 ms (minimum inter-arrival time declared to vINT: 1 ms). The VCPU thread's park intervals (its server out of budget) are
//! the host's record of when the VCPU may not run.
//! * With vINT (pseudo-VCPU at rank 1, Eq. 1 budget): an event arriving
//!   while the VCPU is parked is handled (ISR and DSR) before the park ends,
//!   on the pseudo-VCPU's budget, which is enforced; the VCPU's own budget
//!   still holds.
//! * Without vINT: such an event waits for the end of the park (the
//!   replenishment): its ISR is no earlier than the park's end.
//! * Selective use: a managed and an unmanaged NIC in one VM.
mod common;

use std::net::UdpSocket;
use std::time::Duration;

use irqlab_core::Nanos;
use irqlab_vmm::abi::FLAG_BUSY;
use irqlab_vmm::{
    DeviceConfig, DeviceKind, PseudoVcpu, Replenish, VcpuServer, VmmConfig, VmmReport,
};

const C: Nanos = Nanos::from_ms(2);
const T: Nanos = Nanos::from_ms(10);
const T_I: Nanos = Nanos::from_ms(1);
/// The pseudo-VCPU's period: five instances per period (Eq. 1), so the
/// counter (§V-B) tolerates the test sender's jitter.
const T_P: Nanos = Nanos::from_ms(5);
const C_I: Nanos = Nanos::from_us(500);
/// The sender's interval, clearly above T_i.
const SEND_EVERY: Duration = Duration::from_micros(2500);
const EVENTS: u64 = 160;

fn run(vint: bool) -> Option<VmmReport> {
    let pseudo = PseudoVcpu {
        budget: PseudoVcpu::eq1_budget(C_I, T_I, T_P),
        period: T_P,
        min_interarrival: T_I,
        policy: Replenish::Sporadic,
        rank: 1,
    };
    let cfg = VmmConfig {
        vcpu: VcpuServer::Sporadic {
            budget: C,
            period: T,
        },
        flags: FLAG_BUSY,
        devices: vec![DeviceConfig {
            name: "nic".into(),
            kind: DeviceKind::Udp {
                bind: "127.0.0.1:0".parse().expect("address"),
            },
        }],
        vint: vec![vint.then_some(pseudo)],
        ..Default::default()
    };
    let vmm = common::start(cfg);
    let addr = vmm.device_addr(0).expect("NIC address");
    let client = UdpSocket::bind("127.0.0.1:0").expect("socket");
    for i in 0..EVENTS {
        client.send_to(&i.to_le_bytes(), addr).expect("send");
        std::thread::sleep(SEND_EVERY);
    }
    let vmm = common::wait_completed(vmm, 0, EVENTS, 3)?;
    let r = common::stop_ok(vmm);
    if let Some(why) = common::host_stall(&r) {
        irqlab_rt::skipped!("{why}");
        return None;
    }
    let d = &r.devices[0];
    assert_eq!(d.received, d.injected + d.dropped + d.pending, "{d:?}");
    assert_eq!(
        (d.received, d.completed, d.pending, d.dropped),
        (EVENTS, EVENTS, 0, 0)
    );
    let rt = r.runtime.as_ref().expect("runtime report");
    let periods = |t: Nanos| rt.duration_ns.div_ceil(t.0) + 1;
    let v = rt
        .servers
        .iter()
        .find(|s| s.name == "vcpu0")
        .expect("vcpu0");
    assert!(
        v.cpu_time_ns <= periods(T) * (C.0 + 500_000),
        "VCPU used {} ns in {} ns",
        v.cpu_time_ns,
        rt.duration_ns
    );
    if vint {
        let p = rt
            .servers
            .iter()
            .find(|s| s.name == "pseudo-nic")
            .expect("pseudo");
        assert!(
            p.cpu_time_ns <= periods(T_P) * (pseudo.budget.0 + 200_000),
            "pseudo-VCPU used {} ns in {} ns",
            p.cpu_time_ns,
            rt.duration_ns
        );
        assert!(
            p.cpu_time_ns > 0 && r.exits.pseudo_slices > 0,
            "{:?}",
            r.exits
        );
    } else {
        assert_eq!(r.exits.pseudo_slices, 0);
    }
    assert!(r.vcpu_parks.len() >= 10, "parks: {:?}", r.vcpu_parks);
    Some(r)
}

/// Events that arrived while the VCPU was parked, at least `before_end`
/// before the park's end: `(event, park end)`.
fn in_parks(r: &VmmReport, before_end: u64) -> Vec<(irqlab_vmm::EventRecord, u64)> {
    r.events
        .iter()
        .filter_map(|e| {
            r.vcpu_parks
                .iter()
                .find(|p| p.0 + 50_000 < e.arrival_ns && e.arrival_ns + before_end < p.1)
                .map(|p| (*e, p.1))
        })
        .collect()
}

#[test]
fn with_vint_an_event_is_handled_while_its_vcpu_is_out_of_budget() {
    require_kvm!();
    let Some(r) = run(true) else { return };
    let inside = in_parks(&r, 2_000_000);
    assert!(inside.len() >= 20, "only {} events in parks", inside.len());
    // The counter (§V-B) holds an event that came less than T_i after the
    // one before (the test's sender is not exact); those are injected when
    // a credit returns and are not what this test is about -- but they must
    // stay rare.
    let (prompt, held): (Vec<_>, Vec<_>) = inside
        .iter()
        .partition(|(e, _)| e.inject_ns - e.arrival_ns < 200_000);
    assert!(
        held.len() * 10 <= inside.len(),
        "{} of {} held",
        held.len(),
        inside.len()
    );
    let late: Vec<_> = prompt
        .iter()
        .filter(|(e, end)| e.dsr_end_ns >= *end)
        .collect();
    assert!(
        late.is_empty(),
        "{} of {} events injected while the VCPU was parked finished only after the park: {:?}",
        late.len(),
        prompt.len(),
        late.first()
    );
    let d = &r.devices[0];
    println!(
        "vINT: {} events in parks ({} held by the counter); to_isr p50 {:?} p99 {:?} max {:?}; to_dsr_end p99 {:?}; {:?}",
        inside.len(),
        held.len(),
        d.to_isr.p50,
        d.to_isr.p99,
        d.to_isr.max,
        d.to_dsr_end.p99,
        r.exits
    );
}

#[test]
fn without_vint_the_same_event_waits_for_the_replenishment() {
    require_kvm!();
    let Some(r) = run(false) else { return };
    let inside = in_parks(&r, 300_000);
    assert!(inside.len() >= 20, "only {} events in parks", inside.len());
    let tol = 300_000;
    for (e, end) in &inside {
        assert!(
            e.isr_ns + tol >= *end,
            "event {} arrived at {} during a park ending at {} and entered its ISR at {}",
            e.seq,
            e.arrival_ns,
            end,
            e.isr_ns
        );
    }
    let d = &r.devices[0];
    // How far after the park's end the earliest such ISR came (negative:
    // before it, within the tolerance), and the shortest wait.
    let after = inside
        .iter()
        .map(|(e, end)| e.isr_ns as i64 - *end as i64)
        .min();
    let wait = inside
        .iter()
        .map(|(e, _)| e.isr_ns.saturating_sub(e.arrival_ns))
        .min();
    println!(
        "Baseline: {} events in parks; ISR - park end min {after:?} ns; shortest wait {wait:?} ns; to_isr p50 {:?} p99 {:?} max {:?}",
        inside.len(),
        d.to_isr.p50,
        d.to_isr.p99,
        d.to_isr.max
    );
}

/// Selective use (VINT §V): in one VM the NIC "nic" is managed (its
/// pseudo-VCPU as above) and "plain" is not; events go to each in turn,
/// 1.25 ms apart. The managed NIC's events that arrive while the VCPU is
/// parked are handled before the park ends; the unmanaged NIC's wait for
/// the park's end, unless a pseudo-VCPU was running the guest when they
/// came (the guest takes every pending interrupt; VINT counts them as
/// the pseudo-VCPU's blocking): its runner slices show it.
#[test]
fn selective_use_only_the_managed_interrupt_runs_while_the_vcpu_is_parked() {
    require_kvm!();
    let nic = |name: &str| DeviceConfig {
        name: name.into(),
        kind: DeviceKind::Udp {
            bind: "127.0.0.1:0".parse().expect("address"),
        },
    };
    let cfg = VmmConfig {
        vcpu: VcpuServer::Sporadic {
            budget: C,
            period: T,
        },
        flags: FLAG_BUSY,
        devices: vec![nic("nic"), nic("plain")],
        vint: vec![
            Some(PseudoVcpu {
                budget: PseudoVcpu::eq1_budget(C_I, T_I, T_P),
                period: T_P,
                min_interarrival: T_I,
                policy: Replenish::Sporadic,
                rank: 1,
            }),
            None,
        ],
        ..Default::default()
    };
    let vmm = common::start(cfg);
    let addr = [0, 1].map(|d| vmm.device_addr(d).expect("NIC address"));
    let client = UdpSocket::bind("127.0.0.1:0").expect("socket");
    for i in 0..EVENTS {
        for a in addr {
            client.send_to(&i.to_le_bytes(), a).expect("send");
            std::thread::sleep(SEND_EVERY / 2);
        }
    }
    let Some(vmm) = common::wait_completed(vmm, 0, EVENTS, 3) else {
        return;
    };
    let Some(vmm) = common::wait_completed(vmm, 1, EVENTS, 3) else {
        return;
    };
    let r = common::stop_ok(vmm);
    if let Some(why) = common::host_stall(&r) {
        irqlab_rt::skipped!("{why}");
        return;
    }
    for d in &r.devices {
        assert_eq!(d.received, d.injected + d.dropped + d.pending, "{d:?}");
        assert_eq!((d.received, d.completed), (EVENTS, EVENTS), "{d:?}");
    }
    assert!(r.devices[0].managed && !r.devices[1].managed);
    assert!(r.exits.pseudo_slices > 0, "{:?}", r.exits);
    // The managed NIC: handled inside the park (as in the test above).
    let managed: Vec<_> = in_parks(&r, 2_000_000)
        .into_iter()
        .filter(|(e, _)| e.device == 0 && e.inject_ns - e.arrival_ns < 200_000)
        .collect();
    assert!(
        managed.len() >= 10,
        "only {} managed events in parks",
        managed.len()
    );
    let late: Vec<_> = managed
        .iter()
        .filter(|(e, end)| e.dsr_end_ns >= *end)
        .collect();
    assert!(
        late.is_empty(),
        "{} of {} managed events finished only after the park: {:?}",
        late.len(),
        managed.len(),
        late.first()
    );
    // The unmanaged NIC: its ISR after the park's end, or while a
    // pseudo-VCPU ran the guest (the conversion of guest stamps to the
    // host clock is good to ~80 us around a hand-off, tests/features.rs).
    let tol = 120_000;
    let plain: Vec<_> = in_parks(&r, 300_000)
        .into_iter()
        .filter(|(e, _)| e.device == 1)
        .collect();
    let (waited, early): (Vec<_>, Vec<_>) = plain
        .iter()
        .partition(|(e, end)| e.isr_ns + 300_000 >= *end);
    let on_own_budget: Vec<_> = early
        .iter()
        .filter(|(e, _)| overlap(&r, Some(0), e.isr_ns.saturating_sub(tol), e.isr_ns + tol) == 0)
        .collect();
    assert!(
        on_own_budget.is_empty(),
        "{} unmanaged events handled in a park without a pseudo-VCPU running: {:?}",
        on_own_budget.len(),
        on_own_budget.first()
    );
    // Most unmanaged events in a park are taken by the next managed
    // event's pseudo-VCPU (1.25 ms later); some wait for the park's end.
    assert!(
        plain.len() >= 20,
        "only {} unmanaged events in parks",
        plain.len()
    );
    assert!(
        !waited.is_empty(),
        "no unmanaged event waited for a park's end"
    );
    println!(
        "selective: {} managed events handled in parks; unmanaged in parks: {} waited for the park's end, {} taken while the pseudo-VCPU ran",
        managed.len(),
        waited.len(),
        early.len()
    );
}

/// Host time the runner slices of `who` overlap `[a, b)`.
fn overlap(r: &VmmReport, who: Option<usize>, a: u64, b: u64) -> u64 {
    r.runner_slices
        .iter()
        .filter(|s| s.pseudo == who)
        .map(|s| s.end_ns.min(b).saturating_sub(s.start_ns.max(a)))
        .sum()
}
