//! Property tests of the servers under random workloads (docs/architecture.md).
//! Each property is stated with the conditions under which the theory
//! promises it: a preempted or overloaded server may legitimately consume
//! more than C in a window of T (back-to-back execution, as a periodic task
//! can), so the "no amplification" property is checked for a server alone
//! on its CPU, and the workload bound for server sets that pass the
//! Liu-Layland test.

mod common;

use common::{max_window, run, Arrival};
use irqlab_core::{
    Inherit, Nanos, Pibs, Scheduler, Server, ServerId, ServerPolicy, ServerPriority,
    SporadicServer, ThreadId, ThreadPolicy, Utilization,
};
use proptest::prelude::*;

fn sporadic(c: u64, t: u64, max_repl: usize) -> Server {
    Server::Sporadic(
        SporadicServer::new(
            Nanos(c),
            Nanos(t),
            max_repl,
            ServerPriority::RateMonotonic,
            false,
            Nanos(0),
        )
        .expect("valid parameters"),
    )
}

/// Random work for one thread: (gap before the arrival, amount).
fn arrivals(thread: ThreadId, raw: &[(u64, u64)], inherit: Option<u64>) -> Vec<Arrival> {
    let mut at = 0;
    raw.iter()
        .map(|&(gap, amount)| {
            at += gap;
            Arrival {
                at,
                thread,
                amount,
                inherit,
            }
        })
        .collect()
}

/// Periodic-task workload bound: the most a server (C, T) that behaves like
/// a periodic task can execute in any window of length L.
fn workload_bound(c: u64, t: u64, l: u64) -> u64 {
    let x = l + t - c;
    c * (x / t) + c.min(x % t)
}

