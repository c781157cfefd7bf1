//! Hand-checked schedules of the `linux` interrupt path and the xHCI model.

use irqlab_sim::{simulate, SimConfig};
use serde_json::{json, Value};

const U: u64 = 1_000_000; // one toy time unit = 1 ms

fn sim(v: Value) -> irqlab_sim::Metrics {
    let cfg: SimConfig = serde_json::from_value(v).expect("valid config");
    simulate(cfg).expect("runs").0
}

/// USB-DIFFSERV §III-A toy system: tau_H (2 units: 1, an I/O request, 1),
/// tau_M (3) and tau_L (1) released at 0; the device answers at once; top
/// half and bottom half take 1 unit each.
fn toy(path: &str, servers: Value, classes: Value) -> Value {
    json!({
        "path": path, "duration": 20 * U, "window": 20 * U,
        "linux": {"threaded_bh": true},
        "servers": servers,
        "tasks": [
            {"name": "tau_H", "server": 0, "release": {"kind": "periodic", "period": 6 * U, "jobs": 1},
             "program": [{"op": "compute", "ns": U}, {"op": "io", "device": 0}, {"op": "compute", "ns": U}]},
            {"name": "tau_M", "server": 1, "release": {"kind": "periodic", "period": 8 * U, "jobs": 1},
             "program": [{"op": "compute", "ns": 3 * U}]},
            {"name": "tau_L", "server": 2, "release": {"kind": "periodic", "period": 10 * U, "jobs": 1},
             "program": [{"op": "compute", "ns": U}]}
        ],
        "classes": classes,
        "devices": [{"name": "dev", "class": 0, "kind": "disk", "latency": 0, "top_half": U,
                     "per_sector": U, "sectors": 1, "sector_bytes": 512}]
    })
}

/// Figure 1 (Linux, PREEMPT_RT, SCHED_DEADLINE tasks with deadlines 6, 8
/// and 10, bottom half in ksoftirqd under SCHED_FIFO 50): tau_H [0,1) asks;
/// the hard IRQ [1,2) interrupts tau_M; the bottom half waits below every
/// deadline task: tau_M [2,5), tau_L [5,6), ksoftirqd [6,7), tau_H [7,8):
/// tau_H misses its deadline at 6.
#[test]
fn figure1_linux_misses() {
    let cbs = |p: u64| json!({"name": format!("dl{p}"), "policy": "cbs", "runtime": p * U, "period": p * U});
    let m = sim(toy(
        "linux",
        json!([cbs(6), cbs(8), cbs(10)]),
        json!([{"name": "usb"}]),
    ));
    let done: Vec<u64> = m.tasks.iter().map(|t| t.completions[0] / U).collect();
    assert_eq!(done, vec![8, 5, 6]);
    let misses: Vec<u64> = m.tasks.iter().map(|t| t.deadline_misses).collect();
    assert_eq!(misses, vec![1, 0, 0], "tau_H misses its deadline at 6");
    let ksoftirqd = m.servers.iter().find(|s| s.name == "ksoftirqd/0").unwrap();
    assert_eq!(ksoftirqd.busy_ns, U);
}

/// Figure 2 (Quest, one interrupter): the bottom half runs on the I/O VCPU
/// at tau_H's inherited priority: IRQ [1,2), bottom half [2,3), tau_H [3,4)
/// -- no miss; tau_M [4,7), tau_L [7,8).
#[test]
fn figure2_quest_no_miss() {
    let ss = |c: u64, t: u64| json!({"name": format!("v{t}"), "policy": "sporadic", "budget": c * U, "period": t * U});
    let servers = json!([ss(3, 6), ss(5, 8), ss(2, 10), {"name": "io", "policy": "pibs", "num": 1, "den": 2}]);
    let m = sim(toy("quest", servers, json!([{"name": "usb", "iovcpu": 3}])));
    let done: Vec<u64> = m.tasks.iter().map(|t| t.completions[0] / U).collect();
    assert_eq!(done, vec![4, 7, 8]);
    assert!(m.tasks.iter().all(|t| t.deadline_misses == 0));
}

