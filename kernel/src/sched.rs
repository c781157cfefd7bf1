//! Threads and VCPUs, scheduled by `irqlab-core`.
//!
//! What it is: the kernel's threads (each with its own stack and a saved
//! [`TrapFrame`], FPU/SSE state included), grouped into VCPUs that are
//! servers of one `irqlab_core::Scheduler`: Main VCPUs are sporadic
//! servers (QUEST-VCPU Alg. 3-6, 11-13), I/O VCPUs are PIBS (Alg. 7-10)
//! that inherit the period of the Main VCPU they serve (Alg. 10). Every
//! interrupt and kernel call ends in [`Kernel::resched`]: charge, decide,
//! switch, arm.
//!
//! Design principles -- the core is driven exactly as the simulator
//! (`irqlab-sim`'s `dispatch`) and the Linux supervisor (`irqlab-rt`) drive
//! it (DESIGN §2, the LITMUS^RT reservation contract):
//! * `now` is read once per trap from the TSC and passed in; the core never
//!   reads a clock.
//! * `schedule(now)` charges the dispatched server for the time since the
//!   previous call (the thread ran, then the trap came), decides (Alg. 1),
//!   and returns `next_update`, which is armed on the LAPIC one-shot timer
//!   (with the next timed release of a sleeping thread, whichever is
//!   first). Wake-ups (`wakeup`, Alg. 2, with the inherited period for an
//!   I/O VCPU) and blocks (`block`) are told to the core as they happen and
//!   are always followed by `schedule` before the trap returns.
//! * The kernel only carries out the `Dispatch`: the chosen thread's frame
//!   is copied onto the trap frame; `None` runs the idle loop (`sti; hlt`).
//! * Guest-side accounting: each dispatch opens an interval at the TSC time
//!   the trap returns, the next trap closes it; the intervals of each Main
//!   VCPU are checked against its budget per sliding period (`check`).

use alloc::alloc::{alloc_zeroed, Layout};
use alloc::string::String;
use alloc::vec::Vec;

use irqlab_core::{
    CoreError, Dispatch, Inherit, LatencyStats, Nanos, Pibs, Scheduler, Server, ServerId, ServerPriority,
    SporadicServer, ThreadId, ThreadPolicy, Utilization, DEFAULT_MAX_REPL,
};

use crate::apic;
use crate::cpu::{TrapFrame, VEC_CALL};
use crate::KCell;

pub const THREAD_STACK: usize = 64 * 1024;
/// Run intervals kept per Main VCPU for the budget check (a VCPU with
/// more is reported `truncated` and fails the check).
pub const MAX_RUNS: usize = 32_768;
/// I/O requests kept for the per-request report.
pub const MAX_REQUESTS: usize = 20_000;

/// Kernel calls (`int 0x80`, op in `rax`, arguments in `rdi`, `rsi`,
/// `rdx`, result in `rax`).
pub const CALL_SLEEP_UNTIL: u64 = 1;
pub const CALL_YIELD_BLOCK: u64 = 2;
/// `read(fd, buf, len)`: blocks until the bulk IN transfer completes;
/// returns the payload length (`u64::MAX`: error).
pub const CALL_READ: u64 = 3;
/// `write(fd, buf, len)`: one bulk OUT packet; blocks until it completes.
pub const CALL_WRITE: u64 = 8;
/// `usb_set_iovcpu(fd, class)` (USB-DIFFSERV §III).
pub const CALL_SET_IOVCPU: u64 = 4;
/// Bottom half: `bh_next(class, job)` / `bh_done(job)`.
pub const CALL_BH_NEXT: u64 = 5;
pub const CALL_BH_DONE: u64 = 6;
/// A reader (or, with argument `u64::MAX`, a spec task) has finished.
pub const CALL_DONE: u64 = 7;
/// The calling thread's CPU time so far (ns, guest TSC).
pub const CALL_CPU_TIME: u64 = 9;
/// The calling thread's job ends: its response time since its release is
/// recorded, and it sleeps until its next release, `period` after the last.
pub const CALL_PERIOD: u64 = 10;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum VcpuKind {
    Main { budget: u64, period: u64 },
    Io { util_num: u64, util_den: u64 },
}

pub struct Vcpu {
    pub name: String,
    pub sid: ServerId,
    pub kind: VcpuKind,
    /// Closed run intervals `[start, end)` in ns (guest TSC), Main VCPUs.
    pub runs: Vec<(u64, u64)>,
    pub run_ns: u64,
    /// Its first activation (ns): when it was created with its budget.
    pub r0: u64,
    /// Its threads never block (the per-period check applies).
    pub cpu_bound: bool,
    /// More run intervals than `MAX_RUNS`: the check cannot be made.
    pub truncated: bool,
}

