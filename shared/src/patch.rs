//! `Patch<T>`: a field of a PATCH body (or of a create that shares one), which
//! is left out (keep what is stored), `null` (clear it) or a value (set it).
//!
//! Its schema is `Option<T>`'s, so the OpenAPI document reads as before; it
//! validates as `T` when set, so `#[validate(length(..))]`, `nested` and the
//! custom checks of `crate::validate` apply to it as to an `Option<T>`.

use std::borrow::Cow;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use validator::{Validate, ValidateLength, ValidationErrors};

/// Keep, clear or set; a field of this type takes `#[serde(default)]`.
#[derive(Debug, Clone, PartialEq, Default)]
pub enum Patch<T> {
    /// Left out of the body.
    #[default]
    Keep,
    /// Given as `null`.
    Clear,
    /// Given a value.
    Set(T),
}

impl<T> Patch<T> {
    /// Sets what a create body gives and keeps what it leaves out (it cannot
    /// clear): an upsert's create body applied as a patch.
    pub fn set_or_keep(value: Option<T>) -> Self {
        value.map_or(Self::Keep, Self::Set)
    }

    /// Writes the patch into `field`: `Clear` empties it, `Set` fills it.
    pub fn apply(self, field: &mut Option<T>) {
        match self {
            Self::Keep => {}
            Self::Clear => *field = None,
            Self::Set(value) => *field = Some(value),
        }
    }

    /// The value, when the body gave one.
    pub fn value(self) -> Option<T> {
        match self {
            Self::Set(value) => Some(value),
            Self::Keep | Self::Clear => None,
        }
    }

    /// The value by reference, when the body gave one.
    pub fn as_value(&self) -> Option<&T> {
        match self {
            Self::Set(value) => Some(value),
            Self::Keep | Self::Clear => None,
        }
    }

    /// True when the body left the field out.
    pub fn is_keep(&self) -> bool {
        matches!(self, Self::Keep)
    }

    pub fn map<U>(self, f: impl FnOnce(T) -> U) -> Patch<U> {
        match self {
            Self::Keep => Patch::Keep,
            Self::Clear => Patch::Clear,
            Self::Set(value) => Patch::Set(f(value)),
        }
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Patch<T> {
    /// Called only for a field that is present (`Keep` comes from `default`).
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(Option::<T>::deserialize(d)?.map_or(Self::Clear, Self::Set))
    }
}

impl<T: Serialize> Serialize for Patch<T> {
    /// As the body gave it (`Keep` as `null`): validator quotes it in errors.
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.as_value().serialize(s)
    }
}

impl<T: ValidateLength<u64>> ValidateLength<u64> for Patch<T> {
    fn length(&self) -> Option<u64> {
        self.as_value().and_then(T::length)
    }
}

impl<T: Validate> Validate for Patch<T> {
    fn validate(&self) -> Result<(), ValidationErrors> {
        self.as_value().map_or(Ok(()), T::validate)
    }
}

impl<T: schemars::JsonSchema> schemars::JsonSchema for Patch<T> {
    // `Option<T>`'s in every part, so that the derive of a body treats a
    // `Patch` field as it treats an optional one.
    fn inline_schema() -> bool {
        <Option<T>>::inline_schema()
    }

    fn schema_name() -> Cow<'static, str> {
        <Option<T>>::schema_name()
    }

    fn schema_id() -> Cow<'static, str> {
        <Option<T>>::schema_id()
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        <Option<T>>::json_schema(generator)
    }

    fn _schemars_private_non_optional_json_schema(
        generator: &mut schemars::SchemaGenerator,
    ) -> schemars::Schema {
        <Option<T>>::_schemars_private_non_optional_json_schema(generator)
    }

    fn _schemars_private_is_option() -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Deserialize, Default)]
    struct Body {
        #[serde(default)]
        name: Patch<String>,
    }

    #[test]
    fn left_out_null_and_a_value_are_keep_clear_and_set() {
        let read = |json: &str| serde_json::from_str::<Body>(json).unwrap().name;
        assert_eq!(read("{}"), Patch::Keep);
        assert_eq!(read(r#"{"name":null}"#), Patch::Clear);
        assert_eq!(read(r#"{"name":"Ana"}"#), Patch::Set("Ana".into()));
    }

    #[test]
    fn applied_it_keeps_clears_or_sets() {
        let mut field = Some(1);
        Patch::Keep.apply(&mut field);
        assert_eq!(field, Some(1));
        Patch::Set(2).apply(&mut field);
        assert_eq!(field, Some(2));
        Patch::Clear.apply(&mut field);
        assert_eq!(field, None);
    }

    #[test]
    fn only_a_value_is_validated() {
        let long = Patch::Set("x".repeat(5));
        assert!(!long.validate_length(None, Some(4), None));
        assert!(Patch::<String>::Clear.validate_length(Some(1), Some(4), None));
        assert!(Patch::<String>::Keep.validate_length(Some(1), Some(4), None));
    }
}
