//! Faults the runtime must survive: `stop` returns within its
//! bound whatever a handler or a task does; a bound fd closed behind the
//! runtime's back -- its number reused by an unrelated socket -- never
//! reaches the old handler under epoll or io_uring, and is reported;
//! `unbind_fd` is the safe way out; start and stop work beside another
//! process's SCHED_FIFO hog on the managed CPU, which a warning names; a
//! panicking handler under `RUST_BACKTRACE=1` costs about one handler's
//! time; the catch-up policy after a stall is applied and counted.
//!
//! Each test needs SCHED_FIFO (root or CAP_SYS_NICE) and skips with the
//! kernel's reason without it (io_uring likewise). A watchdog aborts the
//! binary instead of letting a hung stop hang the suite.

mod common;

use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::{drain, raw, udp_receiver, Sender};
use irqlab_core::Nanos;
use irqlab_rt::{Backend, CatchUp, Config, IoServer, Periodic, Runtime, UpcallBudget};

/// Abort the test binary if `what` is not done within `secs`.
fn watchdog(what: &'static str, secs: u64) -> Arc<AtomicBool> {
    let done = Arc::new(AtomicBool::new(false));
    let d2 = done.clone();
    std::thread::spawn(move || {
        std::thread::sleep(Duration::from_secs(secs));
        if !d2.load(Ordering::SeqCst) {
            eprintln!("{what}: hung for {secs} s; aborting");
            std::process::abort();
        }
    });
    done
}

