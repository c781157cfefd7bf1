//! A hypervisor model (`irqlab-model`, `machine.path: hypervisor`) on the
//! real VMM: the same YAML the analysis and the simulator read, resolved
//! once by `irqlab-system` (`irqlab_system::resolve`); this module maps
//! that resolved system onto the VMM and reads the model no further.
//!
//! Mapping (what cannot run for real is refused with the model's field --
//! from the resolved system's `origin` -- and the reason): one guest with
//! one VCPU (its server: deferrable or sporadic with the model's budget and
//! period); each virtual interrupt becomes a guest device whose DSR spends
//! the virtual interrupt's `isr` plus its DSR tasks' WCETs per event (the
//! guest's own ISR is what it is); its physical interrupt becomes a host
//! event source (UDP datagrams to the device, one every `min_interarrival`
//! plus a uniform share of `jitter`); a background task becomes the
//! guest's busy loop; a managed virtual interrupt gets the pseudo-VCPU the
//! resolved system chose (budget by VINT Eq. 1/2 for `budget: auto`, rank
//! by the §V-A order for `priority: auto`: the simulator's and the
//! analysis' values); a periodic task becomes a task of the guest kernel's
//! scheduler (released by its LAPIC timer), and a DSR task's priority the
//! DSR's (at most `NTASK_MAX` periodic tasks; one DSR task's priority per
//! virtual interrupt, the highest of its DSR tasks).
//!
//! Design principle: a pure translation, tested without KVM.

use std::path::Path;

use irqlab_core::Nanos;
use irqlab_model::Model;
use irqlab_system::config::{DeviceKind as SysDevice, InterruptPath, Phase, PolicyCfg, Release};
use irqlab_system::{Resolved, SystemError};

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

/// A lowering error of the resolved system, with its field path.
fn system_error(e: SystemError) -> VmmError {
    match e {
        SystemError::Config { path, value, rule } => VmmError::config(path, value, rule),
        e => VmmError::config("(model)", "", e.to_string()),
    }
}

/// Resolve `m` (`base`: the model file's directory) and translate it for
/// the VMM. A model of another machine is refused before it is resolved
/// (its lowering's own complaints are not the VMM's to report).
pub fn from_model(m: &Model, base: &Path) -> Result<ModelRun, VmmError> {
    if m.machine.path != irqlab_model::model::PathKind::Hypervisor {
        return Err(not_hypervisor(format!("{:?}", m.machine.path)));
    }
    from_system(&irqlab_system::resolve(m, base).map_err(system_error)?)
}

fn not_hypervisor(path: String) -> VmmError {
    refuse(
        "machine.path",
        path,
        "the VMM runs hypervisor models (path: hypervisor, with vms)",
    )
}

