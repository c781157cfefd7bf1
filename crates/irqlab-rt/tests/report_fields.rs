//! The report fields the measured reproductions read: the supervisor's own
//! CPU time (QUEST-VCPU Figure 7 measured) and the raw dispatch latencies
//! kept on request (replayed through the Latencies IP for LATENCY-IP
//! Table 4). Structure only: no timing is asserted.

use irqlab_rt::scenario::run_str;

const SCENARIO: &str = "
runtime: {duration: 200ms, report_samples: 5}
vcpus:
  - {name: app, policy: sporadic, budget: 1ms, period: 10ms}
  - {name: io.sensor, kind: io, policy: pibs, utilization: 10%, io_class: sensor, serves: app}
tasks:
  - {name: spin, vcpu: app, period: 10ms, work: 500us}
sources:
  - {name: tick, kind: timerfd, interval: 1ms, work: 2us, upcall: {budget: 1ms, period: 10ms}}
  - {name: sensor, kind: eventfd, interval: 2ms, work: 2us, class: sensor}
";

#[test]
fn supervisor_cpu_time_and_first_samples() {
    let r = match run_str("report_fields.yaml", SCENARIO, None) {
        Ok(r) => r,
        Err(e) if e.is_unavailable() => {
            eprintln!("SKIPPED: {e}");
            return;
        }
        Err(e) => panic!("{e}"),
    };
    let rep = &r.report;
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
    // Absent unless asked for.
    let plain = SCENARIO.replace(", report_samples: 5", "");
    if let Ok(r) = run_str("plain.yaml", &plain, Some(irqlab_core::Nanos::from_ms(50))) {
        assert!(r
            .report
            .events
            .iter()
            .all(|e| e.dispatch_samples_ns.is_empty()));
        let j = serde_json::to_string(&r.report).unwrap();
        assert!(!j.contains("dispatch_samples_ns"));
    }
}
