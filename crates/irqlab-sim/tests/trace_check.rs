//! A strict checker of the Perfetto / Chrome trace-event JSON the
//! simulator writes, run on the trace of every golden system (every
//! shipped scenario and every `reproduce` experiment's system: the quest,
//! quest-no-iovcpu, linux and hypervisor paths), plus the regressions it
//! was written for.
//!
//! Per track (pid, tid): complete slices ("X") nest or are disjoint, and
//! events are in time order. Flows: every id has exactly one start ("s")
//! and one end ("f"), the end not before the start, each inside a slice
//! of its track (where Perfetto binds it).

mod common;
use common::golden_configs;
use std::collections::BTreeMap;

use irqlab_sim::{simulate, SimConfig};
use serde_json::Value;

/// A track (pid, tid) and a slice's [start, end] in microseconds.
type Track = (i64, i64);
type Span = (f64, f64);

/// Tolerance for microsecond floats (half a nanosecond).
const EPS: f64 = 0.0005;

fn num(v: &Value, k: &str) -> f64 {
    v.get(k).and_then(Value::as_f64).unwrap_or(f64::NAN)
}

fn track(v: &Value) -> (i64, i64) {
    let g = |k: &str| v.get(k).and_then(Value::as_i64).unwrap_or(-1);
    (g("pid"), g("tid"))
}

/// Every violation found, as readable lines (empty: the trace is sound).
pub fn check(trace: &Value) -> Vec<String> {
    let mut errs = Vec::new();
    let Some(events) = trace.get("traceEvents").and_then(Value::as_array) else {
        return vec!["no traceEvents array".into()];
    };
    let mut slices: BTreeMap<(i64, i64), Vec<(f64, f64)>> = BTreeMap::new();
    let mut last_ts: BTreeMap<(i64, i64), f64> = BTreeMap::new();
    let mut flows: BTreeMap<i64, (Vec<&Value>, Vec<&Value>)> = BTreeMap::new();
    for e in events {
        let ph = e.get("ph").and_then(Value::as_str).unwrap_or("");
        if ph == "M" {
            continue;
        }
        let ts = num(e, "ts");
        let key = track(e);
        if let Some(&prev) = last_ts.get(&key) {
            if ts + EPS < prev {
                errs.push(format!(
                    "track {key:?}: ts {ts} after {prev} (not monotone)"
                ));
            }
        }
        last_ts.insert(key, ts);
        match ph {
            "X" => slices
                .entry(key)
                .or_default()
                .push((ts, ts + num(e, "dur"))),
            "s" | "f" => {
                let id = e.get("id").and_then(Value::as_i64).unwrap_or(-1);
                let entry = flows.entry(id).or_default();
                if ph == "s" {
                    entry.0.push(e);
                } else {
                    entry.1.push(e);
                }
            }
            _ => {}
        }
    }
    for (key, list) in &slices {
        // sorted by start, longer first: a stack of open slices
        let mut sorted = list.clone();
        sorted.sort_by(|a, b| a.0.total_cmp(&b.0).then(b.1.total_cmp(&a.1)));
        let mut stack: Vec<(f64, f64)> = Vec::new();
        for (s, e) in sorted {
            while stack.last().is_some_and(|&(_, top_end)| s + EPS >= top_end) {
                stack.pop();
            }
            if let Some(&(ts, te)) = stack.last() {
                if e > te + EPS {
                    errs.push(format!(
                        "track {key:?}: slice [{s}, {e}] crosses [{ts}, {te}]"
                    ));
                }
            }
            stack.push((s, e));
        }
    }
    // per track: slices by start, with the running maximum of their ends,
    // so "is t inside a slice" looks back only as far as it can matter
    let index: BTreeMap<Track, (Vec<Span>, Vec<f64>)> = slices
        .iter()
        .map(|(k, l)| {
            let mut l = l.clone();
            l.sort_by(|a, b| a.0.total_cmp(&b.0));
            let mut m = f64::NEG_INFINITY;
            let maxend = l
                .iter()
                .map(|&(_, e)| {
                    m = m.max(e);
                    m
                })
                .collect();
            (*k, (l, maxend))
        })
        .collect();
    let inside = |e: &Value| {
        let t = num(e, "ts");
        let Some((l, maxend)) = index.get(&track(e)) else {
            return false;
        };
        let mut i = l.partition_point(|&(s, _)| s - EPS <= t);
        while i > 0 && maxend[i - 1] + EPS >= t {
            i -= 1;
            if l[i].1 + EPS >= t {
                return true;
            }
        }
        false
    };
    for (id, (starts, ends)) in &flows {
        if starts.len() != 1 || ends.len() != 1 {
            errs.push(format!(
                "flow {id}: {} starts and {} ends",
                starts.len(),
                ends.len()
            ));
            continue;
        }
        let (s, f) = (starts[0], ends[0]);
        if num(f, "ts") + EPS < num(s, "ts") {
            errs.push(format!("flow {id}: ends before it starts"));
        }
        for (what, e) in [("start", s), ("end", f)] {
            if !inside(e) {
                errs.push(format!(
                    "flow {id}: {what} at {} in no slice of its track",
                    num(e, "ts")
                ));
            }
        }
    }
    errs
}

