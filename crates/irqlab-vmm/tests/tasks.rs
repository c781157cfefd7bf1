//! The guest's task scheduler on the real VMM: periodic tasks released by
//! the guest's LAPIC timer (TSC-deadline mode, in-kernel LAPIC), run by
//! fixed priority with the devices' DSRs above them (VINT §III's guest).
//! Only structure and orderings are checked (no timing): releases happen
//! (never more than the elapsed time allows), every logged job runs after
//! its release, a more urgent job preempts a less urgent one and is never
//! preempted by it, and a DSR preempts both.
mod common;

use std::net::UdpSocket;
use std::time::Duration;

use irqlab_core::Nanos;
use irqlab_vmm::abi::FLAG_BUSY;
use irqlab_vmm::{DeviceConfig, DeviceKind, GuestTask, JobRecord, VmmConfig};

const HI: usize = 0;
const LO: usize = 1;

fn nested(inner: (u64, u64), outer: (u64, u64)) -> bool {
    inner.0 > outer.0 && inner.1 < outer.1
}

#[test]
fn periodic_tasks_run_by_fixed_priority_under_the_dsr() {
    require_kvm!();
    let ms = Nanos::from_ms;
    let tasks = vec![
        GuestTask {
            name: "hi".into(),
            priority: 10,
            period: ms(10),
            wcet: ms(1),
            offset: ms(3),
        },
        GuestTask {
            name: "lo".into(),
            priority: 5,
            period: ms(60),
            wcet: ms(25),
            offset: ms(0),
        },
    ];
    let vmm = common::start(VmmConfig {
        flags: FLAG_BUSY,
        tasks,
        dsr_cost: Nanos::from_us(200),
        devices: vec![DeviceConfig {
            name: "nic".into(),
            kind: DeviceKind::Udp {
                bind: "127.0.0.1:0".parse().expect("address"),
            },
        }],
        ..Default::default()
    });
    let addr = vmm.device_addr(0).expect("NIC address");
    let client = UdpSocket::bind("127.0.0.1:0").expect("socket");
    let t0 = std::time::Instant::now();
    for i in 0u64..40 {
        client.send_to(&i.to_le_bytes(), addr).expect("send");
        std::thread::sleep(Duration::from_millis(7));
    }
    let Some(vmm) = common::wait_completed(vmm, 0, 40, 5) else {
        return;
    };
    std::thread::sleep(Duration::from_millis(100));
    let elapsed = t0.elapsed().as_nanos() as u64;
    let r = common::stop_ok(vmm);
    let g = &r.guest;
    assert!(g.timer_armed, "the guest armed its TSC-deadline timer");
    assert!(g.work_loop_ns > 0.0);
    let run = r.duration_ns.max(elapsed);
    for (t, k) in g.tasks.iter().enumerate() {
        // Releases only as time passes (offset + k * period after boot),
        // and at least the first ones happened in 0.4 s.
        assert!(
            k.releases >= 2 && k.releases <= run / k.period_ns + 1,
            "task {t}: {} releases in {run} ns",
            k.releases
        );
        assert!(
            k.completed >= 1 && k.completed <= k.releases,
            "task {t}: {k:?}"
        );
        let logged = g.jobs.iter().filter(|j| j.task == t).count() as u64;
        assert_eq!(logged, k.completed, "every completed job is logged");
    }
    assert!(
        g.timer_interrupts >= g.tasks[LO].releases,
        "every release came from a timer interrupt"
    );
    for j in &g.jobs {
        assert!(j.release_ns <= j.start_ns && j.start_ns < j.end_ns, "{j:?}");
        // A job's WCET is CPU work (a loop calibrated at boot): it takes
        // time. Only a job that did no work is caught -- on this shared host
        // the calibration may run several times slower than the job, so no
        // tighter ratio is a fact about the guest.
        let wcet = g.tasks[j.task].wcet_ns;
        assert!(j.end_ns - j.start_ns >= wcet / 10, "{j:?} wcet {wcet}");
    }
    let span = |j: &JobRecord| (j.start_ns, j.end_ns);
    let his: Vec<_> = g.jobs.iter().filter(|j| j.task == HI).map(span).collect();
    let los: Vec<_> = g.jobs.iter().filter(|j| j.task == LO).map(span).collect();
    // Fixed priority: the less urgent job never starts inside a more
    // urgent one, and a more urgent job released during a less urgent one
    // runs inside it (lo computes 25 ms; hi is released every 10 ms).
    for h in &his {
        assert!(
            !los.iter().any(|l| l.0 > h.0 && l.0 < h.1),
            "lo started inside hi {h:?}: {los:?}"
        );
    }
    assert!(
        los.iter().any(|l| his.iter().any(|h| nested(*h, *l))),
        "no hi job preempted a lo job: hi {his:?} lo {los:?}"
    );
    // The DSR is above both tasks: no job starts inside a DSR, and some
    // DSR ran inside a job (events every 7 ms; lo runs 25 of every 60 ms).
    let dsrs: Vec<_> = r
        .events
        .iter()
        .map(|e| (e.dsr_start_ns, e.dsr_end_ns))
        .collect();
    assert_eq!(dsrs.len(), 40);
    for d in &dsrs {
        assert!(
            !g.jobs.iter().any(|j| j.start_ns > d.0 && j.start_ns < d.1),
            "a job started inside the DSR {d:?}"
        );
    }
    assert!(
        dsrs.iter()
            .any(|d| los.iter().chain(&his).any(|j| nested(*d, *j))),
        "no DSR preempted a job"
    );
    println!(
        "timer interrupts {}; work loop {:.0} ns/iteration; hi {}/{} lo {}/{}; response p50 hi {:?} lo {:?}",
        g.timer_interrupts,
        g.work_loop_ns,
        g.tasks[HI].completed,
        g.tasks[HI].releases,
        g.tasks[LO].completed,
        g.tasks[LO].releases,
        g.tasks[HI].response.p50,
        g.tasks[LO].response.p50
    );
}
