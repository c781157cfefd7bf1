//! The schedule trace (docs/simulator.md): compact typed records while the
//! machine runs, written at the end straight to a file (or any writer) as
//! Chrome / Perfetto trace-event JSON or as Perfetto's protobuf format
//! (`trace/perfetto.rs`).
//!
//! One process per CPU (track "CPU n": what runs -- threads, top halves,
//! softirq -- and a second track for VCPU switches) and one per CPU's
//! servers (a track per server), counter tracks for the remaining budget
//! at each dispatch, and flow arrows interrupt -> bottom half -> woken
//! task. JSON `ts`/`dur` are microseconds, written exactly (three
//! decimals) from the integer ns.
//!
//! Design principles:
//! * **Cheap while running.** A traced event is one fixed-size record
//!   (`Rec`, 48 bytes; a thread's run slice is one record for its two
//!   tracks) with its names interned; no JSON value is built, nothing is
//!   deep-copied. Records are sorted in place once, at the end, and the
//!   writers stream them out through a buffered writer.
//! * **Slices on one track nest or are disjoint.** Top halves are drawn
//!   from when they ran (not their arrival): a nested one inside the slice
//!   it interrupted, as depth on the CPU track.
//! * **Flows pair one to one, with unique ids.** The simulator names a flow
//!   by a token when it starts (`flow_begin`) and ends it by the same token
//!   (`flow_end`); nothing is recorded until the end, and then both ends
//!   are recorded with a fresh id. A flow that never ends (a packet
//!   dropped, a task that never ran again, the run's end) is never written.
//! * **Events in time order per track** (an enclosing slice before what it
//!   encloses): records are ordered by (time, longer first, order of
//!   recording).
//! * **The size limit is the user's, and truncation is never silent**:
//!   past `max_events` the trace is cut at that instant (nothing later is
//!   recorded; slices already open are still written when they close), and
//!   `truncated` says so -- in the trace (`otherData` in JSON), in the
//!   metrics, and on stderr from the CLI.

mod out;
mod perfetto;
#[cfg(test)]
mod reference;

