//! The `costs:` section of a model: what `irqlab calibrate` measured on one
//! machine (docs/model.md) -- timer and thread wake-up latency, context
//! switch, the runtime supervisor's decision and priority-switch cost, the
//! runtime top half's per-event cost and the kernel's own per-packet hard
//! IRQ and NET_RX softirq cost from ftrace -- each as a distribution
//! summary, with the machine and kernel it came from.
//!
//! Design principles: the section is data, typed and unit-bearing like the
//! rest of the model (every time a `Duration`, unknown keys are errors);
//! `validate_costs` checks that each summary is a distribution (`min <=
//! p50 <= p99 <= max`, the mean inside `[min, max]`, at least one sample)
//! and names the field path, the value and the rule; which statistic the
//! simulator charges is the section's own choice (`use`, default `mean`:
//! the cost that adds up over many events), read through `Costs::stat`;
//! nothing here simulates -- `irqlab-sim`'s lowering folds the chosen values
//! into the devices' costs and the dispatch delay (docs/model.md says
//! which field goes where).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::units::Duration;
use crate::validate::Report;

/// Which statistic of each distribution the simulator and the analysis
/// charge.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema, Default)]
#[serde(rename_all = "kebab-case")]
pub enum Stat {
    Min,
    #[default]
    Mean,
    P50,
    P99,
    Max,
}

/// Which measured kernel network path the simulator charges per packet.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema, Default)]
#[serde(rename_all = "kebab-case")]
pub enum NetPath {
    /// UDP on loopback (`irqlab run`'s event sources): no hard IRQ, the
    /// NET_RX softirq raised by the sender.
    #[default]
    Loopback,
    /// The machine's network card: its hard IRQ and NAPI poll.
    Nic,
}

/// A measured distribution, in time units.
#[derive(Copy, Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Dist {
    /// How many observations the summary is made of (at least 1).
    pub samples: u64,
    pub min: Duration,
    pub mean: Duration,
    pub p50: Duration,
    pub p99: Duration,
    pub max: Duration,
}

impl Dist {
    /// The value of statistic `s`, in ns.
    pub fn get(&self, s: Stat) -> u64 {
        match s {
            Stat::Min => self.min,
            Stat::Mean => self.mean,
            Stat::P50 => self.p50,
            Stat::P99 => self.p99,
            Stat::Max => self.max,
        }
        .0
        .as_ns()
    }
}

/// Where the measurements come from.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Origin {
    pub host: String,
    /// `uname -r` and `uname -v`.
    pub kernel: String,
    #[serde(default)]
    pub cpu_model: Option<String>,
    pub cpus: u32,
    /// When (UTC, ISO 8601).
    pub date: String,
    /// The tool and its version (`irqlab calibrate 0.1.0`).
    pub tool: String,
}

/// Per-packet costs of one kernel network path, from ftrace.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NetCosts {
    /// Packets the summaries are made of.
    pub packets: u64,
    /// Hard-IRQ time per interrupt (`irq_handler_entry`/`exit`); absent on
    /// loopback, which has no device interrupt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hardirq: Option<Dist>,
    /// NET_RX softirq time per packet: each softirq run's duration
    /// (`softirq_entry`/`exit`, vec 3) over the packets its NAPI polls
    /// handled (`napi_poll` work).
    pub softirq: Dist,
    /// Fraction (0..1) of the NET_RX softirq runs that ran in ksoftirqd
    /// rather than at IRQ exit / bottom-half enable.
    #[serde(default)]
    pub ksoftirqd_share: f64,
}

/// The kernel's own interrupt costs, from ftrace tracepoints.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct KernelCosts {
    /// How they were traced (tracefs instance, events), or why not.
    pub tracing: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub loopback: Option<NetCosts>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nic: Option<NetCosts>,
    /// ksoftirqd's wake-up to run (`sched_wakeup` to `sched_switch`), when
    /// softirq work was deferred to it while tracing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ksoftirqd_wakeup: Option<Dist>,
}

