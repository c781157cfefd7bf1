//! Chrome / Perfetto trace-event JSON (DESIGN.md §5).
//!
//! One process per CPU (track "CPU n": what runs, ISRs included) and one per
//! CPU's servers (a track per server), counter tracks for the remaining
//! budget at each dispatch, and flow arrows interrupt -> bottom half ->
//! woken task. `ts`/`dur` are microseconds. Recording stops after
//! `max_events` or `until` so long runs stay loadable.

use serde_json::{json, Value};

pub struct Trace {
    enabled: bool,
    until: u64,
    max_events: usize,
    events: Vec<Value>,
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
            truncated: false,
        }
    }

    pub fn enabled(&self) -> bool {
        self.enabled
    }

    fn on(&mut self, t: u64) -> bool {
        if !self.enabled || t > self.until {
            return false;
        }
        if self.events.len() >= self.max_events {
            self.truncated = true;
            return false;
        }
        true
    }

    /// Track names (metadata events).
    pub fn names(&mut self, cpus: usize, servers: &[(usize, String)]) {
        if !self.enabled {
            return;
        }
        for c in 0..cpus {
            self.events.push(json!({"ph": "M", "name": "process_name", "pid": c, "args": {"name": format!("CPU {c}")}}));
            self.events.push(json!({"ph": "M", "name": "process_name", "pid": 1000 + c, "args": {"name": format!("servers on CPU {c}")}}));
        }
        for (i, (cpu, name)) in servers.iter().enumerate() {
            self.events.push(json!({"ph": "M", "name": "thread_name", "pid": 1000 + cpu, "tid": i, "args": {"name": name}}));
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
        if end <= start || !self.on(start) {
            return;
        }
        let name = if background {
            format!("{thread} (bg)")
        } else {
            thread.to_owned()
        };
        self.events.push(json!({"ph": "X", "name": name, "cat": server_name, "pid": cpu, "tid": 0, "ts": us(start), "dur": us(end - start)}));
        self.events.push(json!({"ph": "X", "name": name, "cat": "server", "pid": 1000 + cpu, "tid": server, "ts": us(start), "dur": us(end - start)}));
    }

    /// An interrupt top half on `cpu` in `[start, end)`.
    pub fn isr(&mut self, cpu: usize, device: &str, start: u64, end: u64, flow: u64) {
        if !self.on(start) {
            return;
        }
        self.events.push(json!({"ph": "X", "name": format!("irq {device}"), "cat": "isr", "pid": cpu, "tid": 0, "ts": us(start), "dur": us(end.saturating_sub(start))}));
        self.events.push(json!({"ph": "s", "name": "irq->bh", "cat": "flow", "id": flow, "pid": cpu, "tid": 0, "ts": us(start)}));
    }

    /// A VCPU switch (`switch_overhead`) into `server`'s context on `cpu`
    /// in `[start, end)`, on the CPU's second track.
    pub fn switch(&mut self, cpu: usize, server_name: &str, start: u64, end: u64) {
        if end <= start || !self.on(start) {
            return;
        }
        self.events.push(json!({"ph": "X", "name": format!("vcpu switch ({server_name})"), "cat": "switch", "pid": cpu, "tid": 1, "ts": us(start), "dur": us(end - start)}));
    }

    /// Flow arrow end (`bh` start or task wake-up) at `t` on `cpu`.
    pub fn flow_step(&mut self, cpu: usize, t: u64, flow: u64, name: &str, last: bool) {
        if !self.on(t) {
            return;
        }
        let ph = if last { "f" } else { "t" };
        self.events.push(json!({"ph": ph, "bp": "e", "name": name, "cat": "flow", "id": flow, "pid": cpu, "tid": 0, "ts": us(t)}));
    }

    /// Flow arrow start at `t` on `cpu` (e.g. the end of a bottom half).
    pub fn flow_start(&mut self, cpu: usize, t: u64, flow: u64, name: &str) {
        if !self.on(t) {
            return;
        }
        self.events.push(json!({"ph": "s", "name": name, "cat": "flow", "id": flow, "pid": cpu, "tid": 0, "ts": us(t)}));
    }

    /// Remaining budget of a server at a dispatch.
    pub fn budget(&mut self, cpu: usize, server_name: &str, t: u64, budget: Option<u64>) {
        if !self.on(t) {
            return;
        }
        let v = budget.map_or(-1.0, us);
        self.events.push(json!({"ph": "C", "name": format!("budget {server_name} (us)"), "pid": 1000 + cpu, "ts": us(t), "args": {"budget": v}}));
    }

    pub fn to_json(&self) -> Value {
        json!({"traceEvents": self.events, "displayTimeUnit": "ns", "otherData": {"truncated": self.truncated}})
    }

    pub fn len(&self) -> usize {
        self.events.len()
    }

    pub fn is_empty(&self) -> bool {
        self.events.is_empty()
    }
}
