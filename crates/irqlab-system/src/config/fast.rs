//! Streaming deserialization of the internally tagged configuration
//! types (`Release`, `Phase`, and `ServerCfg` with its flattened
//! `PolicyCfg`) for the common case where the tag comes first (for speed, docs/performance.md).
//!
//! Design principles: serde's derive for an internally tagged enum (and
//! for a struct with a `flatten`ed one) buffers every entry of the object
//! as a `Content` tree before it looks at the tag, even when the tag is
//! the first key; on a configuration of 640 tasks that was a third of
//! the parse. Here the tag is looked for first: every entry before it is
//! buffered (as a `serde_json::Value`; configurations written by irqlab
//! put the tag first, so usually none is), the tag picks the variant, and
//! the variant's fields are read straight from the rest of the object by
//! an externally tagged twin of the enum (`#[serde(remote)]`, the same
//! variants, fields, defaults and `deny_unknown_fields`). So every input
//! is accepted or refused exactly as by the derived type, and gives the
//! same value; a duplicated tag is refused as the derive refuses it, and
//! an array (serde's `[tag, fields...]` form) goes to the derived type.
//!
//! What differs is only how an error is worded: a bad field of a variant
//! is reported at the field (`tasks[0].release.period`) rather than at
//! the object (`tasks[0].release`), and an error's line and column in the
//! JSON text differ. Where an error reaches a user worded as before,
//! the caller parses again inside [`exact_errors`], in which these types
//! use their derived impls (`SimConfig::from_json_str` does this, and so
//! does the Python module).

use std::cell::Cell;
use std::marker::PhantomData;

use serde::de::{
    self, value::SeqAccessDeserializer, DeserializeSeed, Deserializer, EnumAccess, IgnoredAny,
    IntoDeserializer, MapAccess, SeqAccess, VariantAccess, Visitor,
};
use serde::Deserialize;
use serde_json::Value;

use super::{Phase, PolicyCfg, Release, ServerCfg};

thread_local! {
    static EXACT: Cell<bool> = const { Cell::new(false) };
}

/// Run `f` with the derived (buffering) deserializers of these types, so
/// that an error is worded, and located, exactly as serde's derive does
/// it (the field path names the tagged object, not the field inside it).
/// Only the wording of errors differs between the two ways.
pub fn exact_errors<R>(f: impl FnOnce() -> R) -> R {
    struct Restore(bool);
    impl Drop for Restore {
        fn drop(&mut self) {
            EXACT.with(|e| e.set(self.0));
        }
    }
    let _restore = Restore(EXACT.with(|e| e.replace(true)));
    f()
}

fn exact() -> bool {
    EXACT.with(Cell::get)
}

/// Fields of the object that holds a flattened tagged enum and are not the
/// enum's own (`ServerCfg`'s `name`, `cpu`, `rank`); they may come before,
/// after or among the variant's fields.
trait Outer: Default {
    /// The enum is flattened into the object (see [`TagValue`]).
    const FLATTENED: bool = true;
    fn field(key: &str) -> Option<usize>;
    fn read<'de, A: MapAccess<'de>>(&mut self, field: usize, map: &mut A) -> Result<(), A::Error>;
}

/// No fields but the enum's own.
#[derive(Default)]
struct NoOuter;

impl Outer for NoOuter {
    const FLATTENED: bool = false;
    fn field(_: &str) -> Option<usize> {
        None
    }
    fn read<'de, A: MapAccess<'de>>(&mut self, _: usize, _: &mut A) -> Result<(), A::Error> {
        Err(de::Error::custom("no such field"))
    }
}

/// A type read from an object whose variant is chosen by a tag key.
trait Tagged: Sized {
    /// The tag's key.
    const TAG: &'static str;
    /// What the derived visitor expects (worded as serde's derive).
    const EXPECTING: &'static str;
    /// A struct (`deserialize_map`) rather than an enum (`deserialize_any`).
    const IS_STRUCT: bool;
    type Outer: Outer;
    type Variant;
    /// The derived, buffering impl.
    fn exact<'de, D: Deserializer<'de>>(d: D) -> Result<Self, D::Error>;
    /// The externally tagged twin: reads the variant through `EnumAccess`.
    fn variant<'de, D: Deserializer<'de>>(d: D) -> Result<Self::Variant, D::Error>;
    fn build<E: de::Error>(variant: Self::Variant, outer: Self::Outer) -> Result<Self, E>;
}

/// A key: the tag, one of the outer fields (the seed given back), or a
/// key for the seed.
enum Key<S, V> {
    Tag,
    Outer(usize, S),
    Other(V),
}

