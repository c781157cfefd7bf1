//! `irqlab run MODEL.yaml`: the system model (`irqlab-model`: `machine`,
//! `vcpus`, `tasks`, `devices`) on real threads -- the same file `irqlab
//! analyze` and `irqlab simulate` take (DESIGN §10).
//!
//! * `quest` / `quest-no-iovcpu`: VCPUs become servers under irqlab-rt's
//!   supervisor, tasks managed threads running their programs, devices real
//!   event sources with the model's arrival process (`devices.rs`) or
//!   request devices served by a controller thread (xhci/usb, disk:
//!   `requests.rs`) (`quest.rs`);
//! * `linux`: the baseline -- plain SCHED_FIFO / SCHED_DEADLINE threads and
//!   the kernel's own softirq handling, no irqlab server (`linux.rs`).
//!
//! What cannot run for real is refused by `plan` with the field, the value
//! and the reason. The result (`ModelRun`) uses the simulator's metric names
//! (`deadline_misses`, `response.p50_ns`, `latency`, `share_fraction`...)
//! so `irqlab compare` puts both side by side.
//!
//! Design principles: one loader (`irqlab_model::load_str`) and one
//! lowering (`irqlab_system::resolve`, which `plan` maps); the program
//! interpreter is shared by every path; the run stops after its duration or
//! at SIGINT/SIGTERM and still reports; the host's timer stalls (a thread
//! woken late for its release) are measured and reported, so a value above
//! a bound can be told apart from a broken guarantee.

mod devices;
mod ksoftirqd;
mod linux;
pub mod plan;
mod program;
mod quest;
pub mod requests;
mod sources;
mod upcalls;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use irqlab_core::{LatencyRecorder, Nanos};
use irqlab_model::model::PathKind;
use serde::Serialize;

pub use plan::Plan;

use crate::error::RtError;
use crate::{sys, Report};

/// A distribution in ns, named like the simulator's metrics.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Dist {
    pub count: u64,
    pub min_ns: Option<u64>,
    pub mean_ns: Option<f64>,
    pub p50_ns: Option<u64>,
    pub p99_ns: Option<u64>,
    pub max_ns: Option<u64>,
    pub std_dev_ns: Option<f64>,
    /// Buckets `(low, high, count)` with a non-zero count.
    pub histogram_ns: Vec<(u64, u64, u64)>,
}

