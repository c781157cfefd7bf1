//! VINT Figures 4-6 in analysis and in simulation: for every point of the
//! three figures, generated systems of 4 PCPUs (VINT Table II, the same
//! seeds and streams as the `vint-fig4/5/6` experiments, so the analysis
//! columns are theirs for the first `--sets` systems), each PCPU analysed
//! (§VII-A budget search, Eq. 3-8) and simulated with the budget found
//! under the four schemes, for `--duration-ms` from the synchronous release
//! (every task and interrupt at 0) and from `--phasings` random ones.
//! Prints one JSON line per point: the percentage of interrupt sets
//! serviceable by the analysis -- the paper's Eq. 5, 7, 8
//! (`serviceable_analysis`) and the bounds valid for every phasing
//! (`serviceable_analysis_safe`: they differ for DSvINT only, see
//! `vint::virt_bound_vint`) -- and in simulation (every instance of every
//! flow within its minimum inter-arrival time, Definition 3:
//! `serviceable_sim_synchronous` from the synchronous release,
//! `serviceable_sim` from it and every random phasing); how many sets the
//! analysis calls serviceable but the simulation shows late, and how many
//! simulated times (task and VCPU responses, flows) exceed a bound the
//! analysis calls safe (both must be 0:
//! the paper's bounds against the synchronous run, the safe ones against
//! every run); and how many flows exceed the paper's Eq. 5 + 7 in the
//! random phasings (`paper_eq7_exceeded`, deferrable pseudo-VCPUs) and the
//! percentage of sets the paper's test calls serviceable that a random
//! phasing shows late (`paper_serviceable_sim_late`). Exit
//! status 1 if a must-be-0 count is not 0.
//!
//! `cargo run --release -p irqlab-analysis --example vint_serviceability --
//! [--sets 100] [--phasings 2] [--duration-ms 500] [--figures 4,5,6]
//! [--threads N]`
//! (`bench/bench_vint_sim.py` runs it). Why the simulated gap is as wide
//! as the analytic one in Fig. 4 and narrower in Figs. 5-6: see
//! tests/vint_serviceability.rs.

#[path = "../tests/vint_common/mod.rs"]
mod vint_common;

use irqlab_analysis::gen::{Rng, TableII};
use irqlab_analysis::sweep::{sweep, SCHEMES};
use serde_json::json;
use std::time::Instant;
use vint_common::{check, Phasing, MS};

/// One figure: its name, seed (as in python/irqlab/experiments) and points.
fn figure(n: u32) -> (&'static str, u64, Vec<(f64, TableII)>) {
    let d = TableII::default;
    match n {
        4 => (
            "vint-fig4",
            4,
            (0..16)
                .map(|i| {
                    let k = 5 + i as u64; // tenths of a ms: 0.5 .. 2.0
                    let t = TableII {
                        irq_interarrival: (k * MS / 10, (k + 5) * MS / 10),
                        ..d()
                    };
                    (k as f64 / 10.0, t)
                })
                .collect(),
        ),
        5 => (
            "vint-fig5",
            5,
            (5..=20u64)
                .map(|k| {
                    let t = TableII {
                        irq_interarrival: (k * MS, (k + 5) * MS),
                        ..d()
                    };
                    (k as f64, t)
                })
                .collect(),
        ),
        6 => (
            "vint-fig6",
            6,
            [
                1.0, 1.5, 2.0, 2.5, 3.0, 3.5, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0,
            ]
            .into_iter()
            .map(|t: f64| {
                let p = TableII {
                    vcpu_period: (t * MS as f64) as u64,
                    ..d()
                };
                (t, p)
            })
            .collect(),
        ),
        _ => panic!("--figures: {n}: only 4, 5 and 6"),
    }
}

#[derive(Default, Clone)]
struct Tally {
    /// Serviceable by the paper's Eq. 5, 7, 8.
    analysis: [u64; 4],
    /// Serviceable by bounds valid for every phasing.
    analysis_safe: [u64; 4],
    /// Served in simulation from the synchronous release.
    sync: [u64; 4],
    /// Served from it and from every random phasing.
    sim: [u64; 4],
    /// Sets the analysis calls serviceable but the simulation shows late
    /// (the paper's test against the synchronous run, the safe one against
    /// every run).
    unsound: [u64; 4],
    /// Sets the paper's test calls serviceable and a random phasing shows
    /// late (its Eq. 7 is not a bound with deferrable pseudo-VCPUs).
    paper_late: [u64; 4],
    /// Simulated times above a bound the analysis calls safe (the paper's
    /// in the synchronous run, the safe ones in every run).
    violations: u64,
    first_violation: Option<String>,
    /// Flows above the paper's Eq. 5 + 7 in random phasings.
    paper_eq7_exceeded: u64,
    first_paper_eq7: Option<String>,
}

impl Tally {
    fn add(&mut self, o: &Tally) {
        for n in 0..4 {
            self.analysis[n] += o.analysis[n];
            self.analysis_safe[n] += o.analysis_safe[n];
            self.sync[n] += o.sync[n];
            self.sim[n] += o.sim[n];
            self.unsound[n] += o.unsound[n];
            self.paper_late[n] += o.paper_late[n];
        }
        self.violations += o.violations;
        self.paper_eq7_exceeded += o.paper_eq7_exceeded;
        if self.first_violation.is_none() {
            self.first_violation.clone_from(&o.first_violation);
        }
        if self.first_paper_eq7.is_none() {
            self.first_paper_eq7.clone_from(&o.first_paper_eq7);
        }
    }
}

