//! A model's upcalls and sources on real threads (`model_run/upcalls.rs`,
//! `sources.rs`): a pipe's items reach a reading task through a user
//! upcall whose budget bounds what it handles; the `runtime:` options
//! reach irqlab-rt (io_uring top half, required SCHED_FIFO). Counts and
//! budget bounds only, no timing; skipped with the kernel's reason when
//! SCHED_FIFO (or io_uring) is not permitted.

mod common;

use irqlab_rt::model_run::run_model;

/// A pipe item every 200 us, 100 us of handler each, on an upcall of 1 ms
/// per 10 ms: at most 10 handlers per period (plus the one that overruns
/// the budget, which a sporadic server pays back), far below the 50 sent
/// per period; a task reads every item the upcall delivered.
const MODEL: &str = "machine: {cpus: 1, path: quest}
simulation: {duration: 300ms}
runtime: {require_fifo: true, backend: BACKEND}
vcpus: [{name: m, policy: sporadic, budget: 2ms, period: 10ms}]
tasks: [{name: r, vcpu: m, program: [{forever: [{read: p}, {compute: 10us}]}]}]
devices:
  - {name: p, kind: generic, source: pipe, min_interarrival: 200us, isr: 0us, dsr: 100us,
     upcall: {budget: 1ms, period: 10ms}}
";

#[test]
fn a_pipe_feeds_a_reader_through_a_budgeted_user_upcall() {
    let _g = common::serial();
    for backend in ["epoll", "io-uring"] {
        let r = match run_model("m", &MODEL.replace("BACKEND", backend), None, None) {
            Ok(r) => r,
            Err(e) if e.is_unavailable() => {
                irqlab_rt::skipped!("{backend}: {e}");
                continue;
            }
            Err(e) => panic!("{backend}: {e}"),
        };
        assert_eq!(
            r.mode, "fifo",
            "{backend}: require_fifo reached the runtime"
        );
        let rep = r.runtime.as_ref().expect("report");
        let ev = rep.event("p").expect("the upcall's event path");
        assert_eq!(ev.path, "upcall");
        let d = &r.devices[0];
        assert_eq!(d.class, "p.upcall");
        // Every item the upcall handled was one the generator sent, and the
        // reader took what the upcall delivered (bounded by the buffer).
        assert!(d.handled > 0 && d.handled <= d.sent, "{backend}: {d:?}");
        assert_eq!(ev.items, d.handled, "{backend}");
        assert!(
            d.latency.count > 0 && d.latency.count <= d.handled,
            "{backend}: {d:?}"
        );
        // The budget: 11 handlers per started 10 ms period at most.
        let periods = rep.duration_ns / 10_000_000 + 1;
        assert!(
            d.handled <= 11 * periods,
            "{backend}: {} in {periods} periods",
            d.handled
        );
        assert!(
            ev.deferrals > 0,
            "{backend}: the budget never deferred an event"
        );
    }
}
