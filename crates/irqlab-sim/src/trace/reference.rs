//! The trace writers as they were before the `Out` buffer (main
//! 08dbe4e), kept for the tests only: the new writers must write the same
//! bytes, for every trace the tests make.

use std::io::{self, Write};

use super::out::DIGITS2;
use super::{Kind, Trace};

/// The escaped name `i` of `v` ("?" if unknown).
fn pick(v: &[String], i: u32) -> &str {
    v.get(i as usize).map_or("\"?\"", String::as_str)
}

/// The escaped name `i` of `v` as bytes.
fn s(v: &[String], i: u32) -> &[u8] {
    pick(v, i).as_bytes()
}

/// Append the decimal digits of `v` (two digits per step: this runs for
/// every number of every JSON event).
fn push_u64(b: &mut Vec<u8>, mut v: u64) {
    let mut d = [0u8; 20];
    let mut i = d.len();
    while v >= 100 {
        let k = (v % 100) as usize * 2;
        v /= 100;
        i -= 2;
        d[i..i + 2].copy_from_slice(&DIGITS2[k..k + 2]);
    }
    if v >= 10 {
        let k = v as usize * 2;
        i -= 2;
        d[i..i + 2].copy_from_slice(&DIGITS2[k..k + 2]);
    } else {
        i -= 1;
        d[i] = b'0' + v as u8;
    }
    b.extend_from_slice(&d[i..]);
}

/// Append nanoseconds as microseconds with three decimals (as `Us`).
fn push_us(b: &mut Vec<u8>, ns: u64) {
    push_u64(b, ns / 1000);
    let f = ns % 1000;
    let digit = |d: u64| b'0' + d as u8;
    b.extend_from_slice(&[b'.', digit(f / 100), digit(f / 10 % 10), digit(f % 10)]);
}

