//! The serviceability gap of VINT Figures 4-6 in simulation (issue 8,
//! part 5): on Table II systems that the analysis calls serviceable with
//! vINT, the simulator serves every flow within its minimum inter-arrival
//! time (Definition 3) and never exceeds the Eq. 5 + 7 bound; without
//! vINT, where the analysis (Eq. 5 + 8) says no, the simulation shows the
//! flows that miss. On every scheme, no simulated task response or
//! handling time exceeds a bound the analysis calls safe.
//!
//! Parameters: VINT Table II for one PCPU as it stands (3 VCPUs of 10 ms,
//! 6 physical interrupts, 2 virtual interrupts per VCPU, 3 tasks per VCPU
//! of 100-500 ms at 10 %), the VCPU budget of the §VII-A search, each
//! scheme simulated for 200 ms (20 VCPU periods) from the synchronous
//! release at 0 (the critical instant of the tasks and ISRs), interrupts
//! strictly periodic at their minimum inter-arrival times. Only the
//! interrupts' inter-arrival times and the VCPU period move, as in the
//! figures: Fig. 4's short [k, k + 0.5] ms, and Fig. 6's VCPU periods.
//!
//! Why this regime. Eq. 8 charges a flow without vINT the VCPU's budget
//! gap `T - C` (twice, once `W + C > T`): it is a worst case, and a
//! simulation only shows a miss when the VCPU really is out of budget (or
//! held off by higher VCPUs) while an interrupt waits, and the wait is
//! longer than the interrupt's inter-arrival time. Two conditions:
//!
//! 1. The VCPU's backlog must exceed its budget. Table II's tasks do: 10 %
//!    of periods of at least 100 ms is at least 10 ms of work per VCPU,
//!    all released at 0, against a budget below `T / 3` = 3.3 ms (three
//!    VCPUs fit Eq. 3 on the PCPU). Each VCPU runs dry in its first period
//!    and stays dry for at least `T - C` >= 6.7 ms. Scaling the task
//!    periods down with the VCPU period (tests/vint_bounds.rs uses 10-20 ms
//!    tasks on 2 ms VCPUs for speed) breaks this: the jobs then fit in the
//!    budget, the VCPU never runs dry, every flow is served at once, and
//!    the simulation shows no gap although the analysis reports 0 %.
//! 2. The blackout must exceed the deadline. With Fig. 4's inter-arrival
//!    times (at most k + 0.5 <= 2.5 ms) at least two arrivals of each
//!    virtual interrupt fall into every blackout of at least 6.7 ms, and
//!    the first one waits at least 6.7 - 2.5 > 2.5 ms: every VCPU has a
//!    late flow, deterministically. With vINT the same flows run on their
//!    pseudo-VCPUs (budget for one instance per inter-arrival time, above
//!    every VCPU) and are handled in tens to hundreds of microseconds.
//!
//! Outside this regime the simulated gap is narrower than the analytic
//! one, by design of the analysis: with Fig. 5's and Fig. 6's inter-arrival
//! times of 5-10 ms and more, a miss needs the worst phasing of Eq. 8 (an
//! arrival just as the budget runs out, and the next budget as late as
//! possible), which the synchronous runs rarely meet. The Fig. 6 test below
//! pins both ends (the gap closes with 2 ms VCPU periods, in analysis and
//! simulation; at 10 ms the simulation shows most sets missing without
//! vINT); `bench/bench_vint_sim.py` prints every point of Figures 4-6 and
//! docs/reproductions.md the measured figures.
//!
//! Serviceability is per interrupt set, as in the paper: a set is
//! serviceable when every instance of every flow is. The fraction of
//! on-time instances without vINT stays high (about 90 %: the VCPU runs
//! dry only part of the time), so comparing per-flow fractions would hide
//! the gap.

mod vint_common;

use irqlab_analysis::gen::{Rng, TableII};
use irqlab_analysis::vint::Replenish;
use proptest::prelude::*;
use vint_common::{check, SchemeCheck, MS};

const DURATION: u64 = 200 * MS;

/// DSbase, SSbase, DSvINT, SSvINT (VINT §VII-A).
const SCHEMES: [(&str, Replenish, bool); 4] = [
    ("DSbase", Replenish::Deferrable, false),
    ("SSbase", Replenish::Sporadic, false),
    ("DSvINT", Replenish::Deferrable, true),
    ("SSvINT", Replenish::Sporadic, true),
];

/// Table II with Fig. 4's inter-arrival times [k, k + 0.5] ms.
fn fig4(k_tenths: u64) -> TableII {
    TableII {
        irq_interarrival: (k_tenths * MS / 10, (k_tenths + 5) * MS / 10),
        ..TableII::default()
    }
}

