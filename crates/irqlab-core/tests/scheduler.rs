//! Hand-checked schedules of the per-CPU scheduler (QUEST-VCPU Alg. 1-2).

mod common;

use common::{run, Arrival, Segment};
use irqlab_core::{
    Cbs, Inherit, Nanos, Pibs, Scheduler, Server, ServerId, ServerPriority, SporadicServer,
    ThreadId, ThreadPolicy, Unbounded, Utilization,
};

fn ss(c: u64, t: u64) -> Server {
    Server::Sporadic(
        SporadicServer::new(
            Nanos(c),
            Nanos(t),
            32,
            ServerPriority::RateMonotonic,
            false,
            Nanos(0),
        )
        .unwrap(),
    )
}

fn add(s: &mut Scheduler, name: &str, server: Server) -> (ServerId, ThreadId) {
    let v = s
        .add_server(name, server, ThreadPolicy::FixedPriority)
        .unwrap();
    let t = s.add_thread(name, v, 1).unwrap();
    (v, t)
}

fn seg(server: usize, start: u64, end: u64) -> (usize, u64, u64) {
    (server, start, end)
}

fn flat(segs: &[Segment]) -> Vec<(usize, u64, u64)> {
    segs.iter().map(|s| (s.server.0, s.start, s.end)).collect()
}

/// QUEST-VCPU Table 1 VCPUs, each with one CPU-bound thread:
/// VCPU0 2/5, VCPU1 2/8, VCPU2 1/4, VCPU3 1/10 (rate-monotonic). Every
/// segment below was worked out by hand from Alg. 1-5 and 11: a backlogged
/// sporadic server gets each chunk back one period after the time it became
/// available, so it behaves like a periodic task (QUEST-VCPU §2.1).
#[test]
fn table1_cpu_bound_schedule() {
    let mut s = Scheduler::new();
    let (_, t0) = add(&mut s, "VCPU0", ss(2, 5));
    let (_, t1) = add(&mut s, "VCPU1", ss(2, 8));
    let (_, t2) = add(&mut s, "VCPU2", ss(1, 4));
    let (_, t3) = add(&mut s, "VCPU3", ss(1, 10));
    let segs = run(&mut s, vec![], &[t0, t1, t2, t3], 20, &mut |_, _| {});
    assert_eq!(
        flat(&segs),
        vec![
            seg(2, 0, 1),
            seg(0, 1, 3),
            seg(1, 3, 4),
            seg(2, 4, 5),
            seg(0, 5, 7),
            seg(1, 7, 8),
            seg(2, 8, 9),
            seg(1, 9, 10),
            seg(0, 10, 12),
            seg(2, 12, 13),
            seg(1, 13, 14),
            seg(3, 14, 15),
            seg(0, 15, 16),
            seg(2, 16, 17),
            seg(0, 17, 18),
            seg(1, 18, 20),
        ]
    );
}

/// Alg. 1 lines 13-17: `next_update` is the earlier of the chosen server's
/// budget exhaustion and the next replenishment of a higher-priority
/// runnable server -- not of a lower-priority one.
#[test]
fn next_update_is_exhaustion_or_higher_priority_replenishment() {
    let mut s = Scheduler::new();
    let (v0, t0) = add(&mut s, "hi", ss(1, 4));
    let (v1, t1) = add(&mut s, "mid", ss(3, 8));
    let (_, t2) = add(&mut s, "lo", ss(1, 5));
    for t in [t0, t1, t2] {
        s.wakeup(Nanos(0), t, None).unwrap();
    }
    let d = s.schedule(Nanos(0)).unwrap();
    assert_eq!((d.server, d.next_update), (Some(v0), Some(Nanos(1))));
    let d = s.schedule(Nanos(1)).unwrap();
    // "lo" (period 5) is below "mid"? No: RM puts period 5 above 8, so "lo"
    // runs next, until its budget ends at 2.
    assert_eq!(d.server, Some(ServerId(2)));
    assert_eq!(d.next_update, Some(Nanos(2)));
    let d = s.schedule(Nanos(2)).unwrap();
    // "mid" runs with 3 units, but "hi" replenishes at 4 and "lo" at 5:
    // only "hi" is above "mid" and bounds the slice.
    assert_eq!((d.server, d.next_update), (Some(v1), Some(Nanos(4))));
}

