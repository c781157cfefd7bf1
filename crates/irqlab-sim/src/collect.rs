//! What a simulation measures, apart from the mechanics: per-server,
//! per-task and per-CPU statistics kept while the machine runs, and the
//! `Metrics` built from them at the end (docs/simulator.md).
//!
//! Design principles:
//! * The mechanics call in at a few points (time charged to a server, a
//!   job done, a decision taken); everything derived is computed once, at
//!   the end.
//! * Integers while counting; floats only in the final statistics.

use irqlab_core::{LatencyStats, Nanos, Server, ServerId};

use crate::config::{InterruptPath, Phase, PolicyCfg};
use crate::machine::{jobs_in_run, Simulation};
use crate::metrics::{
    CpuMetrics, DeviceMetrics, Dist, Metrics, ServerMetrics, TaskMetrics, VirqMetrics,
};
use crate::paths::hypervisor::CDF_BOUNDS;
use crate::trace::Trace;
use crate::vcpu_response::{Replenish, VcpuResponses};

mod windows;

use windows::{to_f64, window_len};
pub(crate) use windows::{BusyLog, OpenWindow};

pub(crate) struct ServerInfo {
    pub(crate) name: String,
    pub(crate) cpu: usize,
    pub(crate) local: ServerId,
    pub(crate) period: Option<u64>,
    pub(crate) busy: u64,
    pub(crate) background: u64,
    pub(crate) queue_max: usize,
    pub(crate) queue_sum: u64,
    pub(crate) queue_samples: u64,
    /// Replenishment-queue operations seen so far (sporadic servers).
    pub(crate) ops_seen: u64,
    /// VCPU response times (deferrable and sporadic servers). Boxed: it
    /// holds a latency recorder (most of its size), and most servers have
    /// none, so a server's state stays small (10,000 servers: 1.4 MB, not
    /// 4.6 MB, of memory touched, in cache and faulted in).
    pub(crate) supply: Option<Box<VcpuResponses>>,
    /// In its CPU's `whole_watch` (it stays there, unlooked at, while
    /// `whole_from` is in the future, even if it no longer waits).
    pub(crate) whole_watched: bool,
    /// `sporadic_whole` need not look at this server before this time:
    /// when it last looked, the core's `whole_budget_from` was this (the
    /// time from which the whole budget is available; `u64::MAX`: not
    /// before the server runs again), and the server's core state has not
    /// changed since. 0: look at the next decision. Reset to 0 wherever
    /// the core may change it: a decision that ends the server's slice
    /// (`dispatch`) and a wake-up or block of its threads
    /// (`note_backlog_of`).
    pub(crate) whole_from: u64,
    /// Its last metric window with busy time (the earlier ones are in
    /// `Simulation::busy_log`; together they become its `share_windows`).
    pub(crate) open_window: OpenWindow,
    /// A sporadic server (its replenishment-queue statistics are read at
    /// each dispatch it leaves); set when the server is added.
    pub(crate) sporadic: bool,
    /// Threads it runs (tasks and bottom halves; counted as they are
    /// added): the priority changes of a server switch (`switch_thread`).
    /// (`u32`: it sits in the padding after the flags.)
    pub(crate) threads: u32,
}

impl ServerInfo {
    pub(crate) fn new(
        name: String,
        cpu: usize,
        local: ServerId,
        period: Option<u64>,
        supply: Option<VcpuResponses>,
    ) -> ServerInfo {
        ServerInfo {
            name,
            cpu,
            local,
            period,
            busy: 0,
            background: 0,
            queue_max: 0,
            queue_sum: 0,
            queue_samples: 0,
            ops_seen: 0,
            supply: supply.map(Box::new),
            whole_watched: false,
            whole_from: 0,
            open_window: OpenWindow::default(),
            sporadic: false,
            threads: 0,
        }
    }
}

/// The response-time observer of a budgeted server, if it has a budget.
pub(crate) fn supply_of(p: &PolicyCfg) -> Option<VcpuResponses> {
    match *p {
        PolicyCfg::Deferrable { budget, period } => {
            Some(VcpuResponses::new(Replenish::Deferrable, budget, period, 0))
        }
        PolicyCfg::Sporadic { budget, period, .. } => {
            Some(VcpuResponses::new(Replenish::Sporadic, budget, period, 0))
        }
        _ => None,
    }
}

