//! The YAML hypervisor machine (`vms`, VINT §III, §V) lowered into the
//! simulator: each hand-checked schedule of `tests/hypervisor.rs`, written
//! as a model, lowers to the same configuration (or, where the model's
//! unique-priority rules of VINT §III make two priorities differ, to one
//! with the same schedule) and gives the same hand-checked numbers; `auto`
//! pseudo-VCPU budgets follow VINT Eq. 1 / Eq. 2 and priorities the §V-A
//! order; resolved budgets that cannot fit are errors naming the field.

use std::path::Path;

use irqlab_sim::config::PolicyCfg;
use irqlab_sim::{from_model, simulate, Metrics, SimConfig};
use serde_json::{json, Value};

const US: u64 = 1_000;

fn lower(yaml: &str) -> Result<SimConfig, String> {
    let (m, _) = irqlab_model::load_str(yaml).map_err(|e| e.to_string())?;
    let cfg = from_model(&m, Path::new(".")).map_err(|e| e.to_string())?;
    cfg.check().map_err(|e| e.to_string())?;
    Ok(cfg)
}

fn hand(v: Value) -> SimConfig {
    serde_json::from_value(v).expect("valid config")
}

fn run(cfg: SimConfig) -> Metrics {
    simulate(cfg).expect("runs").0
}

fn phys(name: &str, every: u64, isr: u64, start: u64) -> Value {
    json!({"name": name, "class": 0, "kind": "generic", "min_interarrival": every,
           "isr": isr, "dsr": 0, "start": start})
}

/// `physical_isr_charged_to_the_hypervisor`: the guest's busy loop is a
/// background task, the DSR a task of the VCPU named by the interrupt.
#[test]
fn physical_isr_charged_to_the_hypervisor() {
    let cfg = lower(
        r#"
machine: {cpus: 1, path: hypervisor}
simulation: {duration: 9.999ms, window: 10ms}
vms:
  physical_interrupts:
    - {name: nic, isr: 10us, min_interarrival: 1ms}
  guests:
    - name: g
      vcpus:
        - name: v0
          policy: sporadic
          budget: 5ms
          period: 10ms
          tasks:
            - {name: hog, background: true}
            - {name: rx, priority: 5, wcet: 40us}
      virtual_interrupts:
        - {name: vnic, physical: nic, vcpu: v0, isr: 20us, eoi: 5us, dsr: [rx]}
"#,
    )
    .expect("valid");
    assert_eq!(
        cfg,
        hand(json!({
            "path": "hypervisor", "duration": 9_999 * US, "window": 10_000 * US,
            "servers": [{"name": "v0", "policy": "sporadic", "budget": 5_000 * US, "period": 10_000 * US}],
            "tasks": [{"name": "hog", "server": 0, "release": {"kind": "once"},
                       "program": [{"op": "loop", "body": [{"op": "compute", "ns": 10_000 * US}]}]}],
            "devices": [phys("nic", 1_000 * US, 10 * US, 0)],
            "virqs": [{"name": "vnic", "phys": 0, "vcpu": 0, "isr": 20 * US, "eoi": 5 * US,
                       "dsr": 40 * US, "dsr_priority": 5}]
        }))
    );
    let m = run(cfg);
    assert_eq!(m.servers[0].busy_ns, 5_000 * US);
    assert_eq!(m.cpus[0].isr_ns, 10 * 10 * US);
    assert_eq!(m.virqs[0].handling.min, Some(75 * US));
    assert_eq!(m.virqs[0].arrivals, 10);
}

