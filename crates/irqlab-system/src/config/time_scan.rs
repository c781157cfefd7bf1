//! A quick pass over a `SimConfig` that says whether any time may exceed
//! the limit, without building a JSON tree (for speed: validation was most
//! of the cost of a 10,000-task run).
//!
//! What it is: a `serde::Serializer` that visits the configuration exactly
//! as `serde_json::to_value` would lay it out -- the same keys, arrays and
//! numbers -- and stops at the first number under a time key (`TIME_KEYS`,
//! at any depth; arrays inherit their key) that is not an integer in
//! `0..=max`. It builds no path and allocates nothing.
//!
//! Design principle: it only decides whether the exact check
//! (`check_times` on the JSON value, which names the path) must run. It
//! flags everything it is unsure of -- a number that JSON would not hold,
//! a map key that is not a string -- so a configuration it passes is one
//! the exact check passes too, and every error message is the exact
//! check's.

use serde::ser::{self, Serialize};

use crate::config::{Phase, PolicyCfg, Release, ServerCfg, SimConfig, TaskCfg};

/// Stop: a time over the limit, or something only the exact check decides.
#[derive(Debug)]
pub(super) struct Flag;

impl std::fmt::Display for Flag {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a time to check exactly")
    }
}

impl std::error::Error for Flag {}

impl ser::Error for Flag {
    fn custom<T: std::fmt::Display>(_msg: T) -> Flag {
        Flag
    }
}

/// Slots of a `KeySet` (a power of two, at least twice its keys).
const SLOTS: usize = 128;

