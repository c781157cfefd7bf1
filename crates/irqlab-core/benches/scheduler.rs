//! Cost of one scheduling decision vs the number of servers on one CPU
//! (docs/performance.md): irqlab's scheduler next to a Quest-style linear scan
//! (QUEST-VCPU Alg. 1 line 3 as Quest implements it: call `update-budget`
//! on every runnable VCPU and keep the best) over the same servers, in the
//! same run.
//!
//! One cycle = a thread of a mid-priority server wakes (Alg. 2), the CPU
//! schedules (Alg. 1), the thread blocks, the CPU schedules again. Servers
//! have ample budget so every cycle is a real decision among n servers.
//!
//! The floor (`bare-heap`): the same cycle on a bare `BinaryHeap` of n
//! priority keys -- push the woken key, peek, pop it, peek -- the least any
//! priority-ordered decision can cost (no budgets, no threads).

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use irqlab_core::{
    Nanos, Scheduler, Server, ServerPolicy, ServerPriority, SporadicServer, ThreadId, ThreadPolicy,
};
use std::hint::black_box;
use std::time::Duration;

const SIZES: [usize; 4] = [1, 24, 1_000, 10_000];

fn server(i: usize) -> SporadicServer {
    // distinct periods (RM keys); budget far above what a cycle uses
    SporadicServer::new(
        Nanos::from_ms(100),
        Nanos::from_ms(200 + i as u64),
        32,
        ServerPriority::RateMonotonic,
        false,
        Nanos(0),
    )
    .expect("valid parameters")
}

fn build(n: usize) -> (Scheduler, Vec<ThreadId>) {
    let mut s = Scheduler::new();
    let mut threads = Vec::with_capacity(n);
    for i in 0..n {
        let v = s
            .add_server(
                format!("v{i}"),
                Server::Sporadic(server(i)),
                ThreadPolicy::FixedPriority,
            )
            .expect("server");
        threads.push(s.add_thread("t", v, 1).expect("thread"));
    }
    // every server but the probe stays runnable (CPU-bound thread)
    for &t in &threads[1..] {
        s.wakeup(Nanos(0), t, None).expect("wakeup");
    }
    (s, threads)
}

/// Quest-style run queue: a list scanned at every decision.
struct LinearScan {
    servers: Vec<SporadicServer>,
    runnable: Vec<bool>,
}

impl LinearScan {
    fn pick(&mut self, now: Nanos) -> Option<usize> {
        let mut best: Option<(u64, usize)> = None;
        for (i, s) in self.servers.iter_mut().enumerate() {
            if !self.runnable[i] {
                continue;
            }
            s.update_budget(now);
            if s.budget().is_zero() {
                continue;
            }
            let k = (s.key().1, i);
            if best.is_none_or(|b| k < b) {
                best = Some(k);
            }
        }
        best.map(|b| b.1)
    }
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("decision");
    g.warm_up_time(Duration::from_millis(300));
    g.measurement_time(Duration::from_secs(1));
    for n in SIZES {
        let (mut s, threads) = build(n);
        let probe = threads[0];
        let mut now = 1u64;
        g.bench_with_input(BenchmarkId::new("irqlab", n), &n, |b, _| {
            b.iter(|| {
                now += 1;
                s.wakeup(Nanos(now), probe, None).expect("wakeup");
                black_box(s.schedule(Nanos(now)).expect("schedule"));
                s.block(Nanos(now), probe).expect("block");
                black_box(s.schedule(Nanos(now)).expect("schedule"));
            })
        });
        let mut q = LinearScan {
            servers: (0..n).map(server).collect(),
            runnable: vec![true; n],
        };
        q.runnable[0] = false;
        let mut now = 1u64;
        g.bench_with_input(BenchmarkId::new("quest-scan", n), &n, |b, _| {
            b.iter(|| {
                now += 1;
                q.runnable[0] = true;
                black_box(q.pick(Nanos(now)));
                q.runnable[0] = false;
                black_box(q.pick(Nanos(now)));
            })
        });
        let mut heap: std::collections::BinaryHeap<std::cmp::Reverse<(u64, usize)>> = (1..n)
            .map(|i| std::cmp::Reverse((200 + i as u64, i)))
            .collect();
        g.bench_with_input(BenchmarkId::new("bare-heap", n), &n, |b, _| {
            b.iter(|| {
                heap.push(std::cmp::Reverse((200, 0)));
                black_box(heap.peek());
                black_box(heap.pop());
                black_box(heap.peek());
            })
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
