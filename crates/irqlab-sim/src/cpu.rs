//! CPUs: what runs on each (idle, a thread, an interrupt top half, the
//! softirq context), how elapsed time is charged, and how the core's
//! decision is carried out.
//!
//! Design principles:
//! * One context at a time per CPU. Top halves own the CPU until done and
//!   nest by priority (a higher-priority top half preempts a lower one,
//!   VINT §III); then the softirq context (`linux` path); then the thread
//!   the core dispatched.
//! * Time is charged lazily: `advance` charges everything since the CPU's
//!   last update to what ran, at every event that touches the CPU. Who pays
//!   for a top half is the interrupt path's rule (`paths::top_half_charge`).
//! * `kick` re-evaluates a CPU and arms exactly one pending check, at the
//!   earlier of the core's `next_update` and the running context's end.

use std::cmp::Reverse;
use std::collections::BTreeMap;

use irqlab_core::{Nanos, Scheduler, Server, ServerPolicy};

use crate::config::InterruptPath;
use crate::machine::{core_err, Simulation, MAX_STEPS};
use crate::metrics::CpuMetrics;
use crate::paths::linux::Softirq;
use crate::thread::BhJob;
use crate::SimError;

/// Where a top half comes from (for names in traces).
#[derive(Copy, Clone, Debug)]
pub(crate) enum IsrSource {
    Device(usize),
    /// Controller and interrupter (MSI vector `msi_base + interrupter`).
    Xhci(usize, usize),
    /// The IPI delivering virtual interrupt `virq` (physical arrival time).
    Ipi(usize, u64),
}

#[derive(Clone, Debug)]
pub(crate) struct Isr {
    pub(crate) source: IsrSource,
    pub(crate) remaining: u64,
    /// Arrival time of the interrupt.
    pub(crate) started: u64,
    /// When it started to run (it waits behind top halves of equal or
    /// higher priority); the trace draws it from there.
    pub(crate) ran_from: Option<u64>,
    pub(crate) jobs: Vec<BhJob>,
    /// Higher preempts lower (nested interrupts).
    pub(crate) priority: u32,
}

/// Top halves pending on one CPU, in the order they run: higher priority
/// first, arrival order among equals (nested interrupts, VINT §III). Every
/// operation is O(log n), so an interrupt storm costs time linear in its
/// interrupts, and the queue is bounded (`MAX_PENDING_ISRS`): past it an
/// interrupt is lost and counted, as a storm's result rather than a hang.
/// The first (running) top half is held outside the ordered map: most of
/// the time one is pending or none, and then no map operation is made
/// (for speed: the map's insert and removal were 6 % of a device-heavy
/// run's instructions).
#[derive(Default)]
pub(crate) struct IsrQueue {
    /// The first top half, if any (the smallest key).
    first: Option<(IsrKey, Isr)>,
    /// The others, each behind `first`.
    rest: BTreeMap<IsrKey, Isr>,
    seq: u64,
}

/// Position of a pending top half in its CPU's queue.
pub(crate) type IsrKey = (Reverse<u32>, u64);

/// Top halves pending on one CPU at most (beyond: lost, counted).
pub(crate) const MAX_PENDING_ISRS: usize = 1 << 16;

impl IsrQueue {
    pub(crate) fn is_empty(&self) -> bool {
        self.first.is_none()
    }
    fn len(&self) -> usize {
        usize::from(self.first.is_some()) + self.rest.len()
    }
    /// The running (first) top half.
    pub(crate) fn front(&self) -> Option<&Isr> {
        self.first.as_ref().map(|(_, i)| i)
    }
    pub(crate) fn front_mut(&mut self) -> Option<&mut Isr> {
        self.first.as_mut().map(|(_, i)| i)
    }
    /// Whether `k` is the first top half's key.
    fn is_first(&self, k: IsrKey) -> bool {
        self.first.as_ref().is_some_and(|(f, _)| *f == k)
    }
    pub(crate) fn pop_front(&mut self) -> Option<Isr> {
        let (_, isr) = self.first.take()?;
        // (an empty ordered map is looked at without a walk)
        if !self.rest.is_empty() {
            self.first = self.rest.pop_first();
        }
        Some(isr)
    }
    pub(crate) fn get_mut(&mut self, k: IsrKey) -> Option<&mut Isr> {
        match &mut self.first {
            Some((f, isr)) if *f == k => Some(isr),
            _ => self.rest.get_mut(&k),
        }
    }
    /// Queue `isr` behind every top half of equal or higher priority;
    /// `None` when the queue is full (the interrupt is lost).
    fn push(&mut self, isr: Isr) -> Option<IsrKey> {
        if self.len() >= MAX_PENDING_ISRS {
            return None;
        }
        self.seq += 1;
        let k = (Reverse(isr.priority), self.seq);
        match self.first.take() {
            None => self.first = Some((k, isr)),
            // it preempts the first, which waits with the others
            Some((f, running)) if k < f => {
                self.rest.insert(f, running);
                self.first = Some((k, isr));
            }
            first => {
                self.first = first;
                self.rest.insert(k, isr);
            }
        }
        Some(k)
    }
}

