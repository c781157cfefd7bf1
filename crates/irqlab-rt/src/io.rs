//! The I/O path: top half, I/O classes on I/O VCPUs, and upcalls.
//!
//! What it is (DESIGN §7, USB-DIFFSERV §3, UPCALL §3.2):
//! * a **top-half** thread (SCHED_FIFO just below the supervisors) waits on
//!   every bound file descriptor (epoll, or io_uring poll requests, see
//!   `waiter`), one-shot: a ready fd is
//!   disarmed (the "interrupt is masked") until its handler has run;
//! * it time-stamps the event, spends the fd's **top-half cost** (the
//!   device's interrupt handler the model states, `BindOptions::top_half`:
//!   CPU time spun on the thread's own clock for each ready report, on top
//!   of the runtime's own per-event work), and, for an fd bound to an
//!   **I/O class**
//!   (`bind_fd`, the `usb_set_iovcpu` of USB-DIFFSERV), queues a bottom-half
//!   job on that class's I/O VCPU thread and wakes it through the core,
//!   passing the period of the Main VCPU the class serves so a PIBS I/O
//!   VCPU inherits it (QUEST-VCPU Alg. 10);
//! * the I/O VCPU thread runs the fd's handler, checks its budget
//!   cooperatively between handlers (the supervisor's park is the
//!   backstop), re-arms the fd, and records the event's latencies;
//! * for an fd with an **upcall** (`register_upcall`), the top half runs the
//!   handler itself -- the UPCALL paper's softirq upcall, the shortest
//!   dispatch path -- charged to the upcall's own sporadic server, whose
//!   four hooks are driven here with the top half's CPU time: with the
//!   budget spent, the fd stays disarmed until the replenishment.
//!
//! Bound fds are slots (`binding`): the waiter watches a duplicate and
//! reports slot keys, and every handler call first checks that the fd's
//! number still names the bound file, so a closed or reused number never
//! reaches the old handler. Handlers run under `quiet::call` (a panic is
//! caught and its message kept, with no backtrace collected).
//!
//! Accounting: every readiness event is counted once; each is handled
//! (possibly late), still queued at the stop, or discarded because its fd
//! was unbound, errored or closed first, which is reported. Data the kernel
//! drops before an event (a full socket buffer) is counted from
//! `/proc/net/udp` on the bound socket (see `socket_drops`).

use std::collections::VecDeque;
use std::os::fd::RawFd;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

use irqlab_core::{
    Inherit, LatencyRecorder, Nanos, Pibs, Server, ServerPolicy, SporadicServer, ThreadId,
    ThreadPolicy, UnblockCtx, Utilization,
};

use crate::binding::{Gone, Slot, Slots, Target};
use crate::error::RtError;
use crate::sys::{self, Fd};
use crate::threads::{self, Spawned};
use crate::waiter::Waiter;
use crate::{
    enter_thread, leave_thread, park, quiet, wake_task, CpuShared, Runtime, ServerHandle, Shared,
    TaskHandle, SAMPLES,
};

/// Waiter keys of the top half's own descriptors (slot keys are indices).
const WAKE_KEY: u64 = u64::MAX - 1;
const TIMER_KEY: u64 = u64::MAX - 2;
/// Panic messages kept per class or upcall.
const PANIC_MESSAGES: usize = 8;

/// The smallest non-zero top-half cost user space can spend faithfully.
/// The cost is spun on the thread's CPU clock (`sys::spin_cpu`), whose
/// every read is a system call here (no vDSO for CPU-time clocks): about
/// 0.55 us per read on this VM (0.1-0.3 us on bare metal), and the clock
/// advances in steps of about one read. A spin of `c` therefore spends `c`
/// plus up to one read past it; below 1 us (about two reads on this VM)
/// that overshoot is more than half the cost, and below one read the
/// cost cannot be expressed at all. Such costs are refused, not rounded.
pub const MIN_TOP_HALF: Nanos = Nanos(1_000);

/// How an fd is bound beyond its class ([`Runtime::bind_fd_with`]).
#[derive(Copy, Clone, Debug, Default)]
pub struct BindOptions {
    /// The Main VCPU waiting on the fd (as [`Runtime::bind_fd_for`]).
    pub waiter: Option<ServerHandle>,
    /// The device's top-half cost (a model's `top_half` / `isr`): CPU time
    /// the top half spins for each ready report of this fd, before it
    /// queues the bottom half, in addition to the runtime's own per-event
    /// work. Zero, or at least [`MIN_TOP_HALF`].
    pub top_half: Nanos,
}

