//! Stored item shapes, pinned. `item_shapes/<group>.json` holds one item of
//! every stored entity of a group exactly as this version writes it (taken
//! from a running store), and the group's module a test (`mod shapes`) that
//! reads each literal back into its record and writes the record again: the
//! item must come out equal, key attributes, index keys and `_type` included.
//! A renamed or retyped field, in a record or in a view that shares its
//! struct, fails there before it can make stored items unreadable. Changing
//! a shape on purpose means changing the literal, and saying how items
//! already stored are read (a default, an alias, a migration).
//!
//! A group's new records are its own new files and lines: the helpers here,
//! and [`every_record_type_is_pinned`], which fails for a record type that
//! no shape test reads.

use serde_json::{Map, Value};

use crate::record::{self, Record, personal};
use crate::store::Item;
use crate::store::as_dynamodb_number;

const FOLDER: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/src/domain/item_shapes");

/// Every pinned item, by entity, from all the groups' files (an entity
/// pinned twice is refused).
fn all_literals() -> Map<String, Value> {
    let mut all = Map::new();
    for entry in std::fs::read_dir(FOLDER).expect("item_shapes/") {
        let path = entry.expect("an entry").path();
        let text = std::fs::read_to_string(&path).expect("a file");
        let items: Map<String, Value> =
            serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        for (entity, item) in items {
            assert!(
                all.insert(entity.clone(), item).is_none(),
                "{entity} is pinned twice"
            );
        }
    }
    all
}

/// The pinned item of `entity`.
pub(crate) fn literal(entity: &str) -> Item {
    match all_literals().remove(entity) {
        Some(Value::Object(item)) => item,
        _ => panic!("no literal item for {entity} in item_shapes/"),
    }
}

/// An item as the store keeps it (whole floats read back as integers).
pub(crate) fn stored(item: Item) -> Value {
    let mut value = Value::Object(item);
    as_dynamodb_number(&mut value);
    value
}

/// Reads the literal item into `R` and writes it back: the same item. Its
/// text is declared, and the record reads once erased by the declaration.
pub(crate) fn round_trip<R: Record>(entity: &str) -> R {
    let record = kept::<R>(entity);
    // With every text of its copies taken for the person's, it still reads.
    let mut erased = serde_json::to_value(&record).expect("a value");
    personal::erase_value::<R>(&mut erased, &|_| true);
    let erased: R = serde_json::from_value(erased)
        .unwrap_or_else(|e| panic!("{entity} cannot be without its personal data: {e}"));
    let left = personal::held::<R>(&serde_json::to_value(&erased).expect("a value"));
    assert!(
        left.is_empty(),
        "{entity} keeps personal text once erased: {left:?}"
    );
    record
}

/// [`round_trip`] of a record an erasure deletes whole.
pub(crate) fn round_trip_deleted<R: Record>(entity: &str) -> R {
    kept::<R>(entity)
}

/// The literal read and written again, and its text declared.
fn kept<R: Record>(entity: &str) -> R {
    let item = literal(entity);
    let record: R = record::from_item(item.clone())
        .unwrap_or_else(|e| panic!("{entity} does not read back: {}", e.message));
    let written = record::to_item(&record).expect("an item");
    assert_eq!(
        stored(written),
        stored(item.clone()),
        "the stored shape of {entity} changed"
    );
    let undeclared = personal::missing::<R>(&Value::Object(item));
    assert!(
        undeclared.is_empty(),
        "{entity} stores text not declared personal or plain (Record::PERSONAL): {undeclared:?}"
    );
    record
}

#[test]
fn audit_entries_and_events_keep_their_shape() {
    round_trip::<crate::record::AuditEntry>("AuditEntry");
    texts_declared::<crate::record::AuditEntry>();
    round_trip::<crate::record::StoredEvent>("Event");
}

