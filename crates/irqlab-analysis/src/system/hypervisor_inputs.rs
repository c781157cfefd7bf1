//! What the VINT bounds of `hypervisor_bounds` read from a hypervisor
//! configuration: the guest task kinds (Eq. 4 covers periodic compute
//! tasks), the VCPU switch overhead as interference `S(w)`, and every CPU's
//! physical ISRs and IPIs with their Eq. 5 responses, the IPI release
//! jitters iterated to their least fixed point (holistic analysis).
//!
//! Design principles: as `hypervisor_bounds` (whose module doc derives
//! each term): the equations live in `crate::vint`; this module
//! only maps the configuration onto them.

use crate::rta::Interferer;
use crate::vint::{self, Pcpu, PhysIrq};
use irqlab_system::config::{DeviceKind, Phase, Release, SimConfig};

/// A guest task as the analysis sees it.
pub(crate) enum Kind {
    Periodic {
        wcet: u64,
        period: u64,
        deadline: u64,
    },
    Background,
    Other,
}

pub(crate) fn task_kind(release: &Release, program: &[Phase]) -> Kind {
    match release {
        Release::Periodic {
            period, deadline, ..
        } => {
            let mut wcet = 0;
            for ph in program {
                match ph {
                    Phase::Compute { ns } => wcet += ns,
                    _ => return Kind::Other,
                }
            }
            Kind::Periodic {
                wcet,
                period: *period,
                deadline: deadline.unwrap_or(*period),
            }
        }
        Release::Once { .. } => match program {
            [Phase::Loop { count: None, body }]
                if body.iter().all(|p| matches!(p, Phase::Compute { .. })) =>
            {
                Kind::Background
            }
            _ => Kind::Other,
        },
    }
}

/// `S(w)`: the switch overhead in any window `w`, as interferers (see the
/// module doc). `sources` are `(period, multiplicity)`.
pub(crate) fn switch_interference(o: u64, vcpus: usize, sources: &[(u64, u64)]) -> Vec<Interferer> {
    if o == 0 {
        return Vec::new();
    }
    // ceil((w + T) / T) = ceil(w / T) + 1; the constant term counts once
    // for every w > 0
    let mut out = vec![Interferer::new(o * (vcpus as u64 + 1), u64::MAX / 4, 0)];
    out.extend(
        sources
            .iter()
            .map(|&(t, m)| Interferer::new(2 * o * m, t, t)),
    );
    out
}

/// A CPU's physical ISRs as the analysis sees them, and (name, is IPI).
pub(crate) type CpuIsrs = (Vec<PhysIrq>, Vec<(String, bool)>);

/// The physical ISRs of every CPU (device interrupts, then the IPIs that
/// deliver virtual interrupts to it) with their Eq. 5 responses.
pub(crate) struct PhysicalIsrs {
    pub(crate) cpus: Vec<CpuIsrs>,
    /// Per CPU, per ISR: Eq. 5, `None` above its minimum inter-arrival time
    /// (or when an IPI's jitter is unbounded).
    pub(crate) responses: Vec<Vec<Option<u64>>>,
    /// Device `d` -> (CPU, index).
    pub(crate) device: Vec<(usize, usize)>,
    /// Virtual interrupt `v` -> (CPU, index) of its IPI.
    pub(crate) ipi: Vec<Option<(usize, usize)>>,
    /// Per CPU: why nothing on it is bounded (an IPI without a bound on
    /// its release jitter), if so.
    pub(crate) unbounded: Vec<Option<String>>,
}

impl PhysicalIsrs {
    pub(crate) fn response(&self, (c, i): (usize, usize)) -> Option<u64> {
        self.responses[c][i]
    }
}

