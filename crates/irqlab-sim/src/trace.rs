//! Chrome / Perfetto trace-event JSON (DESIGN.md §5).
//!
//! One process per CPU (track "CPU n": what runs -- threads, top halves,
//! softirq -- and a second track for VCPU switches) and one per CPU's
//! servers (a track per server), counter tracks for the remaining budget
//! at each dispatch, and flow arrows interrupt -> bottom half -> woken
//! task. `ts`/`dur` are microseconds.
//!
//! What a strict reader needs, and this module keeps true:
//! * **Slices on one track nest or are disjoint.** Top halves are drawn
//!   from when they ran (not their arrival): a nested one inside the slice
//!   it interrupted, as depth on the CPU track.
//! * **Flows pair one to one, with unique ids.** The simulator names a flow
//!   by a token when it starts (`flow_begin`) and ends it by the same token
//!   (`flow_end`); nothing is written until the end, and then both events
//!   are written with a fresh id. A flow that never ends (a packet dropped,
//!   a task that never ran again, the run's end) is never written.
//! * **Events in time order per track**: sorted at the end.
//! * **Truncation is never silent**: past `max_events` the trace is cut at
//!   that instant (nothing later is recorded; slices already open are
//!   still written when they close), and `truncated` says so -- in the
//!   trace's `otherData`, in the metrics, and on stderr from the CLI.

use std::collections::HashMap;

use serde_json::{json, Value};

/// A flow started but not yet written: where and when it began.
struct OpenFlow {
    pid: usize,
    ts: u64,
    name: &'static str,
}

pub struct Trace {
    enabled: bool,
    until: u64,
    max_events: usize,
    /// Events with their time in ns (sort key) and a tie-break (longer
    /// slices first, so an enclosing slice precedes what it encloses).
    events: Vec<(u64, std::cmp::Reverse<u64>, Value)>,
    meta: Vec<Value>,
    open: HashMap<u64, OpenFlow>,
    next_id: u64,
    /// Latest event time recorded (slices are written when they close,
    /// with their start time, so times arrive out of order).
    latest: u64,
    pub truncated: bool,
}

fn us(ns: u64) -> f64 {
    ns as f64 / 1000.0
}

impl Trace {
    pub fn new(enabled: bool, until: Option<u64>, max_events: usize) -> Trace {
        Trace {
            enabled,
            until: until.unwrap_or(u64::MAX),
            max_events,
            events: Vec::new(),
            meta: Vec::new(),
            open: HashMap::new(),
            next_id: 0,
            latest: 0,
            truncated: false,
        }
    }

    pub fn enabled(&self) -> bool {
        self.enabled
    }

    /// Whether `n` more events at time `t` may be recorded. At the limit
    /// the trace is cut at a time: nothing from `t` on is recorded, but
    /// what started before (a slice still open, written when it closes)
    /// is, so every flow end stays inside its slice; the overshoot is at
    /// most the slices open at the cut.
    fn room(&mut self, t: u64, n: usize) -> bool {
        if !self.enabled || t > self.until {
            return false;
        }
        if self.events.len() + n > self.max_events && !self.truncated {
            // cut after the latest instant already recorded
            self.truncated = true;
            self.until = self.latest;
            return t <= self.until;
        }
        self.latest = self.latest.max(t);
        true
    }

    fn push(&mut self, ts: u64, dur: u64, v: Value) {
        self.events.push((ts, std::cmp::Reverse(dur), v));
    }

    /// Track names (metadata events).
    pub fn names(&mut self, cpus: usize, servers: &[(usize, String)]) {
        if !self.enabled {
            return;
        }
        for c in 0..cpus {
            self.meta.push(json!({"ph": "M", "name": "process_name", "pid": c, "args": {"name": format!("CPU {c}")}}));
            self.meta.push(json!({"ph": "M", "name": "process_name", "pid": 1000 + c, "args": {"name": format!("servers on CPU {c}")}}));
        }
        for (i, (cpu, name)) in servers.iter().enumerate() {
            self.meta.push(json!({"ph": "M", "name": "thread_name", "pid": 1000 + cpu, "tid": i, "args": {"name": name}}));
        }
    }

