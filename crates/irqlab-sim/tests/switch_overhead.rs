//! Hand-checked schedules of the VCPU switch-overhead model
//! (`switch_overhead`, hypervisor path): a CPU that starts running a VCPU's
//! execution context after another VCPU, or after idling, spends the
//! overhead first, on the incoming VCPU's budget; the same context
//! continuing (another of its threads, its own pseudo-VCPU, VINT §V-A)
//! costs nothing. With 0 (the default) every schedule is the one without
//! the model.

use std::path::Path;

use irqlab_sim::{from_model, simulate, Metrics, SimConfig};
use serde_json::{json, Value};

const US: u64 = 1_000;

fn cfg(v: Value) -> SimConfig {
    serde_json::from_value(v).expect("valid config")
}

fn sim(v: Value) -> Metrics {
    simulate(cfg(v)).expect("runs").0
}

/// Two VCPUs on one CPU: `hi` (rank 1) runs `ctl`, 100 us every 1 ms; `lo`
/// (rank 2) runs `bg`, one job of 500 us from 0.
fn two_vcpus(overhead: u64) -> Value {
    json!({
        "path": "hypervisor", "duration": 1_900 * US, "window": 1_900 * US,
        "switch_overhead": overhead,
        "servers": [
            {"name": "hi", "policy": "deferrable", "budget": 200 * US, "period": 1_000 * US, "rank": 1},
            {"name": "lo", "policy": "deferrable", "budget": 1_500 * US, "period": 2_000 * US, "rank": 2}
        ],
        "tasks": [
            {"name": "ctl", "server": 0, "release": {"kind": "periodic", "period": 1_000 * US},
             "program": [{"op": "compute", "ns": 100 * US}]},
            {"name": "bg", "server": 1, "release": {"kind": "once"},
             "program": [{"op": "compute", "ns": 500 * US}]}
        ]
    })
}

/// Switch overhead 10 us. At 0 `hi` is loaded: switch [0, 10), `ctl`
/// [10, 110) -- response 110 us instead of 100. At 110 `lo` follows `hi`:
/// switch [110, 120), `bg` [120, 620) -- response 620 us instead of 600.
/// The CPU idles [620, 1000); at 1000 `hi` is loaded again: switch
/// [1000, 1010), `ctl` [1010, 1110); the run ends at 1900 us. Three
/// switches, 30 us, each charged to the incoming VCPU: `hi` used 2 x 110
/// us, `lo` 510 us.
#[test]
fn overhead_charged_at_each_switch() {
    let m = sim(two_vcpus(10 * US));
    assert_eq!((m.cpus[0].vcpu_switches, m.cpus[0].switch_ns), (3, 30 * US));
    let ctl = &m.tasks[0].response;
    assert_eq!(
        (ctl.count, ctl.min, ctl.max),
        (2, Some(110 * US), Some(110 * US))
    );
    assert_eq!(m.tasks[1].response.max, Some(620 * US));
    assert_eq!(
        (m.servers[0].busy_ns, m.servers[1].busy_ns),
        (220 * US, 510 * US)
    );
    assert_eq!(m.cpus[0].idle_ns, 1_900 * US - 730 * US);

    // without the overhead: the same switches, no cost
    let m = sim(two_vcpus(0));
    assert_eq!((m.cpus[0].vcpu_switches, m.cpus[0].switch_ns), (3, 0));
    assert_eq!(m.tasks[0].response.max, Some(100 * US));
    assert_eq!(m.tasks[1].response.max, Some(600 * US));
    assert_eq!(
        (m.servers[0].busy_ns, m.servers[1].busy_ns),
        (200 * US, 500 * US)
    );
}

