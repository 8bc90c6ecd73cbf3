//! Query strings with groupings, as the spec's deal list (and session reports)
//! take them: the same parameter may come flat (`status=won`), nested in a
//! grouping (`filters[status]=won`, `filters[stageId][]=a`), or as JSON in a
//! grouping (`filters={"status":"won","stageId":["a","b"]}`); `sort[value]=asc`
//! is `sortBy=value&sort=asc`. Lists also come as `x=a&x=b`, `x[]=a` or `x=a,b`.
//!
//! [`parse`] flattens every form into one JSON object of the right types and
//! hands it to serde, so the target struct checks it strictly (unknown
//! parameters and bad values are a 400 naming the parameter).

use std::collections::BTreeMap;

use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use crate::error::{ApiError, ApiResult};

/// What a list's query takes besides strings.
pub struct QuerySpec {
    /// Parameters that take a list.
    pub lists: &'static [&'static str],
    /// Parameters (or list members) that are whole numbers.
    pub numbers: &'static [&'static str],
    pub bools: &'static [&'static str],
    /// The groupings whose members are the same parameters.
    pub groups: &'static [&'static str],
}

/// A query type read in the grouped forms; `http::Grouped<T>` extracts it.
pub trait GroupedQuery: DeserializeOwned {
    const SPEC: QuerySpec;
}

/// Parses a raw query string in every form described above into `T`.
pub fn parse<T: DeserializeOwned>(raw: &str, spec: &QuerySpec) -> ApiResult<T> {
    let object = flatten(raw, spec)?;
    crate::error::from_value(&Value::Object(object))
}

/// The flat JSON object of a query string (see the module).
pub fn flatten(raw: &str, spec: &QuerySpec) -> ApiResult<Map<String, Value>> {
    let mut params: BTreeMap<String, Vec<Value>> = BTreeMap::new();
    let mut push =
        |name: &str, value: Value| params.entry(name.to_owned()).or_default().push(value);
    for (key, value) in form_urlencoded::parse(raw.as_bytes()) {
        let key = key.strip_suffix("[]").unwrap_or(&key).to_owned();
        if let Some((group, inner)) = key.split_once('[') {
            let inner = inner.trim_end_matches(']').trim_end_matches("][");
            if group == "sort" {
                push("sortBy", Value::String(inner.to_owned()));
                push("sort", Value::String(value.into_owned()));
                continue;
            }
            if !spec.groups.contains(&group) {
                return Err(ApiError::field(key.clone(), "is not a known field"));
            }
            push(inner, Value::String(value.into_owned()));
        } else if spec.groups.contains(&key.as_str())
            || (key == "sort" && value.trim_start().starts_with('{'))
        {
            let Ok(Value::Object(members)) = serde_json::from_str::<Value>(&value) else {
                return Err(ApiError::field(
                    key,
                    "must be a JSON object or the nested form (filters[status]=won)",
                ));
            };
            for (name, member) in members {
                if key == "sort" {
                    push("sortBy", Value::String(name));
                    push("sort", member);
                } else if let Value::Array(values) = member {
                    values.into_iter().for_each(|v| push(&name, v));
                } else {
                    push(&name, member);
                }
            }
        } else {
            push(&key, Value::String(value.into_owned()));
        }
    }
    let mut object = Map::new();
    for (name, values) in params {
        let is_list = spec.lists.contains(&name.as_str());
        let typed: Vec<Value> = values
            .into_iter()
            .flat_map(|v| match v {
                // `a,b` is two values; JSON (`[{"type":"x","id":1}]`) is one.
                Value::String(s) if is_list && !s.trim_start().starts_with(['[', '{']) => s
                    .split(',')
                    .filter(|p| !p.is_empty())
                    .map(|p| Value::String(p.to_owned()))
                    .collect(),
                other => vec![other],
            })
            .map(|v| coerce(spec, &name, v))
            .collect::<ApiResult<_>>()?;
        let value = if is_list {
            Value::Array(typed)
        } else {
            // A parameter given twice: the last one counts, as in most web stacks.
            typed.into_iter().last().unwrap_or(Value::Null)
        };
        object.insert(name, value);
    }
    Ok(object)
}

