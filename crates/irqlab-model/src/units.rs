//! Unit-bearing values of the model: durations ("500us", "2ms", "1.5s",
//! "100ns"), utilizations ("10%", "0.5%", "1/3"), data rates ("12.5MB/s",
//! "512B/s") and sizes ("512B", "64kB").
//!
//! Design principles: every value carries its unit (a bare number is an
//! error: "10" could be ns or ms); parsing is exact (decimal strings, no
//! floats: "1.5ms" is 1_500_000 ns, "0.5%" is 1/200); prefixes are decimal
//! (k = 10^3, M = 10^6, G = 10^9) and binary ones are spelled out (KiB,
//! MiB, GiB). Errors say what was expected.

use std::fmt;

use irqlab_core::{Nanos, Utilization};
use serde::de::{self, Deserializer, Visitor};
use serde::{Deserialize, Serialize, Serializer};

/// A decimal number as an exact fraction `num / 10^scale`.
fn decimal(s: &str) -> Option<(u128, u32)> {
    let s = s.trim();
    if s.is_empty() || s.starts_with('-') || s.starts_with('+') {
        return None;
    }
    let (int, frac) = match s.split_once('.') {
        Some((i, f)) => (i, f),
        None => (s, ""),
    };
    if int.is_empty() && frac.is_empty() {
        return None;
    }
    if !int.chars().all(|c| c.is_ascii_digit()) || !frac.chars().all(|c| c.is_ascii_digit()) {
        return None;
    }
    if frac.len() > 18 || int.len() > 20 {
        return None;
    }
    let digits = format!("{int}{frac}");
    let num: u128 = digits.parse().ok()?;
    Some((num, frac.len() as u32))
}

/// `value * mult` must be an integer.
fn scaled(num: u128, scale: u32, mult: u128) -> Result<u64, String> {
    let den = 10u128.pow(scale);
    let total = num.checked_mul(mult).ok_or("too large")?;
    if total % den != 0 {
        return Err("not a whole number of the base unit".into());
    }
    u64::try_from(total / den).map_err(|_| "too large".into())
}

fn split_unit(s: &str) -> (&str, &str) {
    let s = s.trim();
    let i = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '-' || c == '+'))
        .unwrap_or(s.len());
    (s[..i].trim(), s[i..].trim())
}

/// Parse a duration to integer nanoseconds.
pub fn parse_duration(s: &str) -> Result<Nanos, String> {
    let (n, unit) = split_unit(s);
    let mult: u128 = match unit {
        "ns" => 1,
        "us" | "µs" => 1_000,
        "ms" => 1_000_000,
        "s" => 1_000_000_000,
        "" => return Err(format!("\"{s}\" has no unit (use ns, us, ms or s)")),
        u => {
            return Err(format!(
                "\"{s}\": unknown time unit \"{u}\" (use ns, us, ms or s)"
            ))
        }
    };
    if n.starts_with('-') {
        return Err(format!("\"{s}\" is negative"));
    }
    let (num, scale) = decimal(n).ok_or_else(|| format!("\"{s}\" is not a number with a unit"))?;
    let ns = scaled(num, scale, mult).map_err(|e| format!("\"{s}\": {e} (ns)"))?;
    if ns > crate::limits::MAX_TIME.0 {
        return Err(format!(
            "\"{s}\" exceeds the longest time accepted, 1000000s (11.6 days)"
        ));
    }
    Ok(Nanos(ns))
}

/// Parse a utilization: a percentage or a fraction.
pub fn parse_utilization(s: &str) -> Result<Utilization, String> {
    let t = s.trim();
    if let Some((a, b)) = t.split_once('/') {
        let (a, b): (u64, u64) = (
            a.trim()
                .parse()
                .map_err(|_| format!("\"{s}\" is not a fraction like 1/3"))?,
            b.trim()
                .parse()
                .map_err(|_| format!("\"{s}\" is not a fraction like 1/3"))?,
        );
        return Utilization::new(a, b).map_err(|e| format!("\"{s}\": {e}"));
    }
    let Some(p) = t.strip_suffix('%') else {
        return Err(format!(
            "\"{s}\" has no unit (write a percentage like 10% or a fraction like 1/10)"
        ));
    };
    if p.trim().starts_with('-') {
        return Err(format!("\"{s}\" is negative"));
    }
    let (num, scale) = decimal(p).ok_or_else(|| format!("\"{s}\" is not a percentage"))?;
    let den = 100u128 * 10u128.pow(scale);
    let (n, d) = (
        u64::try_from(num).map_err(|_| "too large")?,
        u64::try_from(den).map_err(|_| "too precise")?,
    );
    Utilization::new(n, d).map_err(|e| format!("\"{s}\": {e}"))
}

fn byte_mult(unit: &str) -> Option<u128> {
    Some(match unit {
        "B" => 1,
        "kB" | "KB" => 1_000,
        "MB" => 1_000_000,
        "GB" => 1_000_000_000,
        "KiB" => 1 << 10,
        "MiB" => 1 << 20,
        "GiB" => 1 << 30,
        _ => return None,
    })
}

/// Parse a size in bytes ("512B", "64kB", "1MiB").
pub fn parse_size(s: &str) -> Result<u64, String> {
    let (n, unit) = split_unit(s);
    if unit.is_empty() {
        return Err(format!("\"{s}\" has no unit (use B, kB, MB, KiB, MiB)"));
    }
    let mult = byte_mult(unit).ok_or_else(|| format!("\"{s}\": unknown size unit \"{unit}\""))?;
    let (num, scale) = decimal(n).ok_or_else(|| format!("\"{s}\" is not a size"))?;
    scaled(num, scale, mult).map_err(|e| format!("\"{s}\": {e} (bytes)"))
}