pub(crate) struct Cpu {
    pub(crate) sched: Scheduler,
    /// Global server index of each local server id.
    pub(crate) servers: Vec<usize>,
    /// Sporadic servers waiting for a whole budget to start a VCPU job
    /// (`sporadic_whole` looks at these only, not at every server).
    pub(crate) whole_watch: Vec<usize>,
    /// Global thread index of each local (core) thread id.
    pub(crate) threads: Vec<usize>,
    pub(crate) running: Option<(usize, bool)>,
    pub(crate) next_update: Option<u64>,
    pub(crate) need_resched: bool,
    /// A woken thread should preempt (Linux `need_resched()`, which ends
    /// softirq restarts).
    pub(crate) wake_resched: bool,
    pub(crate) last: u64,
    /// Time of the pending check (its timer in `Simulation::timers`).
    pub(crate) armed: Option<u64>,
    pub(crate) isrs: IsrQueue,
    pub(crate) softirq: Softirq,
    /// The ksoftirqd thread (`linux` path).
    pub(crate) ksoftirqd: Option<usize>,
    /// Start of the current run segment (for the trace).
    pub(crate) seg_start: u64,
    /// VCPU switch overhead model (`switch_overhead`): the execution
    /// context (`Simulation::ctx_of`) that ran last, when the CPU left it
    /// for idle (`None` while it runs), and the overhead still to spend
    /// before the dispatched thread progresses.
    pub(crate) ctx: Option<usize>,
    pub(crate) ctx_left: Option<u64>,
    pub(crate) switch_left: u64,
    /// Per window: schedule calls and replenishment-queue operations.
    pub(crate) calls_windows: Vec<u64>,
    pub(crate) ops_windows: Vec<u64>,
    /// The metric window last looked up, `[win_start, win_end)`, and its
    /// index: most look-ups fall in it, which saves a division per event.
    win: usize,
    win_start: u64,
    win_end: u64,
    pub(crate) metrics: CpuMetrics,
}

impl Cpu {
    pub(crate) fn new(nwin: usize) -> Cpu {
        Cpu {
            sched: Scheduler::new(),
            servers: Vec::new(),
            whole_watch: Vec::new(),
            threads: Vec::new(),
            running: None,
            next_update: None,
            need_resched: true,
            wake_resched: false,
            last: 0,
            armed: None,
            isrs: IsrQueue::default(),
            softirq: Softirq::default(),
            ksoftirqd: None,
            seg_start: 0,
            ctx: None,
            ctx_left: None,
            switch_left: 0,
            calls_windows: vec![0; nwin],
            ops_windows: vec![0; nwin],
            win: 0,
            win_start: 0,
            win_end: 0,
            metrics: CpuMetrics::default(),
        }
    }

    /// The index of the metric window of width `w` that holds `t`.
    fn window_of(&mut self, w: u64, t: u64) -> usize {
        if t < self.win_start || t >= self.win_end {
            let k = t / w;
            self.win = k as usize;
            self.win_start = k * w;
            self.win_end = self.win_start.saturating_add(w);
        }
        self.win
    }
}

impl Simulation {
    /// Charge the time since the CPU's last update to what ran.
    #[inline]
    pub(crate) fn advance(&mut self, c: usize) {
        // most calls find nothing to charge (the CPU was touched already
        // at this instant): no call then
        if self.cpus[c].last != self.now {
            self.charge(c);
        }
    }

