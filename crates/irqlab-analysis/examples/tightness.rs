//! Bounds against simulation (issue 35's figures): `tightness models
//! FILE.yaml...` prints, per model, each server's and task's bound next to
//! the simulated worst response; `tightness random N` builds N random
//! one-CPU quest systems (2-3 sporadic Main VCPUs at rate-monotonic
//! priority, 1-2 PIBS I/O VCPUs, periodic tasks that compute and some that
//! read a disk, a periodic generic interrupt), simulates each with 3 seeds
//! and prints, over the tasks that never miss, how many get a bound within
//! their deadline and bound / worst simulated response (median, p90).

use irqlab_analysis::system::model_bounds;
use irqlab_sim::{from_model, simulate};
use std::path::Path;

#[path = "../tests/quest_gen/mod.rs"]
mod quest_gen;
use quest_gen::{random, Rng};

fn pct(v: &mut [f64], p: f64) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    if v.is_empty() {
        return f64::NAN;
    }
    v[((v.len() - 1) as f64 * p).round() as usize]
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    match args.get(1).map(String::as_str) {
        Some("models") => {
            for f in &args[2..] {
                let text = std::fs::read_to_string(f).expect("readable");
                let (m, _) = irqlab_model::load_str(&text).expect("valid model");
                let cfg = from_model(&m, Path::new(f).parent().unwrap_or(Path::new(".")))
                    .expect("lowers");
                let b = model_bounds(&cfg).expect("bounds");
                let (sim, _) = simulate(cfg.clone()).expect("runs");
                println!("== {f}");
                println!("ok {} first failure {:?}", b.ok, b.failures.first());
                for c in &b.cpus {
                    for s in &c.servers {
                        println!(
                            "server {:10} response {:>12?} ok {:5} {}",
                            s.name,
                            s.response,
                            s.schedulable,
                            s.note.clone().unwrap_or_default()
                        );
                    }
                }
                for t in &b.tasks {
                    let st = sim.tasks.iter().find(|x| x.name == t.name);
                    println!(
                        "task   {:10} bound {:>12?} ok {:5} sim max {:>10?} misses {:?} | {}",
                        t.name,
                        t.response,
                        t.schedulable,
                        st.and_then(|x| x.response.max),
                        st.map(|x| x.deadline_misses),
                        t.note.clone().unwrap_or_default()
                    );
                }
                for io in &b.io {
                    println!(
                        "read   {:10} {:8} latency {:>12?} {} {:?}",
                        io.task,
                        io.device,
                        io.latency,
                        io.note.clone().unwrap_or_default(),
                        io.terms
                    );
                }
            }
        }
        Some("random") => {
            let n: u64 = args.get(2).and_then(|x| x.parse().ok()).unwrap_or(40);
            let mut r = Rng(0x9e37_79b9_7f4a_7c15);
            let (mut ok_tasks, mut bounded) = (0, 0);
            let mut ratios = Vec::new();
            for _ in 0..n {
                let cfg = random(&mut r);
                let Ok(b) = model_bounds(&cfg) else { continue };
                let mut worst = vec![0u64; cfg.tasks.len()];
                let mut missed = vec![false; cfg.tasks.len()];
                for seed in 1..=3 {
                    let mut c = cfg.clone();
                    c.seed = seed;
                    let Ok((sim, _)) = simulate(c) else { continue };
                    for (i, t) in cfg.tasks.iter().enumerate() {
                        if let Some(x) = sim.tasks.iter().find(|x| x.name == t.name) {
                            worst[i] = worst[i].max(x.response.max.unwrap_or(0));
                            missed[i] |= x.deadline_misses > 0 || x.unfinished_past_deadline > 0;
                        }
                    }
                }
                for (i, t) in cfg.tasks.iter().enumerate() {
                    if missed[i] || worst[i] == 0 {
                        continue;
                    }
                    ok_tasks += 1;
                    let Some(row) = b.tasks.iter().find(|x| x.name == t.name) else {
                        continue;
                    };
                    if std::env::var("TIGHT_DEBUG").is_ok() && !row.schedulable {
                        eprintln!(
                            "fail {:?} {:?}",
                            row.response.map(|r| r as f64 / worst[i] as f64),
                            row.note
                        );
                    }
                    if let (Some(bound), true) = (row.response, row.schedulable) {
                        bounded += 1;
                        assert!(
                            bound >= worst[i],
                            "{}: bound {bound} < sim {}",
                            t.name,
                            worst[i]
                        );
                        ratios.push(bound as f64 / worst[i] as f64);
                        if std::env::var("TIGHT_DEBUG").is_ok() {
                            eprintln!(
                                "{:6.2} {} {:?}",
                                bound as f64 / worst[i] as f64,
                                row.equation.chars().take(40).collect::<String>(),
                                row.terms
                            );
                        }
                    }
                }
            }
            let (med, p90) = (pct(&mut ratios, 0.5), pct(&mut ratios, 0.9));
            println!(
                "{{\"systems\": {n}, \"tasks_never_missing\": {ok_tasks}, \"bounded_within_deadline\": {bounded}, \"ratio_median\": {med:.3}, \"ratio_p90\": {p90:.3}}}"
            );
        }
        _ => eprintln!("usage: tightness models FILE.yaml... | tightness random N"),
    }
}