pub(crate) struct TaskInfo {
    pub(crate) thread: usize,
    pub(crate) released: u64,
    pub(crate) completed: u64,
    pub(crate) misses: u64,
    /// Jobs aborted at their deadline (`abort_on_miss`).
    pub(crate) aborted: u64,
    /// Response times: their statistics only (no sample store, alarm or
    /// edge counters: 96 bytes per task, not a recorder's 192).
    pub(crate) response: LatencyStats,
    pub(crate) completions: Vec<u64>,
}

/// `f(k, length of window k)` for the first `n` windows of width `w` in
/// `[0, dur)`: every window but the last is `w` long (computed once).
fn per_window(n: usize, w: u64, dur: u64, mut f: impl FnMut(usize, u64) -> f64) -> Vec<f64> {
    let full = (dur / w) as usize;
    (0..n)
        .map(|k| f(k, if k < full { w } else { window_len(k, w, dur) }))
        .collect()
}

impl Simulation {
    /// After a decision on CPU `c`: a backlogged sporadic server whose
    /// every replenishment is due and that used nothing since has its whole
    /// budget (VCPU response times, `supply`). `prev`: the server whose
    /// slice the decision ended (its hooks ran). A watched server is looked
    /// at only once its `whole_from` has come: the answer is the same as
    /// asking the core at every decision, without the asking (issue 20).
    /// The servers are independent, so the watch list's order does not
    /// matter (one that stops waiting is swapped out).
    /// (Out of line: plain task sets have no watched server, and their
    /// `dispatch` stays as small as without it.)
    #[inline(never)]
    pub(crate) fn sporadic_whole(&mut self, c: usize, now: u64, prev: Option<usize>) {
        if let Some(g) = prev {
            self.servers[g].whole_from = 0;
        }
        let cpu = &mut self.cpus[c];
        let mut i = 0;
        while let Some(&g) = cpu.whole_watch.get(i) {
            let s = &mut self.servers[g];
            if now < s.whole_from {
                #[cfg(feature = "checks")]
                if let Ok(Server::Sporadic(ss)) = cpu.sched.server(s.local) {
                    let core = ss.whole_budget_from().map_or(u64::MAX, Nanos::as_ns);
                    assert_eq!(core, s.whole_from, "server {g}'s whole_from at {now}");
                }
                i += 1;
                continue;
            }
            s.whole_from = u64::MAX;
            if let (Some(sp), Ok(Server::Sporadic(ss))) =
                (s.supply.as_mut(), cpu.sched.server(s.local))
            {
                if let Some(t) = ss.whole_budget_from().map(Nanos::as_ns) {
                    if t <= now {
                        sp.whole_since(t);
                    }
                    s.whole_from = t;
                }
            }
            s.whole_watched = s.supply.as_ref().is_some_and(|sp| sp.wants_whole());
            if s.whole_watched {
                i += 1;
            } else {
                cpu.whole_watch.swap_remove(i);
            }
        }
    }

    /// Tell the server of thread `t` whether it is backlogged now (only
    /// servers with a budget observe it: no call for the others).
    #[inline(always)]
    pub(crate) fn note_backlog(&mut self, t: usize) {
        let g = self.threads[t].server;
        if self.servers[g].supply.is_some() {
            self.note_backlog_of(g);
        }
    }

    fn note_backlog_of(&mut self, g: usize) {
        // (after a wake-up or block of its thread: the core's hooks may
        // have changed its replenishments)
        self.servers[g].whole_from = 0;
        let s = &self.servers[g];
        let c = s.cpu;
        let backlogged = self.cpus[c].sched.is_runnable(s.local).unwrap_or(false);
        let s = &mut self.servers[g];
        if let Some(sp) = s.supply.as_mut() {
            sp.backlog(self.now, backlogged);
            if sp.wants_whole() && !s.whole_watched {
                s.whole_watched = true;
                self.cpus[c].whole_watch.push(g);
            }
        }
    }