pub struct Thread {
    pub name: String,
    pub tid: ThreadId,
    pub vcpu: usize,
    pub frame: TrapFrame,
    /// `Some(t)`: sleeping until `t` (ns).
    pub release: Option<u64>,
    pub run_ns: u64,
    pub dispatches: u64,
    /// Set when an I/O completion wakes the thread: recorded as latencies
    /// when it is next dispatched.
    pub mark: Option<Mark>,
    /// A CPU-bound thread's iteration counter (`run::hog`), if it is one.
    pub hog_slot: Option<usize>,
    /// The release of its current job (`CALL_PERIOD`), its jobs' response
    /// times, and the jobs that ended after their next release.
    pub job_release: u64,
    pub jobs: LatencyStats,
    pub missed: u64,
    /// Completed reads and writes, and I/O calls that failed.
    pub reads: u64,
    pub writes: u64,
    pub io_errors: u64,
}

/// Timestamps (ns) of one I/O request, from its submission to the wake-up
/// of the thread that waits for it.
#[derive(Clone, Copy, Debug, Default)]
pub struct Mark {
    pub class: usize,
    pub fd: usize,
    pub submit: u64,
    pub irq: u64,
    pub bh: u64,
    pub done: u64,
}

/// Latencies of one I/O class (irqlab-core's recorder statistics, the
/// software twin of the LATENCY-IP Latencies IP).
#[derive(Default)]
pub struct ClassLatency {
    /// Top half (event found) to the task resumed: USB-DIFFSERV's
    /// interrupt-to-task latency.
    pub irq_to_task: LatencyStats,
    /// Top half to the bottom half dispatched on its I/O VCPU.
    pub irq_to_bh: LatencyStats,
    /// TRB queued to the task resumed.
    pub submit_to_task: LatencyStats,
}

pub struct Kernel {
    pub sched: Scheduler,
    pub vcpus: Vec<Vcpu>,
    pub threads: Vec<Thread>,
    /// The running thread (`None`: the idle loop).
    pub current: Option<usize>,
    pub idle: TrapFrame,
    /// When the running thread was dispatched (ns).
    pub since: u64,
    pub last: Dispatch,
    /// Largest delay of a timer interrupt after the time it was armed for.
    pub timer_late_max: u64,
    pub timer_irqs: u64,
    pub resched: u64,
    pub core_errors: u64,
    pub last_core_error: Option<CoreError>,
    /// `falsify=no-enforce`: arm the timer at most every 20 ms regardless of
    /// `next_update` (budgets are then not enforced: the check must fail).
    pub no_enforce: bool,
    /// `inherit=strict`: I/O VCPUs drop to the next waiting Main VCPU's
    /// period when service for one ends (`Inherit::Strict`), else keep the
    /// highest until they block (QUEST-VCPU Alg. 10, `Inherit::Paper`).
    pub strict: bool,
    /// `charge=system`: the kernel's time in traps is excluded from the
    /// servers (`Scheduler::exclude`) instead of charged to the one that
    /// runs next; `excluded` sums it.
    pub charge_system: bool,
    pub excluded: u64,
    /// The Main VCPUs' replenishment-queue bound (`max_repl=`, default 32,
    /// QUEST-VCPU §3).
    pub max_repl: usize,
    /// Per I/O class (index = class).
    pub latency: Vec<ClassLatency>,
    /// Per fd (index = fd): each reader's own.
    pub latency_fd: Vec<ClassLatency>,
    /// Every I/O request (thread, timestamps, time the thread resumed), up
    /// to `MAX_REQUESTS` (run=spec prints them).
    pub requests: Vec<(usize, Mark, u64)>,
    /// Every job that ended (`CALL_PERIOD`): thread, release, end, up to
    /// `MAX_REQUESTS` (run=spec prints them).
    pub job_log: Vec<(usize, u64, u64)>,
    fx_init: [u8; 512],
}

pub static KERNEL: KCell<Option<Kernel>> = KCell::new(None);

/// The kernel state. Interrupts must be off (trap context, or boot).
pub fn kernel() -> &'static mut Kernel {
    // SAFETY: one CPU, interrupts off (caller's contract); set in `init`
    // before interrupts are enabled.
    match unsafe { KERNEL.get() } {
        Some(k) => k,
        None => {
            crate::kprintln!("FATAL: kernel state used before sched::init");
            crate::exit(crate::EXIT_FAIL)
        }
    }
}