/// `vint_counter_delays_injection`: the pseudo-VCPU's budget left `auto`
/// is VINT Eq. 1, ceil(2 ms / 1 ms) x (20 + 5 + 40) us = 130 us -- the
/// hand-written value; its priority `auto` is rank 1 (the only one). The
/// counter follows the deferrable policy given, or the VCPU's (sporadic).
#[test]
fn vint_storm_auto_budget_is_eq1() {
    for (policy, deferrable, worst) in [
        ("policy: deferrable, ", true, 1_100 * US),
        ("", false, 1_075 * US),
    ] {
        let cfg = lower(&format!(
            r#"
machine: {{path: hypervisor}}
simulation: {{duration: 3.9ms, window: 4ms}}
vms:
  eoi: 5us
  physical_interrupts: [{{name: nic, isr: 10us, min_interarrival: 500us}}]
  guests:
    - name: g
      vcpus:
        - name: v0
          policy: sporadic
          budget: 5ms
          period: 10ms
          tasks: [{{name: hog, background: true}}, {{name: rx, priority: 5, wcet: 40us}}]
      virtual_interrupts:
        - {{name: vnic, physical: nic, vcpu: v0, isr: 20us, min_interarrival: 1ms, dsr: [rx],
           vint: {{{policy}period: 2ms}}}}
"#
        ))
        .expect("valid");
        assert_eq!(
            cfg,
            hand(json!({
                "path": "hypervisor", "duration": 3_900 * US, "window": 4_000 * US,
                "servers": [{"name": "v0", "policy": "sporadic", "budget": 5_000 * US, "period": 10_000 * US}],
                "tasks": [{"name": "hog", "server": 0, "release": {"kind": "once"},
                           "program": [{"op": "loop", "body": [{"op": "compute", "ns": 10_000 * US}]}]}],
                "devices": [phys("nic", 500 * US, 10 * US, 0)],
                "virqs": [{"name": "vnic", "phys": 0, "vcpu": 0, "isr": 20 * US, "eoi": 5 * US,
                           "dsr": 40 * US, "dsr_priority": 5, "min_interarrival": 1_000 * US,
                           "pseudo": {"deferrable": deferrable, "budget": 130 * US, "period": 2_000 * US, "rank": 1}}]
            }))
        );
        let m = run(cfg);
        let v = &m.virqs[0];
        assert_eq!((v.arrivals, v.injected), (8, 4));
        assert_eq!(v.handling.min, Some(75 * US));
        assert_eq!(v.handling.max, Some(worst));
        assert_eq!(m.servers[1].name, "vnic.pseudo");
        assert_eq!(m.servers[1].busy_ns, 4 * 65 * US);
    }
}

/// `nested_virtual_interrupts` (VINT Figure 3): `vint: {}` everywhere --
/// Eq. 1 gives 65 us per 10 ms, §V-A puts the pseudo-VCPU of the higher DSR
/// priority first (rank 1), as written by hand. The model needs distinct
/// physical and virtual interrupt priorities (VINT §III), which the hand
/// config leaves equal; here they never compete, so the schedule is the
/// same: handling 75 us (high) and 150 us (low).
#[test]
fn nested_virtual_interrupts() {
    let cfg = lower(
        r#"
machine: {path: hypervisor}
simulation: {duration: 500us, window: 500us}
vms:
  eoi: 5us
  physical_interrupts:
    - {name: low, isr: 10us, min_interarrival: 10ms}
    - {name: high, priority: 1, isr: 10us, min_interarrival: 10ms, start: 20us}
  guests:
    - name: g
      vcpus:
        - name: v0
          policy: sporadic
          budget: 5ms
          period: 10ms
          tasks:
            - {name: hog, background: true}
            - {name: low-dsr, priority: 5, wcet: 40us}
            - {name: high-dsr, priority: 6, wcet: 40us}
      virtual_interrupts:
        - {name: vlow, physical: low, vcpu: v0, isr: 20us, dsr: [low-dsr], vint: {}}
        - {name: vhigh, physical: high, vcpu: v0, priority: 1, isr: 20us, dsr: [high-dsr], vint: {}}
"#,
    )
    .expect("valid");
    let mut by_hand = json!({
        "path": "hypervisor", "duration": 500 * US, "window": 500 * US,
        "servers": [{"name": "v0", "policy": "sporadic", "budget": 5_000 * US, "period": 10_000 * US}],
        "tasks": [{"name": "hog", "server": 0, "release": {"kind": "once"},
                   "program": [{"op": "loop", "body": [{"op": "compute", "ns": 10_000 * US}]}]}],
        "devices": [phys("low", 10_000 * US, 10 * US, 0), phys("high", 10_000 * US, 10 * US, 20 * US)],
        "virqs": [
            {"name": "vlow", "phys": 0, "vcpu": 0, "isr": 20 * US, "eoi": 5 * US, "dsr": 40 * US,
             "dsr_priority": 5, "pseudo": {"budget": 65 * US, "period": 10_000 * US, "rank": 2}},
            {"name": "vhigh", "phys": 1, "vcpu": 0, "isr": 20 * US, "eoi": 5 * US, "dsr": 40 * US,
             "dsr_priority": 6, "pseudo": {"budget": 65 * US, "period": 10_000 * US, "rank": 1}}
        ]
    });
    let same_priorities = run(hand(by_hand.clone()));
    by_hand["devices"][1]["irq_priority"] = json!(1);
    by_hand["virqs"][1]["priority"] = json!(1);
    assert_eq!(cfg, hand(by_hand));
    let m = run(cfg);
    assert_eq!(m.virqs[1].handling.max, Some(75 * US));
    assert_eq!(m.virqs[0].handling.max, Some(150 * US));
    assert_eq!(m.virqs, same_priorities.virqs);
}

