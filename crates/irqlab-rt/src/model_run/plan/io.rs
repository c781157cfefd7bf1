//! A resolved task's program (compute, read/write, bind, sleep, loops) and
//! the resolved request devices -- `xhci` controllers, `usb` endpoints and
//! `disk`s -- for a real run: each request device gets its routes (one
//! completion fd per endpoint and interrupter it can complete through,
//! bound to that interrupter's class; a disk's one), with the top-half
//! cost of the controller's (or the disk's) interrupt, which the runtime's
//! top half spends per event.
//!
//! Design principles: the simulator's rules on the same resolved system
//! (irqlab-system `lower.rs`, irqlab-sim `devices/xhci.rs`): an endpoint
//! completes through the interrupter its class maps to, else interrupter
//! 0; what cannot run for real is refused with the model's field (from the
//! resolved system's origin), the value and the reason.

use irqlab_core::Nanos;
use irqlab_model::model::PathKind;
use irqlab_system::config::{DeviceKind, Phase, SimConfig};
use irqlab_system::Origin;

use super::{refuse, top_half_cost, DevKind, DevPlan, Op, RoutePlan, UsbPlan, XhciPlan};
use crate::error::RtError;

/// What lowering a task's program needs: the resolved system, the task,
/// its I/O steps' read/write flags (`TaskOrigin::writes`), and the devices
/// and routes it adds readers and bind targets to.
pub(super) struct Lowering<'a> {
    pub c: &'a SimConfig,
    pub task: usize,
    pub writes: std::slice::Iter<'a, bool>,
    pub devices: &'a mut [DevPlan],
    pub routes: &'a mut Vec<RoutePlan>,
    pub xhci: &'a [XhciPlan],
}