    fn charge(&mut self, c: usize) {
        let now = self.now;
        let cpu = &mut self.cpus[c];
        let dt = now - cpu.last;
        cpu.last = now;
        if let Some(isr) = cpu.isrs.front_mut() {
            isr.remaining = isr.remaining.saturating_sub(dt);
            cpu.metrics.isr_ns += dt;
            if self.cfg.path.hypervisor_pays_top_halves() {
                cpu.sched.exclude_until(Nanos(now), Nanos(dt));
            }
            return;
        }
        if let Some((_, rem)) = cpu.softirq.current.as_mut() {
            *rem = rem.saturating_sub(dt);
            cpu.metrics.softirq_ns += dt;
            return;
        }
        match cpu.running {
            Some((t, background)) => {
                // a switch in progress: no progress of the thread; a VCPU
                // switch is the VCPU's time, a thread switch (`switch_costs`)
                // the kernel's or the supervisor's, not the server's
                let sw = cpu.switch_left.min(dt);
                let from = if self.cfg.path == InterruptPath::Hypervisor {
                    now - dt
                } else {
                    now - dt + sw
                };
                if sw > 0 {
                    cpu.switch_left -= sw;
                    cpu.metrics.switch_ns += sw;
                    let g = self.threads[t].server;
                    self.trace.switch(c, g, now - dt, now - dt + sw);
                    if from > now - dt {
                        cpu.sched.exclude_until(Nanos(from), Nanos(sw));
                    }
                }
                let th = &mut self.threads[t];
                th.remaining = th.remaining.saturating_sub(dt - sw);
                let s = &mut self.servers[th.server];
                if background {
                    s.background += now - from;
                } else {
                    s.busy += now - from;
                    let w = self.cfg.window;
                    if from < now {
                        let i = cpu.window_of(w, from);
                        let (g, log) = (th.server, &mut self.busy_log);
                        if now <= cpu.win_end {
                            log.add(g, &mut s.open_window, i, now - from);
                        } else {
                            log.add_interval(g, &mut s.open_window, w, from, now);
                        }
                    }
                    if let Some(sp) = s.supply.as_mut() {
                        sp.run(from, now);
                        if sp.wants_whole() && !s.whole_watched {
                            s.whole_watched = true;
                            s.whole_from = 0;
                            cpu.whole_watch.push(th.server);
                        }
                    }
                }
            }
            None => cpu.metrics.idle_ns += dt,
        }
    }

    /// End the CPU's current run segment now (it is drawn in the trace).
    #[inline]
    pub(crate) fn close_segment(&mut self, c: usize) {
        if self.trace.enabled() {
            self.draw_segment(c);
        }
        self.cpus[c].seg_start = self.now;
    }

    #[cold]
    #[inline(never)]
    fn draw_segment(&mut self, c: usize) {
        let now = self.now;
        let start = self.cpus[c].seg_start;
        if let Some((t, bg)) = self.cpus[c].running {
            if now > start && self.cpus[c].isrs.is_empty() {
                let th = &self.threads[t];
                self.trace.run(c, th.server, &th.name, start, now, bg);
            }
        }
    }

    pub(crate) fn touch(&mut self, c: usize) {
        self.advance(c);
        self.dirty.mark(c);
    }

    /// Re-evaluate dirty CPUs until nothing changes at this instant.
    pub(crate) fn settle(&mut self) -> Result<(), SimError> {
        self.settle_steps(0)
    }

    /// `settle` when CPU `c` alone is to be re-evaluated (its timer
    /// fired): it is re-evaluated first, as `settle` would take it, without
    /// marking it. No CPU is dirty between two events: `settle` leaves
    /// none, and the first timer is armed by a `settle`.
    pub(crate) fn settle_from(&mut self, c: usize) -> Result<(), SimError> {
        debug_assert!(self.dirty.is_empty());
        self.kick(c)?;
        self.settle_steps(1)
    }

    /// `settle` after `guard` re-evaluations.
    fn settle_steps(&mut self, mut guard: u32) -> Result<(), SimError> {
        while let Some(c) = self.dirty.take_first() {
            self.kick(c)?;
            guard += 1;
            if guard > MAX_STEPS {
                return Err(SimError::Config {
                    path: "tasks".into(),
                    value: format!("t = {} ns", self.now),
                    rule: "the system makes no progress at one instant (a program loop that neither computes nor blocks)".into(),
                });
            }
        }
        Ok(())
    }

