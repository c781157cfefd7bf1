//! Run a simulation configuration (JSON file) and print how long it took
//! and the event count: `cargo run --release -p irqlab-sim --example
//! run_config -- config.json`.

use std::time::Instant;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path = std::env::args()
        .nth(1)
        .ok_or("usage: run_config CONFIG.json")?;
    let cfg: irqlab_sim::SimConfig = serde_json::from_str(&std::fs::read_to_string(path)?)?;
    let t0 = Instant::now();
    let (m, _) = irqlab_sim::simulate(cfg)?;
    let dt = t0.elapsed().as_secs_f64();
    let jobs: u64 = m.tasks.iter().map(|t| t.completed).sum();
    println!(
        "{jobs} jobs, {} events in {dt:.4} s: {:.0} jobs/s, {:.0} ns/event",
        m.events,
        jobs as f64 / dt,
        dt * 1e9 / m.events as f64
    );
    Ok(())
}
