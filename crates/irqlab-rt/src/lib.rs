//! irqlab-rt: real threads on a stock Linux kernel, scheduled by
//! `irqlab-core` (DESIGN §7).
//!
//! What it is: a per-CPU [`supervisor`] (SCHED_FIFO 99, pinned) runs the
//! core's scheduler in real time on `CLOCK_MONOTONIC` and enforces its
//! decisions by switching SCHED_FIFO priorities and, for servers out of
//! budget, by parking their threads (`park`). Application threads run in
//! **Main VCPUs** (sporadic servers, QUEST-VCPU Alg. 3-6); file descriptors
//! are bound to **I/O classes** whose bottom halves run on **I/O VCPUs**
//! (PIBS, QUEST-VCPU Alg. 7-10, inheriting the period of the Main VCPU they
//! serve; `bind_fd` is USB-DIFFSERV's `usb_set_iovcpu`); a top-half thread
//! waits on the descriptors (epoll, or io_uring as an option) and
//! time-stamps every event. **Upcalls** (UPCALL §3.2) run a handler
//! directly in the top half, charged to and bounded by their own budget.
//! Every event's latencies (arrival to bottom-half start and end, and to
//! the wake-up of a task it releases) go to the core's `LatencyRecorder`.
//!
//! Design principles:
//! * The core decides; this crate feeds it time and events and carries out
//!   its `Dispatch` (no policy is re-implemented here).
//! * Budget use is CPU time from per-thread CPU clocks, not wall time.
//! * Nothing needs root except what the kernel demands: without SCHED_FIFO
//!   the runtime runs in [`Mode::ParkOnly`] (budgets still enforced by
//!   parking, no priority ordering) or refuses, as configured, and says so.
//! * Robustness: a panicking handler is caught (quietly: no backtrace on
//!   the handler's path, see `quiet`) and counted; an fd that errors or
//!   hangs up is reported and unbound; a bound fd is tracked by identity,
//!   not number (`io`: a closed or reused number never reaches the old
//!   handler); every event is handled or counted as dropped; `stop`
//!   restores every thread's policy and returns within
//!   `Config::stop_timeout` whatever the threads do (`threads`).
//! * Misses are attributed: an independent probe per CPU (`probe`) tells a
//!   stall of the platform from a fault of the runtime.

#![cfg(target_os = "linux")]

mod binding;
pub mod calibrate;
pub mod error;
pub mod io;
pub mod kupcall;
pub mod model_run;
pub mod park;
pub mod probe;
mod quiet;
pub mod report;
mod signals;
mod supervisor;
pub mod sys;
pub mod testing;
mod threads;
mod waiter;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

pub use error::RtError;
pub use io::{Backend, BindOptions, Event, IoClass, IoServer, UpcallBudget, MIN_TOP_HALF};
use irqlab_core::{
    LatencyRecorder, Nanos, Scheduler, Server, ServerId, ServerPriority, SporadicServer, ThreadId,
    ThreadPolicy, Unbounded,
};
pub use probe::ProbeConfig;
pub use report::Report;

use crate::park::ParkCell;
use crate::sys::{Fd, Gate, SchedPolicy, Tid};

/// Samples kept per latency recorder (statistics and the histogram cover
/// every event; the store keeps the first samples, like the IP's RAM).
pub(crate) const SAMPLES: usize = 1 << 16;

/// How the runtime enforces the core's decisions.
#[derive(Copy, Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Mode {
    /// SCHED_FIFO priority switching plus parking (needs CAP_SYS_NICE).
    Fifo,
    /// Parking only: budgets are enforced, priority order is not.
    ParkOnly,
}

/// Runtime settings.
#[derive(Clone, Debug)]
pub struct Config {
    /// CPUs that get a supervisor; servers are placed on one of them.
    pub cpus: Vec<usize>,
    /// CPU of the top-half thread (default: the first managed CPU).
    pub top_half_cpu: Option<usize>,
    pub supervisor_priority: i32,
    pub top_half_priority: i32,
    /// Foreground priorities are `fg_base + 0..79` (see
    /// `supervisor::fg_priority`).
    pub fg_base: i32,
    /// Priority of every managed thread whose server is not dispatched.
    pub bg_priority: i32,
    /// Minimum supervisor sleep, 10 us by default (see `supervisor` and the
    /// measurements in docs/runtime.md).
    pub min_sleep: Nanos,
    /// Refuse to start without SCHED_FIFO instead of falling back.
    pub require_fifo: bool,
    pub backend: Backend,
    /// `stop` (and drop) return within this much time after telling the
    /// threads to stop (plus the time to collect the report): a thread
    /// still running then is reported, given back its scheduling policy
    /// and detached. 500 ms by default.
    pub stop_timeout: Nanos,
    /// The platform-latency probe on each managed CPU (`None`: off).
    pub probe: Option<ProbeConfig>,
    /// What a periodic task does after a stall that made releases pass
    /// (default for `spawn_periodic`; `spawn_periodic_with` overrides).
    pub catch_up: CatchUp,
    /// Raw dispatch latencies (the first this many of each event path) in
    /// the report's `dispatch_samples_ns`, for replay through the
    /// Latencies IP; 0 (default) keeps the report small.
    pub report_samples: usize,
}

/// What a periodic task does with releases whose deadline has already
/// passed when the previous job ends (after a stall of the task, the CPU
/// or the whole process, e.g. SIGSTOP).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CatchUp {
    /// Run every released job, late ones back to back (what the simulator
    /// does); each job started past its deadline is counted
    /// (`late_starts`).
    #[default]
    RunLate,
    /// Skip every release whose deadline has passed before it could
    /// start and go on with the first that can still make it; skipped
    /// releases are counted (`skipped_jobs`), not run.
    Skip,
}

/// Timing of a periodic task (`Runtime::spawn_periodic_with`).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Periodic {
    pub period: Nanos,
    pub deadline: Nanos,
    pub catch_up: CatchUp,
}

