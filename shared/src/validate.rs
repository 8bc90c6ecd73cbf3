//! Small pieces of input validation that serde and validator do not give.

use serde::{Deserialize, Deserializer};
use validator::ValidationError;

use crate::patch::Patch;

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

/// What a custom check reads: a text, or the value of a [`Patch`] (one that
/// keeps or clears a field has nothing to check). validator's derive unwraps
/// an `Option` field but hands a `Patch` over whole.
pub trait Text {
    fn text(&self) -> Option<&str>;
}

impl Text for str {
    fn text(&self) -> Option<&str> {
        Some(self)
    }
}

impl Text for String {
    fn text(&self) -> Option<&str> {
        Some(self)
    }
}

impl<T: Text + ?Sized> Text for &T {
    fn text(&self) -> Option<&str> {
        (**self).text()
    }
}

impl Text for Patch<String> {
    fn text(&self) -> Option<&str> {
        self.as_value().map(String::as_str)
    }
}

/// The fields a create needs, of a body type shared with the update (where
/// every field is optional), as the document names them: `http::Create`
/// marks them required in the OpenAPI document; the domain's create checks them.
pub trait CreateFields {
    /// Every one of these, not null.
    const REQUIRED: &'static [&'static str];
    /// At least one of these, not null (empty: no such rule).
    const ANY_OF: &'static [&'static str] = &[];
}

/// Says in a body's schema that at least one of `fields` is given and not
/// null (`exclusive`: exactly one), where the body type has them all
/// optional. Each rule goes into `allOf`, so a schema can hold several.
pub fn needs_one_of(schema: &mut schemars::Schema, fields: &[&str], exclusive: bool) {
    let branches: Vec<serde_json::Value> = fields
        .iter()
        .map(|f| serde_json::json!({ "required": [f], "properties": { *f: { "not": { "type": "null" } } } }))
        .collect();
    let rule = if exclusive {
        serde_json::json!({ "oneOf": branches })
    } else {
        serde_json::json!({ "anyOf": branches })
    };
    let object = schema.ensure_object();
    match object
        .get_mut("allOf")
        .and_then(serde_json::Value::as_array_mut)
    {
        Some(all) => all.push(rule),
        None => {
            object.insert("allOf".into(), serde_json::json!([rule]));
        }
    }
}

/// Text that is more than white space.
pub fn not_blank(value: &str) -> Result<(), ValidationError> {
    if value.trim().is_empty() {
        Err(ValidationError::new("blank").with_message("must not be blank".into()))
    } else {
        Ok(())
    }
}

/// What the document says of a [`web_url`] (`#[schemars(pattern(..))]`): its
/// scheme and the start of a host. Wider than the rule (white space, and
/// what the WHATWG parser refuses, are refused too), never narrower.
pub const WEB_URL_PATTERN: &str = "^https?://[^/?#]";

/// An absolute `http` or `https` address with a host, that a browser (the
/// WHATWG parser) reads as written: `http://[` and `http://a]b` are refused.
/// It is answered back as given, so a client that parses it can.
pub fn web_url(value: &(impl Text + ?Sized)) -> Result<(), ValidationError> {
    let Some(value) = value.text() else {
        return Ok(());
    };
    let rest = value
        .strip_prefix("https://")
        .or_else(|| value.strip_prefix("http://"));
    // The parser would skip extra slashes (`https:///x` is `https://x/`):
    // the host must follow the scheme's `//` itself.
    let host_follows = rest
        .and_then(|r| r.chars().next())
        .is_some_and(|c| !matches!(c, '/' | '?' | '#'));
    if host_follows
        && !value.chars().any(char::is_whitespace)
        && url::Url::parse(value).is_ok_and(|u| u.host().is_some())
    {
        Ok(())
    } else {
        Err(ValidationError::new("url")
            .with_message("must be an absolute http or https address".into()))
    }
}