/// VINT Eq. 5 on every CPU, with IPI jitters iterated to a fixed point
/// (see the module doc). Responses only grow with jitters and jitters with
/// responses, so starting from zero the first fixed point is the least
/// safe one; an ISR whose response leaves its period makes the jitter of
/// the IPIs it sends, and so every ISR of their CPU, unbounded.
pub(crate) fn physical_isrs(cfg: &SimConfig, phys_period: &[u64]) -> PhysicalIsrs {
    let mut cpus: Vec<CpuIsrs> = vec![Default::default(); cfg.cpus];
    let mut device = Vec::with_capacity(cfg.devices.len());
    for (d, dev) in cfg.devices.iter().enumerate() {
        let isr = match dev.kind {
            DeviceKind::Generic { isr, .. } => isr,
            _ => 0, // refused in hypervisor_bounds
        };
        let (irqs, names) = &mut cpus[dev.cpu];
        device.push((dev.cpu, irqs.len()));
        irqs.push(PhysIrq {
            wcet: isr,
            period: phys_period[d],
            prio: dev.irq_priority,
            jitter: 0,
        });
        names.push((dev.name.clone(), false));
    }
    let mut ipi = vec![None; cfg.virqs.len()];
    for (v, x) in cfg.virqs.iter().enumerate() {
        let target = cfg.servers[x.vcpu].cpu;
        if cfg.devices[x.phys].cpu != target && cfg.ipi > 0 {
            let (irqs, names) = &mut cpus[target];
            ipi[v] = Some((target, irqs.len()));
            irqs.push(PhysIrq {
                wcet: cfg.ipi,
                period: phys_period[x.phys],
                prio: u32::MAX,
                jitter: 0,
            });
            names.push((format!("ipi->{}", x.name), true));
        }
    }
    let eq5 = |cpus: &[CpuIsrs], unbounded: &[Option<String>]| {
        cpus.iter()
            .zip(unbounded)
            .map(|((irqs, _), u)| {
                let p = Pcpu {
                    vcpus: Vec::new(),
                    tasks: Vec::new(),
                    phys: irqs.clone(),
                    virt: Vec::new(),
                };
                (0..irqs.len())
                    .map(|i| {
                        u.is_none()
                            .then(|| vint::phys_response(&p, i, irqs[i].period))
                            .flatten()
                    })
                    .collect::<Vec<_>>()
            })
            .collect::<Vec<_>>()
    };
    let mut unbounded: Vec<Option<String>> = vec![None; cfg.cpus];
    let mut responses = eq5(&cpus, &unbounded);
    // Each round either raises a jitter (bounded by a period) or marks a
    // CPU unbounded; the cap only guards against pathological inputs.
    for _ in 0..1_000 {
        let mut changed = false;
        for (v, x) in cfg.virqs.iter().enumerate() {
            let Some((c, i)) = ipi[v] else { continue };
            let (dc, di) = device[x.phys];
            match responses[dc][di] {
                Some(r) => {
                    let j = r - cpus[dc].0[di].wcet;
                    if cpus[c].0[i].jitter != j {
                        cpus[c].0[i].jitter = j;
                        changed = true;
                    }
                }
                None if unbounded[c].is_none() => {
                    unbounded[c] = Some(format!(
                        "the IPI of {} comes from {}, whose Eq. 5 on cpu {dc} exceeds its \
                         minimum inter-arrival time: its release jitter, and every bound on \
                         this CPU, is unbounded",
                        x.name, cfg.devices[x.phys].name
                    ));
                    changed = true;
                }
                None => {}
            }
        }
        if !changed {
            return PhysicalIsrs {
                cpus,
                responses,
                device,
                ipi,
                unbounded,
            };
        }
        responses = eq5(&cpus, &unbounded);
    }
    let why = "the IPI jitters did not reach a fixed point".to_string();
    PhysicalIsrs {
        responses: cpus
            .iter()
            .map(|(irqs, _)| vec![None; irqs.len()])
            .collect(),
        unbounded: vec![Some(why); cfg.cpus],
        cpus,
        device,
        ipi,
    }
}
