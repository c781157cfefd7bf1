//! Periodic guest tasks (VINT §III: a VCPU's tasks `(C, T)` at fixed
//! priorities): their table in the shared page, and what the guest logged
//! of their jobs.
//!
//! What it is: the VMM writes each task's priority, period, WCET and first
//! release (guest TSC ticks) before boot; the guest kernel's scheduler
//! releases the jobs from its LAPIC timer (TSC-deadline mode, one interrupt
//! per earliest release), runs them by fixed priority together with the
//! devices' DSRs (a job's WCET is CPU time: time in which the guest did not
//! run does not count), and logs every completed job (task, release, start,
//! end; guest TSC). Releases of task `t` are at `T0 + offset + k * period`,
//! so a late job is never released late: the log's release is the nominal
//! one, and `end - release` is the job's response time.
//!
//! Design principles: the table is checked before boot (field, value,
//! rule); the guest writes only counters and the log; the host converts
//! guest TSC to its clock with the VMM's two-point fit.

use irqlab_core::{LatencyRecorder, Nanos};
use serde::Serialize;

use crate::abi::*;
use crate::error::VmmError;
use crate::vm::Vm;

/// A periodic guest task.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GuestTask {
    pub name: String,
    /// Higher is more urgent; 1..=1,000,000 (the background loop is 0, a
    /// DSR is above every task unless `VmmConfig::dsr_priorities` says).
    pub priority: u64,
    pub period: Nanos,
    /// CPU time per job.
    pub wcet: Nanos,
    /// First release after the guest's boot.
    pub offset: Nanos,
}

/// Most urgent priority a task may have.
pub const TASK_PRIO_MAX: u64 = 1_000_000;

/// A DSR's priority when none is given: above every task (device 0 first).
pub fn default_dsr_priority(d: usize) -> u64 {
    2 * TASK_PRIO_MAX - d as u64
}

/// Refuse a task table the guest cannot run, naming the field.
pub fn check(tasks: &[GuestTask]) -> Result<(), VmmError> {
    if tasks.len() > NTASK_MAX {
        return Err(VmmError::config(
            "tasks",
            tasks.len(),
            format!("the guest kernel runs at most {NTASK_MAX} periodic tasks"),
        ));
    }
    for (i, t) in tasks.iter().enumerate() {
        let f = |x: &str| format!("tasks[{i}].{x}");
        if !(1..=TASK_PRIO_MAX).contains(&t.priority) {
            return Err(VmmError::config(
                f("priority"),
                t.priority,
                format!("must be 1..={TASK_PRIO_MAX}"),
            ));
        }
        if t.period < Nanos::from_us(100) || t.period > Nanos::from_secs(10) {
            return Err(VmmError::config(
                f("period"),
                format!("{} ns", t.period.0),
                "must be 100 us .. 10 s",
            ));
        }
        if t.wcet.is_zero() || t.wcet > t.period {
            return Err(VmmError::config(
                f("wcet"),
                format!("{} ns", t.wcet.0),
                format!("must be > 0 and at most the period ({} ns)", t.period.0),
            ));
        }
        if t.offset > Nanos::from_secs(10) {
            return Err(VmmError::config(
                f("offset"),
                format!("{} ns", t.offset.0),
                "must be at most 10 s",
            ));
        }
    }
    Ok(())
}

/// Write the table (before boot); `ticks` converts to guest TSC ticks.
pub(crate) fn write_table(
    vm: &Vm,
    tasks: &[GuestTask],
    ticks: impl Fn(Nanos) -> u64,
) -> Result<(), VmmError> {
    vm.store(shared(S_NTASK), tasks.len() as u64)?;
    for (t, g) in tasks.iter().enumerate() {
        vm.store(task(t, TK_PRIO), g.priority)?;
        vm.store(task(t, TK_PERIOD), ticks(g.period).max(1))?;
        vm.store(task(t, TK_WCET), ticks(g.wcet).max(1))?;
        vm.store(task(t, TK_OFFSET), ticks(g.offset))?;
    }
    Ok(())
}

/// One completed job, host clock (ns, CLOCK_MONOTONIC).
#[derive(Clone, Copy, Debug, Serialize)]
pub struct JobRecord {
    pub task: usize,
    pub release_ns: u64,
    pub start_ns: u64,
    pub end_ns: u64,
}