/// Set `i` of a point: its PCPUs under the four schemes, each simulated
/// from the synchronous release and from `phasings` random ones.
fn run_set(
    params: &TableII,
    pcpus: usize,
    seed: u64,
    i: u64,
    duration: u64,
    phasings: u64,
) -> Tally {
    let mut rng = Rng::stream(seed, i);
    let cpus: Vec<_> = (0..pcpus).map(|_| params.generate(&mut rng)).collect();
    let mut t = Tally::default();
    for (n, &(name, r, vint)) in SCHEMES.iter().enumerate() {
        let (mut a, mut safe, mut sync, mut all) = (true, true, true, true);
        for (j, p) in cpus.iter().enumerate() {
            let mut runs = vec![Phasing::Synchronous];
            runs.extend((0..phasings).map(|_| Phasing::Random(rng.next_u64())));
            for (k, &phasing) in runs.iter().enumerate() {
                let c = check(p, r, vint, duration, phasing);
                let at = |v: &String| format!("set {i}, PCPU {j}, {name}, {phasing:?}: {v}");
                let mut bad = c.violations.clone();
                if k == 0 {
                    a &= c.analysis.serviceable;
                    safe &= c.analysis.serviceable_safe;
                    sync &= c.sim_serviceable;
                    bad.extend(c.paper_violations.iter().cloned());
                } else {
                    t.paper_eq7_exceeded += c.paper_violations.len() as u64;
                    if let (None, Some(v)) = (&t.first_paper_eq7, c.paper_violations.first()) {
                        t.first_paper_eq7 = Some(at(v));
                    }
                }
                all &= c.sim_serviceable;
                t.violations += bad.len() as u64;
                if let (None, Some(v)) = (&t.first_violation, bad.first()) {
                    t.first_violation = Some(at(v));
                }
            }
        }
        t.analysis[n] += a as u64;
        t.analysis_safe[n] += safe as u64;
        t.sync[n] += sync as u64;
        t.sim[n] += all as u64;
        t.unsound[n] += ((a && !sync) || (safe && !all)) as u64;
        t.paper_late[n] += (a && !all) as u64;
    }
    t
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let opt = |name: &str| {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1))
            .cloned()
    };
    let num = |name: &str, default: u64| {
        opt(name).map_or(default, |v| {
            v.parse()
                .unwrap_or_else(|_| panic!("{name}: {v:?} is not a number"))
        })
    };
    let sets = num("--sets", 100);
    let phasings = num("--phasings", 2);
    let duration = num("--duration-ms", 500) * MS;
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get()) as u64;
    let threads = num("--threads", cores).max(1);
    let pcpus = 4;
    let figures: Vec<u32> = opt("--figures")
        .unwrap_or_else(|| "4,5,6".into())
        .split(',')
        .map(|f| f.trim().parse().expect("--figures: e.g. 4,5,6"))
        .collect();
    let mut failed = false;
    for f in figures {
        let (name, seed, points) = figure(f);
        for (i, (x, params)) in points.into_iter().enumerate() {
            let seed = seed + i as u64; // as irqlab.analysis.vint_curve
            let t0 = Instant::now();
            let chunk = sets.div_ceil(threads);
            let total = std::thread::scope(|s| {
                let hs: Vec<_> = (0..threads)
                    .map(|k| {
                        let params = &params;
                        s.spawn(move || {
                            let mut t = Tally::default();
                            for i in (k * chunk)..((k + 1) * chunk).min(sets) {
                                t.add(&run_set(params, pcpus, seed, i, duration, phasings));
                            }
                            t
                        })
                    })
                    .collect();
                hs.into_iter().fold(Tally::default(), |mut a, h| {
                    a.add(&h.join().expect("worker"));
                    a
                })
            });
            let swept = sweep(&params, pcpus, sets, seed, (1, 1), threads as usize);
            let pct = |c: &[u64; 4]| {
                let m: serde_json::Map<_, _> = SCHEMES
                    .iter()
                    .zip(c)
                    .map(|(s, &n)| (s.0.to_string(), json!(100.0 * n as f64 / sets as f64)))
                    .collect();
                m
            };
            let unsound: u64 = total.unsound.iter().sum();
            failed |= unsound > 0 || total.violations > 0;
            println!(
                "{}",
                json!({
                    "figure": name,
                    "x": x,
                    "sets": sets,
                    "pcpus": pcpus,
                    "simulated_ms": duration / MS,
                    "random_phasings": phasings,
                    "serviceable_analysis": pct(&total.analysis),
                    "serviceable_analysis_safe": pct(&total.analysis_safe),
                    "serviceable_sim_synchronous": pct(&total.sync),
                    "serviceable_sim": pct(&total.sim),
                    "analysis_serviceable_sim_late": unsound,
                    "bound_violations": total.violations,
                    "first_violation": total.first_violation,
                    "paper_eq7_exceeded": total.paper_eq7_exceeded,
                    "paper_serviceable_sim_late": pct(&total.paper_late),
                    "first_paper_eq7_exceeded": total.first_paper_eq7,
                    "analysis_equals_sweep": swept.serviceable == total.analysis,
                    "seconds": (t0.elapsed().as_secs_f64() * 100.0).round() / 100.0,
                })
            );
        }
    }
    if failed {
        std::process::exit(1);
    }
}