#[cfg(test)]
mod tests {
    /// A random trace through the recording calls: names that JSON must
    /// escape, names longer than the writers' buffer, server indices with
    /// no server (the "?" names), flows, budgets (unlimited too), and
    /// sometimes a limit that cuts the trace.
    fn random_trace(seed: u64) -> super::Trace {
        let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        let mut rnd = move |m: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % m.max(1)
        };
        let pool: Vec<String> = vec![
            "t0".into(),
            "a \"quoted\" name".into(),
            "back\\slash\nnew line\ttab \u{1}".into(),
            "ünïcödé ✓".into(),
            "x".repeat(70_000 + seed as usize % 3),
            String::new(),
        ];
        let cpus = 1 + rnd(4) as usize;
        let servers: Vec<(usize, String)> = (0..rnd(5))
            .map(|i| {
                (
                    rnd(cpus as u64) as usize,
                    pool[(i as usize + 1) % pool.len()].clone(),
                )
            })
            .collect();
        let max = if seed.is_multiple_of(4) {
            20 + rnd(200) as usize
        } else {
            1 << 20
        };
        let mut t = super::Trace::new(true, None, max);
        t.names(cpus, &servers);
        if seed.is_multiple_of(5) {
            t.cpu_labels(&["host \"h\"".to_string()]);
        }
        let cats = ["isr", "softirq"];
        let flows = ["irq -> bh", "bh -> task"];
        let mut now = 0u64;
        for _ in 0..rnd(600) {
            now += rnd(3_000_000_000);
            let (cpu, srv) = (
                rnd(cpus as u64) as usize,
                rnd(servers.len() as u64 + 2) as usize,
            );
            let name =
                pool[rnd(pool.len() as u64 - u64::from(seed.is_multiple_of(2))) as usize].clone();
            let (start, end) = (now.saturating_sub(rnd(5000)), now + rnd(2_000_000));
            match rnd(7) {
                0 | 1 => t.run(cpu, srv, &name, start, end, rnd(3) == 0),
                2 => t.irq_slice(cpu, cats[rnd(2) as usize], &name, start, end),
                3 => t.switch(cpu, srv, start, end),
                4 => t.flow_begin(rnd(4), cpu, start, flows[rnd(2) as usize]),
                5 => t.flow_end(rnd(4), cpu, end),
                _ => {
                    let b = [None, Some(rnd(u64::MAX)), Some(rnd(10_000_000))][rnd(3) as usize];
                    t.budget(cpu, srv, start, b)
                }
            }
        }
        if seed.is_multiple_of(3) {
            t.end_at(now);
        }
        t
    }

    /// The writers write what the writers of main 08dbe4e wrote
    /// (`reference`), byte for byte, in both formats.
    #[test]
    fn writers_write_what_the_old_writers_wrote() {
        for seed in 0..120u64 {
            let (mut a, mut b) = (random_trace(seed), random_trace(seed));
            let (mut got, mut want) = (Vec::new(), Vec::new());
            a.write(&mut got, super::TraceFormat::Json).unwrap();
            super::reference::write_json(&mut b, &mut want).unwrap();
            assert!(got == want, "JSON, seed {seed}");
            let (mut got, mut want) = (Vec::new(), Vec::new());
            a.write(&mut got, super::TraceFormat::Perfetto).unwrap();
            super::reference::perfetto::write(&mut b, &mut want).unwrap();
            assert!(got == want, "Perfetto, seed {seed}");
        }
        // a trace that is off writes the same empty trace
        let mut off = super::Trace::new(false, None, 10);
        let (mut got, mut want) = (Vec::new(), Vec::new());
        off.write(&mut got, super::TraceFormat::Json).unwrap();
        super::reference::write_json(&mut off, &mut want).unwrap();
        assert!(got == want);
    }

    /// `write_file` leaves exactly what `write` writes: in a new file,
    /// over a longer file (cut to length) and over a shorter one, in both
    /// formats; and it writes to what is not a regular file.
    #[test]
    fn files_hold_what_write_writes() {
        let dir = std::env::temp_dir().join(format!("irqlab-trace-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("t");
        for format in [super::TraceFormat::Json, super::TraceFormat::Perfetto] {
            let _ = std::fs::remove_file(&path);
            for seed in [1u64, 5, 7, 2, 3] {
                let mut t = random_trace(seed);
                let mut want = Vec::new();
                t.write(&mut want, format).unwrap();
                t.write_file(&path, format).unwrap();
                assert!(std::fs::read(&path).unwrap() == want, "seed {seed}");
            }
        }
        #[cfg(unix)]
        random_trace(1)
            .write_file(std::path::Path::new("/dev/null"), super::TraceFormat::Json)
            .unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A record at `ts` lasting `dur`, recorded `seq`-th.
    fn rec(ts: u64, dur: u64, seq: u64) -> super::Rec {
        super::Rec {
            ts,
            dur,
            seq,
            a: 0,
            cpu: 0,
            x: 0,
            y: 0,
            kind: super::Kind::Irq,
            bg: false,
        }
    }

    /// `sort_recs` against the plain sort by key: nearly sorted records
    /// (the insertion sort), far out of order ones (the fallback), and
    /// many ties of (ts, dur) (recording order decides).
    #[test]
    fn records_sort_as_the_plain_sort_does() {
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut rnd = move |m: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % m
        };
        for case in 0..200u64 {
            let n = rnd(400) as usize;
            let (spread, ties) = (case % 5, case % 3 == 0);
            let mut v: Vec<super::Rec> = (0..n as u64)
                .map(|i| {
                    // time grows with i, displaced backwards by up to
                    // `10^spread` (0: in order; 4: far out of order)
                    let back = rnd(10u64.pow(spread as u32));
                    let ts = if ties {
                        rnd(4)
                    } else {
                        (i * 10).saturating_sub(back)
                    };
                    rec(ts, rnd(if ties { 3 } else { 50 }), i)
                })
                .collect();
            if case % 7 == 0 {
                v.reverse();
                for (i, r) in v.iter_mut().enumerate() {
                    r.seq = i as u64;
                }
            }
            let mut want = v.clone();
            // the reference: its own key, not `rec_key`
            want.sort_unstable_by_key(|r| (r.ts, std::cmp::Reverse(r.dur), r.seq));
            super::sort_recs(&mut v);
            assert_eq!(v, want, "case {case}");
        }
    }
}

use std::collections::HashMap;
use std::io::{self, Write};

use out::Out;

/// The file formats a trace can be written in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TraceFormat {
    /// Chrome / Perfetto trace-event JSON (opens in ui.perfetto.dev and
    /// chrome://tracing).
    Json,
    /// Perfetto's protobuf trace format (`TracePacket`s with
    /// `TrackDescriptor`s and `TrackEvent`s): smaller, and what Perfetto
    /// reads best for large traces.
    Perfetto,
}