impl Default for Config {
    fn default() -> Self {
        let cpus = sys::allowed_cpus();
        Config {
            cpus: vec![cpus.last().copied().unwrap_or(0)],
            top_half_cpu: None,
            supervisor_priority: 99,
            top_half_priority: 95,
            fg_base: 10,
            bg_priority: 1,
            min_sleep: Nanos::from_us(10),
            require_fifo: false,
            backend: Backend::Epoll,
            stop_timeout: Nanos::from_ms(500),
            probe: Some(ProbeConfig::default()),
            catch_up: CatchUp::RunLate,
            report_samples: 0,
        }
    }
}

/// Replenishment rule of a [`Runtime::budget_server`].
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum BudgetPolicy {
    /// QUEST-VCPU Alg. 3-6 (corrected POSIX sporadic server).
    Sporadic,
    /// Full refill at every period boundary (VINT §III).
    Deferrable,
}

/// A server on one managed CPU.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct ServerHandle {
    pub cpu: usize,
    pub id: ServerId,
    /// The period a PIBS I/O VCPU inherits when serving this server.
    pub period: Option<Nanos>,
}

/// A managed thread.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct TaskHandle {
    pub cpu: usize,
    pub id: ThreadId,
}

/// Atomics a managed thread shares with its supervisor.
#[derive(Debug, Default)]
pub(crate) struct ThreadShared {
    pub gate: Gate,
    pub park: ParkCell,
    /// The thread's CPU time (ns) at which its dispatched server's budget
    /// runs out, published by the supervisor at each dispatch (0: none).
    /// Bottom halves compare it with their own CPU clock between handlers.
    pub cpu_limit: AtomicU64,
}

/// Per-task statistics of a periodic task.
#[derive(Clone, Debug)]
pub(crate) struct TaskStats {
    pub period: Nanos,
    pub deadline: Nanos,
    pub catch_up: CatchUp,
    /// Jobs that finished (late ones included).
    pub jobs: u64,
    /// Releases skipped by `CatchUp::Skip`.
    pub skipped: u64,
    /// Jobs started after their deadline had passed (`CatchUp::RunLate`).
    pub late_starts: u64,
    /// `[release, completion]` of the first `MAX_LATE` late jobs (for
    /// attributing misses to the platform probe); `late_dropped` more.
    pub late: Vec<(Nanos, Nanos)>,
    pub late_dropped: u64,
    /// Finished jobs whose response exceeded the deadline.
    pub misses: u64,
    /// Release of the oldest unfinished job (`None`: the first, at the
    /// runtime's start); jobs are released every `period` from there.
    pub next_release: Option<Nanos>,
    pub response: LatencyRecorder,
}

impl TaskStats {
    /// Released jobs that had not finished at `t_end` although their
    /// deadline had passed (a job finishing at its deadline is in time) --
    /// misses too, and the only ones a task starved from its first release
    /// on ever shows.
    pub fn unfinished_past_deadline(&self, t0: Nanos, t_end: Nanos) -> u64 {
        let first_due = self.next_release.unwrap_or(t0) + self.deadline;
        t_end.saturating_sub(first_due).0.div_ceil(self.period.0)
    }
}

pub(crate) struct ThreadRec {
    pub name: String,
    pub server: ServerId,
    pub prio: u32,
    pub tid: Option<Tid>,
    pub clock: Option<libc::clockid_t>,
    pub last_cpu: Nanos,
    pub cpu_total: Nanos,
    pub applied: Option<i32>,
    pub original: Option<SchedPolicy>,
    pub release: Option<Nanos>,
    /// A wake-up that arrived while the thread was running (`wait_wake`
    /// returns at once), with the origin time of the earliest one.
    pub wake_pending: Option<Nanos>,
    pub waiting_wake: bool,
    pub wake_latency: LatencyRecorder,
    pub periodic: Option<TaskStats>,
    pub sh: Arc<ThreadShared>,
}

pub(crate) struct ServerRec {
    pub name: String,
    pub kind: &'static str,
    pub budget: Option<Nanos>,
    pub period: Option<Nanos>,
    /// How far past its remaining budget the server ran before the
    /// supervisor stopped it, at each exhaustion (enforcement precision).
    pub overrun: LatencyRecorder,
}

pub(crate) struct CpuState {
    pub sched: Scheduler,
    pub threads: Vec<ThreadRec>,
    pub servers: Vec<ServerRec>,
    pub classes: Vec<io::ClassState>,
    pub last_step: Nanos,
    pub dispatched: Option<ServerId>,
    pub dispatched_background: bool,
    /// At the last pass: a server was dispatched, and its threads got no
    /// CPU time since the pass before (something above every managed
    /// thread held the CPU, or they blocked outside the runtime).
    pub starved: bool,
    /// How late the supervisor's timer woke it.
    pub timer_latency: LatencyRecorder,
    pub passes: u64,
    pub prio_changes: u64,
    pub throttles: u64,
    pub errors: u64,
    /// The supervisor thread's own CPU time, read when it exits (the
    /// scheduling overhead of QUEST-VCPU Figure 7, measured).
    pub supervisor_cpu: Nanos,
}

pub(crate) struct CpuShared {
    pub cpu: usize,
    pub doorbell: Fd,
    state: Mutex<CpuState>,
    probe: Mutex<probe::ProbeState>,
}

/// Late jobs whose window is kept per task for attribution.
pub(crate) const MAX_LATE: usize = 4096;

impl CpuShared {
    pub fn probe(&self) -> MutexGuard<'_, probe::ProbeState> {
        self.probe.lock().unwrap_or_else(|e| e.into_inner())
    }
    pub fn lock(&self) -> MutexGuard<'_, CpuState> {
        // A panic while holding the lock cannot leave the core half-updated
        // in a way later calls rely on; keep going with the data.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
    pub fn kick(&self) {
        sys::eventfd_signal(self.doorbell.0);
    }
}

pub(crate) struct Shared {
    pub cfg: Config,
    pub mode: Mode,
    pub cpus: Vec<Arc<CpuShared>>,
    pub stop: AtomicBool,
    pub started: Gate,
    /// Threads started by `start` that are in place (pinned, at their
    /// priority) and wait for `started`.
    entered: (Mutex<usize>, std::sync::Condvar),
    pub io: io::IoShared,
    pub warnings: Mutex<Vec<String>>,
    pub t0: AtomicU64,
    /// The process's CPU affinity when the runtime was made: what a thread
    /// gets back at the stop.
    pub affinity: Option<libc::cpu_set_t>,
}

