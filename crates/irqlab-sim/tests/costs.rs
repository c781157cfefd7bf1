//! Measured `costs:` (`irqlab calibrate`) reach the simulator and the
//! analysis: hand-checked schedules with and without the section.

use std::path::Path;

use irqlab_analysis::system::model_bounds;
use irqlab_sim::{from_model, simulate, SimConfig};

fn lower(text: &str) -> SimConfig {
    let (m, _) = irqlab_model::load_str(text).expect("valid model");
    from_model(&m, Path::new(".")).expect("lowers")
}

fn dist(v: &str) -> String {
    format!("{{samples: 10, min: {v}, mean: {v}, p50: {v}, p99: {v}, max: {v}}}")
}

const ORIGIN: &str = "  origin: {host: h, kernel: k, cpus: 1, date: d, tool: t}\n";

/// Linux: a NIC packet every 1 ms in [0, 10 ms): 10 packets, each a 5 us
/// hard IRQ and a 10 us softirq, read by one SCHED_FIFO task.
const LINUX: &str = "machine: {cpus: 1, path: linux}
simulation: {duration: 10ms}
vcpus: [{name: V, policy: fifo, priority: 10}]
tasks: [{name: rx, vcpu: V, program: [{forever: [{read: eth}]}]}]
devices:
  - {name: eth, kind: nic, class: net, top_half: 5us, bottom_half: 10us, packet: 64B,
     arrival: {kind: periodic, interval: 1ms}}
";

fn linux_costs() -> String {
    format!(
        "{LINUX}costs:\n{ORIGIN}  net_path: nic\n  supervisor_decision: {}\n  kernel:\n    tracing: ftrace\n    nic: {{packets: 100, hardirq: {}, softirq: {}}}\n    loopback: {{packets: 100, softirq: {}}}\n",
        dist("300ns"),
        dist("2us"),
        dist("3us"),
        dist("40us"),
    )
}

/// Without costs: 10 x 5 us of hard IRQ, 10 x 10 us of softirq. With the
/// NIC path's 2 us hard IRQ and 3 us softirq per packet: 10 x 7 us and
/// 10 x 13 us; each packet's handling (arrival to the end of its softirq)
/// is 7 + 13 = 20 us.
#[test]
fn linux_nic_pays_the_kernel_per_packet_costs() {
    let (m, _) = simulate(lower(LINUX)).expect("runs");
    assert_eq!(m.cpus[0].isr_ns, 50_000);
    assert_eq!(m.cpus[0].softirq_ns, 100_000);
    assert_eq!(m.devices[0].handling.max, Some(15_000));

    let cfg = lower(&linux_costs());
    assert_eq!(cfg.overhead.schedule_ns, 300.0);
    assert_eq!(cfg.dispatch_delay, 0, "no wake-up measured: none");
    let with_ksd = lower(&linux_costs().replace(
        "    tracing: ftrace\n",
        &format!(
            "    tracing: ftrace\n    ksoftirqd_wakeup: {}\n",
            dist("6us")
        ),
    ));
    assert_eq!(with_ksd.dispatch_delay, 6_000);
    let (m, _) = simulate(cfg.clone()).expect("runs");
    assert_eq!(m.cpus[0].isr_ns, 70_000);
    assert_eq!(m.cpus[0].softirq_ns, 130_000);
    assert_eq!(m.devices[0].handling.min, Some(20_000));
    assert_eq!(m.devices[0].handling.max, Some(20_000));

    // The analysis reads the same costs.
    let b = model_bounds(&cfg).expect("bounds");
    let irq = &b.cpus[0].interrupts[0];
    assert_eq!((irq.top_half, irq.bottom_half), (7_000, 13_000));
}

/// `net_path: loopback` (the default) charges loopback's softirq and no
/// hard IRQ (loopback has no device interrupt).
#[test]
fn loopback_costs_have_no_hard_irq() {
    let text = linux_costs().replace("  net_path: nic\n", "");
    let (m, _) = simulate(lower(&text)).expect("runs");
    assert_eq!(m.cpus[0].isr_ns, 50_000);
    assert_eq!(m.cpus[0].softirq_ns, 10 * 50_000);
}

