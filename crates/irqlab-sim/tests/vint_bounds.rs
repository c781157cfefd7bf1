//! Cross-check of the VINT analyses with the simulator (VINT §VI, issue 8):
//! on random systems from the Table II generator (scaled down so that each
//! simulates quickly), no simulated task response time or interrupt
//! handling time exceeds the bound of Eq. 4 / Eq. 5 + 7 / Eq. 5 + 8
//! whenever the analysis calls the task set schedulable or the flow
//! serviceable -- with and without vINT, deferrable and sporadic VCPUs.

use irqlab_analysis::gen::{Rng, TableII};
use irqlab_analysis::vint::{
    budget_search, phys_response, pseudo_vcpus, task_response, unmanaged_dsr_tasks, vcpus_pass,
    virt_response_base, virt_response_vint, Pcpu, Replenish,
};
use irqlab_sim::config::{
    DeviceCfg, DeviceKind, Phase, PolicyCfg, PseudoCfg, Release, ServerCfg, SimConfig, TaskCfg,
    VirqCfg,
};
use irqlab_sim::simulate;
use proptest::prelude::*;

const MS: u64 = 1_000_000;
const US: u64 = 1_000;

fn to_sim(p: &Pcpu, budgets: &[u64], r: Replenish, vint: bool, ratio: u64) -> SimConfig {
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
                offset: 0,
                jobs: None,
            },
            program: vec![Phase::Compute { ns: t.wcet }],
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
                start: 0,
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
        path: irqlab_sim::config::InterruptPath::Hypervisor,
        duration: 40 * MS,
        seed: 0,
        window: 40 * MS,
        servers,
        tasks,
        devices,
        classes: vec![],
        xhci: vec![],
        virqs,
        ipi: 0,
        linux: Default::default(),
        trace: Default::default(),
        overhead: Default::default(),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]
    #[test]
    fn simulation_within_vint_bounds(seed in any::<u64>(), ds in any::<bool>(), vint in any::<bool>()) {
        // Table II scaled: 2 ms VCPU periods, 3-5 ms interrupts, 10-20 ms tasks
        let params = TableII {
            vcpus: 2,
            phys_per_pcpu: 4,
            vcpu_period: 2 * MS,
            irq_interarrival: (3 * MS, 5 * MS),
            task_period: (10 * MS, 20 * MS),
            utilization_per_vcpu: 0.2,
            ..TableII::default()
        };
        let mut p = params.generate(&mut Rng::new(seed));
        for v in &mut p.virt {
            v.managed = vint;
        }
        let r = if ds { Replenish::Deferrable } else { Replenish::Sporadic };
        let pseudo = pseudo_vcpus(&p, 1, 1);
        let b = budget_search(&p, &pseudo, r, 10 * US);
        prop_assume!(b > 0);
        let budgets = vec![b; p.vcpus.len()];
        prop_assume!(vcpus_pass(&p, &budgets, &pseudo, r));
        let (m, _) = simulate(to_sim(&p, &budgets, r, vint, 1)).expect("valid");
        let dsrs = unmanaged_dsr_tasks(&p);
        for (i, t) in p.tasks.iter().enumerate() {
            if let Some(bound) = task_response(&p, i, &budgets, &dsrs) {
                let got = m.tasks[i].response.max.unwrap_or(0);
                prop_assert!(got <= bound, "task {} response {} > Eq. 4 bound {} ({:?})", i, got, bound, t);
            }
        }
        for (j, v) in p.virt.iter().enumerate() {
            let limit = 100 * MS;
            let Some(wp) = phys_response(&p, v.phys, limit) else { continue };
            let wv = if vint {
                virt_response_vint(&p, j, &pseudo, r, limit)
            } else {
                virt_response_base(&p, j, &budgets, limit)
            };
            if let Some(wv) = wv {
                let got = m.virqs[j].handling.max.unwrap_or(0);
                prop_assert!(got <= wp + wv, "flow {} handled in {} > bound {} + {}", j, got, wp, wv);
            }
        }
    }
}
