//! The `quest` and `quest-no-iovcpu` paths on irqlab-rt: Main VCPUs become
//! servers under the supervisor, tasks managed threads in them; on `quest`
//! each device's fd is bound to its class's I/O VCPU (`bind_fd_for`, PIBS
//! inheriting the reading task's Main VCPU period, QUEST-VCPU Alg. 10);
//! on `quest-no-iovcpu` a class's bottom halves run in a thread of the
//! Main VCPU of the task they serve, above its tasks (as the simulator's
//! `paths/quest_no_iovcpu.rs`), woken by a small top-half thread.
//!
//! Request devices (usb, disk, `requests.rs`) are the same to a class:
//! each of their routes is one more fd of the class it is bound to, whose
//! bottom half completes one request and wakes its requester.
//!
//! Design principles: the core decides every dispatch; a read blocks in
//! `TaskCtx::wait_wake` until the bottom half delivered an item (a wake-up
//! arriving before the wait is kept, so none is lost).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use irqlab_core::{Nanos, ServerPriority};
use irqlab_model::model::PathKind;

use super::devices::DevShared;
use super::plan::{Plan, VcpuPolicy};
use super::program::{self, Exec, TaskRec};
use super::requests::{self, Requests};
use super::{Outcome, TopHalfRun};
use crate::error::RtError;
use crate::{
    sys, BudgetPolicy, Config, IoServer, RtHandle, Runtime, ServerHandle, TaskCtx, TaskHandle,
};

struct Managed<'a> {
    ctx: &'a TaskCtx,
    task: usize,
    devs: &'a [Arc<DevShared>],
    req: &'a Requests,
    omega: Vec<Nanos>,
}

impl Exec for Managed<'_> {
    fn sleep_until(&mut self, t: Nanos) -> bool {
        self.ctx.wait_until(t)
    }
    fn read(&mut self, dev: usize) -> bool {
        let since = sys::now();
        let d = &self.devs[dev];
        while !d.take() {
            if !self.ctx.wait_wake() {
                return false;
            }
        }
        program::spin(self.omega[dev]);
        d.record_read(since);
        true
    }
    fn request(&mut self, dev: usize) -> bool {
        let since = sys::now();
        let want = self.req.submit(self.task, dev);
        while !self.req.is_done(self.task, want) {
            if !self.ctx.wait_wake() {
                return false;
            }
        }
        program::spin(self.omega[dev]);
        self.devs[dev].record_read(since);
        true
    }
    fn bind(&mut self, dev: usize, route: usize) {
        self.req.bind(dev, route);
    }
    fn running(&self) -> bool {
        self.ctx.running()
    }
}

/// What a class's bottom half serves: a device's items, or a request
/// device's completions on one route.
#[derive(Clone, Copy)]
enum Member {
    Items(usize),
    Route(usize),
}

impl Member {
    /// The device it belongs to.
    fn device(self, p: &Plan) -> usize {
        match self {
            Member::Items(d) => d,
            Member::Route(r) => p.routes[r].dev,
        }
    }
}

/// One bottom half of `m`: one item (its work, into the buffer; `Some`
/// with the readers to wake) or one completion (its work; `Some` with the
/// requester); `None` when nothing is there.
fn bottom_half_one(
    m: Member,
    devs: &[Arc<DevShared>],
    req: &Requests,
    work: Nanos,
    readers: &[TaskHandle],
    handles: &[TaskHandle],
) -> Option<Vec<TaskHandle>> {
    match m {
        Member::Items(d) => {
            let n = devs[d].take_fd(1);
            devs[d].deliver(n, work);
            (n > 0).then(|| readers.to_vec())
        }
        Member::Route(r) => req.complete_one(r, devs).map(|t| vec![handles[t]]),
    }
}

/// The Main VCPU a class's events are served for: its consumer's, else the
/// first reader's of one of its devices.
fn served_vcpu(p: &Plan, class: usize) -> Option<usize> {
    let c = &p.classes[class];
    p.consumers[class].map(|t| p.tasks[t].vcpu).or_else(|| {
        let items = p
            .devices
            .iter()
            .filter(|d| !d.kind.is_request() && &d.class == c);
        let routes = p
            .routes
            .iter()
            .filter(|r| &r.class == c)
            .map(|r| &p.devices[r.dev]);
        items
            .chain(routes)
            .find_map(|d| d.readers.first().map(|&t| p.tasks[t].vcpu))
    })
}