/// A fixed set of keys whose membership test costs a hash of the key and
/// about one comparison, not one comparison per member (for speed: with a
/// list of 37 time keys, the test was most of the scan): an
/// open-addressing table (FNV-1a, linear probing) built at compile time.
pub(super) struct KeySet {
    /// `""`: an empty slot (no key is empty).
    slots: [&'static str; SLOTS],
}

/// FNV-1a of `b`.
const fn fnv(b: &[u8]) -> usize {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut i = 0;
    while i < b.len() {
        h ^= b[i] as u64;
        h = h.wrapping_mul(0x0100_0000_01b3);
        i += 1;
    }
    h as usize
}

impl KeySet {
    pub(super) const fn new(keys: &[&'static str]) -> KeySet {
        assert!(2 * keys.len() <= SLOTS, "too many keys for a KeySet");
        let mut slots = [""; SLOTS];
        let mut i = 0;
        while i < keys.len() {
            assert!(!keys[i].is_empty(), "a KeySet key is empty");
            let mut h = fnv(keys[i].as_bytes()) % SLOTS;
            while !slots[h].is_empty() {
                h = (h + 1) % SLOTS;
            }
            slots[h] = keys[i];
            i += 1;
        }
        KeySet { slots }
    }

    pub(super) fn contains(&self, k: &str) -> bool {
        let mut h = fnv(k.as_bytes()) % SLOTS;
        loop {
            let s = self.slots[h];
            if s.is_empty() {
                return false;
            }
            if s == k {
                return true;
            }
            h = (h + 1) % SLOTS;
        }
    }
}

/// Does `value` (a configuration) pass the time limit `max` everywhere?
/// `time_keys`: the keys whose numbers are times. All through serde: the
/// tests' reference for `config_times_within`.
#[cfg(test)]
pub(super) fn times_within<T: Serialize>(value: &T, time_keys: &KeySet, max: u64) -> bool {
    value.serialize(Scan::top(time_keys, max, &[])).is_ok()
}

/// `times_within` for a `SimConfig`, its tasks and servers -- the parts
/// that grow with the model -- read field by field from their types
/// instead of through serde (for speed: about 550 instructions a task
/// through serde, a flattened server policy being a map of keys to look
/// up; 5.9 M of a 10,000-task run). The typed pass knows which fields
/// the exact check's JSON holds under a time key (`TIME_KEYS`: `period`,
/// `deadline`, `offset`, `at`, `ns`, `budget`, `runtime`); every other
/// part of the configuration goes through the serde pass as before.
/// Each struct is destructured whole, so a field added to one does not
/// compile until it is placed here; a test
/// (`agrees_with_the_exact_check_on_every_golden_config`) sets every time
/// of every shipped configuration over the limit and checks that this
/// pass refuses it.
pub(super) fn config_times_within(c: &SimConfig, time_keys: &KeySet, max: u64) -> bool {
    let ok = |t: u64| t <= max;
    let tasks = c.tasks.iter().all(|t| {
        let TaskCfg {
            name: _,
            server: _,
            priority: _,
            release,
            program,
            abort_on_miss: _,
        } = t;
        let release = match *release {
            Release::Once { at } => ok(at),
            Release::Periodic {
                period,
                deadline,
                offset,
                jobs: _,
            } => ok(period) && deadline.is_none_or(ok) && ok(offset),
        };
        release && phases_within(program, max)
    });
    let servers = c.servers.iter().all(|s| {
        let ServerCfg {
            name: _,
            cpu: _,
            policy,
            rank: _,
        } = s;
        match *policy {
            PolicyCfg::Sporadic {
                budget,
                period,
                max_repl: _,
                background: _,
            }
            | PolicyCfg::Deferrable { budget, period }
            | PolicyCfg::Polling { budget, period } => ok(budget) && ok(period),
            PolicyCfg::Cbs { runtime, period } => ok(runtime) && ok(period),
            PolicyCfg::Pibs {
                num: _,
                den: _,
                strict: _,
            }
            | PolicyCfg::Unbounded {} => true,
        }
    });
    tasks
        && servers
        && c.serialize(Scan::top(time_keys, max, &["tasks", "servers"]))
            .is_ok()
}

/// Every `ns` of a program (its loops' bodies too) at most `max`.
fn phases_within(phases: &[Phase], max: u64) -> bool {
    phases.iter().all(|p| match p {
        Phase::Compute { ns } | Phase::Sleep { ns } => *ns <= max,
        Phase::Loop { count: _, body } => phases_within(body, max),
        Phase::Io { device: _ }
        | Phase::Bind {
            device: _,
            class: _,
        } => true,
    })
}

/// The scanner at one value: `time` says whether its numbers are times.
#[derive(Copy, Clone)]
struct Scan<'k> {
    time: bool,
    keys: &'k KeySet,
    max: u64,
    /// Fields of this struct to leave out (checked by the typed pass; set
    /// at the top only).
    skip: &'k [&'static str],
}

impl<'k> Scan<'k> {
    /// The scanner of a whole configuration, without its fields `skip`.
    fn top(keys: &'k KeySet, max: u64, skip: &'k [&'static str]) -> Scan<'k> {
        Scan {
            time: false,
            keys,
            max,
            skip,
        }
    }
    /// The scanner for the value under key `k` of an object.
    fn under(self, k: &str) -> Scan<'k> {
        Scan {
            time: self.keys.contains(k),
            skip: &[],
            ..self
        }
    }
    fn int(self, v: u64) -> Result<(), Flag> {
        if self.time && v > self.max {
            Err(Flag)
        } else {
            Ok(())
        }
    }
    fn neg(self, v: i64) -> Result<(), Flag> {
        match u64::try_from(v) {
            Ok(u) => self.int(u),
            Err(_) if self.time => Err(Flag),
            Err(_) => Ok(()),
        }
    }
    /// JSON keeps a finite float as a number (never a time: it is not an
    /// integer), a NaN or an infinity as null.
    fn float(self, v: f64) -> Result<(), Flag> {
        if self.time && v.is_finite() {
            Err(Flag)
        } else {
            Ok(())
        }
    }
}

impl<'k> ser::Serializer for Scan<'k> {
    type Ok = ();
    type Error = Flag;
    type SerializeSeq = Scan<'k>;
    type SerializeTuple = Scan<'k>;
    type SerializeTupleStruct = Scan<'k>;
    type SerializeTupleVariant = Scan<'k>;
    type SerializeMap = MapScan<'k>;
    type SerializeStruct = Scan<'k>;
    type SerializeStructVariant = Scan<'k>;

