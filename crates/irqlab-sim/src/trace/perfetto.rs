//! The trace in Perfetto's protobuf format: a `Trace` message, i.e. a
//! stream of length-delimited `TracePacket`s (field 1), written by hand
//! (a few fields; no protobuf library needed).
//!
//! What is written, and the field numbers used (from Perfetto's
//! `trace_packet.proto`, `track_descriptor.proto`, `track_event.proto`):
//! * `TracePacket`: `timestamp = 8` (ns), `trusted_packet_sequence_id =
//!   10` (always 1), `track_event = 11`, `sequence_flags = 13` (the first
//!   packet clears the incremental state: 1), `track_descriptor = 60`.
//! * `TrackDescriptor`: `uuid = 1`, `name = 2`, `process = 3`
//!   (`ProcessDescriptor`: `pid = 1`, `process_name = 6`), `parent_uuid =
//!   5`, `counter = 8` (an empty `CounterDescriptor`).
//! * `TrackEvent`: `type = 9` (1 slice begin, 2 slice end, 3 instant, 4
//!   counter), `track_uuid = 11`, `categories = 22`, `name = 23`,
//!   `double_counter_value = 44`, `flow_ids = 47` and
//!   `terminating_flow_ids = 48` (fixed64).
//!
//! The tracks mirror the JSON form: a process per CPU with a track for
//! what runs and one for VCPU switches, a process per CPU's servers with a
//! track per server and a budget counter track per server. A slice is a
//! begin and an end event; flows are instants carrying the flow id.
//! Packets are written in time order, ends before begins at the same
//! instant and the inner slice's end before the outer's, so a reader
//! needs no sorting (Perfetto's trace processor sorts anyway).

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::io::{self, Write};

use super::out::{varint_len, Out};
use super::{Frags, Kind, Trace};

const SLICE_BEGIN: u64 = 1;
const SLICE_END: u64 = 2;
const INSTANT: u64 = 3;
const COUNTER: u64 = 4;

/// Track uuids: a tag in the high bits, an index in the low ones.
fn uuid(tag: u64, i: u64) -> u64 {
    (tag << 40) | i
}
fn cpu_process(c: u64) -> u64 {
    uuid(1, c)
}
fn cpu_track(c: u64, tid: u64) -> u64 {
    uuid(2, c * 2 + tid)
}
fn server_process(c: u64) -> u64 {
    uuid(3, c)
}
fn server_track(g: u64) -> u64 {
    uuid(4, g)
}
fn budget_track(g: u64) -> u64 {
    uuid(5, g)
}

fn varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn uint(out: &mut Vec<u8>, field: u64, v: u64) {
    varint(out, field << 3);
    varint(out, v);
}

fn bytes(out: &mut Vec<u8>, field: u64, b: &[u8]) {
    varint(out, (field << 3) | 2);
    varint(out, b.len() as u64);
    out.extend_from_slice(b);
}

/// The key of `field` with wire type `wire`, encoded.
fn key(field: u64, wire: u64) -> Vec<u8> {
    let mut k = Vec::new();
    varint(&mut k, (field << 3) | wire);
    k
}

/// Writes packets into `out`, each in one pass: an event's sizes are
/// computed first, so that its packet's and message's lengths come before
/// them with nothing copied twice.
struct Packets<'w> {
    out: Out<'w>,
    /// A track's packet, built here (few: one per track).
    pkt: Vec<u8>,
    msg: Vec<u8>,
    first: bool,
}

