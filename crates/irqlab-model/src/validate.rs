//! Validation of a parsed model: every rule, every violation reported with
//! the field path, the offending value and the rule (`vcpus[2].budget: 12ms:
//! exceeds period 10ms`).
//!
//! Design principles: collect all errors instead of stopping at the first;
//! check what the core would reject too (budget above period, `max_repl`
//! below 2, utilization outside (0, 1]) so the message names the YAML field;
//! utilization above 100 % of a CPU is an error, above the Liu-Layland bound
//! with the PIBS term (QUEST-VCPU Eq. 1) a warning.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use irqlab_core::{Nanos, Utilization};

use crate::limits::{
    escape, name_rule, MAX_BURST, MAX_COUNT, MAX_DATA_RATE, MAX_JOB_PERIODS, MAX_PACKET_BYTES,
    MAX_PACKET_RATE, MAX_QUEUE, MAX_SIZE_BYTES, MAX_TIME, MAX_WINDOWS, MIN_PACKET_INTERVAL,
};
use crate::model::{
    ArrivalKind, AutoDuration, AutoPriority, DeviceKindName, MapEntry, Model, PathKind, Policy,
    Step, UpcallMode, VcpuKind, Vint, VmPolicy, Vms,
};

/// One violation: where, what, which rule.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ModelError {
    pub path: String,
    pub value: String,
    pub rule: String,
}

impl fmt::Display for ModelError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // names may carry control characters: never echo them raw
        let (path, value, rule) = (escape(&self.path), escape(&self.value), escape(&self.rule));
        if value.is_empty() {
            write!(f, "{path}: {rule}")
        } else {
            write!(f, "{path}: {value}: {rule}")
        }
    }
}

/// What validation found: errors (the model is rejected) and warnings.
#[derive(Clone, Debug, Default)]
pub struct Report {
    pub errors: Vec<ModelError>,
    pub warnings: Vec<String>,
}

impl Report {
    pub(crate) fn err(
        &mut self,
        path: impl Into<String>,
        value: impl fmt::Display,
        rule: impl Into<String>,
    ) {
        self.errors.push(ModelError {
            path: path.into(),
            value: value.to_string(),
            rule: rule.into(),
        });
    }
}

/// Names of the I/O classes, in first-mention order (I/O VCPUs, classes,
/// devices, bindings, interrupter maps, bind steps).
pub fn class_names(m: &Model) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    let mut add = |n: &str| {
        if !names.iter().any(|x| x == n) {
            names.push(n.to_owned());
        }
    };
    for v in &m.vcpus {
        if let Some(c) = &v.io_class {
            add(c);
        }
    }
    for c in &m.classes {
        add(&c.name);
    }
    for d in &m.devices {
        if let Some(c) = &d.class {
            add(c);
        }
    }
    for c in m.bindings.values() {
        add(c);
    }
    for x in &m.xhci {
        for e in &x.interrupter_map {
            if let MapEntry::Class(c) = e {
                add(c);
            }
        }
    }
    fn steps(s: &[Step], add: &mut dyn FnMut(&str)) {
        for st in s {
            match st {
                Step::Bind { class, .. } => add(class),
                Step::Loop { body, .. } | Step::Forever(body) => steps(body, add),
                _ => {}
            }
        }
    }
    for t in &m.tasks {
        steps(&t.program, &mut add);
    }
    names
}

fn dup_names<'a>(r: &mut Report, section: &str, names: impl Iterator<Item = &'a str>) {
    let mut seen = BTreeSet::new();
    for (i, n) in names.enumerate() {
        if n.trim().is_empty() {
            r.err(format!("{section}[{i}].name"), "\"\"", "a name is required");
        } else if !seen.insert(n) {
            r.err(format!("{section}[{i}].name"), n, "is used twice");
        }
    }
}

/// The class a device is bound to at start.
pub fn device_class<'a>(m: &'a Model, dev: &'a str) -> Option<&'a str> {
    m.bindings.get(dev).map(String::as_str).or_else(|| {
        m.devices
            .iter()
            .find(|d| d.name == dev)
            .and_then(|d| d.class.as_deref())
    })
}

fn util_of(budget: Nanos, period: Nanos) -> Option<Utilization> {
    Utilization::of(budget, period).ok()
}

/// Check every rule of the model.
/// Upper limit of `simulation.trace_max_events`: the trace is built in
/// memory (a few KB per event), so more would not fit a typical machine.
pub const MAX_TRACE_EVENTS: u64 = 2_000_000;

/// Upper limit of `simulation.max_completions`.
pub const MAX_COMPLETIONS: u64 = 10_000_000;

/// Upper limit of `simulation.max_window_values` (8 bytes each: 128 MB).
pub const MAX_WINDOW_VALUES: u64 = 1 << 24;

