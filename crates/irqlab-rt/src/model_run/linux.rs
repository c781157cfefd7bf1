//! The `linux` path for real: the baseline the papers compare with. Tasks
//! are plain threads -- SCHED_FIFO at their VCPU's priority (a `fifo`
//! VCPU), pinned to its CPU, or SCHED_DEADLINE with the `cbs` VCPU's
//! runtime and period, pinned too (refused where the kernel cannot admit a
//! pinned deadline thread: `deadline_refused`) -- reading their device's
//! fd directly; the kernel's own hard IRQ and softirq (and ksoftirqd, at
//! the model's `machine.linux.ksoftirqd` priority for the run when given:
//! `ksoftirqd.rs`) handle every packet. No irqlab server, no supervisor.
//!
//! Design principles: nothing here schedules; the kernel does. A thread
//! that cannot get its policy stops the run before it starts (with the
//! kernel's reason), so a baseline never silently runs as SCHED_OTHER.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Barrier, Mutex};

use irqlab_core::Nanos;

use super::devices::{sleep_abs, DevShared};
use super::ksoftirqd::KsoftirqdGuard;
use super::plan::{Plan, VcpuPolicy};
use super::program::{self, Exec, TaskRec};
use super::Outcome;
use crate::error::RtError;
use crate::sys;

struct Plain<'a> {
    stop: &'a AtomicBool,
    devs: &'a [Arc<DevShared>],
    omega: Vec<Nanos>,
}

impl Exec for Plain<'_> {
    fn sleep_until(&mut self, t: Nanos) -> bool {
        sleep_abs(t, self.stop)
    }
    fn read(&mut self, dev: usize) -> bool {
        let since = sys::now();
        let d = &self.devs[dev];
        loop {
            if d.take() {
                break;
            }
            // The kernel delivered it; this read returns it.
            let n = d.take_fd(1);
            if n > 0 {
                d.deliver(n - 1, Nanos::ZERO);
                d.handled.fetch_add(1, Ordering::Relaxed);
                d.replied(1);
                break;
            }
            if self.stop.load(Ordering::Relaxed) {
                return false;
            }
            sys::wait_readable(d.fd, Some(Nanos::from_ms(20)));
        }
        program::spin(self.omega[dev]);
        d.record_read(since);
        true
    }
    // `plan` refuses usb and disk devices on the linux path.
    fn request(&mut self, _dev: usize) -> bool {
        false
    }
    fn bind(&mut self, _dev: usize, _route: usize) {}
    fn running(&self) -> bool {
        !self.stop.load(Ordering::Relaxed)
    }
}

/// `sched_setattr(2)`'s argument.
#[repr(C)]
struct SchedAttr {
    size: u32,
    policy: u32,
    flags: u64,
    nice: i32,
    priority: u32,
    runtime: u64,
    deadline: u64,
    period: u64,
}

fn set_deadline(runtime: Nanos, period: Nanos) -> Result<(), RtError> {
    let a = SchedAttr {
        size: std::mem::size_of::<SchedAttr>() as u32,
        policy: 6, // SCHED_DEADLINE
        flags: 0,
        nice: 0,
        priority: 0,
        runtime: runtime.0,
        deadline: period.0,
        period: period.0,
    };
    // SAFETY: a valid sched_attr for the calling thread.
    let r = unsafe { libc::syscall(libc::SYS_sched_setattr, 0, &a as *const SchedAttr, 0) };
    if r != 0 {
        return Err(RtError::last_os("sched_setattr(SCHED_DEADLINE)"));
    }
    Ok(())
}

/// SCHED_DEADLINE on the model's CPU: the kernel admits a deadline task
/// only if its affinity spans its whole root domain (`__sched_setscheduler`
/// returns EPERM otherwise), so pinned to one CPU it runs only where that
/// CPU is a root domain of its own -- an exclusive cpuset partition
/// (cgroup v2 `cpuset.cpus.partition = root`) or a one-CPU machine. Left
/// unpinned it would run on any CPU of the root domain under global EDF,
/// not the system the model describes, so the run is refused instead,
/// saying why and what to do.
fn deadline_refused(i: usize, task: &str, cpu: usize, e: RtError) -> RtError {
    let root = {
        // SAFETY: plain syscall.
        unsafe { libc::geteuid() == 0 }
    };
    let eperm = matches!(&e, RtError::NotPermitted { .. })
        || matches!(&e, RtError::Sys { source, .. } if source.raw_os_error() == Some(libc::EPERM));
    if !(root && eperm) {
        return e;
    }
    RtError::config(
        format!("tasks[{i}] ({task})"),
        format!("SCHED_DEADLINE on CPU {cpu}"),
        format!(
            "the kernel admits a SCHED_DEADLINE thread pinned to CPU {cpu} only if that CPU is \
             its own root domain (an exclusive cpuset partition, cgroup v2 \
             cpuset.cpus.partition=root), which it is not here (this process may run on CPUs \
             {:?}): run irqlab \
             inside such a partition, or give the task a fifo VCPU",
            sys::allowed_cpus()
        ),
    )
}