impl Dist {
    fn of(r: &LatencyRecorder) -> Dist {
        let l = crate::report::Latency::of(r);
        Dist {
            count: l.count,
            min_ns: l.min,
            mean_ns: l.mean,
            p50_ns: l.p50,
            p99_ns: l.p99,
            max_ns: l.max,
            std_dev_ns: l.std_dev,
            histogram_ns: l.histogram,
        }
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct TaskRun {
    pub name: String,
    pub vcpu: String,
    pub period_ns: Option<u64>,
    pub deadline_ns: Option<u64>,
    pub released: u64,
    pub completed: u64,
    /// Late finished jobs plus `unfinished_past_deadline`.
    pub deadline_misses: u64,
    pub unfinished_past_deadline: u64,
    pub response: Dist,
    /// The first response times (for CDFs).
    pub response_samples_ns: Vec<u64>,
    /// From a release to the thread running: the host's timer stalls.
    pub release_delay: Dist,
    pub cpu_time_ns: u64,
}

#[derive(Clone, Debug, Serialize)]
pub struct DeviceRun {
    pub name: String,
    pub kind: &'static str,
    pub class: String,
    /// Items the generator sent.
    pub sent: u64,
    /// Items the bottom half handled (linux: the reads, the kernel handled
    /// them).
    pub handled: u64,
    /// Dropped: by the kernel (full socket buffer) or for a full buffer.
    pub dropped: u64,
    /// Reads that returned, call to return (the simulator's `latency`).
    pub latency: Dist,
    pub bytes: u64,
    pub throughput_bytes_per_s: f64,
}

#[derive(Clone, Debug, Serialize)]
pub struct ServerRun {
    pub name: String,
    pub cpu: usize,
    pub kind: String,
    pub share_fraction: f64,
}

/// The top-half thread of a class without an I/O VCPU (`quest-no-iovcpu`;
/// on the quest path the runtime's top half reports `top_half_cpu_ns`).
#[derive(Clone, Debug, Default, Serialize)]
pub struct TopHalfRun {
    pub class: String,
    /// Ready reports it took, each costing its fd's top half.
    pub events: u64,
    /// Its CPU time over the run.
    pub cpu_ns: u64,
}

/// What a run of a model produced.
#[derive(Clone, Debug, Serialize)]
pub struct ModelRun {
    pub model: String,
    pub path: PathKind,
    /// `fifo` or `park-only` (irqlab-rt's mode), or `linux` (plain threads).
    pub mode: String,
    pub duration_ns: u64,
    pub seed: u64,
    /// The real CPU of each model CPU.
    pub cpus: Vec<usize>,
    pub interrupted: bool,
    pub tasks: Vec<TaskRun>,
    pub devices: Vec<DeviceRun>,
    pub servers: Vec<ServerRun>,
    /// The largest release delay of any task, and the supervisors' largest
    /// timer lateness (quest paths): a host stall shows here.
    pub max_release_delay_ns: u64,
    pub max_supervisor_timer_ns: Option<u64>,
    /// Model values the real machine replaces with its own costs.
    pub notes: Vec<String>,
    pub warnings: Vec<String>,
    /// irqlab-rt's own report (quest paths).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub runtime: Option<Report>,
    /// The classes' top-half threads (quest-no-iovcpu).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub top_halves: Vec<TopHalfRun>,
}

/// What a path's run hands back.
pub(crate) struct Outcome {
    pub t0: Nanos,
    pub t_end: Nanos,
    pub recs: Vec<Arc<Mutex<program::TaskRec>>>,
    pub devs: Vec<Arc<devices::DevShared>>,
    pub interrupted: bool,
    pub report: Option<Report>,
    /// linux: (VCPU, CPU, share) from its threads' CPU time.
    pub linux_shares: Vec<(String, usize, f64)>,
    pub warnings: Vec<String>,
    /// quest-no-iovcpu: its classes' top-half threads.
    pub top_halves: Vec<TopHalfRun>,
}

/// Wait until `t` or a stop signal; `true` if stopped by a signal.
pub(crate) fn wait_for(t: Nanos) -> bool {
    let stop = &crate::signals::STOP;
    while sys::now() < t && !stop.load(Ordering::SeqCst) {
        let left = t.saturating_sub(sys::now()).0.max(1);
        std::thread::sleep(std::time::Duration::from_nanos(left.min(10_000_000)));
    }
    stop.load(Ordering::SeqCst)
}

/// Open every device's descriptor.
pub(crate) fn open_devices(p: &Plan) -> Result<Vec<Arc<devices::DevShared>>, RtError> {
    p.devices
        .iter()
        .enumerate()
        .map(|(i, d)| devices::DevShared::open(d, &format!("devices[{i}]")).map(Arc::new))
        .collect()
}

/// Start the generators, run until the end or a stop signal, then stop and
/// join every helper thread (`threads` too, also when a generator fails to
/// start); returns whether a signal stopped the run, and its end.
pub(crate) fn feed(
    p: &Plan,
    devs: &[Arc<devices::DevShared>],
    t0: Nanos,
    stop: &Arc<AtomicBool>,
    mut threads: Vec<JoinHandle<()>>,
) -> Result<(bool, Nanos), RtError> {
    let mut started = Ok(());
    for (i, d) in p.devices.iter().enumerate() {
        let Some(a) = &d.arrival else { continue };
        match devices::start_generator(i, d, a, &devs[i], p.seed, t0, p.gen_cpu, stop.clone()) {
            Ok(h) => threads.push(h),
            Err(e) => {
                started = Err(e);
                break;
            }
        }
    }
    let interrupted = started.is_ok() && wait_for(t0 + p.duration);
    let t_end = sys::now();
    stop.store(true, Ordering::SeqCst);
    for t in threads {
        let _ = t.join();
    }
    started.map(|_| (interrupted, t_end))
}

/// Load, check and lower a model without running anything (`irqlab run
/// --check`).
pub fn check_model(name: &str, text: &str) -> Result<Plan, RtError> {
    plan::plan(name, text, None, None)
}

/// Run model `text` on real threads for its `simulation.duration` (or
/// `duration`) with its seed (or `seed`).
pub fn run_model(
    name: &str,
    text: &str,
    duration: Option<Nanos>,
    seed: Option<u64>,
) -> Result<ModelRun, RtError> {
    run_plan(&plan::plan(name, text, duration, seed)?)
}

/// Run a lowered model.
pub fn run_plan(p: &Plan) -> Result<ModelRun, RtError> {
    let o = match p.path {
        PathKind::Linux => linux::run(p)?,
        _ => quest::run(p)?,
    };
    Ok(collect(p, o))
}

fn collect(p: &Plan, o: Outcome) -> ModelRun {
    let run_ns = o.t_end.saturating_sub(o.t0).0;
    let mut max_delay = 0;
    let tasks = p
        .tasks
        .iter()
        .zip(&o.recs)
        .map(|(t, r)| {
            let r = r.lock().unwrap_or_else(|e| e.into_inner());
            let (released, overdue) = program::released_and_overdue(t, o.t0, o.t_end, r.completed);
            max_delay = max_delay.max(r.release_delay.max().map_or(0, |n| n.0));
            let (period, deadline) = match &t.release {
                plan::Release::Periodic {
                    period, deadline, ..
                } => (Some(period.0), Some(deadline.0)),
                plan::Release::Once { deadline, .. } => (None, deadline.map(|d| d.0)),
            };
            let cpu_time = o
                .report
                .as_ref()
                .and_then(|rep| rep.task(&t.name))
                .map_or(r.cpu_time.0, |tr| tr.cpu_time_ns);
            TaskRun {
                name: t.name.clone(),
                vcpu: p.vcpus[t.vcpu].name.clone(),
                period_ns: period,
                deadline_ns: deadline,
                released,
                completed: r.completed,
                deadline_misses: r.late + overdue,
                unfinished_past_deadline: overdue,
                response: Dist::of(&r.response),
                response_samples_ns: r.response.samples().iter().map(|n| n.0).collect(),
                release_delay: Dist::of(&r.release_delay),
                cpu_time_ns: cpu_time,
            }
        })
        .collect();
    let devices = p
        .devices
        .iter()
        .zip(&o.devs)
        .map(|(d, s)| {
            let lat = s.reads.lock().map(|r| Dist::of(&r)).unwrap_or_default();
            let per = if d.kind == plan::DevKind::Generic {
                0
            } else {
                d.bytes as u64
            };
            let bytes = lat.count * per;
            DeviceRun {
                name: d.name.clone(),
                kind: match d.kind {
                    plan::DevKind::Nic => "nic",
                    plan::DevKind::Generic => "generic",
                    plan::DevKind::Usb => "usb",
                    plan::DevKind::Disk => "disk",
                },
                class: d.class.clone(),
                sent: s.sent.load(Ordering::Relaxed),
                handled: s.handled.load(Ordering::Relaxed),
                dropped: s.overflow.load(Ordering::Relaxed) + s.kernel_drops(),
                latency: lat,
                bytes,
                throughput_bytes_per_s: bytes as f64 / (run_ns.max(1) as f64 / 1e9),
            }
        })
        .collect();
    let (servers, mode, sup) = match &o.report {
        Some(rep) => (
            rep.servers
                .iter()
                .map(|s| ServerRun {
                    name: s.name.clone(),
                    cpu: s.cpu,
                    kind: s.kind.to_string(),
                    share_fraction: s.share,
                })
                .collect(),
            serde_json::to_value(rep.mode)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default(),
            rep.supervisors
                .iter()
                .filter_map(|s| s.timer_latency.max)
                .max(),
        ),
        None => (
            o.linux_shares
                .iter()
                .map(|(n, c, s)| ServerRun {
                    name: n.clone(),
                    cpu: *c,
                    kind: "thread".into(),
                    share_fraction: *s,
                })
                .collect(),
            "linux".to_string(),
            None,
        ),
    };
    let mut warnings = o.warnings;
    if let Some(rep) = &o.report {
        warnings.extend(rep.warnings.iter().cloned());
    }
    ModelRun {
        model: p.name.clone(),
        path: p.path,
        mode,
        duration_ns: run_ns,
        seed: p.seed,
        cpus: p.cpus.clone(),
        interrupted: o.interrupted,
        tasks,
        devices,
        servers,
        max_release_delay_ns: max_delay,
        max_supervisor_timer_ns: sup,
        notes: p.notes.clone(),
        warnings,
        runtime: o.report,
        top_halves: o.top_halves,
    }
}
