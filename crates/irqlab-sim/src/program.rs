//! Task programs in the spirit of rt-app phases: releases (periodic or
//! once), compute steps, blocking I/O on a device, sleeps, rebinding an fd
//! to another I/O class (`usb_set_iovcpu`), and loops; jobs and their
//! response times and deadline misses.
//!
//! Design principles:
//! * A program is flattened once into a list of operations with a program
//!   counter; control steps (loops, binds) take no time, so a program is
//!   stepped until it computes or blocks, with a guard against a loop that
//!   does neither.
//! * A release while the previous job is unfinished is queued (backlog),
//!   as a periodic thread's would be; a job still unfinished past its
//!   deadline at the end of the run is a miss too.
//! * A program of one compute step (every plain periodic task) is a
//!   property of the model, not of a benchmark: its release starts the
//!   step and its completion ends the job without the interpreter
//!   (`TaskState::single`), with exactly the interpreter's effects (a test
//!   compares it with the same step inside a loop run once).

use std::collections::VecDeque;

use irqlab_core::{LatencyStats, Nanos};

use crate::collect::TaskInfo;
use crate::config::{DeviceKind, InterruptPath, Phase, Release};
use crate::engine::EvKind;
use crate::machine::{core_err, Simulation, MAX_STEPS};
use crate::thread::{Kind, Thread};
use crate::SimError;

#[derive(Copy, Clone, Debug)]
pub(crate) enum Op {
    Compute(u64),
    Io(usize),
    Sleep(u64),
    Bind {
        device: usize,
        class: usize,
    },
    LoopStart {
        count: Option<u64>,
    },
    /// `start`: the index of its `LoopStart` in the list the program was
    /// flattened into (`Simulation::ops`, shared by all tasks).
    LoopEnd {
        start: usize,
    },
}

pub(crate) fn flatten(phases: &[Phase], out: &mut Vec<Op>) {
    for p in phases {
        match p {
            Phase::Compute { ns } => out.push(Op::Compute(*ns)),
            Phase::Io { device } => out.push(Op::Io(*device)),
            Phase::Sleep { ns } => out.push(Op::Sleep(*ns)),
            Phase::Bind { device, class } => out.push(Op::Bind {
                device: *device,
                class: *class,
            }),
            Phase::Loop { count, body } => {
                let start = out.len();
                out.push(Op::LoopStart { count: *count });
                flatten(body, out);
                out.push(Op::LoopEnd { start });
            }
        }
    }
}

/// A task thread's program state. `repr(C)`, in the order a release and a
/// completion of a one-step program read it (for speed: fewer cache lines
/// per event when the tasks' state does not fit in L1); the interpreter's
/// loops, I/O waits and aborts come after.
#[derive(Clone, Debug)]
#[repr(C)]
pub(crate) struct TaskState {
    /// Release time of the current job.
    pub(crate) job: Option<u64>,
    /// The program is one compute step of this length: a job is that step,
    /// started at the release (`release`) and ended at its completion
    /// (`step_done`) without the interpreter (`run_program`), which would
    /// take the same steps (for speed, docs/performance.md).
    pub(crate) single: Option<u64>,
    pub(crate) pc: usize,
    /// Its program: `Simulation::ops[ops.0..ops.1]`; `pc` counts from
    /// `ops.0`.
    pub(crate) ops: (usize, usize),
    pub(crate) task: usize,
    /// An I/O returning: record its latency when this compute ends.
    pub(crate) returning: Option<(usize, u64)>,
    pub(crate) backlog: VecDeque<u64>,
    pub(crate) loops: Vec<Option<u64>>,
    /// Device the task is blocked on, and when it asked.
    pub(crate) waiting_io: Option<(usize, u64)>,
    /// The current job was aborted at its deadline while blocked: drop it
    /// when it resumes (`abort_on_miss`).
    pub(crate) aborted: Option<u64>,
}