/// QUEST-VCPU-style disk read (tests/paths.rs, `quest_path_schedule`):
/// without costs job 1 completes at 2150 us. With a 10 us runtime top half
/// and a 20 us dispatch delay: the disk completes at 1300; top half
/// [1300, 1360); the bottom half reaches the I/O VCPU at 1380 and runs
/// [1380, 1780); Omega_Main [1780, 1880), compute [1880, 2180). The read
/// took 1880 - 300 = 1580 us; handling (arrival to bottom-half end) 480 us.
const QUEST: &str = "machine: {cpus: 1, path: quest}
simulation: {duration: 12ms}
vcpus:
  - {name: V, policy: sporadic, budget: 1ms, period: 10ms}
  - {name: IO, kind: io, policy: pibs, utilization: 10%, io_class: ata}
tasks:
  - {name: tau, vcpu: V, period: 10ms, program: [{compute: 300us}, {read: disk}, {compute: 300us}]}
devices:
  - {name: disk, kind: disk, class: ata, omega_main: 100us, latency: 1ms, top_half: 50us,
     per_sector: 100us, sectors: 4, sector: 2048B}
";

#[test]
fn quest_path_pays_the_runtime_top_half_and_dispatch_delay() {
    let (m, _) = simulate(lower(QUEST)).expect("runs");
    assert_eq!(m.tasks[0].completions[0], 2_150_000);

    let text = format!(
        "{QUEST}costs:\n{ORIGIN}  runtime_top_half: {}\n  runtime_dispatch: {}\n  thread_wakeup: {}\n",
        dist("10us"),
        dist("20us"),
        dist("999us"),
    );
    let cfg = lower(&text);
    assert_eq!(
        cfg.dispatch_delay, 20_000,
        "the runtime's dispatch, not the raw wake-up"
    );
    let (m, _) = simulate(cfg).expect("runs");
    assert_eq!(m.tasks[0].completions[0], 2_180_000);
    assert_eq!(m.devices[0].latency.min, Some(1_580_000));
    assert_eq!(m.devices[0].handling.min, Some(480_000));
}

/// Without `runtime_dispatch` the thread wake-up is the dispatch delay;
/// `use: max` picks the max of each summary.
#[test]
fn dispatch_falls_back_to_the_thread_wakeup_and_use_picks_the_statistic() {
    let text = format!(
        "{QUEST}costs:\n{ORIGIN}  use: max\n  thread_wakeup: {{samples: 3, min: 1us, mean: 2us, p50: 2us, p99: 7us, max: 8us}}\n"
    );
    assert_eq!(lower(&text).dispatch_delay, 8_000);
}

/// Without `costs:` a model lowers exactly as before (no dispatch delay,
/// the default overhead model): the golden metrics stay byte-identical.
#[test]
fn no_costs_no_change() {
    let cfg = lower(QUEST);
    assert_eq!(cfg.dispatch_delay, 0);
    assert_eq!(cfg.overhead, Default::default());
    let json = serde_json::to_string(&cfg).expect("json");
    assert!(!json.contains("dispatch_delay"), "{json}");
    assert!(!json.contains("switch_costs"), "{json}");
}

/// The measured timer wake-up, context switch and priority switch become
/// the thread switch and timer costs (tests/switch_costs.rs checks what
/// they do to a schedule): all three on `quest`, no priority switch on
/// `linux` (no supervisor).
#[test]
fn switch_and_timer_costs_are_lowered_per_path() {
    let section = format!(
        "costs:\n{ORIGIN}  timer_wakeup: {}\n  context_switch: {}\n  priority_switch: {}\n",
        dist("7us"),
        dist("3us"),
        dist("1us"),
    );
    let q = lower(&format!("{QUEST}{section}")).switch_costs;
    assert_eq!(
        (q.timer_latency, q.context_switch, q.priority_switch),
        (7_000, 3_000, 1_000)
    );
    let l = lower(&format!("{LINUX}{section}")).switch_costs;
    assert_eq!(
        (l.timer_latency, l.context_switch, l.priority_switch),
        (7_000, 3_000, 0)
    );
    // the QUEST-VCPU disk read: job 1's release timer fires 7 us late on
    // an idle CPU (no switch); its I/O VCPU runs while it is blocked and
    // hands the CPU straight back when the bottom half ends: one direct
    // switch between two servers' threads, 3 + 2 x 1 us. Completion
    // 2150 + 7 + 5 = 2162 us.
    let (m, _) = simulate(lower(&format!("{QUEST}{section}"))).expect("runs");
    assert_eq!(m.tasks[0].completions[0], 2_162_000);
}
