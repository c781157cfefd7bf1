//! A serde `Serializer` that builds Python objects directly: the results
//! of a simulation reach Python as the same objects `json.loads` would
//! give for their JSON text, without the text and without an intermediate
//! `serde_json::Value` tree.
//!
//! Design principles: the mapping is serde_json's, exactly, so a metrics
//! dict equals `json.loads(metrics.json)`: structs and maps are dicts (in
//! field order; skipped fields are absent), sequences *and tuples* are
//! lists, `None` and unit are `None`, a non-finite float is `None` (JSON
//! has no NaN), a unit enum variant is its name, a newtype variant
//! `{name: value}`. Struct field names are interned Python strings (built
//! once per name, not once per object), and every `0.0` is one shared
//! float object.

use std::cell::RefCell;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyString};
use serde::ser::{self, Serialize};

/// The Python object of `v`, as `json.loads(serde_json::to_string(v))`.
pub fn to_py<'py, T: Serialize + ?Sized>(py: Python<'py>, v: &T) -> PyResult<Bound<'py, PyAny>> {
    let keys = RefCell::new(Keys::default());
    let zero = 0.0_f64.into_pyobject(py)?.into_any();
    v.serialize(Ser {
        py,
        keys: &keys,
        zero: &zero,
    })
    .map_err(|e| e.0)
}

/// Struct field names already made into Python strings (by address and
/// length: the names are `&'static str`).
type Keys<'py> = HashMap<(usize, usize), Bound<'py, PyString>, BuildHasherDefault<AddrHasher>>;

/// A hasher for the `(address, length)` keys of [`Keys`]: one multiply
/// per word (Fibonacci hashing). SipHash, the default, cost more than
/// building the dict the key goes into.
#[derive(Default)]
struct AddrHasher(u64);

impl Hasher for AddrHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(u64::from(b));
        }
    }
    fn write_usize(&mut self, n: usize) {
        self.write_u64(n as u64);
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0.rotate_left(5) ^ n).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

/// An error while building the objects (a Python error, or a type JSON
/// cannot represent).
#[derive(Debug)]
pub struct Error(PyErr);

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl std::error::Error for Error {}

impl ser::Error for Error {
    fn custom<T: std::fmt::Display>(msg: T) -> Error {
        Error(PyValueError::new_err(msg.to_string()))
    }
}

impl From<std::convert::Infallible> for Error {
    fn from(e: std::convert::Infallible) -> Error {
        match e {}
    }
}

impl From<PyErr> for Error {
    fn from(e: PyErr) -> Error {
        Error(e)
    }
}

#[derive(Clone, Copy)]
struct Ser<'a, 'py> {
    py: Python<'py>,
    keys: &'a RefCell<Keys<'py>>,
    /// The float `0.0`, shared (floats are immutable): most window values
    /// of a large model are zero.
    zero: &'a Bound<'py, PyAny>,
}

type R<'py> = Result<Bound<'py, PyAny>, Error>;

/// Sequences and tuples of every kind: collected, then one list.
struct Seq<'a, 'py> {
    ser: Ser<'a, 'py>,
    items: Vec<Bound<'py, PyAny>>,
    /// A tuple variant: wrapped as `{name: [...]}`.
    variant: Option<&'static str>,
}

/// Maps and structs: one dict.
struct Map<'a, 'py> {
    ser: Ser<'a, 'py>,
    dict: Bound<'py, PyDict>,
    key: Option<Bound<'py, PyAny>>,
    /// A struct variant: wrapped as `{name: {...}}`.
    variant: Option<&'static str>,
}

fn wrap<'py>(py: Python<'py>, variant: Option<&'static str>, v: Bound<'py, PyAny>) -> R<'py> {
    match variant {
        None => Ok(v),
        Some(name) => {
            let d = PyDict::new(py);
            d.set_item(PyString::intern(py, name), v)?;
            Ok(d.into_any())
        }
    }
}

