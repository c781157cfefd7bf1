//! A serde `Deserializer` that reads plain Python objects (dict, list,
//! tuple, str, int, float, bool, None) directly: the fast way a
//! configuration dict becomes a Rust value (issue 20), with no JSON text
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
//! type (a set, a non-dict mapping) is refused. Dicts are walked with
//! `PyDict_Next` (no key and value lists are made), integers are read
//! with one C call (no 128-bit detour).

use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};
use serde::de::{self, DeserializeSeed, IntoDeserializer, Visitor};
use serde::Deserialize;

/// `T` read from `obj`, as `serde_json::from_str(json.dumps(obj))` would
/// give it; an error means only "not this way".
pub fn from_py<T: for<'de> Deserialize<'de>>(obj: &Bound<'_, PyAny>) -> Result<T, Error> {
    T::deserialize(De(obj))
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

struct De<'a, 'py>(&'a Bound<'py, PyAny>);

impl<'de> de::Deserializer<'de> for De<'_, '_> {
    type Error = Error;

    fn deserialize_any<V: Visitor<'de>>(self, v: V) -> Result<V::Value, Error> {
        let o = self.0;
        // the exact types first: one pointer comparison each (a subclass
        // check is a call into Python in the stable ABI)
        if let Ok(s) = o.cast_exact::<PyString>() {
            v.visit_str(s.to_str()?)
        } else if let Ok(i) = o.cast_exact::<PyInt>() {
            visit_int(i, v)
        } else if let Ok(d) = o.cast_exact::<PyDict>() {
            visit_dict(d, v)
        } else if let Ok(l) = o.cast_exact::<PyList>() {
            visit_list(l, v)
        } else if let Ok(s) = o.cast::<PyString>() {
            v.visit_str(s.to_str()?)
        } else if let Ok(d) = o.cast::<PyDict>() {
            visit_dict(d, v)
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
            visit_list(l, v)
        } else if let Ok(t) = o.cast::<PyTuple>() {
            v.visit_seq(SeqAccess {
                len: t.len(),
                items: Items::Tuple(t),
                next: 0,
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

    /// serde_json's enum forms: `"Variant"` or `{"Variant": value}`.
    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _: &'static str,
        _: &'static [&'static str],
        v: V,
    ) -> Result<V::Value, Error> {
        let o = self.0;
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
                })
            }
            _ => Err(Error("an enum dict must have exactly one key".into())),
        }
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf unit unit_struct seq tuple tuple_struct map struct
        identifier ignored_any
    }
}

/// An integer in 64 bits (serde_json reads a larger one as a float).
fn visit_int<'de, V: Visitor<'de>>(i: &Bound<'_, PyInt>, v: V) -> Result<V::Value, Error> {
    match i.extract::<u64>() {
        Ok(x) => v.visit_u64(x),
        Err(_) => v.visit_i64(i.extract::<i64>()?),
    }
}

fn visit_dict<'de, V: Visitor<'de>>(d: &Bound<'_, PyDict>, v: V) -> Result<V::Value, Error> {
    v.visit_map(DictAccess {
        iter: d.iter(),
        value: None,
        left: d.len(),
    })
}

fn visit_list<'de, V: Visitor<'de>>(l: &Bound<'_, PyList>, v: V) -> Result<V::Value, Error> {
    v.visit_seq(SeqAccess {
        len: l.len(),
        items: Items::List(l),
        next: 0,
    })
}

enum Items<'a, 'py> {
    List(&'a Bound<'py, PyList>),
    Tuple(&'a Bound<'py, PyTuple>),
}

struct SeqAccess<'a, 'py> {
    items: Items<'a, 'py>,
    next: usize,
    len: usize,
}

impl<'de> de::SeqAccess<'de> for SeqAccess<'_, '_> {
    type Error = Error;

    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, Error> {
        // the list may have shrunk meanwhile (no Python code runs here,
        // but the length is read again to be safe)
        let item = match self.items {
            Items::List(l) if self.next < l.len() => l.get_item(self.next)?,
            Items::Tuple(t) if self.next < t.len() => t.get_item(self.next)?,
            _ => return Ok(None),
        };
        self.next += 1;
        seed.deserialize(De(&item)).map(Some)
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.len.saturating_sub(self.next))
    }
}

struct DictAccess<'py> {
    iter: pyo3::types::iter::BoundDictIterator<'py>,
    value: Option<Bound<'py, PyAny>>,
    left: usize,
}

impl<'de> de::MapAccess<'de> for DictAccess<'_> {
    type Error = Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, Error> {
        let Some((k, value)) = self.iter.next() else {
            return Ok(None);
        };
        self.left = self.left.saturating_sub(1);
        if !k.is_instance_of::<PyString>() {
            return Err(Error("a dict key is not a string".into()));
        }
        self.value = Some(value);
        seed.deserialize(De(&k)).map(Some)
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, Error> {
        let value = self
            .value
            .take()
            .ok_or_else(|| Error("a dict value without its key".into()))?;
        seed.deserialize(De(&value))
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.left)
    }
}

struct EnumAccess<'py> {
    name: String,
    value: Bound<'py, PyAny>,
}

impl<'de, 'py> de::EnumAccess<'de> for EnumAccess<'py> {
    type Error = Error;
    type Variant = VariantAccess<'py>;

    fn variant_seed<S: DeserializeSeed<'de>>(
        self,
        seed: S,
    ) -> Result<(S::Value, VariantAccess<'py>), Error> {
        let de: de::value::StringDeserializer<Error> = self.name.into_deserializer();
        let name = seed.deserialize(de)?;
        Ok((name, VariantAccess(self.value)))
    }
}

struct VariantAccess<'py>(Bound<'py, PyAny>);

impl<'de> de::VariantAccess<'de> for VariantAccess<'_> {
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
        seed.deserialize(De(&self.0))
    }

    fn tuple_variant<V: Visitor<'de>>(self, _: usize, v: V) -> Result<V::Value, Error> {
        de::Deserializer::deserialize_any(De(&self.0), v)
    }

    fn struct_variant<V: Visitor<'de>>(
        self,
        _: &'static [&'static str],
        v: V,
    ) -> Result<V::Value, Error> {
        de::Deserializer::deserialize_any(De(&self.0), v)
    }
}