impl Simulation {
    /// One thread per task, in its Main VCPU. Each name moves from the
    /// configuration to the thread (the configuration's is empty
    /// afterwards; the metrics take it from the thread). The core's thread
    /// slot gets no name, as a configured server's (`add_servers`).
    pub(crate) fn add_tasks(&mut self) -> Result<(), SimError> {
        // most programs are one compute step: room for one op per task
        self.ops.reserve(self.cfg.tasks.len());
        for i in 0..self.cfg.tasks.len() {
            let t = &mut self.cfg.tasks[i];
            let cpu = self.cfg.servers[t.server].cpu;
            let core = self.cpus[cpu]
                .sched
                .add_thread(String::new(), self.servers[t.server].local, t.priority)
                .map_err(core_err(|| format!("tasks[{i}]")))?;
            let thread = self.threads.len();
            self.cpus[cpu].threads.push(thread);
            let start = self.ops.len();
            flatten(&t.program, &mut self.ops);
            let ops = (start, self.ops.len());
            let single = match self.ops[start..] {
                [Op::Compute(ns)] => Some(ns),
                _ => None,
            };
            self.tasks.push(TaskInfo {
                thread,
                released: 0,
                completed: 0,
                misses: 0,
                aborted: 0,
                response: LatencyStats::new(),
                completions: Vec::new(),
            });
            self.servers[t.server].threads += 1;
            self.threads.push(Thread {
                name: std::mem::take(&mut t.name),
                cpu,
                server: t.server,
                core,
                remaining: 0,
                active: false,
                kind: Kind::Task(TaskState {
                    task: i,
                    ops,
                    pc: ops.0,
                    loops: Vec::new(),
                    job: None,
                    backlog: VecDeque::new(),
                    waiting_io: None,
                    returning: None,
                    aborted: None,
                    single,
                }),
            });
        }
        Ok(())
    }

    /// Execute program steps until the next compute step or a block.
    /// Precondition: the thread is a task.
    pub(crate) fn run_program(&mut self, t: usize) -> Result<(), SimError> {
        let now = self.now;
        let mut steps = 0u32;
        loop {
            steps += 1;
            if steps > MAX_STEPS {
                return Err(SimError::Config {
                    path: format!("tasks ({})", self.threads[t].name),
                    value: format!("t = {now} ns"),
                    rule: "the program makes no progress (a loop that neither computes nor blocks)"
                        .into(),
                });
            }
            let Kind::Task(ts) = &mut self.threads[t].kind else {
                return Ok(());
            };
            if ts.pc >= ts.ops.1 {
                // job complete
                let task = ts.task;
                if let Some(rel) = ts.job.take() {
                    self.job_done(task, rel);
                }
                let Kind::Task(ts) = &mut self.threads[t].kind else {
                    return Ok(());
                };
                ts.pc = ts.ops.0;
                ts.loops.clear();
                if let Some(r) = ts.backlog.pop_front() {
                    ts.job = Some(r);
                    continue;
                }
                return self.park(t);
            }
            let op = self.ops[ts.pc];
            match op {
                Op::Compute(ns) => {
                    ts.pc += 1;
                    self.threads[t].remaining = ns;
                    return self.ensure_active(t);
                }
                Op::Sleep(ns) => {
                    ts.pc += 1;
                    self.post(now.saturating_add(ns), EvKind::Wake { thread: t });
                    return self.park(t);
                }
                Op::LoopStart { count } => {
                    ts.loops.push(count);
                    ts.pc += 1;
                }
                Op::LoopEnd { start } => {
                    let again = match ts.loops.last_mut() {
                        Some(Some(n)) => {
                            *n -= 1;
                            *n > 0
                        }
                        Some(None) => true,
                        None => false,
                    };
                    if again {
                        ts.pc = start + 1;
                    } else {
                        ts.loops.pop();
                        ts.pc += 1;
                    }
                }
                Op::Bind { device, class } => {
                    ts.pc += 1;
                    self.devices[device].class_now = class;
                }
                Op::Io(dev) => {
                    ts.pc += 1;
                    ts.waiting_io = Some((dev, now));
                    self.devices[dev].last_reader = Some(t);
                    if let DeviceKind::Usb { echo_of, .. } = self.cfg.devices[dev].kind {
                        if echo_of.is_some() && self.devices[dev].echo_credit == 0 {
                            // an echo read waits for data written to the OUT endpoint
                            self.devices[dev].echo_waiters.push_back((t, now));
                        } else {
                            if echo_of.is_some() {
                                self.devices[dev].echo_credit -= 1;
                            }
                            self.usb_submit(dev, t, now);
                        }
                        return self.park(t);
                    }
                    let disk = matches!(self.cfg.devices[dev].kind, DeviceKind::Disk { .. });
                    if disk {
                        self.devices[dev].disk_queue.push_back((t, now));
                        self.start_disk(dev);
                        return self.park(t);
                    }
                    if self.devices[dev].buffer.pop_front().is_some() {
                        // data already there: the read returns after
                        // Omega_Main
                        if self.io_return(t)? {
                            return Ok(());
                        }
                        continue;
                    }
                    self.devices[dev].waiters.push_back(t);
                    return self.park(t);
                }
            }
        }
    }

