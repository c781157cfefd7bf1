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
//! * thread switches and timers (`SimConfig::switch_costs`), where they
//!   physically happen on the paths that run threads:
//!   - `quest*`: irqlab-rt's supervisor sleeps on a timer until the core's
//!     `next_update` (budget exhaustion, replenishment) and the periodic
//!     releases (timed waits); each such wake-up, and so the decision after
//!     it, comes `s(timer_wakeup)` late (cyclictest's latency: the same
//!     `clock_nanosleep` at SCHED_FIFO, the supervisor's own sleep);
//!     the decision is carried out with one `sched_setscheduler` per thread
//!     whose priority changes, `s(priority_switch)` each, when the
//!     dispatched server changes; and the kernel then switches from the
//!     outgoing thread to the incoming one, `s(context_switch)`. The switch
//!     costs are charged when a CPU goes straight from one thread to a
//!     different one; they are the supervisor's and the kernel's time, not
//!     the server's (the supervisor excludes them from the budget). A
//!     thread woken on an idle CPU pays its wake-up instead (the dispatch
//!     delay, or the timer latency), which already contains a switch.
//!   - `linux`: no supervisor and no priority switches; a periodic task's
//!     own `clock_nanosleep` wakes it `s(timer_wakeup)` late, and a direct
//!     switch between threads costs `s(context_switch)`. SCHED_DEADLINE's
//!     budget enforcement is the kernel's own timer, not a woken thread:
//!     no timer latency at `next_update`.
//!
//!   `context_switch` is measured as lmbench's lat_ctx (an eventfd
//!   ping-pong on one CPU, each switch with the write and read that cause
//!   it), so it slightly overstates the bare switch, as a supervisor pass
//!   also writes and reads; `thread_wakeup` and `runtime_dispatch` were
//!   measured to an idle CPU, so a bottom half that preempts a running
//!   thread pays its dispatch delay and a switch, which overlap by at most
//!   one context switch.
//! * every path: the scheduler-overhead model's per-decision cost is
//!   `s(supervisor_decision)` (a metric: the decision itself is a few
//!   hundred ns next to the switch that carries it out, and is not charged
//!   as time).
//! * `hypervisor`: nothing (its costs are the VMM's; the model warns).
//!
//! Design principle: a model without `costs:` lowers exactly as before --
//! this module is only called when the section is present.

use irqlab_model::costs::Costs;

use crate::config::{DeviceKind, InterruptPath, SimConfig, SwitchCosts};

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
            cfg.switch_costs = SwitchCosts {
                context_switch: c.stat(&c.context_switch),
                priority_switch: 0,
                timer_latency: c.stat(&c.timer_wakeup),
            };
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
            cfg.switch_costs = SwitchCosts {
                context_switch: c.stat(&c.context_switch),
                priority_switch: c.stat(&c.priority_switch),
                timer_latency: c.stat(&c.timer_wakeup),
            };
        }
        InterruptPath::Hypervisor => return,
    }
    if let Some(d) = &c.supervisor_decision {
        cfg.overhead.schedule_ns = d.get(c.stat) as f64;
    }
}
