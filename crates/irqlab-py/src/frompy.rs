//! A serde `Deserializer` that reads plain Python objects (dict, list,
//! tuple, str, int, float, bool, None) directly: the fast way a
//! configuration dict becomes a Rust value (for speed, docs/performance.md), with no JSON text
//! and no intermediate tree.
//!
//! Design principles: it accepts exactly what `json.dumps` followed by a
//! `serde_json` parse accepts, and gives the same value, or it fails. The
//! caller then reads the object again by a slower path that words the
//! error (field path, value, rule), so this one never needs to: its
//! errors are short and only say that it gave up. So a bool is never an
//! integer, a float is never an integer, NaN and infinities are refused
//! (JSON has none), dict keys must be strings, an integer beyond 64 bits
//! is refused (serde_json would read it as a float), and any other Python
//! type (a set, a non-dict mapping) is refused, and so is anything but a
//! string where serde asks for an identifier (a variant's name: serde_json
//! never reads a number as one). Dicts are walked with `PyDict_Next` (no
//! key and value lists are made), and the keys, values and items seen are
//! borrowed, not counted (no Python code runs while the object is read,
//! so the containers keep them alive; every reference count written was a
//! cache line dirtied on objects that are otherwise only read).
//! Integers are read with one C call that has a fast path for every size
//! (`PyLong_AsLongLongAndOverflow`; 3.11's `PyLong_AsUnsignedLongLong`
//! goes through a byte array). The text of a dict key is remembered, for
//! the length of one read, by the key object's address ([`KeyCache`]):
//! the dicts of a configuration share a few key objects, so most keys cost
//! no call into Python.

use std::cell::Cell;

use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};
use pyo3::Borrowed;
use serde::de::{self, DeserializeSeed, IntoDeserializer, Visitor};
use serde::Deserialize;

/// `T` read from `obj`, as `serde_json::from_str(json.dumps(obj))` would
/// give it; an error means only "not this way".
pub fn from_py<T: for<'de> Deserialize<'de>>(obj: &Bound<'_, PyAny>) -> Result<T, Error> {
    let keys = KeyCache::default();
    T::deserialize(De(obj.as_borrowed(), &keys))
}

/// Slots of [`KeyCache`] (a power of two).
const KEY_SLOTS: usize = 64;

/// The UTF-8 text of the dict keys seen in one read, by the key object's
/// address: the same few key objects (`"name"`, `"period"`: Python shares
/// the str of a key written in source code) come back in every dict of a
/// configuration, and each `PyUnicode_AsUTF8AndSize` is a call into
/// Python. It lives only as long as the read: then no Python code runs and
/// nothing is freed, so an address still names the same live, immutable
/// str, whose UTF-8 text lives as long as the str does.
struct KeyCache {
    /// `(key address, UTF-8 address, length)`; address 0: empty.
    slots: [Cell<(usize, usize, usize)>; KEY_SLOTS],
}

impl Default for KeyCache {
    fn default() -> KeyCache {
        KeyCache {
            slots: [const { Cell::new((0, 0, 0)) }; KEY_SLOTS],
        }
    }
}

impl KeyCache {
    /// The text of the dict key `k` (an exact str), from the cache when
    /// this read has seen it.
    fn text<'s>(&self, k: &'s Bound<'_, PyString>) -> Result<&'s str, Error> {
        let addr = k.as_ptr() as usize;
        // objects are 16-byte aligned: the low bits say nothing
        let slot = &self.slots[(addr >> 4) % KEY_SLOTS];
        let (a, text, len) = slot.get();
        if a == addr {
            // SAFETY: (see `KeyCache`) stored by this read from the str at
            // `addr`, which is still alive and unchanged, and so is its
            // UTF-8 text; `'s` borrows that str
            return Ok(unsafe {
                std::str::from_utf8_unchecked(std::slice::from_raw_parts(text as *const u8, len))
            });
        }
        let s = k.to_str()?;
        slot.set((addr, s.as_ptr() as usize, s.len()));
        Ok(s)
    }
}

/// Why the object was not read (the caller reads it again to say why in
/// full).
#[derive(Debug)]
pub struct Error(String);

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Error {}

impl de::Error for Error {
    fn custom<T: std::fmt::Display>(msg: T) -> Error {
        Error(msg.to_string())
    }
}

impl From<PyErr> for Error {
    fn from(e: PyErr) -> Error {
        Error(e.to_string())
    }
}

fn unsupported(obj: &Bound<'_, PyAny>) -> Error {
    let name = obj
        .get_type()
        .name()
        .map_or_else(|_| "?".to_owned(), |n| n.to_string());
    Error(format!("a {name} is not a JSON value"))
}

