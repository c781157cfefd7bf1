//! The limits a model (and a simulation configuration built by hand) must
//! keep, and the checks that run before and around parsing: the size and
//! nesting of the YAML text, names without control characters, trace files
//! read only when they are regular files of bounded size.
//!
//! Design principles: every limit is a named constant with the physical or
//! practical reason beside it; a limit is checked before anything is
//! allocated from the user's number; the longest time is far enough below
//! `u64::MAX` ns that sums of a few thousand user times cannot wrap, and
//! products (loop counts, sectors) are checked in wide arithmetic; values
//! echoed in messages are escaped so a name cannot write to the terminal.

use std::fmt::Write as _;
use std::io::Read;
use std::path::Path;

use irqlab_core::Nanos;

/// The longest time a model may state (10^6 s, 11.6 days of simulated
/// time): 18,000 such times still sum below `u64::MAX` ns.
pub const MAX_TIME: Nanos = Nanos(1_000_000_000_000_000);
/// Statistics windows per run (`duration / window`): the simulator keeps
/// per-window counters for every CPU, server and device.
pub const MAX_WINDOWS: u64 = 1_000_000;
/// Loop counts, jobs, sectors per request.
pub const MAX_COUNT: u64 = 1_000_000_000;
/// Packets in one burst.
pub const MAX_BURST: u64 = 1_000_000;
/// Largest packet (a 64 KiB GSO/LRO segment; Ethernet jumbo frames are 9 KB).
pub const MAX_PACKET_BYTES: u64 = 65_536;
/// Largest request, sector or other size (1 GiB).
pub const MAX_SIZE_BYTES: u64 = 1 << 30;
/// Most packets per second a NIC can deliver: 100 Gb/s of minimum-size
/// Ethernet frames is 148.8 Mpps; 200 Mpps leaves room.
pub const MAX_PACKET_RATE: f64 = 2e8;
/// Shortest NIC inter-arrival time (1 / `MAX_PACKET_RATE`).
pub const MIN_PACKET_INTERVAL: Nanos = Nanos(5);
/// Fastest data rate (100 GB/s, beyond any USB or PCIe x16 Gen 5 link).
pub const MAX_DATA_RATE: u64 = 100_000_000_000;
/// Largest NIC buffer or ring (packets).
pub const MAX_QUEUE: usize = 1 << 20;
/// A job whose computation is more than this many periods long can never
/// keep up (an error; above one period is a warning).
pub const MAX_JOB_PERIODS: u64 = 1_000;
/// Longest name (characters).
pub const MAX_NAME_CHARS: usize = 256;
/// Largest model text (bytes).
pub const MAX_MODEL_BYTES: usize = 4 << 20;
/// Deepest nesting of YAML collections: a model needs about 10; libyaml
/// parses deep nesting in quadratic time.
pub const MAX_NESTING: usize = 64;
/// Largest arrival trace file (bytes).
pub const MAX_TRACE_FILE_BYTES: u64 = 64 << 20;

/// `s` with control characters (newlines, ESC, ...) written as `\u{1b}`
/// escapes: safe to print on a terminal, one line.
pub fn escape(s: &str) -> String {
    if !s.chars().any(char::is_control) {
        return s.to_owned();
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if c.is_control() {
            let _ = write!(out, "\\u{{{:x}}}", c as u32);
        } else {
            out.push(c);
        }
    }
    out
}

/// `s` cut to about `max` characters (the middle elided): a message that
/// quotes the input (serde's "invalid type: string ...") stays short.
pub fn shorten(s: &str, max: usize) -> String {
    let n = s.chars().count();
    if n <= max {
        return s.to_owned();
    }
    let head: String = s.chars().take(max * 2 / 3).collect();
    let tail: String = s.chars().skip(n - max / 3).collect();
    format!(
        "{head} [... {} characters ...] {tail}",
        n - head.chars().count() - max / 3
    )
}

/// The rule a name breaks, if any: no control characters, at most
/// `MAX_NAME_CHARS` characters.
pub fn name_rule(name: &str) -> Option<String> {
    if name.chars().any(char::is_control) {
        Some("a name has no control characters (newlines, tabs, escapes)".into())
    } else if name.chars().count() > MAX_NAME_CHARS {
        Some(format!("a name has at most {MAX_NAME_CHARS} characters"))
    } else {
        None
    }
}

