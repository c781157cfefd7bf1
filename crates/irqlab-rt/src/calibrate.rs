//! Measuring this machine for `irqlab calibrate` (DESIGN §10): timer
//! wake-up latency (cyclictest's loop), thread wake-up through an eventfd,
//! context switch (eventfd ping-pong on one CPU), the supervisor's
//! scheduling decision (the core's `schedule` with a few servers), one
//! priority switch (`sched_setscheduler` on a blocked thread), and the
//! runtime's own per-event top-half cost and dispatch delay (a short run of
//! this crate's runtime with an eventfd source).
//!
//! Design principles: every measurement is a plain loop a reader can check
//! against its definition; each result is a distribution summary, or the
//! reason it was not measured (no SCHED_FIFO, no second CPU...), never a
//! made-up number; nothing here asserts a timing. The kernel's own
//! per-packet costs come from ftrace in the Python layer
//! (`irqlab.calibrate`), which needs tracefs, not this crate.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use irqlab_core::{Nanos, Scheduler, Server, ServerPriority, SporadicServer, ThreadPolicy};
use serde::Serialize;

use crate::io::IoServer;
use crate::sys::{self, Fd};
use crate::{Config, Runtime};

/// A distribution summary in ns.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Summary {
    pub samples: u64,
    pub min: u64,
    pub mean: f64,
    pub p50: u64,
    pub p99: u64,
    pub max: u64,
}

/// Nearest-rank percentile summary of `v` (`None` when empty).
pub fn summarize(mut v: Vec<u64>) -> Option<Summary> {
    if v.is_empty() {
        return None;
    }
    v.sort_unstable();
    let n = v.len();
    let rank = |p: f64| v[((p * n as f64).ceil() as usize).clamp(1, n) - 1];
    Some(Summary {
        samples: n as u64,
        min: v[0],
        mean: v.iter().map(|&x| x as f64).sum::<f64>() / n as f64,
        p50: rank(0.5),
        p99: rank(0.99),
        max: v[n - 1],
    })
}

/// One measurement: its summary, or why there is none.
pub type Measured = Result<Summary, String>;

/// Everything [`calibrate`] measured.
#[derive(Clone, Debug, Serialize)]
pub struct Calibration {
    /// Whether SCHED_FIFO was permitted (the measurement threads use it).
    pub fifo: bool,
    pub timer_wakeup: Measured,
    pub thread_wakeup: Measured,
    pub context_switch: Measured,
    pub supervisor_decision: Measured,
    pub priority_switch: Measured,
    pub runtime_top_half: Measured,
    pub runtime_dispatch: Measured,
}

const FIFO_PRIO: i32 = 80;

/// Raise the calling thread to SCHED_FIFO `FIFO_PRIO` (if permitted) and
/// pin it to `cpu`; true with SCHED_FIFO.
fn setup_thread(cpu: usize) -> bool {
    let tid = sys::gettid();
    let _ = sys::pin(tid, cpu);
    sys::set_fifo(tid, FIFO_PRIO).is_ok()
}

fn fifo_permitted() -> bool {
    std::thread::spawn(|| sys::set_fifo(sys::gettid(), FIFO_PRIO).is_ok())
        .join()
        .unwrap_or(false)
}

fn read_u64(fd: libc::c_int) -> bool {
    let mut v: u64 = 0;
    // SAFETY: reads 8 bytes into a live u64.
    let r = unsafe { libc::read(fd, (&mut v as *mut u64).cast(), 8) };
    r == 8
}

/// A blocking eventfd (the runtime's own are non-blocking).
fn blocking_eventfd() -> Result<Fd, String> {
    // SAFETY: plain syscall.
    let fd = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC) };
    if fd < 0 {
        return Err(format!("eventfd: {}", std::io::Error::last_os_error()));
    }
    Ok(Fd(fd))
}

