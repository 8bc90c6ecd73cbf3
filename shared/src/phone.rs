//! Phone identity: one canonical form (E.164, `+5511987654321`) for every path
//! that takes a phone (create, patch, search, filters, find-or-create, import),
//! so that a person written in five ways is one contact.
//!
//! Numbers without a country code are Brazilian (the platform's home). For them,
//! and for `+55`, a fast path understands:
//! - formatting: spaces, `-`, `.`, `(`, `)` and `/`;
//! - the country code with or without `+` (`5511987654321`), or after `00`;
//! - the trunk prefix `0` and a carrier code after it (`0 21 11 98765-4321`);
//! - the ninth digit: a mobile number of an area code is written with and
//!   without the extra 9 (`11 8765-4321` is `11 98765-4321`). Mobile numbers are
//!   the ones whose 8-digit subscriber number starts with 6 to 9. Landlines (2 to 5)
//!   are never given a ninth digit.
//!
//! Other international numbers (`+44 20 7946 0958`) are checked against their
//! country's numbering plan by `rlibphonenumber` (Google's libphonenumber
//! metadata). It loads its metadata (a few ms) on first use, so it stays off
//! the common path and off the cold start. It runs on `regex-lite`: the
//! `regex` crate's Unicode tables, which the earlier `phonenumber` crate
//! turned on for every function, cost contacts about 0.4 MB of memory at
//! start (docs/bench-results.md).

/// Why a phone was refused; the message is for the API client.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PhoneError(pub &'static str);

impl std::fmt::Display for PhoneError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.0)
    }
}

const NOT_A_PHONE: PhoneError = PhoneError("is not a phone number");
const NEEDS_AREA_CODE: PhoneError = PhoneError("needs an area code, or a country code with +");

/// The canonical E.164 form of a phone, or why it is not one.
pub fn canonical(input: &str) -> Result<String, PhoneError> {
    let trimmed = input.trim();
    let plus = trimmed.starts_with('+');
    let mut digits = String::with_capacity(trimmed.len());
    for (i, c) in trimmed.chars().enumerate() {
        match c {
            '0'..='9' => digits.push(c),
            '+' if i == 0 => {}
            ' ' | '-' | '.' | '(' | ')' | '/' => {}
            _ => {
                return Err(PhoneError(
                    "may hold only digits, a leading +, spaces and - . ( ) /",
                ));
            }
        }
    }
    if digits.len() < 8 || digits.len() > 17 {
        return Err(NOT_A_PHONE);
    }
    if plus {
        return international(&digits);
    }
    if let Some(rest) = digits.strip_prefix("00") {
        return international(rest);
    }
    match (digits.len(), digits.as_bytes()[0]) {
        // 55 + area + number: the country code without `+`.
        (12 | 13, _) if digits.starts_with("55") => brazil(&digits[2..]),
        // Trunk prefix 0, then the area code.
        (11 | 12, b'0') => brazil(&digits[1..]),
        // Trunk prefix 0, a two-digit carrier code, then the area code.
        (13 | 14, b'0') => brazil(&digits[3..]),
        (10 | 11, _) => brazil(&digits),
        (8 | 9, _) => Err(NEEDS_AREA_CODE),
        _ => Err(NOT_A_PHONE),
    }
}

/// Digits after a `+` (or `00`).
fn international(digits: &str) -> Result<String, PhoneError> {
    if let Some(national) = digits.strip_prefix("55") {
        return brazil(national);
    }
    let util = &*rlibphonenumber::PHONE_NUMBER_UTIL;
    let number = util
        .parse(format!("+{digits}"), None)
        .map_err(|_| NOT_A_PHONE)?;
    if !util.is_valid_number(&number) {
        return Err(NOT_A_PHONE);
    }
    Ok(util
        .format(&number, rlibphonenumber::PhoneNumberFormat::E164)
        .into_owned())
}