struct KeySeed<S, O> {
    tag: &'static str,
    seed: S,
    outer: PhantomData<O>,
}

impl<S, O> KeySeed<S, O> {
    fn new(tag: &'static str, seed: S) -> Self {
        KeySeed {
            tag,
            seed,
            outer: PhantomData,
        }
    }
}

impl<'de, S: DeserializeSeed<'de>, O: Outer> DeserializeSeed<'de> for KeySeed<S, O> {
    type Value = Key<S, S::Value>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de, S: DeserializeSeed<'de>, O: Outer> Visitor<'de> for KeySeed<S, O> {
    type Value = Key<S, S::Value>;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a string key")
    }

    fn visit_str<E: de::Error>(self, key: &str) -> Result<Self::Value, E> {
        if key == self.tag {
            Ok(Key::Tag)
        } else if let Some(i) = O::field(key) {
            Ok(Key::Outer(i, self.seed))
        } else {
            let d: de::value::StrDeserializer<E> = key.into_deserializer();
            self.seed.deserialize(d).map(Key::Other)
        }
    }
}

/// The entries after the tag (after the ones buffered before it), as the
/// variant's fields: outer fields are read aside, a second tag is
/// refused as serde's derive refuses it.
struct Rest<'o, A, O> {
    map: A,
    tag: &'static str,
    outer: &'o mut O,
    buffered: std::vec::IntoIter<(String, Value)>,
    pending: Option<Value>,
}

impl<'de, A: MapAccess<'de>, O: Outer> MapAccess<'de> for Rest<'_, A, O> {
    type Error = A::Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, A::Error> {
        if let Some((k, v)) = self.buffered.next() {
            self.pending = Some(v);
            let d: de::value::StringDeserializer<A::Error> = k.into_deserializer();
            return seed.deserialize(d).map(Some);
        }
        let mut seed = seed;
        loop {
            match self
                .map
                .next_key_seed(KeySeed::<K, O>::new(self.tag, seed))?
            {
                None => return Ok(None),
                Some(Key::Tag) => return Err(de::Error::duplicate_field(self.tag)),
                Some(Key::Outer(i, s)) => {
                    self.outer.read(i, &mut self.map)?;
                    seed = s;
                }
                Some(Key::Other(k)) => return Ok(Some(k)),
            }
        }
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, A::Error> {
        match self.pending.take() {
            Some(v) => seed.deserialize(v).map_err(de::Error::custom),
            None => self.map.next_value_seed(seed),
        }
    }
}

/// The object with its tag just read, as an enum for the externally
/// tagged twin: the variant is the tag's value, its fields are the rest.
struct TagDe<'o, A, O>(Rest<'o, A, O>);

impl<'de, A: MapAccess<'de>, O: Outer> Deserializer<'de> for TagDe<'_, A, O> {
    type Error = A::Error;

    fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, A::Error> {
        Err(de::Error::custom("a tagged object is read as an enum"))
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _: &'static str,
        _: &'static [&'static str],
        v: V,
    ) -> Result<V::Value, A::Error> {
        v.visit_enum(self)
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf option unit unit_struct newtype_struct seq tuple
        tuple_struct map struct identifier ignored_any
    }
}

impl<'de, A: MapAccess<'de>, O: Outer> EnumAccess<'de> for TagDe<'_, A, O> {
    type Error = A::Error;
    type Variant = Self;

    fn variant_seed<S: DeserializeSeed<'de>>(
        mut self,
        seed: S,
    ) -> Result<(S::Value, Self), A::Error> {
        // the tag's value, read where the derive reads it (same path)
        let v = if O::FLATTENED {
            match self.0.map.next_value::<TagValue>()? {
                TagValue::Name(s) => seed.deserialize(s.into_deserializer())?,
                TagValue::Index(i) => seed.deserialize(i.into_deserializer())?,
            }
        } else {
            self.0.map.next_value_seed(seed)?
        };
        Ok((v, self))
    }
}

/// The tag of a flattened enum: serde's derive reads it from its buffer,
/// which also takes an integer, as the variant's index (`"policy": 2` is
/// `deferrable`); a tag of its own is read as serde_json reads an
/// identifier, a string only.
enum TagValue {
    Name(String),
    Index(u64),
}

impl<'de> Deserialize<'de> for TagValue {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(TagValueVisitor)
    }
}

struct TagValueVisitor;