/// Alg. 2 line 5: a wake-up preempts only a lower-priority or idle CPU.
#[test]
fn wakeup_preempts_lower_priority_only() {
    let mut s = Scheduler::new();
    let (_, hi) = add(&mut s, "hi", ss(1, 4));
    let (lo_v, lo) = add(&mut s, "lo", ss(2, 10));
    let (_, lower) = add(&mut s, "lower", ss(2, 20));
    assert!(
        s.wakeup(Nanos(0), lo, None).unwrap(),
        "idle CPU is preempted"
    );
    let d = s.schedule(Nanos(0)).unwrap();
    assert_eq!(d.server, Some(lo_v));
    assert!(!s.wakeup(Nanos(1), lower, None).unwrap());
    assert!(s.wakeup(Nanos(1), hi, None).unwrap());
}

/// Equal keys are ordered by server id, whatever the wake-up order.
#[test]
fn ties_are_broken_by_server_id() {
    let mut s = Scheduler::new();
    let (a, ta) = add(&mut s, "a", ss(1, 10));
    let (_, tb) = add(&mut s, "b", ss(1, 10));
    s.wakeup(Nanos(0), tb, None).unwrap();
    s.wakeup(Nanos(0), ta, None).unwrap();
    assert_eq!(s.schedule(Nanos(0)).unwrap().server, Some(a));
}

/// A sporadic server that blocks early keeps the rest of its budget
/// (Alg. 12 split) and gets the consumed part back one period after it
/// became active. C = 2, T = 10: 1 unit at 0, 1 unit at 3, a third request
/// at 5 waits for the replenishment at 10.
#[test]
fn sporadic_split_through_scheduler() {
    let mut s = Scheduler::new();
    let (v, t) = add(&mut s, "io", ss(2, 10));
    let arr = |at, amount| Arrival {
        at,
        thread: t,
        amount,
        inherit: None,
    };
    let segs = run(
        &mut s,
        vec![arr(0, 1), arr(3, 1), arr(5, 1)],
        &[],
        20,
        &mut |_, _| {},
    );
    assert_eq!(
        flat(&segs),
        vec![seg(v.0, 0, 1), seg(v.0, 3, 4), seg(v.0, 10, 11)]
    );
}

/// Deferrable vs sporadic release behaviour, C = 2, T = 10, 4 units of
/// work arriving at 8: the deferrable server runs its old budget [8, 10)
/// and the refill at the boundary [10, 12) back to back (the DS "double
/// hit" behind its release jitter T - C); the sporadic server runs [8, 10)
/// and gets that budget back only at 8 + T = 18.
#[test]
fn deferrable_vs_sporadic_release() {
    let ds = Server::Deferrable(
        irqlab_core::DeferrableServer::new(
            Nanos(2),
            Nanos(10),
            ServerPriority::RateMonotonic,
            Nanos(0),
        )
        .unwrap(),
    );
    for (server, want) in [
        (ds, vec![seg(0, 8, 12)]),
        (ss(2, 10), vec![seg(0, 8, 10), seg(0, 18, 20)]),
    ] {
        let mut s = Scheduler::new();
        let (_, t) = add(&mut s, "v", server);
        let arr = vec![Arrival {
            at: 8,
            thread: t,
            amount: 4,
            inherit: None,
        }];
        let segs = run(&mut s, arr, &[], 25, &mut |_, _| {});
        assert_eq!(flat(&segs), want);
    }
}

