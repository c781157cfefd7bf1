//! The model's request devices on real threads: USB endpoints behind xHCI
//! controllers and disks. A task's `read`/`write` submits a request and
//! blocks; one controller thread serves every request device as the
//! simulator does (irqlab-sim `devices/xhci.rs`, `devices/disk.rs`) and
//! signals the completion on an fd that the runtime's top half watches:
//!
//! * a disk serves its requests one at a time in FIFO order, each taking
//!   the device's `latency`; its completion fd is bound to the disk's I/O
//!   class, whose bottom half copies the sectors by programmed I/O
//!   (`per_sector` x `sectors`, QUEST-VCPU §4);
//! * a USB endpoint serves its requests one at a time, each transfer taking
//!   `request / rate` plus a uniform `jitter` and completing within its 125
//!   us microframe, or in the next one when it does not fit (USB 2.0
//!   high-speed microframes); the completion goes to the event ring of the
//!   interrupter of the class the endpoint is bound to at submission
//!   (`xHCI_interrupter_to_IOVCPU_map`, USB-DIFFSERV §III-C), and the
//!   interrupter signals it once its moderation interval since its last
//!   interrupt has passed. Each endpoint has one fd per interrupter it can
//!   complete through (its *routes*; the fd group of an interrupter), each
//!   bound with `bind_fd` to that interrupter's class, so a `bind` step
//!   (`usb_set_iovcpu`) moves the endpoint's next requests to another
//!   interrupter without rebinding an fd while the run goes on. The bottom
//!   half costs Omega_IO (+ kfree) per request on the class's I/O VCPU, the
//!   task Omega_Main when its request returns (USB-DIFFSERV Eq. 1).
//!
//! Design principles: the controller thread is a small event loop on real
//! time (the earliest transfer end or moderation release, or a new
//! submission), on the generators' CPU at SCHED_FIFO 50 with a 1 ns timer
//! slack; a route's fd is a semaphore eventfd, one count per completion,
//! so the runtime's one-shot top half queues one bottom-half job per
//! completion and the budget is checked between them. Random draws
//! (jitter, microframe phase) come from the model's seed, one stream per
//! device.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use irqlab_core::rng::SplitMix64;
use irqlab_core::Nanos;

use super::devices::DevShared;
use super::plan::{DevKind, Plan};
use super::program::spin;
use crate::error::RtError;
use crate::sys;

/// A USB 2.0 high-speed microframe.
pub const MICROFRAME: Nanos = Nanos(125_000);

/// One request: the task that waits for it and its route.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Req {
    pub task: usize,
    pub dev: usize,
    pub route: usize,
    /// When it was submitted.
    pub at: Nanos,
}

/// A completion fd and the completions signalled on it, not yet handled.
pub(crate) struct Route {
    pub fd: sys::Fd,
    pub dev: usize,
    /// Bottom-half work per completion.
    pub work: Nanos,
    queue: Mutex<VecDeque<Req>>,
}

/// What the tasks, the controller thread and the bottom halves share.
pub(crate) struct Requests {
    pub routes: Vec<Route>,
    /// Per device: the route its next request completes through.
    route_now: Vec<AtomicUsize>,
    submitted: Mutex<VecDeque<Req>>,
    /// Wakes the controller thread.
    kick: sys::Fd,
    /// Per task: its completed requests.
    done: Vec<AtomicU64>,
}

fn semaphore_eventfd() -> Result<sys::Fd, RtError> {
    // SAFETY: plain syscall.
    let fd = unsafe {
        libc::eventfd(
            0,
            libc::EFD_NONBLOCK | libc::EFD_CLOEXEC | libc::EFD_SEMAPHORE,
        )
    };
    if fd < 0 {
        return Err(RtError::last_os("eventfd(EFD_SEMAPHORE)"));
    }
    Ok(sys::Fd(fd))
}

impl Requests {
    pub fn open(p: &Plan) -> Result<Requests, RtError> {
        let routes = p
            .routes
            .iter()
            .map(|r| {
                Ok(Route {
                    fd: semaphore_eventfd()?,
                    dev: r.dev,
                    work: p.devices[r.dev].bottom_half,
                    queue: Mutex::new(VecDeque::new()),
                })
            })
            .collect::<Result<Vec<_>, RtError>>()?;
        Ok(Requests {
            routes,
            route_now: p
                .devices
                .iter()
                .map(|d| AtomicUsize::new(d.routes.first().copied().unwrap_or(usize::MAX)))
                .collect(),
            submitted: Mutex::new(VecDeque::new()),
            kick: sys::eventfd()?,
            done: p.tasks.iter().map(|_| AtomicU64::new(0)).collect(),
        })
    }