extern "C" fn idle_loop(_: u64) -> ! {
    loop {
        // SAFETY: waits for the next interrupt with interrupts on.
        unsafe { core::arch::asm!("sti", "hlt", options(nomem, nostack)) }
    }
}

fn new_stack() -> u64 {
    let l = match Layout::from_size_align(THREAD_STACK, 16) {
        Ok(l) => l,
        Err(_) => crate::exit(crate::EXIT_FAIL),
    };
    // SAFETY: a non-zero size.
    let p = unsafe { alloc_zeroed(l) };
    if p.is_null() {
        crate::kprintln!("FATAL: out of memory for a thread stack");
        crate::exit(crate::EXIT_FAIL);
    }
    p as u64 + THREAD_STACK as u64
}

pub fn init(no_enforce: bool, strict: bool) {
    let fx_init = crate::cpu::fxsave_now();
    let idle = TrapFrame::new_thread(idle_loop, 0, new_stack(), &fx_init);
    // SAFETY: boot, interrupts off.
    unsafe {
        *KERNEL.get() = Some(Kernel {
            sched: Scheduler::new(),
            vcpus: Vec::new(),
            threads: Vec::new(),
            current: None,
            idle,
            since: 0,
            last: Dispatch {
                server: None,
                thread: None,
                background: false,
                next_update: None,
            },
            timer_late_max: 0,
            timer_irqs: 0,
            resched: 0,
            core_errors: 0,
            last_core_error: None,
            no_enforce,
            strict,
            max_repl: DEFAULT_MAX_REPL,
            charge_system: false,
            excluded: 0,
            latency: Vec::new(),
            latency_fd: Vec::new(),
            requests: Vec::new(),
            job_log: Vec::new(),
            fx_init,
        })
    };
}

impl Kernel {
    /// A Main VCPU: sporadic server with budget `C` per period `T`, rate
    /// monotonic, no background mode (a depleted server waits).
    pub fn add_main(&mut self, now: u64, name: &str, budget: u64, period: u64) -> Result<usize, CoreError> {
        let ss = SporadicServer::new(
            Nanos(budget),
            Nanos(period),
            self.max_repl,
            ServerPriority::RateMonotonic,
            false,
            Nanos(now),
        )?;
        let sid = self
            .sched
            .add_server(name, Server::Sporadic(ss), ThreadPolicy::FixedPriority)?;
        self.push_vcpu(now, name, sid, VcpuKind::Main { budget, period })
    }

    /// An I/O VCPU: PIBS with utilization `num/den` (QUEST-VCPU Alg. 7-10),
    /// paper or strict inheritance (`strict`).
    pub fn add_io(&mut self, now: u64, name: &str, num: u64, den: u64) -> Result<usize, CoreError> {
        let inherit = if self.strict {
            Inherit::Strict
        } else {
            Inherit::Paper
        };
        let p = Pibs::new(Utilization::new(num, den)?, inherit)?;
        let sid = self
            .sched
            .add_server(name, Server::Pibs(p), ThreadPolicy::FixedPriority)?;
        self.push_vcpu(
            now,
            name,
            sid,
            VcpuKind::Io {
                util_num: num,
                util_den: den,
            },
        )
    }

    fn push_vcpu(&mut self, now: u64, name: &str, sid: ServerId, kind: VcpuKind) -> Result<usize, CoreError> {
        if sid.0 != self.vcpus.len() {
            return Err(CoreError::UnknownServer(sid.0));
        }
        self.vcpus.push(Vcpu {
            name: name.into(),
            sid,
            kind,
            runs: Vec::with_capacity(MAX_RUNS),
            run_ns: 0,
            r0: now,
            cpu_bound: true,
            truncated: false,
        });
        Ok(sid.0)
    }

    /// A thread in VCPU `vcpu` running `entry(arg)`, blocked until woken.
    pub fn add_thread(
        &mut self,
        name: &str,
        vcpu: usize,
        prio: u32,
        entry: extern "C" fn(u64) -> !,
        arg: u64,
    ) -> Result<usize, CoreError> {
        let sid = self
            .vcpus
            .get(vcpu)
            .map(|v| v.sid)
            .ok_or(CoreError::UnknownServer(vcpu))?;
        let tid = self.sched.add_thread(name, sid, prio)?;
        if tid.0 != self.threads.len() {
            return Err(CoreError::UnknownThread(tid.0));
        }
        let frame = TrapFrame::new_thread(entry, arg, new_stack(), &self.fx_init);
        self.threads.push(Thread {
            name: name.into(),
            tid,
            vcpu,
            frame,
            release: None,
            run_ns: 0,
            dispatches: 0,
            mark: None,
            hog_slot: None,
            job_release: 0,
            jobs: LatencyStats::new(),
            missed: 0,
            reads: 0,
            writes: 0,
            io_errors: 0,
        });
        Ok(tid.0)
    }