    /// Re-evaluate CPU `c` now. Inlined at its two call sites (a fired
    /// timer, `settle_from`; a CPU marked by an event, `settle`): the
    /// first mostly finds a step done, the second mostly a wake-up, and
    /// each copy's branches are predicted apart -- 4 % less time on 10 RM
    /// tasks for 2 % more instructions (for speed, docs/performance-log.md).
    #[inline(always)]
    pub(crate) fn kick(&mut self, c: usize) -> Result<(), SimError> {
        let now = self.now;
        self.advance(c);
        // Top halves first: they own the CPU until done.
        while let Some(isr) = self.cpus[c].isrs.front() {
            if isr.remaining > 0 {
                let t = now.saturating_add(isr.remaining);
                self.arm(c, t);
                return Ok(());
            }
            let Some(isr) = self.cpus[c].isrs.pop_front() else {
                break;
            };
            self.trace_isr(c, &isr);
            if let Some(next) = self.cpus[c].isrs.front_mut() {
                next.ran_from.get_or_insert(now);
            }
            self.cpus[c].seg_start = now;
            self.top_half_done(c, isr)?;
            self.cpus[c].need_resched = true;
        }
        // Then the softirq (linux path): it runs in interrupt context too
        // (nothing to do, and no call, unless it runs or has a job).
        if self.cpus[c].softirq.active() && self.softirq_step(c)? {
            return Ok(());
        }
        // The running thread finished its step?
        if let Some((t, _)) = self.cpus[c].running {
            // (a thread made inactive by an event -- a job aborted at its
            // deadline -- has no step to finish)
            if self.threads[t].remaining == 0 && self.threads[t].active {
                self.step_done(t)?;
            }
        }
        // The core's `next_update` is a timer: on `quest*` the supervisor
        // wakes `timer_latency` late for it (0 on the other paths).
        let late = match self.cfg.path {
            InterruptPath::Quest | InterruptPath::QuestNoIovcpu => {
                self.cfg.switch_costs.timer_latency
            }
            InterruptPath::Linux | InterruptPath::Hypervisor => 0,
        };
        let due = |cpu: &Cpu| cpu.next_update.map(|u| u.saturating_add(late));
        let cpu = &self.cpus[c];
        if cpu.need_resched || due(cpu).is_some_and(|u| u <= now) {
            self.dispatch(c)?;
        }
        let mut t = due(&self.cpus[c]).unwrap_or(u64::MAX);
        if let Some((th, _)) = self.cpus[c].running {
            let left = self.cpus[c].switch_left;
            t = t.min(
                now.saturating_add(left)
                    .saturating_add(self.threads[th].remaining),
            );
        }
        if t != u64::MAX {
            self.arm(c, t);
        } else if let Some(old) = self.cpus[c].armed.take() {
            self.timers.set(c, None);
            self.superseded(old);
        }
        Ok(())
    }

    /// Draw a finished top half in the trace.
    fn trace_isr(&mut self, c: usize, isr: &Isr) {
        if !self.trace.enabled() {
            return;
        }
        let name = match isr.source {
            IsrSource::Device(d) => self.cfg.devices[d].name.clone(),
            IsrSource::Xhci(x, it) => {
                let xc = &self.cfg.xhci[x];
                format!("{} MSI {}", xc.name, xc.msi_base as usize + it)
            }
            IsrSource::Ipi(v, _) => format!("IPI {}", self.cfg.virqs[v].name),
        };
        let from = isr.ran_from.unwrap_or(isr.started);
        self.trace
            .irq_slice(c, "isr", &format!("irq {name}"), from, self.now);
        for j in &isr.jobs {
            self.trace.flow_begin(j.flow, c, from, "irq->bh");
        }
    }

    /// Check CPU `c` at `t` (replacing its pending check, if any).
    pub(crate) fn arm(&mut self, c: usize, t: u64) {
        let old = self.cpus[c].armed;
        if old == Some(t) {
            // The pending check already fires at `t`.
            return;
        }
        if let Some(old) = old {
            self.superseded(old);
        }
        self.cpus[c].armed = Some(t);
        let seq = self.events.stamp();
        self.timers.set(c, Some((t, seq)));
    }

