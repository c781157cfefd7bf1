//! A hypervisor model (`irqlab-model`, `machine.path: hypervisor`) on the
//! real VMM: the same YAML the analysis and the simulator read.
//!
//! Mapping (what cannot run for real is refused with the field and the
//! reason): one guest with one VCPU (its server: deferrable or sporadic
//! with the model's budget and period); each virtual interrupt becomes a
//! guest device whose DSR spends the virtual interrupt's `isr` plus its DSR
//! tasks' WCETs per event (the guest's own ISR is what it is); its physical
//! interrupt becomes a host event source (UDP datagrams to the device, one
//! every `min_interarrival` plus a uniform share of `jitter`); a
//! background task becomes the guest's busy loop; a managed virtual
//! interrupt gets a pseudo-VCPU (VINT Eq. 1, or Eq. 2 with unmanaged
//! interrupts on the VCPU, for `budget: auto`; §V-A order for
//! `priority: auto`); a periodic task becomes a task of the guest kernel's
//! scheduler (released by its LAPIC timer), and a DSR task's priority the
//! DSR's (at most `NTASK_MAX` periodic tasks; one DSR task's priority per
//! virtual interrupt, the highest of its DSR tasks).
//!
//! Design principle: a pure translation, tested without KVM.

use irqlab_core::Nanos;
use irqlab_model::model::{AutoDuration, AutoPriority, VmPolicy};
use irqlab_model::Model;

use crate::abi::{FLAG_BUSY, NDEV};
use crate::error::VmmError;
use crate::{DeviceConfig, DeviceKind, GuestTask, PseudoVcpu, Replenish, VcpuServer, VmmConfig};

/// A host event source feeding device `device`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Source {
    /// The physical interrupt's name.
    pub name: String,
    pub device: usize,
    pub min_interarrival: Nanos,
    pub jitter: Nanos,
    pub start: Nanos,
}

#[derive(Clone, Debug)]
pub struct ModelRun {
    pub cfg: VmmConfig,
    pub sources: Vec<Source>,
    /// The model's `simulation.duration`.
    pub duration: Nanos,
}

fn refuse(field: impl Into<String>, value: impl std::fmt::Display, rule: &str) -> VmmError {
    VmmError::config(field, value, rule)
}