pub(crate) fn run(p: &Plan) -> Result<Outcome, RtError> {
    sys::probe_fifo()?;
    let devs = super::open_devices(p)?;
    let recs: Vec<Arc<Mutex<TaskRec>>> = p.tasks.iter().map(|_| Arc::default()).collect();
    let stop = Arc::new(AtomicBool::new(false));
    let n = p.tasks.len();
    let ready = Arc::new(Barrier::new(n + 1));
    let start = Arc::new(Barrier::new(n + 1));
    let go: Arc<Mutex<Option<Nanos>>> = Arc::default();
    let (etx, erx) = std::sync::mpsc::channel::<RtError>();
    let mut threads = Vec::new();
    let mut warnings = Vec::new();
    for (i, t) in p.tasks.iter().enumerate() {
        let v = &p.vcpus[t.vcpu];
        let cpu = p.cpus[v.cpu];
        let policy = v.policy.clone();
        let (t, rec, devs2, stop2) = (t.clone(), recs[i].clone(), devs.clone(), stop.clone());
        let (ready2, start2, go2, etx) = (ready.clone(), start.clone(), go.clone(), etx.clone());
        let omega: Vec<Nanos> = p.devices.iter().map(|d| d.omega_main).collect();
        threads.push(
            std::thread::Builder::new()
                .name(format!("irqlab-lx-{}", t.name))
                .spawn(move || {
                    let set = match policy {
                        VcpuPolicy::Fifo { priority } => {
                            sys::pin(0, cpu).and_then(|_| sys::set_fifo(0, priority as i32))
                        }
                        VcpuPolicy::Deadline { runtime, period } => sys::pin(0, cpu)
                            .and_then(|_| set_deadline(runtime, period))
                            .map_err(|e| deadline_refused(i, &t.name, cpu, e)),
                        _ => Err(RtError::config(
                            format!("tasks ({})", t.name),
                            "vcpu",
                            "the linux path runs fifo and cbs VCPUs",
                        )),
                    };
                    let failed = set.is_err();
                    if let Err(e) = set {
                        let _ = etx.send(e);
                    }
                    ready2.wait();
                    start2.wait();
                    let t0 = go2.lock().ok().and_then(|g| *g);
                    let (Some(t0), false) = (t0, failed) else {
                        return;
                    };
                    let mut e = Plain {
                        stop: &stop2,
                        devs: &devs2,
                        omega,
                    };
                    program::run_task(&mut e, &t, t0, &rec);
                })
                .map_err(|e| RtError::from_io("spawn task", e))?,
        );
    }
    drop(etx);
    // Every thread has its policy (or said why not) before anything runs.
    let _signals = crate::signals::SignalGuard::install();
    // The model's ksoftirqd policy on the run's CPUs (and the generators',
    // where loopback raises NET_RX), restored when `_ksoftirqd` drops --
    // before `_signals`, so a Ctrl-C stops the run and still restores.
    let ksd = p.ksoftirqd.map(|prio| {
        let mut cpus = p.cpus.clone();
        cpus.extend(p.gen_cpu);
        cpus.sort_unstable();
        cpus.dedup();
        KsoftirqdGuard::apply(prio, &cpus)
    });
    ready.wait();
    let mut setup_error = erx.try_recv().ok();
    let _ksoftirqd = match ksd {
        Some(Ok(g)) => {
            let set: Vec<String> = g
                .applied()
                .iter()
                .map(|(n, old)| format!("ksoftirqd/{n} (was {} {})", old.name(), old.priority))
                .collect();
            warnings.push(format!(
                "machine.linux.ksoftirqd: SCHED_FIFO {} for the run on {}; restored afterwards",
                p.ksoftirqd.unwrap_or_default(),
                set.join(", ")
            ));
            Some(g)
        }
        Some(Err(e)) => {
            setup_error.get_or_insert(e);
            None
        }
        None => None,
    };
    let t0 = sys::now() + Nanos::from_ms(5);
    if setup_error.is_none() {
        if let Ok(mut g) = go.lock() {
            *g = Some(t0);
        }
    }
    start.wait();
    if let Some(e) = setup_error {
        for t in threads {
            let _ = t.join();
        }
        return Err(e);
    }
    let (interrupted, t_end) = super::feed(p, &devs, t0, &stop, threads)?;
    // CPU share per VCPU: its threads' CPU time over the run.
    let run = t_end.saturating_sub(t0).0.max(1) as f64;
    let linux_shares = p
        .vcpus
        .iter()
        .enumerate()
        .map(|(vi, v)| {
            let cpu: u64 = p
                .tasks
                .iter()
                .zip(&recs)
                .filter(|(t, _)| t.vcpu == vi)
                .map(|(_, r)| r.lock().map_or(0, |r| r.cpu_time.0))
                .sum();
            (v.name.clone(), p.cpus[v.cpu], cpu as f64 / run)
        })
        .collect();
    Ok(Outcome {
        t0,
        t_end,
        recs,
        devs,
        interrupted,
        report: None,
        linux_shares,
        warnings,
        top_halves: Vec::new(),
    })
}
