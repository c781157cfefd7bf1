//! The rules of `devices[].upcall`, `devices[].source` and `runtime:`
//! (`handling.rs`): every refusal names its field, value and rule.

use super::*;

const BASE: &str = "machine: {cpus: 1, path: quest}
vcpus:
  - {name: m, policy: sporadic, budget: 2ms, period: 10ms}
  - {name: io, kind: io, policy: pibs, utilization: 10%, io_class: c}
tasks:
  - {name: t, vcpu: m, program: [{forever: [{read: tick}, {compute: 10us}]}]}
devices:
  - {name: tick, kind: generic, source: timerfd, min_interarrival: 1ms, isr: 0us, dsr: 5us, upcall: {budget: 500us, period: 10ms}}
  - {name: net, kind: nic, class: c, arrival: {kind: periodic, interval: 100us}, top_half: 0us, bottom_half: 20us, packet: 64B, upcall: {mode: kernel, budget: 500us, period: 10ms, events: 10}}
";

fn errors(text: &str) -> Vec<String> {
    match load_str(text) {
        Ok(_) => vec![],
        Err(LoadError::Parse(e)) => vec![e],
        Err(LoadError::Invalid(v)) => v.iter().map(|e| e.to_string()).collect(),
    }
}

fn one_error(from: &str, to: &str, expect: &str) {
    assert!(BASE.contains(from), "{from}");
    let e = errors(&BASE.replacen(from, to, 1));
    assert!(e.iter().any(|x| x.contains(expect)), "{to}: {e:?}");
}

#[test]
fn upcalls_sources_and_runtime_load() {
    let text = format!(
        "{BASE}runtime: {{cpus: [1], generator_cpu: 0, require_fifo: true, backend: io-uring, report_samples: 10}}\n"
    );
    let (m, warnings) = load_str(&text).expect("valid");
    let tick = &m.devices[0];
    assert_eq!(tick.source, Some(model::Source::Timerfd));
    assert_eq!(
        tick.upcall.as_ref().map(|u| u.mode),
        Some(model::UpcallMode::User)
    );
    // A user upcall has no class; the kernel upcall's simulation is stated.
    assert_eq!(device_class(&m, "tick"), None);
    assert!(
        warnings
            .iter()
            .any(|w| w.contains("devices[1] (net): a kernel upcall")
                && w.contains("every event on its class")),
        "{warnings:?}"
    );
    let o = m.runtime.expect("runtime");
    assert_eq!(o.cpus, Some(vec![1]));
    assert_eq!(o.backend, model::RunBackend::IoUring);
}

#[test]
fn every_upcall_refusal_names_field_value_and_rule() {
    one_error(
        "upcall: {budget: 500us, period: 10ms}",
        "upcall: {budget: 20ms, period: 10ms}",
        "devices[0].upcall.budget: 20ms: must be in (0, period = 10ms]",
    );
    one_error(
        "upcall: {budget: 500us, period: 10ms}",
        "upcall: {budget: 500us, period: 10ms, fallback: true}",
        "devices[0].upcall: events None, fallback true: events and fallback belong to mode: kernel",
    );
    one_error(
        "source: timerfd,",
        "source: timerfd, class: c,",
        "devices[0].class: c: a user upcall handles the device's events in the top half",
    );
    one_error(
        "min_interarrival: 1ms,",
        "min_interarrival: 1ms, jitter: 10us,",
        "devices[0].jitter: 10us: a timerfd source fires every min_interarrival exactly",
    );
    one_error(
        "path: quest}",
        "path: quest-no-iovcpu}",
        "only on path quest (this machine is quest-no-iovcpu)",
    );
    one_error(
        "source: timerfd, min_interarrival: 1ms, isr: 0us, dsr: 5us, upcall: {budget",
        "source: timerfd, min_interarrival: 1ms, isr: 0us, dsr: 5us, upcall: {mode: kernel, budget",
        "devices[0].upcall.mode: kernel: kernel upcalls handle nic devices",
    );
    one_error(
        "events: 10}",
        "events: 0}",
        "devices[1].upcall.events: 0: must be positive",
    );
    one_error(
        "upcall: {mode: kernel",
        "upcall: {mode: softirq",
        "unknown variant `softirq`",
    );
    one_error(
        "upcall: {mode: kernel, budget: 500us,",
        "upcall: {mode: kernel, budget: 500us, colour: red,",
        "unknown field `colour`",
    );
    one_error(
        "class: c, arrival",
        "arrival",
        "devices[1].class: missing: every device is bound to an I/O class",
    );
    one_error(
        "{name: io, kind",
        "{name: tick.upcall, policy: sporadic, budget: 1ms, period: 10ms}\n  - {name: io, kind",
        "devices[0].name: tick: tick.upcall is the name of this device's upcall server",
    );
    one_error(
        "program: [{forever: [{read: tick}",
        "program: [{bind: {device: tick, class: c}}, {forever: [{read: tick}",
        "devices[0].upcall: a task's bind step rebinds this device to a class",
    );
    // A source belongs to generic devices.
    one_error(
        "packet: 64B,",
        "packet: 64B, source: pipe,",
        "devices[1].source: does not apply to a nic device",
    );
}