/// Bound the model text before it reaches the YAML parser: its size, and
/// the nesting depth of flow (`[`, `{`) and block (indentation, `- - -`)
/// collections.
pub fn check_text(text: &str) -> Result<(), String> {
    if text.len() > MAX_MODEL_BYTES {
        return Err(format!(
            "the model is {} bytes: at most {} bytes are accepted",
            text.len(),
            MAX_MODEL_BYTES
        ));
    }
    let mut flow = 0usize;
    for (n, line) in text.lines().enumerate() {
        let lineno = n + 1;
        let body = line.trim_start_matches([' ', '\t']);
        let indent = line.len() - body.len();
        // block nesting: indentation and compact `- - -` sequences
        let mut dashes = 0;
        let mut rest = body;
        while let Some(r) = rest.strip_prefix("- ").or_else(|| rest.strip_prefix("? ")) {
            dashes += 1;
            rest = r.trim_start_matches(' ');
        }
        if indent / 2 + dashes > MAX_NESTING * 2 {
            return Err(format!(
                "line {lineno}: nested {} levels deep by indentation: at most {MAX_NESTING} levels are accepted",
                indent / 2 + dashes
            ));
        }
        let mut quote: Option<char> = None;
        let mut prev = ' ';
        for c in body.chars() {
            match quote {
                Some(q) if c == q => quote = None,
                Some(_) => {}
                None => match c {
                    '#' if prev == ' ' || prev == '\t' => break,
                    '"' | '\'' if flow > 0 || prev == ' ' || prev == ':' => quote = Some(c),
                    '[' | '{' => {
                        flow += 1;
                        if flow > MAX_NESTING {
                            return Err(format!(
                                "line {lineno}: collections nested more than {MAX_NESTING} levels deep"
                            ));
                        }
                    }
                    ']' | '}' => flow = flow.saturating_sub(1),
                    _ => {}
                },
            }
            prev = c;
        }
    }
    Ok(())
}

/// An arrival trace file (a nic's `arrival: {kind: trace, file}`): one
/// arrival time per line (a duration with unit; `#` comments, a header line
/// `time` and columns after a comma are skipped), sorted, in ns. The error
/// is `(line, value, rule)`; line `None` when the file cannot be read.
pub fn read_trace_file(file: &Path) -> Result<Vec<u64>, (Option<usize>, String, String)> {
    let text = read_text_file(file, MAX_TRACE_FILE_BYTES).map_err(|e| {
        (
            None,
            file.display().to_string(),
            format!("cannot read: {e}"),
        )
    })?;
    let mut times = Vec::new();
    for (k, line) in text.lines().enumerate() {
        let l = line
            .split('#')
            .next()
            .unwrap_or("")
            .split(',')
            .next()
            .unwrap_or("")
            .trim();
        if l.is_empty() || l.eq_ignore_ascii_case("time") {
            continue;
        }
        let t = crate::units::parse_duration(l).map_err(|e| (Some(k + 1), l.to_owned(), e))?;
        times.push(t.as_ns());
    }
    times.sort_unstable();
    Ok(times)
}

/// Read a text input file (an arrival trace): only a regular file, at most
/// `max` bytes; the message says which rule failed.
pub fn read_text_file(path: &Path, max: u64) -> Result<String, String> {
    let meta = std::fs::metadata(path).map_err(|e| e.to_string())?;
    if !meta.is_file() {
        return Err("not a regular file".into());
    }
    if meta.len() > max {
        return Err(format!(
            "{} bytes: at most {max} bytes are read",
            meta.len()
        ));
    }
    let f = std::fs::File::open(path).map_err(|e| e.to_string())?;
    let mut buf = Vec::new();
    f.take(max + 1)
        .read_to_end(&mut buf)
        .map_err(|e| e.to_string())?;
    if buf.len() as u64 > max {
        return Err(format!(
            "more than {max} bytes: at most {max} bytes are read"
        ));
    }
    String::from_utf8(buf).map_err(|_| "not UTF-8 text".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_control_characters() {
        assert_eq!(escape("a\u{1b}[31mb\n"), "a\\u{1b}[31mb\\u{a}");
        assert_eq!(escape("plain µs"), "plain µs");
    }

    #[test]
    fn nesting_is_bounded() {
        assert!(check_text(&"[".repeat(MAX_NESTING)).is_ok());
        let e = check_text(&"[".repeat(200_000)).unwrap_err();
        assert!(e.contains("nested more than 64"), "{e}");
        assert!(check_text(&"- ".repeat(1000)).is_err());
        assert!(check_text(&format!("{}x: 1", " ".repeat(4000))).is_err());
        // brackets inside quotes and comments do not count
        let q = format!("a: \"{}\" # {}", "[".repeat(100), "{".repeat(100));
        assert!(check_text(&q).is_ok());
    }

    #[test]
    fn names() {
        assert!(name_rule("nic0").is_none());
        assert!(name_rule("a\u{1b}[2J").is_some());
        assert!(name_rule(&"x".repeat(300)).is_some());
    }

    #[test]
    fn files() {
        assert!(read_text_file(Path::new("/"), 10)
            .unwrap_err()
            .contains("regular"));
        assert!(read_text_file(Path::new("/dev/zero"), 10)
            .unwrap_err()
            .contains("regular"));
    }
}
