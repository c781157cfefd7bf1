//! The fixed-priority RTA (`rta::analyse`) against schedules: the issue-14
//! example by hand, an exhaustive search over every jitter placement (and
//! every phase of the higher-priority tasks) on small task sets, and the
//! critical instant, where the bound must be reached exactly.
//!
//! Theory checked: fully preemptive fixed priorities on one CPU, tasks with
//! period `T`, WCET `C` and release jitter `J <= T` (job `k` arrives in
//! `[phi + k T, phi + k T + J]`), jobs of a task served in arrival order;
//! no job's response (from its arrival, or from its nominal release)
//! exceeds the bound, and the synchronous release with the worst jitter
//! (every task arriving at 0, later jobs as early as their jitter allows)
//! reaches it. Removing a term (`rta::Terms`) must make the search find a
//! schedule above the bound: `each_term_is_needed`.

use irqlab_analysis::rta::{analyse, analyse_terms, Analysed, Interferer, Origin, Rta, Terms};
use proptest::prelude::*;

/// `(C, T, J)`, highest priority first.
type Set = Vec<(u64, u64, u64)>;
/// Per task, its jobs' (arrival, nominal release).
type Arrivals = [Vec<(u64, u64)>];
/// What to do with each arrival pattern.
type Visit<'a> = &'a mut dyn FnMut(&Arrivals);

/// Unit-step preemptive FP schedule of `arrivals[k]` = (arrival, nominal
/// release) per task (sorted); returns, for the last task, the largest
/// response from the arrival and from the nominal release.
fn schedule(set: &Set, arrivals: &Arrivals) -> (u64, u64) {
    let n = set.len();
    let mut next = vec![0usize; n]; // next job not yet arrived
    let mut queue: Vec<std::collections::VecDeque<(u64, u64, u64)>> = vec![Default::default(); n];
    let (mut worst_a, mut worst_r) = (0, 0);
    let mut t = 0u64;
    loop {
        for k in 0..n {
            while next[k] < arrivals[k].len() && arrivals[k][next[k]].0 <= t {
                let (a, r) = arrivals[k][next[k]];
                queue[k].push_back((a, r, set[k].0));
                next[k] += 1;
            }
        }
        match (0..n).find(|&k| !queue[k].is_empty()) {
            Some(k) => {
                let job = queue[k].front_mut().expect("non-empty");
                job.2 -= 1;
                t += 1;
                if job.2 == 0 {
                    let (a, r, _) = queue[k].pop_front().expect("non-empty");
                    if k == n - 1 {
                        worst_a = worst_a.max(t - a);
                        worst_r = worst_r.max(t - r);
                    }
                }
            }
            None => {
                if (0..n).all(|k| next[k] == arrivals[k].len()) {
                    return (worst_a, worst_r);
                }
                t = (0..n)
                    .filter(|&k| next[k] < arrivals[k].len())
                    .map(|k| arrivals[k][next[k]].0)
                    .min()
                    .expect("a job left");
            }
        }
    }
}

/// Every arrival sequence with nominal releases in `[0, horizon)`: the
/// last (analysed) task at phase 0, the others at every phase in
/// `[0, T)`, every job at every jitter in `[0, J]`; calls `f` on each.
fn for_each_pattern(set: &Set, horizon: u64, f: Visit) {
    fn task(set: &Set, horizon: u64, k: usize, acc: &mut Vec<Vec<(u64, u64)>>, f: Visit) {
        if k == set.len() {
            f(acc);
            return;
        }
        let (_, t, j) = set[k];
        let phases = if k + 1 == set.len() { 1 } else { t };
        for phi in 0..phases {
            let nominal: Vec<u64> = (0..)
                .map(|q| phi + q * t)
                .take_while(|&r| r < horizon)
                .collect();
            // every jitter vector, as a mixed-radix counter
            let mut jit = vec![0u64; nominal.len()];
            loop {
                acc.push(
                    nominal
                        .iter()
                        .zip(&jit)
                        .map(|(&r, &x)| (r + x, r))
                        .collect(),
                );
                task(set, horizon, k + 1, acc, f);
                acc.pop();
                let mut i = 0;
                while i < jit.len() && jit[i] == j {
                    jit[i] = 0;
                    i += 1;
                }
                if i == jit.len() {
                    break;
                }
                jit[i] += 1;
            }
        }
    }
    task(set, horizon, 0, &mut Vec::new(), f);
}

/// How many patterns `for_each_pattern` visits.
fn patterns(set: &Set, horizon: u64) -> u64 {
    let n = set.len();
    set.iter()
        .enumerate()
        .map(|(k, &(_, t, j))| {
            let phases = if k + 1 == n { 1 } else { t };
            (0..phases)
                .map(|phi| (j + 1).pow(horizon.saturating_sub(phi).div_ceil(t) as u32))
                .sum::<u64>()
        })
        .product()
}

/// The largest simulated responses (from arrival, from release) of the
/// last task of `set` over every pattern.
fn exhaustive(set: &Set, horizon: u64) -> (u64, u64) {
    let mut worst = (0, 0);
    for_each_pattern(set, horizon, &mut |arr| {
        let (a, r) = schedule(set, arr);
        worst = (worst.0.max(a), worst.1.max(r));
    });
    worst
}