/// PIBS through the scheduler (QUEST-VCPU Figure 2): an I/O VCPU with
/// U = 1/2 serving a Main VCPU of period 4 runs 1 unit at 0, is eligible
/// again at 2 and runs C_max = 2 there: 3 units in [0, 4).
#[test]
fn pibs_figure2_through_scheduler() {
    let mut s = Scheduler::new();
    let io = s
        .add_server(
            "iovcpu",
            Server::Pibs(Pibs::new(Utilization::new(1, 2).unwrap(), Inherit::Paper).unwrap()),
            ThreadPolicy::FixedPriority,
        )
        .unwrap();
    let bh = s.add_thread("bh", io, 1).unwrap();
    let arr = |at, amount| Arrival {
        at,
        thread: bh,
        amount,
        inherit: Some(4),
    };
    let segs = run(&mut s, vec![arr(0, 1), arr(1, 5)], &[], 8, &mut |_, _| {});
    assert_eq!(flat(&segs), vec![seg(0, 0, 1), seg(0, 2, 4), seg(0, 6, 8)]);
    assert_eq!(s.pibs(io).unwrap().period(), Some(Nanos(4)));
}

/// PIBS inherits the period (priority) of the Main VCPU it serves: serving
/// a period-3 Main VCPU it runs above a period-5 server, serving a period-9
/// one below it; at an equal period (5) the I/O VCPU goes first.
#[test]
fn pibs_priority_inheritance_orders_against_main_vcpus() {
    for (main_period, io_first) in [(3u64, true), (5, true), (9, false)] {
        let mut s = Scheduler::new();
        let (m, tm) = add(&mut s, "main", ss(2, 5));
        let io = s
            .add_server(
                "io",
                Server::Pibs(Pibs::new(Utilization::new(1, 2).unwrap(), Inherit::Paper).unwrap()),
                ThreadPolicy::FixedPriority,
            )
            .unwrap();
        let bh = s.add_thread("bh", io, 1).unwrap();
        s.wakeup(Nanos(0), tm, None).unwrap();
        s.wakeup(Nanos(0), bh, Some(Nanos(main_period))).unwrap();
        let d = s.schedule(Nanos(0)).unwrap();
        assert_eq!(d.server, Some(if io_first { io } else { m }));
    }
}

/// The deadline class (CBS) runs above every fixed-priority server, even
/// an unbounded one with the most urgent rank.
#[test]
fn deadline_class_above_fixed_priority() {
    let mut s = Scheduler::new();
    let (_, tf) = add(&mut s, "fifo99", Server::Unbounded(Unbounded::new(1)));
    let (dl, td) = add(
        &mut s,
        "dl",
        Server::Cbs(Cbs::new(Nanos(2), Nanos(10), Nanos(0)).unwrap()),
    );
    let segs = run(&mut s, vec![], &[tf, td], 12, &mut |_, _| {});
    // CBS 2/10 runs [0,2), is throttled until 10, runs [10,12).
    assert_eq!(
        flat(&segs),
        vec![seg(dl.0, 0, 2), seg(0, 2, 10), seg(dl.0, 10, 12)]
    );
}

/// Round robin inside a server: two threads alternate every quantum.
#[test]
fn round_robin_inside_a_server() {
    let mut s = Scheduler::new();
    let v = s
        .add_server(
            "rr",
            Server::Unbounded(Unbounded::new(5)),
            ThreadPolicy::RoundRobin { quantum: Nanos(3) },
        )
        .unwrap();
    let a = s.add_thread("a", v, 1).unwrap();
    let b = s.add_thread("b", v, 1).unwrap();
    let segs = run(&mut s, vec![], &[a, b], 12, &mut |_, _| {});
    let threads: Vec<(usize, u64, u64)> =
        segs.iter().map(|x| (x.thread.0, x.start, x.end)).collect();
    assert_eq!(threads, vec![(0, 0, 3), (1, 3, 6), (0, 6, 9), (1, 9, 12)]);
}

