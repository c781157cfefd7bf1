//! Parallel sweeps over generated systems (VINT §VII): for each system and
//! scheme (DS/SS x base/vINT), the verdicts of `vint::evaluate`.
//!
//! Design principles: system `i` depends only on `(seed, i)` (`TableII::system`)
//! and results are combined by index, so the counts are identical whatever
//! the number of threads; work is split into contiguous chunks over
//! `std::thread::scope` (no dependency).

use crate::gen::TableII;
use crate::vint::{evaluate, Replenish};

/// The four schemes of VINT §VII-A.
pub const SCHEMES: [(&str, Replenish, bool); 4] = [
    ("DSbase", Replenish::Deferrable, false),
    ("SSbase", Replenish::Sporadic, false),
    ("DSvINT", Replenish::Deferrable, true),
    ("SSvINT", Replenish::Sporadic, true),
];

/// Counts of schedulable task sets and serviceable interrupt sets per
/// scheme, out of `sets`.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Counts {
    pub sets: u64,
    pub schedulable: [u64; 4],
    pub serviceable: [u64; 4],
}

/// Evaluate `sets` systems of `pcpus` PCPUs each (a set is schedulable /
/// serviceable when all its PCPUs are).
pub fn sweep(
    params: &TableII,
    pcpus: usize,
    sets: u64,
    seed: u64,
    pseudo_ratio: (u64, u64),
    threads: usize,
) -> Counts {
    let threads = threads.max(1) as u64;
    let chunk = sets.div_ceil(threads);
    let parts: Vec<Counts> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|k| {
                let params = params.clone();
                s.spawn(move || {
                    let mut c = Counts::default();
                    for i in (k * chunk)..((k + 1) * chunk).min(sets) {
                        let cpus = params.system(pcpus, seed, i);
                        c.sets += 1;
                        for (n, &(_, r, v)) in SCHEMES.iter().enumerate() {
                            let verdicts: Vec<_> = cpus
                                .iter()
                                .map(|p| evaluate(p, r, v, pseudo_ratio, 1_000))
                                .collect();
                            c.schedulable[n] += verdicts.iter().all(|x| x.schedulable) as u64;
                            c.serviceable[n] += verdicts.iter().all(|x| x.serviceable) as u64;
                        }
                    }
                    c
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_default())
            .collect()
    });
    parts.into_iter().fold(Counts::default(), |mut a, b| {
        a.sets += b.sets;
        for n in 0..4 {
            a.schedulable[n] += b.schedulable[n];
            a.serviceable[n] += b.serviceable[n];
        }
        a
    })
}
