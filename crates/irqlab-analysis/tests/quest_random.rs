//! Issue 35's random one-CPU quest systems as a cross-check: 2-3 sporadic
//! Main VCPUs at rate-monotonic priority, 1-2 PIBS I/O VCPUs, periodic
//! tasks that compute and some that read a disk through an I/O VCPU, a
//! periodic generic interrupt whose bottom halves run on an I/O VCPU
//! (`examples/tightness.rs` prints the tightness figures on the same
//! systems). Theory: no simulated response of a task above a bound the
//! analysis calls within its deadline (S1-S3, J1, P1-P3 all in play), and
//! a fair share of the tasks bounded.

use irqlab_analysis::system::model_bounds;
use irqlab_sim::simulate;

mod quest_gen;
use quest_gen::{random, Rng};

#[test]
fn random_quest_systems_within_bounds() {
    let mut r = Rng(0x9e37_79b9_7f4a_7c15);
    let (mut total, mut bounded) = (0, 0);
    for case in 0..40 {
        let cfg = random(&mut r);
        let b = model_bounds(&cfg).expect("valid machine");
        for seed in 1..=3 {
            let mut c = cfg.clone();
            c.seed = seed;
            let (m, _) = simulate(c).expect("runs");
            for t in &b.tasks {
                total += 1;
                let Some(bound) = t.response.filter(|_| t.schedulable) else {
                    continue;
                };
                bounded += 1;
                let sim = m.tasks.iter().find(|x| x.name == t.name).expect("task");
                let max = sim.response.max.unwrap_or(0);
                assert!(
                    max <= bound && sim.deadline_misses == 0,
                    "case {case} seed {seed} task {} ({}): simulated {max} > bound {bound}\n{cfg:#?}",
                    t.name,
                    t.equation
                );
            }
        }
    }
    assert!(bounded * 3 >= total, "only {bounded} of {total} bounded");
}
