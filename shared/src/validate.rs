//! Small pieces of input validation that serde and validator do not give.

use serde::{Deserialize, Deserializer};
use validator::ValidationError;

/// An optional field that may be left out but not set to `null`.
pub fn present<'de, D, T>(d: D) -> Result<Option<T>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    match Option::<T>::deserialize(d)? {
        Some(value) => Ok(Some(value)),
        None => Err(serde::de::Error::custom("must not be null")),
    }
}

/// An optional field where `null` means "clear it": absent is `None`, `null` is
/// `Some(None)`, a value is `Some(Some(value))`. Use with `#[serde(default)]`.
pub fn nullable<'de, D, T>(d: D) -> Result<Option<Option<T>>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    Option::<T>::deserialize(d).map(Some)
}

/// Text that is more than white space.
pub fn not_blank(value: &str) -> Result<(), ValidationError> {
    if value.trim().is_empty() {
        Err(ValidationError::new("blank").with_message("must not be blank".into()))
    } else {
        Ok(())
    }
}
