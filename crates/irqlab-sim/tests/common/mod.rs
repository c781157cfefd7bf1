//! Helpers shared by several test binaries of irqlab-sim: a tiny
//! deterministic generator for random machines and the golden systems'
//! configurations. Each binary uses what it needs (hence `dead_code`).

#![allow(dead_code)]

use std::path::PathBuf;

use irqlab_sim::config::SimConfig;

/// xorshift64: the same machines from the same seed, on every platform.
pub struct Rng(pub u64);

impl Rng {
    /// A value in `0..n` (`0` when `n` is 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n.max(1)
    }
}

/// Every `tests/golden/*.config.json` with its file name, sorted by name.
pub fn golden_configs() -> Vec<(String, SimConfig)> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/golden");
    let mut out: Vec<(String, SimConfig)> = std::fs::read_dir(dir)
        .expect("tests/golden exists")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.to_string_lossy().ends_with(".config.json"))
        .map(|p| {
            let text = std::fs::read_to_string(&p).expect("readable");
            let cfg: SimConfig = serde_json::from_str(&text).expect("valid config");
            let name = p.file_name().map(|n| n.to_string_lossy().into_owned());
            (name.unwrap_or_default(), cfg)
        })
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}