    /// Alg. 2 for thread `t` (`inherit`: the period of the Main VCPU an I/O
    /// VCPU's thread serves, Alg. 10).
    pub fn wake(&mut self, now: u64, t: usize, inherit: Option<u64>) {
        let r = self.sched.wakeup(Nanos(now), ThreadId(t), inherit.map(Nanos));
        self.note(r.map(|_| ()));
    }

    pub fn block(&mut self, now: u64, t: usize) {
        let r = self.sched.block(Nanos(now), ThreadId(t));
        self.note(r.map(|_| ()));
    }

    fn note(&mut self, r: Result<(), CoreError>) {
        if let Err(e) = r {
            self.core_errors += 1;
            self.last_core_error = Some(e);
        }
    }

    /// Strict inheritance: the running I/O VCPU has finished serving one
    /// request of a Main VCPU of period `period` (the simulator's call).
    pub fn io_done(&mut self, now: u64, period: Option<u64>) {
        let (Some(t), Some(p), true) = (self.current, period, self.strict) else {
            return;
        };
        let v = self.threads[t].vcpu;
        if matches!(self.vcpus[v].kind, VcpuKind::Io { .. }) {
            let r = self
                .sched
                .io_service_done(Nanos(now), self.vcpus[v].sid, Nanos(p));
            self.note(r);
        }
    }

    /// The Main VCPU period a thread inherits to an I/O VCPU it waits on.
    pub fn main_period_of(&self, t: usize) -> Option<u64> {
        match self.vcpus.get(self.threads.get(t)?.vcpu)?.kind {
            VcpuKind::Main { period, .. } => Some(period),
            VcpuKind::Io { .. } => None,
        }
    }

    /// Trap entry: close the running thread's interval and save its frame.
    pub fn enter(&mut self, f: &TrapFrame, now: u64) {
        let ran = now.saturating_sub(self.since);
        match self.current {
            Some(t) => {
                let th = &mut self.threads[t];
                th.frame = *f;
                th.run_ns += ran;
                let v = &mut self.vcpus[th.vcpu];
                v.run_ns += ran;
                if matches!(v.kind, VcpuKind::Main { .. }) {
                    if v.runs.len() < MAX_RUNS {
                        v.runs.push((self.since, now));
                    } else {
                        v.truncated = true;
                    }
                }
            }
            None => self.idle = *f,
        }
    }

    fn record(&mut self, m: Mark, now: u64) {
        for (table, i) in [(&mut self.latency, m.class), (&mut self.latency_fd, m.fd)] {
            while table.len() <= i {
                table.push(ClassLatency::default());
            }
            let l = &mut table[i];
            l.irq_to_task.record(Nanos(now.saturating_sub(m.irq)));
            l.irq_to_bh.record(Nanos(m.bh.saturating_sub(m.irq)));
            l.submit_to_task.record(Nanos(now.saturating_sub(m.submit)));
        }
    }

    /// Timed releases that are due; returns the next one.
    fn release_due(&mut self, now: u64) -> Option<u64> {
        let mut next: Option<u64> = None;
        for t in 0..self.threads.len() {
            match self.threads[t].release {
                Some(r) if r <= now => {
                    self.threads[t].release = None;
                    self.wake(now, t, None);
                }
                Some(r) => next = Some(next.map_or(r, |n| n.min(r))),
                None => {}
            }
        }
        next
    }

    /// Trap exit: Alg. 1, carry out the dispatch, arm the timer.
    pub fn resched(&mut self, f: &mut TrapFrame, now: u64) {
        self.resched += 1;
        let next_release = self.release_due(now);
        let d = match self.sched.schedule(Nanos(now)) {
            Ok(d) => d,
            Err(e) => {
                self.core_errors += 1;
                self.last_core_error = Some(e);
                Dispatch {
                    server: None,
                    thread: None,
                    background: false,
                    next_update: None,
                }
            }
        };
        self.last = d;
        self.current = d.thread.map(|t| t.0).filter(|&t| t < self.threads.len());
        match self.current {
            Some(t) => {
                *f = self.threads[t].frame;
                self.threads[t].dispatches += 1;
                if let Some(m) = self.threads[t].mark.take() {
                    self.record(m, now);
                    if self.requests.len() < MAX_REQUESTS {
                        self.requests.push((t, m, now));
                    }
                }
            }
            None => *f = self.idle,
        }
        let mut at = d.next_update.map_or(u64::MAX, |n| n.0);
        if self.no_enforce {
            at = now + 20_000_000;
        }
        if let Some(r) = next_release {
            at = at.min(r);
        }
        apic::arm_at(now, at);
        self.since = apic::now();
        if self.charge_system {
            // The trap's own time (top half, decision, switch: from `now`
            // to the return) is the system's, not the next server's
            // (VINT §III's rule for a hypervisor's ISRs).
            self.sched.exclude(Nanos(self.since.saturating_sub(now)));
            self.excluded += self.since.saturating_sub(now);
        }
    }
}

