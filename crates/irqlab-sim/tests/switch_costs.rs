//! Hand-checked schedules of the thread switch and timer costs
//! (`switch_costs`, from a model's `costs:`; lower/costs.rs says which
//! measurement each is): a direct switch between two threads costs
//! `context_switch` (plus, on `quest*`, `priority_switch` per thread whose
//! priority the supervisor changes), on nobody's budget; a periodic
//! release and (on `quest*`) the supervisor's `next_update` wake-up come
//! `timer_latency` late. Each test checks that the cost shifts a response
//! by exactly what the schedule says.

use irqlab_sim::{simulate, Metrics, SimConfig};
use serde_json::{json, Value};

const US: u64 = 1_000;

fn sim(v: Value) -> Metrics {
    let cfg: SimConfig = serde_json::from_value(v).expect("valid config");
    simulate(cfg).expect("runs").0
}

/// One CPU, `path`: `hi` (rank 1) runs `ctl`, 100 us every 10 ms from
/// 200 us; `lo` (rank 2) runs `bg`, one job of 500 us at 0. Both servers
/// sporadic (10 ms period) on `quest`, plain FIFO on `linux`.
fn preemption(path: &str, costs: Value) -> Value {
    let (hi, lo) = if path == "linux" {
        (
            json!({"name": "hi", "policy": "unbounded", "rank": 1}),
            json!({"name": "lo", "policy": "unbounded", "rank": 2}),
        )
    } else {
        (
            json!({"name": "hi", "policy": "sporadic", "budget": 1_000 * US, "period": 10_000 * US, "rank": 1}),
            json!({"name": "lo", "policy": "sporadic", "budget": 2_000 * US, "period": 10_000 * US, "rank": 2}),
        )
    };
    json!({
        "path": path, "duration": 2_000 * US, "window": 2_000 * US,
        "switch_costs": costs,
        "servers": [hi, lo],
        "tasks": [
            {"name": "ctl", "server": 0,
             "release": {"kind": "periodic", "period": 10_000 * US, "offset": 200 * US},
             "program": [{"op": "compute", "ns": 100 * US}]},
            {"name": "bg", "server": 1, "release": {"kind": "once"},
             "program": [{"op": "compute", "ns": 500 * US}]}
        ]
    })
}

fn responses(m: &Metrics) -> (Option<u64>, Option<u64>) {
    (m.tasks[0].response.max, m.tasks[1].response.max)
}

/// Without costs: `bg` [0, 200), `ctl` [200, 300), `bg` [300, 600).
#[test]
fn no_costs_no_shift() {
    for path in ["quest", "linux"] {
        let m = sim(preemption(path, json!({})));
        assert_eq!(responses(&m), (Some(100 * US), Some(600 * US)), "{path}");
        assert_eq!(m.cpus[0].switch_ns, 0);
    }
}

/// `quest`, context switch 3 us, priority switch 2 us. `bg` starts on an
/// idle CPU (no switch). At 200 `ctl` preempts: `lo`'s thread drops and
/// `hi`'s rises (2 priority switches) and the kernel switches: 3 + 2 x 2 =
/// 7 us, `ctl` [207, 307), response 107 us. At 307 back to `bg`: 7 us,
/// `bg` [314, 614), response 614 us. The 14 us are on no budget: `hi` used
/// 100 us, `lo` 500 us.
#[test]
fn quest_direct_switch_pays_context_and_priority_switches() {
    let m = sim(preemption(
        "quest",
        json!({"context_switch": 3 * US, "priority_switch": 2 * US}),
    ));
    assert_eq!(responses(&m), (Some(107 * US), Some(614 * US)));
    assert_eq!(m.cpus[0].switch_ns, 14 * US);
    assert_eq!(
        (m.servers[0].busy_ns, m.servers[1].busy_ns),
        (100 * US, 500 * US)
    );
    assert_eq!(m.cpus[0].idle_ns, 2_000 * US - 614 * US);
}