/// `physical_isrs_nest_by_priority`: a VCPU with DSR tasks only; the
/// virtual interrupts, equal in the hand config, get priorities 0 and 1 --
/// the order the hand-checked schedule already has (at 40 us the high one's
/// ISR runs first): high handled in 45 us, low in 60 us.
#[test]
fn physical_isrs_nest_by_priority() {
    let cfg = lower(
        r#"
machine: {path: hypervisor}
simulation: {duration: 500us, window: 500us}
vms:
  physical_interrupts:
    - {name: low, priority: 1, isr: 30us, min_interarrival: 10ms}
    - {name: high, priority: 2, isr: 10us, min_interarrival: 10ms, start: 10us}
  guests:
    - name: g
      vcpus:
        - name: v0
          policy: sporadic
          budget: 5ms
          period: 10ms
          tasks: [{name: low-dsr, priority: 1, wcet: 5us}, {name: high-dsr, priority: 2, wcet: 5us}]
      virtual_interrupts:
        - {name: vlow, physical: low, vcpu: v0, isr: 5us, dsr: [low-dsr]}
        - {name: vhigh, physical: high, vcpu: v0, priority: 1, isr: 5us, dsr: [high-dsr]}
"#,
    )
    .expect("valid");
    let mut low = phys("low", 10_000 * US, 30 * US, 0);
    low["irq_priority"] = json!(1);
    let mut high = phys("high", 10_000 * US, 10 * US, 10 * US);
    high["irq_priority"] = json!(2);
    let mut by_hand = json!({
        "path": "hypervisor", "duration": 500 * US, "window": 500 * US,
        "servers": [{"name": "v0", "policy": "sporadic", "budget": 5_000 * US, "period": 10_000 * US}],
        "devices": [low, high],
        "virqs": [
            {"name": "vlow", "phys": 0, "vcpu": 0, "isr": 5 * US, "dsr": 5 * US, "dsr_priority": 1},
            {"name": "vhigh", "phys": 1, "vcpu": 0, "isr": 5 * US, "dsr": 5 * US, "dsr_priority": 2}
        ]
    });
    let same_priorities = run(hand(by_hand.clone()));
    by_hand["virqs"][1]["priority"] = json!(1);
    assert_eq!(cfg, hand(by_hand));
    let m = run(cfg);
    assert_eq!(m.virqs[1].handling.max, Some(45 * US));
    assert_eq!(m.virqs[0].handling.max, Some(60 * US));
    assert_eq!(m.cpus[0].isr_ns, 40 * US);
    assert_eq!(m.virqs, same_priorities.virqs);
}

