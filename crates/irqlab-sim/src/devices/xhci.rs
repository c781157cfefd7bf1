//! USB through an xHCI controller (USB-DIFFSERV §III): endpoints with
//! transfer sizes and device rates, transfers completing on 125 us
//! microframe boundaries, and interrupters -- each with its own event
//! ring, MSI vector, moderation interval and bottom-half thread in its
//! I/O class's I/O VCPU (the `xHCI_interrupter_to_IOVCPU_map`, §III-C).
//!
//! Design principles:
//! * A request carries the interrupter of the class its fd is bound to now
//!   (`usb_set_iovcpu` can rebind at run time), so differentiated service
//!   starts at the controller.
//! * One top half drains an interrupter's ring: events arriving while its
//!   interrupt is pending join it; moderation holds the next interrupt
//!   until the interval since the last one has passed.
//! * Per request the bottom half costs Omega_IO (+ kfree) on the I/O VCPU
//!   and the task Omega_Main on its Main VCPU (USB-DIFFSERV Eq. 1).

use std::collections::VecDeque;

use crate::config::{DeviceKind, InterruptPath, MICROFRAME_NS};
use crate::cpu::{Isr, IsrKey, IsrSource};
use crate::engine::EvKind;
use crate::machine::Simulation;
use crate::thread::{BhJob, Deliver};
use crate::SimError;

/// Run-time state of an xHCI controller: per interrupter, its event ring,
/// the time of its last interrupt (moderation) and its bottom-half thread.
pub(crate) struct XhciState {
    pub(crate) rings: Vec<VecDeque<BhJob>>,
    pub(crate) last_irq: Vec<Option<u64>>,
    pub(crate) irq_posted: Vec<bool>,
    pub(crate) bh: Vec<usize>,
    /// The interrupter's top half queued and not finished: new events
    /// join it (its top half drains the ring).
    pub(crate) pending_isr: Vec<Option<IsrKey>>,
}

impl Simulation {
    /// Per controller: rings, and one bottom-half thread per interrupter in
    /// its class's I/O VCPU (USB-DIFFSERV Figure 7); without I/O VCPUs the
    /// class's own thread serves it.
    pub(crate) fn add_xhci(&mut self) -> Result<(), SimError> {
        for xi in 0..self.cfg.xhci.len() {
            let n = self.cfg.xhci[xi].interrupters.len();
            let mut bh = Vec::with_capacity(n);
            for k in 0..n {
                let class = self.cfg.xhci[xi].interrupters[k].class;
                let server = match self.cfg.path {
                    InterruptPath::Quest => self.cfg.classes[class].iovcpu,
                    _ => None,
                };
                let Some(server) = server else {
                    bh.push(self.class_bh[class]);
                    continue;
                };
                let name = format!("{}.int{k}", self.cfg.xhci[xi].name);
                let what = || format!("xhci[{xi}].interrupters[{k}]");
                bh.push(self.add_bh_thread(name, server, u32::MAX, what)?);
            }
            self.xhci.push(XhciState {
                rings: vec![VecDeque::new(); n],
                last_irq: vec![None; n],
                irq_posted: vec![false; n],
                pending_isr: vec![None; n],
                bh,
            });
        }
        Ok(())
    }

    /// Submit a USB request of `thread` on endpoint `d`; it carries the
    /// interrupter of the class the fd is bound to (USB-DIFFSERV §III-C).
    pub(crate) fn usb_submit(&mut self, d: usize, thread: usize, submitted: u64) {
        let DeviceKind::Usb { controller, .. } = self.cfg.devices[d].kind else {
            return;
        };
        let class = self.devices[d].class_now;
        let it = self.cfg.xhci[controller]
            .interrupters
            .iter()
            .position(|i| i.class == class)
            .unwrap_or(0);
        self.devices[d].usb_queue.push_back((thread, submitted, it));
        self.usb_start(d);
    }