impl Shared {
    /// A thread started by `start` is in place: count it, and wait for
    /// the start.
    pub fn wait_start(&self) {
        *self.entered.0.lock().unwrap_or_else(|e| e.into_inner()) += 1;
        self.entered.1.notify_all();
        self.started.wait();
    }

    /// Wait until `n` threads are in place (`wait_start`) or `bound` has
    /// passed; returns how many are.
    fn wait_entered(&self, n: usize, bound: std::time::Duration) -> usize {
        let g = self.entered.0.lock().unwrap_or_else(|e| e.into_inner());
        let (g, _) = self
            .entered
            .1
            .wait_timeout_while(g, bound, |k| *k < n)
            .unwrap_or_else(|e| e.into_inner());
        *g
    }

    pub fn warn(&self, w: String) {
        self.warnings
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(w);
    }
}

type TaskBody = Box<dyn FnOnce(&TaskCtx) + Send>;

/// The runtime: declare servers, tasks and bindings, then `start`, then
/// `stop` for the report.
pub struct Runtime {
    shared: Arc<Shared>,
    pending: Vec<(TaskHandle, TaskBody)>,
    io_pending: io::Pending,
    handles: Vec<threads::Spawned>,
    running: bool,
    /// Threads that did not return within the stop's bound.
    unreturned: Vec<String>,
    /// Kernel upcalls, attached at `start`, detached at `stop` or drop.
    kupcalls: Vec<kupcall::Registered>,
}

impl Runtime {
    /// A runtime with `cfg`. Probes SCHED_FIFO: without it, falls back to
    /// [`Mode::ParkOnly`] (with a warning) or, with `require_fifo`, fails
    /// with the kernel's reason.
    pub fn new(cfg: Config) -> Result<Runtime, RtError> {
        if cfg.cpus.is_empty() {
            return Err(RtError::config("cpus", "[]", "at least one CPU"));
        }
        let allowed = sys::allowed_cpus();
        for &c in cfg.cpus.iter().chain(cfg.top_half_cpu.iter()) {
            if !allowed.contains(&c) {
                return Err(RtError::config(
                    "cpus",
                    c,
                    format!("not a CPU this process may use ({allowed:?})"),
                ));
            }
        }
        for (field, p) in [
            ("supervisor_priority", cfg.supervisor_priority),
            ("top_half_priority", cfg.top_half_priority),
            ("bg_priority", cfg.bg_priority),
            ("fg_base", cfg.fg_base),
            (
                "fg_base + 78",
                cfg.fg_base + supervisor::SERVER_LEVELS + supervisor::THREAD_LEVELS as i32 - 2,
            ),
        ] {
            if !(1..=99).contains(&p) {
                return Err(RtError::config(
                    field,
                    p,
                    "SCHED_FIFO priorities are 1..=99",
                ));
            }
        }
        if cfg.stop_timeout.is_zero() || cfg.stop_timeout > Nanos::from_secs(60) {
            return Err(RtError::config(
                "stop_timeout",
                format!("{} ns", cfg.stop_timeout.0),
                "must be in (0, 60 s]",
            ));
        }
        if let Some(p) = cfg.probe {
            if p.interval < Nanos::from_us(10) || p.interval > Nanos::from_secs(1) {
                return Err(RtError::config(
                    "probe.interval",
                    format!("{} ns", p.interval.0),
                    "must be in [10 us, 1 s]",
                ));
            }
            if p.stall.is_zero() {
                return Err(RtError::config("probe.stall", "0 ns", "must be positive"));
            }
        }
        let mut warnings = Vec::new();
        let mode = match sys::probe_fifo() {
            Ok(()) => Mode::Fifo,
            Err(e) if cfg.require_fifo => return Err(e),
            Err(e) => {
                warnings.push(format!(
                    "SCHED_FIFO unavailable ({e}): park-only mode, budgets enforced \
                     but no priority order between servers"
                ));
                Mode::ParkOnly
            }
        };
        if let Some((runtime, period)) = sys::rt_throttling() {
            if runtime >= 0 && runtime < period {
                warnings.push(format!(
                    "RT throttling is on (sched_rt_runtime_us={runtime} of \
                     sched_rt_period_us={period}): SCHED_FIFO threads may be stalled \
                     for up to {} us per period when SCHED_OTHER work starves; not changed",
                    period - runtime
                ));
            }
        }
        for &c in &cfg.cpus {
            if let Some((runtime, period)) = sys::fair_server(c) {
                if runtime > 0 {
                    warnings.push(format!(
                        "CPU {c}: the fair server may run starved SCHED_OTHER work above \
                         SCHED_FIFO for {} us every {} us; not changed",
                        runtime / 1000,
                        period / 1000
                    ));
                }
            }
        }
        let mut cpus = Vec::new();
        for &c in &cfg.cpus {
            cpus.push(Arc::new(CpuShared {
                cpu: c,
                doorbell: sys::eventfd()?,
                state: Mutex::new(CpuState {
                    sched: Scheduler::new(),
                    threads: Vec::new(),
                    servers: Vec::new(),
                    classes: Vec::new(),
                    last_step: Nanos::ZERO,
                    starved: false,
                    dispatched: None,
                    dispatched_background: false,
                    timer_latency: LatencyRecorder::new(SAMPLES, None),
                    passes: 0,
                    prio_changes: 0,
                    throttles: 0,
                    errors: 0,
                    supervisor_cpu: Nanos::ZERO,
                }),
                probe: Mutex::new(probe::ProbeState::new(cfg.probe.unwrap_or_default())),
            }));
        }
        let io = io::IoShared::new(cfg.backend)?;
        park::install();
        quiet::install();
        Ok(Runtime {
            shared: Arc::new(Shared {
                cfg,
                mode,
                cpus,
                stop: AtomicBool::new(false),
                started: Gate::default(),
                entered: Default::default(),
                io,
                warnings: Mutex::new(warnings),
                t0: AtomicU64::new(0),
                affinity: sys::affinity(),
            }),
            pending: Vec::new(),
            io_pending: io::Pending::default(),
            handles: Vec::new(),
            running: false,
            unreturned: Vec::new(),
            kupcalls: Vec::new(),
        })
    }

