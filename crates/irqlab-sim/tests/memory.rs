//! Memory that does not grow with simulated time: the per-window series
//! are bounded by `max_window_values` (wider windows, stated in the
//! metrics), and a traced event costs one fixed-size record.
//!
//! Hand-checked case: two RM tasks on one CPU -- `a` computes 2 ms every
//! 10 ms, `b` 3 ms every 20 ms -- for 10 s with 1 ms windows: 10,000
//! windows x 4 series (2 servers, 2 CPU series) = 40,000 values. With a
//! bound of 1,000 the factor is 40, so windows of 40 ms, 250 of them; each
//! 40 ms window holds exactly 4 jobs of `a` (8 ms, share 0.2) and 2 of `b`
//! (6 ms, share 0.15).

use irqlab_sim::{simulate, SimConfig};
use serde_json::json;

fn cfg(max_window_values: Option<u64>) -> SimConfig {
    let mut v = json!({
        "duration": 10_000_000_000u64,
        "window": 1_000_000,
        "servers": [{"name": "sa", "cpu": 0, "policy": "unbounded", "rank": 1},
                    {"name": "sb", "cpu": 0, "policy": "unbounded", "rank": 2}],
        "tasks": [{"name": "a", "server": 0, "release": {"kind": "periodic", "period": 10_000_000},
                   "program": [{"op": "compute", "ns": 2_000_000}]},
                  {"name": "b", "server": 1, "release": {"kind": "periodic", "period": 20_000_000},
                   "program": [{"op": "compute", "ns": 3_000_000}]}],
    });
    if let Some(n) = max_window_values {
        v["max_window_values"] = json!(n);
    }
    serde_json::from_value(v).expect("valid config")
}

#[test]
fn windows_widen_to_stay_within_the_bound_and_say_so() {
    let (m, _) = simulate(cfg(Some(1_000))).expect("simulates");
    assert_eq!(m.window_ns, 40_000_000);
    assert_eq!(m.window_requested_ns, Some(1_000_000));
    for (s, share) in m.servers.iter().zip([0.2, 0.15]) {
        assert_eq!(s.share_windows.len(), 250, "{}", s.name);
        assert!(
            s.share_windows.iter().all(|x| (x - share).abs() < 1e-12),
            "{}",
            s.name
        );
    }
    assert_eq!(m.cpus[0].overhead_windows.len(), 250);
    let text = serde_json::to_string(&m).expect("serialisable");
    assert!(text.contains("\"window_requested_ns\":1000000"));
}

#[test]
fn within_the_bound_nothing_changes() {
    let (m, _) = simulate(cfg(None)).expect("simulates");
    assert_eq!((m.window_ns, m.window_requested_ns), (1_000_000, None));
    assert_eq!(m.servers[0].share_windows.len(), 10_000);
    // windows alternate 2 ms of `a` in every 10 ms: 1 ms windows are full
    // or empty, and their mean is the share
    let w = &m.servers[0].share_windows;
    assert!((w.iter().sum::<f64>() / w.len() as f64 - 0.2).abs() < 1e-12);
    let text = serde_json::to_string(&m).expect("serialisable");
    assert!(!text.contains("window_requested_ns"));
}

#[test]
fn a_bound_of_zero_is_refused_by_name() {
    let e = simulate(cfg(Some(0))).expect_err("refused").to_string();
    assert!(e.contains("max_window_values"), "{e}");
}

#[test]
fn a_traced_event_costs_at_most_48_bytes() {
    const { assert!(irqlab_sim::trace::RECORD_BYTES <= 48) };
    let mut c = cfg(None);
    c.trace.enabled = true;
    c.trace.max_events = 2_000_000;
    let (_, t) = simulate(c).expect("simulates");
    assert!(t.len() > 4_000, "{} events", t.len());
    // a run slice is one record for two events; capacity may double
    assert!(
        t.memory_bytes() <= 2 * 48 * t.len(),
        "{} B",
        t.memory_bytes()
    );
}
