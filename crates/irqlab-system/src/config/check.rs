//! Validation of a `SimConfig` (`SimConfig::check`): every index in range,
//! every time and budget within its rules, the interrupt path's
//! requirements met -- so a configuration built by hand or from JSON never
//! makes the simulator panic. Errors name the field path, the value and
//! the rule.

use super::*;

use limits::check_limits;

fn bad(path: String, value: impl std::fmt::Display, rule: &str) -> SystemError {
    SystemError::Config {
        path,
        value: value.to_string(),
        rule: rule.to_owned(),
    }
}

/// `path`: the JSON path of `phases`, built only for an error.
fn check_phases(
    phases: &[Phase],
    path: &dyn Fn() -> String,
    ndev: usize,
    ncls: usize,
) -> Result<(), SystemError> {
    for (i, p) in phases.iter().enumerate() {
        let here = || format!("{}[{i}]", path());
        match p {
            Phase::Compute { ns } | Phase::Sleep { ns } if *ns == 0 => {
                return Err(bad(format!("{}.ns", here()), ns, "must be positive"))
            }
            Phase::Io { device } | Phase::Bind { device, .. } if *device >= ndev => {
                return Err(bad(format!("{}.device", here()), device, "no such device"))
            }
            Phase::Bind { class, .. } if *class >= ncls => {
                return Err(bad(format!("{}.class", here()), class, "no such class"))
            }
            Phase::Loop { body, count } => {
                if body.is_empty() {
                    return Err(bad(format!("{}.body", here()), "[]", "a loop needs a body"));
                }
                if count == &Some(0) {
                    return Err(bad(format!("{}.count", here()), 0, "must be positive"));
                }
                check_phases(body, &|| format!("{}.body", here()), ndev, ncls)?;
            }
            _ => {}
        }
    }
    Ok(())
}

fn collect_binds(phases: &[Phase], device: usize, out: &mut Vec<usize>) {
    for p in phases {
        match p {
            Phase::Bind { device: d, class } if *d == device => out.push(*class),
            Phase::Loop { body, .. } => collect_binds(body, device, out),
            _ => {}
        }
    }
}

impl SimConfig {
    /// `switch_overhead` needs the hypervisor path and must leave every
    /// VCPU and pseudo-VCPU some budget for its guest.
    fn check_switch_overhead(&self) -> Result<(), SystemError> {
        let o = self.switch_overhead;
        if o == 0 {
            return Ok(());
        }
        if self.path != InterruptPath::Hypervisor {
            return Err(bad(
                "switch_overhead".into(),
                o,
                "a VCPU switch overhead needs path: hypervisor",
            ));
        }
        let budgets = self.servers.iter().enumerate().filter_map(|(i, s)| {
            let b = match s.policy {
                PolicyCfg::Sporadic { budget, .. }
                | PolicyCfg::Deferrable { budget, .. }
                | PolicyCfg::Polling { budget, .. } => budget,
                PolicyCfg::Cbs { runtime, .. } => runtime,
                PolicyCfg::Pibs { .. } | PolicyCfg::Unbounded {} => return None,
            };
            Some((format!("servers[{i}] ({})", s.name), b))
        });
        let pseudo = self.virqs.iter().enumerate().filter_map(|(i, v)| {
            let p = v.pseudo.as_ref()?;
            Some((format!("virqs[{i}].pseudo ({}.pseudo)", v.name), p.budget))
        });
        for (who, b) in budgets.chain(pseudo) {
            if b <= o {
                return Err(bad(
                    "switch_overhead".into(),
                    o,
                    &format!("must be below every VCPU and pseudo-VCPU budget: {who} has {b} ns"),
                ));
            }
        }
        Ok(())
    }

    /// Whether any device is (or may be bound) in class `c`.
    pub fn class_used(&self, c: usize) -> bool {
        let mut binds = Vec::new();
        for t in &self.tasks {
            for d in 0..self.devices.len() {
                collect_binds(&t.program, d, &mut binds);
            }
        }
        self.devices.iter().any(|d| d.class == c) || binds.contains(&c)
    }