/// One deferrable VCPU of 400 us / 1 ms (VINT's Baseline_1ms) with a busy
/// loop and `rx` (100 us, released at 350 us, above the loop); switch
/// overhead 50 us. The VCPU is loaded at 0: switch [0, 50), loop
/// [50, 350), `rx` [350, 400) -- the budget is gone (50 + 300 + 50). The CPU
/// idles to the replenishment at 1000, where the VCPU is loaded again:
/// switch [1000, 1050), `rx`'s last 50 us [1050, 1100): response 750 us
/// (700 without the overhead). Then the loop [1100, 1400); at 2000 a third
/// switch. Each period the overhead takes 50 of the 400 us.
#[test]
fn overhead_at_every_replenishment_delays_a_task() {
    let system = |overhead: u64| {
        json!({
            "path": "hypervisor", "duration": 2_500 * US, "window": 2_500 * US,
            "switch_overhead": overhead,
            "servers": [{"name": "v0", "policy": "deferrable", "budget": 400 * US,
                         "period": 1_000 * US}],
            "tasks": [
                {"name": "loop", "server": 0, "priority": 1, "release": {"kind": "once"},
                 "program": [{"op": "loop", "body": [{"op": "compute", "ns": 10_000 * US}]}]},
                {"name": "rx", "server": 0, "priority": 5,
                 "release": {"kind": "once", "at": 350 * US},
                 "program": [{"op": "compute", "ns": 100 * US}]}
            ]
        })
    };
    let m = sim(system(50 * US));
    assert_eq!(m.tasks[1].response.max, Some(750 * US));
    assert_eq!(
        (m.cpus[0].vcpu_switches, m.cpus[0].switch_ns),
        (3, 150 * US)
    );
    // the VCPU still gets exactly its budget: 3 x 400 us
    assert_eq!(m.servers[0].busy_ns, 1_200 * US);

    let m = sim(system(0));
    assert_eq!(m.tasks[1].response.max, Some(700 * US));
    assert_eq!(m.servers[0].busy_ns, 1_200 * US);
}

/// vINT: VCPU v0 (500 us / 1 ms, rank 100) runs a busy loop; a physical
/// interrupt (hypervisor ISR 10 us) at 300 and 700 us injects a virtual
/// interrupt (guest ISR 20 + EOI 5 us, DSR 40 us) on a pseudo-VCPU
/// (300 us / 1 ms, rank 1); switch overhead 20 us.
fn vint_system(overhead: u64) -> Value {
    json!({
        "path": "hypervisor", "duration": 990 * US, "window": 990 * US,
        "switch_overhead": overhead,
        "servers": [{"name": "v0", "policy": "deferrable", "budget": 500 * US,
                     "period": 1_000 * US, "rank": 100}],
        "tasks": [{"name": "loop", "server": 0, "release": {"kind": "once"},
                   "program": [{"op": "loop", "body": [{"op": "compute", "ns": 10_000 * US}]}]}],
        "devices": [{"name": "nic", "class": 0, "kind": "generic", "min_interarrival": 400 * US,
                     "isr": 10 * US, "dsr": 0, "start": 300 * US}],
        "virqs": [{"name": "vnic", "phys": 0, "vcpu": 0, "isr": 20 * US, "eoi": 5 * US,
                   "dsr": 40 * US, "dsr_priority": 5,
                   "pseudo": {"deferrable": true, "budget": 300 * US, "period": 1_000 * US,
                              "rank": 1}}]
    })
}

/// The pseudo-VCPU has no execution context of its own (VINT §V-A). v0 is
/// loaded at 0: switch [0, 20), loop [20, 300). At 300 the hypervisor ISR
/// [300, 310) interrupts v0 and injects; the pseudo-VCPU runs v0's context,
/// already loaded: no switch, guest ISR [310, 335), DSR [335, 375) --
/// handled in 75 us. v0 resumes, no switch: loop [375, 575), its budget gone
/// (20 + 280 + 200). The CPU idles; at 700 the ISR [700, 710) injects and
/// the pseudo-VCPU loads v0's context after idle: switch [710, 730), on the
/// pseudo-VCPU's budget, guest ISR [730, 755), DSR [755, 795) -- 95 us. The
/// run ends at 990 us, before v0's replenishment.
fn check_vint_schedule(m: &Metrics) {
    let v = &m.virqs[0];
    assert_eq!(v.handled, 2);
    assert_eq!(
        (v.handling.min, v.handling.max),
        (Some(75 * US), Some(95 * US))
    );
    assert_eq!(m.servers[1].name, "vnic.pseudo");
    assert_eq!(
        (m.servers[0].busy_ns, m.servers[1].busy_ns),
        (500 * US, 150 * US)
    );
    assert_eq!((m.cpus[0].vcpu_switches, m.cpus[0].switch_ns), (2, 40 * US));
    assert_eq!(m.cpus[0].isr_ns, 20 * US);
}

