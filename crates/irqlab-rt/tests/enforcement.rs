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
    let share = r.server("hog").expect("server report").share;
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