/// A string of the query into the JSON type its parameter takes.
fn coerce(spec: &QuerySpec, name: &str, value: Value) -> ApiResult<Value> {
    let Value::String(text) = &value else {
        return Ok(value);
    };
    if spec.numbers.contains(&name) {
        return text
            .trim()
            .parse::<u64>()
            .map(Value::from)
            .map_err(|_| ApiError::field(name, "must be a whole number"));
    }
    if spec.bools.contains(&name) {
        return match text.as_str() {
            "true" => Ok(Value::Bool(true)),
            "false" => Ok(Value::Bool(false)),
            _ => Err(ApiError::field(name, "must be true or false")),
        };
    }
    Ok(value)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const SPEC: QuerySpec = QuerySpec {
        lists: &["stageId", "tagIds"],
        numbers: &["limit", "tagIds"],
        bools: &["isOwner"],
        groups: &["filters", "meta"],
    };

    fn flat(raw: &str) -> Value {
        Value::Object(flatten(raw, &SPEC).unwrap())
    }

    fn problem(raw: &str) -> String {
        let e = flatten(raw, &SPEC).unwrap_err();
        format!("{}: {}", e.details[0].field, e.details[0].problem)
    }

    #[test]
    fn the_three_forms_of_a_filter_are_one_filter() {
        let want = json!({ "status": "won" });
        assert_eq!(flat("status=won"), want);
        assert_eq!(flat("filters[status]=won"), want);
        assert_eq!(flat("filters=%7B%22status%22%3A%22won%22%7D"), want);
    }

    #[test]
    fn lists_come_repeated_bracketed_comma_separated_or_as_json() {
        let want = json!({ "stageId": ["a", "b"] });
        assert_eq!(flat("stageId=a&stageId=b"), want);
        assert_eq!(flat("stageId[]=a&stageId[]=b"), want);
        assert_eq!(flat("stageId=a,b"), want);
        assert_eq!(flat("filters[stageId][]=a&filters[stageId][]=b"), want);
        assert_eq!(
            flat("filters=%7B%22stageId%22%3A%5B%22a%22%2C%22b%22%5D%7D"),
            want
        );
    }

    #[test]
    fn a_json_list_value_is_not_split_at_its_commas() {
        assert_eq!(
            flat("stageId=%5B%7B%22a%22%3A1%2C%22b%22%3A2%7D%5D"),
            json!({ "stageId": ["[{\"a\":1,\"b\":2}]"] })
        );
    }

    #[test]
    fn numbers_and_booleans_are_typed_and_checked() {
        assert_eq!(
            flat("limit=5&isOwner=true&tagIds=1,2"),
            json!({ "limit": 5, "isOwner": true, "tagIds": [1, 2] })
        );
        assert_eq!(problem("limit=five"), "limit: must be a whole number");
        assert_eq!(problem("isOwner=yes"), "isOwner: must be true or false");
    }

    #[test]
    fn sort_names_its_field() {
        let want = json!({ "sortBy": "value", "sort": "asc" });
        assert_eq!(flat("sort[value]=asc"), want);
        assert_eq!(flat("sort=%7B%22value%22%3A%22asc%22%7D"), want);
    }

    #[test]
    fn unknown_groupings_and_bad_json_are_refused() {
        assert_eq!(
            problem("other[status]=won"),
            "other[status]: is not a known field"
        );
        assert!(problem("filters=nope").starts_with("filters: must be a JSON object"));
    }

    #[test]
    fn the_last_of_a_repeated_single_parameter_counts() {
        assert_eq!(flat("status=open&status=won"), json!({ "status": "won" }));
    }
}
