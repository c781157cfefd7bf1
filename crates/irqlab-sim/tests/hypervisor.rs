//! Hand-checked schedules of the hypervisor interrupt path and vINT
//! (VINT §III, §V).

use irqlab_sim::{simulate, Metrics, SimConfig};
use serde_json::{json, Value};

const US: u64 = 1_000;

fn sim(v: Value) -> Metrics {
    let cfg: SimConfig = serde_json::from_value(v).expect("valid config");
    simulate(cfg).expect("runs").0
}

fn phys(name: &str, every: u64, isr: u64, start: u64) -> Value {
    json!({"name": name, "class": 0, "kind": "generic", "min_interarrival": every,
           "isr": isr, "dsr": 0, "start": start})
}

/// A physical interrupt every 1 ms (hypervisor ISR 10 us) injects a virtual
/// interrupt into VCPU v0 (5 ms / 10 ms) whose CPU-bound task is
/// interrupted: guest ISR 20 us + EOI 5 us, then the DSR 40 us, all on
/// v0's budget: each flow takes 10 + 25 + 40 = 75 us (Definition 2). The
/// hypervisor's ISRs are not charged to v0: v0 executes its full 5 ms.
#[test]
fn physical_isr_charged_to_the_hypervisor() {
    let m = sim(json!({
        "path": "hypervisor", "duration": 9_999 * US, "window": 10_000 * US,
        "servers": [{"name": "v0", "policy": "sporadic", "budget": 5_000 * US, "period": 10_000 * US}],
        "tasks": [{"name": "hog", "server": 0, "release": {"kind": "once"},
                   "program": [{"op": "loop", "body": [{"op": "compute", "ns": 10_000 * US}]}]}],
        "devices": [phys("nic", 1_000 * US, 10 * US, 0)],
        "virqs": [{"name": "vnic", "phys": 0, "vcpu": 0, "isr": 20 * US, "eoi": 5 * US,
                   "dsr": 40 * US, "dsr_priority": 5}]
    }));
    assert_eq!(
        m.servers[0].busy_ns,
        5_000 * US,
        "v0 used exactly its budget"
    );
    assert_eq!(m.cpus[0].isr_ns, 10 * 10 * US);
    let v = &m.virqs[0];
    assert_eq!(v.handling.min, Some(75 * US));
    assert_eq!(v.arrivals, 10);
    assert_eq!(v.delayed_injections, 0);
    // flows after v0's budget ran out (5.1 ms) wait for its replenishment
    assert!(v.handled < 10 && v.handled >= 5, "{}", v.handled);
}

fn storm(deferrable: bool) -> Metrics {
    // physical interrupts every 500 us, the virtual interrupt declared at
    // 1 ms: the pseudo-VCPU (2 ms period) may inject ceil(2 / 1) = 2 per
    // period (VINT §V-B); budget by Eq. 1: 2 x (20 + 5 + 40) us
    sim(json!({
        "path": "hypervisor", "duration": 3_900 * US, "window": 4_000 * US,
        "servers": [{"name": "v0", "policy": "sporadic", "budget": 5_000 * US, "period": 10_000 * US}],
        "tasks": [{"name": "hog", "server": 0, "release": {"kind": "once"},
                   "program": [{"op": "loop", "body": [{"op": "compute", "ns": 10_000 * US}]}]}],
        "devices": [phys("nic", 500 * US, 10 * US, 0)],
        "virqs": [{"name": "vnic", "phys": 0, "vcpu": 0, "isr": 20 * US, "eoi": 5 * US,
                   "dsr": 40 * US, "dsr_priority": 5, "min_interarrival": 1_000 * US,
                   "pseudo": {"deferrable": deferrable, "budget": 130 * US, "period": 2_000 * US, "rank": 1}}]
    }))
}

/// Delayed injection when the counter is empty. Arrivals at 0, 0.5, ...,
/// 3.5 ms: 0 and 0.5 are injected (counter 2 -> 0); 1.0 and 1.5 wait.
/// Deferrable: the counter refills to 2 at the boundary 2.0 ms, injecting
/// the two waiting ones; 2.0 ... 3.5 then wait for 4.0. At 2.0 the physical
/// ISR of the 2.0 arrival runs first [2.0, 2.01); then both guest ISRs (they
/// outrank DSRs) [2.01, 2.035) and [2.035, 2.06), then the 1.0 arrival's DSR
/// [2.06, 2.10): handled 1.100 ms after it arrived.
/// Sporadic: a credit returns one period after each injection (at 2.01 and
/// 2.51 ms), so the 1.0 arrival ends at 2.01 + 0.065 = 1.075 ms after it
/// arrived and the 1.5 one at 2.51 + 0.065 - 1.5.
#[test]
fn vint_counter_delays_injection() {
    let ds = storm(true);
    let v = &ds.virqs[0];
    assert_eq!((v.arrivals, v.injected, v.delayed_injections), (8, 4, 6));
    assert_eq!(v.handling.min, Some(75 * US));
    assert_eq!(v.handling.max, Some(1_100 * US));
    let ss = storm(false);
    let v = &ss.virqs[0];
    assert_eq!((v.arrivals, v.injected, v.delayed_injections), (8, 4, 6));
    assert_eq!(v.handling.max, Some(1_075 * US));
    // the VCPU's own budget pays nothing for the managed interrupt
    assert_eq!(ds.servers[1].name, "vnic.pseudo");
    assert_eq!(ds.servers[1].busy_ns, 4 * 65 * US);
}