    pub(crate) fn collect_metrics(mut self) -> (Metrics, Trace) {
        let unfinished: Vec<u64> = (0..self.tasks.len())
            .map(|i| self.unfinished_past_deadline(i))
            .collect();
        // each task's name is its thread's (moved there from the
        // configuration by `add_tasks`)
        let names: Vec<String> = self
            .tasks
            .iter()
            .map(|t| std::mem::take(&mut self.threads[t.thread].name))
            .collect();
        // the machine's state is not needed any more: freed before the
        // metrics are built, so that a long run's peak memory is not the
        // state and the filled-in metrics at once (issue 20)
        drop(std::mem::take(&mut self.threads));
        drop(std::mem::take(&mut self.events));
        drop(std::mem::take(&mut self.wake_flow));
        drop(std::mem::take(&mut self.ctx_of));
        let dur = self.cfg.duration;
        let w = self.cfg.window;
        let cpus = self
            .cpus
            .iter()
            .map(|c| {
                let st = c.sched.stats();
                let ops = c.sched.replenishment_ops();
                let o = &self.cfg.overhead;
                let per_call = o.schedule_ns + o.scan_ns_per_server * c.servers.len() as f64;
                let cost = st.schedule_calls as f64 * per_call + ops as f64 * o.repl_op_ns;
                CpuMetrics {
                    schedule_calls: st.schedule_calls,
                    lost_interrupts: c.metrics.lost_interrupts,
                    wakeups: st.wakeups,
                    server_switches: st.server_switches,
                    replenishment_ops: ops,
                    isr_ns: c.metrics.isr_ns,
                    softirq_ns: c.metrics.softirq_ns,
                    idle_ns: c.metrics.idle_ns,
                    vcpu_switches: c.metrics.vcpu_switches,
                    switch_ns: c.metrics.switch_ns,
                    overhead_percent: 100.0 * cost / dur as f64,
                    overhead_windows: per_window(
                        c.calls_windows.len().min(c.ops_windows.len()),
                        w,
                        dur,
                        |k, len| {
                            let (n, ops) = (c.calls_windows[k], c.ops_windows[k]);
                            100.0 * (to_f64(n) * per_call + to_f64(ops) * o.repl_op_ns)
                                / to_f64(len)
                        },
                    ),
                }
            })
            .collect();
        let open: Vec<OpenWindow> = self.servers.iter().map(|s| s.open_window).collect();
        let busy = std::mem::take(&mut self.busy_log).into_servers(&open);
        // names are moved into the metrics, not copied: the state is
        // dropped at the end of this call anyway
        let servers = self
            .servers
            .iter_mut()
            .zip(busy)
            .map(|(s, busy)| {
                let kind = self.cpus[s.cpu]
                    .sched
                    .server(s.local)
                    .map(|x| x.kind())
                    .unwrap_or("?");
                ServerMetrics {
                    name: std::mem::take(&mut s.name),
                    cpu: s.cpu,
                    kind,
                    busy_ns: s.busy,
                    background_ns: s.background,
                    share: s.busy as f64 / dur as f64,
                    share_windows: busy.into_fractions(w, dur),
                    max_queue: s.queue_max,
                    mean_queue: if s.queue_samples > 0 {
                        s.queue_sum as f64 / s.queue_samples as f64
                    } else {
                        0.0
                    },
                    response: s.supply.as_ref().map(|x| Dist::from_recorder(&x.response)),
                    budget_misses: s.supply.as_ref().map(|x| x.misses),
                }
            })
            .collect();
        // each task's state is consumed as its metrics are built: the
        // completion lists are moved, not copied, and a recorder is freed
        // once its distribution is taken, so the end of a long run does
        // not hold both at once (peak memory, issue 20)
        let tasks = std::mem::take(&mut self.tasks)
            .into_iter()
            .zip(unfinished)
            .zip(names)
            .map(|((t, unfinished), name)| TaskMetrics {
                name,
                released: t.released,
                completed: t.completed,
                deadline_misses: t.misses + unfinished,
                unfinished_past_deadline: unfinished,
                aborted: t.aborted,
                response: Dist::from_stats(&t.response),
                completions: t.completions,
            })
            .collect();
        let devices = self
            .devices
            .iter()
            .enumerate()
            .map(|(i, d)| DeviceMetrics {
                name: self.cfg.devices[i].name.clone(),
                interrupts: d.interrupts,
                handled: d.handled,
                dropped: d.dropped,
                bytes: d.bytes,
                throughput_bps: d.bytes as f64 / (dur as f64 / 1e9),
                throughput_windows: per_window(d.bytes_windows.len(), w, dur, |k, len| {
                    d.bytes_windows[k] as f64 / (len as f64 / 1e9)
                }),
                latency: Dist::from_recorder(&d.latency),
                handling: Dist::from_recorder(&d.handling),
            })
            .collect();
        let path = match self.cfg.path {
            InterruptPath::Quest => "quest",
            InterruptPath::QuestNoIovcpu => "quest-no-iovcpu",
            InterruptPath::Linux => "linux",
            InterruptPath::Hypervisor => "hypervisor",
        };
        let virqs = self
            .virqs
            .iter()
            .enumerate()
            .map(|(i, v)| VirqMetrics {
                name: self.cfg.virqs[i].name.clone(),
                arrivals: v.arrivals,
                injected: v.injected,
                delayed_injections: v.delayed,
                handled: v.handled,
                serviceable: v.serviceable,
                handling: Dist::from_recorder(&v.handling),
                handled_within: CDF_BOUNDS
                    .iter()
                    .copied()
                    .zip(v.within.iter().copied())
                    .collect(),
            })
            .collect();
        let m = Metrics {
            duration_ns: dur,
            seed: self.cfg.seed,
            path: path.to_owned(),
            window_ns: w,
            window_requested_ns: self.requested_window,
            events: self.processed,
            partial: self.partial,
            trace_truncated: self.trace.truncated,
            cpus,
            servers,
            tasks,
            devices,
            virqs,
        };
        (m, self.trace)
    }

