//! J1 (`irqlab_analysis::suspension`) against the core's scheduler, by
//! exhaustive search: a self-suspending task above a periodic one in one
//! fixed-priority server (an unbounded server, threads by priority), every
//! phasing and every pattern of suspension lengths over four jobs. The
//! lower task's observed response never exceeds its RTA with the upper
//! task as jitter `R - E`; with jitter 0 (suspensions ignored) it does.

mod core_machine;

use core_machine::{machine, periodic, run, unbounded, Job, Work};
use irqlab_analysis::rta::{analyse, Analysed, Interferer, Origin};
use irqlab_analysis::suspension::jitter_interferer;

/// `(c_a, s_max, c_b, T1, c_l, T2)`: the upper task computes `c_a`,
/// suspends up to `s_max`, computes `c_b`, every `T1`; the lower task
/// computes `c_l` every `T2`.
fn cases() -> Vec<(u64, u64, u64, u64, u64, u64)> {
    let mut v = Vec::new();
    for t1 in 4..=7u64 {
        for ca in 1..=2 {
            for cb in 1..=2 {
                for s in 1..=(t1 - ca - cb) {
                    for t2 in [t1 + 1, 2 * t1, 3 * t1] {
                        for cl in 1..=3 {
                            v.push((ca, s, cb, t1, cl, t2));
                        }
                    }
                }
            }
        }
    }
    v
}

fn patterns(s: u64) -> Vec<Vec<u64>> {
    let mut v = vec![vec![]];
    for _ in 0..4 {
        v = v
            .into_iter()
            .flat_map(|p: Vec<u64>| {
                (0..=s).map(move |x| {
                    let mut q = p.clone();
                    q.push(x);
                    q
                })
            })
            .collect();
    }
    v
}

/// The lower task's worst observed response over every phasing and
/// suspension pattern.
fn observed(ca: u64, s: u64, cb: u64, t1: u64, cl: u64, t2: u64) -> u64 {
    let mut worst = 0;
    for pat in patterns(s) {
        for ph in 0..t1 {
            let (mut sc, _, tids) = machine(vec![unbounded(1)], &[(0, 2), (0, 1)]);
            let horizon = 3 * t2 + 4 * t1;
            let upper: Vec<Job> = (0..)
                .map(|k| ph + k * t1)
                .take_while(|&r| r < horizon)
                .enumerate()
                .map(|(k, r)| Job {
                    release: r,
                    segs: vec![(0, ca), (pat[k % pat.len()], cb)],
                })
                .collect();
            let works = vec![
                Work {
                    thread: tids[0],
                    jobs: upper,
                    inherit: None,
                },
                Work {
                    thread: tids[1],
                    jobs: periodic(0, t2, 3 * t2, &[(0, cl)]),
                    inherit: None,
                },
            ];
            let out = run(&mut sc, &works, horizon);
            for (r, _, f) in &out.done[1] {
                worst = worst.max(f - r);
            }
        }
    }
    worst
}

fn bound(hp: Interferer, cl: u64, t2: u64) -> Option<u64> {
    analyse(Analysed::new(cl, t2, 0), &[hp], Origin::Arrival, 100 * t2)
        .ok()
        .map(|r| r.response)
}

/// J1 holds: the upper task as `(E, T1, J = R - E)`, `R = c_a + s + c_b`
/// (nothing above it), bounds the lower task in every case.
#[test]
fn j1_holds() {
    let mut n = 0;
    for (ca, s, cb, t1, cl, t2) in cases() {
        let hp = jitter_interferer(ca + cb, t1, ca + s + cb).expect("R >= E");
        let Some(b) = bound(hp, cl, t2) else { continue };
        let seen = observed(ca, s, cb, t1, cl, t2);
        n += 1;
        assert!(seen <= b, "{:?}: {seen} > {b}", (ca, s, cb, t1, cl, t2));
    }
    assert!(n > 50);
}

/// The jitter is needed: with the suspensions ignored (jitter 0) the lower
/// task's response exceeds the RTA in some case.
#[test]
fn j1_without_jitter_is_unsound() {
    let exceeded = cases().into_iter().any(|(ca, s, cb, t1, cl, t2)| {
        let hp = Interferer::new(ca + cb, t1, 0);
        bound(hp, cl, t2).is_some_and(|b| observed(ca, s, cb, t1, cl, t2) > b)
    });
    assert!(
        exceeded,
        "jitter 0 never exceeded: the test does not check J1's jitter"
    );
}