fn check_sporadic_invariants(sched: &Scheduler, now: u64) {
    for i in 0..sched.num_servers() {
        if let Ok(Server::Sporadic(ss)) = sched.server(ServerId(i)) {
            // The invariant Quest's own source asserts.
            assert_eq!(
                ss.queued_sum(),
                ss.capacity_c(),
                "sum of replenishments != C"
            );
            assert!(ss.queue_len() <= ss.max_repl());
            let times: Vec<Nanos> = ss.replenishments().map(|r| r.time).collect();
            assert!(times.windows(2).all(|w| w[0] <= w[1]), "queue not sorted");
            // The O(1) read equals its definition by a scan of the queue:
            // nothing used, the amounts sum to C, then the latest time.
            let scanned = (ss.usage().is_zero() && ss.queued_sum() == ss.capacity_c())
                .then(|| times.iter().copied().max())
                .flatten();
            assert_eq!(ss.whole_budget_from(), scanned, "whole budget at {now}");
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    /// Sporadic server alone on its CPU: sum of replenishments == C at
    /// every step, and never more than C in any window of length T (no
    /// budget amplification, the POSIX defect Stanovich et al. corrected).
    #[test]
    fn sporadic_alone_no_amplification(
        c in 1u64..20, extra in 0u64..40, max_repl in 2usize..6,
        raw in proptest::collection::vec((0u64..30, 1u64..15), 1..40),
    ) {
        let t = c + extra + 1;
        let mut s = Scheduler::new();
        let v = s.add_server("ss", sporadic(c, t, max_repl), ThreadPolicy::FixedPriority).unwrap();
        let th = s.add_thread("w", v, 1).unwrap();
        let horizon = 40 * t;
        let segs = run(&mut s, arrivals(th, &raw, None), &[], horizon, &mut |sch, now| check_sporadic_invariants(sch, now));
        prop_assert!(max_window(&segs, v, t) <= c, "consumed {} > C = {} in a window of T = {}", max_window(&segs, v, t), c, t);
        // no server runs with zero budget outside background mode
        prop_assert!(segs.iter().all(|x| !x.background));
    }

    /// Sporadic servers on one CPU passing the Liu-Layland test (QUEST-VCPU
    /// Eq. 1 with no I/O VCPUs): each server's consumption in any window of
    /// length L stays within the periodic-task workload bound.
    #[test]
    fn sporadic_set_within_workload_bound(
        params in proptest::collection::vec((1u64..6, 2u64..12), 2..5),
        raws in proptest::collection::vec(proptest::collection::vec((0u64..20, 1u64..10), 1..25), 5),
        len_factor in 1u64..4,
    ) {
        // scale periods so utilizations are moderate and check the LL test
        let servers: Vec<(u64, u64)> = params.iter().map(|&(c, k)| (c, c * k)).collect();
        let n = servers.len() as f64;
        let u: f64 = servers.iter().map(|&(c, t)| c as f64 / t as f64).sum();
        prop_assume!(u <= n * (2f64.powf(1.0 / n) - 1.0));
        let mut s = Scheduler::new();
        let mut all = Vec::new();
        let mut ids = Vec::new();
        for (i, &(c, t)) in servers.iter().enumerate() {
            let v = s.add_server(format!("v{i}"), sporadic(c, t, 4), ThreadPolicy::FixedPriority).unwrap();
            let th = s.add_thread("w", v, 1).unwrap();
            all.extend(arrivals(th, &raws[i], None));
            ids.push(v);
        }
        let horizon = 30 * servers.iter().map(|s| s.1).max().unwrap_or(1);
        let segs = run(&mut s, all, &[], horizon, &mut |sch, now| check_sporadic_invariants(sch, now));
        for (i, &(c, t)) in servers.iter().enumerate() {
            let l = len_factor * t;
            let got = max_window(&segs, ids[i], l);
            prop_assert!(got <= workload_bound(c, t, l), "server {} ({}, {}) consumed {} in {}", i, c, t, got, l);
        }
    }

    /// PIBS (QUEST-VCPU Alg. 7-10): budget never above C_max; eligibility
    /// never moves backwards; an I/O VCPU alone on its CPU consumes at most
    /// (2 - U) * U * W in any window W = C_max / U (the worst case behind
    /// QUEST-VCPU Eq. 3).
    #[test]
    fn pibs_alone_bounds(
        num in 1u64..5, den_extra in 0u64..6, main_period in 4u64..40,
        raw in proptest::collection::vec((0u64..40, 1u64..20), 1..40),
    ) {
        let den = num + den_extra;
        let u = Utilization::new(num, den).unwrap();
        // periods that make C_max integral keep the bound exact
        let main_period = main_period * den;
        let mut s = Scheduler::new();
        let v = s.add_server("io", Server::Pibs(Pibs::new(u, Inherit::Paper).unwrap()), ThreadPolicy::FixedPriority).unwrap();
        let th = s.add_thread("bh", v, 1).unwrap();
        let mut last_e = Nanos::ZERO;
        let c_max = u.mul_floor(Nanos(main_period));
        let segs = run(&mut s, arrivals(th, &raw, Some(main_period)), &[], 60 * main_period, &mut |sch, _| {
            let p = sch.pibs(v).unwrap();
            assert!(p.budget() <= c_max, "budget above C_max");
            assert!(p.eligibility() >= last_e, "eligibility moved backwards");
            last_e = p.eligibility();
        });
        let w = main_period; // W = C_max / U = T
        // (2 - U) * U * W = (2 - num/den) * c_max, exact in integers:
        let bound = (2 * den - num) * c_max.as_ns() / den;
        prop_assert!(max_window(&segs, v, w) <= bound, "consumed {} > (2-U)U W = {}", max_window(&segs, v, w), bound);
    }

    /// PIBS eligibility advances by exactly ceil(used / U) at each depletion
    /// or block (Alg. 7 line 5), checked hook by hook.
    #[test]
    fn pibs_eligibility_advance_is_exact(
        num in 1u64..5, den_extra in 0u64..6, period in 10u64..100,
        runs in proptest::collection::vec((1u64..30, any::<bool>(), 0u64..50), 1..30),
    ) {
        let u = Utilization::new(num, num + den_extra).unwrap();
        let mut p = Pibs::new(u, Inherit::Paper).unwrap();
        let mut now = Nanos(0);
        for (used, block, gap) in runs {
            now += Nanos(gap);
            p.unblock(now, irqlab_core::UnblockCtx { was_active: false, running: false, inherit_period: Some(Nanos(period)) });
            p.update_budget(now);
            if p.budget().is_zero() {
                // wait for the replenishment
                let Some(t) = p.next_event(now) else { continue };
                now = t;
                p.update_budget(now);
            }
            let used = Nanos(used).min(p.budget());
            let e0 = p.eligibility();
            now += used;
            p.end_timeslice(now, used, !block);
            if block || p.budget().is_zero() {
                prop_assert_eq!(p.eligibility(), e0 + u.div_ceil(used));
            } else {
                prop_assert_eq!(p.eligibility(), e0);
                // finish the job: block
                let e1 = p.eligibility();
                p.end_timeslice(now, Nanos(0), false);
                prop_assert_eq!(p.eligibility(), e1 + u.div_ceil(used));
            }
        }
    }
}
