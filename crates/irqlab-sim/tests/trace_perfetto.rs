//! The Perfetto protobuf form of the trace, read back by a hand-written
//! protobuf decoder (Perfetto's own trace processor downloads a binary at
//! run time, which this machine cannot do) and checked against the JSON
//! form of the same run.
//!
//! What a valid trace must show: a stream of length-delimited
//! `TracePacket`s on one sequence whose first packet clears the
//! incremental state; every track declared once before use (parents
//! first); events in time order; on each track, begins and ends pair as a
//! stack (slices nest); counters only on counter tracks; every flow id
//! starts once and terminates once, not before it starts. And the same
//! schedule as the JSON: the same slices (start, end, name) and as many
//! counter values and flows.

mod common;
use common::golden_configs;
use std::collections::{HashMap, HashSet};

use irqlab_sim::{simulate, TraceFormat};
use serde_json::Value;

#[derive(Debug, Clone)]
enum Val<'a> {
    Int(u64),
    Fixed(u64),
    Bytes(&'a [u8]),
}

fn varint(b: &[u8], i: &mut usize) -> Result<u64, String> {
    let mut v = 0u64;
    for shift in (0..64).step_by(7) {
        let byte = *b.get(*i).ok_or("truncated varint")?;
        *i += 1;
        v |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return Ok(v);
        }
    }
    Err("varint longer than 10 bytes".into())
}

/// The fields of one message, in order.
fn fields(b: &[u8]) -> Result<Vec<(u64, Val<'_>)>, String> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let key = varint(b, &mut i)?;
        let (field, wire) = (key >> 3, key & 7);
        let v = match wire {
            0 => Val::Int(varint(b, &mut i)?),
            1 => {
                let s = b.get(i..i + 8).ok_or("truncated fixed64")?;
                i += 8;
                Val::Fixed(u64::from_le_bytes(s.try_into().map_err(|_| "fixed64")?))
            }
            2 => {
                let n = varint(b, &mut i)? as usize;
                let s = b.get(i..i + n).ok_or("truncated bytes")?;
                i += n;
                Val::Bytes(s)
            }
            w => {
                return Err(format!(
                    "field {field}: wire type {w} not used by the writer"
                ))
            }
        };
        out.push((field, v));
    }
    Ok(out)
}

fn int(f: &[(u64, Val)], n: u64) -> Option<u64> {
    f.iter().find_map(|(k, v)| match v {
        Val::Int(x) if *k == n => Some(*x),
        _ => None,
    })
}

fn msg<'a>(f: &[(u64, Val<'a>)], n: u64) -> Option<&'a [u8]> {
    f.iter().find_map(|(k, v)| match v {
        Val::Bytes(x) if *k == n => Some(*x),
        _ => None,
    })
}

fn text(f: &[(u64, Val)], n: u64) -> Option<String> {
    msg(f, n).map(|b| String::from_utf8_lossy(b).into_owned())
}

/// What the checker saw: slices (start, end, name), counter values, flows.
#[derive(Default, Debug)]
struct Summary {
    slices: Vec<(u64, u64, String)>,
    counters: usize,
    flows: usize,
}