    /// A pending check at `t` was replaced or cancelled. It is still
    /// counted in `metrics.events`, as it was when checks were queued
    /// events and a replaced one was popped and ignored at its time: now,
    /// if this `run_until` reaches `t`, or by the one that does.
    fn superseded(&mut self, t: u64) {
        if t <= self.bound {
            self.processed += 1;
        } else if t <= self.cfg.duration {
            self.superseded_after.push(t);
        }
    }

    pub(crate) fn dispatch(&mut self, c: usize) -> Result<(), SimError> {
        let now = self.now;
        self.close_segment(c);
        let prev_thread = self.cpus[c].running.map(|(t, _)| t);
        let prev = prev_thread.map(|t| self.threads[t].server);
        let win = self.cpus[c].window_of(self.cfg.window, now);
        if let Some(w) = self.cpus[c].calls_windows.get_mut(win) {
            *w += 1;
        }
        let d = self.cpus[c]
            .sched
            .schedule(Nanos(now))
            .map_err(core_err(|| format!("cpu {c}")))?;
        if let Some(g) = prev.filter(|&g| self.servers[g].sporadic) {
            // replenishment-queue occupancy after the previous server's
            // end_timeslice
            if let Ok(Server::Sporadic(ss)) = self.cpus[c].sched.server(self.servers[g].local) {
                let s = &mut self.servers[g];
                let n = ss.queue_len();
                s.queue_max = s.queue_max.max(n);
                s.queue_sum += n as u64;
                s.queue_samples += 1;
                let delta = ss.ops - s.ops_seen;
                s.ops_seen = ss.ops;
                if let Some(w) = self.cpus[c].ops_windows.get_mut(win) {
                    *w += delta;
                }
            }
        }
        if !self.cpus[c].whole_watch.is_empty() {
            self.sporadic_whole(c, now, prev);
        }
        let cpu = &mut self.cpus[c];
        cpu.need_resched = false;
        cpu.wake_resched = false;
        cpu.next_update = d.next_update.map(|x| x.as_ns());
        cpu.running = match (d.server, d.thread) {
            (Some(s), Some(t)) => {
                let g = cpu.servers[s.0];
                let th = *cpu.threads.get(t.0).ok_or_else(|| SimError::Config {
                    path: format!("cpu {c}"),
                    value: format!("{t:?}"),
                    rule: "dispatched thread unknown to the machine".into(),
                })?;
                if self.trace.enabled() {
                    let budget = cpu
                        .sched
                        .server(s)
                        .ok()
                        .map(|x| x.budget().as_ns())
                        .filter(|&b| b != u64::MAX);
                    self.trace.budget(c, g, now, budget);
                    if let Some(f) = self.wake_flow[th].take() {
                        self.trace.flow_end(f, c, now);
                    }
                }
                Some((th, d.background))
            }
            _ => None,
        };
        self.switch_context(c);
        self.switch_thread(c, prev_thread);
        Ok(())
    }

    /// Thread switch costs (`SimConfig::switch_costs`, thread-based paths):
    /// a CPU that goes straight from thread `prev` to a different thread
    /// starts a switch of `context_switch`, plus on `quest*`
    /// `priority_switch` for every thread whose priority irqlab-rt's
    /// supervisor changes when the dispatched server changes (the outgoing
    /// server's threads on this CPU drop to the background priority, the
    /// incoming server's rise).
    fn switch_thread(&mut self, c: usize, prev: Option<usize>) {
        let sc = &self.cfg.switch_costs;
        if sc.context_switch == 0 && sc.priority_switch == 0 {
            return;
        }
        let quest = match self.cfg.path {
            InterruptPath::Quest | InterruptPath::QuestNoIovcpu => true,
            InterruptPath::Linux => false,
            InterruptPath::Hypervisor => return,
        };
        let (Some(p), Some((t, _))) = (prev, self.cpus[c].running) else {
            return;
        };
        if p == t {
            return;
        }
        let (old, new) = (self.threads[p].server, self.threads[t].server);
        let changed = if quest && old != new {
            u64::from(self.servers[old].threads) + u64::from(self.servers[new].threads)
        } else {
            0
        };
        let cost = sc
            .context_switch
            .saturating_add(sc.priority_switch.saturating_mul(changed));
        self.cpus[c].switch_left = cost;
    }

