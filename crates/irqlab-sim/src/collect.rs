//! What a simulation measures, apart from the mechanics: per-server,
//! per-task and per-CPU statistics kept while the machine runs, and the
//! `Metrics` built from them at the end (DESIGN.md §5).
//!
//! Design principles:
//! * The mechanics call in at a few points (time charged to a server, a
//!   job done, a decision taken); everything derived is computed once, at
//!   the end.
//! * Integers while counting; floats only in the final statistics.

use irqlab_core::{LatencyStats, Server, ServerId};

use crate::config::{InterruptPath, Phase, PolicyCfg};
use crate::machine::{jobs_in_run, Simulation};
use crate::metrics::{
    CpuMetrics, DeviceMetrics, Dist, Metrics, ServerMetrics, TaskMetrics, VirqMetrics, Windows,
};
use crate::paths::hypervisor::CDF_BOUNDS;
use crate::supply::{Replenish, VcpuSupply};
use crate::trace::Trace;

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
    pub(crate) supply: Option<Box<VcpuSupply>>,
    /// In its CPU's `whole_watch`.
    pub(crate) whole_watched: bool,
    /// Busy time per metric window, the windows it ran in only (sized by
    /// `resize_windows`); it becomes the metrics' `share_windows` in
    /// place.
    pub(crate) windows: BusyWindows,
    /// A sporadic server (its replenishment-queue statistics are read at
    /// each dispatch it leaves); set when the server is added.
    pub(crate) sporadic: bool,
}

impl ServerInfo {
    pub(crate) fn new(
        name: String,
        cpu: usize,
        local: ServerId,
        period: Option<u64>,
        supply: Option<VcpuSupply>,
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
            windows: BusyWindows::default(),
            sporadic: false,
        }
    }
}