    pub fn mode(&self) -> Mode {
        self.shared.mode
    }

    pub(crate) fn cpu_index(&self, cpu: Option<usize>) -> Result<usize, RtError> {
        match cpu {
            None => Ok(0),
            Some(c) => self
                .shared
                .cpus
                .iter()
                .position(|s| s.cpu == c)
                .ok_or_else(|| {
                    RtError::config(
                        "cpu",
                        c,
                        format!("not a managed CPU {:?}", self.shared.cfg.cpus),
                    )
                }),
        }
    }

    fn not_running(&self, what: &str) -> Result<(), RtError> {
        if self.running {
            return Err(RtError::State(format!("{what}: declare before start()")));
        }
        Ok(())
    }

    pub(crate) fn add_server(
        &mut self,
        cpu: Option<usize>,
        name: &str,
        server: Server,
        threads: ThreadPolicy,
        budget: Option<Nanos>,
        period: Option<Nanos>,
    ) -> Result<ServerHandle, RtError> {
        self.not_running("add a server")?;
        let ci = self.cpu_index(cpu)?;
        let kind = server.kind();
        let mut st = self.shared.cpus[ci].lock();
        if st.servers.iter().any(|s| s.name == name) {
            return Err(RtError::config("server.name", name, "must be unique"));
        }
        let id = st.sched.add_server(name, server, threads)?;
        st.servers.push(ServerRec {
            name: name.to_string(),
            kind,
            budget,
            period,
            overrun: LatencyRecorder::new(SAMPLES, None),
        });
        Ok(ServerHandle {
            cpu: ci,
            id,
            period,
        })
    }

    /// A Main VCPU: a sporadic server with `budget` per `period`
    /// (QUEST-VCPU Alg. 3-6, rate-monotonic priority), threads in fixed
    /// priority order. `cpu`: a managed CPU (default the first).
    pub fn main_vcpu(
        &mut self,
        name: &str,
        budget: Nanos,
        period: Nanos,
        cpu: Option<usize>,
    ) -> Result<ServerHandle, RtError> {
        let ss = sporadic(format!("main_vcpu[{name}].budget"), budget, period)?;
        self.add_server(
            cpu,
            name,
            Server::Sporadic(ss),
            ThreadPolicy::FixedPriority,
            Some(budget),
            Some(period),
        )
    }

    /// A budgeted server with an explicit replenishment rule and priority:
    /// a sporadic or deferrable server (VINT §III's VCPUs) with `budget` per
    /// `period`, rate-monotonic or at an explicit rank (VINT §V-A ranks
    /// pseudo-VCPUs above every regular VCPU of the CPU). Threads in fixed
    /// priority order.
    pub fn budget_server(
        &mut self,
        name: &str,
        policy: BudgetPolicy,
        budget: Nanos,
        period: Nanos,
        priority: ServerPriority,
        cpu: Option<usize>,
    ) -> Result<ServerHandle, RtError> {
        // The (0, period] check with the field's name.
        sporadic(format!("server[{name}].budget"), budget, period)?;
        let now = sys::now();
        let server = match policy {
            BudgetPolicy::Sporadic => Server::Sporadic(SporadicServer::new(
                budget, period, 32, priority, false, now,
            )?),
            BudgetPolicy::Deferrable => Server::Deferrable(irqlab_core::DeferrableServer::new(
                budget, period, priority, now,
            )?),
        };
        self.add_server(
            cpu,
            name,
            server,
            ThreadPolicy::FixedPriority,
            Some(budget),
            Some(period),
        )
    }

    /// A server without budget at fixed rank `rank` (smaller is more
    /// urgent than every period in ns): a plain SCHED_FIFO thread group,
    /// the "no I/O VCPU" baseline.
    pub fn unbounded(
        &mut self,
        name: &str,
        rank: u64,
        cpu: Option<usize>,
    ) -> Result<ServerHandle, RtError> {
        self.add_server(
            cpu,
            name,
            Server::Unbounded(Unbounded::new(rank)),
            ThreadPolicy::FixedPriority,
            None,
            None,
        )
    }

    pub(crate) fn add_thread(
        &mut self,
        server: ServerHandle,
        name: &str,
        prio: u32,
        periodic: Option<Periodic>,
    ) -> Result<(TaskHandle, Arc<ThreadShared>), RtError> {
        add_thread(&self.shared, server, name, prio, periodic)
    }

    /// A handle for threads the program created itself (see
    /// [`RtHandle::join_current`]).
    pub fn handle(&self) -> RtHandle {
        RtHandle {
            shared: self.shared.clone(),
        }
    }

    /// Spawn a thread in `server` with thread priority `prio` (higher is
    /// more urgent inside the server). It starts when the runtime starts.
    pub fn spawn<F>(
        &mut self,
        server: ServerHandle,
        name: &str,
        prio: u32,
        f: F,
    ) -> Result<TaskHandle, RtError>
    where
        F: FnOnce(&TaskCtx) + Send + 'static,
    {
        self.not_running("spawn")?;
        let (h, _) = self.add_thread(server, name, prio, None)?;
        self.pending.push((h, Box::new(f)));
        Ok(h)
    }

    /// Spawn a periodic task: `job` runs once per `period` from the start
    /// (first release at start); a job finishing after its release plus
    /// `deadline` is a miss. Response times are recorded. After a stall,
    /// releases whose deadline passed are handled per `Config::catch_up`.
    pub fn spawn_periodic<F>(
        &mut self,
        server: ServerHandle,
        name: &str,
        prio: u32,
        period: Nanos,
        deadline: Nanos,
        job: F,
    ) -> Result<TaskHandle, RtError>
    where
        F: FnMut(&TaskCtx) + Send + 'static,
    {
        let catch_up = self.shared.cfg.catch_up;
        let timing = Periodic {
            period,
            deadline,
            catch_up,
        };
        self.spawn_periodic_with(server, name, prio, timing, job)
    }

