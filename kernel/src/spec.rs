//! `run=spec`: a workload the host describes -- Main and I/O VCPUs and
//! rt-app-like tasks (compute, read, write, sleep, period, loop) -- read
//! from the fw_cfg file `opt/irqlab/spec`, run under irqlab-core, and
//! reported per task (job response times), per fd, per class and per
//! request (`req` lines with the guest-side timestamps of each I/O: TRB
//! queued, top half, bottom half, bottom half done, task resumed).
//!
//! The format (one item per line, `#` starts a comment; times take a unit
//! suffix `ns`, `us`, `ms` or `s`):
//!
//! ```text
//! main NAME BUDGET PERIOD        # a Main VCPU: sporadic server C / T (QUEST-VCPU Alg. 3-6, 11-13)
//! io NAME UTIL%                  # an I/O VCPU: PIBS (Alg. 7-10); the k-th io line is I/O class k
//! fd N CLASS [bh=T]              # fd N starts in CLASS (default 1 + N % classes); its
//!                                # bottom half spends T of CPU time per completion
//! task NAME VCPU PRIO OP...      # a thread in Main VCPU VCPU, priority PRIO, running OP... in order
//! run DURATION                   # end of the run (default: when every task has run out of ops)
//! ```
//!
//! Ops: `compute=T` (T of the task's own CPU time), `read=FD` (one bulk IN
//! transfer, blocking), `write=FD` (one 16-byte bulk OUT packet, blocking),
//! `sleep=T`, `period=T` (the job ends: its response time since its
//! release is recorded, and the task sleeps until its next release, `T`
//! after the last), `iovcpu=FD:CLASS` (`usb_set_iovcpu`), `loop` (back to
//! the first op).
//!
//! Design principles: the spec is parsed and checked completely before
//! anything runs (every error names its line); the tasks' programs are
//! read-only once threads run; everything a task does that the kernel must
//! see (CPU time, I/O, job ends) is a kernel call, so the accounting is the
//! kernel's, against the TSC.

use alloc::string::String;
use alloc::vec::Vec;

use crate::sched::{self, Kernel};
use crate::{kprintln, KCell};

pub const FILE: &str = "opt/irqlab/spec";
const MAX_SIZE: usize = 64 * 1024;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    Compute(u64),
    Read(usize),
    Write(usize),
    Sleep(u64),
    Period(u64),
    SetClass(usize, usize),
    Loop,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum VcpuSpec {
    Main { name: String, budget: u64, period: u64 },
    Io { name: String, pct: u64 },
}

#[derive(Clone, Debug)]
pub struct TaskSpec {
    pub name: String,
    pub vcpu: String,
    pub prio: u32,
    pub ops: Vec<Op>,
}

#[derive(Clone, Debug, Default)]
pub struct Spec {
    pub vcpus: Vec<VcpuSpec>,
    pub tasks: Vec<TaskSpec>,
    pub fd_class: Vec<(usize, usize)>,
    /// Per fd, the CPU time its bottom half spends on each completion (the
    /// model's Omega_IO, USB-DIFFSERV Eq. 1), on top of the driver's own.
    pub bh_cost: Vec<(usize, u64)>,
    pub duration: Option<u64>,
}

impl Spec {
    pub fn io_count(&self) -> usize {
        self.vcpus
            .iter()
            .filter(|v| matches!(v, VcpuSpec::Io { .. }))
            .count()
    }
    pub fn uses_usb(&self) -> bool {
        self.tasks.iter().any(|t| {
            t.ops
                .iter()
                .any(|o| matches!(o, Op::Read(_) | Op::Write(_) | Op::SetClass(..)))
        })
    }
    fn main_named(&self, n: &str) -> bool {
        self.vcpus
            .iter()
            .any(|v| matches!(v, VcpuSpec::Main { name, .. } if name == n))
    }
}

/// A spec error: the line (1-based) and what is wrong.
#[derive(Clone, Copy, Debug)]
pub struct SpecError(pub usize, pub &'static str);

pub fn parse_time(s: &str) -> Option<u64> {
    let (num, mult) = if let Some(n) = s.strip_suffix("ns") {
        (n, 1)
    } else if let Some(n) = s.strip_suffix("us") {
        (n, 1_000)
    } else if let Some(n) = s.strip_suffix("ms") {
        (n, 1_000_000)
    } else if let Some(n) = s.strip_suffix('s') {
        (n, 1_000_000_000)
    } else {
        return None;
    };
    num.parse::<u64>().ok()?.checked_mul(mult)
}

fn parse_op(w: &str) -> Result<Op, &'static str> {
    if w == "loop" {
        return Ok(Op::Loop);
    }
    let (k, v) = w.split_once('=').ok_or("an op is KEY=VALUE or loop")?;
    let time = || {
        parse_time(v)
            .filter(|&t| t > 0)
            .ok_or("bad time (a number with ns, us, ms or s)")
    };
    let fd = || v.parse::<usize>().map_err(|_| "bad fd number");
    Ok(match k {
        "compute" => Op::Compute(time()?),
        "sleep" => Op::Sleep(time()?),
        "period" => Op::Period(time()?),
        "read" => Op::Read(fd()?),
        "write" => Op::Write(fd()?),
        "iovcpu" => {
            let (f, c) = v.split_once(':').ok_or("iovcpu=FD:CLASS")?;
            Op::SetClass(
                f.parse().map_err(|_| "bad fd number")?,
                c.parse().map_err(|_| "bad class")?,
            )
        }
        _ => return Err("unknown op"),
    })
}