    fn serialize_bool(self, _: bool) -> Result<(), Flag> {
        Ok(())
    }
    fn serialize_i8(self, v: i8) -> Result<(), Flag> {
        self.neg(v.into())
    }
    fn serialize_i16(self, v: i16) -> Result<(), Flag> {
        self.neg(v.into())
    }
    fn serialize_i32(self, v: i32) -> Result<(), Flag> {
        self.neg(v.into())
    }
    fn serialize_i64(self, v: i64) -> Result<(), Flag> {
        self.neg(v)
    }
    fn serialize_i128(self, _: i128) -> Result<(), Flag> {
        Err(Flag)
    }
    fn serialize_u8(self, v: u8) -> Result<(), Flag> {
        self.int(v.into())
    }
    fn serialize_u16(self, v: u16) -> Result<(), Flag> {
        self.int(v.into())
    }
    fn serialize_u32(self, v: u32) -> Result<(), Flag> {
        self.int(v.into())
    }
    fn serialize_u64(self, v: u64) -> Result<(), Flag> {
        self.int(v)
    }
    fn serialize_u128(self, _: u128) -> Result<(), Flag> {
        Err(Flag)
    }
    fn serialize_f32(self, v: f32) -> Result<(), Flag> {
        self.float(v.into())
    }
    fn serialize_f64(self, v: f64) -> Result<(), Flag> {
        self.float(v)
    }
    fn serialize_char(self, _: char) -> Result<(), Flag> {
        Ok(())
    }
    fn serialize_str(self, _: &str) -> Result<(), Flag> {
        Ok(())
    }
    fn serialize_bytes(self, v: &[u8]) -> Result<(), Flag> {
        // JSON: an array of small integers
        v.iter().try_for_each(|&b| self.int(b.into()))
    }
    fn serialize_none(self) -> Result<(), Flag> {
        Ok(())
    }
    fn serialize_some<T: ?Sized + Serialize>(self, v: &T) -> Result<(), Flag> {
        v.serialize(self)
    }
    fn serialize_unit(self) -> Result<(), Flag> {
        Ok(())
    }
    fn serialize_unit_struct(self, _: &'static str) -> Result<(), Flag> {
        Ok(())
    }
    fn serialize_unit_variant(self, _: &'static str, _: u32, _: &'static str) -> Result<(), Flag> {
        Ok(())
    }
    fn serialize_newtype_struct<T: ?Sized + Serialize>(
        self,
        _: &'static str,
        v: &T,
    ) -> Result<(), Flag> {
        v.serialize(self)
    }
    fn serialize_newtype_variant<T: ?Sized + Serialize>(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        v: &T,
    ) -> Result<(), Flag> {
        v.serialize(self.under(variant))
    }
    fn serialize_seq(self, _: Option<usize>) -> Result<Scan<'k>, Flag> {
        Ok(self)
    }
    fn serialize_tuple(self, _: usize) -> Result<Scan<'k>, Flag> {
        Ok(self)
    }
    fn serialize_tuple_struct(self, _: &'static str, _: usize) -> Result<Scan<'k>, Flag> {
        Ok(self)
    }
    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        _: usize,
    ) -> Result<Scan<'k>, Flag> {
        Ok(self.under(variant))
    }
    fn serialize_map(self, _: Option<usize>) -> Result<MapScan<'k>, Flag> {
        Ok(MapScan {
            at: self,
            next: None,
        })
    }
    fn serialize_struct(self, _: &'static str, _: usize) -> Result<Scan<'k>, Flag> {
        Ok(self)
    }
    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Scan<'k>, Flag> {
        // `{variant: {fields}}`: the fields are keys of the inner object
        Ok(self)
    }
}

