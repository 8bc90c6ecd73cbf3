//! A create's body that is its update's (`<Thing>Patch`: the create patches
//! an empty record), described as `<Thing>Create` with the fields a create
//! needs as required. Parsing and validation are `T`'s own; the domain's create checks
//! the required fields (a test holds each list to that check), so the
//! document says what the code does and a generated client knows it.

use std::borrow::Cow;

use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::{Deserialize, Deserializer};
use serde_json::{Value, json};
use validator::{Validate, ValidationErrors};

use super::openapi::strip_null;
use crate::validate::{CreateFields, needs_one_of};

/// `Body<Create<T>>`: `T`, described as a create (see the module).
#[derive(Debug)]
pub struct Create<T>(pub T);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Create<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        T::deserialize(deserializer).map(Create)
    }
}

impl<T: Validate> Validate for Create<T> {
    fn validate(&self) -> Result<(), ValidationErrors> {
        self.0.validate()
    }
}

impl<T: JsonSchema + CreateFields> JsonSchema for Create<T> {
    /// `CampaignPatch` → `CampaignCreate`, `ContactPatchV1` → `ContactCreateV1`.
    fn schema_name() -> Cow<'static, str> {
        T::schema_name().replacen("Patch", "Create", 1).into()
    }

    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        let mut schema = T::json_schema(generator);
        let object = schema.ensure_object();
        if let Some(properties) = object.get_mut("properties").and_then(Value::as_object_mut) {
            for field in T::REQUIRED {
                if let Some(property) = properties.get_mut(*field) {
                    strip_null(property);
                }
            }
        }
        let mut required: Vec<Value> = object
            .get("required")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        required.extend(T::REQUIRED.iter().map(|f| json!(f)));
        if !required.is_empty() {
            object.insert("required".into(), Value::Array(required));
        }
        if !T::ANY_OF.is_empty() {
            needs_one_of(&mut schema, T::ANY_OF, false);
        }
        schema
    }
}
