//! Personal data, declared per record type.
//!
//! Every [`Record`] says, in [`Record::PERSONAL`], which of its stored text
//! attributes are a person's data (a contact's name, a deal's copy of it),
//! which are text others write that may quote a person (a deal's name, a
//! session's summary) and which hold nobody's (ids, states, codes, times).
//! An erasure builds each record's scrubbed state with [`erased`]: the
//! first cleared, the person's values blanked in the second, the third kept;
//! written through the record's own write path, so that its index items and
//! digests (projections of the record) are written again without them. The
//! values an erasure looks for in copies are read with [`values`]. A record
//! that stores text it has not declared is refused by [`check`] in debug
//! builds (every test), so a new field cannot slip past an erasure.
//!
//! A path names a stored attribute (`name`), a member of one (`contact.phone`;
//! an array's elements share its path) or every member of a map (`custom.*`);
//! a path declares everything below it.

use serde_json::Value;

use super::Record;
use crate::error::{ApiError, ApiResult};
use crate::store::Item;

/// What of a record type is a person's data.
#[derive(Debug, Clone, Copy)]
pub struct Personal {
    /// A person's data: cleared by an erasure.
    pub fields: &'static [&'static str],
    /// Text others write that may quote a person: an erasure blanks the
    /// person's values in it.
    pub copies: &'static [&'static str],
    /// Nobody's: kept by an erasure.
    pub plain: &'static [&'static str],
}

impl Personal {
    /// A record that holds nobody's data: every text of it plain.
    pub const fn none(plain: &'static [&'static str]) -> Self {
        Self {
            fields: &[],
            copies: &[],
            plain,
        }
    }
}

/// Written to every item by the layers below the record: keys, index keys,
/// the entity type and the stamps.
const FRAME: [&str; 8] = [
    "pk",
    "sk",
    "gsi1pk",
    "gsi1sk",
    "_type",
    "createdAt",
    "lastUpdateAt",
    "updatedAt",
];

fn covers(declared: &str, path: &[&str]) -> bool {
    let mut at = 0;
    for segment in declared.split('.') {
        match path.get(at) {
            Some(p) if segment == "*" || segment == *p => at += 1,
            _ => return false,
        }
    }
    true
}

fn declared(personal: &Personal, path: &[&str]) -> bool {
    (path.len() == 1 && FRAME.contains(&path[0]))
        || personal
            .fields
            .iter()
            .chain(personal.copies)
            .chain(personal.plain)
            .any(|d| covers(d, path))
}

/// The paths of every text in `value` (but empty ones), each once.
fn text_paths(value: &Value, path: &mut Vec<String>, out: &mut Vec<String>) {
    match value {
        Value::String(text) if text.is_empty() => {}
        Value::String(_) => {
            let shown = path.join(".");
            if !out.contains(&shown) {
                out.push(shown);
            }
        }
        Value::Array(items) => items.iter().for_each(|item| text_paths(item, path, out)),
        Value::Object(map) => {
            for (name, member) in map {
                path.push(name.clone());
                text_paths(member, path, out);
                path.pop();
            }
        }
        _ => {}
    }
}

fn texts(value: &Value) -> Vec<String> {
    let mut out = Vec::new();
    text_paths(value, &mut Vec::new(), &mut out);
    out
}

/// The text attributes of `item`, an `R` about to be written, that `R`
/// does not declare personal or plain.
pub fn missing<R: Record>(item: &Value) -> Vec<String> {
    undeclared(&R::PERSONAL, item)
}

fn undeclared(personal: &Personal, item: &Value) -> Vec<String> {
    let mut out = Vec::new();
    unsaid(personal, item, &mut Vec::new(), &mut out);
    out
}

/// Walks `value` down to what is declared (which declares all below it):
/// the paths of the text left, each once. Allocates for those only, since
/// it runs on every write of a debug build.
fn unsaid<'a>(
    personal: &Personal,
    value: &'a Value,
    path: &mut Vec<&'a str>,
    out: &mut Vec<String>,
) {
    if !path.is_empty() && declared(personal, path) {
        return;
    }
    match value {
        Value::String(text) if !text.is_empty() => {
            let shown = path.join(".");
            if !out.contains(&shown) {
                out.push(shown);
            }
        }
        Value::Array(items) => items
            .iter()
            .for_each(|item| unsaid(personal, item, path, out)),
        Value::Object(map) => {
            for (name, member) in map {
                path.push(name);
                unsaid(personal, member, path, out);
                path.pop();
            }
        }
        _ => {}
    }
}

/// The text of `item`, an `R`, at its personal paths: none once erased.
pub fn held<R: Record>(item: &Value) -> Vec<String> {
    let mut paths = texts(item);
    paths.retain(|p| R::PERSONAL.fields.iter().any(|d| covers(d, &segments(p))));
    paths
}

/// Refuses (in debug builds: every test, `cargo run`) an item of `R` that
/// stores text `R` has not declared: a 500 that names the attribute, so the
/// test that wrote it fails.
pub fn check<R: Record>(item: &Value) -> ApiResult<()> {
    if !cfg!(debug_assertions) {
        return Ok(());
    }
    let missing = missing::<R>(item);
    if missing.is_empty() {
        return Ok(());
    }
    Err(ApiError::internal(format!(
        "{} stores text at {} without declaring whether it is personal (Record::PERSONAL)",
        R::TYPE,
        missing.join(", ")
    )))
}