    /// Validate every reference and value the simulator relies on.
    pub fn check(&self) -> Result<(), SystemError> {
        if self.cpus == 0 {
            return Err(bad("cpus".into(), 0, "at least one CPU"));
        }
        if self.duration == 0 {
            return Err(bad("duration".into(), 0, "must be positive"));
        }
        let most = irqlab_model::validate::MAX_COMPLETIONS;
        if self.max_completions as u64 > most {
            return Err(bad(
                "max_completions".into(),
                self.max_completions,
                &format!("at most {most} (completion times are kept in memory)"),
            ));
        }
        let most = irqlab_model::validate::MAX_WINDOW_VALUES;
        if self.max_window_values == 0 || self.max_window_values as u64 > most {
            return Err(bad(
                "max_window_values".into(),
                self.max_window_values,
                &format!("must be between 1 and {most} (the windowed series need room; values are kept in memory)"),
            ));
        }
        let max = irqlab_model::validate::MAX_TRACE_EVENTS;
        if self.trace.max_events == 0 || self.trace.max_events as u64 > max {
            return Err(bad(
                "trace.max_events".into(),
                self.trace.max_events,
                &format!("must be between 1 and {max}"),
            ));
        }
        if !matches!(
            self.linux.ksoftirqd,
            PolicyCfg::Unbounded {} | PolicyCfg::Cbs { .. }
        ) {
            return Err(bad(
                "linux.ksoftirqd".into(),
                "policy",
                "ksoftirqd runs under SCHED_FIFO (unbounded) or SCHED_DEADLINE (cbs)",
            ));
        }
        let o = &self.overhead;
        for (name, v) in [
            ("schedule_ns", o.schedule_ns),
            ("repl_op_ns", o.repl_op_ns),
            ("scan_ns_per_server", o.scan_ns_per_server),
        ] {
            if !(v.is_finite() && v >= 0.0) {
                return Err(bad(
                    format!("overhead.{name}"),
                    v,
                    "must be a non-negative number",
                ));
            }
        }
        if self.window == 0 {
            return Err(bad("window".into(), 0, "must be positive"));
        }
        check_limits(self)?;
        self.check_switch_overhead()?;
        if self.path == InterruptPath::Hypervisor && !self.switch_costs.is_zero() {
            return Err(bad(
                "switch_costs".into(),
                format!("{:?}", self.switch_costs),
                "thread switch and timer costs need a thread-based path (quest, quest-no-iovcpu, linux); the hypervisor path has switch_overhead",
            ));
        }
        for (i, s) in self.servers.iter().enumerate() {
            if s.cpu >= self.cpus {
                return Err(bad(format!("servers[{i}].cpu"), s.cpu, "no such CPU"));
            }
            if matches!(s.policy, PolicyCfg::Unbounded {}) && s.rank.is_none() {
                return Err(bad(
                    format!("servers[{i}].rank"),
                    "none",
                    "an unbounded server needs a rank",
                ));
            }
        }
        let nsrv = self.servers.len();
        let ntask = self.tasks.len();
        for (i, t) in self.tasks.iter().enumerate() {
            if t.server >= nsrv {
                return Err(bad(
                    format!("tasks[{i}].server"),
                    t.server,
                    "no such server",
                ));
            }
            if t.program.is_empty() {
                return Err(bad(
                    format!("tasks[{i}].program"),
                    "[]",
                    "a task needs a program",
                ));
            }
            if let Release::Periodic {
                period,
                deadline,
                jobs,
                ..
            } = &t.release
            {
                if *period == 0 {
                    return Err(bad(
                        format!("tasks[{i}].release.period"),
                        0,
                        "must be positive",
                    ));
                }
                if deadline == &Some(0) {
                    return Err(bad(
                        format!("tasks[{i}].release.deadline"),
                        0,
                        "must be positive",
                    ));
                }
                if jobs == &Some(0) {
                    return Err(bad(
                        format!("tasks[{i}].release.jobs"),
                        0,
                        "must be positive",
                    ));
                }
            }
            check_phases(
                &t.program,
                &|| format!("tasks[{i}].program"),
                self.devices.len(),
                self.classes.len(),
            )?;
        }
        for (i, c) in self.classes.iter().enumerate() {
            match c.iovcpu {
                Some(s) if s >= nsrv => {
                    return Err(bad(format!("classes[{i}].iovcpu"), s, "no such server"))
                }
                Some(s) if !matches!(self.servers[s].policy, PolicyCfg::Pibs { .. } | PolicyCfg::Sporadic { .. } | PolicyCfg::Deferrable { .. } | PolicyCfg::Polling { .. }) => {
                    return Err(bad(format!("classes[{i}].iovcpu"), s, "an I/O VCPU must be a budgeted server (pibs, sporadic, deferrable or polling)"))
                }
                None if self.path == InterruptPath::Quest && self.class_used(i) => {
                    return Err(bad(format!("classes[{i}].iovcpu"), "none", "the quest path needs an I/O VCPU per class"))
                }
                _ => {}
            }
            if let Some(t) = c.consumer {
                if t >= ntask {
                    return Err(bad(format!("classes[{i}].consumer"), t, "no such task"));
                }
            }
        }
        for (i, x) in self.xhci.iter().enumerate() {
            if x.cpu >= self.cpus {
                return Err(bad(format!("xhci[{i}].cpu"), x.cpu, "no such CPU"));
            }
            if x.interrupters.is_empty() || x.interrupters.len() > MAX_INTERRUPTERS {
                return Err(bad(
                    format!("xhci[{i}].interrupters"),
                    x.interrupters.len(),
                    "an xHC has 1 to 1024 interrupters",
                ));
            }
            if x.msi_base as usize + x.interrupters.len() > 256 {
                return Err(bad(
                    format!("xhci[{i}].msi_base"),
                    x.msi_base,
                    "MSI vectors msi_base + interrupter must stay below 256",
                ));
            }
            for (k, it) in x.interrupters.iter().enumerate() {
                if it.class >= self.classes.len() {
                    return Err(bad(
                        format!("xhci[{i}].interrupters[{k}].class"),
                        it.class,
                        "no such class",
                    ));
                }
            }
        }
        for (i, d) in self.devices.iter().enumerate() {
            if let DeviceKind::Usb {
                controller,
                rate,
                echo_of,
                ..
            } = &d.kind
            {
                let Some(x) = self.xhci.get(*controller) else {
                    return Err(bad(
                        format!("devices[{i}].controller"),
                        controller,
                        "no such xHCI controller",
                    ));
                };
                if *rate == 0 {
                    return Err(bad(format!("devices[{i}].rate"), 0, "must be positive"));
                }
                if let Some(e) = echo_of {
                    if !matches!(
                        self.devices.get(*e).map(|x| &x.kind),
                        Some(DeviceKind::Usb { .. })
                    ) || *e == i
                    {
                        return Err(bad(
                            format!("devices[{i}].echo_of"),
                            e,
                            "must name another USB endpoint",
                        ));
                    }
                }
                // every class a USB device can be bound to must have an
                // interrupter (an unmapped class cannot be signalled)
                let mut classes = vec![d.class];
                for t in &self.tasks {
                    collect_binds(&t.program, i, &mut classes);
                }
                for c in classes {
                    if !x.interrupters.iter().any(|it| it.class == c) {
                        return Err(bad(
                            format!("devices[{i}].class"),
                            c,
                            "the class has no interrupter on its xHCI controller (unmapped class)",
                        ));
                    }
                }
            }
        }
        if !self.virqs.is_empty() && self.path != InterruptPath::Hypervisor {
            return Err(bad(
                "virqs".into(),
                self.virqs.len(),
                "virtual interrupts need path: hypervisor",
            ));
        }
        for (i, v) in self.virqs.iter().enumerate() {
            if !matches!(
                self.devices.get(v.phys).map(|d| &d.kind),
                Some(DeviceKind::Generic { .. } | DeviceKind::Nic { .. })
            ) {
                return Err(bad(
                    format!("virqs[{i}].phys"),
                    v.phys,
                    "must be a generic or nic device (the physical interrupt)",
                ));
            }
            if v.vcpu >= nsrv {
                return Err(bad(format!("virqs[{i}].vcpu"), v.vcpu, "no such server"));
            }
            if v.min_interarrival == Some(0) {
                return Err(bad(
                    format!("virqs[{i}].min_interarrival"),
                    0,
                    "must be positive",
                ));
            }
            if let Some(p) = &v.pseudo {
                if p.period == 0 || p.budget == 0 || p.budget > p.period {
                    return Err(bad(
                        format!("virqs[{i}].pseudo.budget"),
                        p.budget,
                        &format!("must be positive and at most the period {}", p.period),
                    ));
                }
            }
        }
        for (i, d) in self.devices.iter().enumerate() {
            // on the hypervisor path a generic or nic device is a physical
            // interrupt: its handling is its virqs (no class), but its
            // arrivals are checked like any other
            let physical = self.path == InterruptPath::Hypervisor
                && matches!(d.kind, DeviceKind::Generic { .. } | DeviceKind::Nic { .. });
            if !physical && d.class >= self.classes.len() {
                return Err(bad(format!("devices[{i}].class"), d.class, "no such class"));
            }
            if d.cpu >= self.cpus {
                return Err(bad(format!("devices[{i}].cpu"), d.cpu, "no such CPU"));
            }
            match &d.kind {
                DeviceKind::Nic {
                    arrival, buffer, ..
                } => {
                    if *buffer == 0 {
                        return Err(bad(format!("devices[{i}].buffer"), 0, "must be positive"));
                    }
                    match arrival {
                        ArrivalCfg::Periodic { interval: 0, .. } => {
                            return Err(bad(
                                format!("devices[{i}].arrival.interval"),
                                0,
                                "must be positive",
                            ))
                        }
                        ArrivalCfg::Poisson { rate_per_s, .. }
                            if !(rate_per_s.is_finite() && *rate_per_s > 0.0) =>
                        {
                            return Err(bad(
                                format!("devices[{i}].arrival.rate_per_s"),
                                rate_per_s,
                                "must be a positive number",
                            ))
                        }
                        ArrivalCfg::PingFlood { interval: 0, .. } => {
                            return Err(bad(
                                format!("devices[{i}].arrival.interval"),
                                0,
                                "must be positive",
                            ))
                        }
                        ArrivalCfg::Burst { count, every, .. } if *count == 0 || *every == 0 => {
                            return Err(bad(
                                format!("devices[{i}].arrival"),
                                format!("count {count}, every {every}"),
                                "count and every must be positive",
                            ))
                        }
                        _ => {}
                    }
                }
                DeviceKind::Generic {
                    min_interarrival: 0,
                    ..
                } => {
                    return Err(bad(
                        format!("devices[{i}].min_interarrival"),
                        0,
                        "must be positive",
                    ))
                }
                _ => {}
            }
            if physical {
                continue;
            }
            let c = &self.classes[d.class];
            let unsolicited = matches!(d.kind, DeviceKind::Nic { .. } | DeviceKind::Generic { .. });
            if unsolicited && c.consumer.is_none() && self.path == InterruptPath::QuestNoIovcpu {
                return Err(bad(format!("classes[{}].consumer", d.class), "none", "on the quest-no-iovcpu path a class with a NIC or generic device needs a consumer task to charge"));
            }
        }
        Ok(())
    }
}

#[path = "limits.rs"]
mod limits;

#[path = "time_scan.rs"]
mod time_scan;

#[cfg(test)]
#[path = "check_tests.rs"]
mod tests;