/// One object, borrowed from its container (or from the caller).
struct De<'a, 'py>(Borrowed<'a, 'py, PyAny>, &'a KeyCache);

impl<'de> de::Deserializer<'de> for De<'_, '_> {
    type Error = Error;

    fn deserialize_any<V: Visitor<'de>>(self, v: V) -> Result<V::Value, Error> {
        let o = &*self.0;
        // the exact types first: one pointer comparison each (a subclass
        // check is a call into Python in the stable ABI)
        if let Ok(s) = o.cast_exact::<PyString>() {
            v.visit_str(s.to_str()?)
        } else if let Ok(i) = o.cast_exact::<PyInt>() {
            visit_int(i, v)
        } else if let Ok(d) = o.cast_exact::<PyDict>() {
            visit_dict(d, v, self.1)
        } else if let Ok(l) = o.cast_exact::<PyList>() {
            visit_list(l, v, self.1)
        } else if let Ok(s) = o.cast::<PyString>() {
            v.visit_str(s.to_str()?)
        } else if let Ok(d) = o.cast::<PyDict>() {
            visit_dict(d, v, self.1)
        } else if let Ok(b) = o.cast::<PyBool>() {
            // before int: a bool is an int in Python, never in JSON
            v.visit_bool(b.is_true())
        } else if let Ok(i) = o.cast::<PyInt>() {
            visit_int(i, v)
        } else if let Ok(f) = o.cast::<PyFloat>() {
            let x = f.value();
            if !x.is_finite() {
                return Err(Error(format!("{x} is not a JSON number")));
            }
            v.visit_f64(x)
        } else if let Ok(l) = o.cast::<PyList>() {
            visit_list(l, v, self.1)
        } else if let Ok(t) = o.cast::<PyTuple>() {
            v.visit_seq(SeqAccess {
                len: t.len(),
                items: Items::Tuple(t.as_borrowed()),
                next: 0,
                keys: self.1,
            })
        } else if o.is_none() {
            v.visit_unit()
        } else {
            Err(unsupported(o))
        }
    }

    fn deserialize_option<V: Visitor<'de>>(self, v: V) -> Result<V::Value, Error> {
        if self.0.is_none() {
            v.visit_none()
        } else {
            v.visit_some(self)
        }
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        v: V,
    ) -> Result<V::Value, Error> {
        v.visit_newtype_struct(self)
    }

    /// A string only, as serde_json reads an identifier (derived visitors
    /// would also take an integer, as the variant's or field's index).
    fn deserialize_identifier<V: Visitor<'de>>(self, v: V) -> Result<V::Value, Error> {
        match self.0.cast::<PyString>() {
            Ok(s) => v.visit_str(s.to_str()?),
            Err(_) => Err(Error("an identifier is not a string".into())),
        }
    }

    /// serde_json's enum forms: `"Variant"` or `{"Variant": value}`.
    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _: &'static str,
        _: &'static [&'static str],
        v: V,
    ) -> Result<V::Value, Error> {
        let o = &*self.0;
        if let Ok(s) = o.cast::<PyString>() {
            let de: de::value::StrDeserializer<Error> = s.to_str()?.into_deserializer();
            return v.visit_enum(de);
        }
        let d = o.cast::<PyDict>().map_err(|_| unsupported(o))?;
        let mut items = d.iter();
        match (items.next(), items.next()) {
            (Some((k, value)), None) => {
                let name = k.cast::<PyString>().map_err(|_| unsupported(&k))?;
                v.visit_enum(EnumAccess {
                    name: name.to_str()?.to_owned(),
                    value,
                    keys: self.1,
                })
            }
            _ => Err(Error("an enum dict must have exactly one key".into())),
        }
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf unit unit_struct seq tuple tuple_struct map struct
        ignored_any
    }
}

/// An integer in 64 bits (serde_json reads a larger one as a float):
/// `u64` when not negative, as serde_json gives it.
fn visit_int<'de, V: Visitor<'de>>(i: &Bound<'_, PyInt>, v: V) -> Result<V::Value, Error> {
    let mut overflow = 0;
    // SAFETY: `i` is a live int; the call sets `overflow` instead of
    // raising when the value does not fit an i64.
    let x = unsafe { ffi::PyLong_AsLongLongAndOverflow(i.as_ptr(), &mut overflow) };
    if overflow > 0 {
        v.visit_u64(i.extract::<u64>()?)
    } else if overflow < 0 {
        Err(Error("an integer below -2^63".into()))
    } else if x == -1 && PyErr::take(i.py()).is_some() {
        Err(Error("an int that could not be read".into()))
    } else if x >= 0 {
        v.visit_u64(x as u64)
    } else {
        v.visit_i64(x)
    }
}

fn visit_dict<'de, V: Visitor<'de>>(
    d: &Bound<'_, PyDict>,
    v: V,
    keys: &KeyCache,
) -> Result<V::Value, Error> {
    v.visit_map(DictAccess {
        dict: d.as_borrowed(),
        pos: 0,
        value: None,
        left: d.len(),
        keys,
    })
}

fn visit_list<'de, V: Visitor<'de>>(
    l: &Bound<'_, PyList>,
    v: V,
    keys: &KeyCache,
) -> Result<V::Value, Error> {
    v.visit_seq(SeqAccess {
        len: l.len(),
        items: Items::List(l.as_borrowed()),
        next: 0,
        keys,
    })
}

