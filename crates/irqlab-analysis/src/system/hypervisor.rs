//! The bounds of VINT §VI for a hypervisor machine (`path: hypervisor`, the
//! `vms` form of the model): what `irqlab analyze` prints for it.
//!
//! The lowered configuration is split per physical CPU into the systems of
//! `crate::vint` and every bound is computed for the budgets,
//! periods and priorities the model gives (no budget search: the model's
//! budgets are what is analysed): Eq. 3 for each VCPU and pseudo-VCPU,
//! Eq. 4 for each periodic guest task, Eq. 5 for each physical ISR, and
//! the handling time of each virtual interrupt's flow (Definition 2) by
//! Eq. 5 + 7 with vINT or Eq. 5 + 8 without, against its minimum
//! inter-arrival time (Definition 3).
//!
//! Design principles: the equations live in `crate::vint` and
//! are not re-derived here; this module only maps the configuration onto
//! them and says, for every quantity it cannot bound, why. Where the model
//! holds more than the paper's analysis, the mapping stays safe:
//! * the trapped EOI is part of the guest ISR (`C^vi`, VINT §III);
//! * with deferrable pseudo-VCPUs the flow bound is `vint::virt_bound_vint`
//!   (twice Eq. 7; the paper's Eq. 5 + 7 is reported next to it);
//! * a pseudo-VCPU whose budget is below what Eq. 1 / Eq. 2 asks for gets
//!   no Eq. 7 bound (Eq. 7 assumes each instance finds a whole budget);
//! * VCPU switch overhead `o` (`switch_overhead`): a switch happens only
//!   at a dispatch, and every dispatch that changes the context is caused
//!   by a release or an injection (charged at most twice: when it preempts
//!   and when its work ends), by a budget replenishment or exhaustion (at
//!   most one per period for a deferrable server, `max_repl` for a
//!   sporadic one), or by the run that was in progress when the window
//!   opened (one per VCPU, plus one). So switching takes at most
//!   `S(w) = o (n + 1) + sum 2 o m (ceil(w / T) + 1)` of any window `w`,
//!   over the sources `(T, m)` of the CPU. `S` is extra interference in
//!   Eq. 7, and a VCPU's guest gets `C - S(T)` of its budget per period in
//!   Eq. 4 and Eq. 8 (Eq. 3 is unchanged: switches are charged to budgets);
//! * deferrable and sporadic servers mixed on one CPU are analysed with the
//!   deferrable jitter `T - C`, which bounds both;
//! * a virtual interrupt whose VCPU is on another CPU than its physical
//!   interrupt is delivered by an IPI, a physical ISR of the VCPU's CPU
//!   (above every device interrupt and in arrival order among IPIs, as the
//!   simulator runs them). Its flow is bounded as VINT §VI-B composes it:
//!   Eq. 5 of the physical ISR on its CPU, plus Eq. 5 of the IPI, plus
//!   Eq. 7 / 8 on the VCPU's CPU. An IPI is released when the ISR that
//!   sends it completes, so it carries that ISR's response minus its WCET
//!   as release jitter wherever it interferes (Eq. 3, 5, 7); since the
//!   ISR's response may itself depend on IPIs, the responses and jitters
//!   are iterated from zero to a fixed point (holistic analysis, as for
//!   distributed systems).

use crate::rta::demand;
use crate::system::hypervisor_inputs::{
    physical_isrs, switch_interference, task_kind, Kind, PhysicalIsrs,
};
use crate::vint::{self, Pcpu, PseudoVcpu, Replenish, Task, Vcpu, VirtIrq};
use irqlab_system::config::{DeviceKind, InterruptPath, PolicyCfg, SimConfig};
use irqlab_system::SystemError;
use serde::Serialize;

