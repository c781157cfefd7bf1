//! `cargo run --release -p irqlab-analysis --example rta_bench`: the
//! fixed-priority RTA on 100-task sets, before (the single-job iteration
//! irqlab had before the busy-window RTA, kept here verbatim as the baseline) and after
//! (`rta::fp_rta`: level-i busy period, own jitter, every job of the
//! window), in the same run. One JSON line; `bench/bench_rta.py` runs it.

use irqlab_analysis::gen::{rm_priorities, uunifast, Rng};
use irqlab_analysis::rta::{fp_rta, FpTask, Interferer, Origin};
use std::time::Instant;

/// The pre-issue-14 `rta::response_time`: job 0 only, no own jitter.
fn before(c: u64, interferers: &[Interferer], limit: u64) -> Option<u64> {
    let mut w = c;
    loop {
        if w > limit {
            return None;
        }
        let next = interferers
            .iter()
            .fold(c, |acc, i| acc.saturating_add(i.demand(w)));
        if next == w {
            return Some(w);
        }
        w = next;
    }
}

fn task_set(rng: &mut Rng) -> Vec<FpTask> {
    let u = uunifast(rng, 100, 0.9);
    let periods: Vec<u64> = (0..100)
        .map(|_| (1e6 * 1000f64.powf(rng.unit())) as u64) // 1 ms .. 1 s, log-uniform
        .collect();
    let prio = rm_priorities(&periods);
    (0..100)
        .map(|i| {
            let t = periods[i];
            FpTask {
                wcet: ((u[i] * t as f64) as u64).max(1),
                period: t,
                deadline: t,
                jitter: (rng.unit() * 0.5 * t as f64) as u64,
                prio: prio[i],
            }
        })
        .collect()
}

fn main() {
    let mut rng = Rng::new(14);
    let sets: Vec<Vec<FpTask>> = (0..200).map(|_| task_set(&mut rng)).collect();
    let t0 = Instant::now();
    let mut old_bounded = 0usize;
    let mut old: Vec<Vec<Option<u64>>> = Vec::new();
    for s in &sets {
        old.push(
            s.iter()
                .enumerate()
                .map(|(i, me)| {
                    let hp: Vec<Interferer> = s
                        .iter()
                        .enumerate()
                        .filter(|&(k, o)| k != i && o.prio >= me.prio)
                        .map(|(_, o)| Interferer::new(o.wcet, o.period, o.jitter))
                        .collect();
                    before(me.wcet, &hp, me.deadline)
                })
                .collect(),
        );
    }
    let t_before = t0.elapsed().as_secs_f64();
    let t1 = Instant::now();
    let new: Vec<_> = sets.iter().map(|s| fp_rta(s, Origin::Arrival)).collect();
    let t_after = t1.elapsed().as_secs_f64();
    let (mut new_bounded, mut unsafe_before) = (0usize, 0usize);
    for (o, n) in old.iter().zip(&new) {
        for (a, b) in o.iter().zip(n) {
            old_bounded += a.is_some() as usize;
            new_bounded += b.is_ok() as usize;
            if let (Some(a), Ok(b)) = (a, b) {
                unsafe_before += (*a < b.response) as usize;
            }
            if let (Some(_), Err(_)) = (a, b) {
                unsafe_before += 1;
            }
        }
    }
    println!(
        "{{\"figure\": \"rta-100-tasks\", \"sets\": {}, \"before_s\": {:.4}, \"after_s\": {:.4}, \
         \"after_over_before\": {:.2}, \"tasks_bounded_before\": {}, \"tasks_bounded_after\": {}, \
         \"before_below_the_safe_bound\": {}}}",
        sets.len(),
        t_before,
        t_after,
        t_after / t_before,
        old_bounded,
        new_bounded,
        unsafe_before
    );
}