/// Refuse a top-half cost user space cannot spend (see [`MIN_TOP_HALF`]).
pub fn check_top_half(field: impl Into<String>, cost: Nanos) -> Result<(), RtError> {
    if !cost.is_zero() && cost < MIN_TOP_HALF {
        return Err(RtError::config(
            field,
            cost,
            format!(
                "a top-half cost is spun on the thread's CPU clock, whose every read costs \
                 about 0.5 us on this machine: a cost below {MIN_TOP_HALF} cannot be spent \
                 faithfully from user space (use 0, or at least {MIN_TOP_HALF})"
            ),
        ));
    }
    Ok(())
}

/// How the top half waits for events.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Backend {
    /// epoll, one-shot per event (level-triggered for upcalls).
    #[default]
    Epoll,
    /// io_uring poll requests, one per arming.
    IoUring,
}

/// The server an I/O class's bottom halves run on.
#[derive(Copy, Clone, Debug)]
pub enum IoServer {
    /// A PIBS I/O VCPU limited to `utilization`, inheriting the period of
    /// the Main VCPU `serves` (QUEST-VCPU Alg. 7-10).
    Pibs {
        utilization: Utilization,
        serves: ServerHandle,
        inherit: Inherit,
    },
    /// A sporadic server with its own budget and period.
    Sporadic { budget: Nanos, period: Nanos },
    /// No I/O VCPU: bottom halves at fixed rank `rank` without budget (the
    /// baseline the isolation test compares against).
    Unbounded { rank: u64 },
}

/// An I/O class.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct IoClass {
    pub(crate) cpu: usize,
    pub(crate) index: usize,
    pub server: ServerHandle,
    pub worker: TaskHandle,
}

/// The budget of an upcall (a sporadic server of its own).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct UpcallBudget {
    pub budget: Nanos,
    pub period: Nanos,
}

/// What a handler sees.
pub struct Event<'a> {
    pub fd: RawFd,
    /// When the top half saw the event.
    pub arrival: Nanos,
    /// When the handler started.
    pub start: Nanos,
    /// The fd reported an error or hang-up: this is its last event.
    pub hangup: bool,
    shared: &'a Shared,
}

impl Event<'_> {
    /// Wake a task waiting in `TaskCtx::wait_wake`; its wake latency is
    /// measured from this event's arrival.
    pub fn wake(&self, task: TaskHandle) {
        wake_task(self.shared, task, self.arrival);
    }
}

/// A handler returns how many items (datagrams, bytes...) it consumed.
pub type Handler = Box<dyn FnMut(&mut Event) -> u64 + Send>;

#[derive(Clone, Copy, Debug)]
pub(crate) struct Job {
    /// The slot key of the fd.
    slot: usize,
    arrival: Nanos,
    hangup: bool,
    /// The period a PIBS I/O VCPU inherits for this job (the Main VCPU
    /// waiting on the fd), if any.
    inherit: Option<Nanos>,
}

/// Per-class state kept under the CPU lock.
pub(crate) struct ClassState {
    pub name: String,
    pub worker: ThreadId,
    pub inherit: Option<Nanos>,
    pub pibs: bool,
    queue: VecDeque<Job>,
    pub fds: Vec<RawFd>,
    pub events: u64,
    pub handled: u64,
    pub items: u64,
    pub panics: u64,
    /// The first panics' messages and locations.
    pub panic_messages: Vec<String>,
    /// Events whose fd was unbound, errored or closed before their turn.
    pub discarded: u64,
    pub budget_yields: u64,
    pub dispatch: LatencyRecorder,
    pub handling: LatencyRecorder,
}

fn keep_panic(v: &mut Vec<String>, msg: String) {
    if v.len() < PANIC_MESSAGES {
        v.push(msg);
    }
}

/// Upcall statistics (kept by the top half).
pub(crate) struct UpcallState {
    pub name: String,
    pub fd: RawFd,
    /// Its slot key.
    pub slot: usize,
    /// `None`: a budget equal to its period (100 %), which cannot bind --
    /// the time is accounted, never deferred. (A top half busy 100 % of a
    /// window, softirq time included, would otherwise drain a C = T server
    /// and defer the next events by up to a period.)
    server: Option<SporadicServer>,
    deferred: Option<Nanos>,
    pub events: u64,
    pub handled: u64,
    pub items: u64,
    pub panics: u64,
    pub panic_messages: Vec<String>,
    pub discarded: u64,
    pub deferrals: u64,
    pub cpu: Nanos,
    pub dispatch: LatencyRecorder,
    pub handling: LatencyRecorder,
}