impl Lowering<'_> {
    /// Device `i` at step `here`; records the task as a reader.
    fn device(&mut self, i: usize, here: &str) -> Result<usize, RtError> {
        if i >= self.devices.len() {
            return Err(refuse(here, i, "no such device"));
        }
        if !self.devices[i].readers.contains(&self.task) {
            self.devices[i].readers.push(self.task);
        }
        Ok(i)
    }

    /// A resolved program as run operations; `path` is the model's field
    /// path of the program.
    pub fn ops(&mut self, steps: &[Phase], path: &str) -> Result<Vec<Op>, RtError> {
        let mut out = Vec::new();
        for (k, s) in steps.iter().enumerate() {
            let here = format!("{path}[{k}]");
            out.push(match s {
                Phase::Compute { ns } => Op::Compute(Nanos(*ns)),
                Phase::Sleep { ns } => Op::Sleep(Nanos(*ns)),
                &Phase::Io { device } if !self.writes.next().copied().unwrap_or(false) => {
                    let i = self.device(device, &format!("{here}.read"))?;
                    if self.devices[i].kind.is_request() {
                        Op::Request(i)
                    } else {
                        Op::Read(i)
                    }
                }
                &Phase::Io { device } => {
                    let i = self.device(device, &format!("{here}.write"))?;
                    if !self.devices[i].kind.is_request() {
                        return Err(refuse(
                            format!("{here}.write"),
                            &self.devices[i].name,
                            "a nic or generic device is only read on real threads (its \
                             arrivals come by themselves); writes go to usb and disk devices",
                        ));
                    }
                    Op::Request(i)
                }
                &Phase::Bind { device, class } => {
                    let here = format!("{here}.bind");
                    let dev = self.device(device, &here)?;
                    let class = &self.c.classes[class].name;
                    Op::Bind {
                        dev,
                        route: self.route(dev, class, &here)?,
                    }
                }
                Phase::Loop {
                    count: Some(count),
                    body,
                } => Op::Loop {
                    count: Some(*count),
                    body: self.ops(body, &format!("{here}.loop.do"))?,
                },
                Phase::Loop { count: None, body } => Op::Loop {
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

/// The xHCI controllers (each interrupter's MSI vector is its routes'
/// eventfds; the controller's top half is spent per event).
pub(super) fn xhci_plans(c: &SimConfig, path: PathKind) -> Result<Vec<XhciPlan>, RtError> {
    let mut out = Vec::new();
    for (i, x) in c.xhci.iter().enumerate() {
        if path == PathKind::Linux {
            return Err(refuse(
                format!("xhci[{i}]"),
                &x.name,
                "this machine has no xHCI controller to measure the kernel's USB path on: \
                 the linux baseline runs nic and generic devices (simulate the linux USB \
                 path, or run the model as quest / quest-no-iovcpu)",
            ));
        }
        out.push(XhciPlan {
            name: x.name.clone(),
            interrupters: x
                .interrupters
                .iter()
                .map(|it| c.classes[it.class].name.clone())
                .collect(),
            // one moderation per controller in the model
            moderation: Nanos(x.interrupters.first().map_or(0, |it| it.moderation)),
            top_half: top_half_cost(path, format!("xhci[{i}].top_half"), Nanos(x.top_half))?,
            random_frame_phase: x.random_frame_phase,
        });
    }
    Ok(out)
}

/// A usb or disk device (`devices[i]`, bound to `class`) and its first
/// route.
pub(super) fn request_device(
    c: &SimConfig,
    o: &Origin,
    i: usize,
    class: String,
    path: PathKind,
    routes: &mut Vec<RoutePlan>,
) -> Result<DevPlan, RtError> {
    let d = &c.devices[i];
    let dorig = &o.devices[i];
    let f = |k: &str| format!("{}.{k}", dorig.path);
    if path == PathKind::Linux {
        return Err(refuse(
            f("kind"),
            match d.kind {
                DeviceKind::Usb { .. } => "usb",
                _ => "disk",
            },
            "the linux baseline measures the kernel's own bottom halves, and this machine's \
             kernel has no emulated usb or disk device to serve the model's requests; run it \
             as quest / quest-no-iovcpu, or simulate the linux path",
        ));
    }
    let (kind, usb, latency, work, bytes, top) = match d.kind {
        DeviceKind::Usb {
            controller,
            bytes,
            rate,
            jitter,
            omega_io,
            kfree,
            echo_of,
        } => {
            if let Some(e) = echo_of {
                return Err(refuse(
                    f("echo_of"),
                    c.devices.get(e).map_or("", |e| e.name.as_str()),
                    "echo endpoints (an IN endpoint returning what was written to another) have \
                     no real-thread lowering yet; simulate the model instead",
                ));
            }
            let usb = UsbPlan {
                controller,
                bytes,
                rate,
                jitter: Nanos(jitter),
            };
            // USB-DIFFSERV Eq. 1: Omega_IO (+ kfree) per request on the
            // interrupter's I/O VCPU.
            let work = Nanos(omega_io) + Nanos(kfree);
            // a usb endpoint's interrupt is its controller's
            (
                DevKind::Usb,
                Some(usb),
                Nanos::ZERO,
                work,
                bytes,
                Nanos::ZERO,
            )
        }
        DeviceKind::Disk {
            latency,
            top_half,
            per_sector,
            sectors,
            sector_bytes,
        } => {
            // QUEST-VCPU §4's PIO disk: the bottom half copies the sectors.
            let work = Nanos(per_sector.saturating_mul(sectors));
            let bytes = sectors.saturating_mul(sector_bytes);
            let top = top_half_cost(path, f("top_half"), Nanos(top_half))?;
            (DevKind::Disk, None, Nanos(latency), work, bytes, top)
        }
        _ => return Err(refuse(f("kind"), &d.name, "not a request device")),
    };
    let interrupter = usb.as_ref().map(|u| {
        let names: Vec<&str> = c.xhci[u.controller]
            .interrupters
            .iter()
            .map(|it| c.classes[it.class].name.as_str())
            .collect();
        let it = names.iter().position(|&n| n == class).unwrap_or(0);
        (
            u.controller,
            it,
            names.get(it).copied().unwrap_or_default().to_string(),
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
        top_half: top,
        omega_main: Nanos(d.omega_main),
        readers: Vec::new(),
        source: dorig.source.unwrap_or_default(),
        upcall: dorig.upcall.clone(),
        usb,
        latency,
        routes: vec![routes.len() - 1],
    })
}