fn traced(mut cfg: SimConfig, max_events: usize) -> (irqlab_sim::Metrics, Value) {
    cfg.trace.enabled = true;
    cfg.trace.max_events = max_events;
    let (m, mut t) = simulate(cfg).expect("simulates");
    (m, t.to_json())
}

#[test]
fn every_golden_trace_is_sound() {
    let mut bad = Vec::new();
    let mut paths = std::collections::BTreeSet::new();
    let mut flows = 0usize;
    for (name, cfg) in golden_configs() {
        let (m, trace) = traced(cfg, 20_000);
        paths.insert(m.path.clone());
        let errs = check(&trace);
        flows += trace["traceEvents"]
            .as_array()
            .map_or(0, |a| a.iter().filter(|e| e["ph"] == "f").count());
        if !errs.is_empty() {
            bad.push(format!("{name}: {} errors, first: {}", errs.len(), errs[0]));
        }
    }
    assert_eq!(paths.len(), 4, "all four paths traced: {paths:?}");
    assert!(flows > 1000, "only {flows} flows in all traces");
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

fn golden(name: &str) -> SimConfig {
    golden_configs()
        .into_iter()
        .find(|(n, _)| n.starts_with(name))
        .map(|(_, c)| c)
        .unwrap_or_else(|| panic!("no golden system {name}"))
}

/// Regression: queued top halves were drawn from their arrival, so their
/// slices crossed the one they waited behind (28 in usb-mode-change).
#[test]
fn queued_top_halves_do_not_cross() {
    let (_, trace) = traced(golden("scenario-usb-mode-change"), 1_000_000);
    let isrs = trace["traceEvents"]
        .as_array()
        .map_or(0, |a| a.iter().filter(|e| e["cat"] == "isr").count());
    assert!(isrs > 100, "only {isrs} top halves");
    assert_eq!(check(&trace), Vec::<String>::new());
}

/// Regression: every hypervisor flow had id 0, and other paths left flow
/// starts without ends (usb-roundtrip, linux) or ends without starts.
#[test]
fn hypervisor_and_linux_flows_pair_one_to_one() {
    for name in [
        "scenario-vint-case",
        "exp-usb-latency",
        "scenario-usb-roundtrip",
    ] {
        let (_, trace) = traced(golden(name), 1_000_000);
        let ev = trace["traceEvents"].as_array().cloned().unwrap_or_default();
        let starts = ev.iter().filter(|e| e["ph"] == "s").count();
        assert!(starts > 10, "{name}: {starts} flows");
        assert_eq!(check(&trace), Vec::<String>::new(), "{name}");
    }
}

/// Truncation is stated: in the metrics and in the trace.
#[test]
fn truncation_is_reported() {
    let (m, trace) = traced(golden("scenario-usb-priority-inversion"), 500);
    assert!(m.trace_truncated);
    assert_eq!(trace["otherData"]["truncated"], true);
    assert!(trace["traceEvents"].as_array().map_or(0, Vec::len) <= 500 + 100);
    let json = serde_json::to_string(&m).expect("serialisable");
    assert!(json.contains("\"trace_truncated\":true"));
    let (m, _) = traced(golden("scenario-usb-priority-inversion"), 2_000_000);
    assert!(!m.trace_truncated);
}

/// The checker itself finds crossing slices, unpaired and reused flows.
#[test]
fn the_checker_finds_each_defect() {
    let t = serde_json::json!({"traceEvents": [
        {"ph": "X", "pid": 0, "tid": 0, "ts": 0.0, "dur": 10.0},
        {"ph": "X", "pid": 0, "tid": 0, "ts": 5.0, "dur": 10.0},
        {"ph": "s", "id": 1, "pid": 0, "tid": 0, "ts": 1.0},
        {"ph": "s", "id": 2, "pid": 0, "tid": 0, "ts": 2.0},
        {"ph": "f", "id": 2, "pid": 0, "tid": 0, "ts": 3.0},
        {"ph": "f", "id": 2, "pid": 0, "tid": 0, "ts": 4.0},
        {"ph": "X", "pid": 0, "tid": 0, "ts": 3.0, "dur": 1.0},
    ]});
    let errs = check(&t);
    assert!(errs.iter().any(|e| e.contains("crosses")), "{errs:?}");
    assert!(
        errs.iter()
            .any(|e| e.contains("flow 1: 1 starts and 0 ends")),
        "{errs:?}"
    );
    assert!(
        errs.iter()
            .any(|e| e.contains("flow 2: 1 starts and 2 ends")),
        "{errs:?}"
    );
    assert!(errs.iter().any(|e| e.contains("not monotone")), "{errs:?}");
}
