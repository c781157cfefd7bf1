//! Per-job and per-request records (`records`): off by default, every row
//! kept when on (never capped by `max_completions`), and consistent with
//! the metrics.
//!
//! Hand-checked (as in `abort.rs`): a task of period 1 ms computing 1.5 ms
//! alone on a CPU, 10 ms simulated: job k is released at k ms and finishes
//! at 1.5 (k + 1) ms, so jobs 0-5 finish, every one late.

use std::path::PathBuf;

use irqlab_sim::{SimConfig, Simulation};
use serde_json::json;

fn lone_task(jobs: bool) -> SimConfig {
    serde_json::from_value(json!({
        "duration": 10_000_000u64,
        "max_completions": 2,
        "records": {"jobs": jobs},
        "servers": [{"name": "s", "cpu": 0, "policy": "unbounded", "rank": 1}],
        "tasks": [{"name": "t", "server": 0,
                   "release": {"kind": "periodic", "period": 1_000_000},
                   "program": [{"op": "compute", "ns": 1_500_000}]}],
    }))
    .expect("valid config")
}

fn run(cfg: SimConfig) -> (irqlab_sim::Metrics, irqlab_sim::Records) {
    let mut sim = Simulation::new(cfg).expect("valid");
    let end = u64::MAX;
    sim.run_until(end).expect("runs");
    let rec = sim.take_records();
    let (m, _) = sim.finish().expect("finishes");
    (m, rec)
}

#[test]
fn every_job_is_recorded_by_hand() {
    let (m, r) = run(lone_task(true));
    let ms = 1_000_000u64;
    assert_eq!(r.job_task, vec![0; 6]);
    assert_eq!(r.job_release, (0..6).map(|k| k * ms).collect::<Vec<_>>());
    assert_eq!(
        r.job_completion,
        (1..=6).map(|k| k * 3 * ms / 2).collect::<Vec<_>>()
    );
    assert_eq!(r.job_late, vec![1; 6]);
    // the metrics' list stops at max_completions; the records do not
    assert_eq!(m.tasks[0].completions.len(), 2);
    assert_eq!(m.tasks[0].completed, 6);
    assert!(r.req_device.is_empty());
}

#[test]
fn records_are_off_by_default() {
    let (_, r) = run(lone_task(false));
    assert_eq!(r, irqlab_sim::Records::default());
}

#[test]
fn request_records_match_the_device_latency_metrics() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden/scenario-usb-roundtrip-000.config.json");
    let text = std::fs::read_to_string(path).expect("golden config");
    let mut cfg: SimConfig = serde_json::from_str(&text).expect("valid");
    cfg.records.requests = true;
    cfg.records.jobs = true;
    let (m, r) = run(cfg);
    assert!(!r.req_device.is_empty());
    for (d, dm) in m.devices.iter().enumerate() {
        let lat: Vec<u64> = (0..r.req_device.len())
            .filter(|&i| r.req_device[i] as usize == d)
            .map(|i| r.req_end[i] - r.req_start[i])
            .collect();
        assert_eq!(lat.len() as u64, dm.latency.count, "{}", dm.name);
        assert_eq!(lat.iter().copied().max(), dm.latency.max, "{}", dm.name);
        assert_eq!(lat.iter().copied().min(), dm.latency.min, "{}", dm.name);
    }
    let jobs: u64 = m.tasks.iter().map(|t| t.completed).sum();
    assert_eq!(r.job_task.len() as u64, jobs);
}