/// Parses and checks a spec (names, references, ranges).
pub fn parse(text: &str) -> Result<Spec, SpecError> {
    let mut s = Spec::default();
    for (i, raw) in text.lines().enumerate() {
        let ln = i + 1;
        let line = raw.split('#').next().unwrap_or("");
        let w: Vec<&str> = line.split_ascii_whitespace().collect();
        let Some(&kind) = w.first() else { continue };
        let err = |m| SpecError(ln, m);
        match kind {
            "main" => {
                let [_, name, c, t] = w[..] else {
                    return Err(err("main NAME BUDGET PERIOD"));
                };
                let (Some(c), Some(t)) = (parse_time(c), parse_time(t)) else {
                    return Err(err("bad time (a number with ns, us, ms or s)"));
                };
                if c == 0 || c > t {
                    return Err(err("budget must be positive and at most the period"));
                }
                s.vcpus.push(VcpuSpec::Main {
                    name: name.into(),
                    budget: c,
                    period: t,
                });
            }
            "io" => {
                let [_, name, u] = w[..] else {
                    return Err(err("io NAME UTIL%"));
                };
                let pct = u
                    .strip_suffix('%')
                    .unwrap_or(u)
                    .parse::<u64>()
                    .map_err(|_| err("bad utilization"))?;
                if pct == 0 || pct > 100 {
                    return Err(err("utilization must be in 1..=100%"));
                }
                s.vcpus.push(VcpuSpec::Io {
                    name: name.into(),
                    pct,
                });
            }
            "fd" => {
                let (f, c, bh) = match w[..] {
                    [_, f, c] => (f, c, None),
                    [_, f, c, bh] => (f, c, Some(bh)),
                    _ => return Err(err("fd N CLASS [bh=T]")),
                };
                let f = f.parse().map_err(|_| err("bad fd number"))?;
                let c = c.parse().map_err(|_| err("bad class"))?;
                s.fd_class.push((f, c));
                if let Some(bh) = bh {
                    let t = bh
                        .strip_prefix("bh=")
                        .and_then(parse_time)
                        .ok_or(err("bh=T: bad time (a number with ns, us, ms or s)"))?;
                    s.bh_cost.push((f, t));
                }
            }
            "task" => {
                if w.len() < 5 {
                    return Err(err("task NAME VCPU PRIO OP..."));
                }
                let prio = w[3].parse().map_err(|_| err("bad priority"))?;
                let ops = w[4..]
                    .iter()
                    .map(|o| parse_op(o))
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(err)?;
                s.tasks.push(TaskSpec {
                    name: w[1].into(),
                    vcpu: w[2].into(),
                    prio,
                    ops,
                });
            }
            "run" => {
                let [_, d] = w[..] else {
                    return Err(err("run DURATION"));
                };
                s.duration = Some(parse_time(d).ok_or(err("bad time (a number with ns, us, ms or s)"))?);
            }
            _ => return Err(err("unknown line (main, io, fd, task, run)")),
        }
    }
    let mut names: Vec<&str> = Vec::new();
    for v in &s.vcpus {
        let n = match v {
            VcpuSpec::Main { name, .. } | VcpuSpec::Io { name, .. } => name.as_str(),
        };
        if names.contains(&n) {
            return Err(SpecError(0, "two VCPUs with one name"));
        }
        names.push(n);
    }
    if s.tasks.is_empty() {
        return Err(SpecError(0, "no task"));
    }
    for t in &s.tasks {
        if !s.main_named(&t.vcpu) {
            return Err(SpecError(0, "a task names no Main VCPU of the spec"));
        }
    }
    let io = s.io_count();
    if io > crate::usb::MAX_CLASSES {
        return Err(SpecError(0, "more I/O VCPUs than the driver has classes (2)"));
    }
    if s.uses_usb() && io == 0 {
        return Err(SpecError(0, "I/O ops need an I/O VCPU (an io line)"));
    }
    let class_ok = |c: usize| c >= 1 && c <= io;
    if s.fd_class.iter().any(|&(_, c)| !class_ok(c))
        || s.tasks
            .iter()
            .flat_map(|t| &t.ops)
            .any(|o| matches!(o, Op::SetClass(_, c) if !class_ok(*c)))
    {
        return Err(SpecError(0, "a class outside 1..=number of io lines"));
    }
    Ok(s)
}

