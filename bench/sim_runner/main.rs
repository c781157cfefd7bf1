//! Times `irqlab_sim::simulate` on configuration files (JSON `SimConfig`):
//! one line per file, `name cpu_ns events jobs`, the CPU time of the process
//! for the call alone (the configuration is parsed before) and the jobs
//! completed. With `--floor`, times the minimal partitioned-RM simulator
//! of `floor.rs` on the same files instead (`events` is 0; files that are
//! not plain RM task sets are skipped). With `--warm`, each file is run
//! once untimed before its timed call: the steady state of a process that
//! runs the same model again, not a first call after the previous file's.
//! With `--core N ROUNDS` (feature `core`), times the core's scheduling
//! cycle at `N` servers next to a bare heap instead (`core_cycle.rs`).
//! Built by `bench/bench_sim_revisions.py` and `bench/bench_floor.py`.

#[cfg(feature = "core")]
mod core_cycle;
mod floor;

use std::time::Duration;

fn cpu_now() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid pointer to a timespec; the clock id is a constant.
    unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut ts) };
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

fn main() {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    #[cfg(feature = "core")]
    if args.first().is_some_and(|a| a == "--core") {
        let num = |i: usize| -> usize { args[i].parse().expect("--core N ROUNDS") };
        core_cycle::run(num(1), num(2), 200_000, cpu_now);
        return;
    }
    let floor = args.iter().any(|a| a == "--floor");
    let warm = args.iter().any(|a| a == "--warm");
    args.retain(|a| a != "--floor" && a != "--warm");
    for f in args {
        let text = std::fs::read_to_string(&f).expect("config file");
        if floor {
            let v: serde_json::Value = serde_json::from_str(&text).expect("JSON");
            if warm {
                std::hint::black_box(floor::run(&v));
            }
            let t0 = cpu_now();
            let Some(jobs) = floor::run(&v) else {
                continue;
            };
            let dt = cpu_now() - t0;
            println!("{f} {} 0 {jobs}", dt.as_nanos());
            continue;
        }
        let parse = || -> irqlab_sim::SimConfig { serde_json::from_str(&text).expect("SimConfig") };
        if warm {
            drop(std::hint::black_box(irqlab_sim::simulate(parse())));
        }
        let cfg = parse();
        let t0 = cpu_now();
        let (m, _) = irqlab_sim::simulate(cfg).expect("simulates");
        let dt = cpu_now() - t0;
        let jobs: u64 = m.tasks.iter().map(|t| t.completed).sum();
        println!("{f} {} {} {jobs}", dt.as_nanos(), m.events);
    }
}
