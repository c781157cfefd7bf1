//! `abort_on_miss` (SimSo's default for late jobs) and `max_completions`.
//!
//! Hand-checked: a task of period 1 ms (deadline = period) computing 1.5 ms
//! alone on a CPU, 10 ms simulated (releases at 0, 1, ..., 10 ms).
//! * Without abort: job k (released at k ms) finishes at 1.5 (k + 1) ms, so
//!   jobs 0-5 finish (the 6th at 9 ms), every one late; the backlog grows,
//!   and jobs 6-8 are unfinished past their deadline at the end.
//! * With abort: every job is dropped at its deadline after 1 ms of work;
//!   deadlines at 1..10 ms fall within the run: 10 aborted, none finished;
//!   the job released at 10 ms is still running at the end (its deadline
//!   11 ms has not passed), so the misses are exactly the 10 aborts.

use irqlab_sim::{simulate, SimConfig};
use serde_json::json;

fn cfg(abort: bool, program: serde_json::Value, max_completions: u64) -> SimConfig {
    serde_json::from_value(json!({
        "duration": 10_000_000u64,
        "max_completions": max_completions,
        "servers": [{"name": "s", "cpu": 0, "policy": "unbounded", "rank": 1}],
        "devices": [{"name": "nic", "cpu": 0, "class": 0, "kind": "nic", "top_half": 1_000,
                     "bottom_half": 1_000, "bytes": 64,
                     "arrival": {"kind": "periodic", "start": 50_000_000u64, "interval": 1_000_000}}],
        "classes": [{"name": "c", "iovcpu": null, "consumer": 0}],
        "path": "quest-no-iovcpu",
        "tasks": [{"name": "t", "server": 0, "abort_on_miss": abort,
                   "release": {"kind": "periodic", "period": 1_000_000},
                   "program": program}],
    }))
    .expect("valid config")
}

#[test]
fn late_jobs_run_to_completion_by_default() {
    let (m, _) = simulate(cfg(
        false,
        json!([{"op": "compute", "ns": 1_500_000}]),
        10_000,
    ))
    .expect("simulates");
    let t = &m.tasks[0];
    assert_eq!((t.released, t.completed, t.aborted), (11, 6, 0));
    assert_eq!(
        t.completions,
        vec![1_500_000, 3_000_000, 4_500_000, 6_000_000, 7_500_000, 9_000_000]
    );
    // 6 late, and jobs 6-8 unfinished past their deadline (job 9's is the
    // end of the run itself, not passed)
    assert_eq!((t.deadline_misses, t.unfinished_past_deadline), (9, 3));
}

#[test]
fn abort_on_miss_drops_each_job_at_its_deadline() {
    let (m, _) = simulate(cfg(
        true,
        json!([{"op": "compute", "ns": 1_500_000}]),
        10_000,
    ))
    .expect("simulates");
    let t = &m.tasks[0];
    assert_eq!((t.released, t.completed, t.aborted), (11, 0, 10));
    assert_eq!((t.deadline_misses, t.unfinished_past_deadline), (10, 0));
    // the CPU is busy all the time: each job gets 1 ms
    assert_eq!(m.cpus[0].idle_ns, 0);
}

#[test]
fn a_job_blocked_in_io_is_aborted_once_and_the_backlog_at_its_deadlines() {
    // the NIC sends nothing within the run: job 0 blocks in its read for
    // good; every later job waits behind it and is dropped at its deadline
    let (m, _) =
        simulate(cfg(true, json!([{"op": "io", "device": 0}]), 10_000)).expect("simulates");
    let t = &m.tasks[0];
    assert_eq!((t.released, t.completed, t.aborted), (11, 0, 10));
    assert_eq!((t.deadline_misses, t.unfinished_past_deadline), (10, 0));
}

#[test]
fn completion_times_are_kept_up_to_max_completions() {
    let (m, _) =
        simulate(cfg(false, json!([{"op": "compute", "ns": 100_000}]), 3)).expect("simulates");
    let t = &m.tasks[0];
    assert_eq!(
        t.completed, 10,
        "the job released at 10 ms ends after the run"
    );
    assert_eq!(t.completions, vec![100_000, 1_100_000, 2_100_000]);
}
