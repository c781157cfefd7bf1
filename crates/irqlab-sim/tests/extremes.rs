//! Storms and extreme values are results, not hangs or wrap-arounds.
//!
//! * A device raising a 2 us top half every 1 us (twice what its CPU can
//!   handle) on the quest and hypervisor paths runs in time linear in its
//!   interrupts; its CPU's queue of pending top halves stays bounded and the
//!   lost interrupts are counted.
//! * Times beyond 10^6 s are refused by `SimConfig::check` (a deadline or a
//!   sleep of `u64::MAX`, a disk bottom half of 2^80 ns); the longest times
//!   accepted saturate ("never within the run") instead of wrapping.
//! * A zero-delay event loop is an error, not an endless run.

use irqlab_sim::{simulate, SimConfig};
use serde_json::json;

fn storm(path: &str, duration_ns: u64) -> SimConfig {
    let hyper = path == "hypervisor";
    let mut cfg = json!({
        "path": path,
        "duration": duration_ns,
        "servers": [{"name": "v", "cpu": 0, "policy": "sporadic", "budget": 1_000_000, "period": 5_000_000}],
        "tasks": [{"name": "t", "server": 0, "priority": 1,
                   "release": {"kind": "periodic", "period": 5_000_000},
                   "program": [{"op": "compute", "ns": 100_000}]}],
        "classes": [],
        "devices": [{"name": "storm", "cpu": 0, "class": 0, "kind": "generic",
                     "min_interarrival": 1_000, "isr": 2_000, "dsr": 0}],
    });
    if hyper {
        cfg["servers"][0] = json!({"name": "v", "cpu": 0, "policy": "deferrable", "budget": 1_000_000, "period": 5_000_000});
    } else {
        cfg["servers"]
            .as_array_mut()
            .expect("servers")
            .push(json!({"name": "io", "cpu": 0, "policy": "pibs", "num": 1, "den": 10}));
        cfg["classes"] = json!([{"name": "c", "iovcpu": 1, "consumer": 0}]);
    }
    serde_json::from_value(cfg).expect("valid storm config")
}

#[test]
fn a_storm_loses_interrupts_instead_of_hanging() {
    for path in ["quest", "hypervisor"] {
        // 200 ms: 200,000 arrivals, 100,000 of them handled at most
        let (m, _) = simulate(storm(path, 200_000_000)).expect("simulates");
        let lost = m.cpus[0].lost_interrupts;
        let raised = m.devices[0].interrupts;
        assert!(raised >= 199_000, "{path}: {raised} interrupts raised");
        assert!(lost > 0, "{path}: nothing lost");
        // the CPU handles at most one 2 us top half per 2 us
        assert!(m.cpus[0].isr_ns <= 200_000_000, "{path}");
        assert!(m.tasks[0].deadline_misses > 0, "{path}: the task starves");
    }
}

fn one_task(program: serde_json::Value, deadline: Option<u64>) -> serde_json::Value {
    json!({
        "duration": 100_000_000u64,
        "servers": [{"name": "v", "cpu": 0, "policy": "unbounded", "rank": 1}],
        "tasks": [{"name": "t", "server": 0, "priority": 1,
                   "release": {"kind": "periodic", "period": 1_000_000, "deadline": deadline},
                   "program": program}],
    })
}

fn run(v: serde_json::Value) -> irqlab_sim::Metrics {
    let cfg: SimConfig = serde_json::from_value(v).expect("valid config");
    simulate(cfg).expect("simulates").0
}

/// The error a configuration is refused with (`SimConfig::check`).
fn refused(v: serde_json::Value) -> String {
    let cfg: SimConfig = serde_json::from_value(v).expect("valid shape");
    simulate(cfg).expect_err("refused").to_string()
}

/// The longest time a configuration may hold (10^6 s).
const MAX_TIME: u64 = 1_000_000_000_000_000;

#[test]
fn u64_max_times_are_refused_and_the_longest_accepted_saturate() {
    let e = refused(one_task(
        json!([{"op": "compute", "ns": 10_000}]),
        Some(u64::MAX),
    ));
    assert!(e.contains("deadline"), "{e}");
    // a deadline of 10^6 s is never missed
    let m = run(one_task(
        json!([{"op": "compute", "ns": 10_000}]),
        Some(MAX_TIME),
    ));
    // releases at 0, 1 ms, ..., 100 ms; the last one is still running
    assert_eq!((m.tasks[0].released, m.tasks[0].completed), (101, 100));
    assert_eq!(m.tasks[0].deadline_misses, 0);
    let sleep = |ns: u64| json!([{"op": "compute", "ns": 10_000}, {"op": "sleep", "ns": ns}]);
    let e = refused(one_task(sleep(u64::MAX), None));
    assert!(e.contains("sleep") || e.contains("ns"), "{e}");
    // a sleep of 10^6 s (less the compute) does not end within the run
    let m = run(one_task(sleep(MAX_TIME - 10_000), None));
    assert_eq!(m.tasks[0].released, 101);
    assert_eq!(m.tasks[0].completed, 0, "the first job sleeps past the run");
}

#[test]
fn a_disk_bottom_half_of_2_pow_80_ns_is_refused() {
    let mut v = one_task(json!([{"op": "io", "device": 0}]), None);
    v["path"] = json!("quest-no-iovcpu");
    v["classes"] = json!([{"name": "c", "iovcpu": null, "consumer": 0}]);
    v["devices"] = json!([{"name": "d", "cpu": 0, "class": 0, "kind": "disk",
        "latency": 1_000, "top_half": 1_000, "per_sector": 1u64 << 40,
        "sectors": 1u64 << 40, "sector_bytes": 512}]);
    let e = refused(v);
    assert!(e.contains("per_sector") || e.contains("sectors"), "{e}");
}

#[test]
fn a_zero_interval_arrival_is_refused_or_stopped() {
    let mut cfg = storm("hypervisor", 1_000_000);
    let mut v = serde_json::to_value(&cfg).expect("serialisable");
    v["devices"][0]["min_interarrival"] = json!(0);
    v["devices"][0]["isr"] = json!(0);
    cfg = serde_json::from_value(v).expect("valid shape");
    let err = simulate(cfg).expect_err("no endless run").to_string();
    assert!(
        err.contains("min_interarrival") || err.contains("no progress"),
        "{err}"
    );
}