#[test]
fn every_runtime_refusal_names_field_value_and_rule() {
    let with = |rt: &str| format!("{BASE}runtime: {rt}\n");
    let e = errors(&with("{cpus: [1, 2]}"));
    assert!(
        e.iter()
            .any(|x| x
                .contains("runtime.cpus: [1, 2]: one real CPU per model CPU (machine.cpus is 1)")),
        "{e:?}"
    );
    let e = errors(&with("{cpus: [3], generator_cpu: 3}"));
    assert!(
        e.iter()
            .any(|x| x.contains("runtime.generator_cpu: 3: is one of runtime.cpus")),
        "{e:?}"
    );
    let e = errors(&with("{catch_up: skip}"));
    assert!(
        e.iter().any(|x| x.contains("unknown field `catch_up`")),
        "{e:?}"
    );
    let e = errors(&with("{backend: kqueue}"));
    assert!(
        e.iter().any(|x| x.contains("unknown variant `kqueue`")),
        "{e:?}"
    );
    let linux = "machine: {cpus: 1, path: linux}
vcpus: [{name: m, policy: fifo, priority: 10}]
tasks: [{name: t, vcpu: m, period: 10ms, program: [{compute: 1ms}]}]
runtime: {require_fifo: true}
";
    let e = errors(linux);
    assert!(e.iter().any(|x| x.contains("runtime: report_samples 0, require_fifo true, backend Epoll: report_samples, require_fifo and backend are irqlab-rt's")), "{e:?}");
    let hyp = "machine: {path: hypervisor}
vms:
  guests: [{name: g, vcpus: [{name: v, policy: sporadic, budget: 1ms, period: 10ms}]}]
runtime: {}
";
    let e = errors(hyp);
    assert!(
        e.iter()
            .any(|x| x.contains("runtime: a hypervisor model does not run on irqlab-rt's threads")),
        "{e:?}"
    );
}

#[test]
fn a_retired_runtime_scenario_is_named_as_such() {
    let old = "runtime: {duration: 2s}
vcpus: [{name: ctl, policy: sporadic, budget: 1ms, period: 10ms}]
tasks: [{name: c, vcpu: ctl, period: 10ms, work: 600us}]
sources: [{name: tick, kind: timerfd, interval: 1ms, upcall: {budget: 500us, period: 10ms}}]
";
    let e = errors(old);
    assert_eq!(e.len(), 1);
    assert!(
        e[0].starts_with("sources: the runtime-scenario format"),
        "{e:?}"
    );
    assert!(e[0].contains("devices[].upcall"), "{e:?}");
}
