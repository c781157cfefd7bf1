//! The simulated machine: the state of one simulation and its main loop.
//!
//! What lives where (a map for readers; `docs/simulator.md` has more):
//! * `engine.rs` -- the event queue, ordered by (time, sequence number);
//! * `cpu.rs` -- CPU contexts (idle, thread, top half, softirq), charging
//!   of elapsed time, and carrying out the core's `Dispatch`;
//! * `thread.rs` -- threads, wake-up / block through the core, bottom-half
//!   work queues;
//! * `program.rs` -- the rt-app-like programs of tasks, releases and jobs;
//! * `devices/` -- one module per device kind (NIC, disk, generic, xHCI);
//! * `paths/` -- one module per interrupt path (quest, quest-no-iovcpu,
//!   linux, hypervisor with vINT) behind the interface of `paths/mod.rs`;
//! * `collect.rs` -- what is measured, apart from the mechanics.
//!
//! Design principles:
//! * Every scheduling decision is `irqlab-core`'s: each CPU owns a core
//!   `Scheduler`; the machine only advances time, feeds events (wake-ups,
//!   blocks) and carries out the `Dispatch`.
//! * Discrete events ordered by (time, sequence number): deterministic for a
//!   configuration and seed, bit for bit.
//! * A CPU is re-evaluated only at the earlier of the core's `next_update`,
//!   the running context's completion, or an external event; its check is
//!   one timer slot (`engine::Timers`), re-armed in place, so no stale
//!   check is queued.
//! * The state is plain data shared by the modules above (fields are
//!   crate-visible); each module owns the transitions of its concern.

use irqlab_core::rng::SplitMix64;
use irqlab_core::{
    Cbs, DeferrableServer, Inherit, Nanos, Pibs, PollingServer, Server, ServerPriority,
    SporadicServer, ThreadPolicy, Unbounded, Utilization,
};

use crate::collect::{supply_of, BusyLog, ServerInfo, TaskInfo};
use crate::config::{PolicyCfg, Release, SimConfig};
use crate::cpu::Cpu;
use crate::devices::xhci::XhciState;
use crate::devices::DeviceState;
use crate::engine::{earliest, Dirty, EvKind, Events, Next, Timers, SLOTS_MAX};
use crate::metrics::Metrics;
use crate::paths::hypervisor::VirqState;
use crate::records::Records;
use crate::thread::Thread;
use crate::trace::Trace;
use crate::SimError;

/// Events allowed at one instant before the run is declared stuck (a
/// zero-delay event loop that would otherwise never end).
pub(crate) const MAX_EVENTS_PER_INSTANT: u64 = 10_000_000;

/// Program steps allowed at one instant before a program is declared
/// stuck (a loop that neither computes nor blocks).
pub(crate) const MAX_STEPS: u32 = 1_000_000;

/// A simulation of one system, run once.
pub struct Simulation {
    pub(crate) cfg: SimConfig,
    pub(crate) now: u64,
    pub(crate) events: Events,
    /// Each CPU's pending check (`Cpu::armed`), outside `events`.
    pub(crate) timers: Timers,
    /// The `until` of the `run_until` call in progress: the run reaches
    /// every instant up to it unless it fails.
    pub(crate) bound: u64,
    /// Times of superseded CPU checks later than `bound` (and not later
    /// than the duration), counted in `processed` once a `run_until`
    /// reaches them (`Simulation::superseded`).
    pub(crate) superseded_after: Vec<u64>,
    pub(crate) cpus: Vec<Cpu>,
    pub(crate) threads: Vec<Thread>,
    pub(crate) servers: Vec<ServerInfo>,
    /// The servers' busy time per metric window before their open ones.
    pub(crate) busy_log: BusyLog,
    pub(crate) devices: Vec<DeviceState>,
    pub(crate) tasks: Vec<TaskInfo>,
    /// Bottom-half thread of each class (`usize::MAX`: none).
    pub(crate) class_bh: Vec<usize>,
    pub(crate) xhci: Vec<XhciState>,
    pub(crate) virqs: Vec<VirqState>,
    pub(crate) dirty: Dirty,
    pub(crate) rng: SplitMix64,
    pub(crate) trace: Trace,
    /// Per thread: a bottom-half -> task arrow to end at its next dispatch.
    pub(crate) wake_flow: Vec<Option<u64>>,
    /// Per server: the execution context it runs (its own index; a
    /// pseudo-VCPU runs its original VCPU's, VINT §V-A).
    pub(crate) ctx_of: Vec<usize>,
    pub(crate) flow: u64,
    pub(crate) processed: u64,
    /// Number of metric windows (`duration / window`, rounded up).
    pub(crate) nwin: usize,
    /// Stopped before the configured duration (`finish` early).
    pub(crate) partial: bool,
    /// Events processed at the current instant (the no-progress guard).
    pub(crate) same_instant: u64,
    /// The guard's limit: `MAX_EVENTS_PER_INSTANT` (smaller in unit tests).
    pub(crate) instant_limit: u64,
    /// Bottom-half jobs waiting out the dispatch delay, oldest first.
    pub(crate) delayed_bh: std::collections::VecDeque<(usize, crate::thread::BhJob)>,
    /// The configured window when `bound_windows` widened it.
    pub(crate) requested_window: Option<u64>,
    /// Per-job and per-request rows (`records`).
    pub(crate) records: Records,
    /// Every task's flattened program, one after the other (a task's is
    /// `TaskState::ops`): one allocation for all tasks, not one each.
    pub(crate) ops: Vec<crate::program::Op>,
}

