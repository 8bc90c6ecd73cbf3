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

/// An e-mail address as HTML forms define one (WHATWG's "valid e-mail
/// address"): a local part of letters, digits and ``.!#$%&'*+/=?^_`{|}~-``,
/// `@`, and a domain of dot-separated labels (letters, digits, inner `-`; up
/// to 63 each) or an address literal such as `[192.0.2.1]`. A label of an
/// internationalized domain (`münchen.de`) may hold any letters. The same rule
/// as `validator`'s `email`, written out because that one compiles regular
/// expressions and links IDNA tables, 0.7 MB of memory in the contacts
/// function at start (docs/bench-results.md).
pub fn email(value: &str) -> Result<(), ValidationError> {
    if is_email(value) {
        Ok(())
    } else {
        Err(ValidationError::new("email"))
    }
}

fn is_email(value: &str) -> bool {
    const LOCAL_SYMBOLS: &str = ".!#$%&'*+/=?^_`{|}~-";
    let Some((local, domain)) = value.rsplit_once('@') else {
        return false;
    };
    let local_ok = !local.is_empty()
        && local.len() <= 64
        && local
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || LOCAL_SYMBOLS.contains(c));
    if !local_ok || domain.is_empty() || domain.chars().count() > 255 {
        return false;
    }
    if let Some(literal) = domain.strip_prefix('[').and_then(|d| d.strip_suffix(']')) {
        return literal.parse::<std::net::IpAddr>().is_ok();
    }
    domain.split('.').all(|label| {
        !label.is_empty()
            && label.chars().count() <= 63
            && !label.starts_with('-')
            && !label.ends_with('-')
            && label.chars().all(|c| c.is_alphanumeric() || c == '-')
    })
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

#[cfg(test)]
mod tests {
    use super::*;
    use validator::ValidateEmail;

    const ADDRESSES: &[&str] = &[
        "maria@example.com",
        "Maria.Silva+crm@Example.COM.br",
        "x@y",
        "o'brien@example.ie",
        "a!#$%&'*+/=?^_`{|}~-z@example.com",
        "user@[192.0.2.1]",
        "user@[2001:db8::1]",
        "user@sub-domain.example-1.com",
        "",
        "@example.com",
        "maria@",
        "maria",
        "maria@@example.com",
        "maria silva@example.com",
        "maria@exa mple.com",
        "maria@-example.com",
        "maria@example-.com",
        "maria@example..com",
        "maria@.example.com",
        "maria@example.com.",
        "maria@exam_ple.com",
        "\"maria\"@example.com",
        "maria@[300.1.1.1]",
        "maria@[192.0.2.1",
        "a@b@example.com",
    ];

    #[test]
    fn email_agrees_with_validator_on_ascii_addresses() {
        for address in ADDRESSES {
            assert_eq!(is_email(address), address.validate_email(), "{address:?}");
        }
        let long_local = format!("{}@example.com", "a".repeat(65));
        let long_label = format!("maria@{}.com", "a".repeat(64));
        for address in [long_local, long_label] {
            assert!(
                !is_email(&address) && !address.validate_email(),
                "{address}"
            );
        }
    }

    #[test]
    fn email_takes_internationalized_domains() {
        assert!(is_email("maria@münchen.de"));
        assert!(is_email("maria@exemplo.com.br"));
        assert!(!is_email("maria@mün chen.de"));
        assert!(!is_email("maría@example.com"), "the local part is ASCII");
    }
}
