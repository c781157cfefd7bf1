//! A depleted server woken while it waits for budget runs when its
//! replenishment arrives -- not at the next unrelated event on its CPU.
//!
//! Hand-checked schedule (times in us), one CPU: sporadic server S (budget
//! 90, period 300, the higher priority) and an unbounded server L running
//! a CPU hog. In S, task `a` is released at 0 and computes 90 (S's whole
//! budget: a replenishment of 90 is due at 300); task `b` is released at
//! 100 and computes 50 while S has no budget. At 300 S's budget comes back
//! and `b` runs 300-350: response 250. (The simulator used to miss that
//! instant: `b`'s wake-up did not preempt, so nothing asked the core again
//! until `a`'s next release at 1000, and `b` finished at 1140.)

use irqlab_sim::{simulate, SimConfig};
use serde_json::json;

fn config(policy: serde_json::Value) -> SimConfig {
    serde_json::from_value(json!({
        "duration": 2_000_000u64,
        "servers": [policy,
                    {"name": "L", "cpu": 0, "policy": "unbounded", "rank": 1_000_000_000_000u64}],
        "tasks": [
            {"name": "a", "server": 0, "priority": 2,
             "release": {"kind": "periodic", "period": 1_000_000, "offset": 0},
             "program": [{"op": "compute", "ns": 90_000}]},
            {"name": "b", "server": 0, "priority": 1,
             "release": {"kind": "once", "at": 100_000},
             "program": [{"op": "compute", "ns": 50_000}]},
            {"name": "hog", "server": 1, "priority": 1,
             "release": {"kind": "once", "at": 0},
             "program": [{"op": "compute", "ns": 10_000_000}]},
        ],
    }))
    .expect("valid config")
}

#[test]
fn a_woken_depleted_sporadic_server_runs_at_its_replenishment() {
    let s =
        json!({"name": "S", "cpu": 0, "policy": "sporadic", "budget": 90_000, "period": 300_000});
    let (m, _) = simulate(config(s)).expect("simulates");
    let b = &m.tasks[1];
    assert_eq!(b.completed, 1);
    assert_eq!(b.response.max, Some(250_000), "b runs 300-350 us");
}

#[test]
fn a_woken_depleted_deferrable_server_runs_at_its_period_boundary() {
    // deferrable: full budget again at the boundary 300
    let s =
        json!({"name": "S", "cpu": 0, "policy": "deferrable", "budget": 90_000, "period": 300_000});
    let (m, _) = simulate(config(s)).expect("simulates");
    assert_eq!(m.tasks[1].response.max, Some(250_000));
}

#[test]
fn a_woken_depleted_server_runs_at_its_replenishment_on_an_idle_cpu() {
    let s =
        json!({"name": "S", "cpu": 0, "policy": "sporadic", "budget": 90_000, "period": 300_000});
    let mut cfg = config(s);
    cfg.tasks.truncate(2); // no hog: the CPU idles from 90 on
    let (m, _) = simulate(cfg).expect("simulates");
    assert_eq!(m.tasks[1].response.max, Some(250_000));
}
