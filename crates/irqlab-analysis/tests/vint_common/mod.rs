//! Shared by the VINT cross-checks (tests/vint_bounds.rs,
//! tests/vint_serviceability.rs) and the bench example
//! (examples/vint_serviceability.rs): one analysed PCPU of the Table II
//! generator as a simulator configuration.

#![allow(dead_code)] // each user takes what it needs

use irqlab_analysis::gen::{Rng, TableII};
use irqlab_analysis::vint::{
    evaluate, flow_bound, pseudo_vcpus, task_response, unmanaged_dsr_tasks, Pcpu, Replenish,
    Verdict,
};
use irqlab_sim::config::{
    DeviceCfg, DeviceKind, InterruptPath, Phase, PolicyCfg, PseudoCfg, Release, ServerCfg,
    SimConfig, TaskCfg, VirqCfg,
};
use irqlab_sim::simulate;

pub const MS: u64 = 1_000_000;
pub const US: u64 = 1_000;

/// VINT Table II scaled so that a system simulates in milliseconds: two
/// VCPUs of 2 ms periods, four physical interrupts every 3-5 ms, tasks of
/// 10-20 ms using `utilization` of each VCPU.
#[allow(dead_code)] // not every user of this module needs it
pub fn scaled_table2(utilization: f64) -> TableII {
    TableII {
        vcpus: 2,
        phys_per_pcpu: 4,
        vcpu_period: 2 * MS,
        irq_interarrival: (3 * MS, 5 * MS),
        task_period: (10 * MS, 20 * MS),
        utilization_per_vcpu: utilization,
        ..TableII::default()
    }
}

/// When the tasks' first jobs and the physical interrupts' first arrivals
/// come.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Phasing {
    /// All at 0: the critical instant of the tasks and of the ISRs.
    Synchronous,
    /// Each uniformly within its own period, drawn from this seed.
    Random(u64),
}

impl Phasing {
    /// Offset of item `i` (tasks, then devices from 1 << 32) of `period`.
    fn offset(self, i: u64, period: u64) -> u64 {
        match self {
            Phasing::Synchronous => 0,
            Phasing::Random(seed) => Rng::stream(seed, i).below(period),
        }
    }
}

/// PCPU `p` on simulated CPU 0 for `duration` ns: its VCPUs as deferrable
/// or sporadic servers with `budgets` (ranks by analysis priority, below
/// every pseudo-VCPU), its tasks periodic, its physical interrupts as
/// strictly periodic devices (ISR only; their handling is their virtual
/// interrupts), first releases and arrivals by `phasing`, its virtual
/// interrupts with ISR and DSR -- and, with `vint`, each with the
/// pseudo-VCPU of `pseudo_vcpus(p, ratio, 1)`.
#[allow(clippy::too_many_arguments)]
pub fn to_sim(
    p: &Pcpu,
    budgets: &[u64],
    r: Replenish,
    vint: bool,
    ratio: u64,
    duration: u64,
    phasing: Phasing,
) -> SimConfig {
    let nv = p.vcpus.len() as u64;
    let servers = p
        .vcpus
        .iter()
        .zip(budgets)
        .map(|(v, &b)| ServerCfg {
            name: format!("v{}", v.prio),
            cpu: 0,
            policy: match r {
                Replenish::Deferrable => PolicyCfg::Deferrable {
                    budget: b,
                    period: v.period,
                },
                Replenish::Sporadic => PolicyCfg::Sporadic {
                    budget: b,
                    period: v.period,
                    max_repl: 64,
                    background: false,
                },
            },
            // higher analysis priority -> smaller rank; pseudo-VCPUs use ranks below 1000
            rank: Some(1_000 + nv - v.prio as u64),
        })
        .collect();
    let tasks = p
        .tasks
        .iter()
        .enumerate()
        .map(|(i, t)| TaskCfg {
            name: format!("t{i}"),
            server: t.vcpu,
            priority: t.prio,
            release: Release::Periodic {
                period: t.period,
                deadline: None,
                offset: phasing.offset(i as u64, t.period),
                jobs: None,
            },
            program: vec![Phase::Compute { ns: t.wcet }],
            abort_on_miss: false,
        })
        .collect();
    let devices = p
        .phys
        .iter()
        .enumerate()
        .map(|(i, x)| DeviceCfg {
            name: format!("p{i}"),
            irq_priority: x.prio,
            cpu: 0,
            class: 0,
            omega_main: 0,
            kind: DeviceKind::Generic {
                min_interarrival: x.period,
                jitter: 0,
                isr: x.wcet,
                dsr: 0,
                start: phasing.offset((1 << 32) + i as u64, x.period),
            },
        })
        .collect();
    let mut sys = p.clone();
    for v in &mut sys.virt {
        v.managed = vint;
    }
    let pseudo = pseudo_vcpus(&sys, ratio, 1);
    let virqs = p
        .virt
        .iter()
        .enumerate()
        .map(|(k, v)| VirqCfg {
            name: format!("vi{k}"),
            phys: v.phys,
            vcpu: v.vcpu,
            isr: v.isr,
            eoi: 0,
            dsr: v.dsr,
            dsr_priority: v.dsr_prio,
            priority: v.prio,
            min_interarrival: Some(v.period),
            pseudo: pseudo
                .iter()
                .position(|q| q.irq == k)
                .map(|rank| PseudoCfg {
                    deferrable: r == Replenish::Deferrable,
                    budget: pseudo[rank].budget,
                    period: pseudo[rank].period,
                    rank: 1 + rank as u64,
                }),
        })
        .collect();
    SimConfig {
        cpus: 1,
        path: InterruptPath::Hypervisor,
        duration,
        seed: 0,
        window: duration,
        servers,
        tasks,
        devices,
        classes: vec![],
        xhci: vec![],
        virqs,
        ipi: 0,
        switch_overhead: 0,
        dispatch_delay: 0,
        switch_costs: Default::default(),
        linux: Default::default(),
        trace: Default::default(),
        overhead: Default::default(),
        max_completions: 10_000,
        max_window_values: irqlab_sim::config::default_max_window_values(),
        records: Default::default(),
    }
}