/// The bounds of every CPU that runs VCPUs.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct HypervisorBounds {
    pub cpus: Vec<CpuBounds>,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CpuBounds {
    pub cpu: usize,
    /// The replenishment the CPU's servers are analysed with.
    pub replenish: &'static str,
    pub switch_overhead: u64,
    /// Why nothing on this CPU is bounded, if so.
    pub note: Option<String>,
    /// VCPUs and pseudo-VCPUs, most urgent first.
    pub servers: Vec<ServerBound>,
    pub tasks: Vec<TaskBound>,
    pub physical_interrupts: Vec<PhysBound>,
    pub virtual_interrupts: Vec<VirqBound>,
}

/// VINT Eq. 3 for one server.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ServerBound {
    pub name: String,
    pub pseudo: bool,
    pub policy: &'static str,
    pub budget: u64,
    pub period: u64,
    /// Budget left to the guest per period after the worst-case switch
    /// overhead (VCPUs only; the budget of Eq. 4 and Eq. 8).
    pub guest_budget: Option<u64>,
    /// Eq. 3: the time to receive the budget, `None` above the period.
    pub response: Option<u64>,
    pub schedulable: bool,
}

/// VINT Eq. 4 for one guest task.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TaskBound {
    pub name: String,
    pub vcpu: String,
    pub wcet: Option<u64>,
    pub period: Option<u64>,
    pub deadline: Option<u64>,
    pub response: Option<u64>,
    pub schedulable: bool,
    /// Why there is no bound, when there is none.
    pub note: Option<String>,
}

/// VINT Eq. 5 for one physical ISR (or IPI).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PhysBound {
    pub name: String,
    pub ipi: bool,
    pub isr: u64,
    pub min_interarrival: u64,
    pub response: Option<u64>,
}

/// Definition 2 / 3 for one virtual interrupt.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct VirqBound {
    pub name: String,
    pub vcpu: String,
    pub managed: bool,
    /// `min(T^vi, T^pi)`: the flow must complete within it (Definition 3).
    pub limit: u64,
    /// `"5+7"` (sporadic pseudo-VCPU), `"5+2x7"` (deferrable), `"5+8"`;
    /// `"5+5+..."` when an IPI delivers it.
    pub equation: &'static str,
    /// The CPU its physical interrupt is on.
    pub physical_cpu: usize,
    /// Eq. 5 of its physical interrupt (on `physical_cpu`).
    pub physical_response: Option<u64>,
    /// Eq. 5 of the IPI that delivers it, when `physical_cpu` is not the
    /// VCPU's CPU and IPIs cost time.
    pub ipi_response: Option<u64>,
    /// The bound on the whole flow (Definition 2), `None` above the limit.
    pub bound: Option<u64>,
    /// The paper's Eq. 5 + 7 where it differs from `bound`.
    pub paper_bound: Option<u64>,
    pub serviceable: bool,
    pub note: Option<String>,
}

fn bad(path: String, value: impl std::fmt::Display, rule: &str) -> SystemError {
    SystemError::Config {
        path,
        value: value.to_string(),
        rule: rule.into(),
    }
}

/// The bounds of a hypervisor configuration (see the module doc).
pub fn hypervisor_bounds(cfg: &SimConfig) -> Result<HypervisorBounds, SystemError> {
    if cfg.path != InterruptPath::Hypervisor {
        return Err(bad(
            "machine.path".into(),
            format!("{:?}", cfg.path).to_lowercase(),
            "the VINT bounds need path: hypervisor",
        ));
    }
    cfg.check()?;
    let mut phys_period = Vec::with_capacity(cfg.devices.len());
    for (d, dev) in cfg.devices.iter().enumerate() {
        match dev.kind {
            DeviceKind::Generic {
                min_interarrival, ..
            } => phys_period.push(min_interarrival),
            _ => {
                return Err(bad(
                    format!("devices[{d}].kind"),
                    &dev.name,
                    "the VINT analysis needs physical interrupts with a minimum inter-arrival \
                     time (generic devices)",
                ))
            }
        }
    }
    let mut key = Vec::with_capacity(cfg.servers.len());
    for (i, s) in cfg.servers.iter().enumerate() {
        match s.policy {
            PolicyCfg::Deferrable { period, .. } | PolicyCfg::Sporadic { period, .. } => {
                key.push(s.rank.unwrap_or(period));
            }
            _ => {
                return Err(bad(
                    format!("servers[{i}].policy"),
                    &s.name,
                    "the VINT analysis covers deferrable and sporadic VCPUs",
                ))
            }
        }
    }
    let isrs = physical_isrs(cfg, &phys_period);
    let mut cpus = Vec::new();
    for c in 0..cfg.cpus {
        if cfg.servers.iter().any(|s| s.cpu == c) {
            cpus.push(cpu_bounds(cfg, c, &key, &phys_period, &isrs));
        }
    }
    Ok(HypervisorBounds { cpus })
}