    /// Task `task` submits a request to device `dev`; returns the count of
    /// its completed requests to wait for.
    pub fn submit(&self, task: usize, dev: usize) -> u64 {
        let want = self.done[task].load(Ordering::Acquire) + 1;
        let route = self.route_now[dev].load(Ordering::Acquire);
        if let Ok(mut q) = self.submitted.lock() {
            q.push_back(Req {
                task,
                dev,
                route,
                at: sys::now(),
            });
        }
        sys::eventfd_signal(self.kick.0);
        want
    }

    /// `usb_set_iovcpu`: device `dev`'s next requests complete through
    /// `route`.
    pub fn bind(&self, dev: usize, route: usize) {
        self.route_now[dev].store(route, Ordering::Release);
    }

    pub fn is_done(&self, task: usize, want: u64) -> bool {
        self.done[task].load(Ordering::Acquire) >= want
    }

    /// The bottom half of one completion signalled on route `r`: its work,
    /// then the request is done; returns the task to wake.
    pub fn complete_one(&self, r: usize, devs: &[Arc<DevShared>]) -> Option<usize> {
        let route = &self.routes[r];
        if sys::eventfd_drain(route.fd.0) == 0 {
            return None;
        }
        let req = route.queue.lock().ok()?.pop_front()?;
        spin(route.work);
        devs[route.dev].handled.fetch_add(1, Ordering::Relaxed);
        self.done[req.task].fetch_add(1, Ordering::AcqRel);
        Some(req.task)
    }

    fn signal(&self, req: Req) {
        if let Ok(mut q) = self.routes[req.route].queue.lock() {
            q.push_back(req);
        }
        sys::eventfd_signal(self.routes[req.route].fd.0);
    }
}

/// When a USB transfer of `need` (transfer time plus jitter) started at
/// `now`, `phase` into its microframe, completes: within the microframe if
/// it fits, else `need` after the next microframe boundary (irqlab-sim
/// `usb_start`).
pub fn usb_done_at(now: Nanos, need: Nanos, phase: Nanos) -> Nanos {
    let left = MICROFRAME.saturating_sub(phase);
    if need <= left {
        now + need
    } else {
        now + left + need
    }
}

/// The transfer time of `bytes` at `rate` bytes per second, rounded up.
pub fn transfer_time(bytes: u64, rate: u64) -> Nanos {
    let ns = (bytes as u128 * 1_000_000_000).div_ceil(rate.max(1) as u128);
    Nanos(u64::try_from(ns).unwrap_or(u64::MAX))
}

/// The controller thread's state per device and per interrupter.
struct Controller<'a> {
    p: &'a Plan,
    req: &'a Requests,
    devs: &'a [Arc<DevShared>],
    t0: Nanos,
    rngs: Vec<SplitMix64>,
    queues: Vec<VecDeque<Req>>,
    /// The request in service and when it completes.
    busy: Vec<Option<(Nanos, Req)>>,
    /// When each device last became idle.
    free: Vec<Nanos>,
    /// Per controller, per interrupter: event ring, last interrupt, and the
    /// moderation release posted.
    rings: Vec<Vec<VecDeque<Req>>>,
    last_irq: Vec<Vec<Option<Nanos>>>,
    posted: Vec<Vec<Option<Nanos>>>,
}

