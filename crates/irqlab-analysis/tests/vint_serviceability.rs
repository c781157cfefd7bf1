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
//! The bounds are also checked on a second run of each system with random
//! first releases and arrivals; there, with deferrable pseudo-VCPUs, the
//! paper's Eq. 7 is not a bound (last test below), and the check uses
//! `vint::virt_bound_vint`.
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
//!    periods down for speed (tests/vint_bounds.rs uses 10-20 ms tasks)
//!    breaks this: jobs of 1-2 ms fit in the budget, a VCPU runs dry only
//!    when its interrupts' own work adds up, and whether a system shows a
//!    miss becomes a matter of luck (with 10-20 ms tasks and Fig. 4's
//!    interrupts, VCPUs without a single late flow appear).
//! 2. The blackout must exceed the deadline. With Fig. 4's inter-arrival
//!    times (at most k + 0.5 <= 2.5 ms) an arrival of each virtual
//!    interrupt falls into the first 2.5 ms of every blackout of at least
//!    6.7 ms and waits at least 4.2 ms: every VCPU has a late flow,
//!    deterministically. With vINT the same flows run on their
//!    pseudo-VCPUs (budget for one instance per inter-arrival time, above
//!    every VCPU) and are handled in tens to hundreds of microseconds.
//!
//! Outside this regime the simulated gap is narrower than the analytic
//! one, by design of the analysis: with Fig. 5's and Fig. 6's inter-arrival
//! times of 5-10 ms and more, a miss needs the worst phasing of Eq. 8 (an
//! arrival just as the budget runs out, and the next budget as late as
//! possible), which the simulated runs rarely meet. The Fig. 6 test below
//! pins both ends (the gap closes with 2 ms VCPU periods, in analysis and
//! simulation; at 10 ms the simulation shows most sets missing without
//! vINT); `bench/bench_vint_sim.py` prints every point of Figures 4-6 and
//! docs/reproductions.md the measured figures.
//!
//! Serviceability is per interrupt set, as in the paper: a set is
//! serviceable when every instance of every flow is. The fraction of
//! on-time instances without vINT stays high (90-95 %: the VCPU runs dry
//! only part of the time), so comparing per-flow fractions would hide the
//! gap.

mod vint_common;

use irqlab_analysis::gen::{Rng, TableII};
use irqlab_analysis::vint::Replenish;
use proptest::prelude::*;
use vint_common::{check, Phasing, SchemeCheck, MS};

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