impl std::str::FromStr for TraceFormat {
    type Err = String;
    fn from_str(s: &str) -> Result<TraceFormat, String> {
        match s {
            "json" => Ok(TraceFormat::Json),
            "perfetto" | "proto" | "protobuf" => Ok(TraceFormat::Perfetto),
            _ => Err(format!(
                "trace format {s:?}: expected \"json\" or \"perfetto\""
            )),
        }
    }
}

/// What a record draws.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// A thread of server `x` ran (name `y`; `bg`: in background mode): a
    /// slice on the CPU track and one on the server's track.
    Run,
    /// A slice in interrupt context: category `x`, name `y`.
    Irq,
    /// A VCPU switch into server `x`'s context (CPU's second track).
    Switch,
    /// A flow arrow starts (`a`: id, `y`: name).
    FlowStart,
    /// A flow arrow ends (`a`: id, `y`: name).
    FlowEnd,
    /// Remaining budget of server `x` (`a`: ns, `u64::MAX`: unlimited).
    Budget,
}

/// One traced event: fixed size, names interned (`Trace::names`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Rec {
    pub(crate) ts: u64,
    pub(crate) dur: u64,
    /// Order of recording (ties of (ts, dur) keep it).
    seq: u64,
    pub(crate) a: u64,
    pub(crate) cpu: u32,
    pub(crate) x: u32,
    pub(crate) y: u32,
    pub(crate) kind: Kind,
    pub(crate) bg: bool,
}

/// A flow started but not yet written: where and when it began.
struct OpenFlow {
    cpu: u32,
    ts: u64,
    name: u32,
}

pub struct Trace {
    enabled: bool,
    until: u64,
    max_events: usize,
    recs: Vec<Rec>,
    /// Trace events the records stand for (a run slice is two).
    count: usize,
    sorted: bool,
    /// Interned names (threads, interrupt names, categories, flow names).
    pub(crate) names: Vec<Box<str>>,
    ids: HashMap<Box<str>, u32>,
    /// Number of CPUs and, per server, its CPU and name.
    pub(crate) cpus: usize,
    pub(crate) servers: Vec<(usize, String)>,
    /// Per CPU, the name of its process (`cpu_labels`; default "CPU n").
    pub(crate) labels: Vec<String>,
    open: HashMap<u64, OpenFlow>,
    next_id: u64,
    /// Latest event time recorded (slices are written when they close,
    /// with their start time, so times arrive out of order).
    latest: u64,
    pub truncated: bool,
}

impl std::fmt::Debug for Trace {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Trace")
            .field("enabled", &self.enabled)
            .field("events", &self.count)
            .field("max_events", &self.max_events)
            .field("truncated", &self.truncated)
            .finish_non_exhaustive()
    }
}

/// Two traces are equal when they draw the same events (same records in
/// the same order, same names and tracks).
impl PartialEq for Trace {
    fn eq(&self, o: &Trace) -> bool {
        let key = |t: &Trace| {
            let mut r = t.recs.clone();
            r.sort_unstable_by_key(|r| r.seq);
            r
        };
        self.enabled == o.enabled
            && self.truncated == o.truncated
            && self.max_events == o.max_events
            && self.cpus == o.cpus
            && self.servers == o.servers
            && self.labels == o.labels
            && self.names == o.names
            && key(self) == key(o)
    }
}

/// Per name (or server), the bytes an event starts with; `none` for an
/// id with no name.
struct Frags {
    v: Vec<Vec<u8>>,
    none: Vec<u8>,
}

impl Frags {
    #[inline]
    fn get(&self, i: u32) -> &[u8] {
        self.v.get(i as usize).unwrap_or(&self.none)
    }

    fn max_len(&self) -> usize {
        self.v
            .iter()
            .map(Vec::len)
            .fold(self.none.len(), usize::max)
    }
}