/// `ipi_to_another_cpu`: the physical interrupt on CPU 0, the VCPU on
/// CPU 1, `vms.ipi` 5 us: 10 + 5 + 25 + 40 = 80 us.
#[test]
fn ipi_to_another_cpu() {
    let cfg = lower(
        r#"
machine: {cpus: 2, path: hypervisor}
simulation: {duration: 500us, window: 500us}
vms:
  ipi: 5us
  eoi: 5us
  physical_interrupts: [{name: nic, cpu: 0, isr: 10us, min_interarrival: 10ms}]
  guests:
    - name: g
      vcpus:
        - {name: v0, cpu: 1, policy: sporadic, budget: 5ms, period: 10ms,
           tasks: [{name: rx, priority: 5, wcet: 40us}]}
      virtual_interrupts: [{name: vnic, physical: nic, vcpu: v0, isr: 20us, dsr: [rx]}]
"#,
    )
    .expect("valid");
    assert_eq!(
        cfg,
        hand(json!({
            "path": "hypervisor", "cpus": 2, "ipi": 5 * US, "duration": 500 * US, "window": 500 * US,
            "servers": [{"name": "v0", "cpu": 1, "policy": "sporadic", "budget": 5_000 * US, "period": 10_000 * US}],
            "devices": [phys("nic", 10_000 * US, 10 * US, 0)],
            "virqs": [{"name": "vnic", "phys": 0, "vcpu": 0, "isr": 20 * US, "eoi": 5 * US,
                       "dsr": 40 * US, "dsr_priority": 5}]
        }))
    );
    let m = run(cfg);
    assert_eq!(m.virqs[0].handling.max, Some(80 * US));
    assert_eq!((m.cpus[0].isr_ns, m.cpus[1].isr_ns), (10 * US, 5 * US));
}

const TWO_VCPUS: &str = r#"
machine: {path: hypervisor}
vms:
  eoi: 2us
  physical_interrupts:
    - {name: p0, isr: 5us, min_interarrival: 1ms}
    - {name: p1, priority: 1, isr: 5us, min_interarrival: 2ms}
    - {name: p2, priority: 2, isr: 5us, min_interarrival: 4ms}
  guests:
    - name: g
      vcpus:
        - name: hi
          policy: deferrable
          budget: 2ms
          period: 10ms
          priority: 2
          tasks:
            - {name: a, priority: 3, wcet: 30us}
            - {name: b, priority: 2, wcet: 20us}
            - {name: c, priority: 1, wcet: 1ms, period: 20ms}
        - name: lo
          policy: sporadic
          budget: 3ms
          period: 10ms
          priority: 1
          tasks: [{name: d, priority: 50, wcet: 40us}]
      virtual_interrupts:
        - {name: va, physical: p0, vcpu: hi, priority: 1, isr: 10us, dsr: [a], vint: {period: 2ms}}
        - {name: vb, physical: p1, vcpu: hi, priority: 2, isr: 8us, dsr: [b]}
        - {name: vd, physical: p2, vcpu: lo, isr: 6us, dsr: [d], vint: {}}
"#;

/// VINT Eq. 2: `va` shares VCPU `hi` with the unmanaged `vb`, so its
/// pseudo-VCPU pays, per instance, vb's ISR and EOI too:
/// ceil(2 ms / 1 ms) x ((10 + 2 + 30) + (8 + 2)) us = 104 us; `vd`, alone
/// on `lo`, gets Eq. 1: ceil(4 / 4) x (6 + 2 + 40) = 48 us per 4 ms. VINT
/// §V-A: the pseudo-VCPU of the higher-priority VCPU (`hi`) comes first
/// even though `vd`'s DSR priority (50) is higher; the counter follows the
/// VCPU's policy. Explicit VCPU priorities rank below every pseudo-VCPU.
#[test]
fn eq2_budget_and_v_a_order() {
    let cfg = lower(TWO_VCPUS).expect("valid");
    let ranks: Vec<_> = cfg.servers.iter().map(|s| s.rank).collect();
    assert_eq!(ranks, vec![Some(1_098), Some(1_099)]);
    let p: Vec<_> = cfg
        .virqs
        .iter()
        .map(|v| {
            v.pseudo
                .as_ref()
                .map(|p| (p.budget, p.period, p.rank, p.deferrable))
        })
        .collect();
    assert_eq!(
        p,
        vec![
            Some((104 * US, 2_000 * US, 1, true)),
            None,
            Some((48 * US, 4_000 * US, 2, false)),
        ]
    );
    // the DSR tasks are the virtual interrupts' DSRs, not tasks
    assert_eq!(cfg.tasks.len(), 1);
    assert_eq!(cfg.tasks[0].name, "c");
    assert!(matches!(
        cfg.servers[0].policy,
        PolicyCfg::Deferrable { .. }
    ));
    let m = run(SimConfig {
        duration: 200_000 * US,
        ..cfg
    });
    assert!(m.virqs.iter().all(|v| v.handled > 0), "{:?}", m.virqs);
    assert_eq!(m.tasks[0].deadline_misses, 0);
}

