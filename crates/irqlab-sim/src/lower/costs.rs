//! Charging a model's measured `costs:` (`irqlab calibrate`) in the
//! resolved configuration, so the simulator and the analysis (which both
//! read `SimConfig`) predict the machine the costs were measured on.
//!
//! What goes where (docs/model.md, "costs"), with `s` the section's chosen
//! statistic (`use`, default the mean):
//! * `linux`: each `nic` packet's hard IRQ grows by `s(hardirq)` and its
//!   softirq (NET_RX) by `s(softirq)` of the kernel path `net_path`
//!   (loopback or the NIC) -- the kernel's own per-packet work, on top of
//!   the driver work the device states; a bottom half handed to ksoftirqd
//!   by forced threading waits `s(kernel.ksoftirqd_wakeup)` (traced), or
//!   `s(thread_wakeup)` when ksoftirqd was not seen waking.
//! * `quest`, `quest-no-iovcpu` (the runtime `irqlab run` uses on this
//!   machine): every device top half (nic, disk, generic ISR, xHCI
//!   interrupt) grows by `s(runtime_top_half)`, and a bottom half reaches
//!   its thread `s(runtime_dispatch)` after its top half (or
//!   `s(thread_wakeup)` when the runtime's dispatch was not measured).
//! * every path: the scheduler-overhead model's per-decision cost is
//!   `s(supervisor_decision)`.
//! * `hypervisor`: nothing (its costs are the VMM's; the model warns).
//!
//! Design principle: a model without `costs:` lowers exactly as before --
//! this module is only called when the section is present.

use irqlab_model::costs::Costs;

use crate::config::{DeviceKind, InterruptPath, SimConfig};

/// Fold the measured costs `c` into `cfg`.
pub(super) fn apply(cfg: &mut SimConfig, c: &Costs) {
    match cfg.path {
        InterruptPath::Linux => {
            if let Some(n) = c.net() {
                let hard = c.stat(&n.hardirq);
                let soft = n.softirq.get(c.stat);
                for d in &mut cfg.devices {
                    if let DeviceKind::Nic {
                        top_half,
                        bottom_half,
                        ..
                    } = &mut d.kind
                    {
                        *top_half = top_half.saturating_add(hard);
                        *bottom_half = bottom_half.saturating_add(soft);
                    }
                }
            }
            let ksoftirqd = c.kernel.as_ref().and_then(|k| k.ksoftirqd_wakeup);
            cfg.dispatch_delay = c.stat(&ksoftirqd.or(c.thread_wakeup));
        }
        InterruptPath::Quest | InterruptPath::QuestNoIovcpu => {
            let th = c.stat(&c.runtime_top_half);
            for d in &mut cfg.devices {
                match &mut d.kind {
                    DeviceKind::Nic { top_half, .. } | DeviceKind::Disk { top_half, .. } => {
                        *top_half = top_half.saturating_add(th)
                    }
                    DeviceKind::Generic { isr, .. } => *isr = isr.saturating_add(th),
                    DeviceKind::Usb { .. } => {} // its controller's interrupt below
                }
            }
            for x in &mut cfg.xhci {
                x.top_half = x.top_half.saturating_add(th);
            }
            cfg.dispatch_delay = if c.runtime_dispatch.is_some() {
                c.stat(&c.runtime_dispatch)
            } else {
                c.stat(&c.thread_wakeup)
            };
        }
        InterruptPath::Hypervisor => return,
    }
    if let Some(d) = &c.supervisor_decision {
        cfg.overhead.schedule_ns = d.get(c.stat) as f64;
    }
}
