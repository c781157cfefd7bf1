//! A model's user upcall (`devices[].upcall`, irqlab_model::handling) in
//! the simulator: the handler runs on a sporadic server of the upcall's
//! budget above every VCPU of its CPU (UPCALL §3.2), hand-checked.

use std::path::Path;

use irqlab_sim::{from_model, simulate};

/// A generic device every 1 ms (1 us top half, 100 us handler) on an
/// upcall of 200 us per 10 ms, next to a task spinning forever on a Main
/// VCPU of 5 ms / 10 ms. Over 100 ms: 100 events, but the upcall server
/// runs at most 2 handlers per 10 ms (200 us), so 20 are handled, and the
/// rest wait in the buffer.
const MODEL: &str = "machine: {cpus: 1, path: quest}
simulation: {duration: 100ms}
vcpus: [{name: m, policy: sporadic, budget: 5ms, period: 10ms}]
tasks: [{name: spin, vcpu: m, program: [{forever: [{compute: 1ms}]}]}]
devices:
  - {name: tick, kind: generic, source: timerfd, min_interarrival: 1ms, isr: 1us, dsr: 100us,
     upcall: {budget: 200us, period: 10ms}}
";

#[test]
fn an_upcall_runs_on_its_own_budget_above_the_vcpus() {
    let (m, _) = irqlab_model::load_str(MODEL).expect("valid");
    let cfg = from_model(&m, Path::new(".")).expect("lowers");
    assert_eq!(cfg.servers.len(), 2);
    assert_eq!(cfg.servers[1].name, "tick.upcall");
    assert_eq!(cfg.servers[1].rank, Some(0));
    assert_eq!(cfg.classes.len(), 1);
    assert_eq!(cfg.classes[0].iovcpu, Some(1));
    assert_eq!(cfg.devices[0].class, 0);
    let (met, _) = simulate(cfg).expect("runs");
    let up = &met.servers[1];
    // 10 periods x 200 us of budget: 20 handlers of 100 us.
    assert_eq!(up.busy_ns, 2_000_000, "{up:?}");
    assert_eq!(met.devices[0].handled, 20);
    // The Main VCPU still gets its 5 ms per 10 ms, less at most the 100
    // top halves of 1 us charged to it when they interrupt it.
    let main = met.servers[0].busy_ns;
    assert!((49_900_000..=50_000_000).contains(&main), "{main}");
}
