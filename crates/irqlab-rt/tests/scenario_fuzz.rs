//! The runtime scenario loader on bad input: garbled versions of the
//! shipped scenario are accepted or refused with an error, never a panic;
//! refusals name a field. (`check_str` builds the runtime without starting
//! it.)

use irqlab_rt::scenario::check_str;
use irqlab_rt::RtError;
use proptest::prelude::*;

const SHIPPED: &str = include_str!("../../../python/irqlab/scenarios/runtime/isolation.yaml");

#[test]
fn shipped_scenario_checks() {
    check_str("isolation.yaml", SHIPPED).expect("the shipped scenario is valid");
}

#[test]
fn refusals_name_field_value_and_rule() {
    let cases = [
        ("work: 600us}", "work: -600us}", "tasks[0].work = -600us"),
        (
            "period: 10ms, work",
            "period: 0ms, work",
            "tasks[0].period = 0ms",
        ),
        ("batch: 32", "batch: 0", "sources[1].batch = 0"),
        (
            "kind: udp",
            "kind: carrier-pigeon",
            "sources[1].kind = carrier-pigeon",
        ),
        (
            "utilization: 5%",
            "utilization: 500%",
            "vcpus[3].utilization",
        ),
        (
            "serves: bulk}",
            "serves: nobody}",
            "vcpus[3].serves = nobody",
        ),
        (
            "runtime: {duration: 2s}",
            "runtime: {duration: 2s, cpus: [4096]}",
            "cpus = 4096",
        ),
        (
            "runtime: {duration: 2s}",
            "runtime: {duration: 2s, report_samples: 100000000}",
            "runtime.report_samples = 100000000",
        ),
    ];
    for (from, to, needle) in cases {
        assert!(SHIPPED.contains(from), "{from}");
        let text = SHIPPED.replacen(from, to, 1);
        let e = check_str("bad.yaml", &text).expect_err(to);
        assert!(e.to_string().contains(needle), "{to}: {e}");
        assert!(
            matches!(e, RtError::Config { .. } | RtError::Core(_)),
            "{e}"
        );
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
    fn garbled_scenarios_never_panic(line in 0usize..64, op in 0u8..5, byte in any::<u8>()) {
        let text = mutate(SHIPPED, line, op, byte);
        // Either outcome is fine; a panic fails the property.
        let _ = check_str("garbled.yaml", &text);
    }
}