/// Wrap a core error with context built only when there is an error.
pub(crate) fn core_err<F: FnOnce() -> String>(
    context: F,
) -> impl FnOnce(irqlab_core::CoreError) -> SimError {
    move |source| SimError::Core {
        context: context(),
        source,
    }
}

/// The core server for a configured policy, and its period if it has one.
pub(crate) fn build_server(
    p: &PolicyCfg,
    rank: Option<u64>,
) -> Result<(Server, Option<u64>), irqlab_core::CoreError> {
    let prio = rank.map_or(ServerPriority::RateMonotonic, ServerPriority::Rank);
    Ok(match p {
        PolicyCfg::Sporadic {
            budget,
            period,
            max_repl,
            background,
        } => (
            Server::Sporadic(SporadicServer::new(
                Nanos(*budget),
                Nanos(*period),
                *max_repl,
                prio,
                *background,
                Nanos(0),
            )?),
            Some(*period),
        ),
        PolicyCfg::Pibs { num, den, strict } => (
            Server::Pibs(Pibs::new(
                Utilization::new(*num, *den)?,
                if *strict {
                    Inherit::Strict
                } else {
                    Inherit::Paper
                },
            )?),
            None,
        ),
        PolicyCfg::Deferrable { budget, period } => (
            Server::Deferrable(DeferrableServer::new(
                Nanos(*budget),
                Nanos(*period),
                prio,
                Nanos(0),
            )?),
            Some(*period),
        ),
        PolicyCfg::Polling { budget, period } => (
            Server::Polling(PollingServer::new(
                Nanos(*budget),
                Nanos(*period),
                prio,
                Nanos(0),
            )?),
            Some(*period),
        ),
        PolicyCfg::Cbs { runtime, period } => (
            Server::Cbs(Cbs::new(Nanos(*runtime), Nanos(*period), Nanos(0))?),
            Some(*period),
        ),
        PolicyCfg::Unbounded {} => (
            Server::Unbounded(Unbounded::new(rank.unwrap_or(u64::MAX))),
            None,
        ),
    })
}

/// The most jobs a task released so can release in a run of `dur` ns: a
/// periodic task releases at `offset + k * period` (later by the timer
/// latency), so at most `(dur - offset) / period + 1` jobs, and at most
/// `jobs`; a one-shot task one, if it comes within the run.
pub(crate) fn jobs_in_run(release: &Release, dur: u64) -> u64 {
    match *release {
        Release::Once { at } => u64::from(at <= dur),
        Release::Periodic {
            period,
            offset,
            jobs,
            ..
        } => match dur.checked_sub(offset).and_then(|d| d.checked_div(period)) {
            Some(k) => jobs.unwrap_or(u64::MAX).min(k.saturating_add(1)),
            None => 0,
        },
    }
}

/// Completion times reserved at the start of a run, all tasks together
/// (`reserve_completions`: 32 MB of room at most).
const COMPLETIONS_RESERVED: u64 = 1 << 22;

impl Simulation {
    /// Build a simulation; the configuration is validated first. Servers,
    /// threads and devices are created in a fixed order (configured
    /// servers, tasks, class bottom halves, xHCI interrupters, ksoftirqd,
    /// virtual interrupts), so indices -- and results -- are stable.
    pub fn new(cfg: SimConfig) -> Result<Simulation, SimError> {
        Simulation::build(cfg, None)
    }