    /// The task's pending I/O returns now: it spends Omega_Main (returns
    /// true: a compute step was set) or records the latency at once.
    pub(crate) fn io_return(&mut self, t: usize) -> Result<bool, SimError> {
        let Kind::Task(ts) = &mut self.threads[t].kind else {
            return Ok(false);
        };
        let Some((dev, since)) = ts.waiting_io.take() else {
            return Ok(false);
        };
        let omega = self.cfg.devices[dev].omega_main;
        if omega > 0 {
            ts.returning = Some((dev, since));
            self.threads[t].remaining = omega;
            self.ensure_active(t)?;
            Ok(true)
        } else {
            self.request_done(dev, since);
            Ok(false)
        }
    }

    /// A blocked task resumes (sleep end, I/O completion).
    pub(crate) fn resume_task(&mut self, t: usize) -> Result<(), SimError> {
        if self.threads[t].active {
            return Ok(());
        }
        if let Kind::Task(ts) = &mut self.threads[t].kind {
            if ts.aborted.is_some() && ts.aborted == ts.job {
                // aborted at its deadline while blocked: drop it now
                ts.aborted = None;
                ts.waiting_io = None;
                return self.next_job(t);
            }
        }
        if self.io_return(t)? {
            return Ok(());
        }
        self.run_program(t)
    }

    /// How late a periodic task's timer wakes it (`switch_costs.
    /// timer_latency`; thread-based paths): its release events fire this
    /// long after the nominal release, which stays the job's release time.
    pub(crate) fn release_latency(&self, task: usize) -> u64 {
        match (self.cfg.path, &self.cfg.tasks[task].release) {
            (InterruptPath::Hypervisor, _) | (_, Release::Once { .. }) => 0,
            _ => self.cfg.switch_costs.timer_latency,
        }
    }

    pub(crate) fn release(&mut self, task: usize) -> Result<(), SimError> {
        let fired = self.now;
        let now = fired - self.release_latency(task);
        let t = self.tasks[task].thread;
        self.tasks[task].released += 1;
        if let Release::Periodic { period, jobs, .. } = self.cfg.tasks[task].release {
            if jobs.is_none_or(|j| self.tasks[task].released < j) {
                self.post(fired.saturating_add(period), EvKind::Release { task });
            }
        }
        if self.cfg.tasks[task].abort_on_miss {
            if let Some(d) = self.deadline_of(task) {
                let at = now.saturating_add(d).max(fired);
                if at != u64::MAX {
                    self.post(at, EvKind::Deadline { task, release: now });
                }
            }
        }
        let Kind::Task(ts) = &mut self.threads[t].kind else {
            return Ok(());
        };
        if ts.job.is_some() {
            ts.backlog.push_back(now);
            return Ok(());
        }
        ts.job = Some(now);
        if let Some(ns) = ts.single {
            // `run_program`'s one step: the compute starts (no loop is open)
            ts.pc = ts.ops.1;
            self.threads[t].remaining = ns;
            return self.ensure_active(t);
        }
        ts.pc = ts.ops.0;
        ts.loops.clear();
        self.run_program(t)
    }