static SPEC: KCell<Option<Spec>> = KCell::new(None);

fn spec() -> Option<&'static Spec> {
    // SAFETY: written once at boot, before any thread runs; read-only
    // afterwards (threads and handlers only read it).
    unsafe { SPEC.get() }.as_ref()
}

/// Reads, parses and installs the spec (boot, interrupts off).
pub fn load() -> Result<&'static Spec, String> {
    let data = crate::fwcfg::file(FILE, MAX_SIZE)
        .map_err(String::from)?
        .ok_or_else(|| alloc::format!("no fw_cfg file {FILE} (-fw_cfg name={FILE},file=SPEC)"))?;
    let text = core::str::from_utf8(&data).map_err(|_| String::from("not UTF-8"))?;
    let s = parse(text).map_err(|e| match e.0 {
        0 => String::from(e.1),
        n => alloc::format!("line {}: {}", n, e.1),
    })?;
    // SAFETY: boot, interrupts off, no reader yet.
    unsafe { *SPEC.get() = Some(s) };
    spec().ok_or_else(|| String::from("spec vanished"))
}

/// The CPU time fd `fd`'s bottom half spends per completion (0 if none).
pub fn bh_cost(fd: usize) -> u64 {
    spec().map_or(0, |s| {
        s.bh_cost.iter().rev().find(|(f, _)| *f == fd).map_or(0, |x| x.1)
    })
}

/// Spends `ns` of the calling thread's own CPU time (counted by the kernel).
pub fn compute(ns: u64) {
    // Spin by the clock for what is left, then ask again: the clock runs on
    // while the thread is preempted, so a spin of `left` never uses more
    // than `left` of CPU time, and the kernel is asked once per preemption,
    // not per iteration.
    let target = sched::kcall(sched::CALL_CPU_TIME, 0).saturating_add(ns);
    loop {
        let left = target.saturating_sub(sched::kcall(sched::CALL_CPU_TIME, 0));
        if left == 0 {
            break;
        }
        let until = crate::apic::now().saturating_add(left);
        while crate::apic::now() < until {
            core::hint::spin_loop();
        }
    }
}

/// A task's thread: runs its ops (`arg`: the task's index).
pub extern "C" fn task_main(arg: u64) -> ! {
    let ops: &[Op] = spec()
        .and_then(|s| s.tasks.get(arg as usize))
        .map_or(&[], |t| &t.ops[..]);
    let mut buf = [0u8; 64];
    let hello = *b"irqlab spec task";
    let mut pc = 0;
    while pc < ops.len() {
        match ops[pc] {
            Op::Compute(ns) => compute(ns),
            Op::Read(fd) => {
                sched::kcall3(
                    sched::CALL_READ,
                    fd as u64,
                    buf.as_mut_ptr() as u64,
                    buf.len() as u64,
                );
            }
            Op::Write(fd) => {
                sched::kcall3(
                    sched::CALL_WRITE,
                    fd as u64,
                    hello.as_ptr() as u64,
                    hello.len() as u64,
                );
            }
            Op::Sleep(ns) => {
                sched::kcall(sched::CALL_SLEEP_UNTIL, crate::apic::now().saturating_add(ns));
            }
            Op::Period(ns) => {
                sched::kcall(sched::CALL_PERIOD, ns);
            }
            Op::SetClass(fd, c) => {
                sched::kcall3(sched::CALL_SET_IOVCPU, fd as u64, c as u64, 0);
            }
            Op::Loop => {
                pc = 0;
                continue;
            }
        }
        pc += 1;
    }
    // A task released once (no `period` op) ends its one job here.
    let once = !ops.iter().any(|o| matches!(o, Op::Period(_)));
    loop {
        sched::kcall3(sched::CALL_DONE, u64::MAX, u64::from(once), 0);
    }
}