/// Elements of arrays (and tuples): they inherit the array's key.
macro_rules! elements {
    ($($tr:ident :: $method:ident;)*) => {$(
        impl ser::$tr for Scan<'_> {
            type Ok = ();
            type Error = Flag;
            fn $method<T: ?Sized + Serialize>(&mut self, v: &T) -> Result<(), Flag> {
                v.serialize(*self)
            }
            fn end(self) -> Result<(), Flag> {
                Ok(())
            }
        }
    )*};
}

elements! {
    SerializeSeq::serialize_element;
    SerializeTuple::serialize_element;
    SerializeTupleStruct::serialize_field;
    SerializeTupleVariant::serialize_field;
}

/// Fields of objects: each key decides whether its value is a time.
macro_rules! fields {
    ($($tr:ident;)*) => {$(
        impl ser::$tr for Scan<'_> {
            type Ok = ();
            type Error = Flag;
            fn serialize_field<T: ?Sized + Serialize>(
                &mut self,
                key: &'static str,
                v: &T,
            ) -> Result<(), Flag> {
                if self.skip.contains(&key) {
                    return Ok(());
                }
                v.serialize(self.under(key))
            }
            fn end(self) -> Result<(), Flag> {
                Ok(())
            }
        }
    )*};
}

fields! {
    SerializeStruct;
    SerializeStructVariant;
}

/// A map (a flattened struct): each key decides whether its value is a
/// time.
struct MapScan<'k> {
    at: Scan<'k>,
    /// Whether the value of the key just seen is a time.
    next: Option<bool>,
}

impl ser::SerializeMap for MapScan<'_> {
    type Ok = ();
    type Error = Flag;
    fn serialize_key<T: ?Sized + Serialize>(&mut self, key: &T) -> Result<(), Flag> {
        self.next = Some(key.serialize(KeyName(self.at.keys))?);
        Ok(())
    }
    fn serialize_value<T: ?Sized + Serialize>(&mut self, v: &T) -> Result<(), Flag> {
        let time = self.next.take().ok_or(Flag)?;
        v.serialize(Scan {
            time,
            skip: &[],
            ..self.at
        })
    }
    fn end(self) -> Result<(), Flag> {
        Ok(())
    }
}

/// A map key: whether it is a time key. Only a string key is taken;
/// anything else goes to the exact check.
struct KeyName<'k>(&'k KeySet);

macro_rules! flag {
    ($($name:ident($($t:ty),*);)*) => {
        $(fn $name(self, $(_: $t),*) -> Result<bool, Flag> {
            Err(Flag)
        })*
    };
}