/// Timer wake-up latency: `clock_nanosleep(TIMER_ABSTIME)` to a target
/// `interval` ahead, latency = wake time - target (cyclictest).
fn timer_wakeup(cpu: usize, n: usize, interval: Nanos) -> Measured {
    std::thread::spawn(move || {
        setup_thread(cpu);
        let mut v = Vec::with_capacity(n);
        for _ in 0..n {
            let target = sys::now().0.saturating_add(interval.0);
            let ts = libc::timespec {
                tv_sec: (target / 1_000_000_000) as libc::time_t,
                tv_nsec: (target % 1_000_000_000) as libc::c_long,
            };
            // SAFETY: plain syscall with a live timespec.
            let r = unsafe {
                libc::clock_nanosleep(
                    libc::CLOCK_MONOTONIC,
                    libc::TIMER_ABSTIME,
                    &ts,
                    std::ptr::null_mut(),
                )
            };
            if r != 0 {
                return Err(format!("clock_nanosleep: errno {r}"));
            }
            v.push(sys::now().0.saturating_sub(target));
        }
        summarize(v).ok_or_else(|| "no samples".to_owned())
    })
    .join()
    .unwrap_or_else(|_| Err("measurement thread panicked".into()))
}

/// Thread wake-up latency through an eventfd: a writer on `from` stamps
/// the time and writes; the reader on `to`, blocked in `read`, records
/// its return time minus the stamp, then acknowledges.
fn thread_wakeup(from: usize, to: usize, n: usize) -> Measured {
    let (ev, ack) = (blocking_eventfd()?, blocking_eventfd()?);
    let (e, a) = (ev.0, ack.0);
    let stamp = Arc::new(AtomicU64::new(0));
    let s2 = stamp.clone();
    let reader = std::thread::spawn(move || {
        setup_thread(to);
        let mut v = Vec::with_capacity(n);
        for _ in 0..n {
            if !read_u64(e) {
                break;
            }
            v.push(sys::now().0.saturating_sub(s2.load(Ordering::Acquire)));
            sys::eventfd_signal(a);
        }
        v
    });
    let writer = std::thread::spawn(move || {
        setup_thread(from);
        for _ in 0..n {
            std::thread::sleep(std::time::Duration::from_micros(200));
            stamp.store(sys::now().0, Ordering::Release);
            sys::eventfd_signal(e);
            if !read_u64(a) {
                break;
            }
        }
    });
    let _ = writer.join();
    let v = reader.join().map_err(|_| "reader panicked".to_owned())?;
    drop((ev, ack));
    summarize(v).ok_or_else(|| "no samples".to_owned())
}

/// Context switch: two threads on one CPU pass a token through two
/// eventfds; each sample is a batch of `BATCH` round trips over the
/// `2 BATCH` switches it took (each switch includes the eventfd write and
/// read that cause it, as lmbench's lat_ctx counts its pipe).
fn context_switch(cpu: usize, n: usize) -> Measured {
    const BATCH: u64 = 50;
    let (ping, pong) = (blocking_eventfd()?, blocking_eventfd()?);
    let (p, q) = (ping.0, pong.0);
    let total = n as u64 * BATCH;
    let echo = std::thread::spawn(move || {
        setup_thread(cpu);
        for _ in 0..total {
            if !read_u64(p) {
                break;
            }
            sys::eventfd_signal(q);
        }
    });
    let driver = std::thread::spawn(move || {
        setup_thread(cpu);
        let mut v = Vec::with_capacity(n);
        for _ in 0..n {
            let t0 = sys::now().0;
            for _ in 0..BATCH {
                sys::eventfd_signal(p);
                if !read_u64(q) {
                    return v;
                }
            }
            v.push(sys::now().0.saturating_sub(t0) / (2 * BATCH));
        }
        v
    });
    let v = driver.join().map_err(|_| "driver panicked".to_owned())?;
    let _ = echo.join();
    drop((ping, pong));
    summarize(v).ok_or_else(|| "no samples".to_owned())
}