    /// Start the endpoint's next transfer: `bytes / rate` (plus jitter),
    /// completing at the next 125 us microframe boundary.
    pub(crate) fn usb_start(&mut self, d: usize) {
        if self.devices[d].disk_busy || self.devices[d].usb_queue.is_empty() {
            return;
        }
        let DeviceKind::Usb {
            bytes,
            rate,
            jitter,
            controller,
            ..
        } = self.cfg.devices[d].kind
        else {
            return;
        };
        self.devices[d].disk_busy = true;
        let xfer = u64::try_from((bytes as u128 * 1_000_000_000).div_ceil(rate.max(1) as u128))
            .unwrap_or(u64::MAX);
        let extra = if jitter > 0 {
            self.rng.below(jitter.saturating_add(1))
        } else {
            0
        };
        let need = xfer.saturating_add(extra);
        // Where in its microframe the controller is now.
        let phase = if self.cfg.xhci[controller].random_frame_phase {
            self.rng.below(MICROFRAME_NS)
        } else {
            self.now % MICROFRAME_NS
        };
        let left = MICROFRAME_NS - phase;
        // A transfer that misses its microframe completes in the next one.
        let done = if need <= left {
            self.now.saturating_add(need)
        } else {
            self.now.saturating_add(left).saturating_add(need)
        };
        self.post(done, EvKind::UsbDone { device: d });
    }

    pub(crate) fn usb_done(&mut self, d: usize) {
        self.devices[d].disk_busy = false;
        let Some((thread, _, it)) = self.devices[d].usb_queue.pop_front() else {
            return;
        };
        let DeviceKind::Usb {
            controller,
            omega_io,
            kfree,
            ..
        } = self.cfg.devices[d].kind
        else {
            return;
        };
        // an echo device returns what was written to this OUT endpoint
        for k in 0..self.devices[d].echoes.len() {
            let e = self.devices[d].echoes[k];
            match self.devices[e].echo_waiters.pop_front() {
                Some((reader, since)) => self.usb_submit(e, reader, since),
                None => self.devices[e].echo_credit += 1,
            }
        }
        let period = self.servers[self.threads[thread].server].period;
        let target = self.usb_bh_target(controller, it);
        self.flow += 2;
        let job = BhJob {
            device: d,
            work: omega_io + kfree,
            arrival: self.now,
            period,
            deliver: Deliver::Request { thread },
            flow: self.flow,
            target,
        };
        self.devices[d].interrupts += 1;
        self.xhci[controller].rings[it].push_back(job);
        self.xhci_fire(controller, it);
        self.usb_start(d);
    }

    /// Interrupter `it` signals its MSI vector if it has events and its
    /// moderation interval has passed; otherwise it fires when it has.
    pub(crate) fn xhci_fire(&mut self, x: usize, it: usize) {
        let now = self.now;
        if self.xhci[x].rings[it].is_empty() {
            return;
        }
        let moderation = self.cfg.xhci[x].interrupters[it].moderation;
        if let Some(l) = self.xhci[x].last_irq[it] {
            if now < l.saturating_add(moderation) {
                if !self.xhci[x].irq_posted[it] {
                    self.xhci[x].irq_posted[it] = true;
                    self.post(
                        l.saturating_add(moderation),
                        EvKind::XhciIrq {
                            controller: x,
                            interrupter: it,
                        },
                    );
                }
                return;
            }
        }
        let c = self.cfg.xhci[x].cpu;
        // An interrupt of this interrupter not yet serviced takes the new
        // events too: its top half drains the event ring.
        if let Some(k) = self.xhci[x].pending_isr[it] {
            let jobs: Vec<BhJob> = self.xhci[x].rings[it].drain(..).collect();
            if let Some(isr) = self.cpus[c].isrs.get_mut(k) {
                isr.jobs.extend(jobs);
            }
            return;
        }
        self.xhci[x].last_irq[it] = Some(now);
        let jobs: Vec<BhJob> = self.xhci[x].rings[it].drain(..).collect();
        let remaining = self.cfg.xhci[x].top_half;
        self.xhci[x].pending_isr[it] = self.push_isr(
            c,
            Isr {
                source: IsrSource::Xhci(x, it),
                remaining,
                started: now,
                ran_from: None,
                jobs,
                priority: 0,
            },
        );
    }
}
