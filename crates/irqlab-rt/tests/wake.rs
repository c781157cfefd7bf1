//! The last stage of an event's latency: a bottom half wakes the task that
//! waits for the data (DESIGN §7: arrival -> top half -> bottom-half start
//! and end -> task wake), and the task's wake latency is recorded from the
//! event's arrival.

mod common;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use irqlab_core::{Inherit, Nanos, Utilization};
use irqlab_rt::{sys, IoServer};

#[test]
fn bottom_half_wakes_waiting_task_and_latency_is_recorded() {
    let _g = common::serial();
    let Some(mut rt) = common::fifo_runtime() else {
        return;
    };
    let app = rt
        .main_vcpu("app", Nanos::from_ms(2), Nanos::from_ms(10), None)
        .expect("app");
    let woken = Arc::new(AtomicU64::new(0));
    let w2 = woken.clone();
    let task = rt
        .spawn(app, "consumer", 0, move |ctx| {
            while ctx.wait_wake() {
                w2.fetch_add(1, Ordering::SeqCst);
            }
        })
        .expect("task");
    let class = rt
        .io_class(
            "dev",
            IoServer::Pibs {
                utilization: Utilization::new(10, 100).expect("u"),
                serves: app,
                inherit: Inherit::Paper,
            },
            None,
        )
        .expect("class");
    let efd = sys::eventfd().expect("eventfd");
    let fd = efd.0;
    rt.bind_fd(fd, class, move |ev| {
        let n = sys::eventfd_drain(ev.fd);
        if n > 0 {
            ev.wake(task);
        }
        n
    })
    .expect("bind");
    rt.start().expect("start");
    let writer = std::thread::spawn(move || {
        let _ = sys::pin(0, 0);
        for _ in 0..200 {
            sys::eventfd_signal(fd);
            std::thread::sleep(Duration::from_millis(2));
        }
    });
    writer.join().expect("writer");
    std::thread::sleep(Duration::from_millis(20));
    let r = rt.stop();
    drop(efd);
    let t = r.task("consumer").expect("consumer");
    let e = r.event("dev").expect("class");
    eprintln!(
        "woken {} times; wake latency p50 {:?} p99 {:?} max {:?}; handling p50 {:?}",
        woken.load(Ordering::SeqCst),
        t.wake.p50,
        t.wake.p99,
        t.wake.max,
        e.handling.p50
    );
    assert_eq!(e.items, 200, "every eventfd signal was handled");
    assert!(
        t.wake.count >= 150,
        "wake latencies recorded: {}",
        t.wake.count
    );
    assert_eq!(t.wake.count, woken.load(Ordering::SeqCst));
    // The task runs after its bottom half started (same arrival time base).
    assert!(
        t.wake.min >= e.dispatch.min,
        "wake {:?} before dispatch {:?}",
        t.wake.min,
        e.dispatch.min
    );
}
