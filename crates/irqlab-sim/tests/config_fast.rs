//! The streamed reading of the tagged configuration objects
//! (`config/fast.rs`: `Release`, `Phase`, `ServerCfg` with its flattened
//! `PolicyCfg`) against serde's derive (`exact_errors`): the same
//! configurations accepted, the same values, in any key order; and the
//! errors of `SimConfig::from_json_str` worded exactly as the derive's.

mod common;

use irqlab_sim::config::{exact_errors, SimConfig};
use serde_json::{json, Value};

fn fast(text: &str) -> Result<SimConfig, String> {
    serde_json::from_str(text).map_err(|e| e.to_string())
}

fn derived(text: &str) -> Result<SimConfig, String> {
    exact_errors(|| serde_json::from_str(text)).map_err(|e| e.to_string())
}

/// JSON text of `v` with every object's keys in reverse order of name
/// (`serde_json` writes them in order of name): tags then come after some
/// of their fields, and `ServerCfg`'s own fields among the policy's.
fn reversed(v: &Value) -> String {
    match v {
        Value::Object(m) => {
            let items: Vec<String> = m
                .iter()
                .rev()
                .map(|(k, v)| format!("{}:{}", Value::String(k.clone()), reversed(v)))
                .collect();
            format!("{{{}}}", items.join(","))
        }
        Value::Array(a) => {
            let items: Vec<String> = a.iter().map(reversed).collect();
            format!("[{}]", items.join(","))
        }
        _ => v.to_string(),
    }
}

#[test]
fn golden_configurations_read_alike_in_any_key_order() {
    let golden = common::golden_configs();
    assert!(golden.len() > 20, "the golden configurations are found");
    for (name, cfg) in golden {
        let value = serde_json::to_value(&cfg).expect("serializes");
        let texts = [
            serde_json::to_string(&cfg).expect("serializes"), // tags first
            value.to_string(),                                // keys by name
            reversed(&value),                                 // keys reversed
        ];
        for text in &texts {
            assert_eq!(fast(text).as_ref(), Ok(&cfg), "{name}: streamed");
            assert_eq!(derived(text).as_ref(), Ok(&cfg), "{name}: derived");
        }
    }
}

fn base() -> Value {
    json!({
        "duration": 1_000_000_000u64,
        "servers": [
            {"name": "s", "policy": "sporadic", "budget": 1000, "period": 10000},
            {"name": "u", "cpu": 0, "policy": "unbounded", "rank": 3}
        ],
        "tasks": [{
            "name": "t", "server": 0,
            "release": {"kind": "periodic", "period": 1_000_000},
            "program": [
                {"op": "compute", "ns": 100},
                {"op": "loop", "count": 2, "body": [{"op": "sleep", "ns": 5}]}
            ]
        }]
    })
}