/// Nested interrupts with vINT (VINT Figure 3): the low-priority virtual
/// interrupt arrives at 0 (physical ISR [0,10)), its guest ISR starts at 10
/// on its pseudo-VCPU (rank 2); the high-priority one's physical ISR [20,30)
/// interrupts it; injected at 30, the high one runs on its own pseudo-VCPU
/// (rank 1): ISR+EOI [30,55), DSR [55,95) -- handled in 75 us; the low one
/// resumes: the 15 us left of its ISR [95,110), DSR [110,150) -- 150 us.
#[test]
fn nested_virtual_interrupts() {
    let m = sim(json!({
        "path": "hypervisor", "duration": 500 * US, "window": 500 * US,
        "servers": [{"name": "v0", "policy": "sporadic", "budget": 5_000 * US, "period": 10_000 * US}],
        "tasks": [{"name": "hog", "server": 0, "release": {"kind": "once"},
                   "program": [{"op": "loop", "body": [{"op": "compute", "ns": 10_000 * US}]}]}],
        "devices": [phys("low", 10_000 * US, 10 * US, 0), phys("high", 10_000 * US, 10 * US, 20 * US)],
        "virqs": [
            {"name": "vlow", "phys": 0, "vcpu": 0, "isr": 20 * US, "eoi": 5 * US, "dsr": 40 * US,
             "dsr_priority": 5, "pseudo": {"budget": 65 * US, "period": 10_000 * US, "rank": 2}},
            {"name": "vhigh", "phys": 1, "vcpu": 0, "isr": 20 * US, "eoi": 5 * US, "dsr": 40 * US,
             "dsr_priority": 6, "pseudo": {"budget": 65 * US, "period": 10_000 * US, "rank": 1}}
        ]
    }));
    assert_eq!(m.virqs[1].handling.max, Some(75 * US));
    assert_eq!(m.virqs[0].handling.max, Some(150 * US));
}

/// A higher-priority physical ISR preempts a lower one (nested physical
/// interrupts): low ISR 30 us from 0, high ISR 10 us at 10 [10, 20), the
/// low ISR resumes [20, 40). The high virtual interrupt, injected at 20,
/// can run only at 40: its guest ISR [40, 45); the low one's guest ISR
/// (injected at 40) outranks the high one's DSR: [45, 50); then the DSRs by
/// priority: high [50, 55) -- 45 us after its arrival --, low [55, 60).
#[test]
fn physical_isrs_nest_by_priority() {
    let mut low = phys("low", 10_000 * US, 30 * US, 0);
    low["irq_priority"] = json!(1);
    let mut high = phys("high", 10_000 * US, 10 * US, 10 * US);
    high["irq_priority"] = json!(2);
    let m = sim(json!({
        "path": "hypervisor", "duration": 500 * US, "window": 500 * US,
        "servers": [{"name": "v0", "policy": "sporadic", "budget": 5_000 * US, "period": 10_000 * US}],
        "devices": [low, high],
        "virqs": [
            {"name": "vlow", "phys": 0, "vcpu": 0, "isr": 5 * US, "dsr": 5 * US, "dsr_priority": 1},
            {"name": "vhigh", "phys": 1, "vcpu": 0, "isr": 5 * US, "dsr": 5 * US, "dsr_priority": 2}
        ]
    }));
    assert_eq!(m.virqs[1].handling.max, Some(45 * US));
    assert_eq!(m.virqs[0].handling.max, Some(60 * US));
    assert_eq!(m.cpus[0].isr_ns, 40 * US);
}

/// A physical interrupt pinned to CPU 0 for a VCPU on CPU 1 is delivered
/// by an IPI (VINT §III, Figure 2(b)): ISR [0,10) on CPU 0, IPI [10,15) on
/// CPU 1, guest ISR [15,40), DSR [40,80): 80 us.
#[test]
fn ipi_to_another_cpu() {
    let m = sim(json!({
        "path": "hypervisor", "cpus": 2, "ipi": 5 * US, "duration": 500 * US, "window": 500 * US,
        "servers": [{"name": "v0", "cpu": 1, "policy": "sporadic", "budget": 5_000 * US, "period": 10_000 * US}],
        "devices": [phys("nic", 10_000 * US, 10 * US, 0)],
        "virqs": [{"name": "vnic", "phys": 0, "vcpu": 0, "isr": 20 * US, "eoi": 5 * US,
                   "dsr": 40 * US, "dsr_priority": 5}]
    }));
    assert_eq!(m.virqs[0].handling.max, Some(80 * US));
    assert_eq!((m.cpus[0].isr_ns, m.cpus[1].isr_ns), (10 * US, 5 * US));
}
