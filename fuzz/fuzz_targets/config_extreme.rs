//! Structure-aware: the input picks a valid configuration -- one of the
//! shipped examples, lowered, or a system from the project's proptest
//! generators (`irqlab_sim::testgen`, the robustness test's) seeded from
//! the input bytes -- then numeric fields to overwrite with extreme values
//! (0, 1, 2, 2^40, 2^63, u64::MAX, ...); see `irqlab_fuzz::decode`. The
//! result is checked and, when accepted, simulated for at most 1 ms with
//! overflow checks on: the answer is metrics or an error naming its
//! field, never a panic or a wrap-around.
#![no_main]
use libfuzzer_sys::fuzz_target;
use std::sync::OnceLock;

/// `IRQLAB_FUZZ_PRINT=1`: print each decoded configuration (to replay a
/// reproducer: `config_extreme ARTIFACT` with it set).
fn print() -> bool {
    static PRINT: OnceLock<bool> = OnceLock::new();
    *PRINT.get_or_init(|| std::env::var_os("IRQLAB_FUZZ_PRINT").is_some())
}

fuzz_target!(|data: &[u8]| {
    let Some(v) = irqlab_fuzz::decode(data) else {
        return;
    };
    if print() {
        eprintln!("{v}");
    }
    if let Ok(cfg) = serde_json::from_value::<irqlab_sim::SimConfig>(v) {
        irqlab_fuzz::bounded_simulate(cfg);
    }
});