/// The supervisor's decision: the core's `schedule` on a CPU with
/// `servers` sporadic servers (one thread each), after one thread blocks
/// and another wakes, as a supervisor pass sees it.
fn supervisor_decision(servers: usize, n: usize) -> Measured {
    let mut s = Scheduler::new();
    let mut threads = Vec::new();
    let t0 = Nanos::from_ms(1);
    for i in 0..servers {
        let period = Nanos::from_ms(10 + i as u64);
        let ss = SporadicServer::new(
            Nanos::from_ms(1),
            period,
            32,
            ServerPriority::RateMonotonic,
            false,
            Nanos::ZERO,
        )
        .map_err(|e| e.to_string())?;
        let id = s
            .add_server(
                format!("s{i}"),
                Server::Sporadic(ss),
                ThreadPolicy::FixedPriority,
            )
            .map_err(|e| e.to_string())?;
        let t = s
            .add_thread(format!("t{i}"), id, 1)
            .map_err(|e| e.to_string())?;
        s.wakeup(t0, t, None).map_err(|e| e.to_string())?;
        threads.push(t);
    }
    let mut v = Vec::with_capacity(n);
    let mut now = t0;
    for k in 0..n {
        now = Nanos(now.0 + 1_000);
        let t = threads[k % threads.len()];
        s.block(now, t).map_err(|e| e.to_string())?;
        s.wakeup(now, t, None).map_err(|e| e.to_string())?;
        let a = sys::now().0;
        let d = s.schedule(now).map_err(|e| e.to_string())?;
        let b = sys::now().0;
        std::hint::black_box(d);
        v.push(b.saturating_sub(a));
    }
    summarize(v).ok_or_else(|| "no samples".to_owned())
}

/// One priority switch: `sched_setscheduler(SCHED_FIFO)` of a blocked
/// thread, alternating two priorities (what the supervisor does to a
/// server's threads).
fn priority_switch(cpu: usize, n: usize) -> Measured {
    let ev = blocking_eventfd()?;
    let e = ev.0;
    let (tx, rx) = std::sync::mpsc::channel();
    let sleeper = std::thread::spawn(move || {
        let _ = tx.send(sys::gettid());
        read_u64(e);
    });
    let tid = rx.recv().map_err(|_| "sleeper did not start".to_owned())?;
    let _ = sys::pin(tid, cpu);
    let mut v = Vec::with_capacity(n);
    let mut err = None;
    for k in 0..n {
        let a = sys::now().0;
        if let Err(x) = sys::set_fifo(tid, 10 + (k % 2) as i32) {
            err = Some(x.to_string());
            break;
        }
        v.push(sys::now().0.saturating_sub(a));
    }
    sys::eventfd_signal(e);
    let _ = sleeper.join();
    drop(ev);
    match err {
        Some(x) => Err(format!("SCHED_FIFO not permitted: {x}")),
        None => summarize(v).ok_or_else(|| "no samples".to_owned()),
    }
}

/// The runtime's per-event costs: `runs` short runs of this runtime (one
/// Main VCPU, one sporadic I/O class, an eventfd written every `gap` by a
/// thread on another CPU). Top half: each run's top-half CPU time over its
/// events (the runtime keeps only the total); dispatch: the first run's
/// per-event summary (event time stamp to bottom-half start).
fn runtime_costs(cpu: usize, gen_cpu: usize, runs: usize, run_for: Nanos) -> (Measured, Measured) {
    let mut top = Vec::new();
    let mut dispatch: Measured = Err("no run".into());
    for r in 0..runs {
        match runtime_run(cpu, gen_cpu, run_for) {
            Ok((per_event, d)) => {
                top.push(per_event);
                if r == 0 {
                    dispatch = d;
                }
            }
            Err(e) => {
                return (Err(e.clone()), Err(e));
            }
        }
    }
    (
        summarize(top).ok_or_else(|| "no events".to_owned()),
        dispatch,
    )
}

