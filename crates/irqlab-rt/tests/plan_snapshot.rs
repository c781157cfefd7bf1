//! The guard of the runtime's plan: every model the repository ships
//! (`python/irqlab/scenarios`, `python/irqlab/experiments`) and every
//! hostile model (`tests/hostile/models`) is planned for a real run
//! (`model_run::plan::plan`, without running anything) and the plan's
//! `Debug` form -- or the refusal, with its field path -- is compared with
//! `tests/snapshots/rt_plans.txt`. A change of the plans is a change of
//! what runs for real: rewrite the file with `IRQLAB_UPDATE_SNAPSHOTS=1`
//! and explain each difference.
//!
//! The plan names the real CPUs this machine lets the run use, so the
//! snapshot is compared only on a machine with the same allowed CPUs (and
//! the same `/sys/kernel/realtime`) as the one that wrote it.

use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn models() -> Vec<PathBuf> {
    let mut out = Vec::new();
    for dir in [
        "python/irqlab/scenarios",
        "python/irqlab/experiments",
        "tests/hostile/models",
    ] {
        let Ok(rd) = std::fs::read_dir(root().join(dir)) else {
            continue;
        };
        let mut files: Vec<PathBuf> = rd
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
            .collect();
        files.sort();
        out.extend(files);
    }
    out
}

fn machine() -> String {
    let rt = std::fs::read_to_string("/sys/kernel/realtime").unwrap_or_default();
    format!(
        "allowed cpus {:?}, realtime {:?}",
        irqlab_rt::sys::allowed_cpus(),
        rt.trim()
    )
}

fn render() -> String {
    let mut out = format!("# {}\n", machine());
    for p in models() {
        let rel = p
            .strip_prefix(root())
            .unwrap_or(&p)
            .to_string_lossy()
            .into_owned();
        let text = std::fs::read_to_string(&p).unwrap_or_default();
        let name = format!("../../{rel}");
        let r = irqlab_rt::model_run::plan::plan(&name, &text, None, None);
        out.push_str(&format!("\n=== {rel}\n"));
        match r {
            Ok(plan) => out.push_str(&format!("{plan:#?}\n")),
            Err(e) => out.push_str(&format!("refused: {e}\n")),
        }
    }
    out
}

#[test]
fn plans_of_the_shipped_models_are_unchanged() {
    let file = root().join("tests/snapshots/rt_plans.txt");
    let now = render();
    if std::env::var_os("IRQLAB_UPDATE_SNAPSHOTS").is_some() {
        std::fs::write(&file, &now).expect("write the snapshot");
        return;
    }
    let before = std::fs::read_to_string(&file).expect("tests/snapshots/rt_plans.txt");
    if before.lines().next() != now.lines().next() {
        eprintln!(
            "skipped: the snapshot was written on another machine ({:?}, here {:?})",
            before.lines().next(),
            now.lines().next()
        );
        return;
    }
    if before != now {
        let at = before
            .lines()
            .zip(now.lines())
            .position(|(a, b)| a != b)
            .unwrap_or(before.lines().count().min(now.lines().count()));
        panic!(
            "the plans changed at line {}: {:?} -> {:?} (rewrite with IRQLAB_UPDATE_SNAPSHOTS=1 \
             and explain the difference)",
            at + 1,
            before.lines().nth(at),
            now.lines().nth(at)
        );
    }
}
