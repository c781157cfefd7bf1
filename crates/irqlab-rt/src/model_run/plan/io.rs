//! Lowering a task's program (compute, read/write, bind, sleep, loops) and
//! the model's request devices -- `xhci` controllers, `usb` endpoints and
//! `disk`s -- for a real run: each request device gets its routes (one
//! completion fd per endpoint and interrupter it can complete through,
//! bound to that interrupter's class; a disk's one), with the top-half
//! cost of the controller's (or the disk's) interrupt, which the runtime's
//! top half spends per event.
//!
//! Design principles: the simulator's rules, read from the same model
//! (irqlab-sim `lower.rs`, `devices/xhci.rs`): an endpoint completes
//! through the interrupter its class maps to, else interrupter 0; what
//! cannot run for real is refused with the field, the value and the
//! reason.

use irqlab_core::Nanos;
use irqlab_model::model::{DeviceKindName, MapEntry, PathKind, Step};
use irqlab_model::Model;

use super::{ns, refuse, top_half_cost, DevKind, DevPlan, Op, RoutePlan, UsbPlan, XhciPlan};
use crate::error::RtError;

/// What lowering a task's program needs: the model, the task, and the
/// devices and routes it adds readers and bind targets to.
pub(super) struct Lowering<'a> {
    pub m: &'a Model,
    pub task: usize,
    pub devices: &'a mut [DevPlan],
    pub routes: &'a mut Vec<RoutePlan>,
    pub xhci: &'a [XhciPlan],
}

impl Lowering<'_> {
    /// The device named `dev` at step `here`; records the task as a reader.
    fn device(&mut self, dev: &str, here: &str) -> Result<usize, RtError> {
        let i = self
            .m
            .devices
            .iter()
            .position(|d| d.name == dev)
            .ok_or_else(|| refuse(here, dev, "no such device"))?;
        if !self.devices[i].readers.contains(&self.task) {
            self.devices[i].readers.push(self.task);
        }
        Ok(i)
    }

    /// A model program as run operations.
    pub fn ops(&mut self, steps: &[Step], path: &str) -> Result<Vec<Op>, RtError> {
        let mut out = Vec::new();
        for (k, s) in steps.iter().enumerate() {
            let here = format!("{path}[{k}]");
            out.push(match s {
                Step::Compute(d) => Op::Compute(d.0),
                Step::Sleep(d) => Op::Sleep(d.0),
                Step::Read(dev) => {
                    let i = self.device(dev, &format!("{here}.read"))?;
                    if self.devices[i].kind.is_request() {
                        Op::Request(i)
                    } else {
                        Op::Read(i)
                    }
                }
                Step::Write(dev) => {
                    let i = self.device(dev, &format!("{here}.write"))?;
                    if !self.devices[i].kind.is_request() {
                        return Err(refuse(
                            format!("{here}.write"),
                            dev,
                            "a nic or generic device is only read on real threads (its \
                             arrivals come by themselves); writes go to usb and disk devices",
                        ));
                    }
                    Op::Request(i)
                }
                Step::Bind { device, class } => {
                    let here = format!("{here}.bind");
                    let dev = self.device(device, &here)?;
                    Op::Bind {
                        dev,
                        route: self.route(dev, class, &here)?,
                    }
                }
                Step::Loop { count, body } => Op::Loop {
                    count: Some(*count),
                    body: self.ops(body, &format!("{here}.loop.do"))?,
                },
                Step::Forever(body) => Op::Loop {
                    count: None,
                    body: self.ops(body, &format!("{here}.forever"))?,
                },
            });
        }
        Ok(out)
    }

    /// The route of USB endpoint `dev` bound to `class` (added if new): the
    /// controller's interrupter of that class (the model checked there is
    /// one; the simulator takes interrupter 0 otherwise).
    fn route(&mut self, dev: usize, class: &str, here: &str) -> Result<usize, RtError> {
        let Some(u) = &self.devices[dev].usb else {
            return Err(refuse(
                here,
                class,
                "usb_set_iovcpu rebinds USB devices only",
            ));
        };
        let x = u.controller;
        let it = self.xhci[x]
            .interrupters
            .iter()
            .position(|c| c == class)
            .unwrap_or(0);
        let found = self.devices[dev]
            .routes
            .iter()
            .copied()
            .find(|&r| self.routes[r].interrupter == Some((x, it)));
        Ok(found.unwrap_or_else(|| {
            self.routes.push(RoutePlan {
                dev,
                interrupter: Some((x, it)),
                class: self.xhci[x].interrupters[it].clone(),
            });
            let r = self.routes.len() - 1;
            self.devices[dev].routes.push(r);
            r
        }))
    }
}