impl<'a, 'py> ser::Serializer for Ser<'a, 'py> {
    type Ok = Bound<'py, PyAny>;
    type Error = Error;
    type SerializeSeq = Seq<'a, 'py>;
    type SerializeTuple = Seq<'a, 'py>;
    type SerializeTupleStruct = Seq<'a, 'py>;
    type SerializeTupleVariant = Seq<'a, 'py>;
    type SerializeMap = Map<'a, 'py>;
    type SerializeStruct = Map<'a, 'py>;
    type SerializeStructVariant = Map<'a, 'py>;

    fn serialize_bool(self, v: bool) -> R<'py> {
        Ok(v.into_pyobject(self.py)?.to_owned().into_any())
    }
    fn serialize_i8(self, v: i8) -> R<'py> {
        self.serialize_i64(v.into())
    }
    fn serialize_i16(self, v: i16) -> R<'py> {
        self.serialize_i64(v.into())
    }
    fn serialize_i32(self, v: i32) -> R<'py> {
        self.serialize_i64(v.into())
    }
    fn serialize_i64(self, v: i64) -> R<'py> {
        Ok(v.into_pyobject(self.py)?.into_any())
    }
    fn serialize_i128(self, v: i128) -> R<'py> {
        Ok(v.into_pyobject(self.py)?.into_any())
    }
    fn serialize_u8(self, v: u8) -> R<'py> {
        self.serialize_u64(v.into())
    }
    fn serialize_u16(self, v: u16) -> R<'py> {
        self.serialize_u64(v.into())
    }
    fn serialize_u32(self, v: u32) -> R<'py> {
        self.serialize_u64(v.into())
    }
    fn serialize_u64(self, v: u64) -> R<'py> {
        Ok(v.into_pyobject(self.py)?.into_any())
    }
    fn serialize_u128(self, v: u128) -> R<'py> {
        Ok(v.into_pyobject(self.py)?.into_any())
    }
    fn serialize_f32(self, v: f32) -> R<'py> {
        self.serialize_f64(v.into())
    }
    fn serialize_f64(self, v: f64) -> R<'py> {
        if v == 0.0 && v.is_sign_positive() {
            Ok(self.zero.clone())
        } else if v.is_finite() {
            Ok(v.into_pyobject(self.py)?.into_any())
        } else {
            self.serialize_unit()
        }
    }
    fn serialize_char(self, v: char) -> R<'py> {
        self.serialize_str(v.encode_utf8(&mut [0; 4]))
    }
    fn serialize_str(self, v: &str) -> R<'py> {
        Ok(PyString::new(self.py, v).into_any())
    }
    fn serialize_bytes(self, v: &[u8]) -> R<'py> {
        let items = v
            .iter()
            .map(|&b| self.serialize_u8(b))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(PyList::new(self.py, items)?.into_any())
    }
    fn serialize_none(self) -> R<'py> {
        self.serialize_unit()
    }
    fn serialize_some<T: Serialize + ?Sized>(self, v: &T) -> R<'py> {
        v.serialize(self)
    }
    fn serialize_unit(self) -> R<'py> {
        Ok(self.py.None().into_bound(self.py))
    }
    fn serialize_unit_struct(self, _: &'static str) -> R<'py> {
        self.serialize_unit()
    }
    fn serialize_unit_variant(self, _: &'static str, _: u32, variant: &'static str) -> R<'py> {
        Ok(PyString::intern(self.py, variant).into_any())
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(self, _: &'static str, v: &T) -> R<'py> {
        v.serialize(self)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        v: &T,
    ) -> R<'py> {
        let inner = v.serialize(self)?;
        wrap(self.py, Some(variant), inner)
    }
    fn serialize_seq(self, len: Option<usize>) -> Result<Seq<'a, 'py>, Error> {
        Ok(Seq {
            ser: self,
            items: Vec::with_capacity(len.unwrap_or(0)),
            variant: None,
        })
    }
    fn serialize_tuple(self, len: usize) -> Result<Seq<'a, 'py>, Error> {
        self.serialize_seq(Some(len))
    }
    fn serialize_tuple_struct(self, _: &'static str, len: usize) -> Result<Seq<'a, 'py>, Error> {
        self.serialize_seq(Some(len))
    }
    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        len: usize,
    ) -> Result<Seq<'a, 'py>, Error> {
        let mut s = self.serialize_seq(Some(len))?;
        s.variant = Some(variant);
        Ok(s)
    }
    fn serialize_map(self, _: Option<usize>) -> Result<Map<'a, 'py>, Error> {
        Ok(Map {
            ser: self,
            dict: PyDict::new(self.py),
            key: None,
            variant: None,
        })
    }
    fn serialize_struct(self, _: &'static str, len: usize) -> Result<Map<'a, 'py>, Error> {
        self.serialize_map(Some(len))
    }
    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        len: usize,
    ) -> Result<Map<'a, 'py>, Error> {
        let mut m = self.serialize_map(Some(len))?;
        m.variant = Some(variant);
        Ok(m)
    }
}