/// Each case replaces one value (by JSON pointer) of `base()`.
fn cases() -> Vec<(&'static str, Value)> {
    vec![
        ("/tasks/0/release/period", json!("x")),
        ("/tasks/0/release/period", json!(-5)),
        ("/tasks/0/release/period", json!(1.5)),
        ("/tasks/0/release/kind", json!("weird")),
        ("/tasks/0/release/kind", json!(1)),
        ("/tasks/0/release/kind", json!(null)),
        (
            "/tasks/0/release",
            json!({"kind": "once", "at": 4, "zz": 1}),
        ),
        (
            "/tasks/0/release",
            json!({"period": 5, "kind": "periodic", "jobs": 3}),
        ),
        (
            "/tasks/0/release",
            json!({"period": "x", "kind": "periodic"}),
        ),
        ("/tasks/0/release", json!({"period": 5})),
        ("/tasks/0/release", json!({})),
        ("/tasks/0/release", json!(5)),
        ("/tasks/0/release", json!("once")),
        ("/tasks/0/release", json!(["periodic", 1000])),
        ("/tasks/0/release", json!(["periodic", "x"])),
        ("/tasks/0/release", json!(["once"])),
        (
            "/tasks/0/release",
            json!({"kind": "periodic", "deadline": null, "period": 7}),
        ),
        ("/tasks/0/program/0", json!({"op": "compute", "ns": -1})),
        ("/tasks/0/program/0", json!({"op": "dance", "ns": 1})),
        (
            "/tasks/0/program/0",
            json!({"op": "compute", "ns": 1, "extra": 1}),
        ),
        ("/tasks/0/program/0", json!({"ns": 5, "op": "compute"})),
        ("/tasks/0/program/0", json!({"ns": 5})),
        ("/tasks/0/program/0", json!(5)),
        ("/tasks/0/program", json!({"op": "compute"})),
        (
            "/tasks/0/program/1/body",
            json!([{"op": "compute", "ns": "x"}]),
        ),
        ("/tasks/0/program/1/body", json!(3)),
        ("/servers/0/budget", json!("x")),
        ("/servers/0/colour", json!("red")),
        ("/servers/0/policy", json!("zzz")),
        ("/servers/0/policy", json!(2)),
        ("/servers/0/name", json!(3)),
        ("/servers/0/cpu", json!("x")),
        ("/servers/0/rank", json!("x")),
        ("/servers/0/rank", json!(null)),
        ("/servers/0/max_repl", json!(1.5)),
        (
            "/servers/0",
            json!({"budget": 1000, "period": 10000, "name": "s", "rank": 4, "policy": "sporadic"}),
        ),
        (
            "/servers/0",
            json!({"budget": "x", "period": 10000, "name": "s", "policy": "sporadic"}),
        ),
        (
            "/servers/0",
            json!({"name": "s", "policy": "pibs", "num": 1, "rank": 4, "den": 3, "cpu": 0}),
        ),
        (
            "/servers/0",
            json!({"name": "s", "budget": 1000, "period": 10000}),
        ),
        (
            "/servers/0",
            json!({"policy": "sporadic", "budget": 1000, "period": 10000}),
        ),
        (
            "/servers/0",
            json!({"policy": "polling", "budget": 1, "period": 3, "max_repl": 3, "name": "p"}),
        ),
        (
            "/servers/0",
            json!({"name": "c", "policy": "cbs", "runtime": 1, "period": 3}),
        ),
        ("/servers/0", json!(["s", 0])),
        ("/servers/1/colour", json!("red")),
        (
            "/servers/1",
            json!({"colour": "red", "name": "u", "policy": "unbounded"}),
        ),
        ("/servers", json!({})),
    ]
}

#[test]
fn same_acceptance_same_values_and_same_errors() {
    for (pointer, value) in cases() {
        let mut v = base();
        let (parent, key) = pointer.rsplit_once('/').expect("a pointer");
        match v.pointer_mut(parent).expect("the parent exists") {
            Value::Object(m) => {
                m.insert(key.to_owned(), value.clone());
            }
            Value::Array(a) => a[key.parse::<usize>().expect("an index")] = value.clone(),
            _ => panic!("{pointer}: not a container"),
        }
        for text in [v.to_string(), reversed(&v)] {
            let (f, d) = (fast(&text), derived(&text));
            assert_eq!(f.is_ok(), d.is_ok(), "{pointer} = {value}: {f:?} / {d:?}");
            if let (Ok(a), Ok(b)) = (&f, &d) {
                assert_eq!(a, b, "{pointer} = {value}");
            }
            let worded = SimConfig::from_json_str(&text).map_err(|e| e.to_string());
            assert_eq!(
                worded, d,
                "{pointer} = {value}: from_json_str words it as the derive"
            );
        }
    }
}

/// A tag given twice is refused as the derive refuses it, in any mode.
#[test]
fn a_second_tag_is_a_duplicate_field() {
    let text = base().to_string().replacen(
        r#""kind":"periodic""#,
        r#""kind":"periodic","period":5,"kind":"once""#,
        1,
    );
    let text = text.replacen(r#","period":1000000"#, "", 1);
    let e = fast(&text).expect_err("refused");
    assert!(e.contains("duplicate field `kind`"), "{e}");
    let e = derived(&text).expect_err("refused");
    assert!(e.contains("duplicate field `kind`"), "{e}");
}

/// An unknown key beside `policy: unbounded` is refused, as beside every
/// other policy (it used to be ignored: serde skips the rest of an object
/// whose tag names a unit variant).
#[test]
fn an_unknown_key_beside_an_unbounded_policy_is_refused() {
    let mut v = base();
    v.pointer_mut("/servers/1")
        .and_then(Value::as_object_mut)
        .expect("server 1")
        .insert("colour".into(), json!("red"));
    for text in [v.to_string(), reversed(&v)] {
        let e = SimConfig::from_json_str(&text).expect_err("refused");
        assert!(e.to_string().contains("unknown field `colour`"), "{e}");
        assert!(fast(&text).is_err() && derived(&text).is_err());
    }
}