/// The critical instant: every task arrives at 0 with its worst jitter
/// (nominal release at `-J`) and its later jobs as early as they can
/// (`q T - J`), until `len`. Times shifted by the largest jitter so they
/// stay non-negative.
fn critical(set: &Set, len: u64) -> (u64, u64) {
    let s = set.iter().map(|x| x.2).max().unwrap_or(0);
    let arr: Vec<Vec<(u64, u64)>> = set
        .iter()
        .map(|&(_, t, j)| {
            (0..(len + s).div_ceil(t) + 1)
                .map(|q| {
                    let nominal = s + q * t - j;
                    (if q == 0 { s } else { nominal }, nominal)
                })
                .collect()
        })
        .collect();
    schedule(set, &arr)
}

fn rta(set: &Set, origin: Origin, terms: Terms, limit: u64) -> Option<Rta> {
    let (me, hp) = set.split_last()?;
    let hp: Vec<Interferer> = hp
        .iter()
        .map(|&(c, t, j)| Interferer::new(c, t, j))
        .collect();
    analyse_terms(Analysed::new(me.0, me.1, me.2), &hp, origin, limit, terms).ok()
}

fn bound(set: &Set, origin: Origin, terms: Terms) -> Option<u64> {
    rta(set, origin, terms, 1 << 20).map(|r| r.response)
}

fn bound_within(set: &Set, limit: u64) -> Option<u64> {
    rta(set, Origin::Arrival, Terms::ALL, limit).map(|r| r.response)
}

/// The issue-14 example: 551 from the arrival (the second job may arrive
/// 334 after the first and wait behind it), 741 from the nominal release;
/// a single-job analysis says 479, and the critical-instant schedule shows
/// 551 is reached, so 479 is unsafe.
#[test]
fn issue_example_551() {
    let set: Set = vec![(26, 75, 0), (10, 121, 0), (21, 362, 178), (215, 596, 262)];
    let full = analyse(
        Analysed::new(215, 596, 262),
        &[
            Interferer::new(26, 75, 0),
            Interferer::new(10, 121, 0),
            Interferer::new(21, 362, 178),
        ],
        Origin::Arrival,
        10_000,
    )
    .unwrap();
    assert_eq!((full.response, full.worst_job, full.jobs), (551, 1, 2));
    assert_eq!(bound(&set, Origin::Release, Terms::ALL), Some(741));
    let one_job = Terms {
        later_jobs: false,
        ..Terms::ALL
    };
    assert_eq!(bound(&set, Origin::Arrival, one_job), Some(479));
    // deadline 501: not schedulable (the old analysis said 479)
    assert!(bound_within(&set, 501).is_none());
    assert_eq!(critical(&set, full.busy_period), (551, 741));
}

fn small_set() -> impl Strategy<Value = Set> {
    proptest::collection::vec((1u64..4, 3u64..9, 0u64..3), 2..4).prop_map(|v| {
        v.into_iter()
            .map(|(c, t, j)| (c.min(t), t, j.min(t)))
            .collect()
    })
}

const HORIZON: u64 = 12;
const MAX_PATTERNS: u64 = 20_000;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    /// No schedule of the search exceeds the bound (either origin); the
    /// critical instant reaches it.
    #[test]
    fn bound_is_safe_and_reached(set in small_set()) {
        prop_assume!(patterns(&set, HORIZON) <= MAX_PATTERNS);
        let full = rta(&set, Origin::Arrival, Terms::ALL, 1 << 20);
        prop_assume!(full.is_some());
        let full = full.unwrap();
        let ba = full.response;
        let br = bound(&set, Origin::Release, Terms::ALL).unwrap();
        let (wa, wr) = exhaustive(&set, HORIZON);
        prop_assert!(wa <= ba, "from arrival: simulated {wa} > bound {ba}");
        prop_assert!(wr <= br, "from release: simulated {wr} > bound {br}");
        let (ca, cr) = critical(&set, full.busy_period);
        prop_assert_eq!((ca, cr), (ba, br), "the critical instant reaches the bound");
    }
}

/// Each term of the analysis is needed: on a fixed batch of small sets
/// (a deterministic generator), the full analysis is never exceeded by the
/// exhaustive search and each analysis without one term is exceeded at
/// least once (so the tests above would fail without it).
#[test]
fn each_term_is_needed() {
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    let mut rnd = |n: u64| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed % n
    };
    let variants = [
        (
            "own jitter",
            Terms {
                own_jitter: false,
                ..Terms::ALL
            },
        ),
        (
            "later jobs",
            Terms {
                later_jobs: false,
                ..Terms::ALL
            },
        ),
        (
            "interferer jitter",
            Terms {
                interferer_jitter: false,
                ..Terms::ALL
            },
        ),
    ];
    let mut caught = [0u32; 3];
    let mut tried = 0;
    while tried < 150 {
        let n = 2 + rnd(2) as usize;
        let set: Set = (0..n)
            .map(|_| {
                let t = 3 + rnd(6);
                ((1 + rnd(3)).min(t), t, rnd(3).min(t))
            })
            .collect();
        if patterns(&set, HORIZON) > MAX_PATTERNS {
            continue;
        }
        let Some(full) = bound(&set, Origin::Arrival, Terms::ALL) else {
            continue;
        };
        tried += 1;
        let (wa, _) = exhaustive(&set, HORIZON);
        assert!(wa <= full, "{set:?}: simulated {wa} > bound {full}");
        for (k, (_, terms)) in variants.iter().enumerate() {
            if bound(&set, Origin::Arrival, *terms).is_some_and(|b| wa > b) {
                caught[k] += 1;
            }
        }
    }
    for (k, (name, _)) in variants.iter().enumerate() {
        assert!(
            caught[k] > 0,
            "without {name} the search finds no violation"
        );
    }
}