/// A Brazilian national number (area code + subscriber number).
fn brazil(national: &str) -> Result<String, PhoneError> {
    let bytes = national.as_bytes();
    // Area codes are 11 to 99 and never contain a 0.
    if bytes.len() < 10 || bytes[0] == b'0' || bytes[1] == b'0' {
        return Err(NOT_A_PHONE);
    }
    let (area, subscriber) = national.split_at(2);
    match (subscriber.len(), subscriber.as_bytes()[0]) {
        (9, b'9') => Ok(format!("+55{area}{subscriber}")),
        // A mobile written without the ninth digit.
        (8, b'6'..=b'9') => Ok(format!("+55{area}9{subscriber}")),
        // A landline.
        (8, b'2'..=b'5') => Ok(format!("+55{area}{subscriber}")),
        _ => Err(NOT_A_PHONE),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_variants_of_one_mobile_are_one_phone() {
        for variant in [
            "+55 11 98765-4321",
            "11987654321",
            "1187654321",
            "5511987654321",
            "(11) 8765-4321",
            "+55 (11) 8765-4321",
            "551187654321",
            "011 98765 4321",
            "0 21 11 98765-4321",
            "0055 11 98765 4321",
            "11.98765.4321",
        ] {
            assert_eq!(
                canonical(variant).as_deref(),
                Ok("+5511987654321"),
                "{variant}"
            );
        }
    }

    #[test]
    fn a_landline_never_gets_a_ninth_digit() {
        for variant in [
            "(11) 3456-7890",
            "+55 11 3456-7890",
            "1134567890",
            "551134567890",
            "011 3456 7890",
        ] {
            assert_eq!(
                canonical(variant).as_deref(),
                Ok("+551134567890"),
                "{variant}"
            );
        }
    }

    #[test]
    fn area_code_55_is_not_a_country_code() {
        // Rio Grande do Sul: 11 digits starting with 55 is an area code and a mobile.
        assert_eq!(canonical("55 98765-4321").as_deref(), Ok("+5555987654321"));
    }

    #[test]
    fn other_countries_are_validated_against_their_numbering_plans() {
        for (written, e164) in [
            ("+44 20 7946 0958", "+442079460958"),
            ("+1 (415) 555-2671", "+14155552671"),
            ("0049 30 901820", "+4930901820"),
            ("+351 912 345 678", "+351912345678"),
            ("+54 9 11 2345-6789", "+5491123456789"),
        ] {
            assert_eq!(canonical(written).as_deref(), Ok(e164), "{written}");
        }
        for bad in [
            "+1 555",
            // No country has the calling code 999.
            "+999 1234 5678",
            // Too long for the United Kingdom's plan.
            "+44 20 7946 0958 123",
            // A US area code may not start with 1.
            "+1 115 555 2671",
        ] {
            assert!(canonical(bad).is_err(), "{bad}");
        }
    }

    /// The numbering plans come from a crate this code does not control, and a
    /// panic would end the process (release builds abort): every `+` and 6 to
    /// 17 digits, the only shape that reaches it (`00` and 6 digits is the
    /// shortest), gives an answer.
    #[test]
    fn any_international_digits_get_an_answer() {
        let mut state = 0x2545_f491_4f6c_dd1d_u64;
        let mut accepted = 0;
        for n in 0..20_000 {
            let len = 6 + n % 12;
            let digits: String = (0..len)
                .map(|_| {
                    // xorshift: the same inputs on every run.
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    char::from(b'0' + (state % 10) as u8)
                })
                .collect();
            let written = if (n / 12) % 2 == 0 {
                format!("+{digits}")
            } else {
                format!("00{digits}")
            };
            if let Ok(e164) = canonical(&written) {
                assert!(e164.starts_with('+') && e164[1..].bytes().all(|b| b.is_ascii_digit()));
                accepted += 1;
            }
        }
        assert!(accepted > 100, "only {accepted} accepted");
    }

    #[test]
    fn refuses_what_is_not_a_phone() {
        for bad in [
            "",
            "abc",
            "12345",
            "8765-4321",
            "(00) 98765-4321",
            "11 18765-4321",
            "+55 11 8765",
            "11 98765-4321 ext 5",
            "1".repeat(20).as_str(),
        ] {
            assert!(canonical(bad).is_err(), "{bad}");
        }
    }
}
