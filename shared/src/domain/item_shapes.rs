//! Stored item shapes, pinned. `item_shapes.json` holds one item of every
//! stored entity exactly as this version writes it (taken from a running
//! store). Each test reads the literal back into its record and writes the
//! record again: the item must come out equal, key attributes, index keys and
//! `_type` included. A renamed or retyped field, in a record or in a view that
//! shares its struct, fails here before it can make stored items unreadable.
//! Changing a shape on purpose means changing the literal, and saying how
//! items already stored are read (a default, an alias, a migration).

use serde_json::{Map, Value};

use crate::record::{self, Record, personal};
use crate::store::Item;
use crate::store::as_dynamodb_number;

fn literal(entity: &str) -> Item {
    let all: Map<String, Value> =
        serde_json::from_str(include_str!("item_shapes.json")).expect("item_shapes.json");
    match all.get(entity) {
        Some(Value::Object(item)) => item.clone(),
        _ => panic!("no literal item for {entity}"),
    }
}

/// An item as the store keeps it (whole floats read back as integers).
fn stored(item: Item) -> Value {
    let mut value = Value::Object(item);
    as_dynamodb_number(&mut value);
    value
}

/// Reads the literal item into `R` and writes it back: the same item. Its
/// text is declared, and the record reads once erased by the declaration.
fn round_trip<R: Record>(entity: &str) -> R {
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
fn round_trip_deleted<R: Record>(entity: &str) -> R {
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
fn workspaces_tokens_and_audit_entries_keep_their_shape() {
    round_trip::<crate::domain::workspaces::Workspace>("Workspace");
    round_trip::<crate::domain::tokens::ApiToken>("ApiToken");
    round_trip::<crate::auth::TokenSecret>("TokenSecret");
    round_trip::<crate::record::AuditEntry>("AuditEntry");
}

#[test]
fn merges_keep_their_shape() {
    round_trip::<crate::domain::contacts::MergeJob>("ContactMerge");
}

#[test]
fn tags_keep_their_shape() {
    round_trip::<crate::domain::tags::Tag>("Tag");
}

#[test]
fn contacts_and_their_index_items_keep_their_shape() {
    let contact = round_trip::<crate::domain::contacts::Contact>("Contact");
    let items: Vec<Value> = contact
        .index_item_keys()
        .into_iter()
        .map(|key| stored(contact.index_item(key)))
        .collect();
    assert!(
        items.contains(&stored(literal("ContactIndex"))),
        "the contact index item changed: {items:?}"
    );
}

#[test]
fn deals_and_their_digests_keep_their_shape() {
    let deal = round_trip::<crate::domain::deals::Deal>("Deal");
    let items: Vec<Value> = deal.index_items().into_iter().map(stored).collect();
    assert!(
        items.contains(&stored(literal("DealIndex"))),
        "the deal index item (its digest) changed: {items:?}"
    );
}

#[test]
fn relations_keep_their_shape() {
    use crate::domain::relations::{Conversation, Organization, index_item};
    round_trip::<Organization>("Organization");
    let conversation = round_trip::<Conversation>("Conversation");
    let items: Vec<Value> = conversation
        .index_keys()
        .into_iter()
        .map(|key| stored(index_item(key, conversation.contact_id)))
        .collect();
    assert!(
        items.contains(&stored(literal("RelationIndex"))),
        "{items:?}"
    );
}

#[test]
fn catalog_records_keep_their_shape() {
    round_trip::<crate::domain::products::Product>("Product");
    round_trip::<crate::domain::custom_fields::CustomField>("CustomField");
    round_trip::<crate::domain::business_hours::BusinessHour>("BusinessHour");
}

#[test]
fn dashboards_and_snapshots_keep_their_shape() {
    round_trip::<crate::domain::dashboards::Dashboard>("Dashboard");
    round_trip::<crate::domain::dashboards::Snapshot>("Snapshot");
    round_trip::<crate::domain::dashboards::Snapshot>("SnapshotComputed");
}

#[test]
fn import_jobs_and_their_chunks_keep_their_shape() {
    round_trip::<crate::domain::imports::ImportJob>("ImportJob");
    round_trip::<crate::domain::imports::Chunk>("ImportChunk");
}

#[test]
fn bulk_jobs_keep_their_shape() {
    round_trip::<crate::domain::bulk::ImportJob>("BulkImport");
    round_trip::<crate::domain::bulk::ExportJob>("BulkExport");
}

#[test]
fn account_records_keep_their_shape() {
    use crate::domain::{billing, churn, redirects, welcome};
    round_trip::<billing::CheckoutLink>("CheckoutLink");
    round_trip::<billing::CheckoutLink>("CheckoutLinkCompleted");
    round_trip::<billing::Order>("Order");
    round_trip::<churn::ChurnReason>("ChurnReason");
    round_trip::<redirects::RedirectSession>("RedirectSession");
    round_trip_deleted::<welcome::WelcomeMessage>("WelcomeMessage");
    round_trip_deleted::<welcome::Sent>("WelcomeSent");
}

#[test]
fn sessions_and_their_digests_keep_their_shape() {
    let session = round_trip::<crate::domain::sessions::Session>("Session");
    let items: Vec<Value> = session
        .index_items()
        .expect("index items")
        .into_iter()
        .map(stored)
        .collect();
    assert!(
        items.contains(&stored(literal("SessionIndex"))),
        "the session index item (its digest) changed: {items:?}"
    );
}

#[test]
fn campaigns_and_their_digests_keep_their_shape() {
    let campaign = round_trip::<crate::domain::campaigns::Campaign>("Campaign");
    let items: Vec<Value> = crate::domain::campaigns::index_items_for_tests(&campaign)
        .into_iter()
        .map(stored)
        .collect();
    assert!(
        items.contains(&stored(literal("CampaignIndex"))),
        "{items:?}"
    );
}

#[test]
fn events_keep_their_shape() {
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

#[test]
fn every_text_field_a_record_may_store_is_declared() {
    use crate::domain::*;
    let mut missing: Vec<(&str, Vec<String>)> = Vec::new();
    macro_rules! check {
        ($($t:ty),* $(,)?) => {$(
            let m = undeclared_in_schema::<$t>();
            if !m.is_empty() {
                missing.push((<$t as Record>::TYPE, m));
            }
        )*};
    }
    check!(
        crate::record::AuditEntry,
        redirects::RedirectSession,
        relations::Organization,
        relations::Conversation,
        bulk::ExportJob,
        bulk::ImportJob,
        custom_fields::CustomField,
        business_hours::BusinessHour,
        products::Product,
        tags::Tag,
        billing::CheckoutLink,
        billing::Order,
        sessions::Session,
        dashboards::Dashboard,
        dashboards::Snapshot,
        crate::auth::TokenSecret,
        tokens::ApiToken,
        imports::ImportJob,
        welcome::WelcomeMessage,
        churn::ChurnReason,
        workspaces::Workspace,
        campaigns::Campaign,
        deals::Deal,
        contacts::Contact,
    );
    assert!(missing.is_empty(), "text no declaration says: {missing:#?}");
}