/// The order of records: time, longer first, order of recording.
fn rec_key(r: &Rec) -> (u64, std::cmp::Reverse<u64>, u64) {
    (r.ts, std::cmp::Reverse(r.dur), r.seq)
}

/// Sort records by `rec_key`, in place.
///
/// Records arrive nearly in order: a slice is recorded when it closes,
/// with its start time, so a record lands only a few places after where it
/// belongs (the 10-task bench: every record within 16 places, most 1).
/// An insertion sort moves each record once, by its few places; a
/// quicksort moved the 48-byte records through every partition and cost
/// about 2 ms of the 10-task bench's trace. The insertion sort gives up
/// after `8 n` places moved and sorts the rest with `sort_unstable` (so
/// never worse than O(n log n) plus O(n)); the keys are unique (`seq`), so
/// both give the same order.
fn sort_recs(recs: &mut [Rec]) {
    let mut budget = recs.len().saturating_mul(8);
    for i in 1..recs.len() {
        let k = rec_key(&recs[i]);
        if rec_key(&recs[i - 1]) <= k {
            continue;
        }
        let mut j = i - 1;
        while j > 0 && rec_key(&recs[j - 1]) > k {
            j -= 1;
        }
        if i - j > budget {
            recs.sort_unstable_by_key(rec_key);
            return;
        }
        budget -= i - j;
        let r = recs[i];
        recs.copy_within(j..i, j + 1);
        recs[j] = r;
    }
}

/// Bytes of memory one record takes (for docs and the bench).
pub const RECORD_BYTES: usize = std::mem::size_of::<Rec>();

impl Trace {
    pub fn new(enabled: bool, until: Option<u64>, max_events: usize) -> Trace {
        Trace {
            enabled,
            until: until.unwrap_or(u64::MAX),
            max_events,
            recs: Vec::new(),
            count: 0,
            sorted: true,
            names: Vec::new(),
            ids: HashMap::new(),
            cpus: 0,
            servers: Vec::new(),
            labels: Vec::new(),
            open: HashMap::new(),
            next_id: 0,
            latest: 0,
            truncated: false,
        }
    }

    pub fn enabled(&self) -> bool {
        self.enabled
    }

    /// The id of a name (interned once; later calls only look it up).
    fn intern(&mut self, name: &str) -> u32 {
        if let Some(&i) = self.ids.get(name) {
            return i;
        }
        let i = self.names.len() as u32;
        self.names.push(name.into());
        self.ids.insert(name.into(), i);
        i
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
        if self.count + n > self.max_events && !self.truncated {
            // cut after the latest instant already recorded
            self.truncated = true;
            self.until = self.latest;
            return t <= self.until;
        }
        self.latest = self.latest.max(t);
        true
    }

    #[allow(clippy::too_many_arguments)]
    fn push(
        &mut self,
        kind: Kind,
        cpu: usize,
        ts: u64,
        dur: u64,
        x: u32,
        y: u32,
        a: u64,
        bg: bool,
    ) {
        let events = if kind == Kind::Run { 2 } else { 1 };
        self.count += events;
        self.sorted = false;
        self.recs.push(Rec {
            ts,
            dur,
            seq: self.recs.len() as u64,
            a,
            cpu: cpu as u32,
            x,
            y,
            kind,
            bg,
        });
    }

    /// Track names: the CPUs and, per server, its CPU and name (in server
    /// index order).
    pub fn names(&mut self, cpus: usize, servers: &[(usize, String)]) {
        self.cpus = cpus;
        self.servers = servers.to_vec();
    }

    /// Name the "CPUs" otherwise (a trace of something other than the
    /// simulator, e.g. the real VMM's host and guest): `labels[c]` replaces
    /// "CPU c" in the process names.
    pub fn cpu_labels(&mut self, labels: &[String]) {
        self.labels = labels.to_vec();
    }

    /// The process name of CPU `c`.
    pub(crate) fn label(&self, c: usize) -> String {
        self.labels
            .get(c)
            .cloned()
            .unwrap_or_else(|| format!("CPU {c}"))
    }

    /// A thread of `server` ran on `cpu` in `[start, end)`.
    pub fn run(
        &mut self,
        cpu: usize,
        server: usize,
        thread: &str,
        start: u64,
        end: u64,
        background: bool,
    ) {
        if end <= start || !self.room(start, 2) {
            return;
        }
        let name = self.intern(thread);
        self.push(
            Kind::Run,
            cpu,
            start,
            end - start,
            server as u32,
            name,
            0,
            background,
        );
    }

