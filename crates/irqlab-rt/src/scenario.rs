//! `irqlab run SCENARIO.yaml`: an rt-app-like workload on real file
//! descriptors, described with the simulator model's vocabulary (`vcpus`
//! with `kind: main|io`, `policy`, `budget`, `period`, `utilization`,
//! `io_class`; `tasks` on a `vcpu`), plus `sources`: UDP sockets on
//! loopback, eventfds, timerfds and pipes, each with a generator (a period
//! or a flood) and bound either to an I/O class or to an upcall.
//!
//! Design principles: every key is known (`deny_unknown_fields`); every
//! error names the field path, the value and the rule; generators run on a
//! CPU the runtime does not manage, so their cost does not pollute the
//! measurement; the run ends after `duration` or at SIGINT/SIGTERM/SIGHUP
//! (a closed terminal ends a run like Ctrl-C, with its report), and
//! the report accounts for every generated item (handled, dropped by the
//! kernel, or still queued).

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::UdpSocket;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use irqlab_core::{Inherit, Nanos, Utilization};
use irqlab_model::units::{parse_duration, parse_utilization};
use serde::{Deserialize, Serialize};

use crate::error::RtError;
use crate::{sys, Backend, Config, IoServer, Report, Runtime, ServerHandle, UpcallBudget};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Scenario {
    #[serde(default)]
    runtime: RuntimeSpec,
    vcpus: Vec<VcpuSpec>,
    #[serde(default)]
    tasks: Vec<TaskSpec>,
    #[serde(default)]
    sources: Vec<SourceSpec>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RuntimeSpec {
    cpus: Option<Vec<usize>>,
    /// CPU of the generators (default: a CPU the runtime does not manage).
    generator_cpu: Option<usize>,
    duration: Option<String>,
    #[serde(default)]
    backend: Backend,
    #[serde(default)]
    require_fifo: bool,
    /// Default catch-up policy of periodic tasks (`run_late` or `skip`).
    #[serde(default)]
    catch_up: crate::CatchUp,
    /// Put the first N raw dispatch latencies of each event path in the
    /// report (`dispatch_samples_ns`), at most the recorder's capacity.
    #[serde(default)]
    report_samples: usize,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct VcpuSpec {
    name: String,
    #[serde(default = "main_kind")]
    kind: String,
    policy: String,
    budget: Option<String>,
    period: Option<String>,
    utilization: Option<String>,
    io_class: Option<String>,
    /// PIBS: the Main VCPU whose period the I/O VCPU inherits.
    serves: Option<String>,
    /// PIBS inheritance: `paper` (QUEST-VCPU Alg. 10, default) or
    /// `strict` (drop to the next waiter when service for one ends).
    inherit: Option<String>,
    /// `unbounded`: rank (smaller is more urgent); default 0 (highest).
    rank: Option<u64>,
    cpu: Option<usize>,
}

fn main_kind() -> String {
    "main".into()
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct TaskSpec {
    name: String,
    vcpu: String,
    /// A periodic task...
    period: Option<String>,
    /// ... or a task woken by the bottom half (or upcall) of this source.
    wake_on: Option<String>,
    /// CPU time per job.
    work: String,
    deadline: Option<String>,
    #[serde(default)]
    priority: u32,
    /// After a stall: `run_late` (every release runs) or `skip` (releases
    /// whose deadline passed are skipped); default `runtime.catch_up`.
    catch_up: Option<crate::CatchUp>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct SourceSpec {
    name: String,
    kind: String,
    /// Time between items; "0" (or "0s") floods.
    interval: String,
    /// CPU time the handler spends per item.
    #[serde(default)]
    work: Option<String>,
    /// Items handled per handler invocation at most.
    #[serde(default = "default_batch")]
    batch: usize,
    class: Option<String>,
    upcall: Option<UpcallSpec>,
}

fn default_batch() -> usize {
    32
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct UpcallSpec {
    budget: String,
    period: String,
    /// `user` (default): the handler runs in the runtime's top half;
    /// `kernel`: an eBPF count handler (cost `work`) runs in the softirq of
    /// a `udp` source, `budget` of handler time per `period` per CPU, and
    /// the source's `class` takes what is past the budget (`kupcall`).
    #[serde(default)]
    mode: Option<String>,
    /// kernel mode: at most this many events per period too.
    #[serde(default)]
    events: Option<u64>,
    /// kernel mode: without BPF privilege or support, leave every event
    /// to the class (with a warning) instead of failing.
    #[serde(default)]
    fallback: bool,
}

fn dur(field: &str, v: &str) -> Result<Nanos, RtError> {
    parse_duration(v).map_err(|e| RtError::config(field, v, e))
}

fn need<'a>(field: &str, v: &'a Option<String>, why: &str) -> Result<&'a str, RtError> {
    v.as_deref()
        .ok_or_else(|| RtError::config(field, "(missing)", why.to_string()))
}

/// `vcpus[i]`'s budget and period, with `0 < budget <= period`.
fn budget_period(i: usize, v: &VcpuSpec) -> Result<(Nanos, Nanos), RtError> {
    let f = |k: &str| format!("vcpus[{i}].{k}");
    let b = need(&f("budget"), &v.budget, "a sporadic server needs a budget")?;
    let p = need(&f("period"), &v.period, "a sporadic server needs a period")?;
    let (bn, pn) = (dur(&f("budget"), b)?, dur(&f("period"), p)?);
    if bn.is_zero() || bn > pn {
        return Err(RtError::config(
            f("budget"),
            b,
            format!("must be in (0, period = {p}]"),
        ));
    }
    Ok((bn, pn))
}

/// What a run of a scenario produced: the runtime report plus, per source,
/// what its generator sent.
#[derive(Debug, Serialize)]
pub struct RunResult {
    pub scenario: String,
    pub report: Report,
    /// Items each event path's generators sent (keyed like
    /// `report.events`: the I/O VCPU's name for a class, the source's name
    /// for an upcall).
    pub sent: HashMap<String, u64>,
    pub interrupted: bool,
}

pub(crate) static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_stop_signal(_: libc::c_int) {
    STOP.store(true, Ordering::SeqCst);
}

/// Restores the previous SIGINT/SIGTERM/SIGHUP handlers on drop.
pub(crate) struct SignalGuard(Vec<(libc::c_int, libc::sigaction)>);

impl SignalGuard {
    pub(crate) fn install() -> SignalGuard {
        STOP.store(false, Ordering::SeqCst);
        let mut old = Vec::new();
        for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
            // SAFETY: valid sigaction structs; the handler only stores an
            // atomic.
            unsafe {
                let mut sa: libc::sigaction = std::mem::zeroed();
                sa.sa_sigaction = on_stop_signal as extern "C" fn(libc::c_int) as usize;
                libc::sigemptyset(&mut sa.sa_mask);
                let mut prev: libc::sigaction = std::mem::zeroed();
                if libc::sigaction(sig, &sa, &mut prev) == 0 {
                    old.push((sig, prev));
                }
            }
        }
        SignalGuard(old)
    }
}

impl Drop for SignalGuard {
    fn drop(&mut self) {
        for (sig, prev) in &self.0 {
            // SAFETY: restoring a sigaction read earlier.
            unsafe {
                libc::sigaction(*sig, prev, std::ptr::null_mut());
            }
        }
    }
}

/// A generator thread writing to one source until stopped.
struct Generator {
    name: String,
    sent: Arc<AtomicU64>,
    handle: std::thread::JoinHandle<()>,
}

fn spin(work: Nanos) {
    if work.is_zero() {
        return;
    }
    let end = sys::own_cpu_time() + work;
    while sys::own_cpu_time() < end {
        std::hint::spin_loop();
    }
}

/// Parse, validate and run `text` (the scenario file's contents) for its
/// duration (or `duration` if given), stopping early at SIGINT, SIGTERM or
/// SIGHUP.
pub fn run_str(name: &str, text: &str, duration: Option<Nanos>) -> Result<RunResult, RtError> {
    prepare(name, text, duration)?.run()
}

/// Parse and validate `text` and build its runtime without starting
/// anything (what `irqlab run --check` does).
pub fn check_str(name: &str, text: &str) -> Result<(), RtError> {
    prepare(name, text, None).map(|_| ())
}

/// A generator's body: runs on its own thread until the flag is set,
/// counting what it sent.
type Start = Box<dyn FnOnce(Arc<AtomicBool>, Arc<AtomicU64>) + Send>;

/// A scenario built into a runtime, ready to run: servers, tasks and
/// bindings declared, file descriptors open, generators prepared.
pub struct Prepared {
    name: String,
    rt: Runtime,
    starts: Vec<(String, Start)>,
    gen_cpu: Option<usize>,
    run_for: Nanos,
}

/// Parse `text`, validate it and declare everything on a new runtime.
pub fn prepare(name: &str, text: &str, duration: Option<Nanos>) -> Result<Prepared, RtError> {
    let sc: Scenario = serde_yaml::from_str(text)
        .map_err(|e| RtError::config(name, "(file)", format!("not a valid scenario: {e}")))?;
    let allowed = sys::allowed_cpus();
    let mut cfg = Config::default();
    if let Some(c) = &sc.runtime.cpus {
        cfg.cpus = c.clone();
    }
    cfg.backend = sc.runtime.backend;
    cfg.require_fifo = sc.runtime.require_fifo;
    cfg.catch_up = sc.runtime.catch_up;
    if sc.runtime.report_samples > crate::SAMPLES {
        return Err(RtError::config(
            "runtime.report_samples",
            sc.runtime.report_samples,
            format!("at most {} (the recorder's capacity)", crate::SAMPLES),
        ));
    }
    cfg.report_samples = sc.runtime.report_samples;
    let gen_cpu = sc
        .runtime
        .generator_cpu
        .or_else(|| allowed.iter().copied().find(|c| !cfg.cpus.contains(c)));
    let run_for = match (duration, &sc.runtime.duration) {
        (Some(d), _) => d,
        (None, Some(d)) => dur("runtime.duration", d)?,
        (None, None) => Nanos::from_secs(5),
    };
    let mut rt = Runtime::new(cfg)?;
    // VCPUs: Main VCPUs first (PIBS I/O VCPUs name the one they serve).
    let mut mains: HashMap<&str, ServerHandle> = HashMap::new();
    let mut classes = HashMap::new();
    let mut class_vcpu: HashMap<String, String> = HashMap::new();
    for (i, v) in sc.vcpus.iter().enumerate() {
        let f = |k: &str| format!("vcpus[{i}].{k}");
        match (v.kind.as_str(), v.policy.as_str()) {
            ("main", "sporadic") => {
                let (b, p) = budget_period(i, v)?;
                mains.insert(&v.name, rt.main_vcpu(&v.name, b, p, v.cpu)?);
            }
            ("main", p) => {
                return Err(RtError::config(
                    f("policy"),
                    p,
                    "a Main VCPU is a sporadic server",
                ))
            }
            ("io", _) => {}
            (k, _) => return Err(RtError::config(f("kind"), k, "one of main, io")),
        }
    }
    for (i, v) in sc.vcpus.iter().enumerate() {
        if v.kind != "io" {
            continue;
        }
        let f = |k: &str| format!("vcpus[{i}].{k}");
        let class = need(
            &f("io_class"),
            &v.io_class,
            "an I/O VCPU serves one I/O class",
        )?;
        let server = match v.policy.as_str() {
            "pibs" => {
                let u = need(
                    &f("utilization"),
                    &v.utilization,
                    "a PIBS I/O VCPU needs a utilization",
                )?;
                let utilization: Utilization =
                    parse_utilization(u).map_err(|e| RtError::config(f("utilization"), u, e))?;
                if utilization.is_zero() || utilization > Utilization::ONE {
                    return Err(RtError::config(f("utilization"), u, "must be in (0, 100%]"));
                }
                let s = need(
                    &f("serves"),
                    &v.serves,
                    "a PIBS I/O VCPU names the Main VCPU it serves",
                )?;
                let serves = *mains.get(s).ok_or_else(|| {
                    RtError::config(f("serves"), s, "not a Main VCPU of this scenario")
                })?;
                let inherit = match v.inherit.as_deref() {
                    None | Some("paper") => Inherit::Paper,
                    Some("strict") => Inherit::Strict,
                    Some(x) => {
                        return Err(RtError::config(f("inherit"), x, "one of paper, strict"))
                    }
                };
                IoServer::Pibs {
                    utilization,
                    serves,
                    inherit,
                }
            }
            "sporadic" => {
                let (budget, period) = budget_period(i, v)?;
                IoServer::Sporadic { budget, period }
            }
            "unbounded" => IoServer::Unbounded {
                rank: v.rank.unwrap_or(0),
            },
            p => {
                return Err(RtError::config(
                    f("policy"),
                    p,
                    "an I/O VCPU is pibs, sporadic or unbounded",
                ))
            }
        };
        if classes.contains_key(class) {
            return Err(RtError::config(
                f("io_class"),
                class,
                "served by another I/O VCPU already",
            ));
        }
        classes.insert(class.to_string(), rt.io_class(&v.name, server, v.cpu)?);
        class_vcpu.insert(class.to_string(), v.name.clone());
    }
    let mut wakes: HashMap<&str, Vec<crate::TaskHandle>> = HashMap::new();
    for (i, t) in sc.tasks.iter().enumerate() {
        let f = |k: &str| format!("tasks[{i}].{k}");
        let server = *mains.get(t.vcpu.as_str()).ok_or_else(|| {
            RtError::config(f("vcpu"), &t.vcpu, "not a Main VCPU of this scenario")
        })?;
        let work = dur(&f("work"), &t.work)?;
        match (&t.period, &t.wake_on) {
            (Some(p), None) => {
                let period = dur(&f("period"), p)?;
                if period.is_zero() {
                    return Err(RtError::config(f("period"), p, "must be positive"));
                }
                let deadline = match &t.deadline {
                    Some(d) => dur(&f("deadline"), d)?,
                    None => period,
                };
                if deadline.is_zero() {
                    return Err(RtError::config(f("deadline"), "0", "must be positive"));
                }
                let timing = crate::Periodic {
                    period,
                    deadline,
                    catch_up: t.catch_up.unwrap_or(sc.runtime.catch_up),
                };
                rt.spawn_periodic_with(server, &t.name, t.priority, timing, move |_| spin(work))?;
            }
            (None, Some(src)) => {
                if !sc.sources.iter().any(|s| &s.name == src) {
                    return Err(RtError::config(
                        f("wake_on"),
                        src,
                        "not a source of this scenario",
                    ));
                }
                if let Some(c) = t.catch_up {
                    return Err(RtError::config(
                        f("catch_up"),
                        format!("{c:?}"),
                        "an event-driven task has no releases to catch up",
                    ));
                }
                if t.deadline.is_some() {
                    return Err(RtError::config(
                        f("deadline"),
                        t.deadline.as_deref().unwrap_or(""),
                        "an event-driven task has no deadline of its own (its wake latency is measured)",
                    ));
                }
                let h = rt.spawn(server, &t.name, t.priority, move |ctx| {
                    while ctx.wait_wake() {
                        spin(work);
                    }
                })?;
                wakes.entry(src.as_str()).or_default().push(h);
            }
            (p, w) => {
                return Err(RtError::config(
                    f("period"),
                    format!("{p:?} / wake_on {w:?}"),
                    "a task has exactly one of `period` and `wake_on`",
                ))
            }
        }
    }
    // Sources: create the fds, bind them, and prepare their generators.
    let mut starts: Vec<(String, Start)> = Vec::new();
    for (i, s) in sc.sources.iter().enumerate() {
        let f = |k: &str| format!("sources[{i}].{k}");
        let interval = dur(&f("interval"), &s.interval)?;
        let work = match &s.work {
            Some(w) => dur(&f("work"), w)?,
            None => Nanos::ZERO,
        };
        if s.batch == 0 {
            return Err(RtError::config(
                f("batch"),
                0,
                "at least 1 item per invocation",
            ));
        }
        let batch = s.batch;
        let (fd, handler, start): (i32, Box<dyn FnMut() -> u64 + Send>, Option<Start>) =
            match s.kind.as_str() {
                "udp" => {
                    let rx = UdpSocket::bind("127.0.0.1:0")
                        .and_then(|r| r.set_nonblocking(true).map(|_| r))
                        .map_err(|e| RtError::from_io(f("kind"), e))?;
                    let to = rx
                        .local_addr()
                        .map_err(|e| RtError::from_io(f("kind"), e))?;
                    let fd = rx.as_raw_fd();
                    let h = move || {
                        let mut buf = [0u8; 2048];
                        let mut n = 0;
                        while n < batch as u64 && rx.recv(&mut buf).is_ok() {
                            n += 1;
                            spin(work);
                        }
                        n
                    };
                    let st: Start = Box::new(move |stop, sent| {
                        let Ok(tx) = UdpSocket::bind("127.0.0.1:0") else {
                            return;
                        };
                        let buf = [0u8; 64];
                        pace(interval, &stop, || {
                            if tx.send_to(&buf, to).is_ok() {
                                sent.fetch_add(1, Ordering::Relaxed);
                            }
                        });
                    });
                    (fd, Box::new(h), Some(st))
                }
                "eventfd" | "pipe" => {
                    let (r, w): (OwnedFd, OwnedFd) = if s.kind == "eventfd" {
                        let e = sys::eventfd()?;
                        // SAFETY: dup of a live descriptor, owned by the result.
                        let d = unsafe { libc::dup(e.0) };
                        if d < 0 {
                            return Err(RtError::last_os("dup(eventfd)"));
                        }
                        let raw = e.0;
                        std::mem::forget(e);
                        // SAFETY: both descriptors are open and now owned here.
                        unsafe { (OwnedFd::from_raw_fd(raw), OwnedFd::from_raw_fd(d)) }
                    } else {
                        let (r, w) = std::io::pipe().map_err(|e| RtError::from_io(f("kind"), e))?;
                        (OwnedFd::from(r), OwnedFd::from(w))
                    };
                    // SAFETY: F_SETFL on an owned descriptor.
                    unsafe {
                        libc::fcntl(r.as_raw_fd(), libc::F_SETFL, libc::O_NONBLOCK);
                    }
                    let fd = r.as_raw_fd();
                    let is_pipe = s.kind == "pipe";
                    let mut file = std::fs::File::from(r);
                    let h = move || {
                        // eventfd: one read returns the count; pipe: 8-byte items.
                        let mut n = 0;
                        let mut buf = [0u8; 8];
                        while n < batch as u64 {
                            match file.read(&mut buf) {
                                Ok(8) if !is_pipe => {
                                    let c = u64::from_ne_bytes(buf);
                                    for _ in 0..c {
                                        spin(work);
                                    }
                                    n += c;
                                    break;
                                }
                                Ok(k) if k > 0 => {
                                    n += 1;
                                    spin(work);
                                }
                                _ => break,
                            }
                        }
                        n
                    };
                    let mut wf = std::fs::File::from(w);
                    let st: Start = Box::new(move |stop, sent| {
                        let one = 1u64.to_ne_bytes();
                        pace(interval, &stop, || {
                            if wf.write_all(&one).is_ok() {
                                sent.fetch_add(1, Ordering::Relaxed);
                            }
                        });
                    });
                    (fd, Box::new(h), Some(st))
                }
                "timerfd" => {
                    if interval.is_zero() {
                        return Err(RtError::config(
                            f("interval"),
                            &s.interval,
                            "a timerfd needs a period",
                        ));
                    }
                    // SAFETY: creates a descriptor owned below.
                    let t = unsafe {
                        libc::timerfd_create(
                            libc::CLOCK_MONOTONIC,
                            libc::TFD_NONBLOCK | libc::TFD_CLOEXEC,
                        )
                    };
                    if t < 0 {
                        return Err(RtError::last_os("timerfd_create"));
                    }
                    // SAFETY: `t` is a fresh descriptor.
                    let mut file = std::fs::File::from(unsafe { OwnedFd::from_raw_fd(t) });
                    let ts = libc::timespec {
                        tv_sec: (interval.0 / 1_000_000_000) as libc::time_t,
                        tv_nsec: (interval.0 % 1_000_000_000) as libc::c_long,
                    };
                    let spec = libc::itimerspec {
                        it_interval: ts,
                        it_value: ts,
                    };
                    // SAFETY: valid itimerspec.
                    if unsafe { libc::timerfd_settime(t, 0, &spec, std::ptr::null_mut()) } != 0 {
                        return Err(RtError::last_os("timerfd_settime"));
                    }
                    let h = move || {
                        let mut buf = [0u8; 8];
                        match file.read(&mut buf) {
                            Ok(8) => {
                                let c = u64::from_ne_bytes(buf);
                                for _ in 0..c {
                                    spin(work);
                                }
                                c
                            }
                            _ => 0,
                        }
                    };
                    (t, Box::new(h), None)
                }
                k => {
                    return Err(RtError::config(
                        f("kind"),
                        k,
                        "one of udp, eventfd, pipe, timerfd",
                    ))
                }
            };
        let kernel = match s.upcall.as_ref().and_then(|u| u.mode.as_deref()) {
            None | Some("user") => {
                if let Some(u) = s
                    .upcall
                    .as_ref()
                    .filter(|u| u.events.is_some() || u.fallback)
                {
                    return Err(RtError::config(
                        f("upcall"),
                        format!("events {:?}, fallback {}", u.events, u.fallback),
                        "events and fallback belong to mode: kernel",
                    ));
                }
                false
            }
            Some("kernel") if s.kind == "udp" => true,
            Some("kernel") => {
                return Err(RtError::config(
                    f("upcall.mode"),
                    "kernel",
                    "kernel upcalls handle udp sources only",
                ))
            }
            Some(m) => return Err(RtError::config(f("upcall.mode"), m, "user or kernel")),
        };
        let mut handler = handler;
        let woken = wakes.remove(s.name.as_str()).unwrap_or_default();
        let handler = move |ev: &mut crate::Event| {
            let n = handler();
            if n > 0 {
                for &t in &woken {
                    ev.wake(t);
                }
            }
            n
        };
        match (&s.class, &s.upcall) {
            (Some(c), Some(u)) if kernel => {
                let class = *classes.get(c.as_str()).ok_or_else(|| {
                    RtError::config(
                        f("class"),
                        c,
                        "no I/O VCPU of this scenario serves this io_class",
                    )
                })?;
                let period = dur(&f("upcall.period"), &u.period)?;
                let spec = crate::kupcall::KernelUpcallSpec {
                    cost: work,
                    budget: Some(crate::kupcall::KernelBudget {
                        period,
                        time: Some(dur(&f("upcall.budget"), &u.budget)?),
                        events: u.events,
                    }),
                    fallback: u.fallback,
                    ..Default::default()
                };
                // The upcall owns a dup of the socket; the class's handler
                // reads through its own descriptor.
                // SAFETY: `fd` is open (owned by `handler`) for this call.
                let dup = unsafe { std::os::fd::BorrowedFd::borrow_raw(fd) }
                    .try_clone_to_owned()
                    .map_err(|e| RtError::from_io(f("kind"), e))?;
                rt.register_kernel_upcall(&s.name, dup, &spec, class, handler)
                    .map_err(|e| match e {
                        // Name the scenario's key: `kernel upcall budget.time`
                        // is this source's `upcall.budget`.
                        RtError::Config { field, value, rule } => {
                            let key = field.strip_prefix("kernel upcall ").unwrap_or(&field);
                            let key = key.strip_suffix(".time").unwrap_or(key);
                            RtError::config(f(&format!("upcall.{key}")), value, rule)
                        }
                        e => e,
                    })?;
            }
            (None, Some(_)) if kernel => {
                return Err(RtError::config(
                    f("class"),
                    "(missing)",
                    "a kernel upcall needs a class for the events past its budget",
                ))
            }
            (Some(c), None) => {
                let class = *classes.get(c.as_str()).ok_or_else(|| {
                    RtError::config(
                        f("class"),
                        c,
                        "no I/O VCPU of this scenario serves this io_class",
                    )
                })?;
                rt.bind_fd(fd, class, handler)?;
            }
            (None, Some(u)) => {
                let budget = UpcallBudget {
                    budget: dur(&f("upcall.budget"), &u.budget)?,
                    period: dur(&f("upcall.period"), &u.period)?,
                };
                rt.register_upcall(&s.name, fd, budget, handler)?;
            }
            _ => {
                return Err(RtError::config(
                    f("class"),
                    format!("{:?} / upcall {}", s.class, s.upcall.is_some()),
                    "a source has exactly one of `class` and `upcall`",
                ))
            }
        }
        if let Some(st) = start {
            let path = match &s.class {
                Some(c) => class_vcpu[c.as_str()].clone(),
                None => s.name.clone(),
            };
            starts.push((path, st));
        }
    }
    Ok(Prepared {
        name: name.to_string(),
        rt,
        starts,
        gen_cpu,
        run_for,
    })
}

impl Prepared {
    /// Start the runtime and the generators, run for the duration (or
    /// until SIGINT/SIGTERM/SIGHUP), stop and report.
    pub fn run(self) -> Result<RunResult, RtError> {
        let Prepared {
            name,
            mut rt,
            starts,
            gen_cpu,
            run_for,
        } = self;
        let sent = run_prepared(&mut rt, starts, gen_cpu, run_for)?;
        let report = rt.stop();
        let interrupted = STOP.load(Ordering::SeqCst);
        Ok(RunResult {
            scenario: name,
            report,
            sent,
            interrupted,
        })
    }
}

/// Start `rt` and the generators, wait for the duration or a stop signal,
/// stop the generators; returns what each event path's generators sent.
fn run_prepared(
    rt: &mut Runtime,
    starts: Vec<(String, Start)>,
    gen_cpu: Option<usize>,
    run_for: Nanos,
) -> Result<HashMap<String, u64>, RtError> {
    let _signals = SignalGuard::install();
    rt.start()?;
    let stop = Arc::new(AtomicBool::new(false));
    let mut gens = Vec::new();
    for (name, st) in starts {
        let sent = Arc::new(AtomicU64::new(0));
        let (s2, n2) = (stop.clone(), sent.clone());
        let handle = std::thread::Builder::new()
            .name(format!("irqlab-gen-{name}"))
            .spawn(move || {
                if let Some(c) = gen_cpu {
                    let _ = sys::pin(0, c);
                }
                st(s2, n2)
            })
            .map_err(|e| RtError::from_io("spawn generator", e))?;
        gens.push(Generator { name, sent, handle });
    }
    let t_end = sys::now() + run_for;
    while sys::now() < t_end && !STOP.load(Ordering::SeqCst) {
        std::thread::sleep(Duration::from_millis(10).min(Duration::from_nanos(
            t_end.saturating_sub(sys::now()).0.max(1),
        )));
    }
    stop.store(true, Ordering::SeqCst);
    let mut sent = HashMap::new();
    for g in gens {
        let _ = g.handle.join();
        *sent.entry(g.name).or_insert(0) += g.sent.load(Ordering::Relaxed);
    }
    Ok(sent)
}

/// Call `f` every `interval` (absolute pacing; zero: back to back) until
/// `stop`.
fn pace(interval: Nanos, stop: &AtomicBool, mut f: impl FnMut()) {
    let mut next = sys::now();
    while !stop.load(Ordering::Relaxed) {
        f();
        if interval.is_zero() {
            continue;
        }
        next += interval;
        let now = sys::now();
        if next > now {
            std::thread::sleep(Duration::from_nanos((next - now).0));
        }
    }
}