/// Creates the VCPUs, bottom halves and tasks of the installed spec.
pub fn setup(k: &mut Kernel, s: &Spec) -> Result<(), String> {
    let now = crate::apic::now();
    let e = |e: irqlab_core::CoreError| alloc::format!("{e}");
    let mut main_of: Vec<(String, usize)> = Vec::new();
    let mut class = 0;
    for v in &s.vcpus {
        match v {
            VcpuSpec::Main { name, budget, period } => {
                let id = k.add_main(now, name, *budget, *period).map_err(e)?;
                main_of.push((name.clone(), id));
            }
            VcpuSpec::Io { name, pct } => {
                class += 1;
                let id = k.add_io(now, name, *pct, 100).map_err(e)?;
                let bh = k
                    .add_thread(name, id, 1, crate::run::bottom_half, class)
                    .map_err(e)?;
                if let Some(u) = crate::usb::usb() {
                    u.add_class(id, bh);
                }
            }
        }
    }
    if let Some(u) = crate::usb::usb() {
        let nfds = u.fds.len();
        for t in &s.tasks {
            for o in &t.ops {
                if let Op::Read(f) | Op::Write(f) | Op::SetClass(f, _) = o {
                    if *f >= nfds {
                        return Err(alloc::format!(
                            "task {}: fd {} but {} usb-serial devices",
                            t.name,
                            f,
                            nfds
                        ));
                    }
                }
            }
        }
        for &(f, c) in &s.fd_class {
            match u.fds.get_mut(f) {
                Some(fd) if c >= 1 && c <= u.nclasses => fd.class = c,
                _ => return Err(alloc::format!("fd {f}: no such fd or class {c}")),
            }
        }
    }
    let mut threads = Vec::new();
    for (i, t) in s.tasks.iter().enumerate() {
        let Some(&(_, v)) = main_of.iter().find(|(n, _)| *n == t.vcpu) else {
            return Err(alloc::format!("task {}: no Main VCPU {}", t.name, t.vcpu));
        };
        threads.push(k.add_thread(&t.name, v, t.prio, task_main, i as u64).map_err(e)?);
    }
    // Released together once every stack exists (zeroing a stack takes
    // emulated time: under -icount each iteration of `rep stosb` counts).
    let start = crate::apic::now();
    kprintln!("spec: released_ns={} tasks={}", start, threads.len());
    for th in threads {
        k.threads[th].job_release = start;
        k.wake(start, th, None);
    }
    // A Main VCPU with a task that never blocks (compute steps in a loop)
    // is always backlogged from the release on, so its replenishments fall
    // on `start + kT`: CPU-bound for the per-period check, whatever its
    // other tasks do (a reader in it blocks, the VCPU does not idle).
    for (name, v) in &main_of {
        let never_blocks = s.tasks.iter().filter(|t| &t.vcpu == name).any(|t| {
            t.ops.contains(&Op::Loop) && t.ops.iter().all(|o| matches!(o, Op::Compute(_) | Op::Loop))
        });
        k.vcpus[*v].cpu_bound = never_blocks;
        // its periods start at the release (created earlier, it idled until then)
        k.vcpus[*v].r0 = start;
    }
    Ok(())
}

static DONE: KCell<usize> = KCell::new(0);

/// A task ran out of ops; the run ends when every task has (and the spec
/// names no duration).
pub fn task_done(k: &mut Kernel, now: u64) {
    // SAFETY: interrupts off (trap).
    let done = unsafe { DONE.get() };
    *done += 1;
    let all = spec().is_some_and(|s| s.duration.is_none() && *done >= s.tasks.len());
    if all {
        // SAFETY: as above.
        let start = unsafe { crate::RUN_END.get().0 };
        finish(k, start, now);
    }
}

/// Whether a spec is installed (the run is `run=spec`).
pub fn active() -> bool {
    spec().is_some()
}

/// The spec run's report, then the scheduling summary and checks.
pub fn finish(k: &mut Kernel, start: u64, now: u64) -> ! {
    let mut ok = true;
    for th in &k.threads {
        let j = &th.jobs;
        if j.num() == 0 && th.reads == 0 && th.writes == 0 {
            continue;
        }
        kprintln!(
            "task name={} jobs={} response_min_ns={} response_mean_ns={} response_max_ns={} missed={} reads={} writes={} io_errors={}",
            th.name,
            j.num(),
            j.min().map_or(0, |x| x.0),
            j.mean().map_or(0, |x| x as u64),
            j.max().map_or(0, |x| x.0),
            th.missed,
            th.reads,
            th.writes,
            th.io_errors
        );
        ok &= th.io_errors == 0;
    }
    for (t, release, end) in &k.job_log {
        kprintln!(
            "job task={} release_ns={} end_ns={}",
            k.threads[*t].name,
            release,
            end
        );
    }
    for (t, m, resumed) in &k.requests {
        kprintln!(
            "req task={} fd={} class={} submit_ns={} irq_ns={} bh_ns={} done_ns={} resumed_ns={}",
            k.threads[*t].name,
            m.fd,
            m.class,
            m.submit,
            m.irq,
            m.bh,
            m.done,
            resumed
        );
    }
    if let Some(u) = crate::usb::usb() {
        ok &= crate::run::print_usb(k, u);
    }
    crate::run::finish_with(k, start, now, ok, 0)
}