/// Poll `f` every millisecond for up to 10 s (no fixed sleeps: a loaded
/// machine may take a while to deliver a datagram).
fn until(mut f: impl FnMut() -> bool) {
    for _ in 0..10_000 {
        if f() {
            return;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

fn runtime(cfg: Config) -> Option<Runtime> {
    match Runtime::new(Config {
        require_fifo: true,
        ..cfg
    }) {
        Ok(rt) => Some(rt),
        Err(e) if e.is_unavailable() => {
            irqlab_rt::skipped!("{e}");
            None
        }
        Err(e) => panic!("runtime: {e}"),
    }
}

fn sporadic(budget_us: u64, period_ms: u64) -> IoServer {
    IoServer::Sporadic {
        budget: Nanos::from_us(budget_us),
        period: Nanos::from_ms(period_ms),
    }
}

/// A handler that never returns and a task that ignores the stop: `stop`
/// still returns, names both, and gives each its scheduling policy back
/// (SCHED_OTHER here) while they run on, unsupervised.
#[test]
fn stop_returns_within_its_bound_with_a_runaway_handler_and_task() {
    let _g = common::serial();
    let bound = Nanos::from_ms(300);
    let Some(mut rt) = runtime(Config {
        stop_timeout: bound,
        ..Config::default()
    }) else {
        return;
    };
    let done = watchdog("stop with runaway threads", 60);
    let release = Arc::new(AtomicBool::new(false));
    let (task_tid, bh_tid) = (Arc::new(AtomicI32::new(0)), Arc::new(AtomicI32::new(0)));
    let m = rt
        .main_vcpu("m", Nanos::from_ms(2), Nanos::from_ms(10), None)
        .expect("m");
    let (r1, t1) = (release.clone(), task_tid.clone());
    rt.spawn(m, "runaway", 0, move |_| {
        t1.store(irqlab_rt::sys::gettid(), Ordering::SeqCst);
        while !r1.load(Ordering::SeqCst) {
            std::hint::spin_loop();
        }
    })
    .expect("task");
    let class = rt.io_class("c", sporadic(2_000, 10), None).expect("class");
    let sock = udp_receiver();
    let to = sock.local_addr().expect("addr");
    let (r2, t2) = (release.clone(), bh_tid.clone());
    rt.bind_fd(raw(&sock), class, move |_| {
        t2.store(irqlab_rt::sys::gettid(), Ordering::SeqCst);
        while !r2.load(Ordering::SeqCst) {
            std::hint::spin_loop();
        }
        drain(&sock, 8, Nanos::ZERO)
    })
    .expect("bind");
    rt.start().expect("start");
    let tx = Sender::start(to, Duration::from_millis(1));
    // Until both runaways are running (no fixed sleep: a loaded machine
    // may take a while to deliver the first datagram).
    until(|| task_tid.load(Ordering::SeqCst) > 0 && bh_tid.load(Ordering::SeqCst) > 0);
    let r = rt.stop();
    tx.finish();
    eprintln!(
        "stop took {} ms (bound {} ms); unreturned: {:#?}",
        r.stop_ns / 1_000_000,
        bound.0 / 1_000_000,
        r.unreturned_threads
    );
    let (tt, bt) = (
        task_tid.load(Ordering::SeqCst),
        bh_tid.load(Ordering::SeqCst),
    );
    let policies = (
        irqlab_rt::sys::get_policy(tt).map(|p| p.policy).ok(),
        irqlab_rt::sys::get_policy(bt).map(|p| p.policy).ok(),
    );
    release.store(true, Ordering::SeqCst);
    done.store(true, Ordering::SeqCst);
    assert!(tt > 0 && bt > 0, "the runaway task and handler ran");
    assert_eq!(r.unreturned_threads.len(), 2, "{:?}", r.unreturned_threads);
    let text = r.unreturned_threads.join("\n");
    assert!(
        text.contains("task \"runaway\"") || text.contains("task runaway"),
        "{text}"
    );
    assert!(text.contains("class c"), "{text}");
    assert!(text.contains("restored to SCHED_OTHER"), "{text}");
    assert!(
        r.stop_ns >= bound.0,
        "stop waited its bound for the runaways"
    );
    // Both run on (they were still spinning), no longer at SCHED_FIFO.
    assert_eq!(
        policies,
        (Some(libc::SCHED_OTHER), Some(libc::SCHED_OTHER)),
        "runaway threads keep no real-time priority"
    );
    assert!(r.warnings.iter().any(|w| w.contains("did not return")));
}

/// Bind two UDP sockets, then close each behind the runtime's back by
/// making its number name a new, never-bound socket (`dup2`, the worst
/// case of a reused number). Datagrams sent to the new sockets must all
/// stay in them; the old handler must never run again. The first closure
/// is found at the next event on the old socket (kept alive by the
/// runtime's duplicate), the second, with no event, at the stop.
fn fd_reuse(backend: Backend) {
    let _g = common::serial();
    let Some(mut rt) = runtime(Config {
        backend,
        ..Config::default()
    }) else {
        return;
    };
    let class = rt.io_class("c", sporadic(2_000, 10), None).expect("class");
    let calls = Arc::new(AtomicU64::new(0));
    let items = Arc::new(AtomicU64::new(0));
    let mut olds = Vec::new();
    for _ in 0..2 {
        let sock = udp_receiver();
        let to = sock.local_addr().expect("addr");
        let fd = raw(&sock);
        let (c, i) = (calls.clone(), items.clone());
        rt.bind_fd(fd, class, move |_| {
            c.fetch_add(1, Ordering::SeqCst);
            let n = drain(&sock, 64, Nanos::ZERO);
            i.fetch_add(n, Ordering::SeqCst);
            n
        })
        .expect("bind");
        olds.push((fd, to));
    }
    rt.start().expect("start");
    let probe = udp_receiver();
    let send = |to, n: usize| {
        for _ in 0..n {
            probe.send_to(&[1u8; 64], to).expect("send");
        }
    };
    send(olds[0].1, 3);
    until(|| items.load(Ordering::SeqCst) >= 3);
    let before = calls.load(Ordering::SeqCst);
    // Close both bound fds by reusing their numbers for new sockets.
    let news: Vec<std::net::UdpSocket> = olds
        .iter()
        .map(|&(fd, _)| {
            let n = udp_receiver();
            // SAFETY: `fd` is open (the handler's socket); dup2 makes it
            // name `n`'s socket, closing the old reference atomically.
            assert_eq!(unsafe { libc::dup2(n.as_raw_fd(), fd) }, fd);
            n
        })
        .collect();
    for n in &news {
        send(n.local_addr().expect("addr"), 100);
    }
    std::thread::sleep(Duration::from_millis(100));
    // An event on the first old socket (alive through the runtime's
    // duplicate): the closure is found there, the slot unbound and the
    // duplicate closed, which frees the old socket's port.
    send(olds[0].1, 3);
    until(|| std::net::UdpSocket::bind(olds[0].1).is_ok());
    let r = rt.stop();
    let after = calls.load(Ordering::SeqCst) - before;
    let e = r.event("c").expect("class report");
    eprintln!(
        "{backend:?}: calls before {before}, after the reuse {after}; events {} handled {} \
         discarded {}; closed {:#?}",
        e.events, e.handled, e.discarded, e.closed
    );
    assert!(before >= 1, "the handler ran before the closure");
    assert_eq!(after, 0, "the old handler ran after its fd was reused");
    for n in &news {
        assert_eq!(
            drain(n, 1_000, Nanos::ZERO),
            100,
            "every datagram of the new socket is still in it"
        );
    }
    assert_eq!(e.closed.len(), 2, "{:?}", e.closed);
    assert!(
        e.closed.iter().any(|c| c.contains("at an event")),
        "{:?}",
        e.closed
    );
    assert!(
        e.closed.iter().any(|c| c.contains("at the stop")),
        "{:?}",
        e.closed
    );
    assert!(e.discarded >= 1, "the event that found the closure");
    assert_eq!(e.events, e.handled + e.panics + e.discarded + e.pending);
    // The handlers were leaked, not dropped: the numbers still name the
    // new sockets.
    for (&(fd, _), n) in olds.iter().zip(&news) {
        let same = irqlab_rt::sys::file_id(fd) == irqlab_rt::sys::file_id(n.as_raw_fd());
        assert!(same, "fd {fd} was closed by the runtime");
        // SAFETY: the second reference to `n`'s socket, ours to close.
        unsafe { libc::close(fd) };
    }
}

#[test]
fn a_reused_fd_number_never_reaches_the_old_handler_under_epoll() {
    fd_reuse(Backend::Epoll);
}

#[test]
fn a_reused_fd_number_never_reaches_the_old_handler_under_io_uring() {
    fd_reuse(Backend::IoUring);
}

/// `unbind_fd` while running: the handler (and the socket it owns) is
/// dropped before it returns, nothing reaches it afterwards; the same for
/// an upcall; an fd that is not bound is refused by number.
#[test]
fn unbind_drops_the_handler_and_nothing_reaches_it_afterwards() {
    for backend in [Backend::Epoll, Backend::IoUring] {
        let _g = common::serial();
        let Some(mut rt) = runtime(Config {
            backend,
            ..Config::default()
        }) else {
            return;
        };
        let class = rt.io_class("c", sporadic(2_000, 10), None).expect("class");
        let calls = Arc::new(AtomicU64::new(0));
        let (s1, s2) = (udp_receiver(), udp_receiver());
        let (to1, to2) = (s1.local_addr().expect("a"), s2.local_addr().expect("a"));
        let (fd1, fd2) = (raw(&s1), raw(&s2));
        let c1 = calls.clone();
        rt.bind_fd(fd1, class, move |_| {
            c1.fetch_add(1, Ordering::SeqCst);
            drain(&s1, 64, Nanos::ZERO)
        })
        .expect("bind");
        let c2 = calls.clone();
        let b = UpcallBudget {
            budget: Nanos::from_ms(1),
            period: Nanos::from_ms(10),
        };
        rt.register_upcall("u", fd2, b, move |_| {
            c2.fetch_add(1, Ordering::SeqCst);
            drain(&s2, 64, Nanos::ZERO)
        })
        .expect("upcall");
        let e = rt.unbind_fd(987_654).expect_err("not bound");
        assert!(e.to_string().contains("987654"), "{e}");
        rt.start().expect("start");
        let tx = udp_receiver();
        for to in [to1, to2] {
            tx.send_to(&[0u8; 8], to).expect("send");
        }
        until(|| calls.load(Ordering::SeqCst) >= 2);
        let before = calls.load(Ordering::SeqCst);
        rt.unbind_fd(fd1).expect("unbind class fd");
        rt.handle().unbind_fd(fd2).expect("unbind upcall fd");
        // SAFETY: F_GETFD only queries.
        let open = |fd| unsafe { libc::fcntl(fd, libc::F_GETFD) } >= 0;
        assert!(
            !open(fd1) && !open(fd2),
            "the handlers' sockets were dropped"
        );
        // New sockets may reuse the numbers; nothing reaches the handlers.
        let (n1, n2) = (udp_receiver(), udp_receiver());
        for n in [&n1, &n2] {
            tx.send_to(&[0u8; 8], n.local_addr().expect("a"))
                .expect("send");
        }
        // Both datagrams arrive in the new sockets (and stay there).
        let (mut got1, mut got2) = (0, 0);
        until(|| {
            got1 += drain(&n1, 10, Nanos::ZERO);
            got2 += drain(&n2, 10, Nanos::ZERO);
            got1 >= 1 && got2 >= 1
        });
        std::thread::sleep(Duration::from_millis(20));
        let r = rt.stop();
        let after = calls.load(Ordering::SeqCst) - before;
        eprintln!("{backend:?}: before {before}, after unbind {after}");
        assert!(before >= 2, "both handlers ran before the unbind");
        assert_eq!(after, 0);
        assert_eq!((got1, got2), (1, 1));
        assert!(rt_closed_is_empty(&r), "an unbind is not a closure");
        assert!(
            rt_unbind_twice_refused(),
            "unbinding twice is refused (checked on a fresh runtime)"
        );
    }
}

fn rt_closed_is_empty(r: &irqlab_rt::Report) -> bool {
    r.events.iter().all(|e| e.closed.is_empty())
}

/// Before `start`: unbinding drops the handler at once; a second unbind of
/// the same fd is refused.
fn rt_unbind_twice_refused() -> bool {
    let Ok(mut rt) = Runtime::new(Config::default()) else {
        return true;
    };
    let Ok(class) = rt.io_class("c", sporadic(1_000, 10), None) else {
        return false;
    };
    let s = udp_receiver();
    let fd = raw(&s);
    if rt
        .bind_fd(fd, class, move |_| drain(&s, 1, Nanos::ZERO))
        .is_err()
    {
        return false;
    }
    rt.unbind_fd(fd).is_ok() && rt.unbind_fd(fd).is_err()
}

/// Fork a child that spins at SCHED_FIFO `prio` on `cpu` until `secs`
/// passed (it ends by itself if this process dies). `None` if it could not
/// get SCHED_FIFO.
fn fifo_hog(cpu: usize, prio: i32, secs: u64) -> Option<libc::pid_t> {
    // SAFETY: the child only makes system calls and exits with _exit.
    let pid = unsafe { libc::fork() };
    if pid == 0 {
        unsafe {
            let p = libc::sched_param {
                sched_priority: prio,
            };
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            libc::CPU_SET(cpu, &mut set);
            if libc::sched_setscheduler(0, libc::SCHED_FIFO, &p) != 0
                || libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0
            {
                libc::_exit(1);
            }
            let mut ts: libc::timespec = std::mem::zeroed();
            libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts);
            let end = ts.tv_sec + secs as libc::time_t;
            while ts.tv_sec < end {
                libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts);
            }
            libc::_exit(0);
        }
    }
    if pid < 0 {
        return None;
    }
    // Wait until it runs at SCHED_FIFO (or gave up).
    for _ in 0..200 {
        if irqlab_rt::sys::get_policy(pid).map(|p| p.policy).ok() == Some(libc::SCHED_FIFO) {
            return Some(pid);
        }
        let mut status = 0;
        // SAFETY: our child.
        if unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) } == pid {
            return None;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    None
}

/// Another process spins at SCHED_FIFO 50 on the managed CPU: above every
/// managed thread, below the supervisor. Start names it in a warning;
/// stop returns and every thread ends well before the hog would (the
/// managed ones, stuck below it, get their policy and affinity back and
/// finish elsewhere; before, a stop waited for the hog to end).
#[test]
fn start_and_stop_beside_a_competing_fifo_hog() {
    let _g = common::serial();
    let Some(mut rt) = runtime(Config {
        stop_timeout: Nanos::from_secs(2),
        ..Config::default()
    }) else {
        return;
    };
    let cpu = Config::default().cpus[0];
    // Ends by itself after 8 s (killed right after the stop).
    let Some(hog) = fifo_hog(cpu, 50, 8) else {
        irqlab_rt::skipped!("the hog could not get SCHED_FIFO 50 on CPU {cpu}");
        return;
    };
    let done = watchdog("start/stop beside a FIFO hog", 60);
    let m = rt
        .main_vcpu("m", Nanos::from_ms(2), Nanos::from_ms(10), None)
        .expect("m");
    rt.spawn_periodic(m, "tick", 0, Nanos::from_ms(10), Nanos::from_ms(10), |_| {
        common::spin_cpu(Nanos::from_us(100))
    })
    .expect("tick");
    let class = rt.io_class("c", sporadic(1_000, 10), None).expect("class");
    let sock = udp_receiver();
    let to = sock.local_addr().expect("addr");
    rt.bind_fd(raw(&sock), class, move |_| drain(&sock, 8, Nanos::ZERO))
        .expect("bind");
    rt.start().expect("start beside the hog");
    let tx = Sender::start(to, Duration::from_millis(1));
    std::thread::sleep(Duration::from_millis(300));
    let r = rt.stop();
    tx.finish();
    // SAFETY: our child; reaped here.
    unsafe {
        libc::kill(hog, libc::SIGKILL);
        libc::waitpid(hog, std::ptr::null_mut(), 0);
    }
    done.store(true, Ordering::SeqCst);
    eprintln!(
        "stop took {} ms; warnings {:#?}; tick {:?}",
        r.stop_ns / 1_000_000,
        r.warnings,
        r.task("tick").map(|t| (t.jobs, t.deadline_misses))
    );
    let named = format!("of process {hog} ");
    assert!(
        r.warnings
            .iter()
            .any(|w| w.contains("competing real-time thread") && w.contains(&named)),
        "the hog (pid {hog}) is named: {:?}",
        r.warnings
    );
    assert!(
        r.unreturned_threads.is_empty(),
        "{:?}",
        r.unreturned_threads
    );
}

/// One handler invocation in two panics, under `RUST_BACKTRACE=1`: the
/// CPU time per event of the panicking class stays about that of an
/// identical class that does not panic (a backtrace capture costs
/// milliseconds to seconds); the panics are counted with their message.
#[test]
fn a_panicking_handler_under_rust_backtrace_costs_one_handler() {
    let _g = common::serial();
    std::env::set_var("RUST_BACKTRACE", "1");
    let Some(mut rt) = runtime(Config::default()) else {
        return;
    };
    let work = Nanos::from_us(200);
    let mut tos = Vec::new();
    for (name, panics) in [("quiet", false), ("panicky", true)] {
        let class = rt.io_class(name, sporadic(5_000, 10), None).expect("class");
        let sock = udp_receiver();
        tos.push(sock.local_addr().expect("addr"));
        let n = AtomicU64::new(0);
        rt.bind_fd(raw(&sock), class, move |_| {
            let got = drain(&sock, 1, work);
            if panics && n.fetch_add(1, Ordering::Relaxed).is_multiple_of(2) {
                panic!("deliberate handler panic");
            }
            got
        })
        .expect("bind");
    }
    rt.start().expect("start");
    let senders: Vec<Sender> = tos
        .into_iter()
        .map(|to| Sender::start(to, Duration::from_millis(3)))
        .collect();
    std::thread::sleep(Duration::from_millis(600));
    for s in senders {
        s.finish();
    }
    let r = rt.stop();
    std::env::remove_var("RUST_BACKTRACE");
    let per_event = |name: &str| {
        let e = r.event(name).expect("class");
        let cpu = r.server(name).expect("server").cpu_time_ns;
        (cpu / (e.handled + e.panics).max(1), e.handled, e.panics)
    };
    let (q, qh, _) = per_event("quiet");
    let (p, ph, pp) = per_event("panicky");
    let e = r.event("panicky").expect("class");
    eprintln!(
        "CPU per event: quiet {q} ns ({qh} handled), panicky {p} ns ({ph} handled, {pp} \
         panics); messages {:?}",
        e.panic_messages
    );
    assert!(qh >= 20 && pp >= 20, "enough events: {qh} / {pp}");
    assert!(
        p <= 2 * q + 300_000,
        "a panic cost {p} ns per event against {q} ns without"
    );
    assert!(
        e.panic_messages[0].starts_with("deliberate handler panic at ")
            && e.panic_messages[0].contains("faults.rs"),
        "{:?}",
        e.panic_messages
    );
}

/// A job that sleeps 52 ms in a 5 ms period: with `RunLate` the releases
/// that passed run back to back (each counted as a late start); with
/// `Skip` those whose deadline passed are skipped (counted) and the task
/// goes on at its period. Either way every release is accounted for.
#[test]
fn catch_up_after_a_stall_runs_late_or_skips_and_counts() {
    for policy in [CatchUp::RunLate, CatchUp::Skip] {
        let _g = common::serial();
        let Some(mut rt) = runtime(Config::default()) else {
            return;
        };
        let m = rt
            .main_vcpu("m", Nanos::from_ms(4), Nanos::from_ms(5), None)
            .expect("m");
        let first = AtomicBool::new(true);
        let timing = Periodic {
            period: Nanos::from_ms(5),
            deadline: Nanos::from_ms(5),
            catch_up: policy,
        };
        rt.spawn_periodic_with(m, "t", 0, timing, move |_| {
            if first.swap(false, Ordering::SeqCst) {
                std::thread::sleep(Duration::from_millis(52));
            }
        })
        .expect("task");
        rt.start().expect("start");
        std::thread::sleep(Duration::from_millis(200));
        let r = rt.stop();
        let t = r.task("t").expect("task");
        let (jobs, skipped, late) = (
            t.jobs.unwrap_or(0),
            t.skipped_jobs.unwrap_or(0),
            t.late_starts.unwrap_or(0),
        );
        let unfinished = t.unfinished_past_deadline.unwrap_or(0);
        let releases = r.duration_ns / 5_000_000 + 1;
        eprintln!(
            "{policy:?}: jobs {jobs} skipped {skipped} late starts {late} misses {:?} \
             unfinished {unfinished}, {releases} releases in {} ns",
            t.deadline_misses, r.duration_ns
        );
        let accounted = jobs + skipped + unfinished;
        assert!(
            accounted + 1 >= releases && accounted <= releases + 1,
            "{accounted} jobs accounted for, {releases} releases"
        );
        match policy {
            CatchUp::RunLate => {
                assert_eq!(skipped, 0);
                assert!(late >= 9, "releases at 5..45 ms start late: {late}");
            }
            CatchUp::Skip => {
                assert_eq!(late, 0);
                assert!(skipped >= 9, "releases at 5..45 ms are skipped: {skipped}");
            }
        }
    }
}