/// Decode and check a protobuf trace; errors as readable lines.
fn check_proto(data: &[u8]) -> Result<Summary, Vec<String>> {
    let mut errs = Vec::new();
    let top = fields(data).map_err(|e| vec![e])?;
    let mut tracks: HashMap<u64, bool> = HashMap::new(); // uuid -> counter
    let mut stacks: HashMap<u64, Vec<(u64, String)>> = HashMap::new();
    let mut starts: HashMap<u64, u64> = HashMap::new();
    let mut ends: HashSet<u64> = HashSet::new();
    let mut last_ts = 0u64;
    let mut sum = Summary::default();
    for (n, (field, v)) in top.iter().enumerate() {
        let Val::Bytes(p) = v else {
            errs.push(format!("packet {n}: not length-delimited"));
            continue;
        };
        if *field != 1 {
            errs.push(format!("packet {n}: field {field} of Trace, expected 1"));
        }
        let pf = fields(p).map_err(|e| vec![format!("packet {n}: {e}")])?;
        if int(&pf, 10) != Some(1) {
            errs.push(format!("packet {n}: no trusted_packet_sequence_id 1"));
        }
        if n == 0 && int(&pf, 13) != Some(1) {
            errs.push("first packet does not clear the incremental state".into());
        }
        if let Some(td) = msg(&pf, 60) {
            let tf = fields(td).map_err(|e| vec![e])?;
            let Some(uuid) = int(&tf, 1) else {
                errs.push(format!("packet {n}: track without uuid"));
                continue;
            };
            if let Some(parent) = int(&tf, 5) {
                if !tracks.contains_key(&parent) {
                    errs.push(format!("track {uuid}: parent {parent} not declared before"));
                }
            }
            if text(&tf, 2).is_none_or(|s| s.is_empty()) {
                errs.push(format!("track {uuid}: no name"));
            }
            if tracks.insert(uuid, msg(&tf, 8).is_some()).is_some() {
                errs.push(format!("track {uuid} declared twice"));
            }
        } else if let Some(te) = msg(&pf, 11) {
            let ef = fields(te).map_err(|e| vec![e])?;
            let ts = int(&pf, 8).unwrap_or(u64::MAX);
            if ts < last_ts {
                errs.push(format!("packet {n}: ts {ts} before {last_ts}"));
            }
            last_ts = ts;
            let track = int(&ef, 11).unwrap_or(0);
            let Some(&counter) = tracks.get(&track) else {
                errs.push(format!("packet {n}: event on undeclared track {track}"));
                continue;
            };
            match int(&ef, 9) {
                Some(1) => stacks
                    .entry(track)
                    .or_default()
                    .push((ts, text(&ef, 23).unwrap_or_default())),
                Some(2) => match stacks.entry(track).or_default().pop() {
                    Some((start, name)) => sum.slices.push((start, ts, name)),
                    None => errs.push(format!("packet {n}: slice end with none open")),
                },
                Some(3) => {
                    for (k, v) in &ef {
                        match (k, v) {
                            (47, Val::Fixed(id)) if starts.insert(*id, ts).is_some() => {
                                errs.push(format!("flow {id} starts twice"));
                            }
                            (48, Val::Fixed(id)) => {
                                match starts.get(id) {
                                    Some(&s) if s <= ts => {}
                                    _ => errs.push(format!("flow {id} ends before its start")),
                                }
                                if !ends.insert(*id) {
                                    errs.push(format!("flow {id} ends twice"));
                                }
                                sum.flows += 1;
                            }
                            _ => {}
                        }
                    }
                }
                Some(4) => {
                    if !counter {
                        errs.push(format!("packet {n}: counter on a slice track"));
                    }
                    if !ef
                        .iter()
                        .any(|(k, v)| *k == 44 && matches!(v, Val::Fixed(_)))
                    {
                        errs.push(format!("packet {n}: counter without double value"));
                    }
                    sum.counters += 1;
                }
                t => errs.push(format!("packet {n}: event type {t:?}")),
            }
        } else {
            errs.push(format!("packet {n}: neither track nor event"));
        }
    }
    for (t, s) in &stacks {
        if !s.is_empty() {
            errs.push(format!("track {t}: {} slices never end", s.len()));
        }
    }
    if starts.len() != ends.len() {
        errs.push(format!("{} flows start, {} end", starts.len(), ends.len()));
    }
    if errs.is_empty() {
        Ok(sum)
    } else {
        Err(errs)
    }
}

/// The same from the JSON form of the trace.
fn summary_json(v: &Value) -> Summary {
    let ns = |e: &Value, k: &str| (e[k].as_f64().unwrap_or(f64::NAN) * 1000.0).round() as u64;
    let mut sum = Summary::default();
    for e in v["traceEvents"].as_array().into_iter().flatten() {
        match e["ph"].as_str() {
            Some("X") => {
                let ts = ns(e, "ts");
                let name = e["name"].as_str().unwrap_or_default().to_owned();
                sum.slices.push((ts, ts + ns(e, "dur"), name));
            }
            Some("C") => sum.counters += 1,
            Some("f") => sum.flows += 1,
            _ => {}
        }
    }
    sum
}