/// The text paths of a record's JSON Schema: every field that can hold a
/// string (or any value), optional ones included, which no pinned literal
/// or test needs to have written.
fn schema_texts<R: schemars::JsonSchema>() -> Vec<String> {
    let root = schemars::SchemaGenerator::default()
        .into_root_schema_for::<R>()
        .to_value();
    let defs = root.get("$defs").cloned().unwrap_or(Value::Null);
    let mut out = Vec::new();
    walk_schema(&root, &defs, &mut Vec::new(), &mut Vec::new(), &mut out);
    out
}

fn walk_schema(
    schema: &Value,
    defs: &Value,
    path: &mut Vec<String>,
    seen: &mut Vec<String>,
    out: &mut Vec<String>,
) {
    let text = |out: &mut Vec<String>, path: &[String]| {
        let shown = path.join(".");
        if !shown.is_empty() && !out.contains(&shown) {
            out.push(shown);
        }
    };
    let Some(object) = schema.as_object() else {
        if schema == &Value::Bool(true) {
            text(out, path);
        }
        return;
    };
    if let Some(Value::String(reference)) = object.get("$ref") {
        let name = reference.trim_start_matches("#/$defs/").to_owned();
        if !seen.contains(&name) {
            seen.push(name.clone());
            walk_schema(&defs[&name], defs, path, seen, out);
            seen.pop();
        }
    }
    let types: Vec<&str> = match object.get("type") {
        Some(Value::String(t)) => vec![t.as_str()],
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    };
    let structural = [
        "$ref",
        "properties",
        "items",
        "anyOf",
        "oneOf",
        "allOf",
        "additionalProperties",
        "type",
        "enum",
        "const",
    ];
    if types.contains(&"string")
        || object
            .get("enum")
            .is_some_and(|e| e.as_array().is_some_and(|e| e.iter().any(Value::is_string)))
        || object.get("const").is_some_and(Value::is_string)
        || !object.keys().any(|k| structural.contains(&k.as_str()))
    {
        text(out, path);
    }
    for key in ["anyOf", "oneOf", "allOf"] {
        for branch in object
            .get(key)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            walk_schema(branch, defs, path, seen, out);
        }
    }
    if let Some(items) = object.get("items") {
        walk_schema(items, defs, path, seen, out);
    }
    if let Some(properties) = object.get("properties").and_then(Value::as_object) {
        for (name, member) in properties {
            path.push(name.clone());
            walk_schema(member, defs, path, seen, out);
            path.pop();
        }
    }
    if let Some(extra) = object.get("additionalProperties")
        && extra != &Value::Bool(false)
    {
        path.push("*".into());
        walk_schema(extra, defs, path, seen, out);
        path.pop();
    }
}

fn undeclared_in_schema<R: Record + schemars::JsonSchema>() -> Vec<String> {
    let mut item = serde_json::Map::new();
    for path in schema_texts::<R>() {
        // One string at each path, as an item would hold it.
        let mut at = &mut item;
        let segments: Vec<&str> = path.split('.').collect();
        for (i, segment) in segments.iter().enumerate() {
            if i + 1 == segments.len() {
                at.insert((*segment).to_owned(), Value::String("x".into()));
            } else {
                let next = at
                    .entry((*segment).to_owned())
                    .or_insert_with(|| Value::Object(Default::default()));
                if !next.is_object() {
                    *next = Value::Object(Default::default());
                }
                at = next.as_object_mut().expect("an object");
            }
        }
    }
    personal::missing::<R>(&Value::Object(item))
}

/// Every text field a record may store, optional ones included, is
/// declared personal, a copy, or plain (`Record::PERSONAL`): called by each
/// group's shape test for its records with a JSON Schema.
#[track_caller]
pub(crate) fn texts_declared<R: Record + schemars::JsonSchema>() {
    let missing = undeclared_in_schema::<R>();
    assert!(
        missing.is_empty(),
        "{} stores text no declaration says: {missing:?}",
        R::TYPE
    );
}