/// The model's xHCI controllers (each interrupter's MSI vector is its
/// routes' eventfds; the controller's top half is spent per event).
pub(super) fn xhci_plans(m: &Model, path: PathKind) -> Result<Vec<XhciPlan>, RtError> {
    let mut out = Vec::new();
    for (i, x) in m.xhci.iter().enumerate() {
        if path == PathKind::Linux {
            return Err(refuse(
                format!("xhci[{i}]"),
                &x.name,
                "this machine has no xHCI controller to measure the kernel's USB path on: \
                 the linux baseline runs nic and generic devices (simulate the linux USB \
                 path, or run the model as quest / quest-no-iovcpu)",
            ));
        }
        let interrupters = x
            .interrupter_map
            .iter()
            .filter_map(|e| match e {
                MapEntry::Class(c) => Some(c.clone()),
                MapEntry::Number(_) => None,
            })
            .collect();
        out.push(XhciPlan {
            name: x.name.clone(),
            interrupters,
            moderation: ns(x.moderation),
            top_half: top_half_cost(path, format!("xhci[{i}].top_half"), x.top_half.0)?,
            random_frame_phase: x.random_frame_phase,
        });
    }
    Ok(out)
}

/// A usb or disk device (`devices[i]`, bound to `class`) and its first
/// route.
pub(super) fn request_device(
    m: &Model,
    i: usize,
    class: String,
    path: PathKind,
    routes: &mut Vec<RoutePlan>,
) -> Result<DevPlan, RtError> {
    let d = &m.devices[i];
    let f = |k: &str| format!("devices[{i}].{k}");
    if path == PathKind::Linux {
        return Err(refuse(
            f("kind"),
            format!("{:?}", d.kind).to_lowercase(),
            "the linux baseline measures the kernel's own bottom halves, and this machine's \
             kernel has no emulated usb or disk device to serve the model's requests; run it \
             as quest / quest-no-iovcpu, or simulate the linux path",
        ));
    }
    if d.echo_of.is_some() {
        return Err(refuse(
            f("echo_of"),
            d.echo_of.as_deref().unwrap_or_default(),
            "echo endpoints (an IN endpoint returning what was written to another) have no \
             real-thread lowering yet; simulate the model instead",
        ));
    }
    let (kind, usb, latency, work, bytes) = match d.kind {
        DeviceKindName::Usb => {
            let controller = m
                .xhci
                .iter()
                .position(|x| Some(&x.name) == d.controller.as_ref())
                .ok_or_else(|| {
                    refuse(
                        f("controller"),
                        d.controller.as_deref().unwrap_or_default(),
                        "no such xhci controller",
                    )
                })?;
            let bytes = d.request.map_or(512, |s| s.0);
            let usb = UsbPlan {
                controller,
                bytes,
                rate: d.rate.map_or(0, |r| r.0),
                jitter: ns(d.jitter),
            };
            // USB-DIFFSERV Eq. 1: Omega_IO (+ kfree) per request on the
            // interrupter's I/O VCPU.
            let work = ns(d.omega_io) + ns(d.kfree);
            (DevKind::Usb, Some(usb), Nanos::ZERO, work, bytes)
        }
        _ => {
            // QUEST-VCPU §4's PIO disk: the bottom half copies the sectors.
            let sectors = d.sectors.unwrap_or(1);
            let work = Nanos(ns(d.per_sector).0.saturating_mul(sectors));
            let bytes = sectors.saturating_mul(d.sector.map_or(512, |s| s.0));
            (DevKind::Disk, None, ns(d.latency), work, bytes)
        }
    };
    let interrupter = usb.as_ref().map(|u| {
        let x = &m.xhci[u.controller];
        let classes = x.interrupter_map.iter().filter_map(|e| match e {
            MapEntry::Class(c) => Some(c.as_str()),
            MapEntry::Number(_) => None,
        });
        let it = classes.clone().position(|c| c == class).unwrap_or(0);
        (
            u.controller,
            it,
            classes.clone().nth(it).unwrap_or_default().to_string(),
        )
    });
    routes.push(RoutePlan {
        dev: i,
        interrupter: interrupter.as_ref().map(|(x, it, _)| (*x, *it)),
        class: interrupter.map_or(class.clone(), |(_, _, c)| c),
    });
    Ok(DevPlan {
        name: d.name.clone(),
        kind,
        class,
        arrival: None,
        bytes: usize::try_from(bytes).unwrap_or(usize::MAX),
        buffer: 0,
        bottom_half: work,
        top_half: match kind {
            DevKind::Disk => top_half_cost(path, f("top_half"), ns(d.top_half))?,
            _ => Nanos::ZERO, // a usb endpoint's interrupt is its controller's
        },
        omega_main: ns(d.omega_main),
        readers: Vec::new(),
        source: d.source.unwrap_or_default(),
        upcall: d.upcall.clone(),
        usb,
        latency,
        routes: vec![routes.len() - 1],
    })
}