/// The `costs:` section (`irqlab calibrate`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Costs {
    pub origin: Origin,
    /// The statistic charged (default `mean`).
    #[serde(default, rename = "use")]
    pub stat: Stat,
    /// The kernel network path whose per-packet costs a `nic` device pays
    /// on the `linux` path (default `loopback`).
    #[serde(default)]
    pub net_path: NetPath,
    /// Timer wake-up latency: an absolute `clock_nanosleep` at SCHED_FIFO
    /// (cyclictest's measurement).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timer_wakeup: Option<Dist>,
    /// Thread wake-up latency through an eventfd (write to the woken
    /// thread's return from `read`), on another CPU.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thread_wakeup: Option<Dist>,
    /// One context switch between two threads on one CPU (half an eventfd
    /// ping-pong round trip).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_switch: Option<Dist>,
    /// One decision of the runtime supervisor's scheduler (irqlab-core).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub supervisor_decision: Option<Dist>,
    /// One priority switch the supervisor makes (`sched_setscheduler` on a
    /// thread).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority_switch: Option<Dist>,
    /// The runtime top half's CPU time per event.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runtime_top_half: Option<Dist>,
    /// The runtime's dispatch delay: event time stamp to its bottom half's
    /// start on the class's thread.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runtime_dispatch: Option<Dist>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel: Option<KernelCosts>,
}

impl Costs {
    /// The chosen statistic of `d` (0 when it was not measured).
    pub fn stat(&self, d: &Option<Dist>) -> u64 {
        d.as_ref().map_or(0, |d| d.get(self.stat))
    }

    /// The per-packet costs a `nic` pays on the `linux` path, if measured.
    pub fn net(&self) -> Option<&NetCosts> {
        let k = self.kernel.as_ref()?;
        match self.net_path {
            NetPath::Loopback => k.loopback.as_ref(),
            NetPath::Nic => k.nic.as_ref(),
        }
    }
}

fn check_dist(r: &mut Report, path: &str, d: &Dist) {
    if d.samples == 0 {
        r.err(
            format!("{path}.samples"),
            0,
            "a distribution needs at least one sample",
        );
    }
    let (min, p50, p99, max, mean) = (d.min.0, d.p50.0, d.p99.0, d.max.0, d.mean.0);
    for (name, lo, hi) in [("p50", min, p50), ("p99", p50, p99), ("max", p99, max)] {
        if hi < lo {
            r.err(
                format!("{path}.{name}"),
                hi,
                "must not be below the statistic before it (min <= p50 <= p99 <= max)",
            );
        }
    }
    if mean < min || mean > max {
        r.err(
            format!("{path}.mean"),
            mean,
            format!("must lie between min {min} and max {max}"),
        );
    }
}

fn check_net(r: &mut Report, path: &str, n: &NetCosts) {
    if n.packets == 0 {
        r.err(format!("{path}.packets"), 0, "at least one packet");
    }
    if let Some(h) = &n.hardirq {
        check_dist(r, &format!("{path}.hardirq"), h);
    }
    check_dist(r, &format!("{path}.softirq"), &n.softirq);
    if !(0.0..=1.0).contains(&n.ksoftirqd_share) {
        r.err(
            format!("{path}.ksoftirqd_share"),
            n.ksoftirqd_share,
            "a fraction between 0 and 1",
        );
    }
}

/// Check the `costs:` section (errors into `r`).
pub(crate) fn validate_costs(r: &mut Report, c: &Costs, path: crate::model::PathKind) {
    if path == crate::model::PathKind::Hypervisor {
        r.warnings.push(
            "costs: not charged on path hypervisor (its costs are the VMM's, see docs/model.md)"
                .into(),
        );
    }
    if c.origin.cpus == 0 {
        r.err("costs.origin.cpus", 0, "at least one CPU");
    }
    let dists = [
        ("timer_wakeup", &c.timer_wakeup),
        ("thread_wakeup", &c.thread_wakeup),
        ("context_switch", &c.context_switch),
        ("supervisor_decision", &c.supervisor_decision),
        ("priority_switch", &c.priority_switch),
        ("runtime_top_half", &c.runtime_top_half),
        ("runtime_dispatch", &c.runtime_dispatch),
    ];
    for (name, d) in dists {
        if let Some(d) = d {
            check_dist(r, &format!("costs.{name}"), d);
        }
    }
    if let Some(k) = &c.kernel {
        if let Some(n) = &k.loopback {
            check_net(r, "costs.kernel.loopback", n);
        }
        if let Some(n) = &k.nic {
            check_net(r, "costs.kernel.nic", n);
        }
        if let Some(d) = &k.ksoftirqd_wakeup {
            check_dist(r, "costs.kernel.ksoftirqd_wakeup", d);
        }
        if c.net().is_none() && (k.loopback.is_some() || k.nic.is_some()) {
            let p = match c.net_path {
                NetPath::Loopback => "loopback",
                NetPath::Nic => "nic",
            };
            r.err(
                "costs.net_path",
                p,
                "names a kernel path that was not measured (costs.kernel has no such entry)",
            );
        }
    }
}
