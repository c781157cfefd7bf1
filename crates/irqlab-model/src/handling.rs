//! How a device's events are handled and produced beyond the bottom half on
//! an I/O VCPU, and the options of the real run: the rules of
//! `devices[].upcall` (UPCALL §3.2: the handler in the top half under a
//! budget of its own; or an eBPF handler in the kernel's softirq),
//! `devices[].source` (eventfd, timerfd, pipe) and the `runtime:` section.
//!
//! Design principles: every field is either modelled by the simulator and
//! the analysis, or the model says here what they do with it -- never
//! silently ignored:
//! * a **user upcall** is a sporadic server `(budget, period)` above every
//!   VCPU of the device's CPU that runs the handler (`bottom_half` or
//!   `dsr` per item) after the top half; the simulator and the analysis
//!   see exactly that server (`upcall_server`), named `<device>.upcall`;
//! * a **kernel upcall** has no simulated counterpart (no eBPF path in the
//!   simulator): the simulator and the analysis handle every event on the
//!   device's class, the worst case of a spent kernel-side budget, and
//!   validation warns so;
//! * a generic device's **source** changes only how a real run produces
//!   the events; the simulator draws `min_interarrival` plus `jitter` for
//!   every source (a timerfd has no jitter, which is checked);
//! * **`runtime:`** says where and how the real threads run; it does not
//!   change the system, so the simulator and the analysis do not read it.

use crate::model::{DeviceKindName, Model, PathKind, RunBackend, Source, Step, UpcallMode};
use crate::validate::{class_names, device_class, Report};

/// What the loader says of a file in the retired runtime-scenario format.
pub const RETIRED: &str = "sources: the runtime-scenario format (runtime/vcpus/tasks/sources) is \
    retired: irqlab run takes the system model (machine, vcpus, tasks, devices; sources become \
    devices, upcalls devices[].upcall; docs/runtime.md, \"One format\")";

/// A document without `machine` but with the scenario format's `sources`
/// (only asked once the model's parse failed).
pub(crate) fn is_retired_scenario(text: &str) -> bool {
    matches!(
        serde_yaml::from_str::<serde_yaml::Value>(text),
        Ok(serde_yaml::Value::Mapping(m))
            if m.contains_key("sources") && !m.contains_key("machine")
    )
}

/// The name of the server (and of the I/O class) that carries a user
/// upcall's budget in the simulator and the analysis.
pub fn upcall_server(device: &str) -> String {
    format!("{device}.upcall")
}

/// The rules of `devices[i].upcall` and `devices[i].source`.
pub(crate) fn check_device(r: &mut Report, m: &Model, i: usize, d: &crate::model::Device) {
    let p = |f: &str| format!("devices[{i}].{f}");
    if d.source == Some(Source::Timerfd) && d.jitter.is_some_and(|j| !j.0.is_zero()) {
        r.err(
            p("jitter"),
            d.jitter.map(|j| j.0).unwrap_or_default(),
            "a timerfd source fires every min_interarrival exactly: its jitter is 0",
        );
    }
    let Some(u) = &d.upcall else {
        return;
    };
    if m.machine.path != PathKind::Quest {
        r.err(
            p("upcall"),
            "",
            format!(
                "upcalls run in irqlab-rt's top half or the kernel's softirq beside I/O \
                 VCPUs: only on path quest (this machine is {})",
                match m.machine.path {
                    PathKind::Quest => "quest",
                    PathKind::QuestNoIovcpu => "quest-no-iovcpu",
                    PathKind::Linux => "linux",
                    PathKind::Hypervisor => "hypervisor",
                }
            ),
        );
    }
    if u.budget.0.is_zero() || u.budget.0 > u.period.0 {
        r.err(
            p("upcall.budget"),
            u.budget.0,
            format!("must be in (0, period = {}]", u.period.0),
        );
    }
    match u.mode {
        UpcallMode::User => {
            if u.events.is_some() || u.fallback {
                r.err(
                    p("upcall"),
                    format!("events {:?}, fallback {}", u.events, u.fallback),
                    "events and fallback belong to mode: kernel",
                );
            }
            if let Some(c) = device_class(m, &d.name) {
                r.err(
                    p("class"),
                    c,
                    "a user upcall handles the device's events in the top half, not on an I/O \
                     class (remove the class, or the binding)",
                );
            }
            if bound_by_step(m, &d.name) {
                r.err(
                    p("upcall"),
                    "",
                    "a task's bind step rebinds this device to a class, but a user upcall has \
                     none",
                );
            }
            let own = upcall_server(&d.name);
            if m.vcpus.iter().any(|v| v.name == own) || class_names(m).contains(&own) {
                r.err(
                    p("name"),
                    &d.name,
                    format!("{own} is the name of this device's upcall server; rename the VCPU or class"),
                );
            }
        }
        UpcallMode::Kernel => {
            if d.kind != DeviceKindName::Nic {
                r.err(
                    p("upcall.mode"),
                    "kernel",
                    "kernel upcalls handle nic devices (UDP in the network softirq) only",
                );
            }
            if u.events == Some(0) {
                r.err(p("upcall.events"), 0, "must be positive");
            }
            if d.class.is_some() || m.bindings.contains_key(&d.name) {
                r.warnings.push(format!(
                    "devices[{i}] ({}): a kernel upcall runs in the kernel's softirq, which the \
                     simulator does not model: simulation and analysis handle every event on its \
                     class (the kernel-side budget spent), an upper bound on the class's load",
                    d.name
                ));
            }
        }
    }
}

fn bound_by_step(m: &Model, dev: &str) -> bool {
    fn any(s: &[Step], dev: &str) -> bool {
        s.iter().any(|st| match st {
            Step::Bind { device, .. } => device == dev,
            Step::Loop { body, .. } | Step::Forever(body) => any(body, dev),
            _ => false,
        })
    }
    m.tasks.iter().any(|t| any(&t.program, dev))
}

/// The rules of `runtime:` that do not depend on the machine the run is on
/// (which CPUs exist there is checked by `irqlab run`).
pub(crate) fn check_runtime(r: &mut Report, m: &Model) {
    let Some(o) = &m.runtime else {
        return;
    };
    if m.machine.path == PathKind::Hypervisor {
        r.err(
            "runtime",
            "",
            "a hypervisor model does not run on irqlab-rt's threads",
        );
    }
    if let Some(c) = &o.cpus {
        if c.len() != m.machine.cpus as usize {
            r.err(
                "runtime.cpus",
                format!("{c:?}"),
                format!(
                    "one real CPU per model CPU (machine.cpus is {})",
                    m.machine.cpus
                ),
            );
        }
        let mut seen = std::collections::BTreeSet::new();
        for (k, x) in c.iter().enumerate() {
            if !seen.insert(x) {
                r.err(format!("runtime.cpus[{k}]"), x, "is used twice");
            }
        }
        if let Some(g) = o.generator_cpu.filter(|g| c.contains(g)) {
            r.err(
                "runtime.generator_cpu",
                g,
                "is one of runtime.cpus: the generators would take the measured CPU",
            );
        }
    }
    let rt_only = o.report_samples > 0 || o.require_fifo || o.backend != RunBackend::Epoll;
    if m.machine.path == PathKind::Linux && rt_only {
        r.err(
            "runtime",
            format!(
                "report_samples {}, require_fifo {}, backend {:?}",
                o.report_samples, o.require_fifo, o.backend
            ),
            "report_samples, require_fifo and backend are irqlab-rt's; the linux path runs \
             plain threads without it",
        );
    }
}
