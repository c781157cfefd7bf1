//! Tests of `SimConfig::check`'s limits (bad input never panics, wraps or hangs: docs/model.md).
use super::*;

fn hypervisor() -> SimConfig {
    let (m, _) = irqlab_model::load_str(
        "machine: {cpus: 1, path: hypervisor}
simulation: {duration: 1ms, window: 1ms}
vms:
  physical_interrupts:
    - {name: nic, cpu: 0, isr: 5us, min_interarrival: 100us}
  guests:
    - name: g
      vcpus:
        - {name: v0, cpu: 0, policy: sporadic, budget: 2ms, period: 10ms,
           tasks: [{name: rx, priority: 1, wcet: 50us}]}
      virtual_interrupts:
        - {name: virq, physical: nic, vcpu: v0, isr: 5us, priority: 1, dsr: [rx]}
",
    )
    .expect("valid model");
    crate::from_model(&m, std::path::Path::new(".")).expect("lowers")
}

fn rule(c: &SimConfig) -> String {
    c.check().expect_err("must be refused").to_string()
}

#[test]
fn the_base_is_valid() {
    hypervisor().check().expect("valid");
}

#[test]
fn hypervisor_devices_have_their_arrivals_checked() {
    let mut c = hypervisor();
    if let DeviceKind::Generic {
        min_interarrival, ..
    } = &mut c.devices[0].kind
    {
        *min_interarrival = 0;
    }
    assert!(
        rule(&c).contains("devices[0].min_interarrival"),
        "{}",
        rule(&c)
    );
}

#[test]
fn times_windows_and_max_repl_are_bounded() {
    let mut c = hypervisor();
    c.duration = u64::MAX;
    assert!(rule(&c).starts_with("duration"), "{}", rule(&c));
    let mut c = hypervisor();
    (c.duration, c.window) = (1_000_000_000_000, 1);
    assert!(
        rule(&c).contains("windows: at most 1000000"),
        "{}",
        rule(&c)
    );
    let mut c = hypervisor();
    c.tasks.push(TaskCfg {
        name: "t".into(),
        server: 0,
        priority: 1,
        release: Release::Once { at: 0 },
        program: vec![Phase::Loop {
            count: Some(1_000_000_000),
            body: vec![Phase::Sleep {
                ns: 1_000_000_000_000,
            }],
        }],
        abort_on_miss: false,
    });
    assert!(rule(&c).contains("exceed the longest time"), "{}", rule(&c));
    let mut c = hypervisor();
    if let PolicyCfg::Sporadic { max_repl, .. } = &mut c.servers[0].policy {
        *max_repl = 4_000_000_000;
    }
    assert!(rule(&c).contains("max_repl"), "{}", rule(&c));
}