pub fn validate(m: &Model) -> Report {
    let mut r = Report::default();
    let cpus = m.machine.cpus;
    if cpus == 0 || cpus > 1024 {
        r.err("machine.cpus", cpus, "must be between 1 and 1024");
    }
    if m.machine.linux.is_some() && m.machine.path != PathKind::Linux {
        r.err("machine.linux", "", "only for path: linux");
    }
    if let Some(l) = &m.machine.linux {
        if let Some(crate::model::Ksoftirqd::Fifo(p)) = &l.ksoftirqd {
            if !(1..=99).contains(p) {
                r.err(
                    "machine.linux.ksoftirqd.fifo",
                    p,
                    "a SCHED_FIFO priority is 1..99",
                );
            }
        }
        if let Some(crate::model::Ksoftirqd::Deadline { runtime, period }) = &l.ksoftirqd {
            if runtime.0.is_zero() || runtime.0 > period.0 {
                r.err(
                    "machine.linux.ksoftirqd.deadline.runtime",
                    runtime.0,
                    format!("must be positive and at most the period {}", period.0),
                );
            }
        }
    }
    crate::handling::check_runtime(&mut r, m);
    match (&m.vms, m.machine.path) {
        (Some(vms), PathKind::Hypervisor) => validate_vms(&mut r, vms, cpus),
        (None, PathKind::Hypervisor) => r.err(
            "vms",
            "missing",
            "path: hypervisor describes its machine under vms",
        ),
        (Some(_), _) => r.err("vms", "", "only for path: hypervisor"),
        (None, _) => {}
    }
    if m.machine.path == PathKind::Hypervisor {
        for (section, n) in [
            ("vcpus", m.vcpus.len()),
            ("tasks", m.tasks.len()),
            ("devices", m.devices.len()),
            ("xhci", m.xhci.len()),
            ("bindings", m.bindings.len()),
            ("classes", m.classes.len()),
        ] {
            if n > 0 {
                r.err(
                    section,
                    format!("{n} entries"),
                    "does not apply to path: hypervisor (VCPUs, tasks and interrupts go under vms)",
                );
            }
        }
    } else if m.vcpus.is_empty() {
        r.err(
            "vcpus",
            "missing",
            format!(
                "the {} path needs at least one VCPU",
                path_name(m.machine.path)
            ),
        );
    }
    if m.simulation.duration.0.is_zero() {
        r.err("simulation.duration", "0", "must be positive");
    }
    if let Some(n) = m.simulation.trace_max_events {
        if !(1..=MAX_TRACE_EVENTS).contains(&n) {
            r.err(
                "simulation.trace_max_events",
                n,
                format!("must be between 1 and {MAX_TRACE_EVENTS}"),
            );
        }
    }
    if let Some(n) = m.simulation.max_completions {
        if n > MAX_COMPLETIONS {
            r.err(
                "simulation.max_completions",
                n,
                format!("at most {MAX_COMPLETIONS} (completion times are kept in memory)"),
            );
        }
    }
    if let Some(n) = m.simulation.max_window_values {
        if !(1..=MAX_WINDOW_VALUES).contains(&n) {
            r.err(
                "simulation.max_window_values",
                n,
                format!(
                    "must be between 1 and {MAX_WINDOW_VALUES} (window values are kept in memory)"
                ),
            );
        }
    }
    if m.simulation.window.0.is_zero() {
        r.err("simulation.window", "0", "must be positive");
    } else {
        let windows = m
            .simulation
            .duration
            .0
             .0
            .div_ceil(m.simulation.window.0 .0);
        if windows > MAX_WINDOWS {
            r.err(
                "simulation.window",
                m.simulation.window.0,
                format!("simulation.duration {} / window is {windows} windows: at most {MAX_WINDOWS} per run (raise the window)", m.simulation.duration.0),
            );
        }
    }
    check_limits(&mut r, m);
    if let Some(c) = &m.costs {
        crate::costs::validate_costs(&mut r, c, m.machine.path);
    }
    dup_names(&mut r, "vcpus", m.vcpus.iter().map(|v| v.name.as_str()));
    dup_names(&mut r, "tasks", m.tasks.iter().map(|v| v.name.as_str()));
    dup_names(&mut r, "devices", m.devices.iter().map(|v| v.name.as_str()));
    dup_names(&mut r, "xhci", m.xhci.iter().map(|v| v.name.as_str()));
    let classes = class_names(m);

    // ---- VCPUs ----------------------------------------------------------
    // per CPU: (Main VCPU utilization, with the I/O VCPU terms, parts)
    let mut per_cpu: BTreeMap<u32, (f64, f64, Vec<String>)> = BTreeMap::new();
    let mut io_of_class: BTreeMap<&str, usize> = BTreeMap::new();
    for (i, v) in m.vcpus.iter().enumerate() {
        let p = |f: &str| format!("vcpus[{i}].{f}");
        if v.cpu >= cpus {
            r.err(
                p("cpu"),
                v.cpu,
                format!("no such CPU (machine.cpus is {cpus})"),
            );
        }
        let allowed: &[&str] = match v.policy {
            Policy::Sporadic => &["budget", "period", "max_repl", "background", "priority"],
            Policy::Pibs => &["utilization", "inherit"],
            Policy::Deferrable | Policy::Polling => &["budget", "period", "priority"],
            Policy::Cbs => &["runtime", "period"],
            Policy::Fifo => &["priority"],
        };
        let given = [
            ("budget", v.budget.is_some()),
            ("runtime", v.runtime.is_some()),
            ("period", v.period.is_some()),
            ("utilization", v.utilization.is_some()),
            ("max_repl", v.max_repl.is_some()),
            ("background", v.background.is_some()),
            ("inherit", v.inherit.is_some()),
            ("priority", v.priority.is_some()),
        ];
        let pol = format!("{:?}", v.policy).to_lowercase();
        for (f, g) in given {
            if g && !allowed.contains(&f) {
                r.err(p(f), "", format!("does not apply to policy {pol}"));
            }
        }
        let need = |r: &mut Report, f: &str, g: bool| {
            if !g {
                r.err(p(f), "missing", format!("policy {pol} needs it"));
            }
        };
        match v.policy {
            Policy::Sporadic | Policy::Deferrable | Policy::Polling => {
                need(&mut r, "budget", v.budget.is_some());
                need(&mut r, "period", v.period.is_some());
            }
            Policy::Cbs => {
                need(&mut r, "runtime", v.runtime.is_some());
                need(&mut r, "period", v.period.is_some());
            }
            Policy::Pibs => need(&mut r, "utilization", v.utilization.is_some()),
            Policy::Fifo => need(&mut r, "priority", v.priority.is_some()),
        }
        let c = v.budget.or(v.runtime).map(|d| d.0);
        if let (Some(c), Some(t)) = (c, v.period.map(|d| d.0)) {
            let f = if v.policy == Policy::Cbs {
                "runtime"
            } else {
                "budget"
            };
            if t.is_zero() {
                r.err(p("period"), t, "must be positive");
            } else if c.is_zero() {
                r.err(p(f), c, "must be positive");
            } else if c > t {
                r.err(p(f), c, format!("exceeds period {t}"));
            } else if let Some(u) = util_of(c, t) {
                let e = per_cpu.entry(v.cpu).or_default();
                e.0 += u.as_f64();
                e.1 += u.as_f64();
                e.2.push(format!("{} {}", v.name, u));
            }
        }
        if let Some(n) = v.max_repl {
            if n < 2 {
                r.err(p("max_repl"), n, "must be at least 2 (QUEST-VCPU Alg. 12 pushes the remnant into a second replenishment)");
            } else if n > irqlab_core::MAX_MAX_REPL {
                r.err(
                    p("max_repl"),
                    n,
                    format!(
                        "must be at most {} (the replenishment queue is bounded)",
                        irqlab_core::MAX_MAX_REPL
                    ),
                );
            }
        }
        if let Some(u) = v.utilization {
            if u.0.is_zero() || u.0 > Utilization::ONE {
                r.err(
                    p("utilization"),
                    format!("{}%", u.0.as_f64() * 100.0),
                    "must be in (0, 100%]",
                );
            } else {
                // worst case of an I/O VCPU: (2 - U) U (QUEST-VCPU Eq. 3)
                let x = u.0.as_f64();
                let e = per_cpu.entry(v.cpu).or_default();
                e.1 += (2.0 - x) * x;
                e.2.push(format!("{} (2-U)U of {}", v.name, u.0));
            }
        }
        if let Some(pr) = v.priority {
            if !(1..=99).contains(&pr) {
                r.err(
                    p("priority"),
                    pr,
                    "a fixed priority is 1..99 (higher is more urgent)",
                );
            }
        }
        match (v.kind, v.policy) {
            (VcpuKind::Main, Policy::Pibs) => r.err(
                p("policy"),
                "pibs",
                "PIBS is the policy of I/O VCPUs (kind: io)",
            ),
            (VcpuKind::Io, _) if v.io_class.is_none() => {
                r.err(p("io_class"), "missing", "an I/O VCPU serves an I/O class")
            }
            (VcpuKind::Main, _) if v.io_class.is_some() => {
                r.err(p("io_class"), "", "only for I/O VCPUs (kind: io)")
            }
            _ => {}
        }
        if let (VcpuKind::Io, Some(c)) = (v.kind, &v.io_class) {
            if io_of_class.insert(c.as_str(), i).is_some() {
                r.err(
                    p("io_class"),
                    c,
                    "another I/O VCPU already serves this class",
                );
            }
        }
        if m.machine.path == PathKind::Linux && v.kind == VcpuKind::Io {
            r.err(
                p("kind"),
                "io",
                "the linux path has no I/O VCPUs (bottom halves run in softirq/ksoftirqd)",
            );
        }
    }
    for (cpu, (main, u, parts)) in &per_cpu {
        if *main > 1.0 + 1e-12 {
            r.err(
                format!("vcpus (cpu {cpu})"),
                format!("{:.1}%", main * 100.0),
                format!("the budgets exceed 100% of the CPU ({})", parts.join(", ")),
            );
        } else if *u > 1.0 + 1e-12 {
            r.warnings.push(format!("cpu {cpu}: with the I/O VCPUs' worst case (2-U)U the demand is {:.1}% of the CPU: the lowest-priority VCPUs will not always get their budgets", u * 100.0));
        } else {
            let n = parts.len() as f64;
            let ll = n * (2f64.powf(1.0 / n) - 1.0);
            if *u > ll {
                r.warnings.push(format!("cpu {cpu}: utilization {:.1}% is above the Liu-Layland bound {:.1}% (QUEST-VCPU Eq. 1): schedulability is not guaranteed by that test", u * 100.0, ll * 100.0));
            }
        }
    }

    // ---- classes --------------------------------------------------------
    let task_idx = |n: &str| m.tasks.iter().position(|t| t.name == n);
    let dev_idx = |n: &str| m.devices.iter().position(|d| d.name == n);
    for (i, c) in m.classes.iter().enumerate() {
        if let Some(t) = &c.consumer {
            if task_idx(t).is_none() {
                r.err(format!("classes[{i}].consumer"), t, "no such task");
            }
        }
    }
    if m.machine.path == PathKind::Quest {
        for c in &classes {
            if !io_of_class.contains_key(c.as_str()) {
                r.err(
                    format!("I/O class {c}"),
                    c,
                    "the quest path needs an I/O VCPU (kind: io, io_class) for every class",
                );
            }
        }
    }
    for (d, c) in &m.bindings {
        if dev_idx(d).is_none() {
            r.err(format!("bindings.{d}"), d, "no such device");
        }
        let _ = c;
    }

    // ---- tasks ----------------------------------------------------------
    fn check_steps(r: &mut Report, m: &Model, steps: &[Step], path: &str) {
        if steps.is_empty() {
            r.err(
                path.to_owned(),
                "[]",
                "a program or loop needs at least one step",
            );
        }
        for (k, s) in steps.iter().enumerate() {
            let here = format!("{path}[{k}]");
            match s {
                Step::Compute(d) | Step::Sleep(d) if d.0.is_zero() => {
                    r.err(here, "0", "must be positive")
                }
                Step::Read(dev) | Step::Write(dev) if !m.devices.iter().any(|d| &d.name == dev) => {
                    r.err(here, dev, "no such device")
                }
                Step::Bind { device, .. } => match m.devices.iter().find(|d| &d.name == device) {
                    None => r.err(format!("{here}.device"), device, "no such device"),
                    Some(d) if d.kind != DeviceKindName::Usb => r.err(
                        format!("{here}.device"),
                        device,
                        "usb_set_iovcpu rebinds USB devices only",
                    ),
                    _ => {}
                },
                Step::Loop { count, body } => {
                    if *count == 0 {
                        r.err(format!("{here}.loop.count"), 0, "must be positive");
                    }
                    check_steps(r, m, body, &format!("{here}.loop.do"));
                }
                Step::Forever(body) => check_steps(r, m, body, &format!("{here}.forever")),
                _ => {}
            }
        }
    }
    for (i, t) in m.tasks.iter().enumerate() {
        match m.vcpus.iter().find(|v| v.name == t.vcpu) {
            None => r.err(format!("tasks[{i}].vcpu"), &t.vcpu, "no such VCPU"),
            Some(v) if v.kind == VcpuKind::Io => r.err(
                format!("tasks[{i}].vcpu"),
                &t.vcpu,
                "tasks run on Main VCPUs, not on I/O VCPUs",
            ),
            _ => {}
        }
        if let Some(p) = t.period {
            if p.0.is_zero() {
                r.err(format!("tasks[{i}].period"), "0", "must be positive");
            }
        } else if t.deadline.is_some() || t.jobs.is_some() {
            r.err(format!("tasks[{i}]"), "", "deadline and jobs need a period");
        }
        if t.jobs == Some(0) {
            r.err(format!("tasks[{i}].jobs"), 0, "must be positive");
        }
        check_steps(&mut r, m, &t.program, &format!("tasks[{i}].program"));
    }

    // ---- devices --------------------------------------------------------
    for (i, d) in m.devices.iter().enumerate() {
        let p = |f: &str| format!("devices[{i}].{f}");
        if d.cpu >= cpus {
            r.err(
                p("cpu"),
                d.cpu,
                format!("no such CPU (machine.cpus is {cpus})"),
            );
        }
        let (required, optional): (&[&str], &[&str]) = match d.kind {
            DeviceKindName::Nic => (
                &["arrival", "top_half", "bottom_half", "packet"],
                &["buffer", "ring", "upcall"],
            ),
            DeviceKindName::Disk => (
                &["latency", "top_half", "per_sector", "sectors", "sector"],
                &[],
            ),
            DeviceKindName::Generic => (
                &["min_interarrival", "isr", "dsr"],
                &["jitter", "start", "source", "upcall"],
            ),
            DeviceKindName::Usb => (
                &["controller", "rate", "omega_io"],
                &["request", "jitter", "kfree", "echo_of"],
            ),
        };
        let given = [
            ("arrival", d.arrival.is_some()),
            ("top_half", d.top_half.is_some()),
            ("bottom_half", d.bottom_half.is_some()),
            ("packet", d.packet.is_some()),
            ("buffer", d.buffer.is_some()),
            ("ring", d.ring.is_some()),
            ("latency", d.latency.is_some()),
            ("per_sector", d.per_sector.is_some()),
            ("sectors", d.sectors.is_some()),
            ("sector", d.sector.is_some()),
            ("min_interarrival", d.min_interarrival.is_some()),
            ("jitter", d.jitter.is_some()),
            ("isr", d.isr.is_some()),
            ("dsr", d.dsr.is_some()),
            ("start", d.start.is_some()),
            ("controller", d.controller.is_some()),
            ("request", d.request.is_some()),
            ("rate", d.rate.is_some()),
            ("omega_io", d.omega_io.is_some()),
            ("kfree", d.kfree.is_some()),
            ("echo_of", d.echo_of.is_some()),
            ("source", d.source.is_some()),
            ("upcall", d.upcall.is_some()),
        ];
        let kind = format!("{:?}", d.kind).to_lowercase();
        for (f, g) in given {
            if g && !required.contains(&f) && !optional.contains(&f) {
                r.err(p(f), "", format!("does not apply to a {kind} device"));
            }
            if !g && required.contains(&f) {
                r.err(p(f), "missing", format!("a {kind} device needs it"));
            }
        }
        let user_upcall = d
            .upcall
            .as_ref()
            .is_some_and(|u| u.mode == UpcallMode::User);
        if device_class(m, &d.name).is_none() && !user_upcall {
            r.err(
                p("class"),
                "missing",
                "every device is bound to an I/O class (class: or bindings:) or handled by a \
                 user upcall",
            );
        }
        crate::handling::check_device(&mut r, m, i, d);
        if let Some(a) = &d.arrival {
            let need: &[&str] = match a.kind {
                ArrivalKind::Periodic | ArrivalKind::Flood => &["interval"],
                ArrivalKind::Poisson => &["rate"],
                ArrivalKind::Burst => &["count", "gap", "every"],
                ArrivalKind::PingFlood => &["rtt"],
                ArrivalKind::Trace => &["file"],
            };
            let has = [
                ("interval", a.interval.is_some_and(|x| !x.0.is_zero())),
                ("rate", a.rate.is_some_and(|x| x.is_finite() && x > 0.0)),
                ("count", a.count.is_some_and(|x| x > 0)),
                ("gap", a.gap.is_some()),
                ("every", a.every.is_some_and(|x| !x.0.is_zero())),
                ("rtt", a.rtt.is_some()),
                ("file", a.file.is_some()),
            ];
            for (f, ok) in has {
                if need.contains(&f) && !ok {
                    r.err(
                        p(&format!("arrival.{f}")),
                        "missing or not positive",
                        format!("{:?} arrivals need it", a.kind).to_lowercase(),
                    );
                }
            }
        }
        if let Some(s) = d.sectors {
            if s == 0 {
                r.err(p("sectors"), 0, "must be positive");
            }
        }
        for (f, v) in [("buffer", d.buffer), ("ring", d.ring)] {
            if v == Some(0) {
                r.err(p(f), 0, "must be positive");
            }
        }
        if let Some(rate) = d.rate {
            if rate.0 == 0 {
                r.err(p("rate"), "0B/s", "must be positive");
            }
        }
        if let Some(c) = &d.controller {
            if !m.xhci.iter().any(|x| &x.name == c) {
                r.err(p("controller"), c, "no such xhci controller");
            }
        }
        if let Some(e) = &d.echo_of {
            match m.devices.iter().find(|x| &x.name == e) {
                Some(x) if x.kind == DeviceKindName::Usb && x.name != d.name => {}
                _ => r.err(p("echo_of"), e, "must name another USB device"),
            }
        }
    }

    // ---- xHCI interrupter maps (USB-DIFFSERV §III-C) ---------------------
    for (i, x) in m.xhci.iter().enumerate() {
        let p = |f: &str| format!("xhci[{i}].{f}");
        if x.cpu >= cpus {
            r.err(
                p("cpu"),
                x.cpu,
                format!("no such CPU (machine.cpus is {cpus})"),
            );
        }
        if x.max_interrupters == 0 || x.max_interrupters > 1024 {
            r.err(
                p("max_interrupters"),
                x.max_interrupters,
                "an xHC has 1 to 1024 interrupters",
            );
        }
        let mut entries: Vec<&str> = Vec::new();
        let n = x.interrupter_map.len();
        for (k, e) in x.interrupter_map.iter().enumerate() {
            match e {
                MapEntry::Class(c) => entries.push(c),
                MapEntry::Number(0) if k + 1 == n => {}
                MapEntry::Number(0) => r.err(
                    p(&format!("interrupter_map[{k}]")),
                    0,
                    "the 0 terminator may only be the last entry",
                ),
                MapEntry::Number(v) => r.err(
                    p(&format!("interrupter_map[{k}]")),
                    v,
                    "entries are I/O class names (and a final 0)",
                ),
            }
        }
        if entries.is_empty() {
            r.err(
                p("interrupter_map"),
                "[]",
                "map at least one interrupter to an I/O class",
            );
        }
        if entries.len() > x.max_interrupters {
            r.err(
                p("interrupter_map"),
                format!("{} classes", entries.len()),
                format!(
                    "more entries than the controller's {} interrupters",
                    x.max_interrupters
                ),
            );
        }
        if x.msi_base as usize + entries.len() > 256 {
            r.err(
                p("msi_base"),
                x.msi_base,
                "MSI vectors msi_base + interrupter must stay below 256",
            );
        }
        // every class a device of this controller is (or may be) bound to
        // must have an interrupter
        for d in m
            .devices
            .iter()
            .filter(|d| d.controller.as_deref() == Some(&x.name))
        {
            let mut cls: Vec<String> = device_class(m, &d.name)
                .map(str::to_owned)
                .into_iter()
                .collect();
            fn binds(s: &[Step], dev: &str, out: &mut Vec<String>) {
                for st in s {
                    match st {
                        Step::Bind { device, class } if device == dev => out.push(class.clone()),
                        Step::Loop { body, .. } | Step::Forever(body) => binds(body, dev, out),
                        _ => {}
                    }
                }
            }
            for t in &m.tasks {
                binds(&t.program, &d.name, &mut cls);
            }
            for c in cls {
                if !entries.contains(&c.as_str()) {
                    r.err(
                        format!("devices ({})", d.name),
                        &c,
                        format!(
                            "the class is not in {}'s interrupter_map (unmapped class)",
                            x.name
                        ),
                    );
                }
            }
        }
    }
    r
}