pub(super) fn write_json(t: &mut Trace, w: &mut dyn Write) -> io::Result<()> {
    let esc = |s: &str| serde_json::to_string(s).unwrap_or_else(|_| "\"?\"".into());
    let names: Vec<String> = t.names.iter().map(|n| esc(n)).collect();
    let bg: Vec<String> = t.names.iter().map(|n| esc(&format!("{n} (bg)"))).collect();
    let sname: Vec<String> = t.servers.iter().map(|(_, n)| esc(n)).collect();
    let switch: Vec<String> = t
        .servers
        .iter()
        .map(|(_, n)| esc(&format!("vcpu switch ({n})")))
        .collect();
    let counter: Vec<String> = t
        .servers
        .iter()
        .map(|(_, n)| esc(&format!("budget {n} (us)")))
        .collect();
    let mut first = true;
    let sep = |w: &mut dyn Write, first: &mut bool| -> io::Result<()> {
        w.write_all(if std::mem::take(first) { b"\n" } else { b",\n" })
    };
    w.write_all(b"{\"traceEvents\":[")?;
    if t.enabled {
        for c in 0..t.cpus {
            sep(w, &mut first)?;
            let l = t.label(c);
            write!(
                w,
                "{{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":{c},\"args\":{{\"name\":{}}}}}",
                esc(&l)
            )?;
            sep(w, &mut first)?;
            write!(
                w,
                "{{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":{},\"args\":{{\"name\":{}}}}}",
                1000 + c,
                esc(&format!("servers on {l}"))
            )?;
        }
        for (i, (cpu, _)) in t.servers.iter().enumerate() {
            sep(w, &mut first)?;
            write!(w, "{{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":{},\"tid\":{i},\"args\":{{\"name\":{}}}}}", 1000 + cpu, sname[i])?;
        }
    }
    let (max_events, truncated) = (t.max_events, t.truncated);
    // the events are formatted by hand into a buffer written in large
    // blocks: `write!` through `dyn Write` cost about 0.5 us per event
    let mut b: Vec<u8> = Vec::with_capacity(1 << 17);
    for r in t.sorted() {
        let (cpu, x, y) = (r.cpu as u64, r.x, r.y);
        b.extend_from_slice(if first { b"\n" } else { b",\n" });
        first = false;
        // `{"ph":"P","name":N,"cat":C,"pid":P,"tid":T,"ts":TS,"dur":D}`
        let slice = |b: &mut Vec<u8>, name: &[u8], cat: &[u8], pid: u64, tid: u64| {
            b.extend_from_slice(b"{\"ph\":\"X\",\"name\":");
            b.extend_from_slice(name);
            b.extend_from_slice(b",\"cat\":");
            b.extend_from_slice(cat);
            b.extend_from_slice(b",\"pid\":");
            push_u64(b, pid);
            b.extend_from_slice(b",\"tid\":");
            push_u64(b, tid);
            b.extend_from_slice(b",\"ts\":");
            push_us(b, r.ts);
            b.extend_from_slice(b",\"dur\":");
            push_us(b, r.dur);
            b.push(b'}');
        };
        match r.kind {
            Kind::Run => {
                let name = if r.bg { s(&bg, y) } else { s(&names, y) };
                slice(&mut b, name, s(&sname, x), cpu, 0);
                b.extend_from_slice(b",\n");
                slice(&mut b, name, b"\"server\"", 1000 + cpu, x as u64);
            }
            Kind::Irq => slice(&mut b, s(&names, y), s(&names, x), cpu, 0),
            Kind::Switch => slice(&mut b, s(&switch, x), b"\"switch\"", cpu, 1),
            Kind::FlowStart | Kind::FlowEnd => {
                b.extend_from_slice(if r.kind == Kind::FlowStart {
                    b"{\"ph\":\"s\",\"name\":"
                } else {
                    b"{\"ph\":\"f\",\"bp\":\"e\",\"name\":"
                });
                b.extend_from_slice(s(&names, y));
                b.extend_from_slice(b",\"cat\":\"flow\",\"id\":");
                push_u64(&mut b, r.a);
                b.extend_from_slice(b",\"pid\":");
                push_u64(&mut b, cpu);
                b.extend_from_slice(b",\"tid\":0,\"ts\":");
                push_us(&mut b, r.ts);
                b.push(b'}');
            }
            Kind::Budget => {
                b.extend_from_slice(b"{\"ph\":\"C\",\"name\":");
                b.extend_from_slice(s(&counter, x));
                b.extend_from_slice(b",\"pid\":");
                push_u64(&mut b, 1000 + cpu);
                b.extend_from_slice(b",\"ts\":");
                push_us(&mut b, r.ts);
                b.extend_from_slice(b",\"args\":{\"budget\":");
                if r.a == u64::MAX {
                    b.extend_from_slice(b"-1");
                } else {
                    push_us(&mut b, r.a);
                }
                b.extend_from_slice(b"}}");
            }
        }
        if b.len() >= 1 << 16 {
            w.write_all(&b)?;
            b.clear();
        }
    }
    w.write_all(&b)?;
    write!(w, "\n],\"displayTimeUnit\":\"ns\",\"otherData\":{{\"max_events\":{max_events},\"truncated\":{truncated}}}}}\n")?;
    w.flush()
}

/// The Perfetto writer of main 08dbe4e.
pub(super) mod perfetto {
    use std::cmp::Reverse;
    use std::collections::BinaryHeap;
    use std::io::{self, Write};

    use super::super::{Kind, Trace};

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

    fn fixed64(out: &mut Vec<u8>, field: u64, v: u64) {
        varint(out, (field << 3) | 1);
        out.extend_from_slice(&v.to_le_bytes());
    }