/// Descriptors shared by the top half and the I/O VCPU threads.
pub(crate) struct IoShared {
    pub waiter: Waiter,
    wake: Fd,
    timer: Fd,
    pub upcalls: Mutex<Vec<UpcallState>>,
    pub top_half_cpu: Mutex<Nanos>,
    /// Every binding, in key order (`binding`).
    pub slots: Mutex<Slots>,
}

impl IoShared {
    pub fn new(backend: Backend) -> Result<IoShared, RtError> {
        let timer = sys::timerfd()?;
        let io = IoShared {
            waiter: Waiter::new(backend)?,
            wake: sys::eventfd()?,
            timer,
            upcalls: Mutex::new(Vec::new()),
            top_half_cpu: Mutex::new(Nanos::ZERO),
            slots: Mutex::new(Vec::new()),
        };
        io.waiter.add(io.wake.0, WAKE_KEY, true)?;
        io.waiter.add(io.timer.0, TIMER_KEY, true)?;
        Ok(io)
    }

    pub fn wake_top_half(&self) {
        sys::eventfd_signal(self.wake.0);
    }

    /// Every binding so far, in key order.
    pub fn slot_list(&self) -> Slots {
        self.slots.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Bind `fd` to `target` with `handler`: a new slot; returns its key.
    fn add_slot(
        &self,
        fd: RawFd,
        target: Target,
        top_half: Nanos,
        handler: Handler,
    ) -> Result<usize, RtError> {
        let slot = Arc::new(Slot::new(fd, target, top_half, handler)?);
        let mut slots = self.slots.lock().unwrap_or_else(|e| e.into_inner());
        slots.push(slot);
        Ok(slots.len() - 1)
    }

    fn arm_timer(&self, at: Option<Nanos>) {
        let at = at.unwrap_or(Nanos::ZERO);
        let spec = libc::itimerspec {
            it_interval: libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            },
            it_value: libc::timespec {
                tv_sec: (at.0 / 1_000_000_000) as libc::time_t,
                tv_nsec: (at.0 % 1_000_000_000) as libc::c_long,
            },
        };
        // SAFETY: valid itimerspec; a zero value disarms.
        unsafe {
            libc::timerfd_settime(
                self.timer.0,
                libc::TFD_TIMER_ABSTIME,
                &spec,
                std::ptr::null_mut(),
            );
        }
    }
}

/// Declarations waiting for `start`.
#[derive(Default)]
pub(crate) struct Pending {
    classes: Vec<IoClass>,
    upcalls: Vec<UpcallState>,
}

impl Runtime {
    /// Declare an I/O class `name` whose bottom halves run on `server`
    /// (on the managed CPU `cpu`, default the first), in one I/O VCPU
    /// thread.
    pub fn io_class(
        &mut self,
        name: &str,
        server: IoServer,
        cpu: Option<usize>,
    ) -> Result<IoClass, RtError> {
        let (core, budget, period, inherit, pibs) = match server {
            IoServer::Pibs {
                utilization,
                serves,
                inherit,
            } => {
                let p = serves.period.ok_or_else(|| {
                    RtError::config(
                        format!("io_class[{name}].serves"),
                        format!("server {}", serves.id.0),
                        "a PIBS I/O VCPU must serve a Main VCPU with a period",
                    )
                })?;
                (
                    Server::Pibs(Pibs::new(utilization, inherit)?),
                    None,
                    None,
                    Some(p),
                    true,
                )
            }
            IoServer::Sporadic { budget, period } => {
                let ss = crate::sporadic(format!("io_class[{name}].budget"), budget, period)?;
                (
                    Server::Sporadic(ss),
                    Some(budget),
                    Some(period),
                    None,
                    false,
                )
            }
            IoServer::Unbounded { rank } => (
                Server::Unbounded(irqlab_core::Unbounded::new(rank)),
                None,
                None,
                None,
                false,
            ),
        };
        let sh = self.add_server(cpu, name, core, ThreadPolicy::FixedPriority, budget, period)?;
        let (worker, _) = self.add_thread(sh, &format!("{name}/bh"), 0, None)?;
        let cpu_shared = self.shared.cpus[sh.cpu].clone();
        let mut st = cpu_shared.lock();
        let index = st.classes.len();
        st.classes.push(ClassState {
            name: name.to_string(),
            worker: worker.id,
            inherit,
            pibs,
            queue: VecDeque::new(),
            fds: Vec::new(),
            events: 0,
            handled: 0,
            items: 0,
            panics: 0,
            panic_messages: Vec::new(),
            discarded: 0,
            budget_yields: 0,
            dispatch: LatencyRecorder::new(SAMPLES, None),
            handling: LatencyRecorder::new(SAMPLES, None),
        });
        let class = IoClass {
            cpu: sh.cpu,
            index,
            server: sh,
            worker,
        };
        self.io_pending.classes.push(class);
        Ok(class)
    }

