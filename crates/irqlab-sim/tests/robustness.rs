//! Robustness: any configuration, valid or not, gives metrics or an error
//! naming the field -- never a panic or a hang (docs/simulator.md). Random
//! systems mix every server policy, device kind, interrupt path and program
//! phase, with references that may point nowhere (the generators are in
//! `irqlab_sim::testgen`, shared with the fuzz target `config_extreme`).

use irqlab_sim::simulate;
use irqlab_sim::testgen::config;
use proptest::prelude::*;

/// Every configuration ends in metrics or a clear error; the generator
/// covers both valid systems (which run) and invalid ones.
#[test]
fn never_panics() {
    use proptest::test_runner::{Config, TestRunner};
    let mut runner = TestRunner::new(Config {
        cases: 600,
        ..Config::default()
    });
    let ok = std::cell::Cell::new(0u32);
    let err = std::cell::Cell::new(0u32);
    runner
        .run(&config(), |cfg| {
            match simulate(cfg) {
                Ok((m, _)) => {
                    prop_assert!(m.duration_ns > 0);
                    ok.set(ok.get() + 1);
                }
                Err(e) => {
                    prop_assert!(e.to_string().contains(':'), "error names its field: {e}");
                    err.set(err.get() + 1);
                    if std::env::var("ROBUST_DEBUG").is_ok() {
                        eprintln!("rejected: {e}");
                    }
                }
            }
            Ok(())
        })
        .unwrap();
    eprintln!("robustness: {} ran, {} rejected", ok.get(), err.get());
    assert!(
        ok.get() >= 30 && err.get() >= 30,
        "ran {} rejected {}",
        ok.get(),
        err.get()
    );
}