enum Items<'a, 'py> {
    List(Borrowed<'a, 'py, PyList>),
    Tuple(Borrowed<'a, 'py, PyTuple>),
}

struct SeqAccess<'a, 'py> {
    items: Items<'a, 'py>,
    next: usize,
    len: usize,
    keys: &'a KeyCache,
}

impl<'de> de::SeqAccess<'de> for SeqAccess<'_, '_> {
    type Error = Error;

    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, Error> {
        // the length is read again to be safe (no Python code runs here,
        // so the list cannot shrink meanwhile)
        let (ptr, py) = match self.items {
            Items::List(l) if self.next < l.len() => {
                // SAFETY: a live list and an index within it; the item is
                // borrowed from the list, which holds it while it is read
                let i = self.next as ffi::Py_ssize_t;
                (unsafe { ffi::PyList_GetItem(l.as_ptr(), i) }, l.py())
            }
            Items::Tuple(t) if self.next < t.len() => {
                // SAFETY: as for the list
                let i = self.next as ffi::Py_ssize_t;
                (unsafe { ffi::PyTuple_GetItem(t.as_ptr(), i) }, t.py())
            }
            _ => return Ok(None),
        };
        self.next += 1;
        // SAFETY: an item of the container borrowed for 'a, or null (an
        // error is then set and taken)
        let item = unsafe { Borrowed::from_ptr_or_err(py, ptr) }?;
        seed.deserialize(De(item, self.keys)).map(Some)
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.len.saturating_sub(self.next))
    }
}

struct DictAccess<'a, 'py> {
    dict: Borrowed<'a, 'py, PyDict>,
    pos: ffi::Py_ssize_t,
    value: Option<Borrowed<'a, 'py, PyAny>>,
    left: usize,
    keys: &'a KeyCache,
}

impl<'de> de::MapAccess<'de> for DictAccess<'_, '_> {
    type Error = Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, Error> {
        let mut k = std::ptr::null_mut();
        let mut v = std::ptr::null_mut();
        // SAFETY: a live dict, not changed while it is walked (no Python
        // code runs); the key and value are borrowed from it
        if unsafe { ffi::PyDict_Next(self.dict.as_ptr(), &mut self.pos, &mut k, &mut v) } == 0 {
            return Ok(None);
        }
        let py = self.dict.py();
        // SAFETY: PyDict_Next gave both, non-null, held by the dict
        let (k, v) = unsafe { (Borrowed::from_ptr(py, k), Borrowed::from_ptr(py, v)) };
        self.left = self.left.saturating_sub(1);
        self.value = Some(v);
        // the exact type first: a subclass check is a call in the stable ABI
        if let Ok(k) = k.cast_exact::<PyString>() {
            let de: de::value::StrDeserializer<'_, Error> = self.keys.text(k)?.into_deserializer();
            return seed.deserialize(de).map(Some);
        }
        if !k.is_instance_of::<PyString>() {
            return Err(Error("a dict key is not a string".into()));
        }
        seed.deserialize(De(k, self.keys)).map(Some)
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, Error> {
        let value = self
            .value
            .take()
            .ok_or_else(|| Error("a dict value without its key".into()))?;
        seed.deserialize(De(value, self.keys))
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.left)
    }
}

struct EnumAccess<'a, 'py> {
    name: String,
    value: Bound<'py, PyAny>,
    keys: &'a KeyCache,
}

impl<'de, 'a, 'py> de::EnumAccess<'de> for EnumAccess<'a, 'py> {
    type Error = Error;
    type Variant = VariantAccess<'a, 'py>;

    fn variant_seed<S: DeserializeSeed<'de>>(
        self,
        seed: S,
    ) -> Result<(S::Value, VariantAccess<'a, 'py>), Error> {
        let de: de::value::StringDeserializer<Error> = self.name.into_deserializer();
        let name = seed.deserialize(de)?;
        Ok((name, VariantAccess(self.value, self.keys)))
    }
}

struct VariantAccess<'a, 'py>(Bound<'py, PyAny>, &'a KeyCache);

impl<'de> de::VariantAccess<'de> for VariantAccess<'_, '_> {
    type Error = Error;

    fn unit_variant(self) -> Result<(), Error> {
        // serde_json accepts `{"Variant": null}` for a unit variant
        if self.0.is_none() {
            Ok(())
        } else {
            Err(Error("a unit variant takes no value".into()))
        }
    }

    fn newtype_variant_seed<T: DeserializeSeed<'de>>(self, seed: T) -> Result<T::Value, Error> {
        seed.deserialize(De(self.0.as_borrowed(), self.1))
    }

    fn tuple_variant<V: Visitor<'de>>(self, _: usize, v: V) -> Result<V::Value, Error> {
        de::Deserializer::deserialize_any(De(self.0.as_borrowed(), self.1), v)
    }

    fn struct_variant<V: Visitor<'de>>(
        self,
        _: &'static [&'static str],
        v: V,
    ) -> Result<V::Value, Error> {
        de::Deserializer::deserialize_any(De(self.0.as_borrowed(), self.1), v)
    }
}
