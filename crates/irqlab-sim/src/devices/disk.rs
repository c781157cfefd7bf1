//! The disk: requests served one at a time in FIFO order, each taking the
//! device's `latency`, then raising an interrupt whose bottom half copies
//! the sectors by programmed I/O (`per_sector` per sector) and wakes the
//! requesting task (QUEST-VCPU §4's PIO disk).
//!
//! Design principle: the bottom half serves the task that asked, so its
//! wake-up carries that task's Main VCPU period (PIBS Alg. 10).

use crate::config::DeviceKind;
use crate::engine::EvKind;
use crate::machine::Simulation;

impl Simulation {
    /// Start the next queued request if the disk is idle.
    pub(crate) fn start_disk(&mut self, d: usize) {
        if self.devices[d].disk_busy || self.devices[d].disk_queue.is_empty() {
            return;
        }
        if let DeviceKind::Disk { latency, .. } = self.cfg.devices[d].kind {
            self.devices[d].disk_busy = true;
            self.post(
                self.now.saturating_add(latency),
                EvKind::DiskDone { device: d },
            );
        }
    }

    /// The request at the head of the queue completed: interrupt, next.
    pub(crate) fn disk_done(&mut self, d: usize) {
        let req = self.devices[d].disk_queue.pop_front();
        self.devices[d].disk_busy = false;
        if let Some((thread, submitted)) = req {
            self.device_interrupt(d, Some((thread, submitted)));
        }
        self.start_disk(d);
    }
}