impl Visitor<'_> for TagValueVisitor {
    type Value = TagValue;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("variant identifier")
    }

    fn visit_str<E: de::Error>(self, s: &str) -> Result<TagValue, E> {
        Ok(TagValue::Name(s.to_owned()))
    }

    fn visit_u64<E: de::Error>(self, i: u64) -> Result<TagValue, E> {
        Ok(TagValue::Index(i))
    }
}

impl<'de, A: MapAccess<'de>, O: Outer> VariantAccess<'de> for TagDe<'_, A, O> {
    type Error = A::Error;

    /// serde's derive ignores every other key of a unit variant.
    fn unit_variant(mut self) -> Result<(), A::Error> {
        while self.0.next_key::<IgnoredAny>()?.is_some() {
            self.0.next_value::<IgnoredAny>()?;
        }
        Ok(())
    }

    fn newtype_variant_seed<S: DeserializeSeed<'de>>(self, _: S) -> Result<S::Value, A::Error> {
        Err(de::Error::custom("no newtype variants here"))
    }

    fn tuple_variant<V: Visitor<'de>>(self, _: usize, _: V) -> Result<V::Value, A::Error> {
        Err(de::Error::custom("no tuple variants here"))
    }

    fn struct_variant<V: Visitor<'de>>(
        self,
        _: &'static [&'static str],
        v: V,
    ) -> Result<V::Value, A::Error> {
        v.visit_map(self.0)
    }
}

struct TaggedVisitor<T>(PhantomData<T>);

impl<'de, T: Tagged> Visitor<'de> for TaggedVisitor<T> {
    type Value = T;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str(T::EXPECTING)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<T, A::Error> {
        let mut outer = T::Outer::default();
        let mut buffered = Vec::new();
        loop {
            let key = KeySeed::<PhantomData<String>, T::Outer>::new(T::TAG, PhantomData);
            match map.next_key_seed(key)? {
                None => return Err(de::Error::missing_field(T::TAG)),
                Some(Key::Tag) => break,
                Some(Key::Outer(i, _)) => outer.read(i, &mut map)?,
                Some(Key::Other(k)) => buffered.push((k, map.next_value::<Value>()?)),
            }
        }
        let variant = T::variant(TagDe(Rest {
            map,
            tag: T::TAG,
            outer: &mut outer,
            buffered: buffered.into_iter(),
            pending: None,
        }))?;
        T::build(variant, outer)
    }

    /// serde's `[tag, fields...]` form (or, for a struct, its refusal).
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<T, A::Error> {
        T::exact(SeqAccessDeserializer::new(seq))
    }
}

fn tagged<'de, T: Tagged, D: Deserializer<'de>>(d: D) -> Result<T, D::Error> {
    if exact() {
        T::exact(d)
    } else if T::IS_STRUCT {
        d.deserialize_map(TaggedVisitor(PhantomData))
    } else {
        d.deserialize_any(TaggedVisitor(PhantomData))
    }
}

/// `T` through [`tagged`], as a seed.
struct Fast<T>(PhantomData<T>);

impl<'de, T: Tagged> DeserializeSeed<'de> for Fast<T> {
    type Value = T;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<T, D::Error> {
        tagged(d)
    }
}

struct VecVisitor<T>(PhantomData<T>);

impl<'de, T: Tagged> Visitor<'de> for VecVisitor<T> {
    type Value = Vec<T>;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a sequence")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<T>, A::Error> {
        let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(4096));
        while let Some(x) = seq.next_element_seed(Fast::<T>(PhantomData))? {
            out.push(x);
        }
        Ok(out)
    }
}

fn tagged_vec<'de, T: Tagged + Deserialize<'de>, D: Deserializer<'de>>(
    d: D,
) -> Result<Vec<T>, D::Error> {
    if exact() {
        Vec::<T>::deserialize(d)
    } else {
        d.deserialize_seq(VecVisitor(PhantomData))
    }
}

/// `TaskCfg::release`.
pub(super) fn release<'de, D: Deserializer<'de>>(d: D) -> Result<Release, D::Error> {
    tagged(d)
}

/// `TaskCfg::program` and `Phase::Loop::body`.
pub(super) fn phases<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<Phase>, D::Error> {
    tagged_vec(d)
}

/// `SimConfig::servers`.
pub(super) fn servers<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<ServerCfg>, D::Error> {
    tagged_vec(d)
}

// The externally tagged twins: the same variants, fields and defaults as
// the types in `config.rs` (the compiler checks the variants and fields;
// the tests in `fast_tests.rs` check the defaults and errors).

