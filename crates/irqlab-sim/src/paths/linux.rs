//! The `linux` path: the stock kernel's interrupt handling, as the
//! baseline the papers compare with (USB-DIFFSERV §IV, UPCALL §2).
//!
//! * The hard IRQ (top half) runs at arrival and is charged to the task it
//!   interrupted.
//! * Its bottom half is raised as a softirq and runs at IRQ exit in the
//!   interrupted context (`__do_softirq`): the pending batch, restarted
//!   while more is raised, up to `MAX_SOFTIRQ_RESTART` times within 2 ms
//!   and while no woken task needs the CPU; the rest is left to the
//!   per-CPU ksoftirqd thread, whose policy the model gives (SCHED_FIFO,
//!   SCHED_DEADLINE...). While ksoftirqd has work, new softirqs go to it.
//! * With forced threading (`threaded_bh`, PREEMPT_RT) every bottom half
//!   runs in ksoftirqd.
//!
//! Design principle: softirq time is nobody's server time (it runs in
//! interrupt context, like the top half) but it is measured per CPU
//! (`softirq_ns`).

use std::collections::VecDeque;

use crate::collect::ServerInfo;
use crate::machine::{build_server, core_err, Simulation};
use crate::thread::{BhJob, Kind};
use crate::SimError;

/// The softirq context of one CPU (`linux` path).
#[derive(Debug, Default)]
pub(crate) struct Softirq {
    pub(crate) running: bool,
    pub(crate) started: u64,
    pub(crate) restarts: u32,
    pub(crate) batch: VecDeque<BhJob>,
    pub(crate) current: Option<(BhJob, u64)>,
    /// When the current bottom half started (for the trace).
    pub(crate) current_from: u64,
    pub(crate) pending: VecDeque<BhJob>,
}

impl Softirq {
    /// Running, or holding a bottom half: `softirq_step` has work.
    #[inline]
    pub(crate) fn active(&self) -> bool {
        self.running || self.current.is_some()
    }
}

impl Simulation {
    /// One ksoftirqd server and thread per CPU (`linux` path only).
    pub(crate) fn add_ksoftirqd(&mut self) -> Result<(), SimError> {
        if self.cfg.path != crate::config::InterruptPath::Linux {
            return Ok(());
        }
        for c in 0..self.cfg.cpus {
            let (server, _) = build_server(
                &self.cfg.linux.ksoftirqd,
                Some(self.cfg.linux.ksoftirqd_rank),
            )
            .map_err(core_err(|| "linux.ksoftirqd".to_owned()))?;
            let name = format!("ksoftirqd/{c}");
            let n = name.clone();
            let g = self.add_own_server(
                c,
                name.clone(),
                server,
                |local| ServerInfo::new(n, c, local, None, None),
                || "linux.ksoftirqd".to_owned(),
            )?;
            let t = self.add_bh_thread(name, g, 1, || "linux.ksoftirqd".to_owned())?;
            self.cpus[c].ksoftirqd = Some(t);
        }
        Ok(())
    }

    /// Linux: softirq at IRQ exit (`None`), or the ksoftirqd thread of the
    /// interrupted CPU with forced threading (PREEMPT_RT).
    pub(crate) fn linux_target(&self, c: usize) -> Option<usize> {
        if self.cfg.linux.threaded_bh {
            self.cpus[c].ksoftirqd
        } else {
            None
        }
    }

    /// Whether ksoftirqd of CPU `c` has work (Linux then leaves new
    /// softirqs to it instead of running them at IRQ exit).
    pub(crate) fn ksoftirqd_busy(&self, c: usize) -> Option<usize> {
        let t = self.cpus[c].ksoftirqd?;
        match &self.threads[t].kind {
            Kind::BottomHalf { queue, current } if current.is_some() || !queue.is_empty() => {
                Some(t)
            }
            _ => None,
        }
    }

    /// `raise_softirq` at the end of a hard IRQ on CPU `c`.
    pub(crate) fn raise_softirq(&mut self, c: usize, job: BhJob) -> Result<(), SimError> {
        if let Some(t) = self.ksoftirqd_busy(c) {
            return self.enqueue_bh(t, job);
        }
        let now = self.now;
        let sq = &mut self.cpus[c].softirq;
        sq.pending.push_back(job);
        if !sq.running {
            sq.running = true;
            sq.started = now;
            sq.restarts = 0;
            sq.batch = std::mem::take(&mut sq.pending);
        }
        self.dirty.mark(c);
        Ok(())
    }

    /// Advance the softirq context of CPU `c` (`__do_softirq`): run the
    /// batch of pending bottom halves; when more were raised meanwhile,
    /// restart up to `max_restart` times within `max_softirq_time` unless a
    /// woken task needs the CPU; leave the rest to ksoftirqd. Returns true
    /// while the softirq owns the CPU (a check is armed).
    pub(crate) fn softirq_step(&mut self, c: usize) -> Result<bool, SimError> {
        let now = self.now;
        loop {
            if let Some((_, rem)) = &self.cpus[c].softirq.current {
                if *rem > 0 {
                    let t = now.saturating_add(*rem);
                    self.arm(c, t);
                    return Ok(true);
                }
                if let Some((job, _)) = self.cpus[c].softirq.current.take() {
                    if self.trace.enabled() {
                        let from = self.cpus[c].softirq.current_from;
                        let name = format!("softirq {}", self.cfg.devices[job.device].name);
                        self.trace.irq_slice(c, "softirq", &name, from, now);
                    }
                    self.cpus[c].seg_start = now;
                    self.deliver(c, job)?;
                }
                continue;
            }
            let sq = &mut self.cpus[c].softirq;
            if !sq.running {
                return Ok(false);
            }
            if let Some(job) = sq.batch.pop_front() {
                let (w, flow) = (job.work, job.flow);
                sq.current = Some((job, w));
                sq.current_from = now;
                // the interrupted thread's slice ends here
                self.close_segment(c);
                self.trace.flow_end(flow, c, now);
                continue;
            }
            if sq.pending.is_empty() {
                sq.running = false;
                return Ok(false);
            }
            let l = &self.cfg.linux;
            let resched = self.cpus[c].wake_resched;
            let sq = &mut self.cpus[c].softirq;
            if sq.restarts < l.max_restart && now - sq.started < l.max_softirq_time && !resched {
                sq.restarts += 1;
                sq.batch = std::mem::take(&mut sq.pending);
                continue;
            }
            // Too many restarts, too long, or a task to run: wake ksoftirqd.
            let rest = std::mem::take(&mut sq.pending);
            sq.running = false;
            if let Some(t) = self.cpus[c].ksoftirqd {
                for job in rest {
                    self.enqueue_bh(t, job)?;
                }
            }
            return Ok(false);
        }
    }
}