/// Record types that no shape test reads yet: no pinned literal, and no
/// JSON Schema for [`texts_declared`]. Their text is still checked on each
/// write (an undeclared path is a 500 naming it, which their suites would
/// meet). A new record type is not added here: it is pinned.
const NOT_PINNED: &[&str] = &["Webhook", "Health", "Delivery", "IdempotencyRecord"];

/// Where a source file sits: its group (`domain/<group>/...` or
/// `domain/<group>.rs`), or its top module (`record`, `auth`, ...).
fn home(path: &std::path::Path) -> String {
    let relative = path
        .strip_prefix(concat!(env!("CARGO_MANIFEST_DIR"), "/src"))
        .expect("a source file");
    let parts: Vec<String> = relative
        .iter()
        .map(|p| p.to_string_lossy().trim_end_matches(".rs").to_owned())
        .collect();
    match parts.as_slice() {
        [first, group, ..] if first == "domain" => group.clone(),
        [first, ..] => first.clone(),
        [] => String::new(),
    }
}

/// Each `impl Record for X` in the crate's source has a shape test: `X` is
/// read by a `round_trip`, `round_trip_deleted` or `texts_declared` call,
/// named by a path through its group (`crate::domain::bulk::ImportJob`), or
/// from a file of its group (`super::ImportJob`): two groups' types of one
/// name (`bulk::ImportJob`, `imports::ImportJob`) are told apart.
#[test]
fn every_record_type_is_pinned() {
    fn sources(dir: &std::path::Path, out: &mut Vec<(String, String)>) {
        for entry in std::fs::read_dir(dir).expect("src/").flatten() {
            let path = entry.path();
            if path.is_dir() {
                sources(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let text = std::fs::read_to_string(&path).expect("a source file");
                // Code only: comments may quote an `impl` (this file's do).
                let code: Vec<&str> = text
                    .lines()
                    .map(|line| line.split("//").next().unwrap_or_default())
                    .collect();
                out.push((home(&path), code.join("\n")));
            }
        }
    }
    let mut files = Vec::new();
    sources(
        std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/src")),
        &mut files,
    );
    // `impl Record for X`, `impl<T> record::Record for X`, over lines too.
    let implementation =
        regex_lite::Regex::new(r"impl(?:<[^>]*>)?\s+(?:[\w:]+::)?Record\s+for\s+(\w+)").unwrap();
    let call = regex_lite::Regex::new(
        r"(?:round_trip|round_trip_deleted|texts_declared)::<\s*([\w:]+)\s*>",
    )
    .unwrap();
    // (group, type) of every record type, and of every one a call reads.
    let mut records = Vec::new();
    let mut read = Vec::new();
    for (home, text) in &files {
        for found in implementation.captures_iter(text) {
            records.push((home.clone(), found[1].to_owned()));
        }
        for found in call.captures_iter(text) {
            let path: Vec<&str> = found[1].split("::").collect();
            let name = path.last().expect("a type").to_string();
            // A path through `domain::<group>` or a top module names its
            // group; a bare or `super::` one, the file's.
            let group = match path.as_slice() {
                ["crate", "domain", group, ..] => (*group).to_owned(),
                ["crate", top, ..] if path.len() > 2 => (*top).to_owned(),
                _ => home.clone(),
            };
            read.push((group, name));
        }
    }
    assert!(records.len() > 20, "{records:?}");
    let unread: Vec<&(String, String)> = records
        .iter()
        .filter(|r| !read.contains(r) && !NOT_PINNED.contains(&r.1.as_str()))
        .collect();
    assert!(
        unread.is_empty(),
        "record types (group, type) without a shape test: pin an item of each in \
         item_shapes/<group>.json and read it with round_trip (and texts_declared) in the \
         group's `mod shapes`: {unread:?}"
    );
    for name in NOT_PINNED {
        assert!(
            !read.iter().any(|(_, r)| r == name),
            "{name} is pinned now: drop it from NOT_PINNED"
        );
    }
}