fn path_name(p: PathKind) -> &'static str {
    match p {
        PathKind::Quest => "quest",
        PathKind::QuestNoIovcpu => "quest-no-iovcpu",
        PathKind::Linux => "linux",
        PathKind::Hypervisor => "hypervisor",
    }
}

fn policy_name(p: VmPolicy) -> &'static str {
    match p {
        VmPolicy::Deferrable => "deferrable",
        VmPolicy::Sporadic => "sporadic",
    }
}

/// Largest interrupt and task priority: guest ISRs run above every guest
/// task, and IPIs above every physical interrupt, in the simulator.
pub const MAX_IRQ_PRIORITY: u32 = 999_999;

/// The rules of the hypervisor machine (VINT §III, §V). Names of VCPUs,
/// tasks, physical and virtual interrupts are unique machine-wide (they
/// name the metrics); a virtual interrupt refers to a VCPU of its own guest
/// and to DSR tasks of that VCPU.
fn validate_vms(r: &mut Report, vms: &Vms, cpus: u32) {
    let no_cpu = |r: &mut Report, path: String, cpu: u32| {
        if cpu >= cpus {
            r.err(path, cpu, format!("no such CPU (machine.cpus is {cpus})"));
        }
    };
    let positive = |r: &mut Report, path: String, d: Nanos| {
        if d.is_zero() {
            r.err(path, d, "must be positive");
        }
    };
    let unique = |r: &mut Report, seen: &mut BTreeMap<String, String>, path: String, n: &str| {
        if n.trim().is_empty() {
            r.err(path, "\"\"", "a name is required");
        } else if let Some(first) = seen.get(n) {
            r.err(path, n, format!("is used twice (first at {first})"));
        } else {
            seen.insert(n.to_owned(), path.trim_end_matches(".name").to_owned());
        }
    };

    // ---- physical interrupts (VINT §III: C, T, a unique priority) -------
    let mut phys_names = BTreeMap::new();
    let mut phys_prio: BTreeMap<(u32, u32), usize> = BTreeMap::new();
    for (i, p) in vms.physical_interrupts.iter().enumerate() {
        let path = |f: &str| format!("vms.physical_interrupts[{i}].{f}");
        unique(r, &mut phys_names, path("name"), &p.name);
        no_cpu(r, path("cpu"), p.cpu);
        positive(r, path("isr"), p.isr.0);
        positive(r, path("min_interarrival"), p.min_interarrival.0);
        if p.priority > MAX_IRQ_PRIORITY {
            r.err(path("priority"), p.priority, "must be 0..999999");
        } else if let Some(j) = phys_prio.insert((p.cpu, p.priority), i) {
            r.err(
                path("priority"),
                p.priority,
                format!("vms.physical_interrupts[{j}] has it too on cpu {}: physical interrupts have unique priorities (VINT §III)", p.cpu),
            );
        }
    }

    if vms.guests.is_empty() {
        r.err("vms.guests", "[]", "describe at least one guest");
    }
    let mut guest_names = BTreeMap::new();
    let mut vcpu_names = BTreeMap::new();
    let mut task_names = BTreeMap::new();
    let mut virq_names = BTreeMap::new();
    // per CPU: utilization of the VCPU and explicit pseudo-VCPU budgets
    let mut per_cpu: BTreeMap<u32, (f64, Vec<String>)> = BTreeMap::new();
    // per CPU: pseudo-VCPUs with an explicit priority / with `auto`
    let mut pseudo_prio: BTreeMap<u32, (BTreeMap<u32, String>, Vec<String>)> = BTreeMap::new();
    for (g, guest) in vms.guests.iter().enumerate() {
        let gp = format!("vms.guests[{g}]");
        unique(r, &mut guest_names, format!("{gp}.name"), &guest.name);
        if guest.vcpus.is_empty() {
            r.err(format!("{gp}.vcpus"), "[]", "a guest has at least one VCPU");
        }
        // DSR tasks of this guest: (vcpu index, task name) -> virtual
        // interrupt. A virtual interrupt whose VCPU is unknown (reported
        // below) still makes the tasks it names DSR tasks, so that one
        // mistake gives one error.
        let mut dsr_of: BTreeMap<(usize, &str), &str> = BTreeMap::new();
        for (k, v) in guest.virtual_interrupts.iter().enumerate() {
            let vp = format!("{gp}.virtual_interrupts[{k}]");
            let homes: Vec<usize> = match guest.vcpus.iter().position(|x| x.name == v.vcpu) {
                Some(c) => vec![c],
                None => (0..guest.vcpus.len()).collect(),
            };
            for (d, t) in v.dsr.iter().enumerate() {
                for &c in &homes {
                    if !guest.vcpus[c].tasks.iter().any(|x| &x.name == t) {
                        continue; // reported below
                    }
                    if let Some(first) = dsr_of.insert((c, t.as_str()), v.name.as_str()) {
                        dsr_of.insert((c, t.as_str()), first);
                        if homes.len() == 1 {
                            r.err(
                                format!("{vp}.dsr[{d}]"),
                                t,
                                format!("is already a DSR task of virtual interrupt {first} (a DSR task belongs to one virtual interrupt)"),
                            );
                        }
                    }
                }
            }
        }

        // ---- VCPUs and their tasks ------------------------------------
        for (c, v) in guest.vcpus.iter().enumerate() {
            let cp = format!("{gp}.vcpus[{c}]");
            let path = |f: &str| format!("{cp}.{f}");
            unique(r, &mut vcpu_names, path("name"), &v.name);
            no_cpu(r, path("cpu"), v.cpu);
            let (b, t) = (v.budget.0, v.period.0);
            if t.is_zero() {
                r.err(path("period"), t, "must be positive");
            } else if b.is_zero() {
                r.err(path("budget"), b, "must be positive");
            } else if b > t {
                r.err(path("budget"), b, format!("exceeds period {t}"));
            } else if let Some(u) = util_of(b, t) {
                let e = per_cpu.entry(v.cpu).or_default();
                e.0 += u.as_f64();
                e.1.push(format!("{} {}", v.name, u));
            }
            if let Some(p) = v.priority {
                if !(1..=99).contains(&p) {
                    r.err(
                        path("priority"),
                        p,
                        "a VCPU priority is 1..99 (higher is more urgent)",
                    );
                }
            }
            if let Some(n) = v.max_repl {
                if v.policy != VmPolicy::Sporadic {
                    r.err(
                        path("max_repl"),
                        n,
                        format!("does not apply to policy {}", policy_name(v.policy)),
                    );
                } else if n < 2 {
                    r.err(path("max_repl"), n, "must be at least 2 (QUEST-VCPU Alg. 12 pushes the remnant into a second replenishment)");
                } else if n > irqlab_core::MAX_MAX_REPL {
                    r.err(
                        path("max_repl"),
                        n,
                        format!(
                            "must be at most {} (the replenishment queue is bounded)",
                            irqlab_core::MAX_MAX_REPL
                        ),
                    );
                }
            }
            let mut prios: BTreeMap<u32, usize> = BTreeMap::new();
            for (k, task) in v.tasks.iter().enumerate() {
                let tp = format!("{cp}.tasks[{k}]");
                let path = |f: &str| format!("{tp}.{f}");
                unique(r, &mut task_names, path("name"), &task.name);
                if !(1..=MAX_IRQ_PRIORITY).contains(&task.priority) {
                    r.err(
                        path("priority"),
                        task.priority,
                        "a task priority is 1..999999 (higher is more urgent)",
                    );
                } else if let Some(j) = prios.insert(task.priority, k) {
                    r.err(
                        path("priority"),
                        task.priority,
                        format!("{cp}.tasks[{j}] has it too: tasks have unique priorities inside their VCPU (VINT §III)"),
                    );
                }
                if let Some(w) = task.wcet {
                    positive(r, path("wcet"), w.0);
                }
                if let Some(p) = task.period {
                    positive(r, path("period"), p.0);
                }
                if let Some(virq) = dsr_of.get(&(c, task.name.as_str())) {
                    let rule = format!("a DSR task is activated by its virtual interrupt ({virq}), not released on its own");
                    for (f, given) in [
                        ("period", task.period.is_some()),
                        ("offset", task.offset.is_some()),
                        ("background", task.background),
                    ] {
                        if given {
                            r.err(path(f), "", rule.clone());
                        }
                    }
                    if task.wcet.is_none() {
                        r.err(path("wcet"), "missing", "a DSR task needs its WCET");
                    }
                } else if task.background {
                    for (f, given) in [
                        ("wcet", task.wcet.is_some()),
                        ("period", task.period.is_some()),
                    ] {
                        if given {
                            r.err(
                                path(f),
                                "",
                                "a background task computes for ever (no wcet, no period)",
                            );
                        }
                    }
                } else {
                    if task.period.is_none() {
                        r.err(path("period"), "missing", "a task is periodic (period), background (background: true) or a DSR task (named in the dsr of a virtual interrupt of its VCPU)");
                    }
                    if task.wcet.is_none() {
                        r.err(path("wcet"), "missing", "a periodic task needs its WCET");
                    }
                }
            }
        }

        // ---- virtual interrupts (VINT §III) and vINT (§V) -------------
        let mut virq_prio: BTreeMap<(usize, u32), usize> = BTreeMap::new();
        for (k, v) in guest.virtual_interrupts.iter().enumerate() {
            let vp = format!("{gp}.virtual_interrupts[{k}]");
            let path = |f: &str| format!("{vp}.{f}");
            unique(r, &mut virq_names, path("name"), &v.name);
            let phys = vms
                .physical_interrupts
                .iter()
                .find(|p| p.name == v.physical);
            if phys.is_none() {
                r.err(
                    path("physical"),
                    &v.physical,
                    "no such physical interrupt (vms.physical_interrupts)",
                );
            }
            let vcpu = guest.vcpus.iter().position(|x| x.name == v.vcpu);
            if vcpu.is_none() {
                let elsewhere = vms
                    .guests
                    .iter()
                    .find(|o| o.vcpus.iter().any(|x| x.name == v.vcpu))
                    .map(|o| format!(" (it belongs to guest {}: a virtual interrupt is pinned to a VCPU of its own guest)", o.name))
                    .unwrap_or_default();
                r.err(
                    path("vcpu"),
                    &v.vcpu,
                    format!("no such VCPU in guest {}{elsewhere}", guest.name),
                );
            }
            positive(r, path("isr"), v.isr.0);
            if let Some(t) = v.min_interarrival {
                positive(r, path("min_interarrival"), t.0);
            }
            if v.priority > MAX_IRQ_PRIORITY {
                r.err(path("priority"), v.priority, "must be 0..999999");
            } else if let Some(c) = vcpu {
                if let Some(j) = virq_prio.insert((c, v.priority), k) {
                    r.err(
                        path("priority"),
                        v.priority,
                        format!("{gp}.virtual_interrupts[{j}] has it too on VCPU {}: virtual interrupts have unique priorities (VINT §III)", v.vcpu),
                    );
                }
            }
            if v.dsr.is_empty() {
                r.err(path("dsr"), "[]", "name at least one DSR task of the VCPU (handling ends with the DSR, VINT Definition 2)");
            }
            let mut seen = BTreeSet::new();
            for (d, t) in v.dsr.iter().enumerate() {
                if !seen.insert(t.as_str()) {
                    r.err(format!("{vp}.dsr[{d}]"), t, "is named twice");
                    continue;
                }
                let Some(c) = vcpu else { continue };
                if guest.vcpus[c].tasks.iter().any(|x| &x.name == t) {
                    continue;
                }
                let home = vms
                    .guests
                    .iter()
                    .flat_map(|o| o.vcpus.iter())
                    .find(|x| x.tasks.iter().any(|y| &y.name == t))
                    .map(|x| format!(" (it is a task of VCPU {}: a DSR task runs in the VCPU its virtual interrupt is pinned to)", x.name))
                    .unwrap_or_default();
                r.err(
                    format!("{vp}.dsr[{d}]"),
                    t,
                    format!("no such task in VCPU {}{home}", v.vcpu),
                );
            }
            let Some(vi) = &v.vint else { continue };
            let t_vi = v
                .min_interarrival
                .map(|d| d.0)
                .or(phys.map(|p| p.min_interarrival.0));
            let period = vi.period.map(|d| d.0).or(t_vi);
            if let Some(p) = vi.period {
                if p.0.is_zero() {
                    r.err(path("vint.period"), p.0, "must be positive");
                } else if let Some(t) = t_vi.filter(|t| p.0 < *t) {
                    r.err(
                        path("vint.period"),
                        p.0,
                        format!(
                            "is below the minimum inter-arrival time {t} (VINT §V-A: T_p >= T^vi)"
                        ),
                    );
                }
            }
            if let AutoDuration::Value(b) = vi.budget {
                if b.0.is_zero() {
                    r.err(path("vint.budget"), b.0, "must be positive");
                } else if let Some(t) = period.filter(|t| !t.is_zero()) {
                    if b.0 > t {
                        r.err(path("vint.budget"), b.0, format!("exceeds period {t}"));
                    } else if let (Some(u), Some(c)) = (util_of(b.0, t), vcpu) {
                        let e = per_cpu.entry(guest.vcpus[c].cpu).or_default();
                        e.0 += u.as_f64();
                        e.1.push(format!("{}.pseudo {}", v.name, u));
                    }
                }
            }
            if let Some(c) = vcpu {
                let cpu = guest.vcpus[c].cpu;
                let e = pseudo_prio.entry(cpu).or_default();
                match vi.priority {
                    AutoPriority::Auto => e.1.push(vp.clone()),
                    AutoPriority::Value(q) if !(1..=999).contains(&q) => {
                        r.err(path("vint.priority"), q, "a pseudo-VCPU priority is 1..999 (higher is more urgent; every pseudo-VCPU is above every VCPU, VINT §V-A), or auto")
                    }
                    AutoPriority::Value(q) => {
                        if let Some(first) = e.0.insert(q, vp.clone()) {
                            r.err(path("vint.priority"), q, format!("{first} has it too on cpu {cpu}: pseudo-VCPUs have unique priorities"));
                        }
                    }
                }
            }
        }
    }
    for (cpu, (explicit, auto)) in &pseudo_prio {
        if let (Some((_, first)), Some(a)) = (explicit.iter().next(), auto.first()) {
            r.err(
                format!("{a}.vint.priority"),
                "auto",
                format!("{first} on the same cpu {cpu} has an explicit priority: on one CPU give every pseudo-VCPU a priority, or none"),
            );
        }
    }
    for (cpu, (u, parts)) in &per_cpu {
        if *u > 1.0 + 1e-12 {
            r.err(
                format!("vms (cpu {cpu})"),
                format!("{:.1}%", u * 100.0),
                format!("the budgets exceed 100% of the CPU ({})", parts.join(", ")),
            );
        }
    }

    // ---- VCPU switch overhead: every budget must leave the guest time --
    if let Some(o) = vms.switch_overhead.map(|d| d.0).filter(|o| !o.is_zero()) {
        let explicit = vms.guests.iter().flat_map(|g| {
            let vcpus = g
                .vcpus
                .iter()
                .map(|v| (format!("VCPU {}", v.name), v.budget.0));
            let pseudo = g.virtual_interrupts.iter().filter_map(|v| match v.vint {
                Some(Vint {
                    budget: AutoDuration::Value(b),
                    ..
                }) => Some((format!("the pseudo-VCPU of {}", v.name), b.0)),
                _ => None,
            });
            vcpus.chain(pseudo)
        });
        for (who, b) in explicit {
            if !b.is_zero() && b <= o {
                r.err(
                    "vms.switch_overhead",
                    o,
                    format!("must be below every VCPU and pseudo-VCPU budget ({who} has {b})"),
                );
            }
        }
    }
}