/// Linux softirq restarts (USB-DIFFSERV §II): with `max_restart` 2,
/// interrupts every 110 us and 150 us of bottom half each: the softirq at
/// IRQ exit runs [0,150), restarts for the IRQ of 110 [150,300), again for
/// 220 [300,450); the IRQs of 330 and 440 are left to ksoftirqd [450,750).
#[test]
fn softirq_restart_limit_defers_to_ksoftirqd() {
    let us = 1_000u64;
    let m = sim(json!({
        "path": "linux", "duration": 2_000 * us, "window": 2_000 * us,
        "linux": {"max_restart": 2},
        "servers": [],
        "classes": [{"name": "net"}],
        "devices": [{"name": "nic", "class": 0, "kind": "nic", "top_half": 0,
                     "bottom_half": 150 * us, "bytes": 64,
                     "arrival": {"kind": "burst", "count": 5, "gap": 110 * us, "every": 1_000_000 * us}}]
    }));
    assert_eq!(m.cpus[0].softirq_ns, 450 * us);
    assert_eq!(m.servers[0].name, "ksoftirqd/0");
    assert_eq!(m.servers[0].busy_ns, 300 * us);
    assert_eq!(m.devices[0].handled, 5);
}

/// Without contention, the softirq at IRQ exit does all the work and
/// ksoftirqd never runs; the 2 ms limit bounds a long run.
#[test]
fn softirq_time_limit() {
    let us = 1_000u64;
    let m = sim(json!({
        "path": "linux", "duration": 20_000 * us, "window": 20_000 * us,
        "servers": [],
        "classes": [{"name": "net"}],
        "devices": [{"name": "nic", "class": 0, "kind": "nic", "top_half": 0,
                     "bottom_half": 700 * us, "bytes": 64,
                     "arrival": {"kind": "burst", "count": 8, "gap": 500 * us, "every": 1_000_000 * us}}]
    }));
    // batches: [0,700) restart@700 (irq 500) [700,1400) restart (irq 1000)
    // [1400,2100) -> 2.1 ms >= 2 ms: the rest (irqs 1500, 2000) go to ksoftirqd
    assert_eq!(m.cpus[0].softirq_ns, 2_100 * us);
    assert_eq!(m.servers[0].busy_ns, (8 - 3) * 700 * us);
}

fn usb(path: &str, interrupters: Value, moderation_extra: Value) -> Value {
    let us = 1_000u64;
    json!({
        "path": path, "duration": 1_000 * us, "window": 1_000 * us,
        "servers": [
            {"name": "main", "policy": "sporadic", "budget": 2_000 * us, "period": 20_000 * us},
            {"name": "io0", "policy": "pibs", "num": 1, "den": 100},
            {"name": "io1", "policy": "pibs", "num": 1, "den": 100}
        ],
        "tasks": [
            {"name": "a", "server": 0, "release": {"kind": "once"}, "program": [{"op": "io", "device": 0}]},
            {"name": "b", "server": 0, "release": {"kind": "once"}, "program": [{"op": "io", "device": 1}]}
        ],
        "classes": [{"name": "c0", "iovcpu": 1}, {"name": "c1", "iovcpu": 2}],
        "xhci": [{"name": "xhci0", "top_half": 5 * us, "msi_base": 32, "interrupters": interrupters}],
        "devices": [
            {"name": "ttyACM0", "class": 0, "kind": "usb", "controller": 0, "rate": 12_500_000, "omega_io": 20 * us, "omega_main": 10 * us},
            {"name": "ttyACM1", "class": moderation_extra, "kind": "usb", "controller": 0, "rate": 12_500_000, "omega_io": 20 * us, "omega_main": 10 * us}
        ]
    })
}