/// Translate a resolved hypervisor system for the VMM.
pub fn from_system(r: &Resolved) -> Result<ModelRun, VmmError> {
    let (c, o) = (&r.config, &r.origin);
    if c.path != InterruptPath::Hypervisor {
        return Err(not_hypervisor(format!("{:?}", c.path)));
    }
    let g = match o.guests.as_slice() {
        [g] if g.servers.len() == 1 => g,
        _ => {
            return Err(refuse(
                "vms.guests",
                format!(
                    "{} guests, {} VCPUs in the first",
                    o.guests.len(),
                    o.guests.first().map_or(0, |g| g.servers.len())
                ),
                "the VMM runs one guest with one VCPU",
            ))
        }
    };
    let s = g.servers[0];
    let server = &c.servers[s];
    let vcpu = match server.policy {
        PolicyCfg::Deferrable { budget, period } => VcpuServer::Deferrable {
            budget: Nanos(budget),
            period: Nanos(period),
        },
        PolicyCfg::Sporadic { budget, period, .. } => VcpuServer::Sporadic {
            budget: Nanos(budget),
            period: Nanos(period),
        },
        _ => {
            return Err(refuse(
                format!("{}.policy", o.servers[s].path),
                &server.name,
                "a VCPU on the VMM is a deferrable or sporadic server",
            ))
        }
    };
    let mut flags = 0;
    let mut tasks = Vec::new();
    for (t, to) in c.tasks.iter().zip(&o.tasks).filter(|(t, _)| t.server == s) {
        if to.background {
            flags |= FLAG_BUSY;
            continue;
        }
        match (&t.release, t.program.as_slice()) {
            (Release::Periodic { period, offset, .. }, [Phase::Compute { ns }]) => {
                tasks.push(GuestTask {
                    name: t.name.clone(),
                    priority: u64::from(t.priority),
                    period: Nanos(*period),
                    wcet: Nanos(*ns),
                    offset: Nanos(*offset),
                })
            }
            _ => {
                return Err(refuse(
                    to.path.clone(),
                    &t.name,
                    "a guest task is periodic (period and wcet), background, or a DSR task",
                ))
            }
        }
    }
    let vcpu_path = &o.servers[s].path;
    crate::tasks::check(&tasks).map_err(|e| {
        refuse(
            format!("{vcpu_path}.tasks"),
            format!("{} periodic", tasks.len()),
            &e.to_string(),
        )
    })?;
    if g.virqs.len() > NDEV {
        return Err(refuse(
            format!("{}.virtual_interrupts", g.path),
            g.virqs.len(),
            &format!("the guest kernel has {NDEV} device slots"),
        ));
    }
    let mut devices = Vec::new();
    let mut dsr_costs = Vec::new();
    let mut dsr_priorities = Vec::new();
    let mut sources: Vec<Source> = Vec::new();
    let mut vint = Vec::new();
    for (d, &k) in g.virqs.iter().enumerate() {
        let (x, xo) = (&c.virqs[k], &o.virqs[k]);
        let p = &c.devices[x.phys];
        let SysDevice::Generic {
            min_interarrival,
            jitter,
            start,
            ..
        } = p.kind
        else {
            return Err(refuse(
                format!("{}.physical", xo.path),
                &p.name,
                "a physical interrupt of the hypervisor machine",
            ));
        };
        if sources.iter().any(|s| s.name == p.name) {
            return Err(refuse(
                format!("{}.physical", xo.path),
                &p.name,
                "on the VMM a physical interrupt feeds one virtual interrupt",
            ));
        }
        devices.push(DeviceConfig {
            name: x.name.clone(),
            kind: DeviceKind::Udp {
                bind: std::net::SocketAddr::from(([127, 0, 0, 1], 0)),
            },
        });
        dsr_costs.push(Nanos(x.isr) + Nanos(x.dsr));
        // The DSR runs at its most urgent DSR task's priority (above every
        // task when it has none).
        dsr_priorities.push(
            xo.dsr_top
                .filter(|&p| p > 0)
                .map_or_else(|| crate::tasks::default_dsr_priority(d), u64::from),
        );
        sources.push(Source {
            name: p.name.clone(),
            device: d,
            min_interarrival: Nanos(min_interarrival),
            jitter: Nanos(jitter),
            start: Nanos(start),
        });
        let t_i = x.min_interarrival.unwrap_or(min_interarrival);
        vint.push(x.pseudo.as_ref().map(|p| PseudoVcpu {
            budget: Nanos(p.budget),
            period: Nanos(p.period),
            min_interarrival: Nanos(t_i),
            policy: if p.deferrable {
                Replenish::Deferrable
            } else {
                Replenish::Sporadic
            },
            rank: p.rank,
        }));
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
        duration: Nanos(c.duration),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const CASE: &str = include_str!("../../../python/irqlab/scenarios/vint-case.yaml");

    fn from_model_(m: &Model) -> Result<ModelRun, VmmError> {
        from_model(m, Path::new(""))
    }

    fn load(text: &str) -> Model {
        irqlab_model::load_str(text).expect("valid model").0
    }

    #[test]
    fn the_case_study_maps_by_hand() {
        let r = from_model_(&load(CASE)).expect("maps");
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
        let r = from_model_(&load(&text)).expect("maps");
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
        let e = from_model_(&load(&text)).unwrap_err().to_string();
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
        let e = from_model_(&m).unwrap_err().to_string();
        assert!(e.contains("machine.path"), "{e}");
    }
}