    /// A slice in interrupt context on `cpu` in `[start, end)`: a top half
    /// (`cat` "isr") or a softirq bottom half (`cat` "softirq").
    pub fn irq_slice(&mut self, cpu: usize, cat: &str, name: &str, start: u64, end: u64) {
        if !self.room(start, 1) {
            return;
        }
        let (cat, name) = (self.intern(cat), self.intern(name));
        let dur = end.saturating_sub(start);
        self.push(Kind::Irq, cpu, start, dur, cat, name, 0, false);
    }

    /// A VCPU switch (`switch_overhead`) into `server`'s context on `cpu`
    /// in `[start, end)`, on the CPU's second track.
    pub fn switch(&mut self, cpu: usize, server: usize, start: u64, end: u64) {
        if end <= start || !self.room(start, 1) {
            return;
        }
        self.push(
            Kind::Switch,
            cpu,
            start,
            end - start,
            server as u32,
            0,
            0,
            false,
        );
    }

    /// A flow named by `token` starts at `t` on `cpu` (inside a slice
    /// drawn there). Replaces an unfinished flow of the same token.
    pub fn flow_begin(&mut self, token: u64, cpu: usize, t: u64, name: &'static str) {
        if !self.enabled || t > self.until {
            return;
        }
        let name = self.intern(name);
        self.open.insert(
            token,
            OpenFlow {
                cpu: cpu as u32,
                ts: t,
                name,
            },
        );
    }

    /// The flow named by `token` ends at `t` on `cpu` (at the start of the
    /// slice it leads to): both ends are recorded, with a fresh id.
    pub fn flow_end(&mut self, token: u64, cpu: usize, t: u64) {
        let Some(f) = self.open.remove(&token) else {
            return;
        };
        if !self.room(t, 2) {
            return;
        }
        self.next_id += 1;
        let id = self.next_id;
        self.push(
            Kind::FlowStart,
            f.cpu as usize,
            f.ts,
            0,
            0,
            f.name,
            id,
            false,
        );
        self.push(Kind::FlowEnd, cpu, t, 0, 0, f.name, id, false);
    }

    /// The run ended at `end`: a flow that ends there leads into a slice
    /// of no length, which is never drawn, so it is dropped with its start.
    pub fn end_at(&mut self, end: u64) {
        let gone: std::collections::HashSet<u64> = self
            .recs
            .iter()
            .filter(|r| r.kind == Kind::FlowEnd && r.ts >= end)
            .map(|r| r.a)
            .collect();
        if gone.is_empty() {
            return;
        }
        self.recs.retain(|r| {
            !(matches!(r.kind, Kind::FlowStart | Kind::FlowEnd) && gone.contains(&r.a))
        });
        self.count -= 2 * gone.len();
    }

    /// Remaining budget of `server` at a dispatch (`None`: unlimited).
    pub fn budget(&mut self, cpu: usize, server: usize, t: u64, budget: Option<u64>) {
        if !self.room(t, 1) {
            return;
        }
        let a = budget.unwrap_or(u64::MAX);
        self.push(Kind::Budget, cpu, t, 0, server as u32, 0, a, false);
    }

    /// Trace events recorded (a run slice counts two: one per track).
    pub fn len(&self) -> usize {
        self.count
    }

    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// The limit of events (`trace.max_events`).
    pub fn max_events(&self) -> usize {
        self.max_events
    }

    /// Bytes the records take in memory now.
    pub fn memory_bytes(&self) -> usize {
        self.recs.capacity() * RECORD_BYTES
    }

    /// The records in time order (an enclosing slice before what it
    /// encloses; ties in order of recording). Sorts in place, once.
    pub(crate) fn sorted(&mut self) -> &[Rec] {
        if !self.sorted {
            sort_recs(&mut self.recs);
            self.sorted = true;
        }
        &self.recs
    }

    /// Write the trace in `format` to `w` (buffer `w` for a file).
    pub fn write(&mut self, w: &mut dyn Write, format: TraceFormat) -> io::Result<()> {
        match format {
            TraceFormat::Json => self.write_json(w),
            TraceFormat::Perfetto => perfetto::write(self, w),
        }
    }