/// The four schemes on one PCPU, with the checks that hold everywhere:
/// no simulated time above a bound the analysis calls safe, and a set the
/// analysis calls serviceable is served in simulation.
fn schemes(params: &TableII, rng: &mut Rng) -> Vec<SchemeCheck> {
    let p = params.generate(rng);
    SCHEMES
        .iter()
        .map(|&(name, r, vint)| {
            let c = check(&p, r, vint, DURATION);
            assert!(c.violations.is_empty(), "{name}: {:?}", c.violations);
            assert!(
                !c.analysis.serviceable || c.sim_serviceable,
                "{name}: serviceable by Eq. 5-8 but late in simulation ({:.2} x T)",
                c.worst_ratio
            );
            c
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(12))]
    /// Fig. 4 regime, one random PCPU per case: without vINT the analysis
    /// says "not serviceable" and the simulation shows a late flow on
    /// every VCPU (conditions 1 and 2 above); whatever the analysis says
    /// serviceable (with vINT) the simulation serves.
    #[test]
    fn fig4_regime_gap_per_system(seed in any::<u64>(), k_tenths in 5u64..=20) {
        let c = schemes(&fig4(k_tenths), &mut Rng::new(seed));
        for (&(name, _, _), c) in SCHEMES.iter().zip(&c).take(2) {
            prop_assert!(!c.analysis.serviceable, "{}: Eq. 8 serviceable", name);
            prop_assert!(!c.sim_serviceable, "{}: served in simulation", name);
            prop_assert_eq!(c.late_vcpus, 3, "{}: VCPUs with a late flow", name);
            prop_assert!(c.worst_ratio > 2.0, "{}: worst {:.2} x T", name, c.worst_ratio);
        }
    }
}

/// Fig. 4 at four of its points (seed 4, as `vint-fig4`), 6 PCPUs each:
/// the paper's 0 % without vINT and more than 99 % with vINT for k >= 0.8
/// (95 % here: 6 systems a point), in analysis and in simulation alike.
#[test]
fn fig4_points_analysis_and_simulation_agree() {
    for (i, k) in [6u64, 10, 15, 20].into_iter().enumerate() {
        let params = fig4(k);
        let mut served = [[0u32; 2]; 4]; // [scheme][analysis, simulation]
        let n = 6;
        for s in 0..n {
            let c = schemes(&params, &mut Rng::stream(4 + i as u64, s));
            for (x, c) in served.iter_mut().zip(&c) {
                x[0] += c.analysis.serviceable as u32;
                x[1] += c.sim_serviceable as u32;
            }
        }
        let at = format!("k = {} ms: {served:?}", k as f64 / 10.0);
        assert_eq!(served[0], [0, 0], "DSbase, {at}");
        assert_eq!(served[1], [0, 0], "SSbase, {at}");
        for x in &served[2..] {
            assert!(x[0] * 100 >= 95 * n as u32, "vINT analysis, {at}");
            assert!(x[1] >= x[0], "vINT simulation, {at}");
        }
    }
}

/// Fig. 6 (Table II's [5, 10] ms inter-arrival times, seed 6): with 2 ms
/// VCPU periods the gap closes -- the analysis calls the sets serviceable
/// without vINT too, and the simulation serves them (the budget gap, about
/// 1.3 ms, is shorter than any inter-arrival time); with Table II's 10 ms
/// the analysis gives 0 % without vINT and the simulation shows most sets
/// missing (blackouts of 6.7 ms and more against 5-10 ms: whether a set
/// misses depends on where its arrivals fall), while vINT serves all.
#[test]
fn fig6_gap_opens_with_the_vcpu_period() {
    let n = 12u32;
    for (i, period) in [2 * MS, 10 * MS].into_iter().enumerate() {
        let params = TableII {
            vcpu_period: period,
            ..TableII::default()
        };
        let mut served = [[0u32; 2]; 4];
        for s in 0..n {
            let c = schemes(&params, &mut Rng::stream(6 + i as u64, s as u64));
            for (x, c) in served.iter_mut().zip(&c) {
                x[0] += c.analysis.serviceable as u32;
                x[1] += c.sim_serviceable as u32;
            }
        }
        let at = format!("T = {} ms: {served:?}", period / MS);
        for x in &served[2..] {
            assert_eq!(*x, [n, n], "vINT, {at}");
        }
        for x in &served[..2] {
            if period == 2 * MS {
                assert_eq!(*x, [n, n], "base, {at}");
            } else {
                assert_eq!(x[0], 0, "base analysis, {at}");
                assert!(x[1] * 4 <= n, "base simulation, {at}");
            }
        }
    }
}