    /// A thread of `server` ran on `cpu` in `[start, end)`.
    #[allow(clippy::too_many_arguments)]
    pub fn run(
        &mut self,
        cpu: usize,
        server: usize,
        server_name: &str,
        thread: &str,
        start: u64,
        end: u64,
        background: bool,
    ) {
        if end <= start || !self.room(start, 2) {
            return;
        }
        let name = if background {
            format!("{thread} (bg)")
        } else {
            thread.to_owned()
        };
        let (ts, dur) = (us(start), us(end - start));
        self.push(start, end - start, json!({"ph": "X", "name": name, "cat": server_name, "pid": cpu, "tid": 0, "ts": ts, "dur": dur}));
        self.push(start, end - start, json!({"ph": "X", "name": name, "cat": "server", "pid": 1000 + cpu, "tid": server, "ts": ts, "dur": dur}));
    }

    /// A slice in interrupt context on `cpu` in `[start, end)`: a top half
    /// (`cat` "isr") or a softirq bottom half (`cat` "softirq").
    pub fn irq_slice(&mut self, cpu: usize, cat: &str, name: &str, start: u64, end: u64) {
        if !self.room(start, 1) {
            return;
        }
        let dur = end.saturating_sub(start);
        self.push(start, dur, json!({"ph": "X", "name": name, "cat": cat, "pid": cpu, "tid": 0, "ts": us(start), "dur": us(dur)}));
    }

    /// A VCPU switch (`switch_overhead`) into `server`'s context on `cpu`
    /// in `[start, end)`, on the CPU's second track.
    pub fn switch(&mut self, cpu: usize, server_name: &str, start: u64, end: u64) {
        if end <= start || !self.room(start, 1) {
            return;
        }
        self.push(start, end - start, json!({"ph": "X", "name": format!("vcpu switch ({server_name})"), "cat": "switch", "pid": cpu, "tid": 1, "ts": us(start), "dur": us(end - start)}));
    }

    /// A flow named by `token` starts at `t` on `cpu` (inside a slice
    /// drawn there). Replaces an unfinished flow of the same token.
    pub fn flow_begin(&mut self, token: u64, cpu: usize, t: u64, name: &'static str) {
        if !self.enabled || t > self.until {
            return;
        }
        self.open.insert(
            token,
            OpenFlow {
                pid: cpu,
                ts: t,
                name,
            },
        );
    }

    /// The flow named by `token` ends at `t` on `cpu` (at the start of the
    /// slice it leads to): both ends are written, with a fresh id.
    pub fn flow_end(&mut self, token: u64, cpu: usize, t: u64) {
        let Some(f) = self.open.remove(&token) else {
            return;
        };
        if !self.room(t, 2) {
            return;
        }
        self.next_id += 1;
        let id = self.next_id;
        self.push(f.ts, 0, json!({"ph": "s", "name": f.name, "cat": "flow", "id": id, "pid": f.pid, "tid": 0, "ts": us(f.ts)}));
        self.push(t, 0, json!({"ph": "f", "bp": "e", "name": f.name, "cat": "flow", "id": id, "pid": cpu, "tid": 0, "ts": us(t)}));
    }

    /// Remaining budget of a server at a dispatch.
    pub fn budget(&mut self, cpu: usize, server_name: &str, t: u64, budget: Option<u64>) {
        if !self.room(t, 1) {
            return;
        }
        let v = budget.map_or(-1.0, us);
        self.push(t, 0, json!({"ph": "C", "name": format!("budget {server_name} (us)"), "pid": 1000 + cpu, "ts": us(t), "args": {"budget": v}}));
    }

    /// The trace as JSON: metadata, then every event in time order (an
    /// enclosing slice before the slices it encloses).
    pub fn to_json(&self) -> Value {
        let mut order: Vec<&(u64, std::cmp::Reverse<u64>, Value)> = self.events.iter().collect();
        order.sort_by_key(|(ts, dur, _)| (*ts, *dur));
        let events: Vec<&Value> = self
            .meta
            .iter()
            .chain(order.into_iter().map(|(_, _, v)| v))
            .collect();
        json!({"traceEvents": events, "displayTimeUnit": "ns", "otherData": {"truncated": self.truncated, "max_events": self.max_events}})
    }

    pub fn len(&self) -> usize {
        self.events.len()
    }

    pub fn is_empty(&self) -> bool {
        self.events.is_empty()
    }
}