    fn check_fd(&self, fd: RawFd) -> Result<(), RtError> {
        self.not_running("bind an fd")?;
        // SAFETY: F_GETFD only queries the descriptor.
        if unsafe { libc::fcntl(fd, libc::F_GETFD) } < 0 {
            return Err(RtError::config("fd", fd, "not an open file descriptor"));
        }
        let slots = self
            .shared
            .io
            .slots
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        if slots.iter().any(|s| s.fd == fd && !s.is_retired()) {
            return Err(RtError::config(
                "fd",
                fd,
                "already bound (one class or upcall per fd)",
            ));
        }
        Ok(())
    }

    /// Unbind `fd` (bound by `bind_fd`, `bind_fd_for` or
    /// `register_upcall`), before or after `start`: none of its events
    /// reaches its handler from now on; returns once the handler is not
    /// running and has been dropped, with what it owns (a socket it owns is
    /// closed then). Afterwards the program may close the fd or let its
    /// number be reused. Waits at most `Config::stop_timeout` for a running
    /// handler (an error then: the handler will not be called again, but
    /// it still exists). Events still queued for the fd are discarded
    /// (counted in the report).
    pub fn unbind_fd(&mut self, fd: RawFd) -> Result<(), RtError> {
        crate::binding::unbind(&self.shared, fd)
    }

    /// Bind `fd` to I/O class `class` (USB-DIFFSERV `usb_set_iovcpu`): its
    /// events are handled by `handler` on the class's I/O VCPU, which (if
    /// PIBS) inherits the period of the Main VCPU the class serves. The fd
    /// should be non-blocking; the handler should consume what is ready.
    pub fn bind_fd<F>(&mut self, fd: RawFd, class: IoClass, handler: F) -> Result<(), RtError>
    where
        F: FnMut(&mut Event) -> u64 + Send + 'static,
    {
        self.bind_fd_with(fd, class, BindOptions::default(), handler)
    }

    /// Like [`Runtime::bind_fd`], with the Main VCPU waiting on this fd
    /// named per fd: a PIBS I/O VCPU inherits `waiter`'s period for this
    /// fd's events (QUEST-VCPU Alg. 10: the I/O VCPU takes the priority of
    /// the Main VCPU it is serving now).
    pub fn bind_fd_for<F>(
        &mut self,
        fd: RawFd,
        class: IoClass,
        waiter: ServerHandle,
        handler: F,
    ) -> Result<(), RtError>
    where
        F: FnMut(&mut Event) -> u64 + Send + 'static,
    {
        let opts = BindOptions {
            waiter: Some(waiter),
            ..BindOptions::default()
        };
        self.bind_fd_with(fd, class, opts, handler)
    }

    /// [`Runtime::bind_fd`] with options: the waiting Main VCPU (as
    /// [`Runtime::bind_fd_for`]) and the device's top-half cost.
    pub fn bind_fd_with<F>(
        &mut self,
        fd: RawFd,
        class: IoClass,
        opts: BindOptions,
        handler: F,
    ) -> Result<(), RtError>
    where
        F: FnMut(&mut Event) -> u64 + Send + 'static,
    {
        let inherit =
            match opts.waiter {
                Some(w) => Some(w.period.ok_or_else(|| {
                    RtError::config("waiter", w.id.0, "a Main VCPU with a period")
                })?),
                None => None,
            };
        check_top_half("top_half", opts.top_half)?;
        self.check_fd(fd)?;
        if !self.io_pending.classes.contains(&class) {
            return Err(RtError::config(
                "class",
                class.index,
                "not a class of this runtime",
            ));
        }
        let inherit = {
            let st = self.shared.cpus[class.cpu].lock();
            let c = &st.classes[class.index];
            if c.pibs {
                inherit.or(c.inherit)
            } else {
                None
            }
        };
        let target = Target::Class {
            cpu: class.cpu,
            index: class.index,
            inherit,
        };
        self.shared
            .io
            .add_slot(fd, target, opts.top_half, Box::new(handler))?;
        self.shared.cpus[class.cpu].lock().classes[class.index]
            .fds
            .push(fd);
        Ok(())
    }