#[derive(Deserialize)]
#[serde(remote = "Release", rename_all = "kebab-case", deny_unknown_fields)]
enum ReleaseDef {
    Once {
        #[serde(default)]
        at: u64,
    },
    Periodic {
        period: u64,
        #[serde(default)]
        deadline: Option<u64>,
        #[serde(default)]
        offset: u64,
        #[serde(default)]
        jobs: Option<u64>,
    },
}

#[derive(Deserialize)]
#[serde(remote = "Phase", rename_all = "kebab-case", deny_unknown_fields)]
enum PhaseDef {
    Compute {
        ns: u64,
    },
    Io {
        device: usize,
    },
    Sleep {
        ns: u64,
    },
    Bind {
        device: usize,
        class: usize,
    },
    Loop {
        #[serde(default)]
        count: Option<u64>,
        #[serde(deserialize_with = "phases")]
        body: Vec<Phase>,
    },
}

#[derive(Deserialize)]
#[serde(remote = "PolicyCfg", rename_all = "kebab-case", deny_unknown_fields)]
enum PolicyDef {
    Sporadic {
        budget: u64,
        period: u64,
        #[serde(default = "super::default_max_repl")]
        max_repl: usize,
        #[serde(default)]
        background: bool,
    },
    Pibs {
        num: u64,
        den: u64,
        #[serde(default)]
        strict: bool,
    },
    Deferrable {
        budget: u64,
        period: u64,
    },
    Polling {
        budget: u64,
        period: u64,
    },
    Cbs {
        runtime: u64,
        period: u64,
    },
    Unbounded {},
}

/// `Tagged` for an internally tagged enum read on its own (no outer
/// fields): `$ty` by its tag `$tag`, its variant by the twin `$def`.
macro_rules! tagged_enum {
    ($ty:ident, $tag:literal, $def:ident) => {
        impl Tagged for $ty {
            const TAG: &'static str = $tag;
            const EXPECTING: &'static str = concat!("internally tagged enum ", stringify!($ty));
            const IS_STRUCT: bool = false;
            type Outer = NoOuter;
            type Variant = $ty;
            fn exact<'de, D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                <$ty as Deserialize>::deserialize(d)
            }
            fn variant<'de, D: Deserializer<'de>>(d: D) -> Result<$ty, D::Error> {
                $def::deserialize(d)
            }
            fn build<E: de::Error>(v: $ty, _: NoOuter) -> Result<Self, E> {
                Ok(v)
            }
        }
    };
}

tagged_enum!(Release, "kind", ReleaseDef);
tagged_enum!(Phase, "op", PhaseDef);

/// `ServerCfg`'s own fields (the derive's defaults: `cpu` 0, `rank` none).
#[derive(Default)]
struct ServerOuter {
    name: Option<String>,
    cpu: Option<usize>,
    rank: Option<Option<u64>>,
}

fn once<'de, T: Deserialize<'de>, A: MapAccess<'de>>(
    slot: &mut Option<T>,
    name: &'static str,
    map: &mut A,
) -> Result<(), A::Error> {
    if slot.is_some() {
        return Err(de::Error::duplicate_field(name));
    }
    *slot = Some(map.next_value()?);
    Ok(())
}

impl Outer for ServerOuter {
    fn field(key: &str) -> Option<usize> {
        match key {
            "name" => Some(0),
            "cpu" => Some(1),
            "rank" => Some(2),
            _ => None,
        }
    }
    fn read<'de, A: MapAccess<'de>>(&mut self, field: usize, map: &mut A) -> Result<(), A::Error> {
        match field {
            0 => once(&mut self.name, "name", map),
            1 => once(&mut self.cpu, "cpu", map),
            _ => once(&mut self.rank, "rank", map),
        }
    }
}

impl Tagged for ServerCfg {
    const TAG: &'static str = "policy";
    const EXPECTING: &'static str = "struct ServerCfg";
    const IS_STRUCT: bool = true;
    type Outer = ServerOuter;
    type Variant = PolicyCfg;
    fn exact<'de, D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        <ServerCfg as Deserialize>::deserialize(d)
    }
    fn variant<'de, D: Deserializer<'de>>(d: D) -> Result<PolicyCfg, D::Error> {
        PolicyDef::deserialize(d)
    }
    fn build<E: de::Error>(policy: PolicyCfg, o: ServerOuter) -> Result<Self, E> {
        Ok(ServerCfg {
            name: o.name.ok_or_else(|| de::Error::missing_field("name"))?,
            cpu: o.cpu.unwrap_or_default(),
            policy,
            rank: o.rank.unwrap_or_default(),
        })
    }
}
