//! Hand-checked event-by-event schedules on both interrupt paths.

use irqlab_sim::{simulate, SimConfig};
use serde_json::json;

/// One CPU; Main VCPU "V" (sporadic 1000/10000 us-units in ns below), I/O
/// VCPU "IO" (PIBS 10 %); task "tau" every 10 ms: compute 300 us, read one
/// disk request (device latency 1 ms, top half 50 us, bottom half 4 sectors
/// x 100 us, Omega_Main 100 us), compute 300 us.
fn system(path: &str) -> SimConfig {
    let us = 1_000u64;
    serde_json::from_value(json!({
        "path": path,
        "duration": 12_000 * us,
        "servers": [
            {"name": "V", "policy": "sporadic", "budget": 1000 * us, "period": 10_000 * us},
            {"name": "IO", "policy": "pibs", "num": 1, "den": 10}
        ],
        "tasks": [{
            "name": "tau", "server": 0,
            "release": {"kind": "periodic", "period": 10_000 * us},
            "program": [
                {"op": "compute", "ns": 300 * us},
                {"op": "io", "device": 0},
                {"op": "compute", "ns": 300 * us}
            ]
        }],
        "classes": [{"name": "ata", "iovcpu": 1}],
        "devices": [{
            "name": "disk", "class": 0, "kind": "disk", "omega_main": 100 * us,
            "latency": 1000 * us, "top_half": 50 * us, "per_sector": 100 * us,
            "sectors": 4, "sector_bytes": 2048
        }]
    }))
    .expect("valid config")
}

/// Quest path. tau runs [0, 300) and blocks (split: 700 left now, 300 back
/// at 10000). The disk completes at 1300; top half [1300, 1350); the bottom
/// half runs on the I/O VCPU [1350, 1750) (C_max = 10 % x 10 ms = 1 ms).
/// tau resumes at 1750 with 700 of budget: Omega_Main [1750, 1850), compute
/// [1850, 2150). Job 1 completes at 2150; the read took 1850 - 300 = 1550.
#[test]
fn quest_path_schedule() {
    let (m, _) = simulate(system("quest")).unwrap();
    let t = &m.tasks[0];
    assert_eq!(t.completions[0], 2_150_000);
    assert_eq!(t.deadline_misses, 0);
    let d = &m.devices[0];
    assert_eq!(d.latency.min, Some(1_550_000));
    assert_eq!(d.handling.min, Some(450_000)); // arrival 1300 -> bottom half end 1750
                                               // The bottom half was charged to the I/O VCPU, not to V.
    assert_eq!(m.servers[1].busy_ns % 400_000, 0);
    assert!(m.servers[1].busy_ns >= 400_000);
    assert_eq!(m.cpus[0].isr_ns % 50_000, 0);
}

/// quest-no-iovcpu: the same bottom half is charged to V. At 1350 V
/// resumes (head moved to 1350, 700 left); bottom half [1350, 1750) leaves
/// 300; tau's Omega_Main and 200 of its compute exhaust V at 2050; the last
/// 100 us wait for V's replenishment at 10000: job 1 completes at 10100 and
/// misses its deadline.
#[test]
fn no_iovcpu_path_schedule() {
    let (m, _) = simulate(system("quest-no-iovcpu")).unwrap();
    let t = &m.tasks[0];
    assert_eq!(t.completions[0], 10_100_000);
    assert_eq!(t.deadline_misses, 1);
    assert_eq!(
        m.servers[1].busy_ns, 0,
        "the I/O VCPU is unused on this path"
    );
}

/// Same configuration and seed: identical metrics and trace, byte for byte.
#[test]
fn deterministic() {
    let mut cfg = system("quest");
    cfg.trace.enabled = true;
    let a = simulate(cfg.clone()).unwrap();
    let b = simulate(cfg).unwrap();
    assert_eq!(
        serde_json::to_string(&a.0).unwrap(),
        serde_json::to_string(&b.0).unwrap()
    );
    assert_eq!(a.1, b.1);
}

/// Bad configurations are errors naming the field, value and rule.
#[test]
fn bad_config_is_an_error() {
    let mut cfg = system("quest");
    cfg.tasks[0].server = 7;
    let e = simulate(cfg).unwrap_err().to_string();
    assert_eq!(e, "tasks[0].server: 7: no such server");
    let mut cfg = system("quest");
    cfg.classes[0].iovcpu = None;
    let e = simulate(cfg).unwrap_err().to_string();
    assert!(
        e.starts_with("classes[0].iovcpu: none: the quest path needs"),
        "{e}"
    );
    let mut cfg = system("quest");
    cfg.servers[0].policy = irqlab_sim::config::PolicyCfg::Sporadic {
        budget: 12,
        period: 10,
        max_repl: 32,
        background: false,
    };
    let e = simulate(cfg).unwrap_err().to_string();
    assert_eq!(e, "servers[0] (V): budget 12ns exceeds period 10ns");
}

/// Unknown keys are errors, also inside flattened parts.
#[test]
fn unknown_keys_are_rejected() {
    let mut v = serde_json::to_value(system("quest")).unwrap();
    v["servers"][0]["budgett"] = json!(5);
    let e = serde_json::from_value::<SimConfig>(v)
        .unwrap_err()
        .to_string();
    assert!(e.contains("unknown field `budgett`"), "{e}");
    let mut v = serde_json::to_value(system("quest")).unwrap();
    v["devices"][0]["sectorz"] = json!(5);
    let e = serde_json::from_value::<SimConfig>(v)
        .unwrap_err()
        .to_string();
    assert!(e.contains("unknown field `sectorz`"), "{e}");
}