    /// VCPU switch overhead (`SimConfig::switch_overhead`): after a
    /// dispatch, a context other than the one that ran last, or the same
    /// one after the CPU idled for a while, starts a switch; the same
    /// context continuing (another of its threads, its pseudo-VCPU, a
    /// zero-length idle) keeps what is left of a switch in progress.
    pub(crate) fn switch_context(&mut self, c: usize) {
        let now = self.now;
        let new = self.cpus[c]
            .running
            .map(|(t, _)| self.ctx_of[self.threads[t].server]);
        let o = self.cfg.switch_overhead;
        let cpu = &mut self.cpus[c];
        match new {
            Some(x) => {
                let resumed = cpu.ctx == Some(x) && cpu.ctx_left.is_none_or(|t| t == now);
                if !resumed {
                    cpu.metrics.vcpu_switches += 1;
                    cpu.switch_left = o;
                }
                cpu.ctx = Some(x);
                cpu.ctx_left = None;
            }
            None => {
                if cpu.ctx_left.is_none() {
                    cpu.ctx_left = Some(now);
                }
            }
        }
    }

    /// A top half arrives on CPU `c`: it runs before every ISR of lower
    /// priority (preempting the running one), after those of equal or
    /// higher priority (nested interrupts, VINT §III).
    /// Returns where it was queued, or `None` when the CPU's queue of
    /// pending top halves is full and the interrupt is lost (counted in
    /// `lost_interrupts`).
    pub(crate) fn push_isr(&mut self, c: usize, isr: Isr) -> Option<IsrKey> {
        self.touch(c);
        if self.cpus[c].isrs.is_empty() {
            self.close_segment(c);
        }
        let now = self.now;
        let cpu = &mut self.cpus[c];
        let Some(k) = cpu.isrs.push(isr) else {
            cpu.metrics.lost_interrupts += 1;
            return None;
        };
        if cpu.isrs.is_first(k) {
            // runs now, nested in the one it preempts (if any)
            if let Some(i) = cpu.isrs.get_mut(k) {
                i.ran_from = Some(now);
            }
        }
        Some(k)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn isr(priority: u32, tag: u64) -> Isr {
        Isr {
            source: IsrSource::Device(0),
            remaining: tag,
            started: 0,
            ran_from: None,
            jobs: Vec::new(),
            priority,
        }
    }

    proptest! {
        /// `IsrQueue` (the first top half outside the map) against one
        /// ordered map of every pending top half: the same first, the
        /// same order of removal, the same entry for a key, under random
        /// pushes of three priorities, removals and look-ups.
        #[test]
        fn isr_queue_is_one_ordered_map(
            ops in proptest::collection::vec((0u8..3, 0u32..3, 0usize..8), 0..200)
        ) {
            let mut q = IsrQueue::default();
            let mut want: BTreeMap<IsrKey, u64> = BTreeMap::new();
            let mut keys = Vec::new();
            for (n, (op, priority, pick)) in ops.into_iter().enumerate() {
                let tag = n as u64;
                match op {
                    0 => {
                        let k = q.push(isr(priority, tag));
                        prop_assert!(k.is_some());
                        let k = k.unwrap_or((Reverse(0), 0));
                        want.insert(k, tag);
                        keys.push(k);
                        prop_assert_eq!(q.is_first(k), want.keys().next() == Some(&k));
                    }
                    1 => {
                        let got = q.pop_front().map(|i| i.remaining);
                        prop_assert_eq!(got, want.pop_first().map(|(_, t)| t));
                    }
                    _ => {
                        if let Some(&k) = keys.get(pick % keys.len().max(1)) {
                            let got = q.get_mut(k).map(|i| i.remaining);
                            prop_assert_eq!(got, want.get(&k).copied());
                        }
                    }
                }
                prop_assert_eq!(q.is_empty(), want.is_empty());
                prop_assert_eq!(q.len(), want.len());
                prop_assert_eq!(q.front().map(|i| i.remaining), want.values().next().copied());
            }
        }
    }
}
