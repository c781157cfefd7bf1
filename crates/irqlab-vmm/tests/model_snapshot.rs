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

const CASE: &str = include_str!("../../../python/irqlab/scenarios/vint-case.yaml");
const VINT: &str = "vint: {policy: deferrable, period: 10ms, budget: 2ms, priority: auto}";
const VIRQ: &str = "      virtual_interrupts:\n";
const PHYS: &str = "  physical_interrupts:\n";
const TASKS: &str = "          tasks:\n";

/// Variants of the case study that reach each rule of the mapping: `auto`
/// budgets (Eq. 1, Eq. 2), `auto` priorities with several managed
/// interrupts, the policies, and the refusals.
fn variants() -> Vec<(&'static str, String)> {
    let second_phys = format!(
        "{PHYS}    - {{name: disk, cpu: 0, priority: 2, isr: 7us, min_interarrival: 2ms, start: 1ms}}\n"
    );
    let second_task = format!("{TASKS}            - {{name: disk-dsr, priority: 9, wcet: 20us}}\n");
    let second_virq = |vint: &str| {
        format!(
            "{VIRQ}        - {{name: vdisk, physical: disk, vcpu: v1, priority: 2, isr: 4us, \
             dsr: [disk-dsr]{vint}}}\n"
        )
    };
    let two = |vint: &str, auto: &str| {
        CASE.replace("{name: nic, cpu: 0,", "{name: nic, cpu: 0, priority: 1,")
            .replace(PHYS, &second_phys)
            .replace(TASKS, &second_task)
            .replace(VIRQ, &second_virq(vint))
            .replace(VINT, auto)
    };
    let auto_both = "vint: {budget: auto, priority: auto}";
    vec![
        ("budget auto (Eq. 1)", CASE.replace("budget: 2ms, priority: auto", "budget: auto, priority: auto")),
        ("priority 7, sporadic pseudo-VCPU", CASE.replace("policy: deferrable, period: 10ms, budget: 2ms, priority: auto", "policy: sporadic, period: 10ms, budget: 1ms, priority: 7")),
        ("sporadic VCPU, pseudo policy inherited", CASE.replace("policy: deferrable\n", "policy: sporadic\n").replace("policy: deferrable, ", "")),
        ("no vint", CASE.replace(&format!(", {VINT}").replace(", vint", "\n          vint"), "")),
        ("two managed, DSR priorities 10 and 9", two(&format!(", {auto_both}"), auto_both)),
        ("two managed, DSR priorities 10 and 12", two(&format!(", {auto_both}"), auto_both).replace("disk-dsr, priority: 9", "disk-dsr, priority: 12")),
        ("two managed, one explicit priority", two(", vint: {budget: 1ms, period: 10ms, priority: 900}", auto_both).replace("disk-dsr, priority: 9", "disk-dsr, priority: 12")),
        ("one managed, one unmanaged (Eq. 2)", two("", auto_both)),
        ("two virtual interrupts on one physical", CASE.replace(TASKS, &second_task).replace(VIRQ, &format!("{VIRQ}        - {{name: v2nic, physical: nic, vcpu: v1, isr: 1us, dsr: [disk-dsr]}}\n"))),
        ("five periodic tasks", CASE.replace(TASKS, &format!("{TASKS}{}", (0..4).map(|i| format!("            - {{name: t{i}, priority: {}, wcet: 10us, period: 50ms}}\n", 20 + i)).collect::<String>()))),
        ("two VCPUs", CASE.replace("      virtual_interrupts:\n", "        - {name: v2, cpu: 0, policy: deferrable, budget: 1ms, period: 10ms, tasks: []}\n      virtual_interrupts:\n")),
    ]
}

fn render() -> String {
    let mut out = String::new();
    for (name, p) in models() {
        let text = std::fs::read_to_string(&p).unwrap_or_default();
        out.push_str(&format!("\n=== {name}\n"));
        out.push_str(&irqlab_vmm_snapshot::one(
            &text,
            p.parent().unwrap_or(Path::new("")),
        ));
    }
    for (name, text) in variants() {
        out.push_str(&format!("\n=== vint-case: {name}\n"));
        out.push_str(&irqlab_vmm_snapshot::one(&text, Path::new("")));
    }
    out
}

mod irqlab_vmm_snapshot {
    use std::path::Path;

    /// The VMM's translation of one model, or why there is none.
    pub fn one(text: &str, base: &Path) -> String {
        let m = match irqlab_model::load_str(text) {
            Ok((m, _)) => m,
            Err(e) => return format!("not a model: {e}\n"),
        };
        match irqlab_vmm::model::from_model(&m, base) {
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
