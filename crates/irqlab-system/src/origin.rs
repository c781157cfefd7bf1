//! Where each part of the resolved system came from in the model, and the
//! few facts of the model a real back end needs that the simulation does
//! not: a back end that refuses what it cannot carry out names the model's
//! field (`vcpus[2].policy`, `vms.guests[0].vcpus[0].tasks[1]`), and the
//! runtime needs e.g. a device's event source or kernel upcall, which the
//! simulator models the same way whatever they are.
//!
//! Design principles: `Origin` runs parallel to `SimConfig` (one entry per
//! server, task, device, virtual interrupt, in the same order), so the
//! resolved configuration itself -- the simulator's input contract, its
//! JSON and its golden files -- is unchanged; it is built by the same
//! lowering (`lower::resolve`) from the same validated model, and holds no
//! value the configuration already has.

use irqlab_model::model::{Ksoftirqd, PathKind, Source, Step, Upcall, UpcallMode, VcpuKind};
use irqlab_model::{class_names, Model};
use serde::{Deserialize, Serialize};

use crate::config::SimConfig;

/// A resolved system with the origin of its parts: what the back ends that
/// run it for real (the runtime, the VMM) start from.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Resolved {
    /// The resolved system as the model states it. Measured `costs:` are
    /// not folded in: they are the simulator's and the analysis' picture
    /// of a machine's own overheads, which a real run pays by itself
    /// (`lower::from_model` folds them in).
    pub config: SimConfig,
    pub origin: Origin,
}