impl Packets<'_> {
    /// Bytes of the fields every packet ends with (`trailer`).
    fn trailer_len(&self) -> usize {
        if self.first {
            4
        } else {
            2
        }
    }

    /// `trusted_packet_sequence_id = 1` and, on the first packet,
    /// `sequence_flags = 1` (the incremental state is cleared).
    #[inline]
    fn trailer(&mut self) {
        self.out.lit(&[10 << 3, 1]);
        if self.first {
            self.out.lit(&[13 << 3, 1]);
            self.first = false;
        }
    }

    /// Write `self.pkt` as one `TracePacket` (field 1 of `Trace`).
    fn flush_packet(&mut self) -> io::Result<()> {
        let len = self.pkt.len() + self.trailer_len();
        self.out.room(len + 16)?;
        self.out.byte((1 << 3) | 2);
        self.out.varint(len as u64);
        self.out.bytes(&self.pkt);
        self.trailer();
        self.pkt.clear();
        Ok(())
    }

    /// A track: a process (with `pid`) or a child of `parent`; a counter
    /// track when `counter`.
    fn track(
        &mut self,
        id: u64,
        name: &str,
        process: Option<u64>,
        parent: Option<u64>,
        counter: bool,
    ) -> io::Result<()> {
        self.msg.clear();
        uint(&mut self.msg, 1, id);
        bytes(&mut self.msg, 2, name.as_bytes());
        if let Some(pid) = process {
            let mut p = Vec::new();
            uint(&mut p, 1, pid);
            bytes(&mut p, 6, name.as_bytes());
            bytes(&mut self.msg, 3, &p);
        }
        if let Some(parent) = parent {
            uint(&mut self.msg, 5, parent);
        }
        if counter {
            bytes(&mut self.msg, 8, &[]);
        }
        let msg = std::mem::take(&mut self.msg);
        bytes(&mut self.pkt, 60, &msg);
        self.msg = msg;
        self.flush_packet()
    }

    /// A `TrackEvent` at `ts` of `kind` on `track`, then the fields `a`,
    /// `b`, `c` (each already encoded, key included).
    #[inline]
    fn event(
        &mut self,
        ts: u64,
        kind: u64,
        track: u64,
        a: &[u8],
        b: &[u8],
        c: &[u8],
    ) -> io::Result<()> {
        // TracePacket { timestamp = 8, track_event = 11 { type = 9,
        // track_uuid = 11, a, b, c }, trailer }
        let msg = 2 + varint_len(kind) + varint_len(track) + a.len() + b.len() + c.len();
        let pkt = 2 + varint_len(ts) + varint_len(msg as u64) + msg + self.trailer_len();
        self.out.room(pkt + 16)?;
        let o = &mut self.out;
        o.byte((1 << 3) | 2);
        o.varint(pkt as u64);
        o.byte(8 << 3);
        o.varint(ts);
        o.byte((11 << 3) | 2);
        o.varint(msg as u64);
        o.byte(9 << 3);
        o.varint(kind);
        o.byte(11 << 3);
        o.varint(track);
        o.bytes(a);
        o.bytes(b);
        o.bytes(c);
        self.trailer();
        Ok(())
    }
}