/// An e-mail address, by the rule of `validator`'s `email`, which this
/// replaces: a local part of ASCII letters, digits and
/// ``.!#$%&'*+/=?^_`{|}~-`` (HTML's "valid e-mail address"), at most 64
/// characters; `@`; and a domain of at most 255 characters, either a bracketed
/// IP address (`[192.0.2.1]`) or dot-separated labels of at most 63 characters:
/// ASCII letters, digits and inner hyphens. A label with other characters is
/// part of an internationalized domain (`münchen.de`, `例え。jp`): it is taken
/// unless it holds white space, control characters or ASCII punctuation, and
/// the ideographic full stops separate labels as dots do. (`validator` maps
/// such a domain through IDNA first; its rule also takes a literal after other
/// text, `a@b.com[::1]`, which this one refuses.) Written out because
/// `validator`'s compiles regular expressions: linking the `regex` engine cost
/// the contacts function 170 KB of binary and 0.3 MB at start
/// (docs/bench-results.md).
pub fn email(value: &(impl Text + ?Sized)) -> Result<(), ValidationError> {
    let Some(value) = value.text() else {
        return Ok(());
    };
    if is_email(value) {
        Ok(())
    } else {
        Err(ValidationError::new("email"))
    }
}

fn is_email(value: &str) -> bool {
    const LOCAL_SYMBOLS: &str = ".!#$%&'*+/=?^_`{|}~-";
    const FULL_STOPS: [char; 4] = ['.', '\u{3002}', '\u{ff0e}', '\u{ff61}'];
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
    domain.split(FULL_STOPS).all(|label| {
        let allowed = |c: char| {
            if c.is_ascii() {
                c.is_ascii_alphanumeric() || c == '-'
            } else {
                !c.is_whitespace() && !c.is_control()
            }
        };
        !label.is_empty()
            && label.chars().count() <= 63
            && !label.starts_with('-')
            && !label.ends_with('-')
            && label.chars().all(allowed)
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

pub fn channel_type(value: &(impl Text + ?Sized)) -> Result<(), ValidationError> {
    let Some(value) = value.text() else {
        return Ok(());
    };
    one_of(value, CHANNEL_TYPES)
}

pub fn lead_type(value: &(impl Text + ?Sized)) -> Result<(), ValidationError> {
    let Some(value) = value.text() else {
        return Ok(());
    };
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
        for address in [
            "maria@münchen.de",
            // Decomposed: u and a combining diaeresis.
            "maria@mu\u{308}nchen.de",
            // validator's own example: Devanagari, with viramas.
            "test@domain.with.idn.tld.उदाहरण.परीक्षा",
            "user@ตัวอย่าง.ไทย",
            "user@例え。jp",
        ] {
            assert!(is_email(address), "{address}");
        }
        for address in [
            "maria@mün chen.de",
            "maria@mün\u{0}chen.de",
            "maria@mün,chen.de",
            "maría@example.com",
        ] {
            assert!(!is_email(address), "{address}");
        }
    }

    /// The document is never narrower than the rule: every address the rule
    /// takes matches the pattern, and a wrong scheme or no host fails both.
    #[test]
    fn the_web_url_pattern_takes_what_the_rule_takes() {
        let pattern = regex_lite::Regex::new(WEB_URL_PATTERN).unwrap();
        for url in [
            "https://app.example.com",
            "http://localhost:8080/x?y=1#z",
            "https://exa_mple.com/",
            "https://[2001:db8::1]/",
            "https://user@example.com",
        ] {
            assert!(web_url(url).is_ok() && pattern.is_match(url), "{url}");
        }
        for url in [
            "ftp://example.com",
            "/relative",
            "https://",
            "https:///x",
            "HTTPS://x",
            "javascript:alert(1)",
        ] {
            assert!(web_url(url).is_err() && !pattern.is_match(url), "{url}");
        }
        // White space and what the parser refuses are the rule's alone: the
        // document is wider there. (`http://[` once crashed the contract
        // fuzzer, which parses the addresses it is answered.)
        for url in [
            "https://a b",
            "http://[",
            "http://a]b",
            "https://exa%mple.com",
        ] {
            assert!(web_url(url).is_err() && pattern.is_match(url), "{url}");
        }
    }

    #[test]
    fn email_refuses_a_literal_after_other_text() {
        // validator's literal pattern is not anchored at the start.
        assert!("a@example.com[127.0.0.1]".validate_email());
        assert!(!is_email("a@example.com[127.0.0.1]"));
    }
}