/// The model's side of a resolved system (see the module doc).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Origin {
    /// One per `config.servers`.
    pub servers: Vec<ServerOrigin>,
    /// One per `config.tasks`.
    pub tasks: Vec<TaskOrigin>,
    /// One per `config.devices`.
    pub devices: Vec<DeviceOrigin>,
    /// How many of `config.classes`, from the first, are the model's own
    /// I/O classes; the rest are its user upcalls' (one per upcall, named
    /// by `irqlab_model::handling::upcall_server`).
    pub model_classes: usize,
    /// One per `config.virqs`.
    pub virqs: Vec<VirqOrigin>,
    /// The hypervisor machine's guests, in model order.
    pub guests: Vec<GuestOrigin>,
    /// `machine.linux.ksoftirqd` when the model states a SCHED_FIFO
    /// priority (the resolved `linux.ksoftirqd_rank` is 50 both when it
    /// states 50 and when it states nothing).
    pub ksoftirqd_fifo: Option<u32>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ServerOrigin {
    /// `vcpus[i]`, `devices[i].upcall` or `vms.guests[g].vcpus[v]`.
    pub path: String,
    /// An I/O VCPU (`kind: io`).
    pub io: bool,
    /// The server of device `i`'s user upcall.
    pub upcall_of: Option<usize>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TaskOrigin {
    /// `tasks[i]` or `vms.guests[g].vcpus[v].tasks[t]`.
    pub path: String,
    /// A background guest task (a busy loop), lowered to a loop of
    /// compute chunks.
    pub background: bool,
    /// For each `Phase::Io` of the program, depth first: the model wrote a
    /// `write` step (else a `read`).
    pub writes: Vec<bool>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct DeviceOrigin {
    /// `devices[i]` or `vms.physical_interrupts[k]`.
    pub path: String,
    /// How a generic device's events are produced for real.
    pub source: Option<Source>,
    /// The device's upcall (user or kernel mode) as the model states it.
    pub upcall: Option<Upcall>,
    /// The receive ring, when the model states one.
    pub ring: Option<usize>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct VirqOrigin {
    /// `vms.guests[g].virtual_interrupts[k]`.
    pub path: String,
    pub guest: usize,
    /// The highest priority of its DSR tasks (`pi_D` of VINT §V-A; the
    /// resolved `dsr_priority` is the lowest), `None` without DSR tasks.
    pub dsr_top: Option<u32>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct GuestOrigin {
    /// `vms.guests[g]`.
    pub path: String,
    /// Its VCPUs (server indices).
    pub servers: Vec<usize>,
    /// Its virtual interrupts (indices of `config.virqs`).
    pub virqs: Vec<usize>,
}

/// The `write` flags of a program's I/O steps, depth first.
fn writes(steps: &[Step], out: &mut Vec<bool>) {
    for s in steps {
        match s {
            Step::Read(_) => out.push(false),
            Step::Write(_) => out.push(true),
            Step::Loop { body, .. } | Step::Forever(body) => writes(body, out),
            Step::Compute(_) | Step::Sleep(_) | Step::Bind { .. } => {}
        }
    }
}

/// The origin of `m`'s resolved system, in the lowering's order
/// (`lower.rs`, `lower/vms.rs`).
pub(crate) fn of(m: &Model) -> Origin {
    let mut o = Origin::default();
    if m.machine.path == PathKind::Hypervisor {
        let Some(vms) = &m.vms else { return o };
        o.devices = (0..vms.physical_interrupts.len())
            .map(|k| DeviceOrigin {
                path: format!("vms.physical_interrupts[{k}]"),
                ..Default::default()
            })
            .collect();
        for (g, guest) in vms.guests.iter().enumerate() {
            let mut go = GuestOrigin {
                path: format!("vms.guests[{g}]"),
                ..Default::default()
            };
            for (v, vcpu) in guest.vcpus.iter().enumerate() {
                go.servers.push(o.servers.len());
                o.servers.push(ServerOrigin {
                    path: format!("vms.guests[{g}].vcpus[{v}]"),
                    ..Default::default()
                });
                for (t, task) in vcpu.tasks.iter().enumerate() {
                    let dsr = guest
                        .virtual_interrupts
                        .iter()
                        .any(|x| x.vcpu == vcpu.name && x.dsr.contains(&task.name));
                    if !dsr {
                        o.tasks.push(TaskOrigin {
                            path: format!("vms.guests[{g}].vcpus[{v}].tasks[{t}]"),
                            background: task.background,
                            ..Default::default()
                        });
                    }
                }
            }
            for (k, x) in guest.virtual_interrupts.iter().enumerate() {
                let vcpu = guest.vcpus.iter().find(|v| v.name == x.vcpu);
                let dsr_top = x
                    .dsr
                    .iter()
                    .filter_map(|n| vcpu?.tasks.iter().find(|t| &t.name == n))
                    .map(|t| t.priority)
                    .max();
                go.virqs.push(o.virqs.len());
                o.virqs.push(VirqOrigin {
                    path: format!("vms.guests[{g}].virtual_interrupts[{k}]"),
                    guest: g,
                    dsr_top,
                });
            }
            o.guests.push(go);
        }
        return o;
    }
    o.servers = m
        .vcpus
        .iter()
        .enumerate()
        .map(|(i, v)| ServerOrigin {
            path: format!("vcpus[{i}]"),
            io: v.kind == VcpuKind::Io,
            upcall_of: None,
        })
        .collect();
    for (i, d) in m.devices.iter().enumerate() {
        if d.upcall
            .as_ref()
            .is_some_and(|u| u.mode == UpcallMode::User)
        {
            o.servers.push(ServerOrigin {
                path: format!("devices[{i}].upcall"),
                io: false,
                upcall_of: Some(i),
            });
        }
        o.devices.push(DeviceOrigin {
            path: format!("devices[{i}]"),
            source: d.source,
            upcall: d.upcall.clone(),
            ring: d.ring,
        });
    }
    o.tasks = m
        .tasks
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let mut w = Vec::new();
            writes(&t.program, &mut w);
            TaskOrigin {
                path: format!("tasks[{i}]"),
                background: false,
                writes: w,
            }
        })
        .collect();
    o.model_classes = class_names(m).len();
    o.ksoftirqd_fifo = match m.machine.linux.as_ref().and_then(|l| l.ksoftirqd.as_ref()) {
        Some(Ksoftirqd::Fifo(p)) => Some(*p),
        _ => None,
    };
    o
}
