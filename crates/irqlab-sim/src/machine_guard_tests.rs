//! Direct tests of the no-progress guard of `Simulation::run_until`: events
//! at one instant beyond the limit end the run with an error naming the
//! rule; the count restarts at every new instant, so the same number of
//! events spread over two instants is a normal run.

use super::*;

/// An idle one-CPU machine with the guard's limit set to `limit`.
fn idle(limit: u64) -> Simulation {
    let cfg: SimConfig = serde_json::from_value(serde_json::json!({
        "duration": 1_000_000u64,
        "servers": [{"name": "v", "cpu": 0, "policy": "unbounded", "rank": 1}],
        "tasks": [],
    }))
    .expect("a valid idle configuration");
    let mut sim = Simulation::new(cfg).expect("builds");
    sim.instant_limit = limit;
    sim
}

/// Post `n` events at `t` that do nothing, as a zero-delay loop would.
fn post_noops(sim: &mut Simulation, t: u64, n: u64) {
    for _ in 0..n {
        sim.post(t, EvKind::Nop);
    }
}

#[test]
fn events_at_one_instant_beyond_the_limit_are_an_error() {
    // The first event of an instant starts its count; `limit` more follow.
    let mut sim = idle(100);
    post_noops(&mut sim, 5_000, 101);
    sim.run_until(1_000_000)
        .expect("101 events at one instant pass");

    let mut sim = idle(100);
    post_noops(&mut sim, 5_000, 102);
    let e = sim
        .run_until(1_000_000)
        .expect_err("102 events at one instant");
    let msg = e.to_string();
    assert!(msg.contains("no progress"), "{msg}");
    assert!(msg.contains("more than 100 events"), "{msg}");
    assert!(msg.contains("t = 5000 ns"), "{msg}");
    assert_eq!(sim.now(), 5_000, "stopped at the stuck instant");
}

#[test]
fn the_count_restarts_at_every_instant() {
    let mut sim = idle(100);
    post_noops(&mut sim, 5_000, 101);
    post_noops(&mut sim, 6_000, 101);
    sim.run_until(1_000_000)
        .expect("two instants of 101 events each");
    assert!(sim.events_processed() >= 202);
}

#[test]
fn a_new_simulation_has_the_documented_limit() {
    let cfg: SimConfig = serde_json::from_value(serde_json::json!({
        "duration": 1_000u64,
        "servers": [{"name": "v", "cpu": 0, "policy": "unbounded", "rank": 1}],
        "tasks": [],
    }))
    .expect("valid");
    assert_eq!(
        Simulation::new(cfg).expect("builds").instant_limit,
        MAX_EVENTS_PER_INSTANT
    );
}
