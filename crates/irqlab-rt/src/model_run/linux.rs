//! The `linux` path for real: the baseline the papers compare with. Tasks
//! are plain threads -- SCHED_FIFO at their VCPU's priority (a `fifo`
//! VCPU), pinned to its CPU, or SCHED_DEADLINE with the `cbs` VCPU's
//! runtime and period -- reading their device's fd directly; the kernel's
//! own hard IRQ and softirq (and ksoftirqd, at its own policy) handle every
//! packet. No irqlab server, no supervisor.
//!
//! Design principles: nothing here schedules; the kernel does. A thread
//! that cannot get its policy stops the run before it starts (with the
//! kernel's reason), so a baseline never silently runs as SCHED_OTHER.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Barrier, Mutex};

use irqlab_core::Nanos;

use super::devices::{sleep_abs, DevShared};
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
        if matches!(policy, VcpuPolicy::Deadline { .. }) {
            warnings.push(format!(
                "tasks[{i}] ({}): SCHED_DEADLINE threads are not pinned (admission control \
                 needs the whole root domain): it may run on any CPU",
                t.name
            ));
        }
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
                        VcpuPolicy::Deadline { runtime, period } => set_deadline(runtime, period),
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
    ready.wait();
    let setup_error = erx.try_recv().ok();
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
    })
}