/// What the analysis and the simulator say about one PCPU under one scheme.
#[derive(Clone, Debug)]
pub struct SchemeCheck {
    /// VINT §VII-A budget search, Eq. 3-4 (task set), Eq. 5-8 (interrupt
    /// set; `serviceable` by the paper's test, `serviceable_safe` by bounds
    /// valid for every phasing).
    pub analysis: Verdict,
    /// Definition 3 in the simulation: every flow that completed did so
    /// within its minimum inter-arrival time, and none is still pending
    /// but the last arrival of each interrupt.
    pub sim_serviceable: bool,
    /// VCPUs with at least one late flow in the simulation.
    pub late_vcpus: usize,
    /// Largest simulated handling time over the interrupt's minimum
    /// inter-arrival time (ratio; above 1 is a miss).
    pub worst_ratio: f64,
    /// Simulated task response or interrupt handling time above a bound
    /// the analysis calls safe for every phasing (Eq. 4 for tasks of a
    /// schedulable set; for flows serviceable by it, Eq. 5 + 8 without
    /// vINT, Eq. 5 + `vint::virt_bound_vint` with).
    pub violations: Vec<String>,
    /// Simulated handling times above the paper's Eq. 5 + 7 where the
    /// paper's test calls the flow serviceable (with deferrable
    /// pseudo-VCPUs it is not a bound for every phasing).
    pub paper_violations: Vec<String>,
}

/// Analyse PCPU `p` under `r` with or without vINT (every virtual interrupt
/// managed, pseudo-VCPU period = the interrupt's), exactly as the sweeps of
/// VINT Figures 4-9 do (`vint::evaluate`, 1 us budget step), then simulate
/// it for `duration` ns with the budget found and compare.
pub fn check(p: &Pcpu, r: Replenish, vint: bool, duration: u64, phasing: Phasing) -> SchemeCheck {
    let analysis = evaluate(p, r, vint, (1, 1), US);
    let mut sys = p.clone();
    for v in &mut sys.virt {
        v.managed = vint;
    }
    let pseudo = pseudo_vcpus(&sys, 1, 1);
    let budgets = vec![analysis.budget; sys.vcpus.len()];
    // a VCPU the search leaves no budget gets 1 ns, the least a server
    // takes: it then runs next to nothing, as the analysis assumes
    let sim_budgets: Vec<u64> = budgets.iter().map(|&b| b.max(1)).collect();
    let (m, _) =
        simulate(to_sim(&sys, &sim_budgets, r, vint, 1, duration, phasing)).expect("valid config");
    let (mut violations, mut paper_violations) = (Vec::new(), Vec::new());
    let dsrs = unmanaged_dsr_tasks(&sys);
    if analysis.schedulable {
        // Eq. 3 passed: every VCPU and pseudo-VCPU receives its budget
        // within its period
        for (k, s) in m.servers.iter().enumerate() {
            // the VCPUs first, in order, then the pseudo-VCPUs (`to_sim`)
            let period = sys.vcpus.get(k).map_or(u64::MAX, |v| v.period);
            let max = s.response.as_ref().and_then(|d| d.max).unwrap_or(0);
            let misses = s.budget_misses.unwrap_or(0);
            if misses > 0 || max > period {
                violations.push(format!(
                    "VCPU {}: {misses} budget misses, response {max} (period {period})",
                    s.name
                ));
            }
        }
        for (i, t) in m.tasks.iter().enumerate() {
            let bound = task_response(&sys, i, &budgets, &dsrs).expect("schedulable");
            let got = t.response.max.unwrap_or(0);
            if got > bound {
                violations.push(format!("task {i}: response {got} > Eq. 4 bound {bound}"));
            }
        }
    }
    let mut late = vec![false; sys.vcpus.len()];
    let mut worst_ratio = 0.0f64;
    let mut sim_serviceable = true;
    for (j, (v, x)) in sys.virt.iter().zip(&m.virqs).enumerate() {
        let limit = v.period.min(sys.phys[v.phys].period);
        let max = x.handling.max.unwrap_or(0);
        worst_ratio = worst_ratio.max(max as f64 / limit as f64);
        if x.serviceable < x.handled || x.arrivals > x.handled + 1 {
            sim_serviceable = false;
            late[v.vcpu] = true;
        }
        // the bounds of a flow the analysis calls serviceable
        for (safe, out) in [(true, &mut violations), (false, &mut paper_violations)] {
            if let Some(bound) = flow_bound(&sys, j, &budgets, &pseudo, r, safe) {
                if max > bound {
                    out.push(format!(
                        "flow {j}: handled in {max} > {} bound {bound}",
                        match (vint, safe) {
                            (false, _) => "Eq. 5 + 8",
                            (true, false) => "Eq. 5 + 7",
                            (true, true) => "Eq. 5 + virt_bound_vint",
                        }
                    ));
                }
            }
        }
    }
    SchemeCheck {
        analysis,
        sim_serviceable,
        late_vcpus: late.iter().filter(|&&l| l).count(),
        worst_ratio,
        violations,
        paper_violations,
    }
}