    /// The compute step of a one-step program (`TaskState::single`) of
    /// task thread `t` is done: what `run_program` does at the end of the
    /// program -- the job completes, and the next queued job starts its
    /// step at once, or the thread blocks.
    pub(crate) fn single_done(&mut self, t: usize, ns: u64) -> Result<(), SimError> {
        let Kind::Task(ts) = &mut self.threads[t].kind else {
            return Ok(());
        };
        if let Some(rel) = ts.job.take() {
            let task = ts.task;
            self.job_done(task, rel);
        }
        let Kind::Task(ts) = &mut self.threads[t].kind else {
            return Ok(());
        };
        if let Some(r) = ts.backlog.pop_front() {
            ts.job = Some(r);
            ts.pc = ts.ops.1;
            self.threads[t].remaining = ns;
            return self.ensure_active(t);
        }
        ts.pc = ts.ops.0;
        self.park(t)
    }

    /// The relative deadline of `task`'s jobs (periodic tasks only).
    fn deadline_of(&self, task: usize) -> Option<u64> {
        match self.cfg.tasks[task].release {
            Release::Periodic {
                period, deadline, ..
            } => Some(deadline.unwrap_or(period)),
            Release::Once { .. } => None,
        }
    }

    /// `abort_on_miss`: the deadline of the job released at `release` has
    /// come. Unfinished, it is a miss and is dropped: at once if it is
    /// queued or computing (the next queued job starts), at its resumption
    /// if it is blocked in I/O or a sleep.
    pub(crate) fn deadline_passed(&mut self, task: usize, release: u64) -> Result<(), SimError> {
        let t = self.tasks[task].thread;
        let active = self.threads[t].active;
        if active {
            // charge what ran so far to the job being dropped
            self.touch(self.threads[t].cpu);
        }
        let Kind::Task(ts) = &mut self.threads[t].kind else {
            return Ok(());
        };
        if let Some(k) = ts.backlog.iter().position(|&r| r == release) {
            ts.backlog.remove(k);
        } else if ts.job == Some(release) {
            if !active {
                ts.aborted = Some(release);
            } else {
                ts.returning = None;
                self.tasks[task].misses += 1;
                self.tasks[task].aborted += 1;
                self.threads[t].remaining = 0;
                return self.next_job(t);
            }
        } else {
            return Ok(()); // finished in time
        }
        self.tasks[task].misses += 1;
        self.tasks[task].aborted += 1;
        Ok(())
    }

    /// Drop the current job of task thread `t` unfinished and start the
    /// next queued one, or block.
    fn next_job(&mut self, t: usize) -> Result<(), SimError> {
        let Kind::Task(ts) = &mut self.threads[t].kind else {
            return Ok(());
        };
        ts.job = ts.backlog.pop_front();
        ts.pc = ts.ops.0;
        ts.loops.clear();
        if ts.job.is_some() {
            return self.run_program(t);
        }
        self.park(t)
    }

    /// An I/O request of `dev` submitted at `since` returned to its task.
    pub(crate) fn request_done(&mut self, dev: usize, since: u64) {
        self.devices[dev].latency.record(Nanos(self.now - since));
        if self.cfg.records.requests {
            self.records.request(dev, since, self.now);
        }
    }

    pub(crate) fn job_done(&mut self, task: usize, release: u64) {
        let now = self.now;
        let deadline = self.deadline_of(task);
        let info = &mut self.tasks[task];
        info.completed += 1;
        info.response.record(Nanos(now - release));
        let late = deadline.is_some_and(|d| now > release.saturating_add(d));
        if late {
            info.misses += 1;
        }
        if self.cfg.records.jobs {
            self.records.job(task, release, now, late);
        }
        if info.completions.len() < self.cfg.max_completions {
            info.completions.push(now);
        }
    }

    /// Jobs of `task` released but unfinished at the end of the run whose
    /// deadline had passed (the current job and the backlog): misses that
    /// `job_done` never sees, e.g. of a task starved from its first release.
    pub(crate) fn unfinished_past_deadline(&self, task: usize) -> u64 {
        let Release::Periodic {
            period, deadline, ..
        } = self.cfg.tasks[task].release
        else {
            return 0;
        };
        let d = deadline.unwrap_or(period);
        let Kind::Task(ts) = &self.threads[self.tasks[task].thread].kind else {
            return 0;
        };
        let end = self.cfg.duration;
        ts.job
            .iter()
            .filter(|&&rel| ts.aborted != Some(rel)) // counted when aborted
            .chain(ts.backlog.iter())
            .filter(|&&rel| end > rel.saturating_add(d))
            .count() as u64
    }
}
