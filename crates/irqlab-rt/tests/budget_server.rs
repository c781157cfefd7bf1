//! `Runtime::budget_server`: deferrable and sporadic servers at an explicit
//! rank (VINT §III / §V-A). A CPU-bound thread in a 2 ms / 10 ms
//! deferrable server gets at most its budget per period; of two hogs on one
//! CPU, the one at the more urgent rank is not starved by a full-budget
//! server with a shorter period.

mod common;

use std::time::Duration;

use irqlab_core::{Nanos, ServerPriority};
use irqlab_rt::BudgetPolicy;

#[test]
fn deferrable_server_is_enforced_and_ranks_order_servers() {
    let _g = common::serial();
    let Some(mut rt) = common::fifo_runtime() else {
        return;
    };
    // Rank 1 is above every rate-monotonic server, so "urgent" (longer
    // period) precedes "rm" (shorter period) in the core's order.
    let urgent = rt
        .budget_server(
            "urgent",
            BudgetPolicy::Deferrable,
            Nanos::from_ms(2),
            Nanos::from_ms(10),
            ServerPriority::Rank(1),
            None,
        )
        .expect("server");
    let rm = rt
        .budget_server(
            "rm",
            BudgetPolicy::Sporadic,
            Nanos::from_ms(5),
            Nanos::from_ms(5),
            ServerPriority::RateMonotonic,
            None,
        )
        .expect("server");
    for (s, n) in [(urgent, "urgent-spin"), (rm, "rm-spin")] {
        rt.spawn(s, n, 0, |ctx| {
            while ctx.running() {
                std::hint::spin_loop();
            }
        })
        .expect("spawn");
    }
    rt.start().expect("start");
    std::thread::sleep(Duration::from_millis(500));
    let r = rt.stop();
    let u = r.server("urgent").expect("urgent");
    let m = r.server("rm").expect("rm");
    eprintln!("urgent share {:.3}, rm share {:.3}", u.share, m.share);
    // At most one budget per started period (plus enforcement overrun).
    let periods = r.duration_ns.div_ceil(10_000_000) + 1;
    assert!(u.cpu_time_ns <= periods * 2_500_000, "{u:?}");
    // The RM server has a full budget and the shorter period: at
    // rate-monotonic priority it would starve "urgent"; at rank 1 "urgent"
    // comes first and gets most of its 20 %.
    assert!(u.share > 0.15, "{u:?}");
    assert!(m.share > 0.5, "{m:?}");
}

#[test]
fn budget_server_rejects_a_budget_above_its_period() {
    let mut rt = irqlab_rt::Runtime::new(irqlab_rt::Config::default()).expect("runtime");
    for p in [BudgetPolicy::Sporadic, BudgetPolicy::Deferrable] {
        let e = rt
            .budget_server(
                "x",
                p,
                Nanos::from_ms(11),
                Nanos::from_ms(10),
                ServerPriority::Rank(1),
                None,
            )
            .expect_err("rejected");
        let m = e.to_string();
        assert!(
            m.contains("server[x].budget") && m.contains("period"),
            "{m}"
        );
    }
}
