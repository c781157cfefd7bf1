//! The guard of the runtime's plan: every model the repository ships
//! (`python/irqlab/scenarios`, `python/irqlab/experiments`) and every
//! hostile model (`tests/hostile/models`) is planned for a real run
//! (`model_run::plan::plan`, without running anything) and the plan's
//! `Debug` form -- or the refusal, with its field path -- is compared with
//! `tests/snapshots/rt_plans.txt`. A change of the plans is a change of
//! what runs for real: rewrite the file with `IRQLAB_UPDATE_SNAPSHOTS=1`
//! and explain each difference.
//!
//! The plan names the real CPUs this machine lets the run use, so the
//! snapshot is compared only on a machine with the same allowed CPUs (and
//! the same `/sys/kernel/realtime`) as the one that wrote it.

use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn models() -> Vec<PathBuf> {
    let mut out = Vec::new();
    for dir in [
        "python/irqlab/scenarios",
        "python/irqlab/experiments",
        "tests/hostile/models",
    ] {
        let Ok(rd) = std::fs::read_dir(root().join(dir)) else {
            continue;
        };
        let mut files: Vec<PathBuf> = rd
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
            .collect();
        files.sort();
        out.extend(files);
    }
    out
}

fn machine() -> String {
    let rt = std::fs::read_to_string("/sys/kernel/realtime").unwrap_or_default();
    format!(
        "allowed cpus {:?}, realtime {:?}",
        irqlab_rt::sys::allowed_cpus(),
        rt.trim()
    )
}

const CF: &str = include_str!("../../../python/irqlab/scenarios/control-and-flood.yaml");
const CSL: &str = include_str!("../../../python/irqlab/scenarios/control-and-stream-linux.yaml");
const UT: &str = include_str!("../../../python/irqlab/scenarios/usb-throughput.yaml");
const CTL: &str = "  - {name: ctl, policy: sporadic, budget: 500us, period: 2ms}\n";
const SENSOR: &str =
    "  - {name: sensor, kind: generic, class: sensor, min_interarrival: 2ms, isr: 0us, dsr: 10us}\n";
const FLOOD_ARRIVAL: &str = "    arrival: {kind: flood, interval: 20us}\n";
const CONTROL: &str =
    "  - {name: control, vcpu: ctl, priority: 10, period: 10ms, program: [{compute: 600us}]}\n";
const STREAM_TOP: &str = "    top_half: 0us\n    bottom_half: 5us\n";
const LINUX_MACHINE: &str = "machine: {cpus: 1, path: linux}\n";
const UT_TASK: &str = "  - {name: reader, vcpu: main, program: [{forever: [{read: ttyACM0}]}]}\n";

fn dist(v: &str) -> String {
    format!("{{samples: 10, min: {v}, mean: {v}, p50: {v}, p99: {v}, max: {v}}}")
}

