//! The YAML model loader on arbitrary bytes: parse and validate must
//! return (a model or an error), never panic or hang.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = irqlab_model::load_str(text);
    }
});
