//! `resolve` is `from_model`'s lowering without the measured costs, and its
//! origin runs parallel to the configuration, for every shipped model.

use std::path::{Path, PathBuf};

fn scenarios() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../python/irqlab/scenarios");
    let mut v: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("scenarios")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
        .collect();
    v.sort();
    v
}

#[test]
fn resolve_is_from_model_without_costs_and_origin_is_parallel() {
    let files = scenarios();
    assert!(files.len() >= 10, "{files:?}");
    for f in files {
        let text = std::fs::read_to_string(&f).expect("read");
        let (mut m, _) = irqlab_model::load_str(&text).expect("valid");
        let base = f.parent().expect("dir");
        let r = irqlab_system::resolve(&m, base).expect("resolves");
        let had_costs = m.costs.take().is_some();
        let plain = irqlab_system::from_model(&m, base).expect("lowers");
        assert_eq!(r.config, plain, "{f:?} (costs: {had_costs})");
        let (c, o) = (&r.config, &r.origin);
        assert_eq!(o.servers.len(), c.servers.len(), "{f:?}");
        assert_eq!(o.tasks.len(), c.tasks.len(), "{f:?}");
        assert_eq!(o.devices.len(), c.devices.len(), "{f:?}");
        assert_eq!(o.virqs.len(), c.virqs.len(), "{f:?}");
        assert!(o.model_classes <= c.classes.len(), "{f:?}");
        for (t, to) in c.tasks.iter().zip(&o.tasks) {
            fn ios(p: &[irqlab_system::config::Phase]) -> usize {
                use irqlab_system::config::Phase;
                p.iter()
                    .map(|x| match x {
                        Phase::Io { .. } => 1,
                        Phase::Loop { body, .. } => ios(body),
                        _ => 0,
                    })
                    .sum()
            }
            assert_eq!(ios(&t.program), to.writes.len(), "{f:?} {}", t.name);
        }
        for (k, s) in o.servers.iter().enumerate() {
            if let Some(d) = s.upcall_of {
                assert_eq!(
                    c.servers[k].name,
                    irqlab_model::handling::upcall_server(&c.devices[d].name)
                );
            }
        }
    }
}

#[test]
fn costs_are_folded_in_by_from_model_only() {
    let f = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../python/irqlab/scenarios/control-and-flood.yaml");
    let text = std::fs::read_to_string(&f).expect("read")
        + "costs:\n  origin: {host: h, kernel: k, cpus: 1, date: d, tool: t}\n  runtime_top_half: \
           {samples: 10, min: 3us, mean: 3us, p50: 3us, p99: 3us, max: 3us}\n";
    let (m, _) = irqlab_model::load_str(&text).expect("valid");
    let base = f.parent().expect("dir");
    let costed = irqlab_system::from_model(&m, base).expect("lowers");
    let r = irqlab_system::resolve(&m, base).expect("resolves");
    assert_ne!(
        costed, r.config,
        "the runtime's top half is the simulator's cost"
    );
    let mut plain = m.clone();
    plain.costs = None;
    assert_eq!(
        irqlab_system::from_model(&plain, base).expect("lowers"),
        r.config
    );
}