/// Time of one pass through `steps` (compute and sleep, loops multiplied,
/// a `forever` body counted once) in wide arithmetic, and its compute part.
fn program_time(steps: &[Step]) -> (u128, u128) {
    let (mut all, mut cpu) = (0u128, 0u128);
    for s in steps {
        let (a, c) = match s {
            Step::Compute(d) => (u128::from(d.0 .0), u128::from(d.0 .0)),
            Step::Sleep(d) => (u128::from(d.0 .0), 0),
            Step::Loop { count, body } => {
                let (a, c) = program_time(body);
                let n = u128::from(*count);
                (a.saturating_mul(n), c.saturating_mul(n))
            }
            Step::Forever(body) => program_time(body),
            _ => (0, 0),
        };
        all = all.saturating_add(a);
        cpu = cpu.saturating_add(c);
    }
    (all, cpu)
}

fn loop_counts(r: &mut Report, steps: &[Step], path: &str) {
    for (k, s) in steps.iter().enumerate() {
        match s {
            Step::Loop { count, body } => {
                let here = format!("{path}[{k}].loop");
                if *count > MAX_COUNT {
                    r.err(
                        format!("{here}.count"),
                        count,
                        format!("must be at most {MAX_COUNT}"),
                    );
                }
                loop_counts(r, body, &format!("{here}.do"));
            }
            Step::Forever(body) => loop_counts(r, body, &format!("{path}[{k}].forever")),
            _ => {}
        }
    }
}

