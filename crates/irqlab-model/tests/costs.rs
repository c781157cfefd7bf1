//! The `costs:` section (`irqlab calibrate`): accepted when each summary is
//! a distribution, refused with the field path, value and rule otherwise.

use irqlab_model::{load_str, LoadError};

const BASE: &str = "machine: {cpus: 1, path: linux}
vcpus: [{name: V, policy: fifo, priority: 10}]
tasks: [{name: t, vcpu: V, period: 10ms, program: [{compute: 1ms}]}]
";

fn dist(min: &str, mean: &str, p50: &str, p99: &str, max: &str) -> String {
    format!("{{samples: 100, min: {min}, mean: {mean}, p50: {p50}, p99: {p99}, max: {max}}}")
}

fn costs(extra: &str) -> String {
    let d = dist("1us", "2us", "2us", "5us", "9us");
    format!(
        "{BASE}costs:
  origin: {{host: vm, kernel: '6.18 #1 SMP', cpus: 2, date: '2026-11-24T00:00:00Z', tool: irqlab calibrate 0.1.0}}
  timer_wakeup: {d}
  thread_wakeup: {d}
  kernel:
    tracing: ftrace
    loopback: {{packets: 5000, softirq: {d}, ksoftirqd_share: 0.1}}
{extra}"
    )
}

fn errors(text: &str) -> Vec<String> {
    match load_str(text) {
        Err(LoadError::Invalid(e)) => e.iter().map(|e| e.to_string()).collect(),
        Err(LoadError::Parse(e)) => vec![e],
        Ok(_) => vec![],
    }
}

#[test]
fn a_calibrated_model_loads_with_its_values() {
    let (m, warnings) = load_str(&costs("")).expect("valid");
    assert!(warnings.is_empty(), "{warnings:?}");
    let c = m.costs.expect("costs");
    assert_eq!(
        c.stat(&c.timer_wakeup),
        2_000,
        "default statistic: the mean"
    );
    let net = c.net().expect("loopback is the default net path");
    assert_eq!(net.softirq.p99.0.as_ns(), 5_000);
    assert_eq!(net.packets, 5000);
    assert!(net.hardirq.is_none());
}

#[test]
fn the_chosen_statistic_is_read() {
    let (m, _) = load_str(&costs("  use: p99\n")).expect("valid");
    let c = m.costs.expect("costs");
    assert_eq!(c.stat(&c.thread_wakeup), 5_000);
    assert_eq!(c.stat(&c.context_switch), 0, "not measured: 0");
}

#[test]
fn a_model_without_costs_has_none() {
    let (m, _) = load_str(BASE).expect("valid");
    assert!(m.costs.is_none());
}

#[test]
fn unordered_statistics_are_refused_with_path_and_rule() {
    let bad = dist("3us", "2us", "2us", "1us", "9us");
    let e = errors(&costs(&format!("  context_switch: {bad}\n")));
    assert!(
        e.iter()
            .any(|e| e.starts_with("costs.context_switch.p50: 2us: must not be below")),
        "{e:?}"
    );
    assert!(
        e.iter().any(|e| e.starts_with("costs.context_switch.p99")),
        "{e:?}"
    );
    assert!(
        e.iter()
            .any(|e| e.starts_with("costs.context_switch.mean: 2us: must lie between min 3us")),
        "{e:?}"
    );
}

#[test]
fn empty_samples_and_bad_share_are_refused() {
    let t = costs("").replace("samples: 100", "samples: 0");
    let e = errors(&t);
    assert!(
        e.iter().any(|e| e
            .contains("costs.timer_wakeup.samples: 0: a distribution needs at least one sample")),
        "{e:?}"
    );
    let e = errors(&costs("").replace("ksoftirqd_share: 0.1", "ksoftirqd_share: 1.5"));
    assert!(
        e.iter().any(|e| e
            .contains("costs.kernel.loopback.ksoftirqd_share: 1.5: a fraction between 0 and 1")),
        "{e:?}"
    );
}

#[test]
fn a_net_path_that_was_not_measured_is_refused() {
    let e = errors(&costs("  net_path: nic\n"));
    assert!(
        e.iter()
            .any(|e| e.contains("costs.net_path: nic: names a kernel path that was not measured")),
        "{e:?}"
    );
}

#[test]
fn unknown_keys_and_unitless_times_are_refused() {
    let e = errors(&costs("  context_swich: 1us\n"));
    assert!(e.iter().any(|e| e.contains("context_swich")), "{e:?}");
    let t = costs("").replace("min: 1us", "min: 1");
    let e = errors(&t);
    assert!(e.iter().any(|e| e.contains("has no unit")), "{e:?}");
}

#[test]
fn costs_on_the_hypervisor_path_warn() {
    let c = costs("");
    let (_, section) = c.split_once("costs:").expect("costs");
    let text = format!(
        "machine: {{cpus: 1, path: hypervisor}}
vms:
  physical_interrupts: [{{name: nic, isr: 10us, min_interarrival: 1ms}}]
  guests:
    - name: g
      vcpus: [{{name: v, policy: sporadic, budget: 2ms, period: 10ms,
               tasks: [{{name: t, wcet: 1ms, period: 10ms}}]}}]
costs:{section}"
    );
    let (_, w) = load_str(&text).expect("valid");
    assert!(
        w.iter()
            .any(|w| w.contains("not charged on path hypervisor")),
        "{w:?}"
    );
}

#[test]
fn a_costs_file_is_recognised_and_loaded() {
    let text = costs("");
    let (_, section) = text.split_once("costs:").expect("costs");
    let file = format!("costs:{section}");
    assert!(irqlab_model::is_costs_file(&file));
    assert!(
        !irqlab_model::is_costs_file(&text),
        "a model is not a costs file"
    );
    assert!(!irqlab_model::is_costs_file("[1, 2]"));
    let (c, _) = irqlab_model::load_costs_str(&file).expect("valid");
    assert_eq!(c.origin.cpus, 2);
    let bad = file.replace("samples: 100", "samples: 0");
    assert!(matches!(
        irqlab_model::load_costs_str(&bad),
        Err(LoadError::Invalid(e)) if e[0].path == "costs.timer_wakeup.samples"
    ));
}