#[test]
fn every_golden_trace_is_valid_protobuf_and_the_same_schedule_as_json() {
    let mut bad = Vec::new();
    let mut slices = 0;
    let mut flows = 0;
    for (name, mut cfg) in golden_configs() {
        cfg.trace.enabled = true;
        cfg.trace.max_events = 20_000;
        let (_, mut trace) = simulate(cfg).expect("simulates");
        let mut proto = Vec::new();
        trace
            .write(&mut proto, TraceFormat::Perfetto)
            .expect("writes to memory");
        let json = trace.to_json();
        match check_proto(&proto) {
            Err(e) => bad.push(format!("{name}: {} errors, first: {}", e.len(), e[0])),
            Ok(mut p) => {
                let mut j = summary_json(&json);
                p.slices.sort();
                j.slices.sort();
                if p.slices != j.slices || p.counters != j.counters || p.flows != j.flows {
                    bad.push(format!(
                        "{name}: protobuf {} slices, {} counters, {} flows; JSON {}, {}, {}",
                        p.slices.len(),
                        p.counters,
                        p.flows,
                        j.slices.len(),
                        j.counters,
                        j.flows
                    ));
                }
                slices += p.slices.len();
                flows += p.flows;
                // the binary form is the smaller one
                let text = trace.to_json_string();
                if proto.len() >= text.len() {
                    bad.push(format!(
                        "{name}: protobuf {} B >= JSON {} B",
                        proto.len(),
                        text.len()
                    ));
                }
            }
        }
    }
    assert!(
        slices > 10_000 && flows > 1000,
        "{slices} slices, {flows} flows"
    );
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

/// The checker finds an unbalanced slice, an undeclared track, a flow
/// that never ends and events out of time order.
#[test]
fn the_protobuf_checker_finds_each_defect() {
    fn v(out: &mut Vec<u8>, mut x: u64) {
        while x >= 0x80 {
            out.push((x as u8) | 0x80);
            x >>= 7;
        }
        out.push(x as u8);
    }
    fn field(out: &mut Vec<u8>, f: u64, b: &[u8]) {
        v(out, (f << 3) | 2);
        v(out, b.len() as u64);
        out.extend_from_slice(b);
    }
    fn uint(out: &mut Vec<u8>, f: u64, x: u64) {
        v(out, f << 3);
        v(out, x);
    }
    let packet = |body: &dyn Fn(&mut Vec<u8>)| {
        let mut p = Vec::new();
        uint(&mut p, 10, 1);
        body(&mut p);
        p
    };
    let event = |ts: u64, ty: u64, track: u64, flow: Option<(u64, u64)>| {
        packet(&move |p: &mut Vec<u8>| {
            let mut e = Vec::new();
            uint(&mut e, 9, ty);
            uint(&mut e, 11, track);
            if let Some((f, id)) = flow {
                v(&mut e, (f << 3) | 1);
                e.extend_from_slice(&id.to_le_bytes());
            }
            uint(p, 8, ts);
            field(p, 11, &e);
        })
    };
    let mut trace = Vec::new();
    let first = packet(&|p: &mut Vec<u8>| {
        uint(p, 13, 1);
        let mut t = Vec::new();
        uint(&mut t, 1, 7);
        field(&mut t, 2, b"cpu");
        field(p, 60, &t);
    });
    for p in [
        first,
        event(10, 1, 7, None),         // begin, never ends
        event(5, 3, 7, Some((47, 1))), // out of order; flow 1 never ends
        event(20, 1, 99, None),        // undeclared track
    ] {
        field(&mut trace, 1, &p);
    }
    let errs = check_proto(&trace).expect_err("defects found");
    let has = |s: &str| errs.iter().any(|e| e.contains(s));
    assert!(has("before 10"), "{errs:?}");
    assert!(has("undeclared track 99"), "{errs:?}");
    assert!(has("never end"), "{errs:?}");
    assert!(has("1 flows start, 0 end"), "{errs:?}");
}
