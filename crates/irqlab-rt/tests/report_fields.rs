//! The report fields the measured reproductions read from a model's real
//! run (`ModelRun::runtime`): the supervisor's own CPU time (QUEST-VCPU
//! Figure 7 measured) and the raw dispatch latencies kept on request
//! (`runtime: {report_samples}`, replayed through the Latencies IP for
//! LATENCY-IP Table 4), for a user upcall on a timerfd and a bottom half
//! on an I/O VCPU. Structure only: no timing is asserted.

use irqlab_rt::model_run::run_model;

const MODEL: &str = "
machine: {cpus: 1, path: quest}
simulation: {duration: 200ms}
runtime: {report_samples: 5}
vcpus:
  - {name: app, policy: sporadic, budget: 1ms, period: 10ms}
  - {name: io.sensor, kind: io, policy: pibs, utilization: 10%, io_class: sensor}
tasks:
  - {name: spin, vcpu: app, period: 10ms, program: [{compute: 500us}]}
devices:
  - {name: tick, kind: generic, source: timerfd, min_interarrival: 1ms, isr: 0us, dsr: 2us,
     upcall: {budget: 1ms, period: 10ms}}
  - {name: sensor, kind: generic, class: sensor, min_interarrival: 2ms, isr: 0us, dsr: 2us}
";

#[test]
fn supervisor_cpu_time_and_first_samples() {
    let r = match run_model("report_fields.yaml", MODEL, None, None) {
        Ok(r) => r,
        Err(e) if e.is_unavailable() => {
            irqlab_rt::skipped!("{e}");
            return;
        }
        Err(e) => panic!("{e}"),
    };
    let rep = r
        .runtime
        .as_ref()
        .expect("irqlab-rt's report on path quest");
    let sup = &rep.supervisors[0];
    assert!(sup.passes > 0);
    // The supervisor ran (it charged the spinning task), and used less CPU
    // than the run lasted.
    assert!(
        sup.cpu_time_ns > 0 && sup.cpu_time_ns < rep.duration_ns,
        "{sup:?}"
    );
    for name in ["tick", "io.sensor"] {
        let e = rep.event(name).expect(name);
        assert!(e.dispatch.count >= 5, "{name}: {} events", e.dispatch.count);
        assert_eq!(e.dispatch_samples_ns.len(), 5, "{name}");
        let (lo, hi) = (e.dispatch.min.unwrap(), e.dispatch.max.unwrap());
        assert!(e.dispatch_samples_ns.iter().all(|&s| lo <= s && s <= hi));
    }
    // The timerfd's expirations reached the upcall, which handled them.
    let tick = r.devices.iter().find(|d| d.name == "tick").expect("tick");
    assert!(tick.handled > 0 && tick.handled <= tick.sent, "{tick:?}");
    // Absent unless asked for.
    let plain = MODEL.replace("runtime: {report_samples: 5}\n", "");
    if let Ok(r) = run_model(
        "plain.yaml",
        &plain,
        Some(irqlab_core::Nanos::from_ms(50)),
        None,
    ) {
        let rep = r.runtime.expect("report");
        assert!(rep.events.iter().all(|e| e.dispatch_samples_ns.is_empty()));
        let j = serde_json::to_string(&rep).unwrap();
        assert!(!j.contains("dispatch_samples_ns"));
    }
}
