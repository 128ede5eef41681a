//! Reading a checkpoint's `config.json` one field at a time, so that every wrong value
//! (missing, of the wrong JSON type, negative, fractional, too large for this machine) is a
//! `VizError::ConfigField` naming the field as the file spells it. Ranges are checked later,
//! by `ModelConfig::validate` and against the weights.

use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use crate::error::{Result, VizError};

/// The fields of one JSON object, and the file's name for error messages.
pub struct ConfigJson {
    file: String,
    fields: Map<String, Value>,
}

/// What a JSON value is, for "must be a whole number, found a string".
fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

impl ConfigJson {
    /// Parses `json`, which must be one object.
    pub fn parse(file: &str, json: &str) -> Result<Self> {
        let root: Value = serde_json::from_str(json)
            .map_err(|e| VizError::BadConfig(format!("{file} is not valid JSON: {e}")))?;
        match root {
            Value::Object(fields) => Ok(Self {
                file: file.into(),
                fields,
            }),
            other => Err(VizError::BadConfig(format!(
                "{file} must be a JSON object, found {}",
                kind(&other)
            ))),
        }
    }

    pub fn file(&self) -> &str {
        &self.file
    }

    fn error(&self, field: &str, value: &Value, problem: impl Into<String>) -> VizError {
        VizError::config_field(&self.file, field, value, problem)
    }

    fn missing(&self, field: &str) -> VizError {
        VizError::ConfigField {
            file: self.file.clone(),
            field: field.into(),
            value: None,
            problem: "is missing".into(),
        }
    }

    fn get(&self, field: &str) -> Result<&Value> {
        self.fields.get(field).ok_or_else(|| self.missing(field))
    }

    /// A count: a whole, non-negative JSON number that fits this machine's `usize`.
    pub fn count(&self, field: &str) -> Result<usize> {
        let value = self.get(field)?;
        let Value::Number(n) = value else {
            return Err(self.error(
                field,
                value,
                format!("must be a whole number, found {}", kind(value)),
            ));
        };
        if let Some(v) = n.as_u64() {
            return usize::try_from(v)
                .map_err(|_| self.error(field, value, format!("must be at most {}", usize::MAX)));
        }
        match n.as_f64() {
            Some(f) if f < 0.0 => Err(self.error(field, value, "must not be negative")),
            Some(f) if f >= u64::MAX as f64 => {
                Err(self.error(field, value, format!("must be at most {}", usize::MAX)))
            }
            Some(f) if f.fract() == 0.0 => Err(self.error(
                field,
                value,
                "must be written as a whole number (no decimal point or exponent)",
            )),
            _ => Err(self.error(field, value, "must be a whole number")),
        }
    }

    /// Whether the field is present.
    pub fn has(&self, field: &str) -> bool {
        self.fields.contains_key(field)
    }

    /// A count that may be absent, with the value its absence means.
    pub fn count_or(&self, field: &str, default: usize) -> Result<usize> {
        if self.fields.contains_key(field) {
            self.count(field)
        } else {
            Ok(default)
        }
    }

    /// A finite JSON number, as f32 (numbers beyond f32's range are errors, not infinities).
    pub fn number(&self, field: &str) -> Result<f32> {
        let value = self.get(field)?;
        let Some(v) = value.as_f64() else {
            return Err(self.error(
                field,
                value,
                format!("must be a number, found {}", kind(value)),
            ));
        };
        let narrowed = v as f32;
        if !narrowed.is_finite() {
            return Err(self.error(
                field,
                value,
                format!("is beyond the range of a 32-bit float ({:e})", f32::MAX),
            ));
        }
        Ok(narrowed)
    }

    /// A string, or None when the field is absent or null.
    pub fn optional_text(&self, field: &str) -> Result<Option<&str>> {
        match self.fields.get(field) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(other) => Err(self.error(
                field,
                other,
                format!("must be a string, found {}", kind(other)),
            )),
        }
    }

    pub fn text(&self, field: &str) -> Result<&str> {
        self.optional_text(field)?
            .ok_or_else(|| self.missing(field))
    }

    pub fn boolean(&self, field: &str) -> Result<bool> {
        let value = self.get(field)?;
        value.as_bool().ok_or_else(|| {
            self.error(
                field,
                value,
                format!("must be true or false, found {}", kind(value)),
            )
        })
    }

    /// Any other field (an enum such as `"position": {"Rotary": {...}}`), read with serde.
    pub fn typed<T: DeserializeOwned>(&self, field: &str) -> Result<T> {
        let value = self.get(field)?;
        T::deserialize(value).map_err(|e| self.error(field, value, format!("is not valid: {e}")))
    }

    /// An error about `field`'s present value (for checks against the weights).
    pub fn wrong(&self, field: &str, problem: impl Into<String>) -> VizError {
        match self.fields.get(field) {
            Some(value) => self.error(field, value, problem),
            None => VizError::ConfigField {
                file: self.file.clone(),
                field: field.into(),
                value: None,
                problem: problem.into(),
            },
        }
    }
}

/// Renames the field of a `ConfigField` error from `ModelConfig`'s spelling to a file's
/// (`n_layers` → `num_hidden_layers`), and names the file; other errors pass unchanged.
pub fn in_file(error: VizError, file: &str, spelling: &[(&str, &str)]) -> VizError {
    match error {
        VizError::ConfigField {
            field,
            value,
            problem,
            ..
        } => {
            let field = spelling
                .iter()
                .find(|(ours, _)| *ours == field)
                .map_or(field, |(_, theirs)| theirs.to_string());
            VizError::ConfigField {
                file: file.into(),
                field,
                value,
                problem,
            }
        }
        other => other,
    }
}