    /// `new`, with each task's pending release in a slot (`Some(true)`),
    /// in the queue (`Some(false)`), or by the number of tasks (`None`:
    /// slots for 33-512 tasks, `engine::SLOTS_MAX`). Only the speed
    /// differs (tests compare the three).
    pub(crate) fn build(cfg: SimConfig, slots: Option<bool>) -> Result<Simulation, SimError> {
        cfg.check()?;
        // the windows are allocated once their number is bounded
        // (`bound_windows`), not before
        let nwin = 0;
        let ncpu = cfg.cpus;
        let seed = cfg.seed;
        let mut sim = Simulation {
            cpus: (0..ncpu).map(|_| Cpu::new(nwin)).collect(),
            cfg,
            now: 0,
            events: Events::default(),
            timers: Timers::new(ncpu),
            bound: 0,
            superseded_after: Vec::new(),
            threads: Vec::new(),
            servers: Vec::new(),
            busy_log: BusyLog::default(),
            devices: Vec::new(),
            tasks: Vec::new(),
            class_bh: Vec::new(),
            xhci: Vec::new(),
            virqs: Vec::new(),
            dirty: Dirty::all(ncpu),
            rng: SplitMix64::new(seed),
            trace: Trace::new(false, None, 0),
            wake_flow: Vec::new(),
            ctx_of: Vec::new(),
            flow: 0,
            processed: 0,
            nwin,
            partial: false,
            same_instant: 0,
            instant_limit: MAX_EVENTS_PER_INSTANT,
            delayed_bh: Default::default(),
            requested_window: None,
            records: Records::default(),
            ops: Vec::new(),
        };
        // the configured servers and tasks are most of the state: room
        // for them at once, not by doubling (each step copies every entry)
        sim.servers.reserve(sim.cfg.servers.len());
        sim.threads.reserve(sim.cfg.tasks.len());
        sim.tasks.reserve_exact(sim.cfg.tasks.len());
        // and each CPU's: its configured servers, and their tasks
        let mut per_cpu = vec![(0usize, 0usize); ncpu];
        for s in &sim.cfg.servers {
            if let Some(n) = per_cpu.get_mut(s.cpu) {
                n.0 += 1;
            }
        }
        for t in &sim.cfg.tasks {
            let cpu = sim.cfg.servers.get(t.server).map(|s| s.cpu);
            if let Some(n) = cpu.and_then(|c| per_cpu.get_mut(c)) {
                n.1 += 1;
            }
        }
        for (cpu, (servers, threads)) in sim.cpus.iter_mut().zip(per_cpu) {
            cpu.servers.reserve_exact(servers);
            cpu.threads.reserve_exact(threads);
            cpu.sched.reserve(servers, threads);
        }
        sim.add_servers()?;
        sim.add_tasks()?;
        sim.reserve_completions();
        sim.add_class_threads()?;
        sim.add_xhci()?;
        sim.add_ksoftirqd()?;
        sim.ctx_of = (0..sim.servers.len()).collect();
        sim.add_virqs()?;
        sim.add_devices();
        sim.bound_windows();
        let t = &sim.cfg.trace;
        sim.trace = Trace::new(t.enabled, t.until, t.max_events);
        // track names only for a trace that records (a disabled one writes
        // no tracks)
        if sim.trace.enabled() {
            let names: Vec<(usize, String)> = sim
                .servers
                .iter()
                .map(|s| (s.cpu, s.name.clone()))
                .collect();
            sim.trace.names(sim.cfg.cpus, &names);
        }
        sim.wake_flow = vec![None; sim.threads.len()];
        // slots past the sorted vector's `SMALL` (the releases of fewer
        // tasks fit in it) and up to `SLOTS_MAX` (the tree's replay grows
        // with the tasks; past it the radix heap is faster)
        let ntasks = sim.cfg.tasks.len();
        if slots.unwrap_or(ntasks > crate::engine::SMALL && ntasks <= SLOTS_MAX) {
            sim.events.reserve_slots(ntasks);
        }
        for i in 0..sim.cfg.tasks.len() {
            let at = match sim.cfg.tasks[i].release {
                Release::Once { at } => at,
                Release::Periodic { offset, .. } => offset.saturating_add(sim.release_latency(i)),
            };
            sim.post(at, EvKind::Release { task: i });
        }
        for d in 0..sim.cfg.devices.len() {
            if let Some(t) = sim.first_arrival(d) {
                sim.post_arrival(d, t);
            }
        }
        Ok(sim)
    }