impl ser::Serializer for KeyName<'_> {
    type Ok = bool;
    type Error = Flag;
    type SerializeSeq = ser::Impossible<bool, Flag>;
    type SerializeTuple = ser::Impossible<bool, Flag>;
    type SerializeTupleStruct = ser::Impossible<bool, Flag>;
    type SerializeTupleVariant = ser::Impossible<bool, Flag>;
    type SerializeMap = ser::Impossible<bool, Flag>;
    type SerializeStruct = ser::Impossible<bool, Flag>;
    type SerializeStructVariant = ser::Impossible<bool, Flag>;

    fn serialize_str(self, v: &str) -> Result<bool, Flag> {
        Ok(self.0.contains(v))
    }
    flag! {
        serialize_bool(bool);
        serialize_i8(i8);
        serialize_i16(i16);
        serialize_i32(i32);
        serialize_i64(i64);
        serialize_u8(u8);
        serialize_u16(u16);
        serialize_u32(u32);
        serialize_u64(u64);
        serialize_f32(f32);
        serialize_f64(f64);
        serialize_char(char);
        serialize_bytes(&[u8]);
        serialize_none();
        serialize_unit();
        serialize_unit_struct(&'static str);
        serialize_unit_variant(&'static str, u32, &'static str);
    }
    fn serialize_some<T: ?Sized + Serialize>(self, _: &T) -> Result<bool, Flag> {
        Err(Flag)
    }
    fn serialize_newtype_struct<T: ?Sized + Serialize>(
        self,
        _: &'static str,
        _: &T,
    ) -> Result<bool, Flag> {
        Err(Flag)
    }
    fn serialize_newtype_variant<T: ?Sized + Serialize>(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: &T,
    ) -> Result<bool, Flag> {
        Err(Flag)
    }
    fn serialize_seq(self, _: Option<usize>) -> Result<Self::SerializeSeq, Flag> {
        Err(Flag)
    }
    fn serialize_tuple(self, _: usize) -> Result<Self::SerializeTuple, Flag> {
        Err(Flag)
    }
    fn serialize_tuple_struct(
        self,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleStruct, Flag> {
        Err(Flag)
    }
    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleVariant, Flag> {
        Err(Flag)
    }
    fn serialize_map(self, _: Option<usize>) -> Result<Self::SerializeMap, Flag> {
        Err(Flag)
    }
    fn serialize_struct(self, _: &'static str, _: usize) -> Result<Self::SerializeStruct, Flag> {
        Err(Flag)
    }
    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeStructVariant, Flag> {
        Err(Flag)
    }
}

#[cfg(test)]
mod tests {
    use super::super::limits::{check_times, TIME_KEYS, TIME_KEY_SET};
    use super::*;
    use crate::SimConfig;
    use serde_json::Value;

    const MAX: u64 = irqlab_model::limits::MAX_TIME.0;

    /// Paths (as JSON pointers) of every integer under a time key.
    fn time_leaves(v: &Value, at: &str, time: bool, out: &mut Vec<String>) {
        match v {
            Value::Object(o) => {
                for (k, x) in o {
                    time_leaves(
                        x,
                        &format!("{at}/{k}"),
                        TIME_KEYS.contains(&k.as_str()),
                        out,
                    );
                }
            }
            Value::Array(a) => {
                for (i, x) in a.iter().enumerate() {
                    time_leaves(x, &format!("{at}/{i}"), time, out);
                }
            }
            Value::Number(_) if time => out.push(at.to_owned()),
            _ => {}
        }
    }

    /// Every key of an object in `v`.
    fn keys(v: &Value, out: &mut std::collections::BTreeSet<String>) {
        match v {
            Value::Object(o) => o.iter().for_each(|(k, x)| {
                out.insert(k.clone());
                keys(x, out);
            }),
            Value::Array(a) => a.iter().for_each(|x| keys(x, out)),
            _ => {}
        }
    }

    /// The key set holds exactly the time keys: each of them, no other key
    /// of a shipped configuration, and no near miss of a time key.
    #[test]
    fn key_set_holds_exactly_the_time_keys() {
        let mut all = std::collections::BTreeSet::new();
        for e in std::fs::read_dir(golden_dir()).expect("golden dir") {
            let p = e.expect("entry").path();
            if p.to_string_lossy().ends_with(".config.json") {
                let text = std::fs::read_to_string(&p).expect("read");
                keys(&serde_json::from_str(&text).expect("JSON"), &mut all);
            }
        }
        assert!(all.len() > 60, "keys found: {}", all.len());
        for k in TIME_KEYS {
            all.extend([k[1..].to_owned(), k[..k.len() - 1].to_owned()]);
            all.extend([format!("{k}s"), k.to_uppercase(), (*k).to_owned()]);
        }
        all.insert(String::new());
        for k in &all {
            let want = TIME_KEYS.contains(&k.as_str());
            assert_eq!(TIME_KEY_SET.contains(k), want, "{k:?}");
        }
    }

    /// A deadline (absent from every shipped configuration) over the
    /// limit is refused by the typed pass as by the exact check; one at
    /// the limit, or none, passes.
    #[test]
    fn typed_pass_reads_deadlines() {
        let text = std::fs::read_to_string(golden_dir().join("exp-usb-toy-000.config.json"))
            .expect("read");
        let mut cfg: SimConfig = serde_json::from_str(&text).expect("parses");
        let exact = |c: &SimConfig| {
            let v = serde_json::to_value(c).expect("to JSON");
            check_times(&v, "", false).is_ok()
        };
        let mut seen = 0;
        for i in 0..cfg.tasks.len() {
            for (d, want) in [(None, true), (Some(MAX), true), (Some(MAX + 1), false)] {
                let mut c = cfg.clone();
                let Release::Periodic { deadline, .. } = &mut c.tasks[i].release else {
                    continue;
                };
                *deadline = d;
                seen += 1;
                assert_eq!(exact(&c), want, "tasks[{i}] deadline {d:?}");
                assert_eq!(config_times_within(&c, &TIME_KEY_SET, MAX), want);
                assert_eq!(times_within(&c, &TIME_KEY_SET, MAX), want);
            }
        }
        assert!(seen >= 3, "no periodic task in the configuration");
        cfg.tasks.clear();
        assert!(config_times_within(&cfg, &TIME_KEY_SET, MAX));
    }

    fn golden_dir() -> std::path::PathBuf {
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../irqlab-sim/tests/golden")
    }

    /// The quick pass agrees with the exact check on every shipped
    /// configuration, and on each of them with any one time set over the
    /// limit (and set negative, or to a fraction, where the configuration
    /// still parses): it passes exactly what the exact check passes.
    #[test]
    fn agrees_with_the_exact_check_on_every_golden_config() {
        let mut files: Vec<_> = std::fs::read_dir(golden_dir())
            .expect("golden dir")
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.to_string_lossy().ends_with(".config.json"))
            .collect();
        files.sort();
        assert!(files.len() > 50, "golden configs found: {}", files.len());
        let (mut mutated, mut refused) = (0, 0);
        // the last key of each mutated time of a task or a server
        let mut typed_leaves = std::collections::BTreeMap::<String, usize>::new();
        let leaf_key = |l: &str| l.rsplit('/').next().unwrap_or("").to_owned();
        for f in files {
            let text = std::fs::read_to_string(&f).expect("read");
            let cfg: SimConfig = serde_json::from_str(&text).expect("parses");
            let exact = |c: &SimConfig| {
                let v = serde_json::to_value(c).expect("to JSON");
                check_times(&v, "", false).is_ok()
            };
            assert!(times_within(&cfg, &TIME_KEY_SET, MAX), "{}", f.display());
            assert!(
                config_times_within(&cfg, &TIME_KEY_SET, MAX),
                "{}",
                f.display()
            );
            assert!(exact(&cfg), "{}", f.display());
            let v = serde_json::to_value(&cfg).expect("to JSON");
            let mut leaves = Vec::new();
            time_leaves(&v, "", false, &mut leaves);
            for leaf in leaves {
                for bad in [Value::from(MAX + 1), Value::from(-1), Value::from(0.5)] {
                    let mut w = v.clone();
                    *w.pointer_mut(&leaf).expect("leaf") = bad;
                    let Ok(c) = serde_json::from_value::<SimConfig>(w) else {
                        continue; // the type refuses it already
                    };
                    mutated += 1;
                    let quick = times_within(&c, &TIME_KEY_SET, MAX);
                    assert_eq!(quick, exact(&c), "{} {leaf}", f.display());
                    // the typed pass over tasks and servers decides the same
                    let typed = config_times_within(&c, &TIME_KEY_SET, MAX);
                    assert_eq!(typed, quick, "typed pass: {} {leaf}", f.display());
                    if leaf.starts_with("/tasks/") || leaf.starts_with("/servers/") {
                        *typed_leaves.entry(leaf_key(&leaf)).or_insert(0) += 1;
                    }
                    refused += usize::from(!quick);
                }
            }
        }
        // the over-limit values parse (u64 fields) and must be refused
        assert!(
            refused > 100 && refused == mutated,
            "{refused} of {mutated}"
        );
        // every time field the typed pass reads was set over the limit in
        // some shipped configuration
        // (deadlines: `typed_pass_reads_deadlines`)
        let read = ["at", "period", "offset", "ns", "budget", "runtime"];
        for k in read {
            assert!(
                typed_leaves.contains_key(k),
                "{k} never mutated: {typed_leaves:?}"
            );
        }
    }
}