    /// Write the trace in `format` to the file at `path` (created if it
    /// does not exist).
    ///
    /// An existing file is written over in place, then cut to the new
    /// length; it is not truncated first. On ext4, a file truncated to
    /// zero and written again has its blocks allocated and its write-back
    /// started when it is closed, in the writing process
    /// (`auto_da_alloc`), and the truncation frees the page cache that the
    /// new text then allocates again: writing the 13 MB JSON of the 10 RM
    /// task bench over its last run cost ~5 ms more that way, as much as
    /// formatting it. Written over in place, the file's pages and blocks
    /// are reused and the kernel writes them back later, as for any
    /// write. If the write fails part way, the file holds the new text's
    /// start and the old text's end (truncated first, it held only the
    /// start): both are broken traces. What is not a regular file (a pipe,
    /// `/dev/null`) is written as it is.
    pub fn write_file(&mut self, path: &std::path::Path, format: TraceFormat) -> io::Result<()> {
        let f = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(false) // cut to length after writing (see above)
            .open(path)?;
        let regular = f.metadata()?.is_file();
        let mut w = io::BufWriter::new(f);
        self.write(&mut w, format)?;
        let mut f = w.into_inner().map_err(io::IntoInnerError::into_error)?;
        if regular {
            let len = io::Seek::stream_position(&mut f)?;
            if f.metadata()?.len() > len {
                f.set_len(len)?;
            }
        }
        Ok(())
    }

    /// The trace as JSON text in memory (small traces; tests).
    pub fn to_json_string(&mut self) -> String {
        let mut out = Vec::with_capacity(self.count * 96 + 256);
        // writing to a Vec cannot fail
        let _ = self.write_json(&mut out);
        String::from_utf8(out).unwrap_or_default()
    }

    /// The trace as a JSON value (tests and small traces only: it builds
    /// the whole tree).
    pub fn to_json(&mut self) -> serde_json::Value {
        serde_json::from_str(&self.to_json_string()).unwrap_or_default()
    }

