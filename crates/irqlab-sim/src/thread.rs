//! Threads: tasks (running programs, `program.rs`) and bottom-half threads
//! (serving a queue of work items: device bottom halves, xHCI
//! interrupters, ksoftirqd, a guest's ISR and DSR), and their wake-ups and
//! blocks through the core.
//!
//! Design principles:
//! * A thread is runnable in the core exactly when it has work
//!   (`active`): a task with a compute step, a bottom-half thread with a
//!   job; the machine never runs a thread the core did not dispatch.
//! * Every bottom-half job's wake-up passes the period of the Main VCPU it
//!   serves (PIBS Alg. 10), also when its thread is already active.
//! * A bottom-half job's remaining work is at least 1 ns, so every job is
//!   an event of its own in the schedule.

use std::collections::VecDeque;

use irqlab_core::{Nanos, ThreadId};

use crate::machine::{core_err, Simulation};
use crate::program::TaskState;
use crate::SimError;

/// What a bottom-half job does when it ends.
#[derive(Clone, Debug)]
pub(crate) enum Deliver {
    /// A NIC packet or generic event into the device's buffer.
    Event,
    /// A disk request: wake this thread.
    Request { thread: usize },
    /// The guest ISR of virtual interrupt `virq` ended: activate its DSR.
    VirqIsr(usize),
    /// The DSR of virtual interrupt `virq` ended: the flow is handled.
    VirqDsr(usize),
}

#[derive(Clone, Debug)]
pub(crate) struct BhJob {
    pub(crate) device: usize,
    pub(crate) work: u64,
    pub(crate) arrival: u64,
    pub(crate) period: Option<u64>,
    pub(crate) deliver: Deliver,
    pub(crate) flow: u64,
    /// Thread that runs it (`None`: softirq on the `linux` path).
    pub(crate) target: Option<usize>,
}

#[derive(Clone, Debug)]
pub(crate) enum Kind {
    Task(TaskState),
    BottomHalf {
        queue: VecDeque<BhJob>,
        current: Option<BhJob>,
    },
}

/// A thread of the simulated machine. `repr(C)`, hot fields first (issue
/// 20, the 8-CPU row): what every wake-up, dispatch, charge and block
/// reads (`cpu` .. `active`) is followed by the task state, whose own hot
/// fields come first (`TaskState`), and the name (read only in errors and
/// the metrics) is last. With 80 tasks the threads do not stay in L1
/// between two events of one task: each line an event touches is a miss.
#[derive(Clone, Debug)]
#[repr(C)]
pub(crate) struct Thread {
    pub(crate) cpu: usize,
    /// Global server index.
    pub(crate) server: usize,
    pub(crate) core: ThreadId,
    /// Compute left in the current step.
    pub(crate) remaining: u64,
    /// Runnable in the core.
    pub(crate) active: bool,
    pub(crate) kind: Kind,
    pub(crate) name: String,
}

impl Thread {
    /// A thread that serves a queue of bottom-half work items (device
    /// bottom halves, xHCI interrupters, guest ISR/DSR).
    pub(crate) fn bottom_half(name: String, cpu: usize, server: usize, core: ThreadId) -> Self {
        Thread {
            name,
            cpu,
            server,
            core,
            remaining: 0,
            active: false,
            kind: Kind::BottomHalf {
                queue: VecDeque::new(),
                current: None,
            },
        }
    }
}

impl Simulation {
    /// Core wake-up of a thread whose next step is computed.
    pub(crate) fn wake(&mut self, t: usize, inherit: Option<u64>) -> Result<(), SimError> {
        let c = self.threads[t].cpu;
        self.touch(c);
        let core = self.threads[t].core;
        let preempt = self.cpus[c]
            .sched
            .wakeup(Nanos(self.now), core, inherit.map(Nanos))
            .map_err(core_err(|| format!("wakeup of {}", self.threads[t].name)))?;
        self.threads[t].active = true;
        self.note_backlog(t);
        if preempt {
            self.cpus[c].need_resched = true;
            self.cpus[c].wake_resched = true;
        } else {
            self.merge_replenishment(c);
        }
        Ok(())
    }