/// Several DSR tasks of one interrupt: their WCETs add up (C^vi, VINT
/// §III) and the DSR runs at the lowest of their priorities (the pi_D~ of
/// Eq. 8); explicit pseudo-VCPU priorities q become ranks 1000 - q.
#[test]
fn dsr_tasks_sum_and_explicit_priorities() {
    let text = TWO_VCPUS
        .replace(
            "{name: d, priority: 50, wcet: 40us}",
            "{name: d, priority: 50, wcet: 40us}, {name: e, priority: 40, wcet: 15us}",
        )
        .replace("dsr: [d], vint: {}", "dsr: [d, e], vint: {priority: 7}")
        .replace(
            "dsr: [a], vint: {period: 2ms}",
            "dsr: [a], vint: {period: 2ms, priority: 9, budget: 150us}",
        );
    let cfg = lower(&text).expect("valid");
    let vd = &cfg.virqs[2];
    assert_eq!((vd.dsr, vd.dsr_priority), (55 * US, 40));
    let p = vd.pseudo.as_ref().unwrap();
    assert_eq!((p.budget, p.rank), ((6 + 2 + 55) * US, 993));
    let pa = cfg.virqs[0].pseudo.as_ref().unwrap();
    assert_eq!((pa.budget, pa.rank), (150 * US, 991));
}

/// Resolved `auto` budgets are checked with the model's field path: above
/// the pseudo-VCPU period (Eq. 2 asks for 2 x (1070 + 2 + 30 + 10) us = 2.224 ms per 2 ms), and above 100 %
/// of the CPU together with the VCPUs.
#[test]
fn auto_budgets_that_do_not_fit() {
    let text = TWO_VCPUS.replace("isr: 10us, dsr: [a]", "isr: 1070us, dsr: [a]");
    assert_eq!(
        lower(&text).unwrap_err(),
        "vms.guests[0].virtual_interrupts[0].vint.budget: auto = 2224us: the budget VINT Eq. 1/2 asks for exceeds the pseudo-VCPU period 2ms"
    );
    let text = TWO_VCPUS.replace("budget: 3ms", "budget: 7.9ms");
    assert_eq!(
        lower(&text).unwrap_err(),
        "vms (cpu 0): 105.4%: the VCPU and pseudo-VCPU budgets exceed 100% of the CPU (hi 20.0%, lo 79.0%, va.pseudo 5.2%, vd.pseudo 1.2%)"
    );
}

/// The shipped VINT §VII-C case-study scenario loads and lowers.
#[test]
fn vint_case_scenario_lowers() {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../python/irqlab/scenarios/vint-case.yaml");
    let text = std::fs::read_to_string(&path).expect("scenario file");
    let cfg = lower(&text).expect("valid");
    let p = cfg.virqs[0].pseudo.as_ref().expect("vINT on");
    assert_eq!(
        (p.budget, p.period, p.deferrable),
        (2_000 * US, 10_000 * US, true)
    );
}

/// Lowering never panics, even on a model that skipped validation: a zero
/// inter-arrival time (VINT Eq. 1 divides by it) is an error.
#[test]
fn lowering_an_unvalidated_model_does_not_panic() {
    let (mut m, _) = irqlab_model::load_str(TWO_VCPUS).expect("valid");
    m.vms.as_mut().unwrap().physical_interrupts[0].min_interarrival =
        irqlab_model::units::Duration(irqlab_core::Nanos(0));
    assert!(!irqlab_model::validate(&m).errors.is_empty());
    assert_eq!(
        from_model(&m, Path::new(".")).unwrap_err().to_string(),
        "vms.guests[0].virtual_interrupts[0].min_interarrival: 0: must be positive"
    );
}