/// Write `t` as a Perfetto protobuf trace to `w`.
pub(super) fn write(t: &mut Trace, w: &mut dyn Write) -> io::Result<()> {
    let mut p = Packets {
        out: Out::new(w),
        pkt: Vec::with_capacity(256),
        msg: Vec::with_capacity(256),
        first: true,
    };
    if t.enabled {
        for c in 0..t.cpus as u64 {
            let l = t.label(c as usize);
            p.track(cpu_process(c), &l, Some(1_000_000 + c), None, false)?;
            p.track(cpu_track(c, 0), &l, None, Some(cpu_process(c)), false)?;
            p.track(
                cpu_track(c, 1),
                &format!("{l} VCPU switches"),
                None,
                Some(cpu_process(c)),
                false,
            )?;
            p.track(
                server_process(c),
                &format!("servers on {l}"),
                Some(2_000_000 + c),
                None,
                false,
            )?;
        }
        for (g, (cpu, name)) in t.servers.iter().enumerate() {
            let parent = server_process(*cpu as u64);
            p.track(server_track(g as u64), name, None, Some(parent), false)?;
            p.track(
                budget_track(g as u64),
                &format!("budget {name} (us)"),
                None,
                Some(parent),
                true,
            )?;
        }
    }
    // the fields `categories = 22` and `name = 23`, encoded once per name
    let field = |f: u64, v: &mut dyn Iterator<Item = String>, none: &str| {
        let enc = |s: &str| {
            let mut b = Vec::new();
            bytes(&mut b, f, s.as_bytes());
            b
        };
        Frags {
            v: v.map(|s| enc(&s)).collect(),
            none: enc(none),
        }
    };
    let names = || t.names.iter().map(|n| n.to_string());
    let servers = || t.servers.iter().map(|s| s.1.clone());
    let name23 = field(23, &mut names(), "?");
    let name22 = field(22, &mut names(), "?");
    let bg23 = field(23, &mut names().map(|n| format!("{n} (bg)")), "? (bg)");
    let server22 = field(22, &mut servers(), "?");
    let switch23 = field(
        23,
        &mut servers().map(|n| format!("vcpu switch ({n})")),
        "vcpu switch (?)",
    );
    let cat = |c: &str| field(22, &mut std::iter::empty(), c).none;
    let (server_cat, switch_cat, flow_cat) = (cat("server"), cat("switch"), cat("flow"));
    let (flow_start, flow_end, counter) = (key(47, 1), key(48, 1), key(44, 1));
    // a fixed64 field: its key, then the value
    let fixed = |k: &[u8], v: u64| {
        let mut f = [0u8; 16];
        f[..k.len()].copy_from_slice(k);
        f[k.len()..k.len() + 8].copy_from_slice(&v.to_le_bytes());
        (f, k.len() + 8)
    };
    // open slices: (end, last begun first, track)
    let mut ends: BinaryHeap<Reverse<(u64, Reverse<u64>, u64)>> = BinaryHeap::new();
    let mut order = 0u64;
    let mut res = Ok(());
    for r in t.sorted() {
        while let Some(&Reverse((end, _, track))) = ends.peek() {
            if end > r.ts {
                break;
            }
            ends.pop();
            res = res.and_then(|()| p.event(end, SLICE_END, track, &[], &[], &[]));
        }
        let (cpu, end) = (r.cpu as u64, r.ts.saturating_add(r.dur));
        let mut slice = |p: &mut Packets, track: u64, name: &[u8], cat: &[u8]| {
            order += 1;
            ends.push(Reverse((end, Reverse(order), track)));
            p.event(r.ts, SLICE_BEGIN, track, cat, name, &[])
        };
        let step = match r.kind {
            Kind::Run => {
                let n = if r.bg { bg23.get(r.y) } else { name23.get(r.y) };
                slice(&mut p, cpu_track(cpu, 0), n, server22.get(r.x))
                    .and_then(|()| slice(&mut p, server_track(r.x as u64), n, &server_cat))
            }
            Kind::Irq => slice(&mut p, cpu_track(cpu, 0), name23.get(r.y), name22.get(r.x)),
            Kind::Switch => slice(&mut p, cpu_track(cpu, 1), switch23.get(r.x), &switch_cat),
            Kind::FlowStart | Kind::FlowEnd => {
                let k = if r.kind == Kind::FlowStart {
                    &flow_start
                } else {
                    &flow_end
                };
                let (f, n) = fixed(k, r.a);
                p.event(
                    r.ts,
                    INSTANT,
                    cpu_track(cpu, 0),
                    &flow_cat,
                    name23.get(r.y),
                    &f[..n],
                )
            }
            Kind::Budget => {
                let v = if r.a == u64::MAX {
                    -1.0
                } else {
                    r.a as f64 / 1000.0
                };
                let (f, n) = fixed(&counter, v.to_bits());
                p.event(r.ts, COUNTER, budget_track(r.x as u64), &f[..n], &[], &[])
            }
        };
        res = res.and(step);
        if res.is_err() {
            break;
        }
    }
    while let Some(Reverse((end, _, track))) = ends.pop() {
        if res.is_err() {
            break;
        }
        res = p.event(end, SLICE_END, track, &[], &[], &[]);
    }
    res?;
    p.out.finish()?;
    w.flush()
}
