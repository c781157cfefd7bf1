//! Direct tests of the no-progress guard of `Simulation::run_until`: events
//! at one instant beyond the limit end the run with an error naming the
//! rule; the count restarts at every new instant, so the same number of
//! events spread over two instants is a normal run. And of the room
//! `Simulation::new` gives each task's completion list (sized from the
//! jobs it can release, at most `max_completions`).

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

/// Each task's completion list has room, from the start, for every job it
/// can release in the run: `(duration - offset) / period + 1` periodic
/// jobs (at most `jobs`), one for a one-shot task released in the run,
/// none after it; never more than `max_completions`.
#[test]
fn completion_lists_are_sized_from_the_releases() {
    let cfg = |max_completions: u64| -> SimConfig {
        let task = |release: serde_json::Value| {
            serde_json::json!({"name": "t", "server": 0, "release": release,
                               "program": [{"op": "compute", "ns": 1_000u64}]})
        };
        serde_json::from_value(serde_json::json!({
            "duration": 1_000_000u64,
            "max_completions": max_completions,
            "servers": [{"name": "v", "cpu": 0, "policy": "unbounded", "rank": 1}],
            "tasks": [
                task(serde_json::json!({"kind": "periodic", "period": 10_000u64})),
                task(serde_json::json!({"kind": "periodic", "period": 10_000u64,
                                        "offset": 5_000u64})),
                task(serde_json::json!({"kind": "periodic", "period": 10_000u64,
                                        "jobs": 7u64})),
                task(serde_json::json!({"kind": "once", "at": 3u64})),
                task(serde_json::json!({"kind": "once", "at": 2_000_000u64})),
                task(serde_json::json!({"kind": "periodic", "period": 10_000u64,
                                        "offset": 2_000_000u64})),
            ],
        }))
        .expect("a valid configuration")
    };
    let caps = |c: SimConfig| -> Vec<usize> {
        let sim = Simulation::new(c).expect("builds");
        sim.tasks.iter().map(|t| t.completions.capacity()).collect()
    };
    let want = [101, 100, 7, 1, 0, 0];
    for (got, want) in caps(cfg(10_000)).into_iter().zip(want) {
        // `reserve_exact` may round up, never down
        assert!(
            (want..want + 8).contains(&got),
            "capacity {got}, want {want}"
        );
    }
    for (got, want) in caps(cfg(50)).into_iter().zip([50, 50, 7, 1, 0, 0]) {
        assert!(
            (want..want + 8).contains(&got),
            "capacity {got}, want {want}"
        );
    }
    // the same jobs complete whatever the room (a run to the end)
    let (m, _) = Simulation::new(cfg(10_000))
        .expect("builds")
        .run()
        .expect("runs");
    let done: Vec<usize> = m.tasks.iter().map(|t| t.completions.len()).collect();
    assert_eq!(done, [100, 100, 7, 1, 0, 0]);
}