/// One schedulable entity of a CPU: a VCPU (server index) or the
/// pseudo-VCPU of a virtual interrupt (virq index).
#[derive(Copy, Clone, PartialEq)]
enum Entity {
    Vcpu(usize),
    Pseudo(usize),
}

fn cpu_bounds(
    cfg: &SimConfig,
    c: usize,
    key: &[u64],
    phys_period: &[u64],
    isrs: &PhysicalIsrs,
) -> CpuBounds {
    let o = cfg.switch_overhead;
    let vcpu_ids: Vec<usize> = (0..cfg.servers.len())
        .filter(|&s| cfg.servers[s].cpu == c)
        .collect();
    let local = |s: usize| vcpu_ids.iter().position(|&x| x == s);
    let virq_ids: Vec<usize> = (0..cfg.virqs.len())
        .filter(|&v| cfg.servers[cfg.virqs[v].vcpu].cpu == c)
        .collect();

    // servers, most urgent first (ties: both count as higher than the other)
    let budget_period = |e: Entity| -> (u64, u64, bool, u64) {
        match e {
            Entity::Vcpu(s) => match cfg.servers[s].policy {
                PolicyCfg::Deferrable { budget, period } => (budget, period, true, 1),
                PolicyCfg::Sporadic {
                    budget,
                    period,
                    max_repl,
                    ..
                } => (budget, period, false, max_repl as u64),
                _ => (0, 1, false, 1), // refused in hypervisor_bounds
            },
            Entity::Pseudo(v) => {
                let p = cfg.virqs[v]
                    .pseudo
                    .as_ref()
                    .map_or((0, 1, false), |p| (p.budget, p.period, p.deferrable));
                let m = if p.2 {
                    1
                } else {
                    irqlab_core::DEFAULT_MAX_REPL as u64
                };
                (p.0, p.1, p.2, m)
            }
        }
    };
    let entity_key = |e: Entity| match e {
        Entity::Vcpu(s) => key[s],
        Entity::Pseudo(v) => cfg.virqs[v].pseudo.as_ref().map_or(u64::MAX, |p| p.rank),
    };
    let mut entities: Vec<Entity> = vcpu_ids.iter().map(|&s| Entity::Vcpu(s)).collect();
    entities.extend(
        virq_ids
            .iter()
            .filter(|&&v| cfg.virqs[v].pseudo.is_some())
            .map(|&v| Entity::Pseudo(v)),
    );
    entities.sort_by_key(|&e| entity_key(e));
    let deferrable = entities.iter().any(|&e| budget_period(e).2);
    let r = if deferrable {
        Replenish::Deferrable
    } else {
        Replenish::Sporadic
    };
    let jitter = |b: u64, t: u64| match r {
        Replenish::Deferrable => t.saturating_sub(b),
        Replenish::Sporadic => 0,
    };
    // analysis priorities: higher is more urgent, distinct
    let n = entities.len() as u32;
    let prio_of = |e: Entity| n - entities.iter().position(|&x| x == e).unwrap_or(0) as u32;

    // physical ISRs of the CPU, then the IPIs that deliver to it
    let (phys, phys_names) = isrs.cpus[c].clone();

    let vcpus: Vec<Vcpu> = vcpu_ids
        .iter()
        .map(|&s| {
            let (budget, period, _, _) = budget_period(Entity::Vcpu(s));
            Vcpu {
                budget,
                period,
                prio: prio_of(Entity::Vcpu(s)),
            }
        })
        .collect();

    // guest tasks: the periodic ones are analysed (Eq. 4); a background
    // task starves every task below it in its VCPU
    let mut tasks: Vec<Task> = Vec::new();
    let mut task_rows: Vec<(usize, Kind, Option<usize>)> = Vec::new(); // (cfg index, kind, analysis index)
    let mut background: Vec<(usize, u32, &str)> = Vec::new(); // (local vcpu, prio, name)
    for (i, t) in cfg.tasks.iter().enumerate() {
        let Some(k) = local(t.server) else { continue };
        let kind = task_kind(&t.release, &t.program);
        let idx = match kind {
            Kind::Periodic { wcet, period, .. } => {
                tasks.push(Task {
                    wcet,
                    period,
                    prio: t.priority,
                    vcpu: k,
                });
                Some(tasks.len() - 1)
            }
            Kind::Background => {
                background.push((k, t.priority, &t.name));
                None
            }
            Kind::Other => None,
        };
        task_rows.push((i, kind, idx));
    }
    let starved_by = |k: usize, prio: u32| {
        background
            .iter()
            .find(|&&(bk, bp, _)| bk == k && bp > prio)
            .map(|&(_, _, name)| name.to_string())
    };

    let virt: Vec<VirtIrq> = virq_ids
        .iter()
        .map(|&v| {
            let x = &cfg.virqs[v];
            let same = cfg.devices[x.phys].cpu == c;
            VirtIrq {
                isr: x.isr + x.eoi,
                dsr: x.dsr,
                dsr_prio: x.dsr_priority,
                period: x.min_interarrival.unwrap_or(phys_period[x.phys]),
                prio: x.priority,
                vcpu: local(x.vcpu).unwrap_or(0),
                phys: if same {
                    Some(isrs.device[x.phys].1)
                } else {
                    isrs.ipi[v].map(|(_, i)| i)
                }
                .unwrap_or(0),
                managed: x.pseudo.is_some(),
            }
        })
        .collect();
    let pseudo: Vec<PseudoVcpu> = virq_ids
        .iter()
        .enumerate()
        .filter_map(|(j, &v)| {
            let p = cfg.virqs[v].pseudo.as_ref()?;
            Some(PseudoVcpu {
                irq: j,
                budget: p.budget,
                period: p.period,
                prio: prio_of(Entity::Pseudo(v)),
            })
        })
        .collect();
    let pcpu = Pcpu {
        vcpus,
        tasks,
        phys,
        virt,
    };

    // switch overhead sources: interrupts (and IPIs), task releases, servers
    let mut sources: Vec<(u64, u64)> = pcpu.phys.iter().map(|p| (p.period, 1)).collect();
    sources.extend(pcpu.tasks.iter().map(|t| (t.period, 1)));
    sources.extend(entities.iter().map(|&e| {
        let (_, t, _, m) = budget_period(e);
        (t, m)
    }));
    let switching = switch_interference(o, vcpu_ids.len(), &sources);

    // Eq. 3
    let servers: Vec<ServerBound> = entities
        .iter()
        .map(|&e| {
            let (budget, period, ds, _) = budget_period(e);
            let higher: Vec<(u64, u64, u64)> = entities
                .iter()
                .filter(|&&h| h != e && entity_key(h) <= entity_key(e))
                .map(|&h| {
                    let (b, t, _, _) = budget_period(h);
                    (b, t, jitter(b, t))
                })
                .collect();
            let response = if isrs.unbounded[c].is_some() {
                None
            } else if budget == 0 {
                Some(0)
            } else {
                vint::vcpu_response(&pcpu, budget, period, &higher)
            };
            let (name, pseudo) = match e {
                Entity::Vcpu(s) => (cfg.servers[s].name.clone(), false),
                Entity::Pseudo(v) => (format!("{}.pseudo", cfg.virqs[v].name), true),
            };
            ServerBound {
                name,
                pseudo,
                policy: if ds { "deferrable" } else { "sporadic" },
                budget,
                period,
                guest_budget: (!pseudo).then(|| budget.saturating_sub(demand(&switching, period))),
                response,
                schedulable: response.is_some(),
            }
        })
        .collect();
    let server_ok = |name: &str| servers.iter().any(|s| s.name == name && s.schedulable);
    let guest_budgets: Vec<u64> = vcpu_ids
        .iter()
        .map(|&s| {
            servers
                .iter()
                .find(|b| !b.pseudo && b.name == cfg.servers[s].name)
                .and_then(|b| b.guest_budget)
                .unwrap_or(0)
        })
        .collect();

    // Eq. 4
    let dsrs = vint::unmanaged_dsr_tasks(&pcpu);
    let task_bounds = task_rows
        .into_iter()
        .map(|(i, kind, idx)| {
            let t = &cfg.tasks[i];
            let vcpu = cfg.servers[t.server].name.clone();
            let k = local(t.server).unwrap_or(0);
            let (wcet, period, deadline) = match kind {
                Kind::Periodic {
                    wcet,
                    period,
                    deadline,
                } => (Some(wcet), Some(period), Some(deadline)),
                _ => (None, None, None),
            };
            let (response, note) = match (kind, idx) {
                (Kind::Background, _) => (
                    None,
                    Some("background task: runs when nothing above it does".into()),
                ),
                (Kind::Other, _) => (
                    None,
                    Some("not a periodic compute task: outside Eq. 4".into()),
                ),
                (Kind::Periodic { .. }, Some(ix)) => {
                    if !server_ok(&vcpu) {
                        (None, Some(format!("its VCPU {vcpu} fails Eq. 3")))
                    } else if let Some(b) = starved_by(k, t.priority) {
                        (None, Some(format!("below the background task {b}")))
                    } else if guest_budgets[k] == 0 {
                        (
                            None,
                            Some(format!("switch overhead leaves {vcpu} no budget")),
                        )
                    } else {
                        let r = vint::task_response(&pcpu, ix, &guest_budgets, &dsrs);
                        (r, r.is_none().then(|| "Eq. 4 exceeds the period".into()))
                    }
                }
                (Kind::Periodic { .. }, None) => (None, None),
            };
            let schedulable = match (response, deadline) {
                (Some(r), Some(d)) => r <= d,
                _ => false,
            };
            let note = match (response, deadline, note) {
                (Some(r), Some(d), None) if r > d => Some("Eq. 4 exceeds the deadline".into()),
                (_, _, n) => n,
            };
            TaskBound {
                name: t.name.clone(),
                vcpu,
                wcet,
                period,
                deadline,
                response,
                schedulable,
                note,
            }
        })
        .collect();

    // Eq. 5
    let physical_interrupts = pcpu
        .phys
        .iter()
        .zip(&phys_names)
        .enumerate()
        .map(|(i, (p, (name, ipi)))| PhysBound {
            name: name.clone(),
            ipi: *ipi,
            isr: p.wcet,
            min_interarrival: p.period,
            response: isrs.responses[c][i],
        })
        .collect();

    // Definition 2 / 3: Eq. 5 + 7 or Eq. 5 + 8
    let virtual_interrupts = virq_ids
        .iter()
        .enumerate()
        .map(|(j, &v)| {
            let x = &cfg.virqs[v];
            let me = &pcpu.virt[j];
            let vcpu = cfg.servers[x.vcpu].name.clone();
            let limit = me.period.min(phys_period[x.phys]);
            let ipi = isrs.ipi[v];
            let equation = match (&x.pseudo, ipi.is_some()) {
                (None, false) => "5+8",
                (None, true) => "5+5+8",
                (Some(_), false) if r == Replenish::Deferrable => "5+2x7",
                (Some(_), true) if r == Replenish::Deferrable => "5+5+2x7",
                (Some(_), false) => "5+7",
                (Some(_), true) => "5+5+7",
            };
            let physical_cpu = cfg.devices[x.phys].cpu;
            let mut row = VirqBound {
                name: x.name.clone(),
                vcpu: vcpu.clone(),
                managed: x.pseudo.is_some(),
                limit,
                equation,
                physical_cpu,
                physical_response: isrs.response(isrs.device[x.phys]),
                ipi_response: ipi.and_then(|i| isrs.response(i)),
                bound: None,
                paper_bound: None,
                serviceable: false,
                note: None,
            };
            let Some(wp) = row.physical_response else {
                row.note = Some(format!(
                    "Eq. 5 of {} on cpu {physical_cpu} exceeds its minimum inter-arrival time \
                     (or an IPI it waits for is unbounded)",
                    cfg.devices[x.phys].name
                ));
                return row;
            };
            let wp = match (ipi, row.ipi_response) {
                (None, _) => wp,
                (Some(_), Some(w)) => wp + w,
                (Some(_), None) => {
                    row.note = Some(format!(
                        "Eq. 5 of its IPI on cpu {c} exceeds the minimum inter-arrival time"
                    ));
                    return row;
                }
            };
            if wp >= limit {
                row.note = Some("Eq. 5 exceeds the minimum inter-arrival time".into());
                return row;
            }
            let rest = limit - wp;
            match &x.pseudo {
                Some(p) => {
                    let tied = entities.iter().any(|&e| {
                        e != Entity::Pseudo(v)
                            && matches!(e, Entity::Pseudo(_))
                            && entity_key(e) == p.rank
                    });
                    let need =
                        vint::pseudo_budget(&pcpu, j, p.period) + demand(&switching, p.period);
                    if tied {
                        row.note = Some(format!(
                            "its pseudo-VCPU shares priority rank {} with another: Eq. 6-7 need \
                             distinct priorities",
                            p.rank
                        ));
                    } else if p.budget < need {
                        row.note = Some(format!(
                            "pseudo-VCPU budget {} below the {} that Eq. 1/2{} asks for at a {} \
                             minimum inter-arrival time",
                            irqlab_core::Nanos(p.budget),
                            irqlab_core::Nanos(need),
                            if o > 0 { " plus switch overhead" } else { "" },
                            irqlab_core::Nanos(me.period)
                        ));
                    } else {
                        let bound = vint::virt_bound_vint(&pcpu, j, &pseudo, r, rest, &switching);
                        row.bound = bound.map(|w| wp + w);
                        if r == Replenish::Deferrable {
                            row.paper_bound =
                                vint::virt_response_vint(&pcpu, j, &pseudo, r, rest, &switching)
                                    .map(|w| wp + w);
                        }
                        if row.bound.is_none() {
                            row.note =
                                Some("the bound exceeds the minimum inter-arrival time".into());
                        }
                    }
                }
                None => {
                    if !server_ok(&vcpu) {
                        row.note = Some(format!("its VCPU {vcpu} fails Eq. 3"));
                    } else if let Some(b) = starved_by(me.vcpu, me.dsr_prio) {
                        row.note = Some(format!("its DSR is below the background task {b}"));
                    } else {
                        row.bound = vint::virt_response_base(&pcpu, j, &guest_budgets, rest)
                            .map(|w| wp + w);
                        if row.bound.is_none() {
                            row.note =
                                Some("Eq. 5 + 8 exceeds the minimum inter-arrival time".into());
                        }
                    }
                }
            }
            row.serviceable = row.bound.is_some();
            row
        })
        .collect();

    CpuBounds {
        cpu: c,
        replenish: if deferrable { "deferrable" } else { "sporadic" },
        switch_overhead: o,
        note: isrs.unbounded[c].clone(),
        servers,
        tasks: task_bounds,
        physical_interrupts,
        virtual_interrupts,
    }
}
