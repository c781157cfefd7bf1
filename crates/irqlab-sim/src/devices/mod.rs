//! Devices: one module per kind (`nic`, `disk`, `generic`, `xhci`) and
//! what they share -- an interrupt's top half and bottom-half job, the
//! delivery of a finished bottom half (data into the reader's buffer, a
//! request's completion), and per-device accounting.
//!
//! Design principles:
//! * A device interrupt is a top half on the device's CPU (nested by the
//!   device's priority) carrying its bottom-half job; where that job runs
//!   is the interrupt path's decision (`paths`).
//! * Every I/O event is handled on behalf of a task (QUEST-VCPU §2.1): the
//!   requester, else the class's consumer, else the task waiting on or last
//!   reading the device; its Main VCPU's period goes with the job (PIBS).
//! * Every packet is accounted: handled, dropped by a full ring or buffer,
//!   or still in flight at the end.

pub(crate) mod disk;
pub(crate) mod generic;
pub(crate) mod nic;
pub(crate) mod xhci;

use std::collections::VecDeque;

use irqlab_core::{LatencyRecorder, Nanos};

use crate::config::DeviceKind;
use crate::cpu::{Isr, IsrSource};
use crate::engine::EvKind;
use crate::machine::Simulation;
use crate::thread::{BhJob, Deliver};
use crate::SimError;

pub(crate) struct DeviceState {
    pub(crate) buffer: VecDeque<(u64, u64)>,
    /// Disk: pending requests (thread, submitted) and whether busy.
    pub(crate) disk_queue: VecDeque<(usize, u64)>,
    pub(crate) disk_busy: bool,
    /// Thread blocked on this device (NIC/generic), FIFO.
    pub(crate) waiters: VecDeque<usize>,
    pub(crate) interrupts: u64,
    pub(crate) handled: u64,
    pub(crate) dropped: u64,
    pub(crate) bytes: u64,
    pub(crate) bytes_windows: Vec<u64>,
    pub(crate) latency: LatencyRecorder,
    pub(crate) handling: LatencyRecorder,
    pub(crate) burst_left: u64,
    /// Packets between the top half and the end of their bottom half.
    pub(crate) in_ring: usize,
    /// Pending arrival event (ping flood: superseded by an earlier reply).
    pub(crate) arrival_epoch: u64,
    pub(crate) arrival_at: Option<u64>,
    /// I/O class the device's fd is bound to now (`usb_set_iovcpu`).
    pub(crate) class_now: usize,
    /// The last task that read the device.
    pub(crate) last_reader: Option<usize>,
    /// USB: queued requests (thread, submitted, interrupter).
    pub(crate) usb_queue: VecDeque<(usize, u64, usize)>,
    /// USB echo IN endpoint: echoed transfers available, readers waiting.
    pub(crate) echo_credit: u64,
    pub(crate) echo_waiters: VecDeque<(usize, u64)>,
    /// The USB echo endpoints of this OUT endpoint (`echo_of`), and the
    /// virtual interrupts of this physical device (`virqs[].phys`), in
    /// index order: found at setup, so an event looks at its own, not at
    /// every device or virtual interrupt (for speed, docs/performance.md).
    pub(crate) echoes: Vec<usize>,
    pub(crate) virqs: Vec<usize>,
}

pub(crate) fn default_event_buffer() -> usize {
    1024
}

impl Simulation {
    /// The run-time state of every configured device.
    pub(crate) fn add_devices(&mut self) {
        let nwin = self.nwin;
        self.devices = self
            .cfg
            .devices
            .iter()
            .map(|dc| DeviceState {
                buffer: VecDeque::new(),
                disk_queue: VecDeque::new(),
                disk_busy: false,
                waiters: VecDeque::new(),
                interrupts: 0,
                handled: 0,
                dropped: 0,
                bytes: 0,
                bytes_windows: vec![0; nwin],
                latency: LatencyRecorder::new(0, None),
                handling: LatencyRecorder::new(0, None),
                burst_left: 0,
                in_ring: 0,
                arrival_epoch: 0,
                arrival_at: None,
                class_now: dc.class,
                last_reader: None,
                usb_queue: VecDeque::new(),
                echo_credit: 0,
                echo_waiters: VecDeque::new(),
                echoes: Vec::new(),
                virqs: Vec::new(),
            })
            .collect();
        for (e, dc) in self.cfg.devices.iter().enumerate() {
            if let DeviceKind::Usb {
                echo_of: Some(o), ..
            } = dc.kind
            {
                if let Some(out) = self.devices.get_mut(o) {
                    out.echoes.push(e);
                }
            }
        }
        for (v, vc) in self.cfg.virqs.iter().enumerate() {
            if let Some(phys) = self.devices.get_mut(vc.phys) {
                phys.virqs.push(v);
            }
        }
    }

    /// Post the next arrival of device `d` (superseding any pending one).
    pub(crate) fn post_arrival(&mut self, d: usize, t: u64) {
        self.devices[d].arrival_epoch += 1;
        self.devices[d].arrival_at = Some(t);
        let epoch = self.devices[d].arrival_epoch;
        self.post(t, EvKind::Arrival { device: d, epoch });
    }

    /// The first arrival of device `d`, if it raises interrupts by itself.
    pub(crate) fn first_arrival(&mut self, d: usize) -> Option<u64> {
        let dev = &mut self.devices[d];
        match &self.cfg.devices[d].kind {
            DeviceKind::Nic { arrival, .. } => {
                nic::first_arrival(arrival, &mut self.rng, &mut dev.burst_left)
            }
            DeviceKind::Generic { start, .. } => Some(*start),
            DeviceKind::Disk { .. } | DeviceKind::Usb { .. } => None,
        }
    }

