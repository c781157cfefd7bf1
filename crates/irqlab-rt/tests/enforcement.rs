//! Budget enforcement on real threads: a CPU-bound thread in a 300 us /
//! 1 ms sporadic server (QUEST-VCPU Alg. 3-6) gets 30 % +- 3 % of its CPU.

mod common;

use std::time::Duration;

use irqlab_core::Nanos;

#[test]
fn cpu_bound_thread_gets_its_budget_share() {
    let _g = common::serial();
    let Some(mut rt) = common::fifo_runtime() else {
        return;
    };
    let s = rt
        .main_vcpu("hog", Nanos::from_us(300), Nanos::from_ms(1), None)
        .expect("server");
    rt.spawn(s, "spin", 0, |ctx| {
        while ctx.running() {
            std::hint::spin_loop();
        }
    })
    .expect("spawn");
    rt.start().expect("start");
    std::thread::sleep(Duration::from_secs(2));
    let r = rt.stop();
    let hog = r.server("hog").expect("server report");
    let share = hog.share;
    let tl = &r.supervisors[0].timer_latency;
    eprintln!(
        "enforcement overrun: {} exhaustions, p50 {:?} ns, p99 {:?} ns, max {:?} ns; \
         supervisor timer late p50 {:?} p99 {:?}",
        hog.overrun.count, hog.overrun.p50, hog.overrun.p99, hog.overrun.max, tl.p50, tl.p99
    );
    assert!(hog.overrun.count > 1000, "about one exhaustion per period");
    eprintln!(
        "share {share:.4}; supervisor {:?}; parks {}",
        r.supervisors,
        r.task("spin").map_or(0, |t| t.parks)
    );
    assert!(
        (0.27..=0.33).contains(&share),
        "300 us / 1 ms server got {:.1} % of the CPU",
        share * 100.0
    );
}

/// A thread the program created itself joins a Main VCPU
/// (`RtHandle::join_current`), gets the server's share while joined, and
/// has its policy and affinity back after leaving.
#[test]
fn registered_thread_runs_under_its_server_and_leaves_cleanly() {
    let _g = common::serial();
    let Some(mut rt) = common::fifo_runtime() else {
        return;
    };
    let s = rt
        .main_vcpu("joined", Nanos::from_us(300), Nanos::from_ms(1), None)
        .expect("server");
    rt.start().expect("start");
    let handle = rt.handle();
    let worker = std::thread::spawn(move || {
        let before = irqlab_rt::sys::get_policy(0).expect("policy");
        let affinity = irqlab_rt::sys::allowed_cpus();
        let share = {
            let me = handle.join_current(s, "mine", 0).expect("join");
            let (t0, c0) = (me.now(), irqlab_rt::sys::own_cpu_time());
            while me.now() < t0 + Nanos::from_secs(1) {
                std::hint::spin_loop();
            }
            let (t1, c1) = (me.now(), irqlab_rt::sys::own_cpu_time());
            (c1 - c0).0 as f64 / (t1 - t0).0 as f64
        };
        let after = irqlab_rt::sys::get_policy(0).expect("policy");
        (
            share,
            before,
            after,
            affinity,
            irqlab_rt::sys::allowed_cpus(),
        )
    });
    let (share, before, after, aff0, aff1) = worker.join().expect("worker");
    let r = rt.stop();
    eprintln!(
        "joined thread share {share:.4}; report {:?}",
        r.server("joined").map(|s| s.share)
    );
    assert!(
        (0.27..=0.33).contains(&share),
        "joined thread got {:.1} %",
        share * 100.0
    );
    assert_eq!(before, after, "policy restored after leaving");
    assert_eq!(aff0, aff1, "affinity restored after leaving");
}