/// Translate `m` for the VMM.
pub fn from_model(m: &Model) -> Result<ModelRun, VmmError> {
    let vms = m.vms.as_ref().ok_or_else(|| {
        refuse(
            "machine.path",
            format!("{:?}", m.machine.path),
            "the VMM runs hypervisor models (path: hypervisor, with vms)",
        )
    })?;
    if vms.guests.len() != 1 || vms.guests[0].vcpus.len() != 1 {
        return Err(refuse(
            "vms.guests",
            format!(
                "{} guests, {} VCPUs in the first",
                vms.guests.len(),
                vms.guests.first().map_or(0, |g| g.vcpus.len())
            ),
            "the VMM runs one guest with one VCPU",
        ));
    }
    let g = &vms.guests[0];
    let v = &g.vcpus[0];
    let (budget, period) = (v.budget.0, v.period.0);
    let vcpu = match v.policy {
        VmPolicy::Deferrable => VcpuServer::Deferrable { budget, period },
        VmPolicy::Sporadic => VcpuServer::Sporadic { budget, period },
    };
    let vcpu_policy = match v.policy {
        VmPolicy::Deferrable => Replenish::Deferrable,
        VmPolicy::Sporadic => Replenish::Sporadic,
    };
    let mut flags = 0;
    let mut tasks = Vec::new();
    for (i, t) in v.tasks.iter().enumerate() {
        let is_dsr = g
            .virtual_interrupts
            .iter()
            .any(|x| x.dsr.iter().any(|n| n == &t.name));
        if t.background {
            flags |= FLAG_BUSY;
        } else if !is_dsr {
            let field = format!("vms.guests[0].vcpus[0].tasks[{i}]");
            let (Some(period), Some(wcet)) = (t.period, t.wcet) else {
                return Err(refuse(
                    field,
                    &t.name,
                    "a guest task is periodic (period and wcet), background, or a DSR task",
                ));
            };
            tasks.push(GuestTask {
                name: t.name.clone(),
                priority: u64::from(t.priority),
                period: period.0,
                wcet: wcet.0,
                offset: t.offset.map_or(Nanos::ZERO, |o| o.0),
            });
        }
    }
    crate::tasks::check(&tasks).map_err(|e| {
        refuse(
            "vms.guests[0].vcpus[0].tasks",
            format!("{} periodic", tasks.len()),
            &e.to_string(),
        )
    })?;
    if g.virtual_interrupts.len() > NDEV {
        return Err(refuse(
            "vms.guests[0].virtual_interrupts",
            g.virtual_interrupts.len(),
            &format!("the guest kernel has {NDEV} device slots"),
        ));
    }
    let task_wcet = |name: &str| {
        v.tasks
            .iter()
            .find(|t| t.name == name)
            .and_then(|t| t.wcet)
            .map_or(Nanos::ZERO, |d| d.0)
    };
    let eoi_of =
        |x: &irqlab_model::model::VirtInterrupt| x.eoi.or(vms.eoi).map_or(Nanos::ZERO, |d| d.0);
    let mut devices = Vec::new();
    let mut dsr_costs = Vec::new();
    let mut dsr_priorities = Vec::new();
    let mut sources = Vec::new();
    let mut vint = Vec::new();
    for (d, x) in g.virtual_interrupts.iter().enumerate() {
        let field = format!("vms.guests[0].virtual_interrupts[{d}]");
        let p = vms
            .physical_interrupts
            .iter()
            .find(|p| p.name == x.physical)
            .ok_or_else(|| {
                refuse(
                    format!("{field}.physical"),
                    &x.physical,
                    "no such physical interrupt",
                )
            })?;
        if sources.iter().any(|s: &Source| s.name == p.name) {
            return Err(refuse(
                format!("{field}.physical"),
                &x.physical,
                "on the VMM a physical interrupt feeds one virtual interrupt",
            ));
        }
        let dsr: Nanos = x
            .dsr
            .iter()
            .map(|n| task_wcet(n))
            .fold(Nanos::ZERO, |a, b| a + b);
        devices.push(DeviceConfig {
            name: x.name.clone(),
            kind: DeviceKind::Udp {
                bind: std::net::SocketAddr::from(([127, 0, 0, 1], 0)),
            },
        });
        dsr_costs.push(x.isr.0 + dsr);
        // The DSR runs at its most urgent DSR task's priority (above every
        // task when it has none).
        dsr_priorities.push(
            x.dsr
                .iter()
                .map(|n| u64::from(dsr_prio(v, n)))
                .max()
                .filter(|&p| p > 0)
                .unwrap_or_else(|| crate::tasks::default_dsr_priority(d)),
        );
        sources.push(Source {
            name: p.name.clone(),
            device: d,
            min_interarrival: p.min_interarrival.0,
            jitter: p.jitter.map_or(Nanos::ZERO, |j| j.0),
            start: p.start.map_or(Nanos::ZERO, |s| s.0),
        });
        let t_i = x.min_interarrival.map_or(p.min_interarrival.0, |t| t.0);
        vint.push(match &x.vint {
            None => None,
            Some(s) => {
                let t_p = s.period.map_or(t_i, |t| t.0);
                let budget = match s.budget {
                    AutoDuration::Value(b) => b.0,
                    AutoDuration::Auto => {
                        // Eq. 1; Eq. 2 adds the ISRs of the VCPU's unmanaged
                        // interrupts to every instance.
                        let extra = g
                            .virtual_interrupts
                            .iter()
                            .filter(|u| u.vint.is_none())
                            .fold(Nanos::ZERO, |a, u| a + u.isr.0 + eoi_of(u));
                        PseudoVcpu::eq1_budget(x.isr.0 + eoi_of(x) + dsr + extra, t_i, t_p)
                    }
                };
                // §V-A: above the VCPU; higher priority -> smaller rank.
                let rank = match s.priority {
                    AutoPriority::Value(p) => 1000u64.saturating_sub(u64::from(p)).max(1),
                    AutoPriority::Auto => {
                        let mine = x.dsr.iter().map(|n| dsr_prio(v, n)).max().unwrap_or(0);
                        1 + g
                            .virtual_interrupts
                            .iter()
                            .filter(|u| u.vint.is_some())
                            .filter(|u| {
                                u.dsr.iter().map(|n| dsr_prio(v, n)).max().unwrap_or(0) > mine
                            })
                            .count() as u64
                    }
                };
                Some(PseudoVcpu {
                    budget,
                    period: t_p,
                    min_interarrival: t_i,
                    policy: s.policy.map_or(vcpu_policy, |p| match p {
                        VmPolicy::Deferrable => Replenish::Deferrable,
                        VmPolicy::Sporadic => Replenish::Sporadic,
                    }),
                    rank,
                })
            }
        });
    }
    Ok(ModelRun {
        cfg: VmmConfig {
            vcpu,
            flags,
            devices,
            dsr_costs,
            dsr_priorities,
            tasks,
            vint,
            ..Default::default()
        },
        sources,
        duration: m.simulation.duration.0,
    })
}