pub(crate) fn run(p: &Plan) -> Result<Outcome, RtError> {
    let cfg = Config {
        cpus: p.cpus.clone(),
        require_fifo: p.require_fifo,
        backend: p.backend,
        report_samples: p.report_samples,
        ..Config::default()
    };
    let mut rt = Runtime::new(cfg)?;
    let real = |v: usize| Some(p.cpus[p.vcpus[v].cpu]);
    // Main VCPUs.
    let mut servers: Vec<Option<ServerHandle>> = vec![None; p.vcpus.len()];
    for (i, v) in p.vcpus.iter().enumerate().filter(|(_, v)| !v.io) {
        let rank = v
            .priority
            .map(|pr| ServerPriority::Rank(100u64.saturating_sub(pr as u64)));
        let h = match (&v.policy, rank) {
            (VcpuPolicy::Sporadic { budget, period }, None) => {
                rt.main_vcpu(&v.name, *budget, *period, real(i))?
            }
            (VcpuPolicy::Sporadic { budget, period }, Some(r)) => rt.budget_server(
                &v.name,
                BudgetPolicy::Sporadic,
                *budget,
                *period,
                r,
                real(i),
            )?,
            (VcpuPolicy::Deferrable { budget, period }, r) => rt.budget_server(
                &v.name,
                BudgetPolicy::Deferrable,
                *budget,
                *period,
                r.unwrap_or(ServerPriority::RateMonotonic),
                real(i),
            )?,
            (VcpuPolicy::Fifo { priority }, _) => {
                rt.unbounded(&v.name, 100u64.saturating_sub(*priority as u64), real(i))?
            }
            (pol, _) => {
                return Err(RtError::config(
                    format!("vcpus[{i}].policy"),
                    format!("{pol:?}"),
                    "not a Main VCPU policy on real threads",
                ))
            }
        };
        servers[i] = Some(h);
    }
    let server_of = |v: usize| {
        servers[v].ok_or_else(|| {
            RtError::config(
                format!("vcpus[{v}]"),
                &p.vcpus[v].name,
                "tasks run on Main VCPUs",
            )
        })
    };
    // Devices and tasks.
    let devs = super::open_devices(p)?;
    let req = Arc::new(Requests::open(p)?);
    let recs: Vec<Arc<Mutex<TaskRec>>> = p.tasks.iter().map(|_| Arc::default()).collect();
    let mut handles: Vec<TaskHandle> = Vec::new();
    for (i, t) in p.tasks.iter().enumerate() {
        let server = server_of(t.vcpu)?;
        let (plan_t, rec, devs2, req2) = (t.clone(), recs[i].clone(), devs.clone(), req.clone());
        let omega: Vec<Nanos> = p.devices.iter().map(|d| d.omega_main).collect();
        let h = rt.spawn(server, &t.name, t.priority, move |ctx| {
            let mut e = Managed {
                ctx,
                task: i,
                devs: &devs2,
                req: &req2,
                omega,
            };
            program::run_task(&mut e, &plan_t, ctx.start_time(), &rec);
        })?;
        handles.push(h);
    }
    let readers = |d: usize| -> Vec<TaskHandle> {
        p.devices[d].readers.iter().map(|&t| handles[t]).collect()
    };
    let mut forwarders = Vec::new();
    for (ci, class) in p.classes.iter().enumerate() {
        // The class's fds: its nic/generic devices, and the routes bound to
        // it (a disk's completion fd, a USB endpoint's fd through an
        // interrupter of this class).
        let items = (0..p.devices.len())
            .filter(|&d| !p.devices[d].kind.is_request() && &p.devices[d].class == class)
            .map(Member::Items);
        let routes = (0..p.routes.len())
            .filter(|&r| &p.routes[r].class == class)
            .map(Member::Route);
        let members: Vec<Member> = items.chain(routes).collect();
        if members.is_empty() {
            continue;
        }
        let fd_of = |m: Member| match m {
            Member::Items(d) => devs[d].fd,
            Member::Route(r) => req.routes[r].fd.0,
        };
        let served = served_vcpu(p, ci);
        if p.path == PathKind::QuestNoIovcpu {
            // No I/O VCPU: a bottom-half thread in the served Main VCPU.
            let Some(home) = served else {
                // Nobody reads the class: its items stay in the kernel.
                continue;
            };
            let ds: Vec<(Member, Nanos, Vec<TaskHandle>)> = members
                .iter()
                .map(|&m| {
                    let d = m.device(p);
                    (m, p.devices[d].bottom_half, readers(d))
                })
                .collect();
            let (h, devs2, req2, all) = (rt.handle(), devs.clone(), req.clone(), handles.clone());
            let bh = rt.spawn(
                server_of(home)?,
                &format!("{class}/bh"),
                top_prio(p, home),
                move |ctx| {
                    while ctx.wait_wake() {
                        for (m, work, rd) in &ds {
                            // One item at a time, with the cooperative
                            // budget check between items.
                            while ctx.running() {
                                let Some(wake) =
                                    bottom_half_one(*m, &devs2, &req2, *work, rd, &all)
                                else {
                                    break;
                                };
                                // A managed thread takes the CPU lock only
                                // where it cannot be parked.
                                crate::park::critical(|| {
                                    for &r in &wake {
                                        h.wake(r);
                                    }
                                });
                                ctx.checkpoint();
                            }
                        }
                    }
                },
            )?;
            let fds: Vec<(i32, Nanos)> = members
                .iter()
                .map(|&m| (fd_of(m), top_half_of(p, m)))
                .collect();
            forwarders.push((class.clone(), fds, bh, p.cpus[p.vcpus[home].cpu]));
            continue;
        }
        let (vi, io) = p
            .vcpus
            .iter()
            .enumerate()
            .find(|(_, v)| v.io && v.io_class.as_deref() == Some(class.as_str()))
            .ok_or_else(|| {
                RtError::config(
                    format!("devices (class {class})"),
                    class,
                    "no I/O VCPU serves this class",
                )
            })?;
        let server = match &io.policy {
            VcpuPolicy::Pibs {
                utilization,
                inherit,
            } => {
                // The Main VCPU served by default (events nobody waits for):
                // the served task's, else the one with the longest period.
                let v = served.or_else(|| longest_period_main(p)).ok_or_else(|| {
                    RtError::config(
                        format!("vcpus[{vi}]"),
                        &io.name,
                        "a PIBS I/O VCPU needs a Main VCPU with a period to serve",
                    )
                })?;
                IoServer::Pibs {
                    utilization: *utilization,
                    serves: server_of(v)?,
                    inherit: *inherit,
                }
            }
            VcpuPolicy::Sporadic { budget, period } => IoServer::Sporadic {
                budget: *budget,
                period: *period,
            },
            VcpuPolicy::Fifo { priority } => IoServer::Unbounded {
                rank: 100u64.saturating_sub(*priority as u64),
            },
            pol => {
                return Err(RtError::config(
                    format!("vcpus[{vi}].policy"),
                    format!("{pol:?}"),
                    "not an I/O VCPU policy on real threads",
                ))
            }
        };
        let cls = rt.io_class(&io.name, server, Some(p.cpus[io.cpu]))?;
        for &m in &members {
            let d = m.device(p);
            if matches!(m, Member::Items(_))
                && super::upcalls::bind_kernel(&mut rt, p, d, &devs[d], cls, readers(d))?
            {
                continue;
            }
            let (devs2, req2, all) = (devs.clone(), req.clone(), handles.clone());
            let (work, rd) = (p.devices[d].bottom_half, readers(d));
            // One item or completion per handler call: the runtime checks
            // the budget between handlers, and a bottom half is one item's
            // work (as in the simulator). A handler taking many items can
            // run far past a small PIBS budget (C_max = U T) before the
            // supervisor stops it, and the overrun is not paid back.
            let handler = move |ev: &mut crate::Event| match bottom_half_one(
                m, &devs2, &req2, work, &rd, &all,
            ) {
                Some(wake) => {
                    for r in wake {
                        ev.wake(r);
                    }
                    1
                }
                None => 0,
            };
            // PIBS (QUEST-VCPU Alg. 10): the I/O VCPU takes the period of
            // the Main VCPU waiting on this fd (the device's reader).
            let waiter = p.devices[d]
                .readers
                .first()
                .and_then(|&t| servers[p.tasks[t].vcpu])
                .filter(|s| s.period.is_some());
            let opts = crate::BindOptions {
                waiter,
                top_half: top_half_of(p, m),
            };
            rt.bind_fd_with(fd_of(m), cls, opts, handler)?;
        }
    }
    super::upcalls::register_user(&mut rt, p, &devs, &readers)?;
    // Start, feed, stop.
    let _signals = crate::signals::SignalGuard::install();
    rt.start()?;
    let t0 = rt_start_time(&rt);
    let stop = Arc::new(AtomicBool::new(false));
    let mut threads = Vec::new();
    let mut top_halves = Vec::new();
    for (class, fds, bh, cpu) in forwarders {
        let stats = Arc::new(Mutex::new(TopHalfRun {
            class,
            ..TopHalfRun::default()
        }));
        threads.push(forwarder(
            fds,
            bh,
            rt.handle(),
            cpu,
            stop.clone(),
            stats.clone(),
        )?);
        top_halves.push(stats);
    }
    if !p.routes.is_empty() {
        threads.push(requests::start_controller(
            p,
            req.clone(),
            devs.clone(),
            t0,
            p.gen_cpu,
            stop.clone(),
        )?);
    }
    let (interrupted, t_end) = super::feed(p, &devs, t0, &stop, threads)?;
    let report = rt.stop();
    Ok(Outcome {
        t0,
        t_end,
        recs,
        devs,
        interrupted,
        report: Some(report),
        linux_shares: Vec::new(),
        warnings: Vec::new(),
        // The forwarders were joined by `feed`.
        top_halves: top_halves
            .iter()
            .map(|s| s.lock().unwrap_or_else(|e| e.into_inner()).clone())
            .collect(),
    })
}