    /// The arrival of device `d` after one at `now`.
    pub(crate) fn next_arrival(&mut self, d: usize) -> Option<u64> {
        let dev = &mut self.devices[d];
        match &self.cfg.devices[d].kind {
            DeviceKind::Nic { arrival, .. } => {
                nic::next_arrival(arrival, self.now, &mut self.rng, &mut dev.burst_left)
            }
            DeviceKind::Generic {
                min_interarrival,
                jitter,
                ..
            } => Some(generic::next_arrival(
                *min_interarrival,
                *jitter,
                self.now,
                &mut self.rng,
            )),
            DeviceKind::Disk { .. } | DeviceKind::Usb { .. } => None,
        }
    }

    /// An interrupt from device `d`: top half on its CPU, then a
    /// bottom-half job.
    pub(crate) fn device_interrupt(&mut self, d: usize, request: Option<(usize, u64)>) {
        let now = self.now;
        let dev = &self.cfg.devices[d];
        let (top, work) = match &dev.kind {
            DeviceKind::Nic {
                top_half,
                bottom_half,
                ..
            } => (*top_half, *bottom_half),
            DeviceKind::Disk {
                top_half,
                per_sector,
                sectors,
                ..
            } => (*top_half, per_sector.saturating_mul(*sectors)),
            DeviceKind::Generic { isr, dsr, .. } => (*isr, *dsr),
            // USB events go through `usb_event` and the xHCI interrupter.
            DeviceKind::Usb { .. } => (0, 0),
        };
        let class = self.devices[d].class_now;
        // The Main VCPU served (QUEST-VCPU §2.1: every I/O event is handled
        // on behalf of a task): the requester's, else the class consumer's,
        // else the task waiting on (or that last read) the device.
        let served = request
            .map(|(t, _)| t)
            .or_else(|| {
                self.cfg
                    .classes
                    .get(class)
                    .and_then(|c| c.consumer)
                    .map(|k| self.tasks[k].thread)
            })
            .or_else(|| self.devices[d].waiters.front().copied())
            .or(self.devices[d].last_reader);
        let period = served.and_then(|t| self.servers[self.threads[t].server].period);
        let deliver = match request {
            Some((thread, _)) => Deliver::Request { thread },
            None => Deliver::Event,
        };
        self.flow += 2;
        let target = self.bh_target_class(class, dev.cpu);
        let job = BhJob {
            device: d,
            work,
            arrival: now,
            period,
            deliver,
            flow: self.flow,
            target,
        };
        let has_bh = self.cfg.path.has_bottom_halves();
        if let (DeviceKind::Nic { ring, .. }, true) = (&dev.kind, has_bh) {
            if self.devices[d].in_ring >= *ring {
                // RX ring full: the NIC drops the packet, no interrupt.
                self.devices[d].dropped += 1;
                return;
            }
            self.devices[d].in_ring += 1;
        }
        self.devices[d].interrupts += 1;
        let (c, priority) = (dev.cpu, dev.irq_priority);
        // on the hypervisor path a physical interrupt's handling is its
        // virtual interrupts, injected when its ISR completes
        let jobs = if has_bh { vec![job] } else { Vec::new() };
        let queued = self.push_isr(
            c,
            Isr {
                source: IsrSource::Device(d),
                remaining: top,
                started: now,
                ran_from: None,
                jobs,
                priority,
            },
        );
        if queued.is_none() && has_bh {
            // lost with its top half: the packet never reaches the host
            let dev = &mut self.devices[d];
            dev.in_ring = dev.in_ring.saturating_sub(1);
            dev.dropped += 1;
        }
    }

    /// The end of a bottom half (in a thread or in softirq context on
    /// `cpu`): account it and deliver its result.
    pub(crate) fn deliver(&mut self, cpu: usize, job: BhJob) -> Result<(), SimError> {
        let now = self.now;
        if let Deliver::VirqIsr(v) | Deliver::VirqDsr(v) = job.deliver {
            return self.virq_stage_done(v, job);
        }
        let d = job.device;
        let bytes = match &self.cfg.devices[d].kind {
            DeviceKind::Nic { bytes, .. } => *bytes,
            DeviceKind::Disk {
                sectors,
                sector_bytes,
                ..
            } => sectors.saturating_mul(*sector_bytes),
            DeviceKind::Generic { .. } => 0,
            DeviceKind::Usb { bytes, .. } => *bytes,
        };
        let dev = &mut self.devices[d];
        dev.in_ring = dev.in_ring.saturating_sub(1);
        dev.handled += 1;
        dev.bytes += bytes;
        if let Some(w) = dev.bytes_windows.get_mut((now / self.cfg.window) as usize) {
            *w += bytes;
        }
        dev.handling.record(Nanos(now - job.arrival));
        self.bottom_half_done(d, job.period)?;
        match job.deliver {
            Deliver::Request { thread, .. } => {
                // an arrow from the end of the bottom half to the woken
                // task's next dispatch
                if self.trace.enabled() {
                    self.trace.flow_begin(job.flow + 1, cpu, now, "bh->task");
                    self.wake_flow[thread] = Some(job.flow + 1);
                }
                self.resume_task(thread)?;
            }
            Deliver::VirqIsr(_) | Deliver::VirqDsr(_) => {} // above
            Deliver::Event => {
                self.closed_loop_reply(d);
                let cap = match &self.cfg.devices[d].kind {
                    DeviceKind::Nic { buffer, .. } => *buffer,
                    _ => default_event_buffer(),
                };
                if let Some(w) = self.devices[d].waiters.pop_front() {
                    self.resume_task(w)?;
                } else if self.devices[d].buffer.len() < cap {
                    self.devices[d].buffer.push_back((job.arrival, now));
                } else {
                    self.devices[d].dropped += 1;
                }
            }
        }
        Ok(())
    }
}
