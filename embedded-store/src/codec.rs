//! How items and keys become bytes in the engine, and what DynamoDB counts.
//!
//! A key is its strings in order, each escaped (`00` becomes `00 FF`) and ended
//! by `00 01`, so that byte order of the encoding is the order of the strings,
//! one after the other: the order DynamoDB gives sort keys within a partition.

use shared::store::{Index, Item, Key, StoreError};

/// Appends one string of a key.
fn push(out: &mut Vec<u8>, text: &str) {
    push_escaped(out, text);
    out.extend_from_slice(&[0, 1]);
}

/// Appends a string's bytes, each `00` as `00 FF`. Keys hold no `00` but
/// by accident, so they are copied whole when they have none (a byte at a
/// time was a twentieth of a batch's work).
fn push_escaped(out: &mut Vec<u8>, text: &str) {
    let bytes = text.as_bytes();
    if !bytes.contains(&0) {
        out.extend_from_slice(bytes);
        return;
    }
    for &b in bytes {
        out.push(b);
        if b == 0 {
            out.push(0xFF);
        }
    }
}

/// A string's bytes as a key holds them, without its terminator: a prefix of
/// the encoding of every string that starts with it.
pub(super) fn escaped(text: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(text.len() + 1);
    push_escaped(&mut out, text);
    out
}

/// The least byte string greater than every one that starts with `prefix`.
pub(super) fn successor(prefix: &[u8]) -> Option<Vec<u8>> {
    let mut out = prefix.to_vec();
    while let Some(last) = out.pop() {
        if last < 0xFF {
            out.push(last + 1);
            return Some(out);
        }
    }
    None
}

/// The engine key of strings in order.
pub(super) fn encode(parts: &[&str]) -> Vec<u8> {
    let mut out = Vec::with_capacity(parts.iter().map(|p| p.len() + 2).sum());
    for part in parts {
        push(&mut out, part);
    }
    out
}

pub(super) fn item_key(key: &Key) -> Vec<u8> {
    encode(&[&key.pk, &key.sk])
}

/// The least key past every key that starts with `prefix` (an encoded
/// partition): its last byte, the `01` of the terminator, becomes `02`.
pub(super) fn after_prefix(prefix: &[u8]) -> Vec<u8> {
    let mut end = prefix.to_vec();
    if let Some(last) = end.last_mut() {
        *last += 1;
    }
    end
}

/// The strings of an engine key.
#[cfg(test)]
fn decode(mut bytes: &[u8]) -> Vec<String> {
    let mut parts = Vec::new();
    let mut current = Vec::new();
    while let Some((&b, rest)) = bytes.split_first() {
        bytes = rest;
        if b != 0 {
            current.push(b);
            continue;
        }
        match bytes.split_first() {
            Some((0xFF, rest)) => {
                current.push(0);
                bytes = rest;
            }
            Some((_, rest)) => {
                parts.push(String::from_utf8_lossy(&current).into_owned());
                current.clear();
                bytes = rest;
            }
            None => break,
        }
    }
    parts
}

/// An item's bytes. `size`, its [`item_size`](shared::store::item_size),
/// sizes the buffer: the JSON adds about 6 bytes an attribute (quotes,
/// colon, comma), so it is written without growing.
pub(super) fn to_bytes(item: &Item, size: usize) -> Result<Vec<u8>, StoreError> {
    let mut out = Vec::with_capacity(size + 8 * item.len() + 2);
    write_object(&mut out, item)?;
    Ok(out)
}

/// An item as JSON, byte for byte as `serde_json::to_writer` writes it, but
/// with each string that needs no escape (nearly all) copied whole: serde_json
/// looks up each byte of each string in turn, which was a tenth of the work of
/// a batch of creates.
fn write_object(out: &mut Vec<u8>, map: &Item) -> Result<(), StoreError> {
    out.push(b'{');
    for (at, (name, value)) in map.iter().enumerate() {
        if at > 0 {
            out.push(b',');
        }
        write_str(out, name)?;
        out.push(b':');
        write_value(out, value)?;
    }
    out.push(b'}');
    Ok(())
}

fn write_value(out: &mut Vec<u8>, value: &serde_json::Value) -> Result<(), StoreError> {
    use serde_json::Value;
    match value {
        Value::Null => out.extend_from_slice(b"null"),
        Value::Bool(true) => out.extend_from_slice(b"true"),
        Value::Bool(false) => out.extend_from_slice(b"false"),
        Value::Number(n) => serde_json::to_writer(&mut *out, n).map_err(to_bytes_error)?,
        Value::String(s) => write_str(out, s)?,
        Value::Array(values) => {
            out.push(b'[');
            for (at, value) in values.iter().enumerate() {
                if at > 0 {
                    out.push(b',');
                }
                write_value(out, value)?;
            }
            out.push(b']');
        }
        Value::Object(map) => write_object(out, map)?,
    }
    Ok(())
}

fn write_str(out: &mut Vec<u8>, text: &str) -> Result<(), StoreError> {
    if needs_no_escape(text.as_bytes()) {
        out.push(b'"');
        out.extend_from_slice(text.as_bytes());
        out.push(b'"');
        Ok(())
    } else {
        serde_json::to_writer(&mut *out, text).map_err(to_bytes_error)
    }
}