/// Background mode: a depleted sporadic server with `background: true`
/// runs when nothing else can, and its background time is not charged.
#[test]
fn background_mode_runs_below_everyone() {
    let mut s = Scheduler::new();
    let bg = Server::Sporadic(
        SporadicServer::new(
            Nanos(1),
            Nanos(10),
            32,
            ServerPriority::RateMonotonic,
            true,
            Nanos(0),
        )
        .unwrap(),
    );
    let (v, t) = add(&mut s, "bg", bg);
    let segs = run(&mut s, vec![], &[t], 12, &mut |_, _| {});
    let fg: Vec<(u64, u64, bool)> = segs
        .iter()
        .map(|x| (x.start, x.end, x.background))
        .collect();
    assert_eq!(
        fg,
        vec![
            (0, 1, false),
            (1, 10, true),
            (10, 11, false),
            (11, 12, true)
        ]
    );
    assert_eq!(s.server(v).unwrap().kind(), "sporadic");
}

/// Invalid calls are errors, not panics.
#[test]
fn invalid_calls_are_errors() {
    let mut s = Scheduler::new();
    assert!(s.add_thread("x", ServerId(3), 1).is_err());
    assert!(s.wakeup(Nanos(0), ThreadId(9), None).is_err());
    s.schedule(Nanos(5)).unwrap();
    assert!(s.schedule(Nanos(4)).is_err());
    assert!(s
        .add_server(
            "rr",
            Server::Unbounded(Unbounded::new(1)),
            ThreadPolicy::RoundRobin { quantum: Nanos(0) }
        )
        .is_err());
}

/// `exclude`: time taken by a hypervisor ISR is not charged. A 5/10
/// sporadic server runs from 0; 3 units of ISR happen inside [0, 6): at 6
/// only 3 units are charged, so 2 of its 5 remain.
#[test]
fn excluded_time_is_not_charged() {
    let mut s = Scheduler::new();
    let (v, t) = add(&mut s, "vcpu", ss(5, 10));
    s.wakeup(Nanos(0), t, None).unwrap();
    s.schedule(Nanos(0)).unwrap();
    s.exclude(Nanos(3));
    let d = s.schedule(Nanos(6)).unwrap();
    assert_eq!(d.server, Some(v));
    assert_eq!(
        irqlab_core::ServerPolicy::budget(s.server(v).unwrap()),
        Nanos(2)
    );
    assert_eq!(d.next_update, Some(Nanos(8)));
}

/// A deferrable server's slice that crosses its period boundary: C = 4,
/// T = 10, thread a runs from 7; an ISR takes [10, 11) (`exclude_until`);
/// thread b of the same server wakes at 11, while a runs. At 11 the new
/// period has paid nothing (its only time went to the ISR): budget 4; at
/// 12 it has paid 1: budget 3. (Charging the whole slice to the new period
/// -- what rolling at b's wake-up did -- would leave 0; bounding the part
/// after the boundary by `now - 10` without the ISR's place, 2.)
#[test]
fn deferrable_slice_across_its_boundary() {
    let ds = Server::Deferrable(
        irqlab_core::DeferrableServer::new(
            Nanos(4),
            Nanos(10),
            ServerPriority::RateMonotonic,
            Nanos(0),
        )
        .unwrap(),
    );
    let mut s = Scheduler::new();
    let (v, a) = add(&mut s, "v", ds);
    let b = s.add_thread("b", v, 1).unwrap();
    let budget = |s: &Scheduler| irqlab_core::ServerPolicy::budget(s.server(v).unwrap());
    s.wakeup(Nanos(7), a, None).unwrap();
    let d = s.schedule(Nanos(7)).unwrap();
    assert_eq!((d.server, d.next_update), (Some(v), Some(Nanos(11))));
    s.exclude_until(Nanos(11), Nanos(1));
    s.wakeup(Nanos(11), b, None).unwrap();
    s.schedule(Nanos(11)).unwrap();
    assert_eq!(budget(&s), Nanos(4));
    s.schedule(Nanos(12)).unwrap();
    assert_eq!(budget(&s), Nanos(3));
}
