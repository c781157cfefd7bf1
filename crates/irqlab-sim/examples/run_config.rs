//! Run a simulation configuration (JSON file) and print how long it took
//! and the event count: `cargo run --release -p irqlab-sim --example
//! run_config -- config.json [TRACE_FILE [json|perfetto]]`. With a trace
//! file the trace is on and streamed there; the line then also gives the
//! trace events, the bytes written and the records' memory per event.
//! `bench/bench_memory.py` runs it for peak RSS and the cost of tracing,
//! and for the CPU time of the `simulate` call alone (`cpu ... s`: this
//! thread's time on a CPU, from Linux's `/proc/thread-self/schedstat`;
//! absent elsewhere), which it compares with `simulate()` from Python.

use std::io::BufWriter;
use std::time::Instant;

use irqlab_sim::TraceFormat;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let path = args
        .first()
        .ok_or("usage: run_config CONFIG.json [TRACE_FILE [FORMAT]]")?;
    let mut cfg: irqlab_sim::SimConfig = serde_json::from_str(&std::fs::read_to_string(path)?)?;
    let trace = args.get(1);
    let format: TraceFormat = args.get(2).map_or(Ok(TraceFormat::Json), |f| f.parse())?;
    if trace.is_some() {
        cfg.trace.enabled = true;
    }
    let t0 = Instant::now();
    let c0 = thread_cpu_ns();
    let (m, mut t) = irqlab_sim::simulate(cfg)?;
    let cpu = thread_cpu_ns().zip(c0).map(|(b, a)| (b - a) as f64 / 1e9);
    let mem = t.memory_bytes();
    if let Some(file) = trace {
        t.write(&mut BufWriter::new(std::fs::File::create(file)?), format)?;
    }
    let dt = t0.elapsed().as_secs_f64();
    let jobs: u64 = m.tasks.iter().map(|t| t.completed).sum();
    print!(
        "{jobs} jobs, {} events in {dt:.4} s: {:.0} jobs/s, {:.0} ns/event",
        m.events,
        jobs as f64 / dt,
        dt * 1e9 / m.events as f64
    );
    if let Some(c) = cpu {
        print!("; cpu {c:.6} s");
    }
    if let Some(file) = trace {
        let bytes = std::fs::metadata(file)?.len();
        print!(
            "; trace {} events, {bytes} bytes, {:.1} B of memory per event",
            t.len(),
            mem as f64 / t.len().max(1) as f64
        );
    }
    println!();
    Ok(())
}

/// This thread's time on a CPU so far (ns), where Linux says it.
fn thread_cpu_ns() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    text.split_whitespace().next()?.parse().ok()
}