    /// Run `handler` for `fd` directly in the top half (UPCALL §3.2),
    /// charged to its own sporadic server `budget`.
    pub fn register_upcall<F>(
        &mut self,
        name: &str,
        fd: RawFd,
        budget: UpcallBudget,
        handler: F,
    ) -> Result<(), RtError>
    where
        F: FnMut(&mut Event) -> u64 + Send + 'static,
    {
        self.register_upcall_with(name, fd, budget, Nanos::ZERO, handler)
    }

    /// [`Runtime::register_upcall`] with the device's top-half cost
    /// (`BindOptions::top_half`), spent by the top half for each ready
    /// report before the upcall runs; it is the device's, not the upcall's,
    /// so it is not charged to the upcall's budget.
    pub fn register_upcall_with<F>(
        &mut self,
        name: &str,
        fd: RawFd,
        budget: UpcallBudget,
        top_half: Nanos,
        handler: F,
    ) -> Result<(), RtError>
    where
        F: FnMut(&mut Event) -> u64 + Send + 'static,
    {
        check_top_half(format!("upcall[{name}].top_half"), top_half)?;
        self.check_fd(fd)?;
        let server = crate::sporadic(
            format!("upcall[{name}].budget"),
            budget.budget,
            budget.period,
        )?;
        let server = (budget.budget < budget.period).then_some(server);
        let i = self.io_pending.upcalls.len();
        let slot = self
            .shared
            .io
            .add_slot(fd, Target::Upcall(i), top_half, Box::new(handler))?;
        self.io_pending.upcalls.push(UpcallState {
            name: name.to_string(),
            fd,
            slot,
            server,
            deferred: None,
            events: 0,
            handled: 0,
            items: 0,
            panics: 0,
            panic_messages: Vec::new(),
            discarded: 0,
            deferrals: 0,
            cpu: Nanos::ZERO,
            dispatch: LatencyRecorder::new(SAMPLES, None),
            handling: LatencyRecorder::new(SAMPLES, None),
        });
        Ok(())
    }
}

impl crate::RtHandle {
    /// [`Runtime::unbind_fd`] from any thread.
    pub fn unbind_fd(&self, fd: RawFd) -> Result<(), RtError> {
        crate::binding::unbind(&self.shared, fd)
    }
}

/// Register the fds and start the top half and the I/O VCPU threads.
pub(crate) fn start(shared: &Arc<Shared>, p: Pending) -> Result<Vec<Spawned>, RtError> {
    let slots: Arc<Slots> = Arc::new(shared.io.slot_list());
    for (k, slot) in slots.iter().enumerate() {
        let g = slot.lock();
        if let Some(a) = &g.anchor {
            let level = matches!(slot.target, Target::Upcall(_));
            shared.io.waiter.add(a.0, k as u64, level)?;
        }
    }
    let mut hs = Vec::new();
    for class in p.classes {
        let shared = shared.clone();
        let slots = slots.clone();
        let what = {
            let st = shared.cpus[class.cpu].lock();
            format!(
                "I/O VCPU thread of class {}",
                st.classes[class.index].name.escape_debug()
            )
        };
        hs.push(threads::spawn(
            format!("irqlab-io{}", class.index),
            what,
            move || bottom_half_thread(shared, class, slots),
        )?);
    }
    *shared.io.upcalls.lock().unwrap_or_else(|e| e.into_inner()) = p.upcalls;
    let sh = shared.clone();
    hs.push(threads::spawn(
        "irqlab-top".into(),
        "top half".into(),
        move || top_half(sh, slots),
    )?);
    Ok(hs)
}