impl Controller<'_> {
    /// Start device `d`'s next request if it is idle: when it was
    /// submitted, or when the device became idle, whichever is later (a
    /// late controller thread catches up, keeping the model's service
    /// times).
    fn start(&mut self, d: usize) {
        if self.busy[d].is_some() {
            return;
        }
        let Some(r) = self.queues[d].pop_front() else {
            return;
        };
        let now = r.at.max(self.free[d]);
        let dp = &self.p.devices[d];
        let done = match (&dp.usb, dp.kind) {
            (Some(u), DevKind::Usb) => {
                let rng = &mut self.rngs[d];
                let extra = if u.jitter.is_zero() {
                    Nanos::ZERO
                } else {
                    Nanos(rng.below(u.jitter.0.saturating_add(1)))
                };
                let need = transfer_time(u.bytes, u.rate) + extra;
                let rel = now.saturating_sub(self.t0);
                let phase = if self.p.xhci[u.controller].random_frame_phase {
                    Nanos(rng.below(MICROFRAME.0))
                } else {
                    Nanos(rel.0 % MICROFRAME.0)
                };
                usb_done_at(now, need, phase)
            }
            _ => now + dp.latency,
        };
        self.busy[d] = Some((done, r));
    }

    /// Interrupter `it` of controller `x` signals its events if its
    /// moderation interval has passed; else once it has.
    fn fire(&mut self, x: usize, it: usize, now: Nanos) {
        if self.rings[x][it].is_empty() {
            return;
        }
        let moderation = self.p.xhci[x].moderation;
        if let Some(l) = self.last_irq[x][it] {
            if now < l + moderation {
                self.posted[x][it].get_or_insert(l + moderation);
                return;
            }
        }
        self.last_irq[x][it] = Some(now);
        for r in self.rings[x][it].drain(..) {
            self.req.signal(r);
        }
    }

    /// Carry out everything due by `now`; returns the next time anything
    /// is due.
    fn step(&mut self, now: Nanos) -> Option<Nanos> {
        if let Ok(mut q) = self.req.submitted.lock() {
            for r in q.drain(..) {
                self.devs[r.dev].sent.fetch_add(1, Ordering::Relaxed);
                self.queues[r.dev].push_back(r);
            }
        }
        for d in 0..self.busy.len() {
            self.start(d);
            while let Some((done, r)) = self.busy[d].filter(|(t, _)| *t <= now) {
                self.busy[d] = None;
                self.free[d] = done;
                match self.p.routes[r.route].interrupter {
                    Some((x, it)) => {
                        self.rings[x][it].push_back(r);
                        self.fire(x, it, done);
                    }
                    None => self.req.signal(r),
                }
                self.start(d);
            }
        }
        for x in 0..self.posted.len() {
            for it in 0..self.posted[x].len() {
                if self.posted[x][it].is_some_and(|t| t <= now) {
                    self.posted[x][it] = None;
                    self.fire(x, it, now);
                }
            }
        }
        let busy = self.busy.iter().flatten().map(|(t, _)| *t);
        let posted = self.posted.iter().flatten().flatten().copied();
        busy.chain(posted).min()
    }
}

/// Start the controller thread serving every request device from run
/// start `t0` until `stop`.
pub(crate) fn start_controller(
    p: &Plan,
    req: Arc<Requests>,
    devs: Vec<Arc<DevShared>>,
    t0: Nanos,
    cpu: Option<usize>,
    stop: Arc<AtomicBool>,
) -> Result<std::thread::JoinHandle<()>, RtError> {
    let p = p.clone();
    std::thread::Builder::new()
        .name("irqlab-ctrl".into())
        .spawn(move || {
            if let Some(c) = cpu {
                let _ = sys::pin(0, c);
            }
            // The device model's clock: at SCHED_FIFO 50 where permitted
            // (an event loop that only waits on timers and the kick), so
            // other work on the generators' CPU does not stretch the
            // model's service times (at normal priority, on a CPU shared
            // with builds, the high task's request p50 ranged 0.8-2.7 ms).
            let _ = sys::set_fifo(0, 50);
            // SAFETY: prctl on the calling thread.
            unsafe {
                libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong);
            }
            let n = p.devices.len();
            let per_int = |v| {
                p.xhci
                    .iter()
                    .map(|x| vec![v; x.interrupters.len()])
                    .collect::<Vec<_>>()
            };
            let mut c = Controller {
                p: &p,
                req: &req,
                devs: &devs,
                t0,
                rngs: (0..n)
                    .map(|d| SplitMix64::stream(p.seed, 0x5553_4200 + d as u64))
                    .collect(),
                queues: vec![VecDeque::new(); n],
                busy: vec![None; n],
                free: vec![Nanos::ZERO; n],
                rings: p
                    .xhci
                    .iter()
                    .map(|x| vec![VecDeque::new(); x.interrupters.len()])
                    .collect(),
                last_irq: per_int(None),
                posted: per_int(None),
            };
            while !stop.load(Ordering::Relaxed) {
                let now = sys::now();
                let next = c.step(now);
                let limit = sys::now() + Nanos::from_ms(20);
                let until = next.map_or(limit, |t| t.min(limit));
                let left = until.saturating_sub(sys::now());
                if !left.is_zero() && sys::wait_readable(req.kick.0, Some(left)) {
                    sys::eventfd_drain(req.kick.0);
                }
            }
        })
        .map_err(|e| RtError::from_io("spawn controller", e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usb_transfer_times_by_hand() {
        // 512 B at 60 MB/s: 8533.3 ns, rounded up.
        assert_eq!(transfer_time(512, 60_000_000), Nanos(8534));
        // Fits in what is left of the microframe: done after `need`.
        assert_eq!(
            usb_done_at(Nanos(1_000), Nanos(8_534), Nanos(100_000)),
            Nanos(9_534)
        );
        // Does not fit (25 us left): the rest of this microframe, then
        // `need` into the next.
        assert_eq!(
            usb_done_at(Nanos(1_000), Nanos(30_000), Nanos(100_000)),
            Nanos(1_000 + 25_000 + 30_000)
        );
        // Exactly fits.
        assert_eq!(
            usb_done_at(Nanos(0), Nanos(25_000), Nanos(100_000)),
            Nanos(25_000)
        );
    }
}