/// A kernel call from a thread.
#[inline]
pub fn kcall(op: u64, a: u64) -> u64 {
    kcall3(op, a, 0, 0)
}

/// A kernel call with three arguments.
#[inline]
pub fn kcall3(op: u64, a: u64, b: u64, c: u64) -> u64 {
    let r: u64;
    // SAFETY: `int 0x80` enters `trap_entry`, which saves and restores
    // every register but `rax` (the result).
    unsafe {
        core::arch::asm!("int {v}", v = const VEC_CALL, inlateout("rax") op => r, in("rdi") a, in("rsi") b, in("rdx") c);
    }
    r
}

/// Kernel call `op` from thread `t` (`f.rax`, `f.rdi`...): the
/// scheduling calls; returns `false` for the others (the caller's).
pub fn call(k: &mut Kernel, f: &mut TrapFrame, now: u64) -> bool {
    let Some(t) = k.current else {
        return true;
    };
    match f.rax {
        CALL_SLEEP_UNTIL => {
            f.rax = 0;
            k.threads[t].frame.rax = 0;
            if f.rdi > now {
                k.threads[t].release = Some(f.rdi);
                k.block(now, t);
            }
        }
        CALL_CPU_TIME => {
            let th = &mut k.threads[t];
            th.frame.rax = th.run_ns + now.saturating_sub(k.since);
        }
        CALL_PERIOD => {
            if k.job_log.len() < MAX_REQUESTS {
                k.job_log.push((t, k.threads[t].job_release, now));
            }
            let th = &mut k.threads[t];
            th.jobs.record(Nanos(now.saturating_sub(th.job_release)));
            th.job_release = th.job_release.saturating_add(f.rdi);
            th.frame.rax = 0;
            if th.job_release > now {
                th.release = Some(th.job_release);
                k.block(now, t);
            } else {
                th.missed += 1;
            }
        }
        CALL_YIELD_BLOCK => {
            f.rax = 0;
            k.threads[t].frame.rax = 0;
            k.block(now, t);
        }
        _ => return false,
    }
    true
}

/// CPU time in each period `[r0 + kT, r0 + (k+1)T)` up to `end` (whole
/// periods only): `(max, min, periods)`. For a Main VCPU whose thread never
/// blocks, every replenishment falls on `r0 + kT` (the sporadic server
/// replenishes what it consumed one period after the activation it was
/// consumed from, QUEST-VCPU Alg. 11-12, and its activations are its
/// replenishments), so each such period may hold at most `C`.
pub fn per_period(runs: &[(u64, u64)], r0: u64, period: u64, end: u64) -> (u64, u64, u64) {
    let periods = end.saturating_sub(r0) / period;
    let (mut max, mut min) = (0u64, u64::MAX);
    let mut i = 0;
    for k in 0..periods {
        let (a, b) = (r0 + k * period, r0 + (k + 1) * period);
        let mut sum = 0;
        while i < runs.len() && runs[i].1 <= a {
            i += 1;
        }
        let mut j = i;
        while j < runs.len() && runs[j].0 < b {
            sum += runs[j].1.min(b) - runs[j].0.max(a);
            j += 1;
        }
        max = max.max(sum);
        min = min.min(sum);
    }
    (max, if periods == 0 { 0 } else { min }, periods)
}

/// Largest CPU time in any window of length `period` over run intervals
/// `runs` (sorted, disjoint): the maximum is reached by a window that
/// starts where an interval starts, so a two-pointer sweep is exact.
pub fn max_window(runs: &[(u64, u64)], period: u64) -> u64 {
    let mut best = 0;
    let mut j = 0;
    let mut full = 0u64; // sum of intervals i..j fully inside
    for i in 0..runs.len() {
        let end = runs[i].0 + period;
        if j < i {
            j = i;
            full = 0;
        }
        while j < runs.len() && runs[j].1 <= end {
            full += runs[j].1 - runs[j].0;
            j += 1;
        }
        let partial = if j < runs.len() && runs[j].0 < end {
            end - runs[j].0
        } else {
            0
        };
        best = best.max(full + partial);
        if j > i {
            full -= runs[i].1 - runs[i].0;
        }
    }
    best
}
