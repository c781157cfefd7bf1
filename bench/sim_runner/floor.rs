//! The floor of `bench/bench_sim_revisions.py`: a minimal event-driven
//! partitioned rate-monotonic simulator -- one event heap, one ready heap
//! per CPU, nothing else (no servers, budgets, metrics or traces). It runs
//! the plain task sets of the benchmark (unbounded servers, one periodic
//! compute-only task each, priority = the server's rank) and returns the
//! jobs it completed, which must equal irqlab's, so the two did the same
//! work.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

use serde_json::Value;

struct Task {
    cpu: usize,
    rank: u64,
    period: u64,
    wcet: u64,
    /// Remaining work of its released, unfinished jobs (FIFO).
    jobs: VecDeque<u64>,
}

#[derive(Default)]
struct Cpu {
    ready: BinaryHeap<Reverse<(u64, usize)>>,
    /// Running task, since when, and the completion event's epoch.
    running: Option<(usize, u64)>,
    epoch: u64,
}

/// Completed jobs of the task set in `cfg` (a `SimConfig` as JSON) over its
/// duration; `None` if the configuration is not a plain RM task set.
pub fn run(cfg: &Value) -> Option<u64> {
    let duration = cfg["duration"].as_u64()?;
    let ncpu = cfg["cpus"].as_u64().unwrap_or(1) as usize;
    let servers = cfg["servers"].as_array()?;
    let mut tasks = Vec::new();
    for t in cfg["tasks"].as_array()? {
        let s = &servers[t["server"].as_u64()? as usize];
        let prog = t["program"].as_array()?;
        if prog.len() != 1 || prog[0]["op"] != "compute" || s["policy"] != "unbounded" {
            return None;
        }
        tasks.push(Task {
            cpu: s["cpu"].as_u64().unwrap_or(0) as usize,
            rank: s["rank"].as_u64()?,
            period: t["release"]["period"].as_u64()?,
            wcet: prog[0]["ns"].as_u64()?,
            jobs: VecDeque::new(),
        });
    }
    let mut cpus: Vec<Cpu> = (0..ncpu).map(|_| Cpu::default()).collect();
    // events: (time, seq, kind): kind = task index (release) or
    // usize::MAX - cpu (completion check of that CPU at its epoch)
    let mut events: BinaryHeap<Reverse<(u64, u64, usize, u64)>> = BinaryHeap::new();
    let mut seq = 0u64;
    for i in 0..tasks.len() {
        seq += 1;
        events.push(Reverse((0, seq, i, 0)));
    }
    let mut done = 0u64;
    while let Some(Reverse((now, _, kind, epoch))) = events.pop() {
        if now > duration {
            break;
        }
        let c = if kind < tasks.len() {
            let t = &mut tasks[kind];
            t.jobs.push_back(t.wcet);
            seq += 1;
            events.push(Reverse((now + t.period, seq, kind, 0)));
            if t.jobs.len() == 1 {
                cpus[t.cpu].ready.push(Reverse((t.rank, kind)));
            }
            t.cpu
        } else {
            let c = usize::MAX - kind;
            if cpus[c].epoch != epoch {
                continue;
            }
            c
        };
        // charge the running task, finish its job if done
        let cpu = &mut cpus[c];
        if let Some((r, since)) = cpu.running.take() {
            let t = &mut tasks[r];
            if let Some(left) = t.jobs.front_mut() {
                *left -= (now - since).min(*left);
                if *left == 0 {
                    t.jobs.pop_front();
                    done += 1;
                }
            }
            if !t.jobs.is_empty() {
                cpu.ready.push(Reverse((t.rank, r)));
            }
        }
        // run the highest-priority ready task (re-pushed entries are unique
        // per task: a task is in the heap at most once)
        if let Some(Reverse((_, r))) = cpu.ready.pop() {
            cpu.running = Some((r, now));
            cpu.epoch += 1;
            let left = tasks[r].jobs.front().copied().unwrap_or(0);
            seq += 1;
            events.push(Reverse((now + left, seq, usize::MAX - c, cpu.epoch)));
        }
    }
    Some(done)
}
