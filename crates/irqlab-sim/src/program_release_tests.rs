//! `TaskInfo::rel` (`TaskRelease`) is a copy of what a release reads of
//! the task's configuration: every task of every golden system, and of a
//! set with one-shot tasks, job limits, deadlines past the period and
//! `abort_on_miss` on each interrupt path (the thread-based ones with and
//! without a timer latency), has the record (and `release` the latency)
//! that the configuration gives when read directly here (not through
//! `task_release`).

use super::*;
use crate::config::SimConfig;
use serde_json::json;

/// The record `task` of `cfg` must have, from the configuration alone,
/// and how late its releases fire.
fn reference(cfg: &SimConfig, task: usize) -> (TaskRelease, u64) {
    let t = &cfg.tasks[task];
    let latency = match (cfg.path, &t.release) {
        (InterruptPath::Hypervisor, _) | (_, Release::Once { .. }) => 0,
        _ => cfg.switch_costs.timer_latency,
    };
    let rel = match t.release {
        Release::Once { .. } => TaskRelease {
            period: 0,
            jobs: u64::MAX,
            deadline: 0,
            abort_on_miss: t.abort_on_miss,
        },
        Release::Periodic {
            period,
            deadline,
            jobs,
            ..
        } => TaskRelease {
            period,
            jobs: jobs.unwrap_or(u64::MAX),
            deadline: deadline.unwrap_or(period),
            abort_on_miss: t.abort_on_miss,
        },
    };
    (rel, latency)
}

fn check(cfg: SimConfig, what: &str) -> usize {
    let sim = Simulation::new(cfg.clone()).expect("builds");
    assert_eq!(sim.tasks.len(), cfg.tasks.len(), "{what}");
    for (i, info) in sim.tasks.iter().enumerate() {
        let (rel, latency) = reference(&cfg, i);
        assert_eq!(info.rel, rel, "{what}: tasks[{i}]");
        // what `release` subtracts from the time its event fired
        let used = if info.rel.deadline().is_some() {
            sim.periodic_latency
        } else {
            0
        };
        assert_eq!(used, latency, "{what}: tasks[{i}]'s release latency");
    }
    cfg.tasks.len()
}

/// Four tasks, one of each kind of release, on `path` with a timer
/// latency of `timer_latency`.
fn mixed(path: &str, timer_latency: u64) -> SimConfig {
    let ms = 1_000_000u64;
    let release = [
        json!({"kind": "periodic", "period": 10 * ms}),
        json!({"kind": "periodic", "period": 20 * ms, "deadline": 25 * ms, "jobs": 3,
               "offset": ms}),
        json!({"kind": "once", "at": 2 * ms}),
        json!({"kind": "periodic", "period": 40 * ms, "deadline": 30 * ms}),
    ];
    let tasks: Vec<_> = release
        .iter()
        .enumerate()
        .map(|(i, r)| {
            json!({"name": format!("t{i}"), "server": 0, "abort_on_miss": i % 2 == 1,
                   "release": r, "program": [{"op": "compute", "ns": ms}]})
        })
        .collect();
    serde_json::from_value(json!({
        "duration": 100 * ms,
        "cpus": 1,
        "servers": [{"name": "s", "cpu": 0, "policy": "unbounded", "rank": 1}],
        "devices": [],
        "classes": [],
        "path": path,
        "switch_costs": {"timer_latency": timer_latency},
        "tasks": tasks,
    }))
    .expect("a valid task set")
}

#[test]
fn the_release_record_is_the_configuration_s() {
    let mut n = 0;
    for path in ["quest", "quest-no-iovcpu", "linux", "hypervisor"] {
        for lat in [0, 23_583] {
            if path == "hypervisor" && lat > 0 {
                continue; // (timer costs need a thread-based path)
            }
            n += check(mixed(path, lat), &format!("{path}, timer latency {lat}"));
        }
    }
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden");
    let mut systems = 0;
    for e in std::fs::read_dir(&dir).expect("tests/golden") {
        let path = e.expect("entry").path();
        let name = path.to_string_lossy().into_owned();
        if !name.ends_with(".config.json") {
            continue;
        }
        let text = std::fs::read_to_string(&path).expect("config");
        let cfg: SimConfig = serde_json::from_str(&text).expect("valid config");
        n += check(cfg, &name);
        systems += 1;
    }
    assert!(systems >= 50 && n >= 100, "{systems} systems, {n} tasks");
}