/// The top-half cost of a class member's fd (the device's, or its route's
/// controller's).
fn top_half_of(p: &Plan, m: Member) -> Nanos {
    match m {
        Member::Items(d) => p.devices[d].top_half,
        Member::Route(r) => p.route_top_half(r),
    }
}

/// A thread priority above every task of Main VCPU `v`.
fn top_prio(p: &Plan, v: usize) -> u32 {
    p.tasks
        .iter()
        .filter(|t| t.vcpu == v)
        .map(|t| t.priority)
        .max()
        .unwrap_or(0)
        .saturating_add(1)
}

fn rt_start_time(rt: &Runtime) -> Nanos {
    Nanos(rt.shared.t0.load(Ordering::SeqCst))
}

fn longest_period_main(p: &Plan) -> Option<usize> {
    p.vcpus
        .iter()
        .enumerate()
        .filter_map(|(i, v)| match v.policy {
            VcpuPolicy::Sporadic { period, .. } | VcpuPolicy::Deferrable { period, .. }
                if !v.io =>
            {
                Some((period, i))
            }
            _ => None,
        })
        .max()
        .map(|(_, i)| i)
}

/// The top half of a class without an I/O VCPU: waits on its fds
/// (edge-triggered epoll), spends each ready fd's top-half cost (the
/// device's interrupt handler, as in the runtime's top half) and wakes the
/// class's bottom-half thread.
fn forwarder(
    fds: Vec<(i32, Nanos)>,
    bh: TaskHandle,
    h: RtHandle,
    cpu: usize,
    stop: Arc<AtomicBool>,
    stats: Arc<Mutex<TopHalfRun>>,
) -> Result<std::thread::JoinHandle<()>, RtError> {
    // SAFETY: creates a descriptor owned by `ep`.
    let ep = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
    if ep < 0 {
        return Err(RtError::last_os("epoll_create1"));
    }
    let ep = sys::Fd(ep);
    let costs: Vec<Nanos> = fds.iter().map(|&(_, c)| c).collect();
    for (k, &(fd, _)) in fds.iter().enumerate() {
        let mut ev = libc::epoll_event {
            events: (libc::EPOLLIN | libc::EPOLLET) as u32,
            u64: k as u64,
        };
        // SAFETY: valid epoll and descriptor.
        if unsafe { libc::epoll_ctl(ep.0, libc::EPOLL_CTL_ADD, fd, &mut ev) } != 0 {
            return Err(RtError::last_os("epoll_ctl"));
        }
    }
    std::thread::Builder::new()
        .name("irqlab-th-nov".into())
        .spawn(move || {
            // Own the epoll descriptor here (not only its number).
            let ep = ep;
            let _ = sys::pin(0, cpu);
            let _ = sys::set_fifo(0, 95);
            let mut evs = [libc::epoll_event { events: 0, u64: 0 }; 16];
            let mut events = 0u64;
            // Items may have arrived before the first wait.
            h.wake(bh);
            while !stop.load(Ordering::Relaxed) {
                // SAFETY: valid epoll and buffer.
                let n = unsafe { libc::epoll_wait(ep.0, evs.as_mut_ptr(), 16, 20) };
                if n > 0 {
                    for ev in &evs[..n as usize] {
                        let k = ev.u64 as usize;
                        sys::spin_cpu(costs.get(k).copied().unwrap_or(Nanos::ZERO));
                    }
                    h.wake(bh);
                    events += n as u64;
                }
            }
            let mut st = stats.lock().unwrap_or_else(|e| e.into_inner());
            st.events = events;
            st.cpu_ns = sys::own_cpu_time().0;
        })
        .map_err(|e| RtError::from_io("spawn top half", e))
}
