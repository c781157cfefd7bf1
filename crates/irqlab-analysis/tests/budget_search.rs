//! The budget search equals VINT §VII-A's decrement-by-1-us loop on random
//! systems from the Table II generator (both replenishment policies, with
//! and without vINT), and the sweep is deterministic and thread-count
//! independent.

use irqlab_analysis::gen::{Rng, TableII};
use irqlab_analysis::sweep::sweep;
use irqlab_analysis::vint::{budget_search, budget_search_linear, pseudo_vcpus, Replenish};
use proptest::prelude::*;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(40))]
    #[test]
    fn binary_search_equals_the_linear_loop(seed in any::<u64>(), short in any::<bool>(), ds in any::<bool>(), vint in any::<bool>()) {
        // a 2 ms VCPU period keeps the 1 us linear loop affordable in a test
        let mut params = TableII { vcpu_period: 2_000_000, ..TableII::default() };
        if short {
            params.irq_interarrival = (600_000, 1_100_000);
        }
        let mut p = params.generate(&mut Rng::new(seed));
        for v in &mut p.virt {
            v.managed = vint;
        }
        let pseudo = pseudo_vcpus(&p, 1, 1);
        let r = if ds { Replenish::Deferrable } else { Replenish::Sporadic };
        prop_assert_eq!(budget_search(&p, &pseudo, r, 1_000), budget_search_linear(&p, &pseudo, r, 1_000));
    }
}

#[test]
fn sweep_is_deterministic_and_thread_independent() {
    let p = TableII::default();
    let a = sweep(&p, 4, 60, 11, (1, 1), 1);
    let b = sweep(&p, 4, 60, 11, (1, 1), 2);
    let c = sweep(&p, 4, 60, 11, (1, 1), 3);
    assert_eq!(a, b);
    assert_eq!(a, c);
    assert_eq!(a.sets, 60);
}