/// A thread joins (`RtHandle::join_current`) a more urgent server on a
/// CPU where a thread of a full-budget server (budget = period: never
/// depleted, never blocking) holds a foreground priority. The joining
/// thread reaches that CPU at the background priority and cannot run there
/// until the supervisor boosts it, so everything the supervisor needs
/// (its registration, its wake-up in the core) must happen before it
/// moves: it then gets its server's share at once. (Registered after the
/// move, it waited until the stop.)
#[test]
fn a_thread_joins_behind_a_never_blocking_thread() {
    let _g = common::serial();
    let Some(mut rt) = common::fifo_runtime() else {
        return;
    };
    let full = rt
        .main_vcpu("full", Nanos::from_ms(10), Nanos::from_ms(10), None)
        .expect("server");
    rt.spawn(full, "never-blocks", 0, |ctx| {
        while ctx.running() {
            std::hint::spin_loop();
        }
    })
    .expect("spawn");
    let s = rt
        .main_vcpu("joined", Nanos::from_us(300), Nanos::from_ms(1), None)
        .expect("server");
    rt.start().expect("start");
    let handle = rt.handle();
    let (tx, rx) = std::sync::mpsc::channel();
    let worker = std::thread::spawn(move || {
        let me = handle.join_current(s, "mine", 0).expect("join");
        let _ = tx.send(());
        let (t0, c0) = (me.now(), irqlab_rt::sys::own_cpu_time());
        while me.running() && me.now() < t0 + Nanos::from_ms(500) {
            std::hint::spin_loop();
        }
        let (t1, c1) = (me.now(), irqlab_rt::sys::own_cpu_time());
        (c1 - c0).0 as f64 / (t1 - t0).0 as f64
    });
    let joined = rx.recv_timeout(Duration::from_secs(5)).is_ok();
    let share = if joined {
        Some(worker.join().expect("worker"))
    } else {
        None
    };
    let r = rt.stop();
    assert!(
        joined,
        "join_current did not return within 5 s behind a never-blocking thread"
    );
    let share = share.unwrap_or_default();
    let hog = r.server("full").expect("full");
    eprintln!("joined share {share:.4}, full share {:.4}", hog.share);
    assert!(
        (0.27..=0.33).contains(&share),
        "joined thread got {:.1} %",
        share * 100.0
    );
    assert!(hog.share > 0.5, "{hog:?}");
}

/// One supervisor per managed CPU: two CPU-bound threads in servers on two
/// CPUs get their own budgets (30 % and 50 %) at the same time.
#[test]
fn each_cpu_has_its_own_supervisor() {
    let _g = common::serial();
    let cpus = irqlab_rt::sys::allowed_cpus();
    if cpus.len() < 2 {
        irqlab_rt::skipped!("needs two CPUs, this process may use {cpus:?}");
        return;
    }
    let cfg = irqlab_rt::Config {
        cpus: cpus[..2].to_vec(),
        require_fifo: true,
        ..irqlab_rt::Config::default()
    };
    let mut rt = match irqlab_rt::Runtime::new(cfg) {
        Ok(rt) => rt,
        Err(e) if e.is_unavailable() => {
            irqlab_rt::skipped!("{e}");
            return;
        }
        Err(e) => panic!("{e}"),
    };
    for (name, cpu, budget) in [("a", cpus[0], 300), ("b", cpus[1], 500)] {
        let s = rt
            .main_vcpu(name, Nanos::from_us(budget), Nanos::from_ms(1), Some(cpu))
            .expect("server");
        rt.spawn(s, name, 0, |ctx| {
            while ctx.running() {
                std::hint::spin_loop();
            }
        })
        .expect("spawn");
    }
    rt.start().expect("start");
    std::thread::sleep(Duration::from_secs(1));
    let r = rt.stop();
    let (a, b) = (r.server("a").expect("a"), r.server("b").expect("b"));
    eprintln!(
        "cpu {} share {:.4}, cpu {} share {:.4}",
        a.cpu, a.share, b.cpu, b.share
    );
    assert_ne!(a.cpu, b.cpu);
    assert!(
        (0.27..=0.33).contains(&a.share),
        "a got {:.1} %",
        a.share * 100.0
    );
    assert!(
        (0.47..=0.53).contains(&b.share),
        "b got {:.1} %",
        b.share * 100.0
    );
    assert_eq!(r.supervisors.len(), 2);
}