/// The four schemes on one PCPU, with the checks that hold everywhere.
/// From the synchronous release (returned): no simulated time above the
/// paper's Eq. 4, Eq. 5 + 7 or Eq. 5 + 8 where it calls the set safe, and a
/// set its test calls serviceable is served. From one random phasing of
/// the tasks and interrupts: the same with the bounds valid for every
/// phasing (`vint::virt_bound_vint`: the paper's Eq. 7 is not one with
/// deferrable pseudo-VCPUs, see `deferrable_pseudo_vcpu_straddling_a_boundary`).
fn schemes(params: &TableII, rng: &mut Rng) -> Vec<SchemeCheck> {
    let p = params.generate(rng);
    let random = Phasing::Random(rng.next_u64());
    SCHEMES
        .iter()
        .map(|&(name, r, vint)| {
            let c = check(&p, r, vint, DURATION, Phasing::Synchronous);
            assert!(c.violations.is_empty(), "{name}: {:?}", c.violations);
            assert!(
                c.paper_violations.is_empty(),
                "{name}: {:?}",
                c.paper_violations
            );
            assert!(
                !c.analysis.serviceable || c.sim_serviceable,
                "{name}: serviceable by Eq. 5-8 but late in simulation ({:.2} x T)",
                c.worst_ratio
            );
            let d = check(&p, r, vint, DURATION, random);
            assert!(
                d.violations.is_empty(),
                "{name}, {random:?}: {:?}",
                d.violations
            );
            assert!(
                !d.analysis.serviceable_safe || d.sim_serviceable,
                "{name}, {random:?}: serviceable but late in simulation ({:.2} x T)",
                d.worst_ratio
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
            // a wait of at least 4.2 ms for an inter-arrival time of at most 2.5
            prop_assert!(c.worst_ratio > 1.6, "{}: worst {:.2} x T", name, c.worst_ratio);
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

/// VINT Eq. 7 is not a bound with deferrable pseudo-VCPUs: a hand-checked
/// schedule where the simulator exceeds Eq. 5 + 7 and stays within
/// `vint::virt_bound_vint` (found by the random phasings of the bench,
/// which hit it about once in a thousand flows at Fig. 4's shortest
/// inter-arrival times; the synchronous release never does, as arrivals
/// then fall on the pseudo-VCPU's boundaries).
///
/// One VCPU; physical interrupt A (ISR 10 us, every 1 ms from 900 us,
/// priority 2) injects a virtual interrupt (ISR 10 + DSR 40 us) with a
/// deferrable pseudo-VCPU of 50 us / 1 ms (Eq. 1), boundaries at whole
/// milliseconds; physical interrupt H (ISR 100 us, every 1.09 ms from 905
/// us, priority 1) has no virtual interrupt. Eq. 5 for A: 10 us. Eq. 7: 50
/// + 10 (A) + 100 (H) = 160 us. Eq. 5 + 7 = 170 us, within 1 ms.
///
/// A at 900: ISR [900, 910), H's ISR [910, 1010), the pseudo-VCPU runs
/// [1010, 1060) -- all of it after the boundary at 1000: handled in 160
/// us, but the budget of [1000, 2000) is gone. A at 1900: ISR [1900,
/// 1910), injected (the counter refilled at 1000), no budget until 2000;
/// H's ISR [1995, 2095); the pseudo-VCPU runs [2095, 2145): handled in 245
/// us > 170. From then on each instance waits for its boundary: 150 us.
/// The safe bound, Eq. 5 + 2 x Eq. 7 = 330 us, holds. With sporadic
/// replenishment the same arrivals stay within Eq. 5 + 7.
#[test]
fn deferrable_pseudo_vcpu_straddling_a_boundary() {
    use irqlab_analysis::vint::{flow_bound, pseudo_vcpus, Pcpu, PhysIrq, Task, Vcpu, VirtIrq};
    use irqlab_sim::config::DeviceKind;
    const US: u64 = 1_000;
    let p = Pcpu {
        vcpus: vec![Vcpu {
            budget: 0,
            period: 10 * MS,
            prio: 1,
        }],
        tasks: vec![Task {
            wcet: 2 * MS,
            period: 10 * MS,
            prio: 1,
            vcpu: 0,
        }],
        phys: vec![
            PhysIrq {
                wcet: 10 * US,
                period: 1_000 * US,
                prio: 2,
                jitter: 0,
            },
            PhysIrq {
                wcet: 100 * US,
                period: 1_090 * US,
                prio: 1,
                jitter: 0,
            },
        ],
        virt: vec![VirtIrq {
            isr: 10 * US,
            dsr: 40 * US,
            dsr_prio: 5,
            period: 1_000 * US,
            prio: 1,
            vcpu: 0,
            phys: 0,
            managed: true,
        }],
    };
    let pseudo = pseudo_vcpus(&p, 1, 1);
    assert_eq!(pseudo[0].budget, 50 * US);
    let budgets = [5 * MS];
    let run = |r: Replenish| {
        let mut cfg =
            vint_common::to_sim(&p, &budgets, r, true, 1, 4_500 * US, Phasing::Synchronous);
        for (d, at) in cfg.devices.iter_mut().zip([900 * US, 905 * US]) {
            if let DeviceKind::Generic { start, .. } = &mut d.kind {
                *start = at;
            }
        }
        irqlab_sim::simulate(cfg).expect("valid config").0.virqs[0].clone()
    };
    let ds = Replenish::Deferrable;
    assert_eq!(
        flow_bound(&p, 0, &budgets, &pseudo, ds, false),
        Some(170 * US)
    );
    assert_eq!(
        flow_bound(&p, 0, &budgets, &pseudo, ds, true),
        Some(330 * US)
    );
    let v = run(ds);
    assert_eq!((v.arrivals, v.handled, v.serviceable), (4, 4, 4));
    assert_eq!(v.handling.max, Some(245 * US));
    assert_eq!(v.handling.min, Some(150 * US));
    let ss = Replenish::Sporadic;
    let bound = flow_bound(&p, 0, &budgets, &pseudo, ss, false);
    assert_eq!(bound, flow_bound(&p, 0, &budgets, &pseudo, ss, true));
    let v = run(ss);
    assert!(v.handling.max <= bound, "{:?} > {bound:?}", v.handling.max);
}