/// Two CPUs: the NIC interrupts CPU 0 (its top halves interrupt CPU 0's
/// hog), the bottom halves run on the I/O VCPU of CPU 1 next to the
/// receiving task. 100 packets at 1 ms: CPU 0 spends exactly 100 x 5 us in
/// top halves, every packet is handled on CPU 1, and CPU 0's hog is charged
/// for the top halves that interrupt it but for no bottom half.
#[test]
fn two_cpus_top_half_and_bottom_half_apart() {
    let us = 1_000u64;
    let cfg: SimConfig = serde_json::from_value(json!({
        "cpus": 2, "duration": 100_000 * us, "window": 100_000 * us,
        "servers": [
            {"name": "hog0", "cpu": 0, "policy": "sporadic", "budget": 5_000 * us, "period": 10_000 * us},
            {"name": "rx", "cpu": 1, "policy": "sporadic", "budget": 2_000 * us, "period": 10_000 * us},
            {"name": "io", "cpu": 1, "policy": "pibs", "num": 1, "den": 10}
        ],
        "tasks": [
            {"name": "hog", "server": 0, "release": {"kind": "once"},
             "program": [{"op": "loop", "body": [{"op": "compute", "ns": 10_000 * us}]}]},
            {"name": "rx", "server": 1, "release": {"kind": "once"},
             "program": [{"op": "loop", "body": [{"op": "io", "device": 0}, {"op": "compute", "ns": 20 * us}]}]}
        ],
        "classes": [{"name": "net", "iovcpu": 2, "consumer": 1}],
        "devices": [{"name": "eth0", "cpu": 0, "class": 0, "kind": "nic", "top_half": 5 * us,
                     "bottom_half": 30 * us, "bytes": 64,
                     "arrival": {"kind": "periodic", "interval": 1_000 * us, "stop": 99_500 * us}}]
    }))
    .expect("valid config");
    let (m, _) = simulate(cfg).unwrap();
    assert_eq!(m.devices[0].interrupts, 100);
    assert_eq!(m.devices[0].handled, 100);
    assert_eq!(m.cpus[0].isr_ns, 100 * 5 * us);
    assert_eq!(m.cpus[1].isr_ns, 0);
    assert_eq!(
        m.servers[2].busy_ns,
        100 * 30 * us,
        "bottom halves on CPU 1's I/O VCPU"
    );
    assert_eq!(
        m.servers[1].busy_ns,
        100 * 20 * us,
        "the task's own work on CPU 1"
    );
    // the hog's budget (50 %) pays for the top halves that interrupt it
    // (as in Quest): its own execution is 50 ms minus those it absorbed
    let hog = m.servers[0].busy_ns;
    assert!(
        hog <= 50_000 * us && hog >= 50_000 * us - m.cpus[0].isr_ns,
        "{hog}"
    );
    assert_eq!(
        (50_000 * us - hog) % (5 * us),
        0,
        "a whole number of top halves"
    );
}

/// One CPU, 60 ms: server V (1 ms / 10 ms, `policy`) and task hog that
/// needs 5 ms every 10 ms.
fn hog(policy: &str) -> SimConfig {
    let us = 1_000u64;
    serde_json::from_value(json!({
        "path": "quest",
        "duration": 60_000 * us,
        "servers": [
            {"name": "V", "policy": policy, "budget": 1000 * us, "period": 10_000 * us}
        ],
        "tasks": [{
            "name": "hog", "server": 0,
            "release": {"kind": "periodic", "period": 10_000 * us},
            "program": [{"op": "compute", "ns": 5000 * us}]
        }]
    }))
    .expect("valid config")
}

/// Misses include jobs that never finish. Task "hog" (one 1 ms / 10 ms
/// sporadic server) needs 5 ms per 10 ms job: job k (released at 10k ms)
/// gets 1 ms per period: [0, 1), [10, 11), ... [40, 41) ms, so job 0
/// finishes at 41 ms and the backlog grows. Over 60 ms (7 releases, the
/// last at the end): job 0 finished late (1 miss); jobs 1-4, released at
/// 10-40 ms with deadlines 20-50 ms, are unfinished past their deadline
/// (4 more); jobs 5 and 6 (deadlines 60 ms = the end and 70 ms) are not
/// late yet.
#[test]
fn unfinished_jobs_past_their_deadline_are_misses() {
    let (m, _) = simulate(hog("sporadic")).unwrap();
    let t = &m.tasks[0];
    assert_eq!(t.released, 7);
    assert_eq!(t.completed, 1);
    assert_eq!(t.completions[0], 41_000_000);
    assert_eq!(t.unfinished_past_deadline, 4);
    assert_eq!(t.deadline_misses, 5);
    // V's response (VINT Eq. 3's quantity): a job from 0 (backlogged with
    // its whole budget) to 1 ms, then one at each replenishment (10, ...,
    // 50 ms: the 1 ms used at t comes back at t + 10 ms), each 1 ms.
    let v = m.servers[0].response.as_ref().expect("budgeted");
    assert_eq!((v.count, v.max), (6, Some(1_000_000)));
    assert_eq!(m.servers[0].budget_misses, Some(0));
}

/// The same with a deferrable server: always backlogged, it has a job at
/// every boundary (0, 10, ..., 50 ms), each receiving its 1 ms at once;
/// no budget miss.
#[test]
fn deferrable_vcpu_response_per_period() {
    let (m, _) = simulate(hog("deferrable")).unwrap();
    let v = m.servers[0].response.as_ref().expect("budgeted");
    assert_eq!(
        (v.count, v.min, v.max),
        (6, Some(1_000_000), Some(1_000_000))
    );
    assert_eq!(m.servers[0].budget_misses, Some(0));
}