fn top_half(shared: Arc<Shared>, slots: Arc<Slots>) {
    let cpu = shared.cfg.top_half_cpu.unwrap_or(shared.cpus[0].cpu);
    if let Err(e) = enter_thread(&shared, cpu, shared.cfg.top_half_priority) {
        shared.warn(format!("top half: {e}"));
    }
    let io = &shared.io;
    let mut upcalls = std::mem::take(&mut *io.upcalls.lock().unwrap_or_else(|e| e.into_inner()));
    let cpu0 = sys::own_cpu_time();
    let mut ready = Vec::with_capacity(64);
    shared.wait_start();
    while !shared.stop.load(Ordering::SeqCst) {
        ready.clear();
        io.waiter.wait(&mut ready);
        let t = sys::now();
        for &(key, flags) in &ready {
            if key == WAKE_KEY || key == TIMER_KEY {
                let fd = if key == WAKE_KEY {
                    io.wake.0
                } else {
                    io.timer.0
                };
                sys::eventfd_drain(fd);
                if let Err(e) = io.waiter.rearm_level(fd, key) {
                    shared.warn(format!("top half: {e}"));
                }
                if key == TIMER_KEY {
                    run_deferred(&shared, &slots, &mut upcalls, t);
                }
                continue;
            }
            // A retired slot's last report (or one cancelled under io_uring).
            let Some(slot) = slots.get(key as usize).filter(|s| !s.is_retired()) else {
                continue;
            };
            let hangup = flags & (libc::EPOLLERR | libc::EPOLLHUP) as u32 != 0;
            // The device's own interrupt handler, as the model states it.
            sys::spin_cpu(slot.top_half);
            match slot.target {
                Target::Class {
                    cpu,
                    index,
                    inherit,
                } => queue_job(
                    &shared.cpus[cpu],
                    index,
                    Job {
                        slot: key as usize,
                        arrival: t,
                        hangup,
                        inherit,
                    },
                ),
                Target::Upcall(i) => {
                    let u = &mut upcalls[i];
                    u.events += 1;
                    run_upcall(&shared, slot, u, t, hangup);
                    arm_deferred_timer(io, &upcalls);
                }
            }
        }
    }
    *io.top_half_cpu.lock().unwrap_or_else(|e| e.into_inner()) =
        sys::own_cpu_time().saturating_sub(cpu0);
    *io.upcalls.lock().unwrap_or_else(|e| e.into_inner()) = upcalls;
}

/// Queue a bottom-half job and wake the class's I/O VCPU thread through the
/// core (QUEST-VCPU Alg. 2, with the served Main VCPU's period for PIBS).
/// The supervisor is rung only when the decision may change: the thread was
/// blocked, the core asks for preemption, or inheritance changed the
/// server's priority. A thread already working through its queue is not
/// interrupted; its cooperative budget check and the supervisor's timer
/// bound it.
fn queue_job(cpu: &CpuShared, index: usize, job: Job) {
    let ring = park::critical(|| {
        let mut st = cpu.lock();
        let now = sys::now();
        let c = &mut st.classes[index];
        c.events += 1;
        c.queue.push_back(job);
        let (worker, inherit) = (c.worker, job.inherit);
        let sh = st.threads[worker.0].sh.clone();
        let was_runnable = st.sched.thread_runnable(worker).unwrap_or(false);
        let server = st.sched.thread_server(worker).ok();
        let key = server.and_then(|s| st.sched.priority_key(s).ok());
        let preempt = st.sched.wakeup(now, worker, inherit).unwrap_or(true);
        let key_after = server.and_then(|s| st.sched.priority_key(s).ok());
        sh.gate.open();
        preempt || !was_runnable || key != key_after
    });
    if ring {
        cpu.kick();
    }
}

