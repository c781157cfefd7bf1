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

use crate::model::{
    ArrivalKind, DeviceKindName, MapEntry, Model, PathKind, Policy, Step, VcpuKind,
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
        if self.value.is_empty() {
            write!(f, "{}: {}", self.path, self.rule)
        } else {
            write!(f, "{}: {}: {}", self.path, self.value, self.rule)
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
    fn err(&mut self, path: impl Into<String>, value: impl fmt::Display, rule: impl Into<String>) {
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
    if m.simulation.duration.0.is_zero() {
        r.err("simulation.duration", "0", "must be positive");
    }
    if m.simulation.window.0.is_zero() {
        r.err("simulation.window", "0", "must be positive");
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
                &["buffer", "ring"],
            ),
            DeviceKindName::Disk => (
                &["latency", "top_half", "per_sector", "sectors", "sector"],
                &[],
            ),
            DeviceKindName::Generic => (&["min_interarrival", "isr", "dsr"], &["jitter", "start"]),
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
        if device_class(m, &d.name).is_none() {
            r.err(
                p("class"),
                "missing",
                "every device is bound to an I/O class (class: or bindings:)",
            );
        }
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