fn dsr_prio(v: &irqlab_model::model::GuestVcpu, name: &str) -> u32 {
    v.tasks
        .iter()
        .find(|t| t.name == name)
        .map_or(0, |t| t.priority)
}

#[cfg(test)]
mod tests {
    use super::*;

    const CASE: &str = include_str!("../../../python/irqlab/scenarios/vint-case.yaml");

    fn load(text: &str) -> Model {
        irqlab_model::load_str(text).expect("valid model").0
    }

    #[test]
    fn the_case_study_maps_by_hand() {
        let r = from_model(&load(CASE)).expect("maps");
        // MPlayer, a periodic task of the guest's scheduler; netperf-rx the
        // DSR at its priority, above it.
        assert_eq!(
            r.cfg.tasks,
            vec![GuestTask {
                name: "mplayer".into(),
                priority: 5,
                period: Nanos::from_us(33_367),
                wcet: Nanos::from_ms(6),
                offset: Nanos::ZERO,
            }]
        );
        assert_eq!(r.cfg.dsr_priorities, vec![10]);
        assert!(matches!(
            r.cfg.vcpu,
            VcpuServer::Deferrable { budget, period } if budget == Nanos::from_ms(2) && period == Nanos::from_ms(10)
        ));
        assert_eq!(r.cfg.flags, FLAG_BUSY, "the busy loop");
        // isr 10 us + netperf-rx 30 us.
        assert_eq!(r.cfg.dsr_costs, vec![Nanos::from_us(40)]);
        assert_eq!(
            r.sources,
            vec![Source {
                name: "nic".into(),
                device: 0,
                min_interarrival: Nanos::from_ms(1),
                jitter: Nanos::from_us(500),
                start: Nanos::ZERO,
            }]
        );
        assert_eq!(
            r.cfg.vint,
            vec![Some(PseudoVcpu {
                budget: Nanos::from_ms(2),
                period: Nanos::from_ms(10),
                min_interarrival: Nanos::from_us(100),
                policy: Replenish::Deferrable,
                rank: 1,
            })]
        );
        assert_eq!(r.duration, Nanos::from_secs(10));
    }

    #[test]
    fn auto_budget_is_eq1() {
        let text = CASE.replace(
            "budget: 2ms, priority: auto}",
            "budget: auto, priority: auto}",
        );
        let r = from_model(&load(&text)).expect("maps");
        // ceil(10 ms / 100 us) = 100 instances of isr 10 + eoi 2 + dsr 30 us.
        let p = r.cfg.vint[0].expect("managed");
        assert_eq!(p.budget, Nanos::from_us(100 * 42));
    }

    #[test]
    fn more_periodic_tasks_than_the_guest_runs_are_refused() {
        let five: String = (0..5)
            .map(|i| {
                format!(
                    "            - {{name: t{i}, priority: {}, wcet: 1ms, period: 50ms}}\n",
                    2 + i
                )
            })
            .collect();
        let text = CASE.replace(
            "            - {name: mplayer, priority: 5, wcet: 6ms, period: 33.367ms}\n",
            &five,
        );
        let e = from_model(&load(&text)).unwrap_err().to_string();
        assert!(
            e.contains("vcpus[0].tasks") && e.contains("at most 4"),
            "{e}"
        );
    }

    #[test]
    fn non_hypervisor_models_are_refused() {
        let m = load(include_str!(
            "../../../python/irqlab/scenarios/quest-table1.yaml"
        ));
        let e = from_model(&m).unwrap_err().to_string();
        assert!(e.contains("machine.path"), "{e}");
    }
}
