//! An item as DynamoDB counts it (its size, for the 400 KB limit and the
//! capacity units of the embedded store) and keeps it (its numbers).

use serde_json::Value;

use super::Item;

/// The size of an item as DynamoDB counts it, near enough: names plus values.
pub fn item_size(item: &Item) -> usize {
    item.iter()
        .map(|(name, value)| name.len() + value_size(value))
        .sum()
}

/// The characters of a number as JSON writes it, without writing it: every
/// read counts its item's size, and most numbers are integers.
fn number_chars(n: &serde_json::Number) -> usize {
    let digits = |u: u64| u.checked_ilog10().map_or(1, |d| d as usize + 1);
    match (n.as_u64(), n.as_i64()) {
        (Some(u), _) => digits(u),
        (None, Some(i)) => 1 + digits(i.unsigned_abs()),
        _ => n.to_string().len(),
    }
}

fn value_size(value: &Value) -> usize {
    match value {
        Value::Null | Value::Bool(_) => 1,
        Value::Number(n) => number_chars(n).div_ceil(2) + 1,
        Value::String(s) => s.len(),
        Value::Array(values) => 3 + values.iter().map(|v| 1 + value_size(v)).sum::<usize>(),
        Value::Object(map) => {
            3 + map
                .iter()
                .map(|(k, v)| 1 + k.len() + value_size(v))
                .sum::<usize>()
        }
    }
}

/// DynamoDB keeps numbers as decimals: `1.0` reads back as `1`. So do the
/// stores here, so that an item reads back alike from both.
/// Whether [`as_dynamodb_number`] would change `value`: a store that
/// encodes an item where it is copies it only then.
pub fn is_dynamodb_number(value: &Value) -> bool {
    match value {
        Value::Number(n) => {
            !(n.is_f64()
                && n.as_f64()
                    .is_some_and(|f| f.fract() == 0.0 && f.abs() < 9.007_199_254_740_992e15))
        }
        Value::Array(values) => values.iter().all(is_dynamodb_number),
        Value::Object(map) => map.values().all(is_dynamodb_number),
        _ => true,
    }
}

pub fn as_dynamodb_number(value: &mut Value) {
    match value {
        Value::Number(n) => {
            if let Some(f) = n.as_f64()
                && n.is_f64()
                && f.fract() == 0.0
                && f.abs() < 9.007_199_254_740_992e15
            {
                *value = Value::from(f as i64);
            }
        }
        Value::Array(values) => values.iter_mut().for_each(as_dynamodb_number),
        Value::Object(map) => map.values_mut().for_each(as_dynamodb_number),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn is_dynamodb_number_says_whether_as_dynamodb_number_changes_a_value() {
        for value in [
            json!(1),
            json!(1.0),
            json!(-3.0),
            json!(1.5),
            json!(1e300),
            json!("1.0"),
            json!([1, 2.0]),
            json!([1, 2.5]),
            json!({ "a": { "b": 7.0 } }),
            json!({ "a": { "b": 7.25 }, "c": null }),
        ] {
            let mut normalized = value.clone();
            as_dynamodb_number(&mut normalized);
            assert_eq!(is_dynamodb_number(&value), normalized == value, "{value}");
        }
    }

    #[test]
    fn a_number_counts_the_characters_json_writes() {
        let numbers = [
            json!(0),
            json!(9),
            json!(10),
            json!(1_000_000_000_000_u64),
            json!(u64::MAX),
            json!(-1),
            json!(-10),
            json!(i64::MIN),
            json!(1.5),
            json!(-0.25),
        ];
        for value in numbers {
            let Value::Number(n) = &value else {
                unreachable!()
            };
            assert_eq!(number_chars(n), n.to_string().len(), "{n}");
        }
    }
}