    /// A wake-up that does not preempt may still have put a depleted
    /// server in line for a replenishment that changes the decision: the
    /// CPU must then be re-evaluated at that time (the core's
    /// `replenishment_due`), not only at the next event.
    pub(crate) fn merge_replenishment(&mut self, c: usize) {
        if let Some(t) = self.cpus[c].sched.replenishment_due() {
            let cpu = &mut self.cpus[c];
            cpu.next_update = Some(cpu.next_update.map_or(t.as_ns(), |u| u.min(t.as_ns())));
        }
    }

    pub(crate) fn block(&mut self, t: usize) -> Result<(), SimError> {
        let c = self.threads[t].cpu;
        self.touch(c);
        let core = self.threads[t].core;
        let was_running = self.cpus[c]
            .sched
            .block(Nanos(self.now), core)
            .map_err(core_err(|| format!("block of {}", self.threads[t].name)))?;
        self.threads[t].active = false;
        self.note_backlog(t);
        if was_running {
            self.cpus[c].need_resched = true;
        }
        Ok(())
    }

    /// The running thread finished its compute step.
    pub(crate) fn step_done(&mut self, t: usize) -> Result<(), SimError> {
        match &mut self.threads[t].kind {
            Kind::Task(ts) => {
                // (a one-step program's step ends its job: no interpreter;
                // it never returns from I/O)
                let single = ts.single.filter(|_| ts.pc == ts.ops.1);
                if let Some((dev, since)) = ts.returning.take() {
                    self.request_done(dev, since);
                }
                match single {
                    Some(ns) => self.single_done(t, ns),
                    None => self.run_program(t),
                }
            }
            Kind::BottomHalf { current, .. } => {
                if let Some(job) = current.take() {
                    self.bh_done(t, job)?;
                }
                self.next_bh_job(t)
            }
        }
    }

    pub(crate) fn ensure_active(&mut self, t: usize) -> Result<(), SimError> {
        if !self.threads[t].active {
            self.wake(t, None)?;
        }
        Ok(())
    }

    pub(crate) fn park(&mut self, t: usize) -> Result<(), SimError> {
        self.threads[t].remaining = 0;
        if self.threads[t].active {
            self.block(t)?;
        }
        Ok(())
    }

    pub(crate) fn enqueue_bh(&mut self, t: usize, job: BhJob) -> Result<(), SimError> {
        let period = job.period;
        if let Kind::BottomHalf { queue, .. } = &mut self.threads[t].kind {
            queue.push_back(job);
        }
        if !self.threads[t].active {
            self.next_bh_job(t)?;
        }
        // Every I/O event runs Alg. 10 once for the Main VCPU it serves
        // (PIBS inheritance; also for an already active I/O VCPU).
        let c = self.threads[t].cpu;
        self.touch(c);
        let core = self.threads[t].core;
        if self.cpus[c]
            .sched
            .wakeup(Nanos(self.now), core, period.map(Nanos))
            .map_err(core_err(|| "bottom-half request".to_owned()))?
        {
            self.cpus[c].need_resched = true;
        } else {
            self.merge_replenishment(c);
        }
        self.threads[t].active = true;
        self.note_backlog(t);
        Ok(())
    }

    /// Take the next bottom-half job, or block when there is none.
    pub(crate) fn next_bh_job(&mut self, t: usize) -> Result<(), SimError> {
        let Kind::BottomHalf { queue, current } = &mut self.threads[t].kind else {
            return Ok(());
        };
        let Some(job) = queue.pop_front() else {
            return self.park(t);
        };
        let (work, flow) = (job.work, job.flow);
        *current = Some(job);
        let cpu = self.threads[t].cpu;
        if self.trace.enabled() {
            // the arrow ends where the job starts to run: now if its
            // thread is running, else at the thread's next dispatch
            if self.cpus[cpu].running.is_some_and(|(r, _)| r == t) {
                self.trace.flow_end(flow, cpu, self.now);
            } else {
                self.wake_flow[t] = Some(flow);
            }
        }
        self.threads[t].remaining = work.max(1);
        Ok(())
    }

    pub(crate) fn bh_done(&mut self, t: usize, job: BhJob) -> Result<(), SimError> {
        let cpu = self.threads[t].cpu;
        self.deliver(cpu, job)
    }
}