    /// [`Runtime::spawn_periodic`] with its own catch-up policy.
    pub fn spawn_periodic_with<F>(
        &mut self,
        server: ServerHandle,
        name: &str,
        prio: u32,
        timing: Periodic,
        mut job: F,
    ) -> Result<TaskHandle, RtError>
    where
        F: FnMut(&TaskCtx) + Send + 'static,
    {
        self.not_running("spawn")?;
        let Periodic {
            period,
            deadline,
            catch_up,
        } = timing;
        if period.is_zero() || deadline.is_zero() {
            return Err(RtError::config(
                format!("task[{name}].period"),
                format!("{} ns / deadline {} ns", period.0, deadline.0),
                "period and deadline must be positive",
            ));
        }
        let (h, _) = self.add_thread(server, name, prio, Some(timing))?;
        let body = move |ctx: &TaskCtx| {
            let mut release = ctx.start_time();
            while ctx.running() {
                if !ctx.wait_until(release) {
                    break;
                }
                let now = sys::now();
                if now >= release + deadline {
                    match catch_up {
                        CatchUp::RunLate => ctx.late_start(),
                        CatchUp::Skip => {
                            // Every release r with r + deadline <= now.
                            let n = (now - release - deadline).0 / period.0 + 1;
                            release += Nanos(period.0.saturating_mul(n));
                            ctx.skip_jobs(n, release);
                            continue;
                        }
                    }
                }
                job(ctx);
                ctx.job_done(release);
                release += period;
            }
        };
        self.pending.push((h, Box::new(body)));
        Ok(h)
    }

    /// Wake a task blocked in [`TaskCtx::wait_wake`] (or make its next
    /// call return at once).
    pub fn wake(&self, task: TaskHandle) {
        wake_task(&self.shared, task, sys::now());
    }

    /// Start supervisors, probes, the top half and every declared thread.
    /// A real-time thread of another process that may run on a managed CPU
    /// is named in a warning (the runtime's threads below its priority wait
    /// while it runs; start and stop do not depend on it).
    pub fn start(&mut self) -> Result<(), RtError> {
        self.not_running("start")?;
        self.running = true;
        for c in sys::rt_competitors(&self.shared.cfg.cpus) {
            self.shared.warn(format!(
                "a competing real-time thread: {c}; runtime threads below its priority \
                 there wait while it runs"
            ));
        }
        let t = sys::now();
        for cpu in &self.shared.cpus {
            cpu.lock().last_step = t;
        }
        // Supervisors first, so threads are scheduled from their first step.
        for cpu in self.shared.cpus.clone() {
            let shared = self.shared.clone();
            let (tx, rx) = std::sync::mpsc::channel();
            let c = cpu.cpu;
            let t = threads::spawn(
                format!("irqlab-sup{c}"),
                format!("supervisor of CPU {c}"),
                move || {
                    let r = enter_thread(&shared, cpu.cpu, shared.cfg.supervisor_priority);
                    let ok = r.is_ok();
                    let _ = tx.send(r);
                    if ok {
                        supervisor::run(shared, cpu);
                    }
                },
            )?;
            self.handles.push(t);
            let bound =
                std::time::Duration::from_nanos(self.shared.cfg.stop_timeout.0.max(1_000_000_000));
            let r = match rx.recv_timeout(bound) {
                Ok(r) => r,
                Err(_) => Err(RtError::State(format!(
                    "the supervisor of CPU {c} did not start within {} ms (real-time threads \
                     that may run there: {})",
                    bound.as_millis(),
                    competitors_text(&[c])
                ))),
            };
            if let Err(e) = r {
                self.shutdown();
                return Err(e);
            }
        }
        if self.shared.cfg.probe.is_some() {
            for cpu in self.shared.cpus.clone() {
                let shared = self.shared.clone();
                let c = cpu.cpu;
                self.handles.push(threads::spawn(
                    format!("irqlab-probe{c}"),
                    format!("platform probe of CPU {c}"),
                    move || probe::run(shared, cpu),
                )?);
            }
        }
        let io = std::mem::take(&mut self.io_pending);
        let mut hs = io::start(&self.shared, io)?;
        self.handles.append(&mut hs);
        if let Err(e) = kupcall::start_all(&self.shared, &mut self.kupcalls) {
            self.shutdown();
            return Err(e);
        }
        for (h, body) in std::mem::take(&mut self.pending) {
            let shared = self.shared.clone();
            let what = {
                let st = self.shared.cpus[h.cpu].lock();
                format!("task {}", st.threads[h.id.0].name.escape_debug())
            };
            self.handles.push(threads::spawn(
                format!("irqlab-t{}", h.id.0),
                what,
                move || managed_thread(shared, h, body),
            )?);
        }
        // Time 0 (of periodic releases and of the report's shares) is when
        // every thread is in place: on a loaded machine a new thread may
        // wait tens of ms for its first run as SCHED_OTHER, which would
        // otherwise count as lateness of the first jobs and as CPU time a
        // server did not get.
        let waiting = self.handles.len() - self.shared.cpus.len();
        let bound =
            std::time::Duration::from_nanos(self.shared.cfg.stop_timeout.0.max(1_000_000_000));
        let entered = self.shared.wait_entered(waiting, bound);
        if entered < waiting {
            self.shared.warn(format!(
                "{} of {waiting} runtime threads were not in place {} ms after the start; \
                 started without them (real-time threads that may run there: {})",
                waiting - entered,
                bound.as_millis(),
                competitors_text(&self.shared.cfg.cpus)
            ));
        }
        self.shared.t0.store(sys::now().0, Ordering::SeqCst);
        self.shared.started.open();
        for cpu in &self.shared.cpus {
            cpu.kick();
        }
        Ok(())
    }

    /// Is the runtime asked to stop (by `stop` or a signal handler)?
    pub fn stop_requested(&self) -> bool {
        self.shared.stop.load(Ordering::SeqCst)
    }

    /// A flag that stops the runtime when set (for signal handlers).
    pub fn request_stop(&self) {
        self.shared.stop.store(true, Ordering::SeqCst);
    }

