//! The guard of the VMM's model mapping: every model the repository ships
//! (`python/irqlab/scenarios`, `python/irqlab/experiments`) and every
//! hostile model (`tests/hostile/models`) is translated for the VMM
//! (`irqlab_vmm::model`, no KVM needed) and the result's `Debug` form --
//! or the refusal with its field path, or the model loader's error -- is
//! compared with `tests/snapshots/vmm_models.txt`. Rewrite the file with
//! `IRQLAB_UPDATE_SNAPSHOTS=1` and explain each difference.

use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn models() -> Vec<(String, PathBuf)> {
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
        for f in files {
            let name = format!(
                "{dir}/{}",
                f.file_name().unwrap_or_default().to_string_lossy()
            );
            out.push((name, f));
        }
    }
    out
}

fn render() -> String {
    let mut out = String::new();
    for (name, p) in models() {
        let text = std::fs::read_to_string(&p).unwrap_or_default();
        out.push_str(&format!("\n=== {name}\n"));
        out.push_str(&irqlab_vmm_snapshot::one(&text, p.parent().unwrap_or(Path::new(""))));
    }
    out
}

mod irqlab_vmm_snapshot {
    use std::path::Path;

    /// The VMM's translation of one model, or why there is none.
    pub fn one(text: &str, _base: &Path) -> String {
        let m = match irqlab_model::load_str(text) {
            Ok((m, _)) => m,
            Err(e) => return format!("not a model: {e}\n"),
        };
        match irqlab_vmm::model::from_model(&m) {
            Ok(r) => format!("{r:#?}\n"),
            Err(e) => format!("refused: {e}\n"),
        }
    }
}

#[test]
fn vmm_translations_of_the_shipped_models_are_unchanged() {
    let file = root().join("tests/snapshots/vmm_models.txt");
    let now = render();
    if std::env::var_os("IRQLAB_UPDATE_SNAPSHOTS").is_some() {
        std::fs::write(&file, &now).expect("write the snapshot");
        return;
    }
    let before = std::fs::read_to_string(&file).expect("tests/snapshots/vmm_models.txt");
    if before != now {
        let at = before
            .lines()
            .zip(now.lines())
            .position(|(a, b)| a != b)
            .unwrap_or(before.lines().count().min(now.lines().count()));
        panic!(
            "the VMM's translations changed at line {}: {:?} -> {:?} (rewrite with \
             IRQLAB_UPDATE_SNAPSHOTS=1 and explain the difference)",
            at + 1,
            before.lines().nth(at),
            now.lines().nth(at)
        );
    }
}