    /// Every windowed series at `n` windows (new ones zero; allocated
    /// once, at the start, by `bound_windows`).
    pub(crate) fn resize_windows(&mut self, n: usize) {
        for c in &mut self.cpus {
            c.calls_windows.resize(n, 0);
            c.ops_windows.resize(n, 0);
        }
        // the servers' windows are logged in one list, sized now
        self.busy_log = BusyLog::with_capacity(n, self.windows_wanted(n));
        for d in &mut self.devices {
            d.bytes_windows.resize(n, 0);
        }
    }

    /// The room to give the busy-window log: the windows the servers'
    /// tasks are expected to run in, from their jobs: per task, one window
    /// per job it can release in the run (`jobs_in_run`) and one more per
    /// window's worth of their computing (the program's top-level
    /// `compute` steps), plus one; per server at most `n`, the windows of
    /// the run. Preemption, loops and blocking can take a task into more
    /// windows: the log then grows as it fills. It only sizes the log: no
    /// result depends on it.
    fn windows_wanted(&self, n: usize) -> usize {
        let dur = self.cfg.duration;
        let w = self.cfg.window.max(1);
        let mut want = vec![0usize; self.servers.len()];
        for (t, info) in self.cfg.tasks.iter().zip(&self.tasks) {
            let Some(x) = self
                .threads
                .get(info.thread)
                .and_then(|th| want.get_mut(th.server))
            else {
                continue;
            };
            let jobs = jobs_in_run(&t.release, dur);
            let exec = t.program.iter().fold(0u64, |sum, p| match *p {
                Phase::Compute { ns } => sum.saturating_add(ns),
                _ => sum,
            });
            let busy = jobs.saturating_mul(exec) / w;
            let est = jobs.saturating_add(busy).saturating_add(1);
            *x = x.saturating_add(usize::try_from(est).unwrap_or(n)).min(n);
        }
        want.iter().fold(0, |all, &x| all.saturating_add(x))
    }

    /// Keep the first `n` metric windows (a run stopped early).
    pub(crate) fn truncate_windows(&mut self, n: usize) {
        for c in &mut self.cpus {
            c.calls_windows.truncate(n);
            c.ops_windows.truncate(n);
        }
        self.busy_log.truncate(n);
        self.nwin = n.min(self.nwin);
        for d in &mut self.devices {
            d.bytes_windows.truncate(n);
        }
    }
}