/// Variants of shipped models that reach each rule of the real-thread
/// lowering: every kind of value carried out, and every refusal.
fn variants() -> Vec<(&'static str, String)> {
    let ctl = |v: &str| CF.replace(CTL, &format!("  - {{name: ctl, {v}}}\n"));
    let arrival = |a: &str| CF.replace(FLOOD_ARRIVAL, &format!("    arrival: {{{a}}}\n"));
    let sensor = |extra: &str| {
        CF.replace(
            SENSOR,
            &format!(
                "  - {{name: sensor, kind: generic, class: sensor, min_interarrival: 2ms, \
                 isr: 0us, dsr: 10us{extra}}}\n"
            ),
        )
    };
    let task = |t: &str| CF.replace(CONTROL, &format!("{CONTROL}  - {t}\n"));
    let linux_vcpus = |v: &str| {
        CSL.replace(
            "  - {name: ctl, policy: fifo, priority: 50}\n",
            &format!("  - {{name: ctl, {v}}}\n"),
        )
    };
    let linux = |l: &str| {
        CSL.replace(
            LINUX_MACHINE,
            &format!("machine: {{cpus: 1, path: linux, linux: {{{l}}}}}\n"),
        )
    };
    let costs = format!(
        "costs:\n  origin: {{host: h, kernel: k, cpus: 1, date: d, tool: t}}\n  \
         runtime_top_half: {}\n  runtime_dispatch: {}\n  thread_wakeup: {}\n",
        dist("10us"),
        dist("20us"),
        dist("30us")
    );
    vec![
        ("quest: polling Main VCPU", ctl("policy: polling, budget: 500us, period: 2ms")),
        ("quest: deferrable Main VCPU with a priority", ctl("policy: deferrable, budget: 500us, period: 2ms, priority: 20")),
        ("quest: sporadic max_repl 4", ctl("policy: sporadic, budget: 500us, period: 2ms, max_repl: 4")),
        ("quest: sporadic max_repl 32", ctl("policy: sporadic, budget: 500us, period: 2ms, max_repl: 32")),
        ("quest: sporadic background", ctl("policy: sporadic, budget: 500us, period: 2ms, background: true")),
        ("quest: fifo Main VCPU", ctl("policy: fifo, priority: 30")),
        ("quest: fifo Main VCPU without priority", ctl("policy: fifo")),
        ("quest: cbs Main VCPU", ctl("policy: cbs, runtime: 500us, period: 2ms")),
        ("quest: sporadic I/O VCPU with a priority", CF.replace("{name: io.sensor, kind: io, policy: pibs, utilization: 10%, io_class: sensor}", "{name: io.sensor, kind: io, policy: sporadic, budget: 100us, period: 1ms, priority: 5, io_class: sensor}")),
        ("quest: sporadic I/O VCPU", CF.replace("{name: io.sensor, kind: io, policy: pibs, utilization: 10%, io_class: sensor}", "{name: io.sensor, kind: io, policy: sporadic, budget: 100us, period: 1ms, io_class: sensor}")),
        ("quest: fifo I/O VCPU", CF.replace("{name: io.sensor, kind: io, policy: pibs, utilization: 10%, io_class: sensor}", "{name: io.sensor, kind: io, policy: fifo, priority: 60, io_class: sensor}")),
        ("quest: deferrable I/O VCPU", CF.replace("{name: io.sensor, kind: io, policy: pibs, utilization: 10%, io_class: sensor}", "{name: io.sensor, kind: io, policy: deferrable, budget: 100us, period: 1ms, io_class: sensor}")),
        ("quest: strict pibs", CF.replace("utilization: 5%, io_class: flood", "utilization: 5%, inherit: strict, io_class: flood")),
        ("quest: poisson", arrival("kind: poisson, rate: 1000, start: 1ms, stop: 1s")),
        ("quest: burst", arrival("kind: burst, count: 4, gap: 10us, every: 1ms")),
        ("quest: ping-flood", arrival("kind: ping-flood, rtt: 50us")),
        ("quest: periodic with stop", arrival("kind: periodic, interval: 100us, start: 5ms, stop: 1s")),
        ("quest: ring, buffer and a big datagram", CF.replace("    packet: 64B\n", "    packet: 1500B\n    ring: 64\n    buffer: 16\n    omega_main: 3us\n")),
        ("quest: a datagram above 65507 bytes", CF.replace("    packet: 64B\n", "    packet: 65520B\n")),
        ("quest: top halves", CF.replace("    top_half: 0us\n", "    top_half: 4us\n").replace("isr: 0us, dsr: 10us", "isr: 3us, dsr: 10us")),
        ("quest: costs are not the runtime's", CF.replace("    top_half: 0us\n", "    top_half: 4us\n") + &costs),
        ("quest: timerfd source", sensor(", source: timerfd, start: 1ms")),
        ("quest: pipe source", sensor(", source: pipe")),
        ("quest: user upcall", CF.replace(SENSOR, "  - {name: sensor, kind: generic, min_interarrival: 2ms, isr: 1us, dsr: 10us, upcall: {budget: 1ms, period: 10ms}}\n")),
        ("quest: kernel upcall", CF.replace("    packet: 64B\n", "    packet: 64B\n    upcall: {mode: kernel, budget: 1ms, period: 10ms, events: 5, fallback: true}\n")),
        ("quest: abort_on_miss", CF.replace("period: 10ms, program: [{compute: 600us}]}", "period: 10ms, abort_on_miss: true, program: [{compute: 600us}]}")),
        ("quest: periodic task with deadline, offset and jobs", CF.replace("period: 10ms, program: [{compute: 600us}]}", "period: 10ms, deadline: 8ms, offset: 1ms, jobs: 20, program: [{compute: 600us}]}")),
        ("quest: one-shot task with a loop", task("{name: once, vcpu: ctl, priority: 2, offset: 1ms, program: [{compute: 100us}, {sleep: 1ms}, {loop: {count: 3, do: [{compute: 10us}, {forever: [{read: sensor}]}]}}]}")),
        ("quest: one-shot task without a deadline", task("{name: once, vcpu: ctl, priority: 2, program: [{compute: 100us}]}")),
        ("quest: a write to a nic", task("{name: w, vcpu: ctl, priority: 2, program: [{compute: 1us}, {loop: {count: 2, do: [{write: flood}]}}]}")),
        ("quest: a bind of a nic", task("{name: w, vcpu: ctl, priority: 2, program: [{bind: {device: flood, class: sensor}}]}")),
        ("quest: consumers", CF.replace("devices:\n", "classes:\n  - {name: sensor, consumer: reader}\n  - {name: flood, consumer: sink}\ndevices:\n")),
        ("quest: runtime options", CF.replace("simulation: {duration: 2s}\n", "simulation: {duration: 2s, seed: 7}\nruntime: {require_fifo: true, backend: io-uring, report_samples: 100}\n")),
        ("quest: runtime cpus", CF.replace("simulation: {duration: 2s}\n", "simulation: {duration: 2s}\nruntime: {cpus: [0], generator_cpu: 1}\n")),
        ("quest: runtime cpu not allowed", CF.replace("simulation: {duration: 2s}\n", "simulation: {duration: 2s}\nruntime: {cpus: [77]}\n")),
        ("quest: report_samples too many", CF.replace("simulation: {duration: 2s}\n", "simulation: {duration: 2s}\nruntime: {report_samples: 100000000}\n")),
        ("quest: three CPUs", CF.replace("machine: {cpus: 1, path: quest}", "machine: {cpus: 3, path: quest}")),
        ("quest-no-iovcpu", CF.replace("path: quest}", "path: quest-no-iovcpu}")),
        ("linux: sporadic VCPU", linux_vcpus("policy: sporadic, budget: 1ms, period: 10ms")),
        ("linux: cbs VCPU", linux_vcpus("policy: cbs, runtime: 1ms, period: 10ms")),
        ("linux: cbs VCPU with two tasks", linux_vcpus("policy: cbs, runtime: 1ms, period: 10ms").replace("  - name: reader\n    vcpu: rx\n", "  - name: reader\n    vcpu: ctl\n    priority: 3\n")),
        ("linux: fifo VCPU, tasks of two priorities", CSL.replace("  - name: reader\n    vcpu: rx\n", "  - name: reader\n    vcpu: ctl\n    priority: 3\n")),
        ("linux: fifo VCPU, tasks of one priority", CSL.replace("  - name: reader\n    vcpu: rx\n", "  - name: reader\n    vcpu: ctl\n")),
        ("linux: a top half", CSL.replace(STREAM_TOP, "    top_half: 2us\n    bottom_half: 5us\n")),
        ("linux: a ring", CSL.replace(STREAM_TOP, "    top_half: 0us\n    bottom_half: 0us\n    ring: 64\n")),
        ("linux: costs", CSL.to_string() + &costs.replace("runtime_top_half", "context_switch").replace("runtime_dispatch", "timer_wakeup")),
        ("linux: max_softirq_restart 10", linux("max_softirq_restart: 10, max_softirq_time: 2ms")),
        ("linux: max_softirq_restart 5", linux("max_softirq_restart: 5")),
        ("linux: max_softirq_time 3ms", linux("max_softirq_time: 3ms")),
        ("linux: threaded_bh", linux("threaded_bh: true")),
        ("linux: ksoftirqd fifo 60", linux("ksoftirqd: {fifo: 60}")),
        ("linux: ksoftirqd fifo 50", linux("ksoftirqd: {fifo: 50}")),
        ("linux: ksoftirqd deadline", linux("ksoftirqd: {deadline: {runtime: 1ms, period: 10ms}}")),
        ("linux: usb", UT.replace("path: quest}", "path: linux}").replace("  - {name: io, kind: io, policy: pibs, utilization: 4%, io_class: usb0}\n", "")),
        ("linux: disk", CSL.replace("devices:\n", "devices:\n  - {name: d0, kind: disk, class: stream, latency: 1ms, top_half: 0us, per_sector: 10us, sectors: 2, sector: 512B}\n")),
        ("usb: a write", UT.replace(UT_TASK, "  - {name: reader, vcpu: main, program: [{forever: [{write: ttyACM0}, {read: ttyACM0}]}]}\n")),
        ("usb: a bind to the class of interrupter 1", UT.replace("interrupter_map: [usb0, 0]", "interrupter_map: [usb0, usb1]").replace("io_class: usb0}\n", "io_class: usb0}\n  - {name: io1, kind: io, policy: pibs, utilization: 4%, io_class: usb1}\n").replace(UT_TASK, "  - {name: reader, vcpu: main, program: [{read: ttyACM0}, {bind: {device: ttyACM0, class: usb1}}, {forever: [{read: ttyACM0}]}]}\n")),
        ("usb: a moderation and no frame phase", UT.replace("random_frame_phase: true,", "moderation: 250us,")),
        ("disk: on quest", CF.replace("devices:\n", "devices:\n  - {name: d0, kind: disk, class: sensor, latency: 1ms, top_half: 2us, per_sector: 10us, sectors: 3, sector: 1024B, omega_main: 1us}\n").replace(CONTROL, &format!("{CONTROL}  - {{name: io, vcpu: ctl, priority: 2, program: [{{forever: [{{read: d0}}, {{write: d0}}]}}]}}\n"))),
    ]
}