impl<'py> Seq<'_, 'py> {
    fn push<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<(), Error> {
        self.items.push(v.serialize(self.ser)?);
        Ok(())
    }
    fn finish(self) -> R<'py> {
        let py = self.ser.py;
        let list = PyList::new(py, self.items)?.into_any();
        wrap(py, self.variant, list)
    }
}

macro_rules! seq_impl {
    ($trait:ident, $method:ident) => {
        impl<'py> ser::$trait for Seq<'_, 'py> {
            type Ok = Bound<'py, PyAny>;
            type Error = Error;
            fn $method<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<(), Error> {
                self.push(v)
            }
            fn end(self) -> R<'py> {
                self.finish()
            }
        }
    };
}

seq_impl!(SerializeSeq, serialize_element);
seq_impl!(SerializeTuple, serialize_element);
seq_impl!(SerializeTupleStruct, serialize_field);
seq_impl!(SerializeTupleVariant, serialize_field);

impl<'py> ser::SerializeMap for Map<'_, 'py> {
    type Ok = Bound<'py, PyAny>;
    type Error = Error;
    fn serialize_key<T: Serialize + ?Sized>(&mut self, k: &T) -> Result<(), Error> {
        let key = k.serialize(self.ser)?;
        if !key.is_instance_of::<PyString>() {
            // JSON object keys are strings: numbers become their text
            self.key = Some(key.str()?.into_any());
        } else {
            self.key = Some(key);
        }
        Ok(())
    }
    fn serialize_value<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<(), Error> {
        let key = self
            .key
            .take()
            .ok_or_else(|| <Error as ser::Error>::custom("a map value without a key"))?;
        self.dict.set_item(key, v.serialize(self.ser)?)?;
        Ok(())
    }
    fn end(self) -> R<'py> {
        wrap(self.ser.py, self.variant, self.dict.into_any())
    }
}

impl Map<'_, '_> {
    fn field<T: Serialize + ?Sized>(&mut self, name: &'static str, v: &T) -> Result<(), Error> {
        let value = v.serialize(self.ser)?;
        let key = self
            .ser
            .keys
            .borrow_mut()
            .entry((name.as_ptr() as usize, name.len()))
            .or_insert_with(|| PyString::intern(self.ser.py, name))
            .clone();
        self.dict.set_item(key, value)?;
        Ok(())
    }
}

impl<'py> ser::SerializeStruct for Map<'_, 'py> {
    type Ok = Bound<'py, PyAny>;
    type Error = Error;
    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        name: &'static str,
        v: &T,
    ) -> Result<(), Error> {
        self.field(name, v)
    }
    fn end(self) -> R<'py> {
        wrap(self.ser.py, self.variant, self.dict.into_any())
    }
}

impl<'py> ser::SerializeStructVariant for Map<'_, 'py> {
    type Ok = Bound<'py, PyAny>;
    type Error = Error;
    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        name: &'static str,
        v: &T,
    ) -> Result<(), Error> {
        self.field(name, v)
    }
    fn end(self) -> R<'py> {
        wrap(self.ser.py, self.variant, self.dict.into_any())
    }
}
