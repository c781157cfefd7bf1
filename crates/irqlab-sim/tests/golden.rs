//! Golden metrics: every system that the shipped scenarios and the
//! `irqlab reproduce` experiments give the simulator (recorded by
//! `tests/golden/generate.py`) must give the same `metrics.json` text, byte
//! for byte. Refactorings and optimisations of the simulator may not change
//! a result; a deliberate change of behaviour regenerates the files and says
//! so in its commit: `IRQLAB_GOLDEN_WRITE=1 cargo test -p irqlab-sim
//! --release --test golden` rewrites the metrics of the recorded systems
//! (`tests/golden/generate.py` re-records the systems themselves).

use std::path::PathBuf;

use irqlab_sim::{simulate, SimConfig, Simulation};

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
    for (i, path) in configs.iter().enumerate() {
        let text = std::fs::read_to_string(path).expect("readable config");
        let cfg: SimConfig = serde_json::from_str(&text).expect("valid config");
        // every other system in slices (`run_until`): the same run exactly
        let sliced = i % 2 == 1;
        let metrics = if sliced {
            let slices = 7;
            let end = cfg.duration;
            let mut sim = Simulation::new(cfg).expect("the golden system builds");
            for k in 1..=slices {
                sim.run_until(end / slices * k).expect("slice runs");
            }
            sim.run_until(end).expect("last slice runs");
            sim.finish().expect("finishes").0
        } else {
            simulate(cfg).expect("the golden system simulates").0
        };
        let got = serde_json::to_string(&metrics).expect("serialisable metrics");
        let want_path = PathBuf::from(
            path.to_string_lossy()
                .replace(".config.json", ".metrics.json"),
        );
        if std::env::var_os("IRQLAB_GOLDEN_WRITE").is_some() {
            // a deliberate change: rewrite, then review `git diff`
            std::fs::write(&want_path, format!("{got}\n")).expect("writable golden file");
            continue;
        }
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

/// A run stopped early: metrics marked partial, covering the time reached.
#[test]
fn finishing_early_gives_partial_metrics() {
    let path = golden_dir().join("scenario-usb-priority-inversion-000.config.json");
    let text = std::fs::read_to_string(path).expect("readable config");
    let mut cfg: SimConfig = serde_json::from_str(&text).expect("valid config");
    cfg.window = cfg.duration / 10;
    let (end, window) = (cfg.duration, cfg.window);
    let (full, _) = irqlab_sim::simulate(cfg.clone()).expect("runs");
    let mut sim = Simulation::new(cfg).expect("builds");
    let half = end / 2 + 1;
    sim.run_until(half).expect("runs");
    assert_eq!(sim.now(), half);
    let (m, _) = sim.finish().expect("finishes");
    assert!(m.partial);
    assert_eq!(m.duration_ns, half);
    let nwin = half.div_ceil(window) as usize;
    assert!(nwin > 2 && m.servers.len() > 1);
    // every server keeps its own windows: those the cut did not reach are
    // the full run's
    for (s, f) in m.servers.iter().zip(&full.servers) {
        assert_eq!(s.share_windows.len(), nwin, "{}", s.name);
        assert_eq!(
            s.share_windows.to_vec()[..nwin - 1],
            f.share_windows.to_vec()[..nwin - 1]
        );
    }
    assert!(m.servers.iter().all(|s| s.share <= 1.0));
    let json = serde_json::to_string(&m).expect("serialisable");
    assert!(json.contains("\"partial\":true"));
}
