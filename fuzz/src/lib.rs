//! Helpers shared by the fuzz targets: run a checked configuration for a
//! bounded simulated time and assert the answer is metrics or a clear
//! error, and decode a `config_extreme` input into a configuration (a
//! shipped seed or one from the project's proptest generators, with
//! extreme values written into chosen numeric fields).
//!
//! Design principles: a target fails only on a panic, abort, hang,
//! overflow (overflow checks are on in this crate's profile) or an error
//! that does not name its field; every such error the library returns is
//! a correct answer to hostile input. Decoding is deterministic: the same
//! bytes give the same configuration (`IRQLAB_FUZZ_PRINT=1` prints it).

use irqlab_sim::SimConfig;
use proptest::strategy::{Strategy, ValueTree};
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
use serde_json::Value;

/// Longest simulated time a fuzz run simulates (1 ms): enough for every
/// path to reach its steady state, short enough for thousands of runs.
pub const MAX_SIM_NS: u64 = 1_000_000;

/// Check `cfg`; when valid, simulate at most `MAX_SIM_NS` of it
/// (interrupt storms included: the simulator's bounded handler queue
/// makes them linear). Panics (a fuzz failure) when an error does not
/// name its field (`path: value: rule`) or a run reports no time.
pub fn bounded_simulate(mut cfg: SimConfig) {
    if let Err(e) = cfg.check() {
        assert_clear(&e);
        return;
    }
    cfg.duration = cfg.duration.min(MAX_SIM_NS);
    cfg.window = cfg.window.min(cfg.duration);
    cfg.trace.enabled = false;
    match irqlab_sim::simulate(cfg) {
        Ok((m, _)) => assert!(m.duration_ns > 0, "a run that simulated no time"),
        Err(e) => assert_clear(&e),
    }
}

/// An error is clear when it names where it is (`path: value: rule` or
/// `context: cause`), as every `SimError` must.
fn assert_clear(e: &irqlab_sim::SimError) {
    let text = e.to_string();
    assert!(
        text.contains(": ") && !text.starts_with(':'),
        "an error that names no field: {text:?}"
    );
}

/// The values at the edges: 0, 1, 2, 2^40, 2^63, u64::MAX and neighbours.
pub const EXTREMES: [u64; 10] = [
    0,
    1,
    2,
    1 << 40,
    (1 << 40) + 1,
    1 << 63,
    (1 << 63) - 1,
    u64::MAX,
    u64::MAX - 1,
    1_000_000_000_000_000,
];

/// The shipped examples, lowered to configurations (`fuzz/seeds`).
const SEEDS: &[&str] = &[
    include_str!("../seeds/quest.json"),
    include_str!("../seeds/quest_usb.json"),
    include_str!("../seeds/linux_usb.json"),
    include_str!("../seeds/hypervisor.json"),
];

/// Bytes of a `config_extreme` input that seed the generator.
pub const GEN_SEED_BYTES: usize = 8;

/// Decode a `config_extreme` input into a configuration:
/// * byte 0 below 4 picks a shipped seed, and the rest are the pairs;
/// * any other byte 0: bytes 1..=8 seed a ChaCha `TestRng` (zero-padded
///   to its 32-byte seed) and `irqlab_sim::testgen::config()` generates a
///   system from it; the pairs start at byte 9;
/// * each pair `(at, what)` writes `EXTREMES[what]` into numeric field
///   number `at` (mod the count, in serde_json's key order) of the JSON
///   form of the configuration.
///
/// `None` when the result is not a configuration (an extreme value
/// written where the type cannot hold it, e.g. a u32 field).
pub fn decode(data: &[u8]) -> Option<Value> {
    let (&pick, rest) = data.split_first()?;
    let (mut v, pairs) = match SEEDS.get(pick as usize) {
        Some(seed) => (serde_json::from_str::<Value>(seed).ok()?, rest),
        None => {
            let n = rest.len().min(GEN_SEED_BYTES);
            let mut seed = [0u8; 32];
            seed[..n].copy_from_slice(&rest[..n]);
            (serde_json::to_value(generate(&seed)?).ok()?, &rest[n..])
        }
    };
    let mut slots = Vec::new();
    numbers(&mut v, &mut slots);
    let n = slots.len();
    if n > 0 {
        for pair in pairs.chunks(2) {
            let (at, what) = (pair[0], pair.get(1).copied().unwrap_or(0));
            *slots[at as usize % n] = Value::from(EXTREMES[what as usize % EXTREMES.len()]);
        }
    }
    Some(v)
}

/// One system from the project's generator, from a 32-byte ChaCha seed.
pub fn generate(seed: &[u8; 32]) -> Option<SimConfig> {
    let rng = TestRng::from_seed(RngAlgorithm::ChaCha, seed);
    let mut runner = TestRunner::new_with_rng(Config::default(), rng);
    let tree = irqlab_sim::testgen::config().new_tree(&mut runner).ok()?;
    Some(tree.current())
}

/// Every number in `v`, depth first in key order.
fn numbers<'a>(v: &'a mut Value, out: &mut Vec<&'a mut Value>) {
    match v {
        Value::Number(_) => out.push(v),
        Value::Array(a) => a.iter_mut().for_each(|x| numbers(x, out)),
        Value::Object(o) => o.values_mut().for_each(|x| numbers(x, out)),
        _ => {}
    }
}
