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

/// An absolute `http` or `https` address with a host.
pub fn web_url(value: &str) -> Result<(), ValidationError> {
    let rest = value
        .strip_prefix("https://")
        .or_else(|| value.strip_prefix("http://"));
    let host = rest.and_then(|r| r.split(['/', '?', '#']).next());
    match host {
        Some(h) if !h.is_empty() && !value.chars().any(char::is_whitespace) => Ok(()),
        _ => Err(ValidationError::new("url")
            .with_message("must be an absolute http or https address".into())),
    }
}

/// An identifier such as `pro` or `enterprise-2026`.
pub fn slug(value: &str) -> Result<(), ValidationError> {
    if value
        .bytes()
        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
    {
        Ok(())
    } else {
        Err(ValidationError::new("slug")
            .with_message("must be lowercase letters, digits and dashes".into()))
    }
}

/// Three letters (ISO 4217).
pub fn currency(value: &str) -> Result<(), ValidationError> {
    if value.len() == 3 && value.bytes().all(|b| b.is_ascii_alphabetic()) {
        Ok(())
    } else {
        Err(ValidationError::new("currency")
            .with_message("must be a three-letter currency code".into()))
    }
}

/// The channels a campaign sends through.
pub const CHANNEL_TYPES: &[&str] = &[
    "whatsapp",
    "instagram",
    "messenger",
    "telegram",
    "sms",
    "email",
];
/// Where a campaign's leads come from: existing contacts, an uploaded list, a segment.
pub const LEAD_TYPES: &[&str] = &["contacts", "list", "segment"];

pub fn channel_type(value: &str) -> Result<(), ValidationError> {
    one_of(value, CHANNEL_TYPES)
}

pub fn lead_type(value: &str) -> Result<(), ValidationError> {
    one_of(value, LEAD_TYPES)
}

fn one_of(value: &str, allowed: &[&str]) -> Result<(), ValidationError> {
    if allowed.contains(&value) {
        Ok(())
    } else {
        Err(ValidationError::new("one_of")
            .with_message(format!("must be one of {}", allowed.join(", ")).into()))
    }
}