fn render() -> String {
    let mut out = format!("# {}\n", machine());
    for p in models() {
        let rel = p
            .strip_prefix(root())
            .unwrap_or(&p)
            .to_string_lossy()
            .into_owned();
        let text = std::fs::read_to_string(&p).unwrap_or_default();
        let name = format!("../../{rel}");
        let r = irqlab_rt::model_run::plan::plan(&name, &text, None, None);
        out.push_str(&format!("\n=== {rel}\n"));
        match r {
            Ok(plan) => out.push_str(&format!("{plan:#?}\n")),
            Err(e) => out.push_str(&format!("refused: {e}\n")),
        }
    }
    for (name, text) in variants() {
        out.push_str(&format!("\n=== variant: {name}\n"));
        let name = format!(
            "../../python/irqlab/scenarios/{}.yaml",
            name.replace([' ', ':'], "_")
        );
        match irqlab_rt::model_run::plan::plan(&name, &text, None, None) {
            Ok(plan) => out.push_str(&format!("{plan:#?}\n")),
            Err(e) => out.push_str(&format!("refused: {e}\n")),
        }
    }
    out
}

#[test]
fn plans_of_the_shipped_models_are_unchanged() {
    let file = root().join("tests/snapshots/rt_plans.txt");
    let now = render();
    if std::env::var_os("IRQLAB_UPDATE_SNAPSHOTS").is_some() {
        std::fs::write(&file, &now).expect("write the snapshot");
        return;
    }
    let before = std::fs::read_to_string(&file).expect("tests/snapshots/rt_plans.txt");
    if before.lines().next() != now.lines().next() {
        eprintln!(
            "skipped: the snapshot was written on another machine ({:?}, here {:?})",
            before.lines().next(),
            now.lines().next()
        );
        return;
    }
    if before != now {
        let at = before
            .lines()
            .zip(now.lines())
            .position(|(a, b)| a != b)
            .unwrap_or(before.lines().count().min(now.lines().count()));
        panic!(
            "the plans changed at line {}: {:?} -> {:?} (rewrite with IRQLAB_UPDATE_SNAPSHOTS=1 \
             and explain the difference)",
            at + 1,
            before.lines().nth(at),
            now.lines().nth(at)
        );
    }
}