/// The limits of `crate::limits`: names, counts, sizes, rates, products of
/// user times; and warnings for interrupt sources faster than their CPU.
fn check_limits(r: &mut Report, m: &Model) {
    let mut names: Vec<(String, &str)> = Vec::new();
    for (i, v) in m.vcpus.iter().enumerate() {
        names.push((format!("vcpus[{i}].name"), &v.name));
        if let Some(c) = &v.io_class {
            names.push((format!("vcpus[{i}].io_class"), c));
        }
    }
    for (i, t) in m.tasks.iter().enumerate() {
        names.push((format!("tasks[{i}].name"), &t.name));
    }
    for (i, d) in m.devices.iter().enumerate() {
        names.push((format!("devices[{i}].name"), &d.name));
        if let Some(c) = &d.class {
            names.push((format!("devices[{i}].class"), c));
        }
    }
    for (i, x) in m.xhci.iter().enumerate() {
        names.push((format!("xhci[{i}].name"), &x.name));
    }
    for (i, c) in m.classes.iter().enumerate() {
        names.push((format!("classes[{i}].name"), &c.name));
    }
    for (d, c) in &m.bindings {
        names.push((format!("bindings.{d}"), c));
    }
    if let Some(vms) = &m.vms {
        for (i, p) in vms.physical_interrupts.iter().enumerate() {
            names.push((format!("vms.physical_interrupts[{i}].name"), &p.name));
        }
        for (g, guest) in vms.guests.iter().enumerate() {
            let gp = format!("vms.guests[{g}]");
            names.push((format!("{gp}.name"), &guest.name));
            for (c, v) in guest.vcpus.iter().enumerate() {
                names.push((format!("{gp}.vcpus[{c}].name"), &v.name));
                for (k, t) in v.tasks.iter().enumerate() {
                    names.push((format!("{gp}.vcpus[{c}].tasks[{k}].name"), &t.name));
                }
            }
            for (k, v) in guest.virtual_interrupts.iter().enumerate() {
                names.push((format!("{gp}.virtual_interrupts[{k}].name"), &v.name));
            }
        }
    }
    for (path, n) in names {
        if let Some(rule) = name_rule(n) {
            r.err(path, n, rule);
        }
    }

    for (i, t) in m.tasks.iter().enumerate() {
        let path = format!("tasks[{i}].program");
        loop_counts(r, &t.program, &path);
        if let Some(j) = t.jobs.filter(|j| *j > MAX_COUNT) {
            r.err(
                format!("tasks[{i}].jobs"),
                j,
                format!("must be at most {MAX_COUNT}"),
            );
        }
        let (all, cpu) = program_time(&t.program);
        if all > u128::from(MAX_TIME.0) {
            r.err(
                path,
                format!("{all} ns per pass"),
                format!("compute and sleep (loops multiplied) exceed the longest time accepted, {MAX_TIME}"),
            );
            continue;
        }
        if let Some(p) = t.period.map(|p| p.0 .0).filter(|p| *p > 0) {
            let n = cpu / u128::from(p);
            if n >= u128::from(MAX_JOB_PERIODS) {
                r.err(
                    path,
                    format!("{} of compute per job", Nanos(cpu as u64)),
                    format!("is {n} times the period {}: a job longer than {MAX_JOB_PERIODS} periods can never keep up", Nanos(p)),
                );
            } else if cpu > u128::from(p) {
                r.warnings.push(format!(
                    "tasks[{i}] ({}): {} of compute per job exceeds its period {}: the task falls behind",
                    escape(&t.name),
                    Nanos(cpu as u64),
                    Nanos(p)
                ));
            }
        }
    }

    for (i, d) in m.devices.iter().enumerate() {
        let p = |f: &str| format!("devices[{i}].{f}");
        for (f, v, lo, hi) in [
            ("packet", d.packet.map(|x| x.0), 1, MAX_PACKET_BYTES),
            ("sector", d.sector.map(|x| x.0), 1, MAX_SIZE_BYTES),
            ("request", d.request.map(|x| x.0), 1, MAX_SIZE_BYTES),
            ("rate", d.rate.map(|x| x.0), 1, MAX_DATA_RATE),
            ("sectors", d.sectors, 1, MAX_COUNT),
        ] {
            if let Some(v) = v.filter(|v| !(lo..=hi).contains(v)) {
                let unit = match f {
                    "rate" => "B/s",
                    "sectors" => "",
                    _ => "B",
                };
                r.err(
                    p(f),
                    format!("{v}{unit}"),
                    format!("must be between {lo}{unit} and {hi}{unit}"),
                );
            }
        }
        for (f, v) in [("buffer", d.buffer), ("ring", d.ring)] {
            if let Some(v) = v.filter(|v| *v > MAX_QUEUE) {
                r.err(p(f), v, format!("must be at most {MAX_QUEUE} packets"));
            }
        }
        if let (Some(ps), Some(n)) = (d.per_sector, d.sectors) {
            let t = u128::from(ps.0 .0) * u128::from(n);
            if t > u128::from(MAX_TIME.0) {
                r.err(
                    p("per_sector"),
                    format!("{} × sectors {n}", ps.0),
                    format!("the bottom half of one request exceeds the longest time accepted, {MAX_TIME}"),
                );
            }
        }
        // interrupt work per second against the CPU's second
        let handler = |a: Option<crate::units::Duration>, b: Option<crate::units::Duration>| {
            a.map_or(0, |x| x.0 .0) as f64 + b.map_or(0, |x| x.0 .0) as f64
        };
        let mut per_s: Option<f64> = None;
        if let Some(a) = &d.arrival {
            match a.kind {
                ArrivalKind::Periodic | ArrivalKind::Flood => {
                    if let Some(iv) = a.interval.filter(|x| !x.0.is_zero()) {
                        if iv.0 < MIN_PACKET_INTERVAL {
                            r.err(p("arrival.interval"), iv.0, format!("a NIC delivers at most {MAX_PACKET_RATE:e} packets/s (an interval of at least {MIN_PACKET_INTERVAL})"));
                        }
                        per_s = Some(1e9 / iv.0 .0 as f64);
                    }
                }
                ArrivalKind::Poisson => {
                    if let Some(x) = a.rate.filter(|x| x.is_finite() && *x > 0.0) {
                        if x > MAX_PACKET_RATE {
                            r.err(
                                p("arrival.rate"),
                                x,
                                format!("a NIC delivers at most {MAX_PACKET_RATE:e} packets/s"),
                            );
                        }
                        per_s = Some(x);
                    }
                }
                ArrivalKind::Burst => {
                    if let Some(c) = a.count.filter(|c| *c > MAX_BURST) {
                        r.err(
                            p("arrival.count"),
                            c,
                            format!("a burst has at most {MAX_BURST} packets"),
                        );
                    }
                    if let (Some(g), Some(c)) = (a.gap, a.count) {
                        if !g.0.is_zero() && g.0 < MIN_PACKET_INTERVAL && c > 1 {
                            r.err(p("arrival.gap"), g.0, format!("a NIC delivers at most {MAX_PACKET_RATE:e} packets/s (a gap of at least {MIN_PACKET_INTERVAL})"));
                        }
                    }
                }
                _ => {}
            }
        }
        if let Some(x) = per_s {
            let load = x * handler(d.top_half, d.bottom_half) / 1e9;
            if load > 1.0 {
                r.warnings.push(format!("devices[{i}] ({}): interrupt work of {:.0}% of cpu {} (top and bottom half × arrival rate): a storm the CPU cannot keep up with; expect drops and overload", escape(&d.name), load * 100.0, d.cpu));
            }
        }
        if let Some(t) = d.min_interarrival.filter(|t| !t.0.is_zero()) {
            let load = handler(d.isr, d.dsr) / t.0 .0 as f64;
            if load > 1.0 {
                r.warnings.push(format!("devices[{i}] ({}): interrupt work of {:.0}% of cpu {} (isr and dsr every min_interarrival): a storm the CPU cannot keep up with", escape(&d.name), load * 100.0, d.cpu));
            }
        }
    }
    if let Some(vms) = &m.vms {
        for (i, p) in vms.physical_interrupts.iter().enumerate() {
            if !p.min_interarrival.0.is_zero() && p.isr.0 > p.min_interarrival.0 {
                r.warnings.push(format!("vms.physical_interrupts[{i}] ({}): isr {} exceeds min_interarrival {}: an interrupt storm its CPU cannot keep up with", escape(&p.name), p.isr.0, p.min_interarrival.0));
            }
        }
    }
}
