//! Golden metrics: every system that the shipped scenarios and the
//! `irqlab reproduce` experiments give the simulator (recorded by
//! `tests/golden/generate.py`) must give the same `metrics.json` text, byte
//! for byte. Refactorings and optimisations of the simulator may not change
//! a result; a deliberate change of behaviour regenerates the files and says
//! so in its commit.

use std::path::PathBuf;

use irqlab_sim::{simulate, SimConfig};

fn golden_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/golden")
}

#[test]
fn metrics_equal_the_golden_files() {
    let mut configs: Vec<PathBuf> = std::fs::read_dir(golden_dir())
        .expect("tests/golden exists")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.to_string_lossy().ends_with(".config.json"))
        .collect();
    configs.sort();
    assert!(configs.len() >= 50, "only {} golden systems", configs.len());
    let mut differ = Vec::new();
    for path in &configs {
        let text = std::fs::read_to_string(path).expect("readable config");
        let cfg: SimConfig = serde_json::from_str(&text).expect("valid config");
        let (metrics, _) = simulate(cfg).expect("the golden system simulates");
        let got = serde_json::to_string(&metrics).expect("serialisable metrics");
        let want_path = PathBuf::from(
            path.to_string_lossy()
                .replace(".config.json", ".metrics.json"),
        );
        let want = std::fs::read_to_string(&want_path).expect("golden metrics");
        if got != want.trim_end() {
            differ.push(path.file_name().map(|n| n.to_string_lossy().into_owned()));
        }
    }
    assert!(
        differ.is_empty(),
        "{} of {} systems changed their metrics: {differ:?}",
        differ.len(),
        configs.len()
    );
}
