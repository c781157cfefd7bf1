//! The pending releases of a task set in slots (`engine::Slots`) change
//! nothing but the speed: systems of 33-512 tasks (where `Simulation::new`
//! uses slots), on one CPU and on several, with sporadic servers,
//! `abort_on_miss` deadlines, one-shot and limited tasks, sleeps and a
//! device's interrupts mixed with the releases (many at equal times), give
//! byte-identical metrics with slots forced on, forced off and chosen by
//! size; and every golden system run with slots forced on gives its golden
//! metrics.

use super::*;
use serde_json::json;

/// A task set of `cpus` x `per_cpu` tasks with periods of whole
/// milliseconds (so releases of several tasks, deadlines and the device's
/// arrivals fall at equal instants), about `load` of each CPU; every
/// third server sporadic, every fifth task aborts late jobs (at a
/// deadline 5 ms past its period), every seventh is one-shot, every
/// eleventh has a few jobs, every thirteenth sleeps 7 ms first. The
/// deadlines and the wake-ups are queued events posted before releases
/// due at the same instant (of tasks of shorter periods), so a tie that
/// a release won by time alone would change the order.
fn system(cpus: usize, per_cpu: usize, load: f64, duration_ms: u64) -> SimConfig {
    let ms = 1_000_000u64;
    let mut rng = SplitMix64::new(2026 + (cpus * per_cpu) as u64);
    let mut servers = Vec::new();
    let mut tasks = Vec::new();
    for c in 0..cpus {
        for k in 0..per_cpu {
            let i = servers.len();
            let period = (1 + rng.next_u64() % 40) * ms;
            let ns = ((period as f64) * load / per_cpu as f64) as u64 + 1;
            let policy = if i % 3 == 0 {
                json!({"policy": "sporadic", "budget": ns + ns / 2, "period": period})
            } else {
                json!({"policy": "unbounded"})
            };
            let mut server = json!({"name": format!("s{i}"), "cpu": c,
                                    "rank": period * 1_000 + i as u64});
            for (key, v) in policy.as_object().into_iter().flatten() {
                server[key] = v.clone();
            }
            servers.push(server);
            let release = if i % 7 == 6 {
                json!({"kind": "once", "at": (k as u64 % 5) * ms})
            } else if i % 11 == 10 {
                json!({"kind": "periodic", "period": period, "jobs": 3,
                       "offset": (k as u64 % 3) * ms})
            } else if i % 5 == 4 {
                // a deadline past the period: posted before the releases
                // of shorter periods due at the same instant
                json!({"kind": "periodic", "period": period, "deadline": period + 5 * ms})
            } else {
                json!({"kind": "periodic", "period": period})
            };
            let program = if i % 13 == 12 {
                // a wake-up posted before the releases of shorter periods
                // due at the same instant
                json!([{"op": "sleep", "ns": 7 * ms}, {"op": "compute", "ns": ns}])
            } else {
                json!([{"op": "compute", "ns": ns}])
            };
            tasks.push(json!({"name": format!("t{i}"), "server": i,
                              "abort_on_miss": i % 5 == 4, "release": release,
                              "program": program}));
        }
    }
    serde_json::from_value(json!({
        "duration": duration_ms * ms,
        "cpus": cpus,
        "servers": servers,
        "devices": [{"name": "nic", "cpu": 0, "class": 0, "kind": "nic", "top_half": 1_000,
                     "bottom_half": 1_000, "bytes": 64,
                     "arrival": {"kind": "periodic", "start": 0, "interval": ms}}],
        "classes": [{"name": "c", "iovcpu": null, "consumer": 0}],
        "path": "quest-no-iovcpu",
        "tasks": tasks,
    }))
    .expect("a valid task set")
}

/// The serialized metrics of `cfg` run with `slots` (see `build`), in
/// slices (`run_until`) when `sliced`.
fn metrics(cfg: SimConfig, slots: Option<bool>, sliced: bool) -> String {
    let end = cfg.duration;
    let mut sim = Simulation::build(cfg, slots).expect("builds");
    if sliced {
        for k in 1..=5 {
            sim.run_until(end / 5 * k - 1).expect("slice runs");
        }
    }
    sim.run_until(end).expect("runs");
    let (m, _) = sim.finish().expect("finishes");
    serde_json::to_string(&m).expect("serialisable metrics")
}

fn same_with_and_without_slots(cfg: SimConfig) {
    let n = cfg.tasks.len();
    let off = metrics(cfg.clone(), Some(false), false);
    assert_eq!(off, metrics(cfg.clone(), Some(true), false), "{n} tasks");
    assert_eq!(off, metrics(cfg.clone(), None, false), "{n} tasks");
    assert_eq!(off, metrics(cfg, Some(true), true), "{n} tasks, sliced");
    // not a vacuous comparison: jobs ran, and some were aborted
    let m: serde_json::Value = serde_json::from_str(&off).expect("json");
    let tasks = m["tasks"].as_array().expect("tasks");
    let sum = |f: &str| tasks.iter().filter_map(|t| t[f].as_u64()).sum::<u64>();
    let (done, aborted) = (sum("completed"), sum("aborted"));
    assert!(
        done > 0 && aborted > 0,
        "{n} tasks: {done} completed, {aborted} aborted"
    );
}

#[test]
fn slots_on_one_cpu_give_the_same_metrics() {
    for tasks in [33, 100, 200, 300, 512] {
        same_with_and_without_slots(system(1, tasks, 1.2, 300));
    }
}

#[test]
fn slots_on_several_cpus_give_the_same_metrics() {
    same_with_and_without_slots(system(8, 10, 1.2, 300));
    same_with_and_without_slots(system(4, 40, 1.1, 200));
}

#[test]
fn slots_are_used_for_33_to_512_tasks() {
    for (tasks, slots) in [
        (10, false),
        (32, false),
        (33, true),
        (512, true),
        (513, false),
    ] {
        let sim = Simulation::new(system(1, tasks, 0.5, 10)).expect("builds");
        assert_eq!(sim.events.has_slots(), slots, "{tasks} tasks");
    }
}

#[test]
fn golden_systems_with_slots_give_the_golden_metrics() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden");
    let mut n = 0;
    for e in std::fs::read_dir(&dir).expect("tests/golden") {
        let path = e.expect("entry").path();
        let name = path.to_string_lossy().into_owned();
        if !name.ends_with(".config.json") {
            continue;
        }
        let text = std::fs::read_to_string(&path).expect("config");
        let cfg: SimConfig = serde_json::from_str(&text).expect("valid config");
        let want = std::fs::read_to_string(name.replace(".config.json", ".metrics.json"))
            .expect("golden metrics");
        assert_eq!(metrics(cfg, Some(true), false), want.trim_end(), "{name}");
        n += 1;
    }
    assert!(n >= 50, "{n} golden systems");
}
