//! Per-job and per-request records (optional; `records` in the
//! configuration): one row per finished job and per finished I/O request,
//! kept as columns of integers so they reach Python as NumPy arrays
//! without a JSON round trip (`irqlab.sim.SimResult.job_records`).
//!
//! Design principles: off by default (the metrics' distributions need no
//! per-event memory); when on, every row is kept -- never silently capped
//! -- so memory grows with the run, which the user asked for.

pub use irqlab_system::config::RecordsCfg;

/// The recorded rows, as columns (all of one length per table).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Records {
    /// Jobs: task index (model order).
    pub job_task: Vec<u32>,
    /// Jobs: release time (ns).
    pub job_release: Vec<u64>,
    /// Jobs: completion time (ns).
    pub job_completion: Vec<u64>,
    /// Jobs: 1 when finished after the deadline.
    pub job_late: Vec<u8>,
    /// Requests: device index (model order).
    pub req_device: Vec<u32>,
    /// Requests: submission or arrival time (ns).
    pub req_start: Vec<u64>,
    /// Requests: return to the task (ns).
    pub req_end: Vec<u64>,
}

impl Records {
    pub(crate) fn job(&mut self, task: usize, release: u64, completion: u64, late: bool) {
        self.job_task.push(task as u32);
        self.job_release.push(release);
        self.job_completion.push(completion);
        self.job_late.push(u8::from(late));
    }

    pub(crate) fn request(&mut self, device: usize, start: u64, end: u64) {
        self.req_device.push(device as u32);
        self.req_start.push(start);
        self.req_end.push(end);
    }
}