fn runtime_run(cpu: usize, gen_cpu: usize, run_for: Nanos) -> Result<(u64, Measured), String> {
    let cfg = Config {
        cpus: vec![cpu],
        ..Config::default()
    };
    let mut rt = Runtime::new(cfg).map_err(|e| e.to_string())?;
    let main = rt
        .main_vcpu("cal.main", Nanos::from_ms(1), Nanos::from_ms(10), None)
        .map_err(|e| e.to_string())?;
    let _ = main;
    let class = rt
        .io_class(
            "cal.io",
            IoServer::Sporadic {
                budget: Nanos::from_ms(2),
                period: Nanos::from_ms(10),
            },
            None,
        )
        .map_err(|e| e.to_string())?;
    let ev = sys::eventfd().map_err(|e| e.to_string())?;
    let fd = ev.0;
    rt.bind_fd(fd, class, move |_e| u64::from(read_u64(fd)))
        .map_err(|e| e.to_string())?;
    rt.start().map_err(|e| e.to_string())?;
    let stop = Arc::new(AtomicBool::new(false));
    let s2 = stop.clone();
    let gen = std::thread::spawn(move || {
        let _ = sys::pin(sys::gettid(), gen_cpu);
        while !s2.load(Ordering::Relaxed) {
            sys::eventfd_signal(fd);
            std::thread::sleep(std::time::Duration::from_micros(500));
        }
    });
    std::thread::sleep(std::time::Duration::from_nanos(run_for.0));
    stop.store(true, Ordering::Relaxed);
    let _ = gen.join();
    let report = rt.stop();
    drop(ev);
    let e = report
        .events
        .first()
        .ok_or_else(|| "the runtime reported no event source".to_owned())?;
    if e.handled == 0 {
        return Err("the runtime handled no event".into());
    }
    let per_event = report.top_half_cpu_ns / e.events.max(1);
    let d = &e.dispatch;
    let dispatch = match (d.min, d.mean, d.p50, d.p99, d.max) {
        (Some(min), Some(mean), Some(p50), Some(p99), Some(max)) => Ok(Summary {
            samples: d.count,
            min,
            mean,
            p50: p50.max(min),
            p99: p99.max(p50.max(min)),
            max,
        }),
        _ => Err("no dispatch samples".into()),
    };
    Ok((per_event, dispatch))
}

/// Measure this machine: `n` samples per micro-measurement and `runs`
/// runtime runs of `run_for` each.
pub fn calibrate(n: usize, runs: usize, run_for: Nanos) -> Calibration {
    let cpus = sys::allowed_cpus();
    let last = cpus.last().copied().unwrap_or(0);
    let first = cpus.first().copied().unwrap_or(0);
    let n = n.max(1);
    let (runtime_top_half, runtime_dispatch) = runtime_costs(last, first, runs.max(1), run_for);
    Calibration {
        fifo: fifo_permitted(),
        timer_wakeup: timer_wakeup(last, n, Nanos::from_us(200)),
        thread_wakeup: if cpus.len() > 1 {
            thread_wakeup(first, last, n)
        } else {
            thread_wakeup(first, first, n)
        },
        context_switch: context_switch(last, n),
        supervisor_decision: supervisor_decision(8, n.max(1000)),
        priority_switch: priority_switch(last, n),
        runtime_top_half,
        runtime_dispatch,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_summary() {
        let s = summarize((1..=100).collect()).expect("summary");
        assert_eq!(
            (s.samples, s.min, s.p50, s.p99, s.max),
            (100, 1, 50, 99, 100)
        );
        assert_eq!(s.mean, 50.5);
        let s = summarize(vec![7]).expect("one");
        assert_eq!((s.min, s.p50, s.p99, s.max), (7, 7, 7, 7));
        assert!(summarize(vec![]).is_none());
    }

    /// Structure only (no timing assertions): every measurement either
    /// gives an ordered, positive summary or says why not.
    #[test]
    fn calibrate_gives_ordered_summaries_or_reasons() {
        let c = calibrate(50, 1, Nanos::from_ms(100));
        for (name, m) in [
            ("timer_wakeup", &c.timer_wakeup),
            ("thread_wakeup", &c.thread_wakeup),
            ("context_switch", &c.context_switch),
            ("supervisor_decision", &c.supervisor_decision),
            ("priority_switch", &c.priority_switch),
            ("runtime_top_half", &c.runtime_top_half),
            ("runtime_dispatch", &c.runtime_dispatch),
        ] {
            match m {
                Ok(s) => {
                    assert!(s.samples > 0, "{name}");
                    assert!(
                        s.min <= s.p50 && s.p50 <= s.p99 && s.p99 <= s.max,
                        "{name}: {s:?}"
                    );
                    assert!(s.mean.is_finite(), "{name}");
                }
                Err(why) => assert!(!why.is_empty(), "{name}: an empty reason"),
            }
        }
        assert!(c.timer_wakeup.is_ok(), "{:?}", c.timer_wakeup);
        assert!(c.supervisor_decision.is_ok());
    }
}