/// Run an upcall now if its server has budget (SporadicServer hooks,
/// QUEST-VCPU Alg. 4-5: unblock, update-budget; Alg. 3: end-of-timeslice
/// with the CPU time used), else defer it to the replenishment. An event
/// of an fd unbound or closed in the meantime is discarded.
fn run_upcall(shared: &Shared, slot: &Slot, u: &mut UpcallState, arrival: Nanos, hangup: bool) {
    let key = u.slot as u64;
    let mut g = slot.lock();
    let anchor = match slot.check(&g) {
        Ok(a) => a,
        Err(gone) => {
            u.discarded += 1;
            u.deferred = None;
            if let Gone::Closed = gone {
                slot.closed(slot.closed_message("at an event"));
                slot.retire(shared, key, &mut g, false);
            }
            return;
        }
    };
    let now = sys::now();
    if let Some(server) = u.server.as_mut() {
        if u.deferred.is_none() {
            server.unblock(
                now,
                UnblockCtx {
                    was_active: false,
                    running: false,
                    inherit_period: None,
                },
            );
        }
        server.update_budget(now);
        if server.budget().is_zero() {
            if u.deferred.is_none() {
                u.deferrals += 1;
                u.deferred = Some(arrival);
                shared.io.waiter.disarm(anchor, key);
            }
            return;
        }
    }
    let resumed = u.deferred.is_some();
    let arrival = u.deferred.take().unwrap_or(arrival);
    // The handler's time is charged as wall time, start to end: the top
    // half runs above every runtime thread but the supervisor, so wall
    // time is its CPU time plus at most a supervisor pass (a conservative
    // charge), and it saves two CPU-clock system calls on the upcall's
    // dispatch path.
    let start = sys::now();
    let mut ev = Event {
        fd: u.fd,
        arrival,
        start,
        hangup,
        shared,
    };
    let r = match g.handler.as_mut() {
        Some(h) => quiet::call(|| h(&mut ev)),
        None => Ok(0),
    };
    let end = sys::now();
    let used = end.saturating_sub(start);
    u.cpu += used;
    if let Some(server) = u.server.as_mut() {
        server.end_timeslice(end, used, false);
    }
    match r {
        Ok(items) => {
            u.handled += 1;
            u.items += items;
        }
        Err(msg) => {
            u.panics += 1;
            keep_panic(&mut u.panic_messages, msg);
        }
    }
    u.dispatch.record(start.saturating_sub(arrival));
    u.handling.record(end.saturating_sub(arrival));
    let w = &shared.io.waiter;
    let rearmed = if hangup {
        Err(format!("fd {} reported an error or hang-up; unbound", u.fd))
    } else if resumed {
        w.arm_level(anchor, key)
            .map_err(|e| format!("{e}; unbound"))
    } else {
        w.rearm_level(anchor, key)
            .map_err(|e| format!("{e}; unbound"))
    };
    if let Err(why) = rearmed {
        slot.closed(why);
        slot.retire(shared, key, &mut g, true);
    }
}

fn run_deferred(shared: &Shared, slots: &Slots, upcalls: &mut [UpcallState], t: Nanos) {
    for u in upcalls.iter_mut() {
        if let Some(a) = u.deferred {
            let next = u.server.as_ref().and_then(|s| s.next_event(t));
            if next.is_none_or(|e| e <= sys::now()) {
                run_upcall(shared, &slots[u.slot], u, a, false);
            }
        }
    }
    arm_deferred_timer(&shared.io, upcalls);
}

fn arm_deferred_timer(io: &IoShared, upcalls: &[UpcallState]) {
    let now = sys::now();
    let at = upcalls
        .iter()
        .filter(|u| u.deferred.is_some())
        .filter_map(|u| u.server.as_ref().and_then(|s| s.next_event(now)))
        .min();
    // A due time already past still fires at once (1 ns after the epoch).
    io.arm_timer(at.map(|t| t.max(Nanos(1))));
}

/// What became of one bottom-half job.
enum Outcome {
    /// The fd was unbound or closed first.
    Discarded,
    /// The handler ran (items, or its panic's message) and ended at `end`.
    Ran(Result<u64, String>, Nanos),
}

/// One job: check the fd is still the bound file, run the handler under
/// the slot's lock, re-arm (or unbind after a hang-up or error).
fn run_job(shared: &Shared, slot: &Slot, job: &Job, start: Nanos) -> Outcome {
    let key = job.slot as u64;
    let mut g = slot.lock();
    let anchor = match slot.check(&g) {
        Ok(a) => a,
        Err(Gone::Unbound) => return Outcome::Discarded,
        Err(Gone::Closed) => {
            slot.closed(slot.closed_message("at an event"));
            slot.retire(shared, key, &mut g, false);
            return Outcome::Discarded;
        }
    };
    let mut ev = Event {
        fd: slot.fd,
        arrival: job.arrival,
        start,
        hangup: job.hangup,
        shared,
    };
    let r = match g.handler.as_mut() {
        Some(h) => quiet::call(|| h(&mut ev)),
        None => Ok(0),
    };
    let end = sys::now();
    let rearmed = if job.hangup {
        Err(format!(
            "fd {} reported an error or hang-up; unbound",
            slot.fd
        ))
    } else {
        shared
            .io
            .waiter
            .arm(anchor, key)
            .map_err(|e| format!("{e}; unbound"))
    };
    if let Err(why) = rearmed {
        slot.closed(why);
        slot.retire(shared, key, &mut g, true);
    }
    Outcome::Ran(r, end)
}