    /// Writes packets; reuses its buffers.
    struct Packets<'w> {
        w: &'w mut dyn Write,
        pkt: Vec<u8>,
        msg: Vec<u8>,
        /// Packets not yet written to `w`.
        out: Vec<u8>,
        first: bool,
    }

    impl Packets<'_> {
        /// Write `self.pkt` as one `TracePacket` (field 1 of `Trace`).
        fn flush_packet(&mut self) -> io::Result<()> {
            uint(&mut self.pkt, 10, 1);
            if self.first {
                uint(&mut self.pkt, 13, 1);
                self.first = false;
            }
            // the packet's key and length, then the packet, into one buffer
            // written in large blocks (a write per packet cost more than the
            // encoding)
            varint(&mut self.out, (1 << 3) | 2);
            varint(&mut self.out, self.pkt.len() as u64);
            self.out.extend_from_slice(&self.pkt);
            self.pkt.clear();
            if self.out.len() >= 1 << 16 {
                self.w.write_all(&self.out)?;
                self.out.clear();
            }
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

        /// A `TrackEvent` at `ts` of `kind` on `track`; `fill` adds fields.
        fn event(
            &mut self,
            ts: u64,
            kind: u64,
            track: u64,
            fill: impl FnOnce(&mut Vec<u8>),
        ) -> io::Result<()> {
            self.msg.clear();
            uint(&mut self.msg, 9, kind);
            uint(&mut self.msg, 11, track);
            fill(&mut self.msg);
            uint(&mut self.pkt, 8, ts);
            let msg = std::mem::take(&mut self.msg);
            bytes(&mut self.pkt, 11, &msg);
            self.msg = msg;
            self.flush_packet()
        }
    }

    /// Write `t` as a Perfetto protobuf trace to `w`.
    pub(in crate::trace) fn write(t: &mut Trace, w: &mut dyn Write) -> io::Result<()> {
        let mut p = Packets {
            w,
            pkt: Vec::with_capacity(256),
            msg: Vec::with_capacity(256),
            out: Vec::with_capacity(1 << 17),
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
        let names = std::mem::take(&mut t.names);
        let servers = std::mem::take(&mut t.servers);
        let name = |i: u32| names.get(i as usize).map_or("?", |s| &**s);
        let server = |i: u32| servers.get(i as usize).map_or("?", |s| s.1.as_str());
        // the composed names, built once (not a `String` per record)
        let bg_names: Vec<String> = names.iter().map(|n| format!("{n} (bg)")).collect();
        let bg_name = |i: u32| bg_names.get(i as usize).map_or("? (bg)", String::as_str);
        let switch_names: Vec<String> = servers
            .iter()
            .map(|s| format!("vcpu switch ({})", s.1))
            .collect();
        let switch_name = |i: u32| {
            switch_names
                .get(i as usize)
                .map_or("vcpu switch (?)", String::as_str)
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
                res = res.and_then(|()| p.event(end, SLICE_END, track, |_| {}));
            }
            let (cpu, end) = (r.cpu as u64, r.ts.saturating_add(r.dur));
            let mut slice = |p: &mut Packets, track: u64, name: &str, cat: &str| {
                order += 1;
                ends.push(Reverse((end, Reverse(order), track)));
                p.event(r.ts, SLICE_BEGIN, track, |m| {
                    bytes(m, 22, cat.as_bytes());
                    bytes(m, 23, name.as_bytes());
                })
            };
            let step = match r.kind {
                Kind::Run => {
                    let n = if r.bg { bg_name(r.y) } else { name(r.y) };
                    slice(&mut p, cpu_track(cpu, 0), n, server(r.x))
                        .and_then(|()| slice(&mut p, server_track(r.x as u64), n, "server"))
                }
                Kind::Irq => slice(&mut p, cpu_track(cpu, 0), name(r.y), name(r.x)),
                Kind::Switch => slice(&mut p, cpu_track(cpu, 1), switch_name(r.x), "switch"),
                Kind::FlowStart | Kind::FlowEnd => {
                    let field = if r.kind == Kind::FlowStart { 47 } else { 48 };
                    p.event(r.ts, INSTANT, cpu_track(cpu, 0), |m| {
                        bytes(m, 22, b"flow");
                        bytes(m, 23, name(r.y).as_bytes());
                        fixed64(m, field, r.a);
                    })
                }
                Kind::Budget => {
                    let v = if r.a == u64::MAX {
                        -1.0
                    } else {
                        r.a as f64 / 1000.0
                    };
                    p.event(r.ts, COUNTER, budget_track(r.x as u64), |m| {
                        fixed64(m, 44, v.to_bits());
                    })
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
            res = p.event(end, SLICE_END, track, |_| {});
        }
        t.names = names;
        t.servers = servers;
        res?;
        p.w.write_all(&p.out)?;
        p.w.flush()
    }
}