/// Per task: what the guest released and completed.
#[derive(Clone, Debug, Serialize)]
pub struct TaskReport {
    pub name: String,
    pub priority: u64,
    pub period_ns: u64,
    pub wcet_ns: u64,
    pub releases: u64,
    pub completed: u64,
    /// Release to completion of the logged jobs.
    pub response: irqlab_rt::report::Latency,
}

/// The guest's scheduler state at the stop.
#[derive(Clone, Debug, Default, Serialize)]
pub struct GuestSchedReport {
    /// The LAPIC timer was armed (TSC-deadline mode).
    pub timer_armed: bool,
    pub timer_interrupts: u64,
    /// Host ns per iteration of the guest's work loop (its calibration at
    /// boot, the fastest of 16 short trials: how a WCET becomes CPU work).
    pub work_loop_ns: f64,
    pub tasks: Vec<TaskReport>,
    /// The first `JOB_SLOTS` completed jobs, in completion order.
    pub jobs: Vec<JobRecord>,
}

/// Read the guest's counters and job log.
pub(crate) fn collect(
    vm: &Vm,
    tasks: &[GuestTask],
    conv: &dyn Fn(u64) -> u64,
    tsc_khz: u64,
) -> GuestSchedReport {
    let load = |a| vm.load(a).unwrap_or(0);
    let n = load(shared(S_JOBS)).min(JOB_SLOTS);
    let jobs: Vec<JobRecord> = (0..n)
        .filter_map(|i| {
            let t = load(job(i, 0)) as usize;
            (t < tasks.len()).then(|| JobRecord {
                task: t,
                release_ns: conv(load(job(i, 1))),
                start_ns: conv(load(job(i, 2))),
                end_ns: conv(load(job(i, 3))),
            })
        })
        .collect();
    let tasks = tasks
        .iter()
        .enumerate()
        .map(|(t, g)| {
            let mut r = LatencyRecorder::new(1024, None);
            for j in jobs.iter().filter(|j| j.task == t) {
                r.record(Nanos(j.end_ns.saturating_sub(j.release_ns)));
            }
            TaskReport {
                name: g.name.clone(),
                priority: g.priority,
                period_ns: g.period.0,
                wcet_ns: g.wcet.0,
                releases: load(task(t, TK_RELEASES)),
                completed: load(task(t, TK_DONE)),
                response: irqlab_rt::report::Latency::of(&r),
            }
        })
        .collect();
    GuestSchedReport {
        timer_armed: load(shared(S_TIMER_MODE)) == 1,
        timer_interrupts: load(shared(S_TIMER_IRQS)),
        work_loop_ns: load(shared(S_CAL_TICKS)) as f64 * 1e6
            / tsc_khz.max(1) as f64
            / CAL_ITERS as f64,
        tasks,
        jobs,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(priority: u64, period_us: u64, wcet_us: u64) -> GuestTask {
        GuestTask {
            name: "x".into(),
            priority,
            period: Nanos::from_us(period_us),
            wcet: Nanos::from_us(wcet_us),
            offset: Nanos::ZERO,
        }
    }

    #[test]
    fn bad_tables_are_refused_by_field() {
        assert!(check(&[t(5, 33_367, 6_000)]).is_ok());
        let e = |ts: &[GuestTask]| check(ts).unwrap_err().to_string();
        assert!(e(&[t(0, 1000, 10)]).contains("tasks[0].priority"));
        assert!(e(&[t(1, 1000, 10), t(1, 50, 10)]).contains("tasks[1].period"));
        assert!(e(&[t(1, 1000, 0)]).contains("tasks[0].wcet"));
        assert!(e(&[t(1, 1000, 1001)]).contains("at most the period"));
        assert!(e(&vec![t(1, 1000, 10); NTASK_MAX + 1]).contains("at most 4"));
        let mut late = t(1, 1000, 10);
        late.offset = Nanos::from_secs(11);
        assert!(e(&[late]).contains("tasks[0].offset"));
    }

    #[test]
    fn dsrs_default_above_every_task() {
        assert!(default_dsr_priority(1) > TASK_PRIO_MAX);
        assert!(default_dsr_priority(0) > default_dsr_priority(1));
    }
}
