//! The simulator configuration as JSON (what Python passes to
//! `irqlab.sim.simulate`): parse, check, and a bounded simulation.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(cfg) = serde_json::from_slice::<irqlab_sim::SimConfig>(data) {
        irqlab_fuzz::bounded_simulate(cfg);
    }
});