    /// Tell every thread to stop and wait for them at most
    /// `Config::stop_timeout`. Managed threads get their scheduling policy
    /// and the process's affinity back first (from this thread, under each
    /// CPU's lock, so no supervisor pass can undo it): a thread stuck below
    /// a competing real-time thread on its CPU can then finish elsewhere.
    fn shutdown(&mut self) {
        let sh = &self.shared;
        sh.stop.store(true, Ordering::SeqCst);
        sh.started.open();
        for cpu in &sh.cpus {
            {
                let mut st = cpu.lock();
                for t in st.threads.iter_mut() {
                    if let Some(tid) = t.tid {
                        if t.applied.is_some() || sh.mode == Mode::ParkOnly {
                            let p = t.original.unwrap_or(threads::OTHER);
                            threads::restore(tid, p, sh.affinity.as_ref());
                            t.applied = None;
                        }
                    }
                    t.sh.park.unpark();
                    t.sh.gate.open();
                }
            }
            cpu.kick();
        }
        sh.io.wake_top_half();
        let hs = std::mem::take(&mut self.handles);
        let stuck = threads::join_within(hs, sh.cfg.stop_timeout, sh.affinity.as_ref());
        if !stuck.is_empty() {
            let rivals = competitors_text(&sh.cfg.cpus);
            for s in &stuck {
                sh.warn(format!(
                    "{s} (real-time threads of other processes there: {rivals})"
                ));
            }
            self.unreturned.extend(stuck);
        }
    }

    /// Stop everything, restore every thread's policy, and report. Returns
    /// within `Config::stop_timeout` after the threads are told to stop
    /// (plus the report's collection): a thread still running then is in
    /// `Report::unreturned_threads` and the warnings.
    pub fn stop(mut self) -> Report {
        // Kernel upcalls first: what arrives from now on takes the fd's
        // normal path, which is still running.
        let kernel = kupcall::detach_all(&mut self.kupcalls);
        // The end of the run is when the threads are told to stop (the
        // shares count their CPU time up to there).
        let t_end = sys::now();
        self.shutdown();
        binding::finish(&self.shared);
        let mut r = Report::collect(&self.shared, t_end);
        r.kernel_upcalls = kernel;
        r.unreturned_threads = std::mem::take(&mut self.unreturned);
        r.stop_ns = sys::now().saturating_sub(t_end).0;
        r
    }
}

/// The real-time threads of other processes that may run on `cpus`, for a
/// message.
fn competitors_text(cpus: &[usize]) -> String {
    let c = sys::rt_competitors(cpus);
    if c.is_empty() {
        return "none found".into();
    }
    c.iter()
        .map(|c| c.to_string())
        .collect::<Vec<_>>()
        .join("; ")
}

impl Drop for Runtime {
    fn drop(&mut self) {
        if !self.handles.is_empty() {
            self.shutdown();
            binding::finish(&self.shared);
        }
    }
}

/// A sporadic server (QUEST-VCPU Alg. 3-6, rate-monotonic priority) with
/// `0 < budget <= period`; `field` names the budget in the error.
pub(crate) fn sporadic(
    field: String,
    budget: Nanos,
    period: Nanos,
) -> Result<SporadicServer, RtError> {
    if budget.is_zero() || budget > period {
        return Err(RtError::config(
            field,
            format!("{} ns", budget.0),
            format!("must be in (0, period = {} ns]", period.0),
        ));
    }
    Ok(SporadicServer::new(
        budget,
        period,
        32,
        ServerPriority::RateMonotonic,
        false,
        sys::now(),
    )?)
}

/// Make the calling thread (`tid`) managed thread `id` of `cpu`: record it
/// (its CPU clock and the policy to restore), put it at the background
/// priority, make it runnable in the core if `runnable`, and only then pin
/// it to the CPU. An error is the kernel's refusal to move it (the thread
/// is registered either way; `leave_thread` undoes it).
///
/// The order is what makes a thread that never gets its CPU on its own
/// still schedulable: behind a dispatched thread that never blocks, a
/// thread at the background priority does not run again until the
/// supervisor boosts it, so everything the supervisor needs to choose its
/// server and boost it happens before the pin. The priority is set under
/// the CPU's lock, like every change the supervisor makes, so the
/// priority recorded as applied is the one the thread has (no supervisor
/// pass can boost it in between and be undone).
pub(crate) fn enter_managed(
    shared: &Shared,
    cpu: &CpuShared,
    id: ThreadId,
    tid: Tid,
    runnable: bool,
) -> Result<(), RtError> {
    let original = sys::get_policy(0).ok();
    let fifo = park::critical(|| {
        let mut st = cpu.lock();
        let fifo = if shared.mode == Mode::Fifo {
            sys::set_fifo(0, shared.cfg.bg_priority).map(|_| Some(shared.cfg.bg_priority))
        } else {
            Ok(None)
        };
        let rec = &mut st.threads[id.0];
        rec.tid = Some(tid);
        rec.clock = Some(sys::thread_cpu_clock(tid));
        rec.last_cpu = sys::clock(sys::thread_cpu_clock(tid)).unwrap_or(Nanos::ZERO);
        rec.original = original;
        rec.applied = fifo.as_ref().ok().copied().flatten();
        if runnable {
            let _ = st.sched.wakeup(sys::now(), id, None);
        }
        fifo
    });
    cpu.kick();
    fifo?;
    sys::pin(0, cpu.cpu)
}

pub(crate) fn add_thread(
    shared: &Shared,
    server: ServerHandle,
    name: &str,
    prio: u32,
    periodic: Option<Periodic>,
) -> Result<(TaskHandle, Arc<ThreadShared>), RtError> {
    let cpu = shared
        .cpus
        .get(server.cpu)
        .ok_or_else(|| RtError::config("server.cpu", server.cpu, "not a managed CPU index"))?;
    let mut st = cpu.lock();
    let id = st.sched.add_thread(name, server.id, prio)?;
    let sh = Arc::new(ThreadShared::default());
    st.threads.push(ThreadRec {
        name: name.to_string(),
        server: server.id,
        prio,
        tid: None,
        clock: None,
        last_cpu: Nanos::ZERO,
        cpu_total: Nanos::ZERO,
        applied: None,
        original: None,
        release: None,
        wake_pending: None,
        waiting_wake: false,
        wake_latency: LatencyRecorder::new(SAMPLES, None),
        periodic: periodic.map(|p| TaskStats {
            period: p.period,
            deadline: p.deadline,
            catch_up: p.catch_up,
            jobs: 0,
            skipped: 0,
            late_starts: 0,
            late: Vec::new(),
            late_dropped: 0,
            misses: 0,
            next_release: None,
            response: LatencyRecorder::new(SAMPLES, None),
        }),
        sh: sh.clone(),
    });
    Ok((
        TaskHandle {
            cpu: server.cpu,
            id,
        },
        sh,
    ))
}