    /// Chrome / Perfetto trace-event JSON: metadata, then every event in
    /// time order (an enclosing slice before the slices it encloses).
    pub fn write_json(&mut self, w: &mut dyn Write) -> io::Result<()> {
        let esc = |s: &str| serde_json::to_string(s).unwrap_or_else(|_| "\"?\"".into());
        let names: Vec<String> = self.names.iter().map(|n| esc(n)).collect();
        let bg: Vec<String> = self
            .names
            .iter()
            .map(|n| esc(&format!("{n} (bg)")))
            .collect();
        let sname: Vec<String> = self.servers.iter().map(|(_, n)| esc(n)).collect();
        let switch: Vec<String> = self
            .servers
            .iter()
            .map(|(_, n)| esc(&format!("vcpu switch ({n})")))
            .collect();
        let counter: Vec<String> = self
            .servers
            .iter()
            .map(|(_, n)| esc(&format!("budget {n} (us)")))
            .collect();
        let mut first = true;
        let sep = |w: &mut dyn Write, first: &mut bool| -> io::Result<()> {
            w.write_all(if std::mem::take(first) { b"\n" } else { b",\n" })
        };
        w.write_all(b"{\"traceEvents\":[")?;
        if self.enabled {
            for c in 0..self.cpus {
                sep(w, &mut first)?;
                let l = self.label(c);
                write!(w, "{{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":{c},\"args\":{{\"name\":{}}}}}", esc(&l))?;
                sep(w, &mut first)?;
                write!(w, "{{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":{},\"args\":{{\"name\":{}}}}}", 1000 + c, esc(&format!("servers on {l}")))?;
            }
            for (i, (cpu, _)) in self.servers.iter().enumerate() {
                sep(w, &mut first)?;
                write!(w, "{{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":{},\"tid\":{i},\"args\":{{\"name\":{}}}}}", 1000 + cpu, sname[i])?;
            }
        }
        let (max_events, truncated) = (self.max_events, self.truncated);
        // Each event starts with a fragment built once per name (the
        // escaped name and the fixed text around it, up to the first
        // number), then numbers and fixed text written in place (`Out`).
        let frags = |v: &[String], f: &dyn Fn(&str) -> String| Frags {
            v: v.iter().map(|n| f(n).into_bytes()).collect(),
            none: f("\"?\"").into_bytes(),
        };
        let head = |n: &str| format!("{{\"ph\":\"X\",\"name\":{n},\"cat\":");
        let cat = |n: &str| format!("{n},\"pid\":");
        let names_head = frags(&names, &head);
        let bg_head = frags(&bg, &head);
        let names_cat = frags(&names, &cat);
        let server_cat = frags(&sname, &cat);
        let switch_head = frags(&switch, &|n| head(n) + "\"switch\",\"pid\":");
        let flow_s = frags(&names, &|n| {
            format!("{{\"ph\":\"s\",\"name\":{n},\"cat\":\"flow\",\"id\":")
        });
        let flow_f = frags(&names, &|n| {
            format!("{{\"ph\":\"f\",\"bp\":\"e\",\"name\":{n},\"cat\":\"flow\",\"id\":")
        });
        let budget_head = frags(&counter, &|n| {
            format!("{{\"ph\":\"C\",\"name\":{n},\"pid\":")
        });
        let big = [
            &names_head,
            &bg_head,
            &names_cat,
            &server_cat,
            &switch_head,
            &flow_s,
            &flow_f,
            &budget_head,
        ]
        .iter()
        .map(|f| f.max_len())
        .max()
        .unwrap_or(0);
        // an event's largest size: a run slice is two slices (three
        // fragments) and at most ~210 bytes of numbers and fixed text
        let room = 3 * big + 512;
        // `,"ts":TS,"dur":D}`
        let ts_dur = |o: &mut Out, r: &Rec| {
            o.lit(b",\"ts\":");
            o.us(r.ts);
            o.lit(b",\"dur\":");
            o.us(r.dur);
            o.byte(b'}');
        };
        let mut o = Out::new(w);
        for r in self.sorted() {
            let (cpu, x, y) = (r.cpu as u64, r.x, r.y);
            o.room(room)?;
            if std::mem::take(&mut first) {
                o.lit(b"\n");
            } else {
                o.lit(b",\n");
            }
            // a slice: `{"ph":"X","name":N,"cat":C,"pid":P,"tid":T,"ts":TS,"dur":D}`
            match r.kind {
                Kind::Run => {
                    let h = if r.bg {
                        bg_head.get(y)
                    } else {
                        names_head.get(y)
                    };
                    o.bytes(h);
                    o.bytes(server_cat.get(x));
                    o.dec(cpu);
                    o.lit(b",\"tid\":0");
                    ts_dur(&mut o, r);
                    o.lit(b",\n");
                    o.bytes(h);
                    o.lit(b"\"server\",\"pid\":");
                    o.dec(1000 + cpu);
                    o.lit(b",\"tid\":");
                    o.dec(x as u64);
                    ts_dur(&mut o, r);
                }
                Kind::Irq => {
                    o.bytes(names_head.get(y));
                    o.bytes(names_cat.get(x));
                    o.dec(cpu);
                    o.lit(b",\"tid\":0");
                    ts_dur(&mut o, r);
                }
                Kind::Switch => {
                    o.bytes(switch_head.get(x));
                    o.dec(cpu);
                    o.lit(b",\"tid\":1");
                    ts_dur(&mut o, r);
                }
                Kind::FlowStart | Kind::FlowEnd => {
                    let f = if r.kind == Kind::FlowStart {
                        &flow_s
                    } else {
                        &flow_f
                    };
                    o.bytes(f.get(y));
                    o.dec(r.a);
                    o.lit(b",\"pid\":");
                    o.dec(cpu);
                    o.lit(b",\"tid\":0,\"ts\":");
                    o.us(r.ts);
                    o.byte(b'}');
                }
                Kind::Budget => {
                    o.bytes(budget_head.get(x));
                    o.dec(1000 + cpu);
                    o.lit(b",\"ts\":");
                    o.us(r.ts);
                    o.lit(b",\"args\":{\"budget\":");
                    if r.a == u64::MAX {
                        o.lit(b"-1");
                    } else {
                        o.us(r.a);
                    }
                    o.lit(b"}}");
                }
            }
        }
        o.finish()?;
        write!(w, "\n],\"displayTimeUnit\":\"ns\",\"otherData\":{{\"max_events\":{max_events},\"truncated\":{truncated}}}}}\n")?;
        w.flush()
    }
}