/// The response-time observer of a budgeted server, if it has a budget.
pub(crate) fn supply_of(p: &PolicyCfg) -> Option<VcpuSupply> {
    match *p {
        PolicyCfg::Deferrable { budget, period } => {
            Some(VcpuSupply::new(Replenish::Deferrable, budget, period, 0))
        }
        PolicyCfg::Sporadic { budget, period, .. } => {
            Some(VcpuSupply::new(Replenish::Sporadic, budget, period, 0))
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

pub(crate) fn window_len(k: usize, w: u64, dur: u64) -> u64 {
    let start = k as u64 * w;
    (start + w).min(dur) - start
}

/// `f(k, length of window k)` for the first `n` windows of width `w` in
/// `[0, dur)`: every window but the last is `w` long (computed once).
fn per_window(n: usize, w: u64, dur: u64, mut f: impl FnMut(usize, u64) -> f64) -> Vec<f64> {
    let full = (dur / w) as usize;
    (0..n)
        .map(|k| f(k, if k < full { w } else { window_len(k, w, dur) }))
        .collect()
}

/// `x as f64` in one instruction where it can be: through `i64` when it
/// fits (the same value, rounded the same way; times are at most 10^15).
fn to_f64(x: u64) -> f64 {
    match i64::try_from(x) {
        Ok(i) => i as f64,
        Err(_) => x as f64,
    }
}

/// A server's busy time per metric window, kept for the windows it ran
/// in only: `(window, ns)` in window order, none zero.
///
/// Why sparse: a server of a model with many servers runs in few windows
/// (200 servers over 200 windows: a median of 5 each), and a dense store
/// of `u64` per window is written on every page (malloc's chunk headers,
/// and some nonzero window on each page): about 80 page faults on the
/// 200-task set, half of its setup time. Time only moves forward, so a
/// server's charges arrive in window order and almost every one adds to
/// the last entry or appends one; an earlier window (none in the
/// simulator, but the type does not rely on it) is found by a search.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct BusyWindows {
    /// Number of windows; charges to later windows are dropped.
    len: usize,
    nz: Vec<(usize, u64)>,
}

impl BusyWindows {
    /// Add `x` (> 0) ns to window `k`.
    #[inline(always)]
    pub(crate) fn add(&mut self, k: usize, x: u64) {
        match self.nz.last_mut() {
            Some(e) if e.0 == k => e.1 += x,
            _ => self.add_new(k, x),
        }
    }

    /// `add`, to a window other than the last one stored.
    #[inline(never)]
    fn add_new(&mut self, k: usize, x: u64) {
        if k >= self.len {
            return;
        }
        match self.nz.last() {
            Some(&(last, _)) if last > k => match self.nz.binary_search_by_key(&k, |&(i, _)| i) {
                Ok(i) => self.nz[i].1 += x,
                Err(i) => self.nz.insert(i, (k, x)),
            },
            _ => self.nz.push((k, x)),
        }
    }

    /// Add the interval `[a, b)` to the windows of width `w` it covers.
    /// The windows after the first are appended at once when they come
    /// after every stored one (always in the simulator: time only moves
    /// forward); a long run of a server crosses many windows.
    pub(crate) fn add_interval(&mut self, w: u64, a: u64, b: u64) {
        if a >= b || w == 0 {
            return;
        }
        let (first, last) = (a / w, (b - 1) / w);
        let Some(top) = self.len.checked_sub(1) else {
            return;
        };
        let (Ok(first), Ok(last)) = (usize::try_from(first), usize::try_from(last)) else {
            return;
        };
        if first > top {
            return;
        }
        let start = |k: usize| (k as u64).saturating_mul(w);
        self.add(first, start(first + 1).min(b) - a);
        let last = last.min(top);
        if last == first {
            return;
        }
        if self.nz.last().is_some_and(|&(k, _)| k == first) {
            // windows `first + 1 ..= last`, after every stored one
            self.nz.reserve(last - first);
            for k in first + 1..last {
                self.nz.push((k, w));
            }
            self.nz.push((last, start(last + 1).min(b) - start(last)));
        } else {
            for k in first + 1..=last {
                self.add(k, start(k + 1).min(b) - start(k));
            }
        }
    }

    /// The busy time of every window, zeros included (tests).
    #[cfg(test)]
    pub(crate) fn to_dense(&self) -> Vec<u64> {
        let mut v = vec![0; self.len];
        for &(k, x) in &self.nz {
            v[k] = x;
        }
        v
    }

    /// `len` windows, all zero, with room for `cap` windows with busy
    /// time (more grow the list).
    pub(crate) fn with_capacity(len: usize, cap: usize) -> BusyWindows {
        BusyWindows {
            len,
            nz: Vec::with_capacity(cap),
        }
    }

    /// Keep the first `n` windows.
    pub(crate) fn truncate(&mut self, n: usize) {
        self.len = self.len.min(n);
        let keep = self.nz.partition_point(|&(k, _)| k < n);
        self.nz.truncate(keep);
    }

    /// Each window's share: its busy time over its length, in the vector
    /// that held the times (`(usize, u64)` and `(usize, f64)` have one
    /// size and alignment, so the collect reuses the allocation: no
    /// second vector, no fresh pages). Only the windows it ran in are
    /// divided; the others are 0.0.
    pub(crate) fn into_fractions(self, w: u64, dur: u64) -> Windows {
        let full = (dur / w) as usize;
        let wf = to_f64(w);
        let nz = self
            .nz
            .into_iter()
            .map(|(k, x)| {
                let len = if k < full {
                    wf
                } else {
                    to_f64(window_len(k, w, dur))
                };
                (k, to_f64(x) / len)
            })
            .collect();
        Windows::from_sorted(self.len, nz)
    }
}

impl Simulation {
    /// After a decision on CPU `c`: a backlogged sporadic server whose
    /// every replenishment is due and that used nothing since has its whole
    /// budget (VCPU response times, `supply`).
    pub(crate) fn sporadic_whole(&mut self, c: usize, now: u64) {
        let cpu = &mut self.cpus[c];
        let servers = &mut self.servers;
        cpu.whole_watch.retain(|&g| {
            let s = &mut servers[g];
            let Some(sp) = s.supply.as_mut() else {
                return false;
            };
            if let Ok(Server::Sporadic(ss)) = cpu.sched.server(s.local) {
                if ss.usage().is_zero() && ss.queued_sum() == ss.capacity_c() {
                    let last_due = ss.replenishments().map(|r| r.time.as_ns()).max();
                    if let Some(t) = last_due.filter(|&t| t <= now) {
                        sp.whole_since(t);
                    }
                }
            }
            s.whole_watched = sp.wants_whole();
            s.whole_watched
        });
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
        // names are moved into the metrics, not copied: the state is
        // dropped at the end of this call anyway
        let servers = self
            .servers
            .iter_mut()
            .map(|s| {
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
                    share_windows: std::mem::take(&mut s.windows).into_fractions(w, dur),
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
        // each server's windows are sized now (nothing is allocated
        // before it runs; they become its `share_windows` at the end, in
        // place)
        let want = self.windows_wanted(n);
        for (s, want) in self.servers.iter_mut().zip(want) {
            s.windows = BusyWindows::with_capacity(n, want);
        }
        for d in &mut self.devices {
            d.bytes_windows.resize(n, 0);
        }
    }

    /// The room to give each server's windows: those its tasks run in, as
    /// estimated from their jobs: per task, one window per job it can
    /// release in the run (`jobs_in_run`) and one more per window's worth
    /// of their computing (the program's top-level `compute` steps), plus
    /// one; at most `n`, the windows of the run. Preemption, loops and
    /// blocking can take a task into more windows: the list then grows as
    /// it fills (and a server without tasks gets no room until it runs).
    /// It saves the copies of a list that doubles from four entries (200
    /// servers with a median of 5 windows each: 50 us of a 0.5 ms run).
    /// It only sizes the lists: no result depends on it (and the room is
    /// at most the windows of the run, about twice what a dense list of
    /// them took).
    fn windows_wanted(&self, n: usize) -> Vec<usize> {
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
        want
    }

    /// Keep the first `n` metric windows (a run stopped early).
    pub(crate) fn truncate_windows(&mut self, n: usize) {
        for c in &mut self.cpus {
            c.calls_windows.truncate(n);
            c.ops_windows.truncate(n);
        }
        for s in &mut self.servers {
            s.windows.truncate(n);
        }
        self.nwin = n.min(self.nwin);
        for d in &mut self.devices {
            d.bytes_windows.truncate(n);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The dense forms the sparse ones replaced (the reference of the
    /// tests below).
    mod dense {
        use super::super::{to_f64, window_len};

        /// Each window's value over its length (CPU shares), in the vector that
        /// held the values: each share's bits replace its value, then the vector
        /// is reinterpreted (`u64` and `f64` have one size and alignment, so the
        /// collect reuses the allocation: no second vector, no fresh pages).
        pub(super) fn window_fractions(mut v: Vec<u64>, w: u64, dur: u64) -> Vec<f64> {
            let full = ((dur / w) as usize).min(v.len());
            let wf = to_f64(w);
            for b in &mut v[..full] {
                // a window without work has a share of 0.0, whose bits are the
                // value's (0): no division, as for most windows of a server whose
                // period is longer than the window
                if *b != 0 {
                    *b = (to_f64(*b) / wf).to_bits();
                }
            }
            for (k, b) in v.iter_mut().enumerate().skip(full) {
                *b = (to_f64(*b) / to_f64(window_len(k, w, dur))).to_bits();
            }
            v.into_iter().map(f64::from_bits).collect()
        }

        /// Add the interval `[a, b)` to per-window totals of width `w`.
        pub(super) fn add_windows(win: &mut [u64], w: u64, a: u64, b: u64) {
            let mut t = a;
            while t < b {
                let k = (t / w) as usize;
                let end = ((k as u64 + 1) * w).min(b);
                if let Some(x) = win.get_mut(k) {
                    *x += end - t;
                }
                t = end;
            }
        }
    }

    /// Shares of full windows and of a last, shorter one, exactly as the
    /// direct division gives them, in the allocation of the busy times.
    #[test]
    fn fractions_divide_in_place() {
        let (w, dur) = (1_000u64, 3_500u64);
        let mut b = BusyWindows::with_capacity(4, 0);
        b.add_interval(w, 0, 1_000);
        b.add(1, 250);
        b.add_interval(w, 3_000, 3_499);
        let want: Vec<f64> = vec![1.0, 0.25, 0.0, 499.0 / 500.0];
        let ptr = b.nz.as_ptr() as usize;
        let got = b.into_fractions(w, dur);
        assert_eq!(got.to_vec(), want);
        assert_eq!(got.nonzero().len(), 3, "a zero was stored");
        assert_eq!(
            got.nonzero().as_ptr() as usize,
            ptr,
            "the vector was copied"
        );
        // values too large for `i64` take the exact unsigned path
        let mut big = BusyWindows::with_capacity(1, 0);
        big.add(0, u64::MAX);
        assert_eq!(big.into_fractions(u64::MAX, u64::MAX).to_vec(), vec![1.0]);
    }

    /// An interval past the last window is dropped, and one that crosses
    /// it keeps its part inside; truncating drops the later windows.
    #[test]
    fn windows_past_the_end_are_dropped() {
        let mut b = BusyWindows::with_capacity(3, 1);
        b.add_interval(10, 25, 45);
        b.add(7, 1);
        assert_eq!(b.to_dense(), vec![0, 0, 5]);
        b.add_interval(10, 3, 12);
        assert_eq!(b.to_dense(), vec![7, 2, 5]);
        b.truncate(2);
        assert_eq!((b.len, b.to_dense()), (2, vec![7, 2]));
        b.truncate(5);
        assert_eq!(b.to_dense(), vec![7, 2]);
    }

    proptest::proptest! {
        /// The sparse windows hold what the dense ones held, for charges
        /// in time order (as the simulator makes them) and out of it
        /// (the search path), single-window adds and intervals across
        /// windows, with and without a truncation and a shorter last
        /// window; their shares are the dense shares, bit for bit, and
        /// no zero is stored.
        #[test]
        fn sparse_windows_match_the_dense_ones(
            w in 1u64..50,
            nwin in 0usize..40,
            short in 0u64..50,
            steps in proptest::collection::vec((0u64..2_000, 0u64..120, proptest::bool::ANY), 0..60),
            in_order in proptest::bool::ANY,
            cut in proptest::option::of(0usize..45),
            cap in 0usize..4,
        ) {
            let dur = (nwin as u64 * w).saturating_sub(short % w.max(1)).max(1);
            let nwin = dur.div_ceil(w) as usize;
            let mut dense = vec![0u64; nwin];
            let mut sparse = BusyWindows::with_capacity(nwin, cap);
            let mut t = 0;
            for (at, len, single) in steps {
                let a = if in_order { t + at % 37 } else { at };
                let b = a + len + 1;
                t = b;
                let k = (a / w) as usize;
                if single && b <= (a / w + 1) * w {
                    if let Some(x) = dense.get_mut(k) {
                        *x += b - a;
                    }
                    sparse.add(k, b - a);
                } else {
                    dense::add_windows(&mut dense, w, a, b);
                    sparse.add_interval(w, a, b);
                }
            }
            let (mut dense, mut dur) = (dense, dur);
            if let Some(n) = cut {
                dense.truncate(n);
                sparse.truncate(n);
                dur = dur.min((n as u64 * w).max(1));
            }
            proptest::prop_assert_eq!(sparse.to_dense(), dense.clone());
            proptest::prop_assert!(sparse.nz.iter().all(|&(_, x)| x > 0));
            let want = dense::window_fractions(dense, w, dur);
            let got = sparse.into_fractions(w, dur);
            proptest::prop_assert_eq!(got.len(), want.len());
            let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            proptest::prop_assert_eq!(bits(&got.to_vec()), bits(&want));
            proptest::prop_assert_eq!(bits(&got.iter().collect::<Vec<_>>()), bits(&want));
            proptest::prop_assert_eq!(got, Windows::from_dense(&want));
        }
    }
}