/// Parse a data rate in bytes per second ("12.5MB/s").
pub fn parse_rate(s: &str) -> Result<u64, String> {
    let Some(size) = s.trim().strip_suffix("/s") else {
        return Err(format!("\"{s}\" is not a rate (write e.g. 12.5MB/s)"));
    };
    parse_size(size).map_err(|e| format!("{e} (in rate \"{s}\")"))
}

/// Regular expressions of the unit-bearing values (JSON Schema `pattern`s;
/// the parsers above are the authority, these only guide editors).
pub const DURATION_PATTERN: &str = r"^\s*[0-9]+(\.[0-9]+)?\s*(ns|us|µs|ms|s)\s*$";
pub const DURATION_OR_AUTO_PATTERN: &str = r"^\s*(auto|[0-9]+(\.[0-9]+)?\s*(ns|us|µs|ms|s))\s*$";
const UTIL_PATTERN: &str = r"^\s*([0-9]+(\.[0-9]+)?\s*%|[0-9]+\s*/\s*[0-9]+)\s*$";
const SIZE_PATTERN: &str = r"^\s*[0-9]+(\.[0-9]+)?\s*(B|kB|KB|MB|GB|KiB|MiB|GiB)\s*$";
const RATE_PATTERN: &str = r"^\s*[0-9]+(\.[0-9]+)?\s*(B|kB|KB|MB|GB|KiB|MiB|GiB)/s\s*$";

macro_rules! unit_type {
    ($name:ident, $inner:ty, $parse:path, $expect:literal, $show:expr, $pattern:expr) => {
        impl schemars::JsonSchema for $name {
            fn schema_name() -> std::borrow::Cow<'static, str> {
                stringify!($name).into()
            }
            fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
                schemars::json_schema!({
                    "description": $expect,
                    "type": "string",
                    "pattern": $pattern,
                })
            }
        }

        #[derive(Copy, Clone, Debug, PartialEq, Eq)]
        pub struct $name(pub $inner);

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                struct V;
                impl<'de> Visitor<'de> for V {
                    type Value = $name;
                    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                        f.write_str($expect)
                    }
                    fn visit_str<E: de::Error>(self, v: &str) -> Result<$name, E> {
                        $parse(v).map($name).map_err(E::custom)
                    }
                    fn visit_u64<E: de::Error>(self, v: u64) -> Result<$name, E> {
                        Err(E::custom(format!("{v} has no unit ({})", $expect)))
                    }
                    fn visit_i64<E: de::Error>(self, v: i64) -> Result<$name, E> {
                        Err(E::custom(format!("{v} has no unit ({})", $expect)))
                    }
                    fn visit_f64<E: de::Error>(self, v: f64) -> Result<$name, E> {
                        Err(E::custom(format!("{v} has no unit ({})", $expect)))
                    }
                }
                d.deserialize_any(V)
            }
        }

        impl Serialize for $name {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                let f: fn(&$inner) -> String = $show;
                s.serialize_str(&f(&self.0))
            }
        }
    };
}

unit_type!(
    Duration,
    Nanos,
    parse_duration,
    "a duration like 500us, 2ms or 1.5s",
    |n: &Nanos| n.to_string(),
    DURATION_PATTERN
);
unit_type!(
    Util,
    Utilization,
    parse_utilization,
    "a utilization like 10% or 1/3",
    |u: &Utilization| format!("{}/{}", u.num(), u.den()),
    UTIL_PATTERN
);
unit_type!(
    Size,
    u64,
    parse_size,
    "a size like 512B or 64kB",
    |b: &u64| format!("{b}B"),
    SIZE_PATTERN
);
unit_type!(
    Rate,
    u64,
    parse_rate,
    "a rate like 12.5MB/s",
    |b: &u64| format!("{b}B/s"),
    RATE_PATTERN
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("500us"), Ok(Nanos(500_000)));
        assert_eq!(parse_duration("1.5ms"), Ok(Nanos(1_500_000)));
        assert_eq!(parse_duration("2 s"), Ok(Nanos(2_000_000_000)));
        assert_eq!(parse_duration("100ns"), Ok(Nanos(100)));
        assert_eq!(
            parse_duration("0"),
            Err("\"0\" has no unit (use ns, us, ms or s)".into())
        );
        assert!(parse_duration("-2ms").unwrap_err().contains("negative"));
        assert!(parse_duration("1.5ns")
            .unwrap_err()
            .contains("whole number"));
        assert!(parse_duration("3 fortnights")
            .unwrap_err()
            .contains("unknown time unit"));
        assert!(parse_duration("ms").is_err());
    }

    #[test]
    fn utilizations() {
        assert_eq!(
            parse_utilization("10%").map(|u| (u.num(), u.den())),
            Ok((1, 10))
        );
        assert_eq!(
            parse_utilization("0.5%").map(|u| (u.num(), u.den())),
            Ok((1, 200))
        );
        assert_eq!(
            parse_utilization("1/3").map(|u| (u.num(), u.den())),
            Ok((1, 3))
        );
        assert!(parse_utilization("0.1").unwrap_err().contains("no unit"));
        assert!(parse_utilization("-1%").is_err());
    }

    #[test]
    fn sizes_and_rates() {
        assert_eq!(parse_size("512B"), Ok(512));
        assert_eq!(parse_size("64kB"), Ok(64_000));
        assert_eq!(parse_size("64KiB"), Ok(65_536));
        assert_eq!(parse_rate("12.5MB/s"), Ok(12_500_000));
        assert!(parse_rate("12.5MB").is_err());
        assert!(parse_size("512").unwrap_err().contains("no unit"));
    }
}