/// Calls `at` with each value at `path` in `value` (through arrays, every
/// member for a `*`), and the member's name and map to remove it with.
fn each_at(value: &mut Value, path: &[&str], at: &mut dyn FnMut(&mut Value)) {
    let Some((first, rest)) = path.split_first() else {
        return at(value);
    };
    match value {
        Value::Array(items) => items.iter_mut().for_each(|item| each_at(item, path, at)),
        Value::Object(map) => {
            for (name, member) in map.iter_mut() {
                if *first == "*" || name == first {
                    each_at(member, rest, at);
                }
            }
        }
        _ => {}
    }
}

/// Removes the members at `path`.
fn remove(value: &mut Value, path: &[&str]) {
    let Some((last, parent)) = path.split_last() else {
        return;
    };
    each_at(value, parent, &mut |holder| match holder {
        Value::Object(map) if *last == "*" => map.clear(),
        Value::Object(map) => {
            map.remove(*last);
        }
        Value::Array(items) => items
            .iter_mut()
            .for_each(|item| remove(item, std::slice::from_ref(last))),
        _ => {}
    });
}

/// Empties every text below `value` that `theirs` says is the person's.
fn blank(value: &mut Value, theirs: &dyn Fn(&str) -> bool) {
    match value {
        Value::String(text) if theirs(text) => text.clear(),
        Value::Array(items) => items.iter_mut().for_each(|item| blank(item, theirs)),
        Value::Object(map) => map.values_mut().for_each(|member| blank(member, theirs)),
        _ => {}
    }
}

fn segments(path: &str) -> Vec<&str> {
    path.split('.').collect()
}

/// Scrubs `value`, an `R` as stored (an item, a record's JSON): its
/// personal fields removed and, in its copies, each text that `theirs`
/// says is the person's emptied.
pub fn erase_value<R: Record>(value: &mut Value, theirs: &dyn Fn(&str) -> bool) {
    for path in R::PERSONAL.fields {
        remove(value, &segments(path));
    }
    for path in R::PERSONAL.copies {
        each_at(value, &segments(path), &mut |copy| blank(copy, theirs));
    }
}

/// [`erase_value`] of a stored item.
pub fn erase_item<R: Record>(item: &mut Item, theirs: &dyn Fn(&str) -> bool) {
    let mut value = Value::Object(std::mem::take(item));
    erase_value::<R>(&mut value, theirs);
    if let Value::Object(scrubbed) = value {
        *item = scrubbed;
    }
}

/// `record` as an erasure leaves it ([`erase_value`]): an optional field
/// left empty. A personal field the record cannot be without is a
/// declaration to mend: an error, caught by the item-shape tests, which
/// erase every stored entity.
pub fn erased<R: Record>(record: &R, theirs: &dyn Fn(&str) -> bool) -> ApiResult<R> {
    let mut value = serde_json::to_value(record).map_err(ApiError::internal)?;
    erase_value::<R>(&mut value, theirs);
    serde_json::from_value(value).map_err(|e| {
        ApiError::internal(format!(
            "{} cannot be without its personal data: {e}",
            R::TYPE
        ))
    })
}

/// The person's values in `value`, a stored `R` or its copy (an event's
/// object): the text at each top-level personal attribute, as
/// `(attribute, value)`.
pub fn values<R: Record>(value: &Value) -> Vec<(String, String)> {
    let Some(object) = value.as_object() else {
        return Vec::new();
    };
    R::PERSONAL
        .fields
        .iter()
        .filter(|path| !path.contains('.'))
        .filter_map(|&member| {
            let text = object.get(member)?.as_str()?.trim();
            (!text.is_empty()).then(|| (member.to_owned(), text.to_owned()))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const DEAL: Personal = Personal {
        fields: &["contact.name", "custom.*"],
        copies: &["title"],
        plain: &["name", "tags"],
    };

    #[test]
    fn a_path_declares_what_is_below_it_and_a_star_any_member() {
        assert!(declared(&DEAL, &["contact", "name"]));
        assert!(declared(&DEAL, &["custom", "anything"]));
        assert!(declared(&DEAL, &["tags"]));
        assert!(declared(&DEAL, &["pk"]));
        assert!(!declared(&DEAL, &["contact", "phone"]));
        assert!(
            !declared(&DEAL, &["contact", "pk"]),
            "the frame is top level only"
        );
    }

    #[test]
    fn undeclared_text_is_named_once_and_arrays_share_their_path() {
        let item = json!({
            "pk": "W#1", "name": "Renewal", "version": 3,
            "contact": {"name": "Ana", "phone": "+5511"},
            "notes": ["a", "b"], "tags": ["x"]
        });
        let mut out = undeclared(&DEAL, &item);
        out.sort();
        assert_eq!(out, ["contact.phone", "notes"]);
    }

    #[test]
    fn removing_a_path_reaches_into_arrays_and_maps() {
        let mut value = json!({
            "people": [{"name": "Ana", "id": 1}, {"name": "Rui", "id": 2}],
            "custom": {"a": "x", "b": "y"},
            "phones": ["+5511", "+5512"]
        });
        remove(&mut value, &["people", "name"]);
        remove(&mut value, &["custom", "*"]);
        remove(&mut value, &["phones"]);
        assert_eq!(
            value,
            json!({"people": [{"id": 1}, {"id": 2}], "custom": {}})
        );
    }

    #[test]
    fn in_a_copy_only_the_persons_text_is_blanked() {
        let mut value = json!({"title": ["Plan for Ana", "Plan"], "name": "Ana"});
        each_at(&mut value, &["title"], &mut |copy| {
            blank(copy, &|t| t.contains("Ana"))
        });
        assert_eq!(value, json!({"title": ["", "Plan"], "name": "Ana"}));
    }
}
