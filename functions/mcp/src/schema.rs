//! A tool's JSON Schemas, from the same `schemars` types as the OpenAPI
//! document's, with the arguments a tool adds (`id`, `idempotencyKey`...).

use schemars::JsonSchema;
use schemars::generate::SchemaSettings;
use serde_json::{Value, json};

/// The argument a writing tool takes for its `Idempotency-Key`.
pub(crate) const KEY: &str = "idempotencyKey";

/// `T`'s JSON Schema (2020-12, its definitions under `$defs`), as the
/// OpenAPI document has it.
pub(crate) fn schema<T: JsonSchema>() -> Value {
    let mut schema = raw_schema::<T>();
    if let Some(object) = schema.as_object_mut() {
        object.entry("type").or_insert(json!("object"));
    }
    schema
}

fn raw_schema<T: JsonSchema>() -> Value {
    let generator = SchemaSettings::draft2020_12().into_generator();
    let mut schema =
        serde_json::to_value(generator.into_root_schema_for::<T>()).unwrap_or_default();
    if let Some(object) = schema.as_object_mut() {
        object.remove("$schema");
        object.remove("title");
    }
    schema
}

/// A small type's schema (one without definitions) as one property's.
pub(crate) fn schema_value<T: JsonSchema>(description: &str) -> Value {
    let mut value = raw_schema::<T>();
    value["description"] = json!(description);
    value
}

pub(crate) fn with_description(mut schema: Value, description: &str) -> Value {
    schema["description"] = json!(description);
    schema
}

/// `schema` with one more property, `required` or not.
pub(crate) fn with_property(
    mut schema: Value,
    name: &str,
    property: Value,
    required: bool,
) -> Value {
    schema["properties"][name] = property;
    if required {
        match schema["required"].as_array_mut() {
            Some(names) => names.push(json!(name)),
            None => schema["required"] = json!([name]),
        }
    }
    schema
}

pub(crate) fn with_id(schema: Value, kind: &str, description: &str) -> Value {
    let id = match kind {
        "integer" => json!({ "type": "integer", "minimum": 1, "description": description }),
        _ => json!({ "type": "string", "minLength": 1, "description": description }),
    };
    with_property(schema, "id", id, true)
}

pub(crate) fn with_key(schema: Value) -> Value {
    let key = json!({
        "type": "string", "minLength": 1, "maxLength": 255,
        "description": "Your own key for this write (any 1 to 255 printable ASCII characters): send the same one when you retry and the write happens once; a new write needs a new key.",
    });
    with_property(schema, KEY, key, false)
}

/// `schema` with only `names` among its properties, `required` of them required.
pub(crate) fn pick(mut schema: Value, names: &[&str], required: &[&str]) -> Value {
    if let Some(properties) = schema["properties"].as_object_mut() {
        properties.retain(|name, _| names.contains(&name.as_str()));
    }
    schema["required"] = json!(required);
    schema
}

/// `schema` with `names` no longer required.
pub(crate) fn optional(mut schema: Value, names: &[&str]) -> Value {
    if let Some(required) = schema["required"].as_array_mut() {
        required.retain(|r| !r.as_str().is_some_and(|r| names.contains(&r)));
    }
    schema
}
