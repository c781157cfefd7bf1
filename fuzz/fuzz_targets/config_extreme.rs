//! Structure-aware: take a valid configuration (the first bytes pick one
//! of the shipped examples, lowered), then let the rest of the input pick
//! numeric fields and overwrite them with extreme values (0, 1, 2, 2^40,
//! 2^63, u64::MAX, ...). The result is checked and, when accepted,
//! simulated for at most 1 ms with overflow checks on: a value `check`
//! accepts must never overflow the simulator's arithmetic.
#![no_main]
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

const SEEDS: &[&str] = &[
    include_str!("../seeds/quest.json"),
    include_str!("../seeds/quest_usb.json"),
    include_str!("../seeds/linux_usb.json"),
    include_str!("../seeds/hypervisor.json"),
];

fn numbers<'a>(v: &'a mut Value, out: &mut Vec<&'a mut Value>) {
    match v {
        Value::Number(_) => out.push(v),
        Value::Array(a) => a.iter_mut().for_each(|x| numbers(x, out)),
        Value::Object(o) => o.values_mut().for_each(|x| numbers(x, out)),
        _ => {}
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&pick, rest)) = data.split_first() else {
        return;
    };
    let Ok(mut v) = serde_json::from_str::<Value>(SEEDS[pick as usize % SEEDS.len()]) else {
        return;
    };
    let mut slots = Vec::new();
    numbers(&mut v, &mut slots);
    if slots.is_empty() {
        return;
    }
    let n = slots.len();
    for pair in rest.chunks(2) {
        let (&at, &what) = (&pair[0], pair.get(1).unwrap_or(&0));
        let x = irqlab_fuzz::EXTREMES[what as usize % irqlab_fuzz::EXTREMES.len()];
        *slots[at as usize % n] = Value::from(x);
    }
    if let Ok(cfg) = serde_json::from_value::<irqlab_sim::SimConfig>(v) {
        irqlab_fuzz::bounded_simulate(cfg);
    }
});
