//! Run a simulation configuration (JSON file) and print how long it took
//! and the event count: `cargo run --release -p irqlab-sim --example
//! run_config -- [--repeat N] config.json [TRACE_FILE [json|perfetto]]`.
//! With a trace file the trace is on and streamed there; the line then
//! also gives the trace events, the bytes written and the records' memory
//! per event. `--repeat N` runs it N times in this process, one line each
//! (the first run pays for the process's cold caches and fresh heap; a
//! Python caller's repeated `simulate()` calls do not).
//! `bench/bench_memory.py` runs it for peak RSS and the cost of tracing,
//! and for the CPU time a Rust user pays for the metrics of a JSON
//! configuration (`cpu ... s`: parsing the configuration text, already in
//! memory, into a `SimConfig`, then `simulate`, which checks it, runs it and
//! builds the `Metrics`; `parse ... s` is the first part alone; this
//! thread's time on a CPU, from `clock_gettime(CLOCK_THREAD_CPUTIME_ID)`
//! on Linux, the clock of Python's `time.thread_time()`; absent
//! elsewhere), which it compares with `simulate()` from Python.

use std::time::Instant;

use irqlab_sim::TraceFormat;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let mut repeat = 1;
    if args.first().is_some_and(|a| a == "--repeat") {
        repeat = args.get(1).ok_or("--repeat N")?.parse()?;
        args.drain(..2);
    }
    let path = args
        .first()
        .ok_or("usage: run_config [--repeat N] CONFIG.json [TRACE_FILE [FORMAT]]")?;
    let text = std::fs::read_to_string(path)?;
    let trace = args.get(1);
    let format: TraceFormat = args.get(2).map_or(Ok(TraceFormat::Json), |f| f.parse())?;
    for _ in 0..repeat {
        run(&text, trace, format)?;
    }
    Ok(())
}

/// Parse and run the configuration `text` once and print its line.
fn run(
    text: &str,
    trace: Option<&String>,
    format: TraceFormat,
) -> Result<(), Box<dyn std::error::Error>> {
    let c0 = thread_cpu_ns();
    let mut cfg: irqlab_sim::SimConfig = serde_json::from_str(text)?;
    let parsed = thread_cpu_ns();
    if trace.is_some() {
        cfg.trace.enabled = true;
    }
    let t0 = Instant::now();
    let (m, mut t) = irqlab_sim::simulate(cfg)?;
    let secs = |b: u64, a: u64| b.saturating_sub(a) as f64 / 1e9;
    let cpu = thread_cpu_ns().zip(c0).map(|(b, a)| secs(b, a));
    let parse = parsed.zip(c0).map(|(b, a)| secs(b, a));
    let mem = t.memory_bytes();
    if let Some(file) = trace {
        t.write_file(std::path::Path::new(file), format)?;
    }
    let dt = t0.elapsed().as_secs_f64();
    let jobs: u64 = m.tasks.iter().map(|t| t.completed).sum();
    print!(
        "{jobs} jobs, {} events in {dt:.4} s: {:.0} jobs/s, {:.0} ns/event",
        m.events,
        jobs as f64 / dt,
        dt * 1e9 / m.events as f64
    );
    if let Some((c, p)) = cpu.zip(parse) {
        print!("; parse {p:.6} s; cpu {c:.6} s");
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

/// This thread's time on a CPU so far (ns), on Linux.
/// `/proc/thread-self/schedstat`, used before, is updated only at ticks and
/// context switches, so it lagged the running thread by up to a tick.
#[cfg(target_os = "linux")]
fn thread_cpu_ns() -> Option<u64> {
    #[repr(C)]
    struct Timespec {
        tv_sec: i64,
        tv_nsec: i64,
    }
    extern "C" {
        fn clock_gettime(clock: i32, tp: *mut Timespec) -> i32;
    }
    const CLOCK_THREAD_CPUTIME_ID: i32 = 3;
    let mut t = Timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `t` is a valid, writable timespec (64-bit time_t and long
    // on the 64-bit Linux targets this bench runs on).
    let rc = unsafe { clock_gettime(CLOCK_THREAD_CPUTIME_ID, &mut t) };
    (rc == 0 && cfg!(target_pointer_width = "64"))
        .then(|| t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64)
}

#[cfg(not(target_os = "linux"))]
fn thread_cpu_ns() -> Option<u64> {
    None
}
