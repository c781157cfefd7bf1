//! Times `irqlab_sim::simulate` on configuration files (JSON `SimConfig`):
//! one line per file and round, `name cpu_ns events`, CPU time of the
//! process for the call alone (the configuration is parsed before). Built
//! by `bench/bench_sim_revisions.py` against two revisions of irqlab-sim.

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
    let files: Vec<String> = std::env::args().skip(1).collect();
    for f in files {
        let text = std::fs::read_to_string(&f).expect("config file");
        let cfg: irqlab_sim::SimConfig = serde_json::from_str(&text).expect("SimConfig");
        let t0 = cpu_now();
        let (m, _) = irqlab_sim::simulate(cfg).expect("simulates");
        let dt = cpu_now() - t0;
        println!("{f} {} {}", dt.as_nanos(), m.events);
    }
}