/// xHCI: a 512-byte read at 12.5 MB/s takes 40.96 us and fits in the
/// first microframe. With two interrupters each endpoint's event raises its
/// own MSI: top halves [40.96, 45.96) and [45.96, 50.96); the bottom halves
/// (20 us) run on the two I/O VCPUs [50.96, 70.96) and [70.96, 90.96) (they
/// inherit the Main VCPU's period and go first among equals); then the
/// tasks' 10 us of Omega_Main: a returns at 100.96, b at 110.96.
#[test]
fn usb_two_interrupters() {
    let m = sim(usb("quest", json!([{"class": 0}, {"class": 1}]), json!(1)));
    assert_eq!(m.cpus[0].isr_ns, 10_000);
    assert_eq!(m.devices[0].latency.min, Some(100_960));
    assert_eq!(m.devices[1].latency.min, Some(110_960));
}

/// 125 us microframes: a read submitted 100 us into a microframe does not
/// fit in the 25 us left and completes in the next one, at 125 + 40.96;
/// then top half 5, bottom half 20, Omega_Main 10: it returns at 200.96,
/// 100.96 us after it was issued.
#[test]
fn usb_transfer_that_misses_its_microframe_completes_in_the_next() {
    let us = 1_000u64;
    let mut v = usb("quest", json!([{"class": 0}, {"class": 1}]), json!(1));
    v["tasks"] = json!([{"name": "a", "server": 0, "release": {"kind": "once"},
                         "program": [{"op": "sleep", "ns": 100 * us}, {"op": "io", "device": 0}]}]);
    let m = sim(v);
    assert_eq!(m.devices[0].latency.min, Some(100_960));
    assert_eq!(m.tasks[0].completions[0], 200_960);
}

/// One interrupter for both endpoints: both events are signalled by one
/// interrupt (one 5 us top half) and handled in turn by its one thread:
/// [45.96, 65.96), [65.96, 85.96); then a [85.96, 95.96), b [95.96, 105.96).
#[test]
fn one_interrupter_coalesces() {
    let m = sim(usb("quest", json!([{"class": 0}]), json!(0)));
    assert_eq!(m.cpus[0].isr_ns, 5_000);
    assert_eq!(m.devices[0].latency.min, Some(95_960));
    assert_eq!(m.devices[1].latency.min, Some(105_960));
}

/// Interrupter moderation: with a 200 us interval, the second request's
/// event (at 116.92 us) waits for 40.96 + 200 = 240.96 us. (With a 1 % I/O
/// VCPU the second bottom half would also wait for its eligibility.)
#[test]
fn interrupter_moderation_delays_the_next_interrupt() {
    let us = 1_000u64;
    let mut v = usb(
        "quest",
        json!([{"class": 0, "moderation": 200 * us}]),
        json!(0),
    );
    v["tasks"] = json!([{"name": "a", "server": 0, "release": {"kind": "once"},
                         "program": [{"op": "io", "device": 0}, {"op": "io", "device": 0}]}]);
    // a 50 % I/O VCPU: eligible again 40 us after the first bottom half
    v["servers"][1] = json!({"name": "io0", "policy": "pibs", "num": 1, "den": 2});
    let m = sim(v);
    // first read: 40.96 + 5 + 20 + 10 = 75.96; the second returns at
    // 240.96 + 5 + 20 + 10 = 275.96, 200 us after it was issued at 75.96
    assert_eq!(m.devices[0].latency.min, Some(75_960));
    assert_eq!(m.devices[0].latency.max, Some(200_000));
}

/// Interrupter map rules (USB-DIFFSERV §III-C): a class a device is bound
/// to needs an interrupter; at most 1024 interrupters.
#[test]
fn interrupter_map_rules() {
    let v = usb("quest", json!([{"class": 0}]), json!(1));
    let cfg: SimConfig = serde_json::from_value(v).unwrap();
    let e = simulate(cfg).unwrap_err().to_string();
    assert_eq!(
        e,
        "devices[1].class: 1: the class has no interrupter on its xHCI controller (unmapped class)"
    );
    let many: Vec<Value> = (0..1025).map(|_| json!({"class": 0})).collect();
    let cfg: SimConfig = serde_json::from_value(usb("quest", json!(many), json!(0))).unwrap();
    let e = simulate(cfg).unwrap_err().to_string();
    assert_eq!(
        e,
        "xhci[0].interrupters: 1025: an xHC has 1 to 1024 interrupters"
    );
}
