//! YAML -> validated model -> lowered configuration -> a bounded
//! simulation (at most 1 ms of simulated time).
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok((model, _)) = irqlab_model::load_str(text) else {
        return;
    };
    // no trace files are read from the fuzzer's working directory
    if let Ok(cfg) = irqlab_sim::from_model(&model, std::path::Path::new("/nonexistent")) {
        irqlab_fuzz::bounded_simulate(cfg);
    }
});