/// A cloneable handle to a runtime, usable from any thread.
#[derive(Clone)]
pub struct RtHandle {
    shared: Arc<Shared>,
}

impl RtHandle {
    /// Register the calling thread -- one the program created itself -- as
    /// a managed thread of `server` with thread priority `prio`: it is
    /// pinned to the server's CPU and runs under the server's budget until
    /// the returned guard drops, which restores its scheduling policy and
    /// CPU affinity. The runtime must be started.
    pub fn join_current(
        &self,
        server: ServerHandle,
        name: &str,
        prio: u32,
    ) -> Result<Joined, RtError> {
        let shared = &self.shared;
        if !shared.started.is_open() || shared.stop.load(Ordering::SeqCst) {
            return Err(RtError::State(
                "join_current: the runtime is not running".into(),
            ));
        }
        let (h, sh) = add_thread(shared, server, name, prio, None)?;
        let cpu = shared.cpus[h.cpu].clone();
        let affinity = sys::affinity();
        park::attach(&sh.park);
        let tid = sys::gettid();
        if let Err(e) = enter_managed(shared, &cpu, h.id, tid, true) {
            leave_thread(shared, &cpu, h.id, tid);
            if let Some(set) = affinity {
                sys::set_affinity(0, &set);
            }
            return Err(e);
        }
        Ok(Joined {
            ctx: TaskCtx {
                shared: shared.clone(),
                cpu,
                id: h.id,
                sh,
            },
            tid,
            affinity,
        })
    }

    /// Is the runtime asked to stop?
    pub fn running(&self) -> bool {
        !self.shared.stop.load(Ordering::SeqCst)
    }

    /// Wake a task blocked in [`TaskCtx::wait_wake`] (as `Runtime::wake`,
    /// from any thread).
    pub fn wake(&self, task: TaskHandle) {
        wake_task(&self.shared, task, sys::now());
    }
}

/// A thread registered with [`RtHandle::join_current`]; leaves the runtime
/// when dropped (on the same thread).
pub struct Joined {
    ctx: TaskCtx,
    tid: Tid,
    affinity: Option<libc::cpu_set_t>,
}

impl std::ops::Deref for Joined {
    type Target = TaskCtx;
    fn deref(&self) -> &TaskCtx {
        &self.ctx
    }
}

impl Drop for Joined {
    fn drop(&mut self) {
        leave_thread(&self.ctx.shared, &self.ctx.cpu, self.ctx.id, self.tid);
        if let Some(set) = self.affinity {
            sys::set_affinity(0, &set);
        }
    }
}

/// Make the calling thread SCHED_FIFO at `prio` (in FIFO mode) and pin it,
/// in that order: a thread pinned first would wait as SCHED_OTHER behind
/// any real-time thread already running on that CPU.
fn enter_thread(shared: &Shared, cpu: usize, prio: i32) -> Result<(), RtError> {
    if shared.mode == Mode::Fifo {
        sys::set_fifo(0, prio)?;
    }
    sys::pin(0, cpu)
}

pub(crate) fn wake_task(shared: &Shared, task: TaskHandle, origin: Nanos) {
    let Some(cpu) = shared.cpus.get(task.cpu) else {
        return;
    };
    park::critical(|| {
        let mut st = cpu.lock();
        let now = sys::now();
        let Some(t) = st.threads.get_mut(task.id.0) else {
            return;
        };
        if t.waiting_wake {
            t.waiting_wake = false;
            t.wake_pending = Some(origin);
            let sh = t.sh.clone();
            let _ = st.sched.wakeup(now, task.id, None);
            sh.gate.open();
        } else if t.wake_pending.is_none() {
            t.wake_pending = Some(origin);
        }
    });
    cpu.kick();
}

/// What a managed thread's body sees.
pub struct TaskCtx {
    pub(crate) shared: Arc<Shared>,
    pub(crate) cpu: Arc<CpuShared>,
    pub(crate) id: ThreadId,
    pub(crate) sh: Arc<ThreadShared>,
}

impl TaskCtx {
    pub fn now(&self) -> Nanos {
        sys::now()
    }
    /// When the runtime started (time 0 of periodic releases).
    pub fn start_time(&self) -> Nanos {
        Nanos(self.shared.t0.load(Ordering::SeqCst))
    }
    pub fn running(&self) -> bool {
        !self.shared.stop.load(Ordering::SeqCst)
    }
    pub fn handle(&self) -> TaskHandle {
        TaskHandle {
            cpu: self
                .shared
                .cpus
                .iter()
                .position(|c| Arc::ptr_eq(c, &self.cpu))
                .unwrap_or(0),
            id: self.id,
        }
    }

    /// Block (as far as the core is concerned) and let the thread go on
    /// when `gate` opens.
    fn block_and_wait(&self, set: impl FnOnce(&mut ThreadRec, Nanos) -> bool) -> bool {
        let blocked = park::critical(|| {
            let mut st = self.cpu.lock();
            // `stop` is set before the gates are opened (under this lock):
            // a thread must not close its gate after that.
            if self.shared.stop.load(Ordering::SeqCst) {
                return false;
            }
            let now = sys::now();
            let rec = &mut st.threads[self.id.0];
            if !set(rec, now) {
                return false;
            }
            self.sh.gate.close();
            let _ = st.sched.block(now, self.id);
            true
        });
        if blocked {
            self.cpu.kick();
            self.sh.gate.wait();
        }
        self.running()
    }

