//! The core's floor for `bench/bench_floor.py`: one scheduling cycle of
//! `irqlab_core::Scheduler` -- a thread of the most urgent of `n` sporadic
//! servers wakes (QUEST-VCPU Alg. 2), the CPU schedules (Alg. 1), the
//! thread blocks, the CPU schedules again -- next to the same cycle on a
//! bare `BinaryHeap` of `n` keys (push the woken key, peek, pop, peek), the
//! least a priority-ordered decision can cost. Both are timed in the same
//! round, in alternating order, as CPU time per cycle; the other `n - 1`
//! servers stay runnable, so every decision is among `n`.
//!
//! Like for like: on both sides the woken key is the most urgent, the
//! decision reads the minimum (a peek), the block takes it out and the
//! next decision reads the new minimum. The bare heap pushes the key up
//! to the root and pops it (two sifts). irqlab's ready set keeps its
//! minimum outside its heap (`id_heap.rs`, for speed), so here its wake-up
//! and block move no heap entry: a woken key that is not the most urgent,
//! or one woken above a kept minimum, costs a sift as before. What
//! irqlab does on top is its job and stays in the cycle: the checks of
//! time and ids, the thread queue, the sporadic server's hooks (Alg. 13 on
//! the wake-up, Alg. 3 and 12 on the block, Alg. 4 on each decision), the
//! charge of the time since the last decision to the server that ran (1 ns
//! per cycle), and `next_update` (Alg. 1 lines 13-17).
//! (`crates/irqlab-core/benches/scheduler.rs` is the same cycle under
//! criterion, next to a Quest-style list scan.)

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::hint::black_box;
use std::time::Duration;

use irqlab_core::{
    Nanos, Scheduler, Server, ServerPriority, SporadicServer, ThreadId, ThreadPolicy,
};

fn build(n: usize) -> (Scheduler, ThreadId) {
    let mut s = Scheduler::new();
    let mut threads = Vec::with_capacity(n);
    for i in 0..n {
        // distinct periods (RM keys); budget far above what the run uses
        let ss = SporadicServer::new(
            Nanos::from_ms(100),
            Nanos::from_ms(200 + i as u64),
            32,
            ServerPriority::RateMonotonic,
            false,
            Nanos(0),
        )
        .expect("valid parameters");
        let v = s
            .add_server(format!("v{i}"), Server::Sporadic(ss), ThreadPolicy::FixedPriority)
            .expect("server");
        threads.push(s.add_thread("t", v, 1).expect("thread"));
    }
    for &t in &threads[1..] {
        s.wakeup(Nanos(0), t, None).expect("wakeup");
    }
    (s, threads[0])
}

/// Per round, CPU ns per cycle of irqlab and of the bare heap, at `n`
/// servers: `rounds` lines `core n irqlab_ns heap_ns`.
pub fn run(n: usize, rounds: usize, cycles: u64, cpu_now: fn() -> Duration) {
    let (mut s, probe) = build(n);
    let mut heap: BinaryHeap<Reverse<(u64, usize)>> =
        (1..n).map(|i| Reverse((200 + i as u64, i))).collect();
    let mut now = 1u64;
    for r in 0..rounds {
        let mut core = || {
            let t0 = cpu_now();
            for _ in 0..cycles {
                now += 1;
                s.wakeup(Nanos(now), probe, None).expect("wakeup");
                black_box(s.schedule(Nanos(now)).expect("schedule"));
                s.block(Nanos(now), probe).expect("block");
                black_box(s.schedule(Nanos(now)).expect("schedule"));
            }
            (cpu_now() - t0).as_nanos() as f64 / cycles as f64
        };
        let mut bare = || {
            let t0 = cpu_now();
            for _ in 0..cycles {
                heap.push(Reverse((200, 0)));
                black_box(heap.peek());
                black_box(heap.pop());
                black_box(heap.peek());
            }
            (cpu_now() - t0).as_nanos() as f64 / cycles as f64
        };
        let (c, h) = if r % 2 == 0 {
            let c = core();
            (c, bare())
        } else {
            let h = bare();
            (core(), h)
        };
        println!("core {n} {c:.2} {h:.2}");
    }
}