fn bottom_half_thread(shared: Arc<Shared>, class: IoClass, slots: Arc<Slots>) {
    let cpu = shared.cpus[class.cpu].clone();
    let id = class.worker.id;
    let sh = cpu.lock().threads[id.0].sh.clone();
    park::attach(&sh.park);
    let tid = sys::gettid();
    if let Err(e) = crate::enter_managed(&shared, &cpu, id, tid, false) {
        shared.warn(format!("I/O VCPU thread {}: {e}", class.index));
    }
    shared.wait_start();
    while !shared.stop.load(Ordering::SeqCst) {
        // Take a job, or block in the core until the top half queues one.
        let job = park::critical(|| {
            let mut st = cpu.lock();
            if let Some(j) = st.classes[class.index].queue.pop_front() {
                return Some(j);
            }
            if shared.stop.load(Ordering::SeqCst) {
                return None; // the gates were opened for the stop
            }
            sh.gate.close();
            let now = sys::now();
            let _ = st.sched.block(now, id);
            None
        });
        let Some(job) = job else {
            cpu.kick();
            sh.gate.wait();
            continue;
        };
        // Cooperative budget check between handlers (one CPU-clock read):
        // past the limit the supervisor published, ring it -- it runs at
        // once on this CPU, charges the server and parks this thread --
        // instead of waiting for its timer (the backstop).
        let limit = sh.cpu_limit.load(Ordering::Relaxed);
        if limit != 0 && sys::own_cpu_time().0 >= limit {
            park::critical(|| cpu.lock().classes[class.index].budget_yields += 1);
            cpu.kick();
        }
        sh.park.wait_while_wanted();
        let start = sys::now();
        let outcome = run_job(&shared, &slots[job.slot], &job, start);
        park::critical(|| {
            let mut st = cpu.lock();
            let c = &mut st.classes[class.index];
            match outcome {
                Outcome::Discarded => c.discarded += 1,
                Outcome::Ran(r, end) => {
                    match r {
                        Ok(items) => {
                            c.handled += 1;
                            c.items += items;
                        }
                        Err(msg) => {
                            c.panics += 1;
                            keep_panic(&mut c.panic_messages, msg);
                        }
                    }
                    c.dispatch.record(start.saturating_sub(job.arrival));
                    c.handling.record(end.saturating_sub(job.arrival));
                }
            }
            if let (true, Some(p)) = (c.pibs, job.inherit) {
                let now = sys::now();
                let _ = st.sched.io_service_done(now, class.server.id, p);
            }
        });
    }
    leave_thread(&shared, &cpu, id, tid);
}

/// Datagrams the kernel dropped on UDP socket `fd` (full receive buffer),
/// from the `drops` column of `/proc/net/udp` / `udp6`; `None` if `fd` is
/// not a UDP socket of this network namespace.
pub fn socket_drops(fd: RawFd) -> Option<u64> {
    // SAFETY: `st` is plain data written by the kernel.
    let ino = unsafe {
        let mut st: libc::stat = std::mem::zeroed();
        if libc::fstat(fd, &mut st) != 0 {
            return None;
        }
        st.st_ino
    };
    for path in ["/proc/net/udp", "/proc/net/udp6"] {
        let Ok(text) = std::fs::read_to_string(path) else {
            continue;
        };
        for line in text.lines().skip(1) {
            let cols: Vec<&str> = line.split_whitespace().collect();
            if cols.len() >= 13 && cols[9].parse::<u64>().ok() == Some(ino) {
                return cols[12].parse().ok();
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn top_half_costs_below_the_clock_are_refused_with_the_reason() {
        assert!(check_top_half("top_half", Nanos::ZERO).is_ok());
        assert!(check_top_half("top_half", MIN_TOP_HALF).is_ok());
        let msg = check_top_half("upcall[u].top_half", Nanos(999))
            .expect_err("below MIN_TOP_HALF")
            .to_string();
        assert!(msg.contains("upcall[u].top_half = 999ns"), "{msg}");
        assert!(msg.contains("cannot be spent faithfully"), "{msg}");
    }
}
