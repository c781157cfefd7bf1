//! Lowering the hypervisor machine (`vms`, VINT §III) into a
//! `SimConfig`: VCPUs become servers, guest tasks become tasks (periodic,
//! and background busy loops in chunks), physical interrupts generic
//! devices, and virtual interrupts `virqs` -- with `auto` pseudo-VCPU
//! budgets (VINT Eq. 1 / Eq. 2) and priorities (VINT §V-A) resolved and
//! checked against the model's field paths.

use super::*;

/// Run-time chunk of a background guest task (a busy loop): any length
/// gives the same schedule; 10 ms keeps the event count low.
const BACKGROUND_CHUNK: u64 = 10_000_000;

/// Rank of a hypervisor VCPU with an explicit priority `p` (1..99): above
/// every rate-monotonic VCPU (of period 1.1 us or more), below every
/// pseudo-VCPU (ranks 1..999, VINT §V-A).
fn vcpu_rank(p: u32) -> u64 {
    1_100 - u64::from(p.min(99))
}

/// Lower the hypervisor machine (`vms`).
pub(super) fn from_vms(m: &Model, vms: &Vms) -> Result<SimConfig, SystemError> {
    let phys_idx =
        |n: &str, path: &str| index(&vms.physical_interrupts, n, |p| p.name.as_str(), path);
    let mut servers = Vec::new();
    let mut tasks = Vec::new();
    // server index of each guest's VCPUs
    let mut first_server = Vec::new();
    for g in &vms.guests {
        first_server.push(servers.len());
        for v in &g.vcpus {
            let (budget, period) = (v.budget.0.as_ns(), v.period.0.as_ns());
            servers.push(ServerCfg {
                name: v.name.clone(),
                cpu: v.cpu as usize,
                policy: match v.policy {
                    VmPolicy::Deferrable => PolicyCfg::Deferrable { budget, period },
                    VmPolicy::Sporadic => PolicyCfg::Sporadic {
                        budget,
                        period,
                        max_repl: v.max_repl.unwrap_or(irqlab_core::DEFAULT_MAX_REPL),
                        background: false,
                    },
                },
                rank: v.priority.map(vcpu_rank),
            });
            let server = servers.len() - 1;
            for t in &v.tasks {
                let dsr = g
                    .virtual_interrupts
                    .iter()
                    .any(|x| x.vcpu == v.name && x.dsr.contains(&t.name));
                if dsr {
                    continue; // runs as its virtual interrupt's DSR
                }
                let (release, program) = if t.background {
                    (
                        Release::Once { at: ns(t.offset) },
                        vec![Phase::Loop {
                            count: None,
                            body: vec![Phase::Compute {
                                ns: BACKGROUND_CHUNK,
                            }],
                        }],
                    )
                } else {
                    (
                        Release::Periodic {
                            period: ns(t.period),
                            deadline: None,
                            offset: ns(t.offset),
                            jobs: None,
                        },
                        vec![Phase::Compute { ns: ns(t.wcet) }],
                    )
                };
                tasks.push(TaskCfg {
                    name: t.name.clone(),
                    server,
                    priority: t.priority,
                    release,
                    program,
                    abort_on_miss: false,
                });
            }
        }
    }
    let devices = vms
        .physical_interrupts
        .iter()
        .map(|p| DeviceCfg {
            name: p.name.clone(),
            irq_priority: p.priority,
            cpu: p.cpu as usize,
            class: 0,
            omega_main: 0,
            kind: DeviceKind::Generic {
                min_interarrival: p.min_interarrival.0.as_ns(),
                jitter: ns(p.jitter),
                isr: p.isr.0.as_ns(),
                dsr: 0,
                start: ns(p.start),
            },
        })
        .collect::<Vec<_>>();

    // The virtual interrupts, with what Eq. 1 / Eq. 2 need: the guest ISR
    // with its EOI and the DSR tasks summed (C^vi, VINT §III) and T^vi.
    struct Resolved {
        path: String,
        cfg: VirqCfg,
        t_vi: u64,
        /// Highest DSR priority (pi_D of VINT §V-A).
        dsr_top: u32,
        managed: bool,
    }
    let default_eoi = ns(vms.eoi);
    let mut virqs: Vec<Resolved> = Vec::new();
    for (g, guest) in vms.guests.iter().enumerate() {
        for (k, v) in guest.virtual_interrupts.iter().enumerate() {
            let path = format!("vms.guests[{g}].virtual_interrupts[{k}]");
            let phys = phys_idx(&v.physical, &format!("{path}.physical"))?;
            let c = index(
                &guest.vcpus,
                &v.vcpu,
                |x| x.name.as_str(),
                &format!("{path}.vcpu"),
            )?;
            let vcpu = &guest.vcpus[c];
            let mut dsr = 0;
            let mut prios = Vec::new();
            for (d, name) in v.dsr.iter().enumerate() {
                let t = &vcpu.tasks[index(
                    &vcpu.tasks,
                    name,
                    |x| x.name.as_str(),
                    &format!("{path}.dsr[{d}]"),
                )?];
                dsr += ns(t.wcet);
                prios.push(t.priority);
            }
            let t_vi = v
                .min_interarrival
                .unwrap_or(vms.physical_interrupts[phys].min_interarrival)
                .0
                .as_ns();
            if t_vi == 0 {
                // validated already; lowering an unvalidated model must not
                // divide by it (VINT Eq. 1)
                return Err(SystemError::Config {
                    path: format!("{path}.min_interarrival"),
                    value: "0".into(),
                    rule: "must be positive".into(),
                });
            }
            virqs.push(Resolved {
                cfg: VirqCfg {
                    name: v.name.clone(),
                    phys,
                    vcpu: first_server[g] + c,
                    isr: v.isr.0.as_ns(),
                    eoi: v.eoi.map_or(default_eoi, |d| d.0.as_ns()),
                    dsr,
                    dsr_priority: prios.iter().copied().min().unwrap_or(1),
                    priority: v.priority,
                    min_interarrival: v.min_interarrival.map(|d| d.0.as_ns()),
                    pseudo: None,
                },
                path,
                t_vi,
                dsr_top: prios.iter().copied().max().unwrap_or(1),
                managed: v.vint.is_some(),
            });
        }
    }

    // Pseudo-VCPU budgets: VINT Eq. 1, or Eq. 2 when the VCPU also has
    // unmanaged virtual interrupts (their ISRs, with the EOI, added).
    let mut pseudo: Vec<Option<PseudoCfg>> = vec![None; virqs.len()];
    let all_vint = vms.guests.iter().flat_map(|g| g.virtual_interrupts.iter());
    for (i, v) in all_vint.enumerate() {
        let Some(vi) = &v.vint else { continue };
        let me = &virqs[i];
        let home = &servers[me.cfg.vcpu];
        let period = vi.period.map_or(me.t_vi, |d| d.0.as_ns());
        let budget = match vi.budget {
            AutoDuration::Value(b) => b.0.as_ns(),
            AutoDuration::Auto => {
                // the ISRs (with the EOI) of the VCPU's unmanaged virtual
                // interrupts: Eq. 2's extra demand per instance
                let unmanaged: u64 = virqs
                    .iter()
                    .filter(|u| u.cfg.vcpu == me.cfg.vcpu && !u.managed)
                    .map(|u| u.cfg.isr + u.cfg.eoi)
                    .sum();
                let own = me.cfg.isr + me.cfg.eoi + me.cfg.dsr;
                let b = irqlab_core::vint::pseudo_budget(own, me.t_vi, period, unmanaged);
                if b > period {
                    return Err(SystemError::Config {
                        path: format!("{}.vint.budget", me.path),
                        value: format!("auto = {}", irqlab_core::Nanos(b)),
                        rule: format!(
                            "the budget VINT Eq. 1/2 asks for exceeds the pseudo-VCPU period {}",
                            irqlab_core::Nanos(period)
                        ),
                    });
                }
                b
            }
        };
        let policy = vi.policy.unwrap_or(match home.policy {
            PolicyCfg::Deferrable { .. } => VmPolicy::Deferrable,
            _ => VmPolicy::Sporadic,
        });
        pseudo[i] = Some(PseudoCfg {
            deferrable: policy == VmPolicy::Deferrable,
            budget,
            period,
            rank: match vi.priority {
                AutoPriority::Value(q) => 1_000 - u64::from(q.min(999)),
                AutoPriority::Auto => 0, // below
            },
        });
    }

    // `auto` priorities (VINT §V-A): pi_B + (pi_o - 1) L_o + pi_D orders the
    // pseudo-VCPUs of a CPU above every VCPU, by their original VCPU's
    // priority, then by the highest priority of their DSR tasks; ranks
    // 1, 2, ... in that order.
    let key = |s: &ServerCfg| match (s.rank, &s.policy) {
        (Some(r), _) => r,
        (None, PolicyCfg::Deferrable { period, .. } | PolicyCfg::Sporadic { period, .. }) => {
            *period
        }
        (None, _) => u64::MAX,
    };
    let cpus: std::collections::BTreeSet<usize> = servers.iter().map(|s| s.cpu).collect();
    for cpu in cpus {
        let mut order: Vec<usize> = (0..servers.len())
            .filter(|&s| servers[s].cpu == cpu)
            .collect();
        order.sort_by_key(|&s| (key(&servers[s]), s));
        let level = |s: usize| order.iter().position(|&x| x == s).unwrap_or(0);
        let mut auto: Vec<usize> = (0..virqs.len())
            .filter(|&i| {
                servers[virqs[i].cfg.vcpu].cpu == cpu
                    && pseudo[i].as_ref().is_some_and(|p| p.rank == 0)
            })
            .collect();
        auto.sort_by_key(|&i| {
            (
                level(virqs[i].cfg.vcpu),
                std::cmp::Reverse(virqs[i].dsr_top),
                i,
            )
        });
        for (r, &i) in auto.iter().enumerate() {
            if let Some(p) = pseudo[i].as_mut() {
                p.rank = 1 + r as u64;
            }
        }
    }

    // The budgets with the resolved pseudo-VCPUs: at most 100 % per CPU.
    let mut per_cpu: std::collections::BTreeMap<usize, (f64, Vec<String>)> = Default::default();
    let share = |c: u64, t: u64| c as f64 / t.max(1) as f64;
    for s in &servers {
        if let PolicyCfg::Deferrable { budget, period }
        | PolicyCfg::Sporadic { budget, period, .. } = &s.policy
        {
            let e = per_cpu.entry(s.cpu).or_default();
            e.0 += share(*budget, *period);
            e.1.push(format!(
                "{} {:.1}%",
                s.name,
                100.0 * share(*budget, *period)
            ));
        }
    }
    for (i, p) in pseudo.iter().enumerate() {
        if let Some(p) = p {
            let e = per_cpu.entry(servers[virqs[i].cfg.vcpu].cpu).or_default();
            e.0 += share(p.budget, p.period);
            e.1.push(format!(
                "{}.pseudo {:.1}%",
                virqs[i].cfg.name,
                100.0 * share(p.budget, p.period)
            ));
        }
    }
    for (cpu, (u, parts)) in per_cpu {
        if u > 1.0 + 1e-12 {
            return Err(SystemError::Config {
                path: format!("vms (cpu {cpu})"),
                value: format!("{:.1}%", u * 100.0),
                rule: format!(
                    "the VCPU and pseudo-VCPU budgets exceed 100% of the CPU ({})",
                    parts.join(", ")
                ),
            });
        }
    }

    let s = &m.simulation;
    Ok(SimConfig {
        cpus: m.machine.cpus as usize,
        path: InterruptPath::Hypervisor,
        duration: s.duration.0.as_ns(),
        seed: s.seed,
        window: s.window.0.as_ns(),
        servers,
        tasks,
        devices,
        classes: Vec::new(),
        xhci: Vec::new(),
        virqs: virqs
            .into_iter()
            .zip(pseudo)
            .map(|(v, p)| VirqCfg { pseudo: p, ..v.cfg })
            .collect(),
        ipi: ns(vms.ipi),
        switch_overhead: ns(vms.switch_overhead),
        dispatch_delay: 0,
        switch_costs: Default::default(),
        linux: LinuxCfg::default(),
        trace: trace_cfg(s),
        overhead: Default::default(),
        max_completions: max_completions(s),
        max_window_values: max_window_values(s),
        records: records(s),
    })
}
