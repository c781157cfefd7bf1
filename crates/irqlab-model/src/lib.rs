//! irqlab-model: the typed YAML description of a system (docs/model.md) --
//! machine and interrupt path, VCPUs, tasks, devices, xHCI interrupter maps
//! and fd bindings -- with unit-bearing values and validation that names the
//! field path, the value and the rule.
//!
//! Design principles: parsing never panics and never half-accepts (unknown
//! keys are errors); syntax and type errors carry the YAML location or field
//! path; semantic errors are all collected; nothing here simulates -- the
//! simulator lowers a validated `Model` into its own resolved form.

pub mod costs;
pub mod handling;
pub mod limits;
pub mod model;
pub mod units;
pub mod validate;

pub use model::Model;
pub use validate::{class_names, device_class, validate, ModelError, Report};

/// Why a model text was rejected.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// Not valid YAML, a wrong type, a unit error or an unknown key: the
    /// first such problem, with its field path (or line).
    #[error("{0}")]
    Parse(String),
    /// Rule violations, all of them.
    #[error("{}", .0.iter().map(|e| e.to_string()).collect::<Vec<_>>().join("\n"))]
    Invalid(Vec<ModelError>),
}

/// Parse and validate a model; returns it with its warnings.
pub fn load_str(text: &str) -> Result<(Model, Vec<String>), LoadError> {
    // serde_yaml's messages carry the field path and the line/column.
    limits::check_text(text).map_err(LoadError::Parse)?;
    let model: Model = serde_yaml::from_str(text).map_err(|e| {
        if handling::is_retired_scenario(text) {
            return LoadError::Parse(handling::RETIRED.into());
        }
        LoadError::Parse(limits::shorten(&limits::escape(&e.to_string()), 300))
    })?;
    let report = validate(&model);
    if report.errors.is_empty() {
        Ok((model, report.warnings))
    } else {
        Err(LoadError::Invalid(report.errors))
    }
}

/// A parse error of `text` (a [`LoadError::Parse`] message, which serde_yaml
/// writes as `path: rule at line L column C`, the path absent at the
/// document's root) as `(path, value, rule)`: the value is the text at the
/// path when it is a scalar, or the key an unknown-field error names; `""`
/// when neither (a whole mapping, a syntax error).
pub fn parse_problem(text: &str, msg: &str) -> (String, String, String) {
    let (path, rule) = match msg.split_once(": ") {
        Some((path, rule)) if !path.is_empty() && !path.contains(' ') => (path, rule),
        _ => return (String::new(), String::new(), msg.to_owned()),
    };
    let named = ["unknown field `", "unknown variant `"]
        .iter()
        .find_map(|p| {
            rule.strip_prefix(p)?
                .split_once('`')
                .map(|(v, _)| v.to_owned())
        });
    let value = named
        .or_else(|| scalar_at(text, path))
        .map(|v| limits::shorten(&limits::escape(&v), 80))
        .unwrap_or_default();
    (path.to_owned(), value, rule.to_owned())
}

/// The scalar at a serde path (`vcpus[0].period`) of the YAML `text`.
fn scalar_at(text: &str, path: &str) -> Option<String> {
    use serde_yaml::Value;
    // a text over the limits is not parsed again (its nesting or size is the error)
    limits::check_text(text).ok()?;
    let mut v: Value = serde_yaml::from_str(text).ok()?;
    for seg in path.split('.') {
        let (key, idx) = seg.split_once('[').unwrap_or((seg, ""));
        if !key.is_empty() {
            v = v.as_mapping_mut()?.remove(key)?;
        }
        for i in idx.split('[').filter(|s| !s.is_empty()) {
            let i: usize = i.strip_suffix(']')?.parse().ok()?;
            let seq = v.as_sequence_mut()?;
            if i >= seq.len() {
                return None;
            }
            v = seq.swap_remove(i);
        }
    }
    match v {
        Value::String(s) => Some(s),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        Value::Null => Some("null".into()),
        _ => None,
    }
}

/// Whether `text` is a costs file: within the text limits, a mapping whose
/// only key is `costs` (anything else is for `load_str`).
pub fn is_costs_file(text: &str) -> bool {
    limits::check_text(text).is_ok()
        && matches!(
            serde_yaml::from_str::<serde_yaml::Value>(text),
            Ok(serde_yaml::Value::Mapping(m)) if m.len() == 1 && m.contains_key("costs")
        )
}

/// Parse and validate a costs file (`irqlab calibrate --out`): a document
/// whose only key is `costs`; returns the section with its warnings.
pub fn load_costs_str(text: &str) -> Result<(costs::Costs, Vec<String>), LoadError> {
    #[derive(serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    struct File {
        costs: costs::Costs,
    }
    limits::check_text(text).map_err(LoadError::Parse)?;
    let f: File = serde_yaml::from_str(text)
        .map_err(|e| LoadError::Parse(limits::shorten(&limits::escape(&e.to_string()), 300)))?;
    let mut report = Report::default();
    costs::validate_costs(&mut report, &f.costs, model::PathKind::Quest);
    if report.errors.is_empty() {
        Ok((f.costs, report.warnings))
    } else {
        Err(LoadError::Invalid(report.errors))
    }
}

#[cfg(test)]
mod handling_tests;
#[cfg(test)]
mod tests;