    /// The configured servers (Main and I/O VCPUs, hypervisor VCPUs).
    /// Each name moves from the configuration to the server's state (the
    /// configuration's is empty afterwards; nothing reads it again). The
    /// core's slot gets no name: the simulator never asks the core for one
    /// (errors, the trace and the metrics name a server from its state),
    /// so a copy per server would be an allocation, and a free at the end,
    /// for nothing (for speed: 10,000 tasks made 20,000 such copies).
    fn add_servers(&mut self) -> Result<(), SimError> {
        for i in 0..self.cfg.servers.len() {
            let s = &mut self.cfg.servers[i];
            let (server, period) = build_server(&s.policy, s.rank)
                .map_err(core_err(|| format!("servers[{i}] ({})", s.name)))?;
            let cpu = &mut self.cpus[s.cpu];
            let sporadic = matches!(server, Server::Sporadic(_));
            let local = cpu
                .sched
                .add_server(String::new(), server, ThreadPolicy::FixedPriority)
                .map_err(core_err(|| format!("servers[{i}]")))?;
            cpu.servers.push(i);
            let mut info = ServerInfo::new(
                std::mem::take(&mut s.name),
                s.cpu,
                local,
                period,
                supply_of(&s.policy),
            );
            info.sporadic = sporadic;
            self.servers.push(info);
        }
        Ok(())
    }

    /// Room in each task's completion list for every job it can release
    /// in the run (at most `max_completions`), at once: the list is the
    /// metrics' `completions_ns`, and growing it by doubling copied it and
    /// faulted in fresh pages at each step (for speed, docs/performance.md). The jobs a task can
    /// release are `jobs_in_run`'s. All the lists together reserve at most
    /// `COMPLETIONS_RESERVED` entries (a run stopped early, or jobs that
    /// never finish, leave reserved room unused), and a reservation the
    /// allocator refuses is left out: the list then grows as it fills. It
    /// only sizes the lists: no result depends on it.
    fn reserve_completions(&mut self) {
        let dur = self.cfg.duration;
        let most = self.cfg.max_completions as u64;
        let mut left = COMPLETIONS_RESERVED;
        for (t, info) in self.cfg.tasks.iter().zip(&mut self.tasks) {
            let n = jobs_in_run(&t.release, dur).min(most).min(left);
            if info.completions.try_reserve_exact(n as usize).is_ok() {
                left -= n;
            }
        }
    }

    /// Allocate the metric windows, widened to the smallest multiple of
    /// the configured one for which every series together keeps at most
    /// `max_window_values` values (memory flat in simulated time).
    fn bound_windows(&mut self) {
        let nwin = self.cfg.duration.div_ceil(self.cfg.window) as usize;
        let series = self.servers.len() + 2 * self.cpus.len() + self.devices.len();
        let want = nwin.saturating_mul(series.max(1));
        let most = self.cfg.max_window_values.max(1);
        if want > most {
            let k = want.div_ceil(most) as u64;
            self.requested_window = Some(self.cfg.window);
            self.cfg.window = self.cfg.window.saturating_mul(k).min(self.cfg.duration);
        }
        self.nwin = self.cfg.duration.div_ceil(self.cfg.window) as usize;
        self.resize_windows(self.nwin);
    }

    pub(crate) fn post(&mut self, time: u64, kind: EvKind) {
        self.events.post(time, kind);
    }

    /// Run to the configured duration and return the metrics and the
    /// trace (`Trace::write` writes it as JSON or Perfetto protobuf).
    pub fn run(mut self) -> Result<(Metrics, Trace), SimError> {
        self.run_until(self.cfg.duration)?;
        self.finish()
    }