/// `linux`: no supervisor, so no priority switch even when given; each of
/// the two direct switches costs the context switch: 103 and 606 us.
#[test]
fn linux_direct_switch_pays_the_context_switch_only() {
    let m = sim(preemption(
        "linux",
        json!({"context_switch": 3 * US, "priority_switch": 2 * US}),
    ));
    assert_eq!(responses(&m), (Some(103 * US), Some(606 * US)));
    assert_eq!(m.cpus[0].switch_ns, 6 * US);
}

/// Timer latency 5 us: `ctl`'s release timer fires at 205; its job is
/// still released at 200, so with the 7 us switch it runs [212, 312):
/// response 112 us. `bg` ran meanwhile ([0, 205)) and resumes at 319:
/// it still ends at 614. On `linux` (3 us switch): `ctl` [208, 308),
/// response 108 us; `bg` ends at 606.
#[test]
fn timer_latency_delays_a_periodic_release() {
    let m = sim(preemption(
        "quest",
        json!({"context_switch": 3 * US, "priority_switch": 2 * US, "timer_latency": 5 * US}),
    ));
    assert_eq!(responses(&m), (Some(112 * US), Some(614 * US)));
    let m = sim(preemption(
        "linux",
        json!({"context_switch": 3 * US, "timer_latency": 5 * US}),
    ));
    assert_eq!(responses(&m), (Some(108 * US), Some(606 * US)));
}

/// `quest`: `hi` (300 us / 10 ms) runs `spin` (500 us at 0), `lo` runs
/// `after` (100 us at 0). Without costs `hi` is exhausted at 300 and
/// `after` runs [300, 400). The supervisor's timer for that exhaustion
/// (the core's `next_update`) wakes it 5 us late: `spin` overruns to 305,
/// `after` runs [305, 405) -- response 405 us. `linux` enforces budgets
/// in the kernel: no shift there (a CBS of the same size).
#[test]
fn timer_latency_delays_the_supervisors_decision() {
    let exhaust = |path: &str, policy: Value, costs: Value| {
        let mut hi = policy.clone();
        hi["name"] = json!("hi");
        hi["rank"] = json!(1);
        let mut lo = policy;
        lo["name"] = json!("lo");
        lo["rank"] = json!(2);
        sim(json!({
            "path": path, "duration": 2_000 * US, "window": 2_000 * US,
            "switch_costs": costs,
            "servers": [hi, lo],
            "tasks": [
                {"name": "spin", "server": 0, "release": {"kind": "once"},
                 "program": [{"op": "compute", "ns": 500 * US}]},
                {"name": "after", "server": 1, "release": {"kind": "once"},
                 "program": [{"op": "compute", "ns": 100 * US}]}
            ]
        }))
    };
    let ss = json!({"policy": "sporadic", "budget": 300 * US, "period": 10_000 * US});
    let m = exhaust("quest", ss.clone(), json!({}));
    assert_eq!(m.tasks[1].response.max, Some(400 * US));
    let m = exhaust("quest", ss, json!({"timer_latency": 5 * US}));
    assert_eq!(m.tasks[1].response.max, Some(405 * US));
    let cbs = json!({"policy": "cbs", "runtime": 300 * US, "period": 10_000 * US});
    let base = exhaust("linux", cbs.clone(), json!({}));
    let late = exhaust("linux", cbs, json!({"timer_latency": 5 * US}));
    assert_eq!(base.tasks[1].response.max, late.tasks[1].response.max);
}

/// The hypervisor path has its own VCPU switch model: thread costs there
/// are refused, naming the field.
#[test]
fn hypervisor_refuses_thread_switch_costs() {
    let v = json!({
        "path": "hypervisor", "duration": 1_000 * US,
        "switch_costs": {"context_switch": 1_000},
        "servers": [{"name": "v", "policy": "deferrable", "budget": 100 * US, "period": 1_000 * US}],
        "tasks": []
    });
    let cfg: SimConfig = serde_json::from_value(v).expect("parses");
    let e = simulate(cfg).expect_err("refused").to_string();
    assert!(
        e.contains("switch_costs") && e.contains("thread-based path"),
        "{e}"
    );
}
