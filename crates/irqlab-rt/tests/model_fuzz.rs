//! `irqlab run`'s one loader on bad input: garbled versions of the shipped
//! `isolation` model are accepted or refused with an error, never a panic;
//! refusals name the field, the value and the rule. (`check_model` loads
//! and lowers without starting anything.) These were the runtime-scenario
//! loader's cases, moved to the model.

use irqlab_rt::model_run::check_model;
use irqlab_rt::RtError;
use proptest::prelude::*;

const SHIPPED: &str = include_str!("../../../python/irqlab/scenarios/isolation.yaml");

#[test]
fn shipped_model_checks() {
    let p = check_model("isolation.yaml", SHIPPED).expect("the shipped model is valid");
    // The tick is a user upcall on a timerfd, the others bottom halves.
    let tick = p.devices.iter().find(|d| d.name == "tick").expect("tick");
    assert!(tick.upcall.is_some());
    assert_eq!(tick.class, "tick.upcall");
}

#[test]
fn refusals_name_field_value_and_rule() {
    let cases = [
        ("compute: 600us}", "compute: -600us}", "-600us"),
        (
            "period: 10ms, program",
            "period: 0ms, program",
            "tasks[0].period: 0: must be positive",
        ),
        (
            "kind: nic",
            "kind: carrier-pigeon",
            "unknown variant `carrier-pigeon`",
        ),
        (
            "utilization: 5%",
            "utilization: 500%",
            "vcpus[3].utilization",
        ),
        (
            "class: sensor, min",
            "class: nosuch, min",
            "I/O class nosuch: nosuch: the quest path needs an I/O VCPU",
        ),
        (
            "{read: sensor}",
            "{read: ghost}",
            "tasks[1].program[0].forever[0]: ghost: no such device",
        ),
        (
            "io_class: flood}",
            "io_class: flood, inherit: sideways}",
            "unknown variant `sideways`",
        ),
        (
            "upcall: {budget: 500us, period: 10ms}",
            "upcall: {budget: 20ms, period: 10ms}",
            "devices[2].upcall.budget: 20ms: must be in (0, period = 10ms]",
        ),
        (
            "simulation: {duration: 2s}",
            "simulation: {duration: 2s}\nruntime: {cpus: [4096]}",
            "runtime.cpus[0] = 4096",
        ),
        (
            "simulation: {duration: 2s}",
            "simulation: {duration: 2s}\nruntime: {report_samples: 100000000}",
            "runtime.report_samples = 100000000",
        ),
        (
            "simulation: {duration: 2s}",
            "simulation: {duration: 2s}\nruntime: {catch_up: skip}",
            "unknown field `catch_up`",
        ),
    ];
    for (from, to, needle) in cases {
        assert!(SHIPPED.contains(from), "{from}");
        let text = SHIPPED.replacen(from, to, 1);
        let e = check_model("bad.yaml", &text).expect_err(to);
        assert!(e.to_string().contains(needle), "{to}: {e}");
        assert!(matches!(e, RtError::Config { .. }), "{e}");
    }
}

fn mutate(text: &str, line: usize, op: u8, byte: u8) -> String {
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    let i = line % lines.len();
    match op % 5 {
        0 => {
            lines.remove(i);
        }
        1 => {
            let l = lines[i].clone();
            lines.insert(i, l);
        }
        2 => {
            // Replace one character with a troublesome one.
            let tricky = [b'{', b'}', b':', b',', b'-', b'0', b'%', b' ', b'"', b'x'];
            let mut bytes = lines[i].clone().into_bytes();
            if !bytes.is_empty() {
                let k = byte as usize % bytes.len();
                bytes[k] = tricky[byte as usize % tricky.len()];
            }
            lines[i] = String::from_utf8_lossy(&bytes).into_owned();
        }
        3 => lines[i] = lines[i].replace("ms", "s").replace("us", "ns"),
        _ => {
            let keep = byte as usize % (lines[i].len() + 1);
            let cut: String = lines[i].chars().take(keep).collect();
            lines[i] = cut;
        }
    }
    lines.join("\n")
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]
    #[test]
    fn garbled_models_never_panic(line in 0usize..64, op in 0u8..5, byte in any::<u8>()) {
        let text = mutate(SHIPPED, line, op, byte);
        // Either outcome is fine; a panic fails the property.
        let _ = check_model("garbled.yaml", &text);
    }
}