#[test]
fn pseudo_vcpu_runs_its_vcpus_context() {
    check_vint_schedule(&sim(vint_system(20 * US)));
    // without the overhead both flows take 75 us
    let m = sim(vint_system(0));
    assert_eq!(m.virqs[0].handling.max, Some(75 * US));
    assert_eq!(m.servers[1].busy_ns, 130 * US);
}

/// The same system written as a `vms` model: `vms.switch_overhead` lowers
/// to `switch_overhead` and gives the same schedule.
#[test]
fn vms_switch_overhead_lowers() {
    let yaml = r#"
machine: {cpus: 1, path: hypervisor}
simulation: {duration: 990us, window: 990us}
vms:
  switch_overhead: 20us
  physical_interrupts:
    - {name: nic, isr: 10us, min_interarrival: 400us, start: 300us}
  guests:
    - name: g
      vcpus:
        - {name: v0, policy: deferrable, budget: 500us, period: 1ms, priority: 1,
           tasks: [{name: loop, background: true}, {name: rx, priority: 5, wcet: 40us}]}
      virtual_interrupts:
        - {name: vnic, physical: nic, vcpu: v0, isr: 20us, eoi: 5us, dsr: [rx],
           vint: {period: 1ms, budget: 300us}}
"#;
    let (model, _) = irqlab_model::load_str(yaml).expect("valid model");
    let c = from_model(&model, Path::new(".")).expect("lowers");
    assert_eq!(c.switch_overhead, 20 * US);
    check_vint_schedule(&simulate(c).expect("runs").0);

    // every VCPU budget must leave its guest some time
    let bad = yaml.replace("switch_overhead: 20us", "switch_overhead: 300us");
    let err = irqlab_model::load_str(&bad).unwrap_err().to_string();
    assert!(
        err.contains("vms.switch_overhead: 300us: must be below every VCPU and pseudo-VCPU budget (the pseudo-VCPU of vnic has 300us)"),
        "{err}"
    );
}

/// Errors name the field, the value and the rule.
#[test]
fn invalid_switch_overhead_is_an_error() {
    let mut v = two_vcpus(200 * US);
    let err = simulate(cfg(v.clone())).unwrap_err().to_string();
    assert_eq!(
        err,
        "switch_overhead: 200000: must be below every VCPU and pseudo-VCPU budget: servers[0] (hi) has 200000 ns"
    );
    let mut pseudo = vint_system(300 * US);
    pseudo["servers"][0]["budget"] = json!(600 * US);
    let err = simulate(cfg(pseudo)).unwrap_err().to_string();
    assert_eq!(
        err,
        "switch_overhead: 300000: must be below every VCPU and pseudo-VCPU budget: virqs[0].pseudo (vnic.pseudo) has 300000 ns"
    );
    v["path"] = json!("quest-no-iovcpu");
    v["switch_overhead"] = json!(10 * US);
    let err = simulate(cfg(v)).unwrap_err().to_string();
    assert_eq!(
        err,
        "switch_overhead: 10000: a VCPU switch overhead needs path: hypervisor"
    );
}

/// Any overhead below the budgets: the run ends in metrics, every
/// nanosecond of the CPU is accounted once (VCPU time, overhead included,
/// plus hypervisor ISRs plus idle), each switch costs at most the overhead,
/// and a flow never takes less than its 75 us of work.
#[test]
fn time_is_conserved_for_any_overhead() {
    use proptest::prelude::*;
    use proptest::test_runner::{Config, TestRunner};
    let mut runner = TestRunner::new(Config {
        cases: 64,
        ..Config::default()
    });
    runner
        .run(
            &(0u64..300 * US, 0u64..200 * US, 1u64..50),
            |(o_vint, o_two, start)| {
                let mut v = vint_system(o_vint);
                v["devices"][0]["start"] = json!(start * 17 * US);
                v["duration"] = json!(5_000 * US);
                for (m, o) in [(sim(v), o_vint), (sim(two_vcpus(o_two)), o_two)] {
                    let c = &m.cpus[0];
                    let busy: u64 = m.servers.iter().map(|s| s.busy_ns + s.background_ns).sum();
                    prop_assert_eq!(busy + c.isr_ns + c.idle_ns, m.duration_ns);
                    prop_assert!(c.switch_ns <= c.vcpu_switches * o);
                    prop_assert!(m
                        .virqs
                        .iter()
                        .all(|v| v.handling.min.is_none_or(|x| x >= 75 * US)));
                }
                Ok(())
            },
        )
        .unwrap();
}