    /// Process every event up to `until` (at most the configured
    /// duration). Calling it in slices gives exactly the run of one call:
    /// a caller can show progress or stop between slices.
    pub fn run_until(&mut self, until: u64) -> Result<(), SimError> {
        let until = until.min(self.cfg.duration);
        self.bound = until;
        let before = self.superseded_after.len();
        self.superseded_after.retain(|&t| t > until);
        self.processed += (before - self.superseded_after.len()) as u64;
        loop {
            // the earliest of the first CPU timer, the first queued event
            // and the first pending release in a slot, in (time, posting)
            // order
            let timer = self.timers.first();
            let queued = self.events.peek();
            let (time, next) = if self.events.has_slots() {
                let release = self.events.first_release();
                match earliest(timer, queued, release) {
                    Some(((time, _), next)) => (time, next),
                    None => break,
                }
            } else {
                // no slots (up to `SMALL` tasks, or past `SLOTS_MAX`): the
                // two-way choice alone, as cheap as before the slots
                match (timer, queued) {
                    (Some((k, c)), None) => (k.0, Next::Timer(c)),
                    (Some((k, c)), Some(q)) if k < q => (k.0, Next::Timer(c)),
                    (_, Some(q)) => (q.0, Next::Queued),
                    (None, None) => break,
                }
            };
            if time > until {
                break;
            }
            if time == self.now {
                self.same_instant += 1;
                if self.same_instant > self.instant_limit {
                    return Err(SimError::Config {
                        path: "devices".into(),
                        value: format!("t = {} ns", self.now),
                        rule: format!(
                            "more than {} events at one instant: the system makes no progress \
                             (an arrival process with a zero interval?)",
                            self.instant_limit
                        ),
                    });
                }
            } else {
                self.same_instant = 0;
            }
            self.now = time;
            self.processed += 1;
            let settled = match next {
                Next::Timer(c) => {
                    // the fired timer stays in `timers` while the CPU is
                    // re-evaluated: re-arming overwrites it (one update of
                    // the tree, not two); it is cleared below otherwise
                    self.cpus[c].armed = None;
                    let settled = self.settle_from(c);
                    if self.cpus[c].armed.is_none() {
                        self.timers.set(c, None);
                    }
                    settled
                }
                // one call of `handle` for both (it stays inlined here)
                Next::Queued | Next::Release(_) => {
                    let kind = match next {
                        Next::Release(task) => Some(self.events.take_release(task)),
                        _ => self.events.pop(),
                    };
                    if let Some(kind) = kind {
                        self.handle(kind)?;
                    }
                    self.settle()
                }
            };
            settled?;
        }
        self.now = self.now.max(until);
        Ok(())
    }

    /// The per-job and per-request rows recorded so far (`records`); the
    /// simulation keeps none after this.
    pub fn take_records(&mut self) -> Records {
        std::mem::take(&mut self.records)
    }

    /// Simulated time reached so far (ns).
    pub fn now(&self) -> u64 {
        self.now
    }

    /// Events processed so far (`metrics.events` at the end).
    pub fn events_processed(&self) -> u64 {
        self.processed
    }

    /// End the run at the time reached and return the metrics and the
    /// trace. Before the configured duration the metrics are marked
    /// `partial` and cover `[0, now)`: `duration_ns` is the time reached.
    pub fn finish(mut self) -> Result<(Metrics, Trace), SimError> {
        let end = self.now;
        if end < self.cfg.duration {
            self.partial = true;
            self.cfg.duration = end.max(1);
            self.truncate_windows(end.max(1).div_ceil(self.cfg.window) as usize);
        }
        let end = self.cfg.duration;
        self.now = end;
        for c in 0..self.cpus.len() {
            self.advance(c);
            self.close_segment(c);
        }
        self.trace.end_at(end);
        for s in &mut self.servers {
            if let Some(sp) = s.supply.as_mut() {
                sp.finish(end);
            }
        }
        Ok(self.collect_metrics())
    }

    /// Dispatch one event to the module it concerns.
    fn handle(&mut self, kind: EvKind) -> Result<(), SimError> {
        match kind {
            #[cfg(test)]
            EvKind::Nop => {}
            EvKind::Release { task } => self.release(task)?,
            EvKind::Deadline { task, release } => self.deadline_passed(task, release)?,
            EvKind::Wake { thread } => self.resume_task(thread)?,
            EvKind::Arrival { device, epoch } => {
                if epoch != self.devices[device].arrival_epoch {
                    return Ok(()); // superseded ping-flood send
                }
                self.device_interrupt(device, None);
                if let Some(t) = self.next_arrival(device) {
                    self.post_arrival(device, t);
                }
            }
            EvKind::UsbDone { device } => self.usb_done(device),
            EvKind::VirqCredit { virq } => self.virq_credit(virq)?,
            EvKind::XhciIrq {
                controller,
                interrupter,
            } => {
                self.xhci[controller].irq_posted[interrupter] = false;
                self.xhci_fire(controller, interrupter);
            }
            EvKind::DiskDone { device } => self.disk_done(device),
            EvKind::BhDispatch => {
                if let Some((t, job)) = self.delayed_bh.pop_front() {
                    self.enqueue_bh(t, job)?;
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
#[path = "machine_guard_tests.rs"]
mod guard_tests;

#[cfg(test)]
#[path = "machine_slots_tests.rs"]
mod slots_tests;