    /// Sleep until `t` (CLOCK_MONOTONIC); the supervisor releases the
    /// thread. Returns `false` when the runtime stops.
    pub fn wait_until(&self, t: Nanos) -> bool {
        self.block_and_wait(|rec, now| {
            if t <= now {
                return false;
            }
            rec.release = Some(t);
            true
        })
    }

    /// Wait for a [`Runtime::wake`] or an event handler's `Event::wake`.
    /// Records the latency from the waking event's arrival to now.
    pub fn wait_wake(&self) -> bool {
        let ok = self.block_and_wait(|rec, _| {
            if rec.wake_pending.is_some() {
                return false;
            }
            rec.waiting_wake = true;
            true
        });
        let now = sys::now();
        park::critical(|| {
            let mut st = self.cpu.lock();
            let rec = &mut st.threads[self.id.0];
            rec.waiting_wake = false;
            if let Some(origin) = rec.wake_pending.take() {
                rec.wake_latency.record(now.saturating_sub(origin));
            }
        });
        ok
    }

    /// A periodic job released at `release` has finished now.
    pub(crate) fn job_done(&self, release: Nanos) {
        let now = sys::now();
        park::critical(|| {
            let mut st = self.cpu.lock();
            if let Some(p) = st.threads[self.id.0].periodic.as_mut() {
                p.jobs += 1;
                p.next_release = Some(release + p.period);
                let r = now.saturating_sub(release);
                p.response.record(r);
                if r > p.deadline {
                    p.misses += 1;
                    if p.late.len() < MAX_LATE {
                        p.late.push((release, now));
                    } else {
                        p.late_dropped += 1;
                    }
                }
            }
        });
    }

    /// A periodic job starts after its deadline passed (`CatchUp::RunLate`).
    pub(crate) fn late_start(&self) {
        park::critical(|| {
            if let Some(p) = self.cpu.lock().threads[self.id.0].periodic.as_mut() {
                p.late_starts += 1;
            }
        });
    }

    /// `n` releases skipped (`CatchUp::Skip`); the next is at `next`.
    pub(crate) fn skip_jobs(&self, n: u64, next: Nanos) {
        park::critical(|| {
            if let Some(p) = self.cpu.lock().threads[self.id.0].periodic.as_mut() {
                p.skipped += n;
                p.next_release = Some(next);
            }
        });
    }

    /// Cooperative budget check: park here if the supervisor wants it
    /// (cheaper than the park signal; bottom halves call it between
    /// handlers).
    pub fn checkpoint(&self) {
        self.sh.park.wait_while_wanted();
    }
}

fn managed_thread(shared: Arc<Shared>, h: TaskHandle, body: TaskBody) {
    let cpu = shared.cpus[h.cpu].clone();
    let sh = cpu.lock().threads[h.id.0].sh.clone();
    park::attach(&sh.park);
    let tid = sys::gettid();
    // Registered and runnable in the core before it moves to its CPU (see
    // `enter_managed`), and before `start` opens the gate: a stop can
    // restore a thread that never gets that CPU (a competing real-time
    // thread), and its server can be chosen though it never runs on its own.
    if let Err(e) = enter_managed(&shared, &cpu, h.id, tid, true) {
        shared.warn(format!("thread {}: {e}", h.id.0));
    }
    shared.wait_start();
    let ctx = TaskCtx {
        shared: shared.clone(),
        cpu: cpu.clone(),
        id: h.id,
        sh: sh.clone(),
    };
    if !shared.stop.load(Ordering::SeqCst) {
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| body(&ctx)));
        if r.is_err() {
            shared.warn(format!("task {} panicked; its thread ended", h.id.0));
        }
    }
    leave_thread(&shared, &cpu, h.id, tid);
}

/// A managed thread ends: the core forgets it is runnable, its CPU time is
/// taken a last time and its scheduling policy is restored.
pub(crate) fn leave_thread(shared: &Shared, cpu: &CpuShared, id: ThreadId, tid: Tid) {
    park::critical(|| {
        let mut st = cpu.lock();
        let now = sys::now();
        let _ = st.sched.block(now, id);
        let rec = &mut st.threads[id.0];
        if let Some(c) = rec.clock.take() {
            let t = sys::clock(c).unwrap_or(rec.last_cpu);
            rec.cpu_total += t.saturating_sub(rec.last_cpu);
            rec.last_cpu = t;
        }
        rec.tid = None;
        if let Some(p) = rec.original {
            if sys::set_policy(tid, p).is_err() {
                shared.warn(format!("thread {}: policy not restored", rec.name));
            }
        }
        rec.applied = None;
    });
    park::detach();
    cpu.kick();
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stats(next_release: Option<Nanos>) -> TaskStats {
        TaskStats {
            period: Nanos::from_ms(10),
            deadline: Nanos::from_ms(8),
            catch_up: CatchUp::RunLate,
            jobs: 0,
            skipped: 0,
            late_starts: 0,
            late: Vec::new(),
            late_dropped: 0,
            misses: 0,
            next_release,
            response: LatencyRecorder::new(16, None),
        }
    }

    #[test]
    fn unfinished_jobs_past_their_deadline() {
        let t0 = Nanos::from_ms(100);
        let at = |ms| t0 + Nanos::from_ms(ms);
        // Nothing finished: releases at 0, 10, 20 ms; deadlines 8, 18, 28.
        let us = |us| t0 + Nanos::from_us(us);
        assert_eq!(stats(None).unfinished_past_deadline(t0, at(8)), 0);
        assert_eq!(stats(None).unfinished_past_deadline(t0, us(8_001)), 1);
        assert_eq!(stats(None).unfinished_past_deadline(t0, at(28)), 2);
        assert_eq!(stats(None).unfinished_past_deadline(t0, us(28_001)), 3);
        // Jobs up to the one released at 20 ms finished.
        let s = stats(Some(at(30)));
        assert_eq!(s.unfinished_past_deadline(t0, at(38)), 0);
        assert_eq!(s.unfinished_past_deadline(t0, at(49)), 2);
        // A run that ended before the next release.
        assert_eq!(s.unfinished_past_deadline(t0, at(5)), 0);
    }
}