/// No byte that JSON escapes (a control character, `"`, `\`): serde_json's
/// own set. Eight bytes at a time, by the bit tricks of "Bit Twiddling
/// Hacks" (a byte below 0x20; a byte equal to one given), exact for ASCII and
/// never set by the bytes of UTF-8 above it.
fn needs_no_escape(bytes: &[u8]) -> bool {
    const ONES: u64 = u64::from_ne_bytes([0x01; 8]);
    const HIGHS: u64 = u64::from_ne_bytes([0x80; 8]);
    let below = |v: u64, n: u8| v.wrapping_sub(ONES * u64::from(n)) & !v & HIGHS;
    let plain =
        |v: u64| below(v, 0x20) | below(v ^ (ONES * 0x22), 1) | below(v ^ (ONES * 0x5C), 1) == 0;
    let mut words = bytes.chunks_exact(8);
    let words_plain = words
        .by_ref()
        .all(|w| plain(u64::from_ne_bytes(w.try_into().expect("eight bytes"))));
    words_plain
        && words
            .remainder()
            .iter()
            .all(|&b| b >= 0x20 && b != b'"' && b != b'\\')
}

fn to_bytes_error(e: serde_json::Error) -> StoreError {
    StoreError::Other(format!("item to bytes: {e}"))
}

pub(super) fn from_bytes(bytes: &[u8]) -> Result<Item, StoreError> {
    serde_json::from_slice(bytes).map_err(|e| StoreError::Other(format!("stored item: {e}")))
}

/// The engine key of `item`'s entry in the index at `position` (of `key`),
/// if the item has one.
pub(super) fn index_key(position: usize, def: &Index, item: &Item, key: &Key) -> Option<Vec<u8>> {
    let ipk = item.get(def.pk)?.as_str()?;
    let isk = item.get(def.sk)?.as_str()?;
    let mut out = vec![position as u8];
    out.extend(encode(&[ipk, isk, &key.pk, &key.sk]));
    Some(out)
}

/// Read capacity as DynamoDB counts it: 4 KB units, halved when eventually consistent.
pub(super) fn read_units(bytes: usize, consistent: bool) -> f64 {
    let units = bytes.div_ceil(4096).max(1) as f64;
    if consistent { units } else { units / 2.0 }
}

/// Write capacity: 1 KB units.
pub(super) fn write_units(bytes: usize) -> f64 {
    bytes.div_ceil(1024).max(1) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn items_are_written_as_serde_json_writes_them() {
        let long = "a".repeat(70) + "\"" + &"b".repeat(40);
        let item = serde_json::json!({
            "pk": "ws#1#contact#s3", "sk": "0000000000000042",
            "plain": "Zoë, 東京 and an emoji 🙂", "empty": "",
            "quote": "say \"hi\"", "slash": "a\\b/c", "control": "tab\tnew\nline\u{1}\u{1f}",
            "del": "\u{7f}", "long": long,
            "numbers": [0, -1, 42, u64::MAX, i64::MIN, 1.5, -0.25, 1e300],
            "flags": [true, false, null],
            "nested": { "a": { "b": [[], {}, [{"c": "d\\"}]] }, "e\"f": 1 },
        });
        let serde_json::Value::Object(item) = item else {
            unreachable!()
        };
        let ours = to_bytes(&item, 0).unwrap();
        assert_eq!(
            String::from_utf8(ours).unwrap(),
            serde_json::to_string(&item).unwrap()
        );
    }

    #[test]
    fn only_what_json_escapes_needs_an_escape() {
        // Each ASCII byte, and one of UTF-8, at each place of two words and
        // the rest after them.
        for c in (0u8..=127).map(char::from).chain(['é', '東', '🙂']) {
            for at in 0..19 {
                let text = format!("{}{c}{}", "x".repeat(at), "y".repeat(18 - at));
                let escaped = serde_json::to_string(&text).unwrap() != format!("\"{text}\"");
                assert_eq!(!needs_no_escape(text.as_bytes()), escaped, "{c:?} at {at}");
            }
        }
    }

    #[test]
    fn a_key_string_with_a_zero_is_escaped() {
        assert_eq!(escaped("a\u{0}b"), b"a\x00\xffb");
        assert_eq!(escaped("ab"), b"ab");
    }

    #[test]
    fn encoded_keys_sort_like_their_strings() {
        let mut pairs = [
            ("a", "b"),
            ("a", ""),
            ("a", "ab"),
            ("a", "a\u{0}"),
            ("a\u{0}", ""),
            ("ab", ""),
            ("", "z"),
            ("a", "\u{ff}"),
        ];
        let mut encoded: Vec<Vec<u8>> = pairs.iter().map(|(p, s)| encode(&[p, s])).collect();
        pairs.sort();
        encoded.sort();
        let decoded: Vec<(String, String)> = encoded
            .iter()
            .map(|e| {
                let d = decode(e);
                (d[0].clone(), d[1].clone())
            })
            .collect();
        let want: Vec<(String, String)> = pairs
            .iter()
            .map(|(p, s)| (p.to_string(), s.to_string()))
            .collect();
        assert_eq!(decoded, want);
    }

    #[test]
    fn a_partition_is_one_key_range() {
        let start = encode(&["W#1#TAG"]);
        let end = after_prefix(&start);
        for inside in [encode(&["W#1#TAG", ""]), encode(&["W#1#TAG", "\u{10ffff}"])] {
            assert!(start <= inside && inside < end);
        }
        for outside in [
            encode(&["W#1#TAGS", ""]),
            encode(&["W#1#TA", "G"]),
            encode(&["W#1#TAG\u{0}", ""]),
        ] {
            assert!(!(start <= outside && outside < end), "{outside:?}");
        }
    }
}
