//! How items and keys become bytes in the engine, and what DynamoDB counts.
//!
//! A key is its strings in order, each escaped (`00` becomes `00 FF`) and ended
//! by `00 01`, so that byte order of the encoding is the order of the strings,
//! one after the other: the order DynamoDB gives sort keys within a partition.

use shared::store::{Index, Item, Key, StoreError};

/// Appends one string of a key.
fn push(out: &mut Vec<u8>, text: &str) {
    for &b in text.as_bytes() {
        out.push(b);
        if b == 0 {
            out.push(0xFF);
        }
    }
    out.extend_from_slice(&[0, 1]);
}

/// A string's bytes as a key holds them, without its terminator: a prefix of
/// the encoding of every string that starts with it.
pub(super) fn escaped(text: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(text.len() + 1);
    for &b in text.as_bytes() {
        out.push(b);
        if b == 0 {
            out.push(0xFF);
        }
    }
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
    serde_json::to_writer(&mut out, item)
        .map_err(|e| StoreError::Other(format!("item to bytes: {e}")))?;
    Ok(out)
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
