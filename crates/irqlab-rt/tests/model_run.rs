//! `irqlab run MODEL.yaml` (`irqlab_rt::model_run`): every refusal names
//! its field, value and reason (no privilege needed); the mapping of each
//! device kind and program step is checked on real threads -- the right
//! class (event path), period, CPU and counts -- skipped with the kernel's
//! reason when SCHED_FIFO is not permitted. No timing assertions: counts,
//! structure, and the budget bounds the theory promises.

mod common;

use irqlab_core::Nanos;
use irqlab_rt::model_run::{check_model, run_model, ModelRun};

fn refused(text: &str, field: &str, why: &str) {
    match check_model("m", text) {
        Ok(_) => panic!("accepted, expected a refusal of {field}"),
        Err(e) => {
            let msg = e.to_string();
            assert!(msg.contains(field), "{msg} does not name {field}");
            assert!(msg.contains(why), "{msg} does not say {why:?}");
        }
    }
}

const BASE: &str = "machine: {cpus: 1, path: quest}
vcpus:
  - {name: m, policy: sporadic, budget: 2ms, period: 10ms}
  - {name: io, kind: io, policy: pibs, utilization: 10%, io_class: c}
";

#[test]
fn every_refusal_names_field_value_and_reason() {
    refused(
        "machine: {path: hypervisor}
vms:
  guests: [{name: g, vcpus: [{name: v, policy: sporadic, budget: 1ms, period: 10ms}]}]",
        "machine.path = hypervisor",
        "KVM VMM",
    );
    refused(
        "machine: {cpus: 64, path: quest}
vcpus: [{name: m, policy: sporadic, budget: 1ms, period: 10ms}]",
        "machine.cpus = 64",
        "this machine lets the run use",
    );
    // Request devices on the linux baseline: the kernel has no emulated
    // disk or xHCI here to serve them.
    let linux = "machine: {cpus: 1, path: linux}
vcpus: [{name: m, policy: fifo, priority: 10}]
";
    refused(
        &format!("{linux}tasks: [{{name: t, vcpu: m, program: [{{write: d}}]}}]
devices: [{{name: d, kind: disk, class: c, latency: 1ms, top_half: 1us, per_sector: 1us, sectors: 8, sector: 512B}}]"),
        "devices[0].kind = disk",
        "no emulated usb or disk device",
    );
    let usb = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../python/irqlab/scenarios/usb-priority-inversion.yaml"
    ))
    .expect("the shipped USB model");
    check_model("m", &usb).expect("the shipped USB model runs on quest");
    refused(
        &format!(
            "{linux}tasks: [{{name: t, vcpu: m, program: [{{read: e}}]}}]
xhci: [{{name: x, top_half: 1us, interrupter_map: [c]}}]
devices: [{{name: e, kind: usb, class: c, controller: x, rate: 1MB/s, omega_io: 1us}}]"
        ),
        "xhci[0] = x",
        "no xHCI controller",
    );
    refused(
        &format!(
            "{BASE}tasks: [{{name: t, vcpu: m, program: [{{read: e}}]}}]
xhci: [{{name: x, top_half: 1us, interrupter_map: [c]}}]
devices:
  - {{name: o, kind: usb, class: c, controller: x, rate: 1MB/s, omega_io: 1us}}
  - {{name: e, kind: usb, class: c, controller: x, rate: 1MB/s, omega_io: 1us, echo_of: o}}"
        ),
        "devices[1].echo_of = o",
        "echo endpoints",
    );
    refused(
        &format!("{BASE}tasks: [{{name: t, vcpu: m, program: [{{write: n}}]}}]
devices: [{{name: n, kind: nic, class: c, packet: 64B, top_half: 1us, bottom_half: 1us, arrival: {{kind: periodic, interval: 1ms}}}}]"),
        "tasks[0].program[0].write = n",
        "only read on real threads",
    );
    refused(
        &format!(
            "{BASE}tasks: [{{name: t, vcpu: m, period: 10ms, abort_on_miss: true, program: [{{compute: 1ms}}]}}]"
        ),
        "tasks[0].abort_on_miss = true",
        "cannot be aborted",
    );
    refused(
        &format!(
            "{BASE}tasks: [{{name: t, vcpu: m, program: [{{read: n}}]}}]
devices: [{{name: n, kind: nic, class: c, packet: 64B, top_half: 1us, bottom_half: 1us, arrival: {{kind: trace, file: /nonexistent/arrivals.csv}}}}]"
        ),
        "devices[0].arrival.file = /nonexistent/arrivals.csv",
        "cannot read",
    );
    refused(
        "machine: {cpus: 1, path: quest}
vcpus: [{name: m, policy: polling, budget: 1ms, period: 10ms}]
tasks: [{name: t, vcpu: m, period: 10ms, program: [{compute: 100us}]}]",
        "vcpus[0].policy = polling",
        "no polling server",
    );
    refused(
        "machine: {cpus: 1, path: linux}
vcpus: [{name: m, policy: sporadic, budget: 1ms, period: 10ms}]
tasks: [{name: t, vcpu: m, period: 10ms, program: [{compute: 100us}]}]",
        "vcpus[0].policy = sporadic",
        "without irqlab servers",
    );
    refused(
        "machine: {cpus: 1, path: linux, linux: {ksoftirqd: {deadline: {runtime: 1ms, period: 10ms}}}}
vcpus: [{name: m, policy: fifo, priority: 10}]
tasks: [{name: t, vcpu: m, period: 10ms, program: [{compute: 100us}]}]",
        "machine.linux.ksoftirqd = deadline {runtime: 1000000 ns, period: 10000000 ns}",
        "cannot join: use fifo",
    );
    refused(
        "machine: {cpus: 1, path: linux, linux: {max_softirq_restart: 3}}
vcpus: [{name: m, policy: fifo, priority: 10}]
tasks: [{name: t, vcpu: m, period: 10ms, program: [{compute: 100us}]}]",
        "machine.linux.max_softirq_restart = 3",
        "compile-time constant",
    );
    refused(
        "machine: {cpus: 1, path: quest}
vcpus: [{name: m, policy: sporadic, budget: 1ms, period: 10ms, max_repl: 4}]
tasks: [{name: t, vcpu: m, period: 10ms, program: [{compute: 100us}]}]",
        "vcpus[0].max_repl = 4",
        "default replenishment queue",
    );
    refused(
        &format!(
            "{BASE}tasks: [{{name: t, vcpu: m, program: [{{read: n}}]}}]
devices: [{{name: n, kind: nic, class: c, packet: 64KiB, top_half: 1us, bottom_half: 1us, arrival: {{kind: periodic, interval: 1ms}}}}]"
        ),
        "devices[0].packet = 65536B",
        "at most 65507 bytes",
    );
    refused(
        "machine: {cpus: 1, path: quest}
vcpus: [{name: m, policy: sporadic, budget: 1ms, period: 10ms, background: true}]
tasks: [{name: t, vcpu: m, period: 10ms, program: [{compute: 100us}]}]",
        "vcpus[0].background = true",
        "no background mode",
    );
    refused(
        "machine: {cpus: 1, path: quest}
vcpus: [{name: m, policy: cbs, runtime: 1ms, period: 10ms}]
tasks: [{name: t, vcpu: m, period: 10ms, program: [{compute: 100us}]}]",
        "vcpus[0].policy = cbs",
        "CBS only on the linux path",
    );
    refused(
        &BASE.replace(
            "{name: io, kind: io, policy: pibs, utilization: 10%, io_class: c}",
            "{name: io, kind: io, policy: sporadic, budget: 1ms, period: 10ms, priority: 3, \
             io_class: c}",
        ),
        "vcpus[1].priority = 3",
        "by its period (rate-monotonic)",
    );
    refused(
        "machine: {cpus: 1, path: linux}
vcpus: [{name: dl, policy: cbs, runtime: 1ms, period: 10ms}]
tasks:
  - {name: a, vcpu: dl, period: 10ms, program: [{compute: 100us}]}
  - {name: b, vcpu: dl, period: 10ms, program: [{compute: 100us}]}",
        "tasks[0].vcpu = dl",
        "a cbs VCPU runs one task",
    );
    refused(
        "machine: {cpus: 1, path: linux}
vcpus: [{name: rt, policy: fifo, priority: 40}]
tasks:
  - {name: a, vcpu: rt, priority: 2, period: 10ms, program: [{compute: 100us}]}
  - {name: b, vcpu: rt, period: 10ms, program: [{compute: 100us}]}",
        "tasks[0].priority = 2",
        "not by task priority (b has 1)",
    );
    refused(
        "machine: {cpus: 1, path: linux, linux: {max_softirq_time: 5ms}}
vcpus: [{name: m, policy: fifo, priority: 10}]
tasks: [{name: t, vcpu: m, period: 10ms, program: [{compute: 100us}]}]",
        "machine.linux.max_softirq_time = 5ms",
        "compile-time constant",
    );
    let preempt_rt = std::fs::read_to_string("/sys/kernel/realtime").is_ok_and(|s| s.trim() == "1");
    if !preempt_rt {
        refused(
            "machine: {cpus: 1, path: linux, linux: {threaded_bh: true}}
vcpus: [{name: m, policy: fifo, priority: 10}]
tasks: [{name: t, vcpu: m, period: 10ms, program: [{compute: 100us}]}]",
            "machine.linux.threaded_bh = true",
            "not PREEMPT_RT",
        );
    }
    refused(
        &format!("{BASE}runtime: {{generator_cpu: 4096}}"),
        "runtime.generator_cpu = 4096",
        "not a CPU this run may use",
    );
    // (the model's loader refuses this one, for the simulator too)
    refused(
        &format!("{BASE}tasks: [{{name: t, vcpu: m, program: [{{bind: {{device: n, class: c}}}}]}}]
devices: [{{name: n, kind: nic, class: c, packet: 64B, top_half: 1us, bottom_half: 1us, arrival: {{kind: periodic, interval: 1ms}}}}]"),
        "tasks[0].program[0].device: n",
        "rebinds USB devices only",
    );
    // The model's own validation, through the one loader.
    refused(
        "machine: {cpus: 1, path: quest}
vcpus: [{name: m, policy: sporadic, budget: 20ms, period: 10ms}]",
        "vcpus[0].budget",
        "period",
    );
    refused("machine: {cpus: 1, pth: quest}", "pth", "unknown field");
}

/// A nic on the quest path with top-half cost `top` (e.g. "3us").
fn nic_with_top_half(top: &str) -> String {
    format!(
        "{BASE}tasks: [{{name: t, vcpu: m, program: [{{forever: [{{read: n}}]}}]}}]
devices: [{{name: n, kind: nic, class: c, packet: 64B, top_half: {top}, bottom_half: 1us, arrival: {{kind: periodic, interval: 1ms}}}}]"
    )
}

#[test]
fn top_half_costs_are_carried_out_not_dropped() {
    // Quest paths: each device's top half (nic/disk `top_half`, generic
    // `isr`, the controller's `xhci.top_half` for a usb route) is passed to
    // the runtime, with no "not added" note.
    let p = check_model("m", &nic_with_top_half("3us")).expect("a valid model");
    assert!(p.notes.is_empty(), "{:?}", p.notes);
    assert_eq!(p.devices[0].top_half, Nanos::from_us(3));
    let generic = format!(
        "{BASE}tasks: [{{name: t, vcpu: m, program: [{{read: g}}]}}]
devices: [{{name: g, kind: generic, class: c, min_interarrival: 1ms, isr: 4us, dsr: 1us}}]"
    );
    let p = check_model("m", &generic).expect("a valid model");
    assert_eq!(p.devices[0].top_half, Nanos::from_us(4));
    let p = check_model("m", USB).expect("a runnable USB model");
    assert!(p.notes.is_empty(), "{:?}", p.notes);
    // ep0 through xhci (2us); ep1 through `slow` (0).
    assert_eq!(p.route_top_half(0), Nanos::from_us(2));
    assert_eq!(p.route_top_half(1), Nanos::ZERO);
}

#[test]
fn top_half_costs_user_space_cannot_express_are_refused() {
    // Below one microsecond the CPU-clock spin is mostly its own reads.
    refused(
        &nic_with_top_half("500ns"),
        "devices[0].top_half = 500ns",
        "cannot be spent faithfully from user space (use 0, or at least 1us)",
    );
    refused(
        &format!(
            "{BASE}tasks: [{{name: t, vcpu: m, program: [{{read: g}}]}}]
devices: [{{name: g, kind: generic, class: c, min_interarrival: 1ms, isr: 200ns, dsr: 1us}}]"
        ),
        "devices[0].isr = 200ns",
        "at least 1us",
    );
    refused(
        &USB.replace("{name: xhci, top_half: 2us", "{name: xhci, top_half: 100ns"),
        "xhci[0].top_half = 100ns",
        "at least 1us",
    );
    // The linux path: the kernel's interrupt handler is the top half.
    let linux = |dev: &str| {
        format!(
            "machine: {{cpus: 1, path: linux}}
vcpus: [{{name: rt, policy: fifo, priority: 40}}]
tasks: [{{name: rx, vcpu: rt, program: [{{read: d}}]}}]
devices: [{{name: d, class: c, {dev}}}]"
        )
    };
    refused(
        &linux("kind: nic, packet: 64B, top_half: 2us, bottom_half: 1us, arrival: {kind: periodic, interval: 1ms}"),
        "devices[0].top_half = 2us",
        "the kernel's own interrupt handler, which user space cannot lengthen",
    );
    refused(
        &linux("kind: generic, min_interarrival: 1ms, isr: 5us, dsr: 1us"),
        "devices[0].isr = 5us",
        "measured hard-IRQ cost from `costs:`",
    );
}

#[test]
fn the_runtime_top_half_spends_the_model_cost_per_event() {
    // Each ready report costs the top half at least the model's top half on
    // its own CPU clock (the runtime's own work comes on top), so its CPU
    // time per event is at least the stated cost. Structural, not timing:
    // the spin runs on the thread's CPU clock until the cost is spent.
    let Some(r) = run_or_skip(&nic_with_top_half("200us"), 300) else {
        return;
    };
    let rep = r.runtime.as_ref().expect("quest path: irqlab-rt's report");
    let events = rep.event("io").expect("the nic's class").events;
    assert!(events >= 50, "a 1 ms nic over 300 ms: {events} events");
    let per_event = rep.top_half_cpu_ns / events;
    assert!(
        per_event >= 200_000,
        "top half {} ns over {events} events: {per_event} ns each, below the model's 200us",
        rep.top_half_cpu_ns
    );
    // And the same system without the cost: the runtime's own per-event
    // work is far less than the 200 us the model adds.
    let Some(r0) = run_or_skip(&nic_with_top_half("0us"), 300) else {
        return;
    };
    let rep0 = r0.runtime.as_ref().expect("quest path: irqlab-rt's report");
    let events0 = rep0.event("io").expect("the nic's class").events.max(1);
    eprintln!(
        "top half per event: {per_event} ns with 200us ({events} events), {} ns without ({events0})",
        rep0.top_half_cpu_ns / events0
    );
    assert!(
        rep0.top_half_cpu_ns / events0 < per_event,
        "without the cost {} ns over {events0} events",
        rep0.top_half_cpu_ns
    );
}

#[test]
fn the_no_iovcpu_top_half_thread_spends_the_model_cost_per_event() {
    // quest-no-iovcpu: the class's top-half thread (no I/O VCPU) spins the
    // same per-event cost before it wakes the bottom-half thread.
    let text = "machine: {cpus: 1, path: quest-no-iovcpu}
vcpus: [{name: m, policy: sporadic, budget: 5ms, period: 10ms}]
tasks: [{name: t, vcpu: m, program: [{forever: [{read: n}]}]}]
devices: [{name: n, kind: nic, class: c, packet: 64B, top_half: 200us, bottom_half: 1us, arrival: {kind: periodic, interval: 1ms}}]";
    let Some(r) = run_or_skip(text, 300) else {
        return;
    };
    assert_eq!(r.top_halves.len(), 1, "{:?}", r.top_halves);
    let th = &r.top_halves[0];
    assert_eq!(th.class, "c");
    assert!(th.events >= 50, "a 1 ms nic over 300 ms: {th:?}");
    eprintln!(
        "no-iovcpu top half per event: {} ns with 200us ({} events)",
        th.cpu_ns / th.events,
        th.events
    );
    assert!(th.cpu_ns / th.events >= 200_000, "{th:?}");
    assert!(r.devices[0].handled > 0, "{:?}", r.devices[0]);
}

/// A model using every runnable device kind and program step.
const MAPPING: &str = "machine: {cpus: 1, path: quest}
vcpus:
  - {name: ctl, policy: sporadic, budget: 3ms, period: 10ms}
  - {name: bulk, policy: deferrable, budget: 2ms, period: 20ms}
  - {name: io.net, kind: io, policy: pibs, utilization: 10%, io_class: net}
  - {name: io.tick, kind: io, policy: sporadic, budget: 200us, period: 2ms, io_class: tick}
tasks:
  - name: control
    vcpu: ctl
    priority: 10
    period: 10ms
    program: [{compute: 200us}, {loop: {count: 2, do: [{compute: 50us}, {sleep: 100us}]}}]
  - name: net
    vcpu: ctl
    program: [{forever: [{read: udp}, {compute: 10us}]}]
  - name: ticker
    vcpu: bulk
    program: [{loop: {count: 20, do: [{read: tick}]}}]
  - {name: early, vcpu: bulk, offset: 100ms, program: [{compute: 100us}]}
  - {name: late, vcpu: bulk, offset: 10s, program: [{compute: 100us}]}
devices:
  - {name: udp, kind: nic, class: net, packet: 100B, top_half: 0us, bottom_half: 5us, omega_main: 5us,
     arrival: {kind: poisson, rate: 2000}}
  - {name: tick, kind: generic, class: tick, min_interarrival: 1ms, jitter: 100us, isr: 0us, dsr: 5us}
";

fn run_or_skip(text: &str, ms: u64) -> Option<ModelRun> {
    if let Err(e) = irqlab_rt::sys::probe_fifo() {
        irqlab_rt::skipped!("{e}");
        return None;
    }
    let _one = common::serial();
    match run_model("m", text, Some(Nanos::from_ms(ms)), Some(1)) {
        Ok(r) => Some(r),
        Err(e) if e.is_unavailable() => {
            irqlab_rt::skipped!("{e}");
            None
        }
        Err(e) => panic!("run: {e}"),
    }
}

#[test]
fn every_device_kind_and_step_maps_to_real_threads() {
    let Some(r) = run_or_skip(MAPPING, 400) else {
        return;
    };
    assert_eq!(r.mode, "fifo");
    let rep = r.runtime.as_ref().expect("quest path: irqlab-rt's report");
    // Servers on the model's CPU, with the model's kinds.
    let kinds: Vec<(&str, &str)> = rep
        .servers
        .iter()
        .map(|s| (s.name.as_str(), s.kind))
        .collect();
    assert_eq!(
        kinds,
        vec![
            ("ctl", "sporadic"),
            ("bulk", "deferrable"),
            ("io.net", "pibs"),
            ("io.tick", "sporadic")
        ]
    );
    assert!(rep.servers.iter().all(|s| s.cpu == r.cpus[0]));
    // Each budgeted server has the model's budget and period; the PIBS I/O
    // VCPU has none of its own (it takes its reader's Main VCPU's period
    // while it serves it, QUEST-VCPU Alg. 10).
    let bp: Vec<_> = rep
        .servers
        .iter()
        .map(|s| (s.name.as_str(), s.budget_ns, s.period_ns))
        .collect();
    assert_eq!(
        bp,
        vec![
            ("ctl", Some(3_000_000), Some(10_000_000)),
            ("bulk", Some(2_000_000), Some(20_000_000)),
            ("io.net", None, None),
            ("io.tick", Some(200_000), Some(2_000_000))
        ]
    );
    // Each device's fd is bound to its class's I/O VCPU, one fd each.
    for (dev, class) in [("udp", "io.net"), ("tick", "io.tick")] {
        let e = rep.event(class).expect("an event path per class");
        assert_eq!(e.path, "class");
        assert_eq!(e.fds.len(), 1, "{dev}");
        let d = r.devices.iter().find(|d| d.name == dev).expect("device");
        assert!(d.sent > 0 && d.handled > 0, "{dev}: {d:?}");
        // Everything handled was sent; every read took a handled item.
        assert!(d.handled <= d.sent, "{dev}: {d:?}");
        assert!(d.latency.count <= d.handled, "{dev}: {d:?}");
    }
    // The periodic task: releases every 10 ms from the start; each job
    // computes 300 us of CPU time in total, so its CPU time is at least
    // 300 us per finished job.
    let c = &r.tasks[0];
    assert_eq!(
        (c.name.as_str(), c.period_ns),
        ("control", Some(10_000_000))
    );
    assert_eq!(c.released, r.duration_ns / 10_000_000 + 1, "{c:?}");
    assert!(c.completed >= 1 && c.completed <= c.released);
    assert!(c.cpu_time_ns >= c.completed * 300_000, "{c:?}");
    // Sleeps are not CPU time: the response is at least compute + sleeps.
    assert!(c.response.min_ns.unwrap_or(0) >= 500_000, "{c:?}");
    // The loop of 20 reads ends: the once-released ticker finishes its job.
    let t = &r.tasks[2];
    assert_eq!((t.released, t.completed), (1, 1), "{t:?}");
    let tick = r.devices.iter().find(|d| d.name == "tick").expect("tick");
    assert!(tick.latency.count >= 20, "{tick:?}");
    // A task released once at its offset: inside the run it runs its job
    // once; past the run's end it is never released and computes nothing.
    let (early, late) = (&r.tasks[3], &r.tasks[4]);
    assert_eq!(
        (early.name.as_str(), early.released, early.completed),
        ("early", 1, 1)
    );
    assert!(early.cpu_time_ns >= 100_000, "{early:?}");
    assert_eq!(
        (late.name.as_str(), late.released, late.completed),
        ("late", 0, 0)
    );
    assert!(late.cpu_time_ns < 100_000, "{late:?}");
    // Budgets hold on real threads: no server above its budget fraction
    // (+1 % for the supervisor's enforcement overrun).
    for (name, frac) in [
        ("ctl", 0.3),
        ("bulk", 0.1),
        ("io.net", 0.1),
        ("io.tick", 0.1),
    ] {
        let s = r.servers.iter().find(|s| s.name == name).expect("server");
        assert!(s.share_fraction <= frac + 0.01, "{name}: {s:?}");
    }
}

#[test]
fn linux_path_runs_plain_fifo_threads_and_reads_the_socket() {
    let text = "machine: {cpus: 1, path: linux}
vcpus: [{name: rt, policy: fifo, priority: 40}]
tasks:
  - {name: control, vcpu: rt, period: 5ms, program: [{compute: 100us}]}
  - {name: rx, vcpu: rt, program: [{loop: {count: 20, do: [{read: n}]}}]}
devices:
  - {name: n, kind: nic, class: c, packet: 64B, top_half: 0us, bottom_half: 2us,
     arrival: {kind: burst, count: 5, gap: 10us, every: 2ms}}
";
    let Some(r) = run_or_skip(text, 300) else {
        return;
    };
    assert_eq!(r.mode, "linux");
    assert!(r.runtime.is_none(), "no irqlab server on the linux path");
    // The kernel is the bottom half (its note); the top half is the
    // kernel's interrupt handler (a model top half is refused).
    assert_eq!(r.notes.len(), 1, "{:?}", r.notes);
    assert!(r.notes[0].contains("devices[0].bottom_half = 2us"));
    let n = &r.devices[0];
    // Bursts of 5 every 2 ms: at most 5 per started 2 ms of the run; the
    // loop reads 20 of them and ends; the rest is queued or dropped by the
    // kernel's socket buffer.
    assert!(
        n.sent <= 5 * (r.duration_ns / 2_000_000 + 1) && n.sent >= 20,
        "{n:?}"
    );
    assert_eq!(n.latency.count, 20, "{n:?}");
    assert_eq!(r.tasks[1].completed, 1);
    assert!(r.tasks[0].completed >= 1);
    assert_eq!(r.servers[0].kind, "thread");
}

/// Two interrupters (USB-DIFFSERV §III-C), moderation on the low one, an
/// endpoint per class and one moved between them by a `bind` step.
const USB: &str = "machine: {cpus: 1, path: quest}
vcpus:
  - {name: hi, policy: sporadic, budget: 2ms, period: 10ms}
  - {name: lo, policy: sporadic, budget: 4ms, period: 20ms}
  - {name: mover, policy: sporadic, budget: 2ms, period: 40ms}
  - {name: io.hi, kind: io, policy: pibs, utilization: 20%, io_class: usb-hi}
  - {name: io.lo, kind: io, policy: sporadic, budget: 1ms, period: 5ms, io_class: usb-lo}
tasks:
  - {name: hi, vcpu: hi, period: 10ms, jobs: 10, program: [{read: ep0}]}
  - {name: lo, vcpu: lo, program: [{loop: {count: 1000, do: [{read: ep1}]}}]}
  - name: mover
    vcpu: mover
    program:
      - {loop: {count: 5, do: [{write: ep2}]}}
      - {bind: {device: ep2, class: usb-hi}}
      - {loop: {count: 5, do: [{read: ep2}]}}
xhci:
  - {name: xhci, top_half: 2us, interrupter_map: [usb-hi, usb-lo, 0]}
  - {name: slow, top_half: 0us, moderation: 2ms, interrupter_map: [usb-lo]}
devices:
  - {name: ep0, kind: usb, class: usb-hi, controller: xhci, rate: 60MB/s, request: 512B,
     omega_io: 30us, omega_main: 20us}
  - {name: ep1, kind: usb, class: usb-lo, controller: slow, rate: 60MB/s, jitter: 20us,
     request: 512B, omega_io: 30us, omega_main: 20us}
  - {name: ep2, kind: usb, class: usb-lo, controller: xhci, rate: 1MB/s, request: 1KiB,
     omega_io: 30us}
";

#[test]
fn usb_endpoints_complete_through_their_interrupters() {
    let p = check_model("m", USB).expect("a runnable USB model");
    // One route per endpoint and interrupter it can complete through: ep2
    // has two (bound to usb-lo, then rebound to usb-hi).
    let routes: Vec<_> = p
        .routes
        .iter()
        .map(|r| (r.dev, r.interrupter, r.class.as_str()))
        .collect();
    assert_eq!(
        routes,
        vec![
            (0, Some((0, 0)), "usb-hi"),
            (1, Some((1, 0)), "usb-lo"),
            (2, Some((0, 1)), "usb-lo"),
            (2, Some((0, 0)), "usb-hi"),
        ]
    );
    let Some(r) = run_or_skip(USB, 400) else {
        return;
    };
    let rep = r.runtime.as_ref().expect("quest path: irqlab-rt's report");
    // Each interrupter's fd group is bound to its class's I/O VCPU.
    let hi = rep.event("io.hi").expect("usb-hi's event path");
    let lo = rep.event("io.lo").expect("usb-lo's event path");
    assert_eq!((hi.path, hi.fds.len()), ("class", 2));
    assert_eq!((lo.path, lo.fds.len()), ("class", 2));
    let dev = |n: &str| r.devices.iter().find(|d| d.name == n).expect("device");
    let task = |n: &str| r.tasks.iter().find(|t| t.name == n).expect("task");
    // hi: 10 jobs of one read each; mover: 5 writes then 5 reads, all done.
    assert_eq!(task("hi").completed, 10, "{:?}", task("hi"));
    assert_eq!(task("mover").completed, 1, "{:?}", task("mover"));
    assert_eq!(dev("ep0").latency.count, 10);
    assert_eq!(dev("ep2").latency.count, 10);
    // Every completion was a request sent, and a request returns once.
    for d in &r.devices {
        assert_eq!(d.kind, "usb");
        assert!(d.latency.count <= d.handled && d.handled <= d.sent, "{d:?}");
        assert_eq!(
            d.bytes,
            d.latency.count * if d.name == "ep2" { 1024 } else { 512 }
        );
    }
    // The bind step moved ep2's last 5 requests to interrupter 0: usb-hi
    // handled ep0's 10 and ep2's 5, usb-lo ep2's first 5 and ep1's.
    let ep1 = dev("ep1").handled;
    assert_eq!(hi.items, 15, "{hi:?}");
    assert_eq!(lo.items, 5 + ep1, "{lo:?}");
    // Moderation: the `slow` interrupter fires at most every 2 ms, and lo
    // waits for each of its reads' interrupts -- at most one read per
    // interrupt (about 2400 in 300 ms without moderation).
    let fires = r.duration_ns / 2_000_000 + 2;
    assert!(ep1 <= fires && ep1 >= 10, "{ep1} reads, at most {fires}");
    // A transfer takes request/rate: 1 KiB at 1 MB/s is 1.024 ms, so no ep2
    // request returns sooner; every request pays its microframe wait.
    assert!(dev("ep2").latency.min_ns.unwrap_or(0) >= 1_024_000);
    // Omega_Main is CPU time of the reading task.
    assert!(task("hi").cpu_time_ns >= 10 * 20_000, "{:?}", task("hi"));
}

#[test]
fn usb_without_io_vcpus_runs_bottom_halves_in_the_readers_vcpu() {
    let text = USB.replace("path: quest}", "path: quest-no-iovcpu}");
    let Some(r) = run_or_skip(&text, 300) else {
        return;
    };
    let rep = r.runtime.as_ref().expect("quest path: irqlab-rt's report");
    // No I/O VCPU is built: the class bottom halves are threads of Main
    // VCPUs, woken by the top half.
    assert!(rep.servers.iter().all(|s| !s.name.starts_with("io.")));
    assert!(rep.tasks.iter().any(|t| t.name == "usb-hi/bh"));
    assert!(rep.tasks.iter().any(|t| t.name == "usb-lo/bh"));
    let task = |n: &str| r.tasks.iter().find(|t| t.name == n).expect("task");
    assert_eq!(task("hi").completed, 10);
    assert_eq!(task("mover").completed, 1);
}

#[test]
fn disk_requests_take_the_service_time_then_the_pio_bottom_half() {
    let text = format!(
        "{BASE}tasks:
  - {{name: t, vcpu: m, period: 10ms, jobs: 5, program: [{{read: d}}, {{write: d}}]}}
devices:
  - {{name: d, kind: disk, class: c, latency: 1ms, top_half: 1us, per_sector: 10us, sectors: 8,
     sector: 512B, omega_main: 10us}}
"
    );
    let p = check_model("m", &text).expect("a runnable disk model");
    assert_eq!(p.routes.len(), 1);
    assert_eq!(p.devices[0].bottom_half, Nanos::from_us(80));
    assert_eq!(p.route_top_half(0), Nanos::from_us(1));
    let Some(r) = run_or_skip(&text, 200) else {
        return;
    };
    let rep = r.runtime.as_ref().expect("quest path: irqlab-rt's report");
    let e = rep.event("io").expect("the disk's class");
    assert_eq!(e.fds.len(), 1);
    assert_eq!(e.items, 10, "{e:?}");
    let d = &r.devices[0];
    assert_eq!((d.kind, d.sent, d.handled), ("disk", 10, 10), "{d:?}");
    assert_eq!(d.latency.count, 10);
    assert_eq!(d.bytes, 10 * 8 * 512);
    // Service time then the bottom half's 8 x 10 us, then Omega_Main.
    assert!(d.latency.min_ns.unwrap_or(0) >= 1_090_000, "{d:?}");
    assert_eq!(r.tasks[0].completed, 5);
    assert!(r.tasks[0].response.min_ns.unwrap_or(0) >= 2_180_000);
    // The PIO copy is the I/O VCPU's CPU time.
    let io = rep.server("io").expect("I/O VCPU");
    assert!(io.cpu_time_ns >= 10 * 80_000, "{io:?}");
}

#[test]
fn ping_flood_and_trace_arrivals_on_loopback() {
    let dir = std::env::temp_dir().join(format!("irqlab-trace-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    // 40 packets at 2 ms, 4 ms, ..., 80 ms, plus a header and a comment.
    let mut csv = String::from("time,size\n# arrivals\n");
    for k in (1..=40).rev() {
        csv.push_str(&format!("{}ms,64\n", 2 * k));
    }
    std::fs::write(dir.join("arrivals.csv"), csv).expect("trace file");
    let text = format!(
        "{BASE}  - {{name: io2, kind: io, policy: pibs, utilization: 10%, io_class: c2}}
tasks:
  - {{name: t, vcpu: m, program: [{{forever: [{{read: ping}}]}}]}}
  - {{name: u, vcpu: m, program: [{{loop: {{count: 40, do: [{{read: tr}}]}}}}]}}
devices:
  - {{name: ping, kind: nic, class: c, packet: 64B, top_half: 0us, bottom_half: 20us,
     arrival: {{kind: ping-flood, rtt: 1ms}}}}
  - {{name: tr, kind: nic, class: c2, packet: 64B, top_half: 0us, bottom_half: 5us,
     arrival: {{kind: trace, file: arrivals.csv}}}}
"
    );
    // The trace is read relative to the model file's directory.
    let model = dir.join("m.yaml");
    let p = check_model(model.to_str().expect("utf-8 path"), &text).expect("runnable");
    assert_eq!(p.name, "m.yaml");
    let Some(r) = (|| {
        if let Err(e) = irqlab_rt::sys::probe_fifo() {
            irqlab_rt::skipped!("{e}");
            return None;
        }
        let _one = common::serial();
        let path = model.to_str().expect("utf-8 path");
        match run_model(path, &text, Some(Nanos::from_ms(300)), Some(1)) {
            Ok(r) => Some(r),
            Err(e) if e.is_unavailable() => {
                irqlab_rt::skipped!("{e}");
                None
            }
            Err(e) => panic!("run: {e}"),
        }
    })() else {
        return;
    };
    let _ = std::fs::remove_dir_all(&dir);
    // The trace: exactly its 40 packets, all read.
    let tr = &r.devices[1];
    assert_eq!(
        (tr.sent, tr.handled, tr.latency.count),
        (40, 40, 40),
        "{tr:?}"
    );
    assert_eq!(r.tasks[1].completed, 1);
    // The closed loop: never more than one packet per rtt (1 ms), and the
    // replies bring sends forward -- the 10 ms fallback alone sends 31.
    let ping = &r.devices[0];
    let most = r.duration_ns / 1_000_000 + 1;
    assert!(
        ping.sent <= most && ping.sent >= 62,
        "{ping:?}, at most {most}"
    );
    assert!(
        ping.handled <= ping.sent && ping.sent <= ping.handled + 1,
        "{ping:?}"
    );
}

/// `machine.linux.ksoftirqd: {fifo: P}`: the kernel's ksoftirqd threads of
/// the run's CPUs run at SCHED_FIFO P during the run (the run says so in
/// its warnings) and have their own policy back afterwards.
#[test]
fn linux_run_applies_and_restores_ksoftirqd() {
    let text = "machine: {cpus: 1, path: linux, linux: {ksoftirqd: {fifo: 3}}}
vcpus: [{name: rt, policy: fifo, priority: 40}]
tasks: [{name: control, vcpu: rt, period: 5ms, program: [{compute: 100us}]}]
";
    let ksd = |cpus: &[usize]| -> Vec<(i32, irqlab_rt::sys::SchedPolicy)> {
        let mut v = Vec::new();
        for dir in std::fs::read_dir("/proc").expect("/proc").flatten() {
            let Some(pid) = dir.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else {
                continue;
            };
            let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
            let n = comm
                .trim()
                .strip_prefix("ksoftirqd/")
                .and_then(|n| n.parse().ok());
            if n.is_some_and(|n: usize| cpus.contains(&n)) {
                v.push((pid, irqlab_rt::sys::get_policy(pid).expect("readable")));
            }
        }
        v.sort_by_key(|x| x.0);
        v
    };
    let all = irqlab_rt::sys::allowed_cpus();
    let before = ksd(&all);
    if let Err(why) = irqlab_rt::sys::probe_fifo() {
        // without CAP_SYS_NICE the run is refused
        let e = match run_model("m", text, Some(Nanos::from_ms(50)), Some(1)) {
            Ok(_) => panic!("ran without SCHED_FIFO"),
            Err(e) => e.to_string(),
        };
        irqlab_rt::skipped!("no SCHED_FIFO ({why}): refused with {e}");
        return;
    }
    let Some(r) = run_or_skip(text, 100) else {
        return;
    };
    let w = r
        .warnings
        .iter()
        .find(|w| w.starts_with("machine.linux.ksoftirqd: SCHED_FIFO 3"))
        .unwrap_or_else(|| panic!("no ksoftirqd warning in {:?}", r.warnings));
    for &c in &r.cpus {
        assert!(w.contains(&format!("ksoftirqd/{c} (was ")), "{w}");
    }
    assert_eq!(ksd(&all), before, "restored after the run");
}

/// A `cbs` VCPU on the linux path runs SCHED_DEADLINE pinned to its CPU;
/// where the kernel cannot admit that (the CPU is not a root domain of
/// its own, as on any multi-CPU machine without an exclusive cpuset
/// partition) the run is refused with the reason, not run unpinned.
#[test]
fn linux_deadline_is_pinned_or_refused_with_the_reason() {
    let text = "machine: {cpus: 1, path: linux}
vcpus: [{name: dl, policy: cbs, runtime: 1ms, period: 10ms}]
tasks: [{name: control, vcpu: dl, period: 10ms, program: [{compute: 100us}]}]
";
    if let Err(e) = irqlab_rt::sys::probe_fifo() {
        irqlab_rt::skipped!("{e}");
        return;
    }
    let _one = common::serial();
    match run_model("m", text, Some(Nanos::from_ms(100)), Some(1)) {
        Ok(r) => {
            assert_eq!(r.tasks[0].name, "control");
            assert!(r.tasks[0].completed >= 1, "{:?}", r.tasks[0]);
            eprintln!("the CPU is its own root domain here: ran pinned");
        }
        Err(e) => {
            let s = e.to_string();
            assert!(
                s.contains("tasks[0] (control)") && s.contains("own root domain"),
                "{s}"
            );
        }
    }
}
