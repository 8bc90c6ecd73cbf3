//! Custom fields: the workspace's definitions of the extra fields of its records.
//! The spec only reads them (`/v3` list and get, `/v1` list and get); an operator
//! loads them with `crm load` (`{"type":"customField",...}`).
//!
//! The `/v1` public record is what an integration needs to fill a contact's
//! `customFields` (whose members are keyed by `key`): deleted definitions are left
//! out of `/v1`.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use validator::Validate;

use crate::auth::Caller;
use crate::domain::catalog;
use crate::error::ApiResult;
use crate::ids::WorkspaceId;
use crate::keys;
use crate::keys::CustomFieldId;
use crate::page::{CursorPage, CursorPaging, ListPage, Paging};
use crate::record::{self, Personal, Record, Stamps};
use crate::store::{Index, Key, Query, SkRange, Store};

pub const LIST: &str = "CUSTOMFIELD";

/// The spec's Custom field, plus `key` (the member name in a contact's `customFields`).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Validate, schemars::JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CustomFieldData {
    #[serde(default, rename = "_id", skip_serializing_if = "Option::is_none")]
    #[validate(length(max = 128))]
    pub legacy_id: Option<String>,
    #[validate(length(min = 1, max = 128))]
    pub name: String,
    /// The member name in a contact's `customFields` (defaults to the id).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[validate(length(min = 1, max = 128))]
    pub key: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[validate(length(max = 2000))]
    pub description: Option<String>,
    /// The record it belongs to (`contact`, `deal`, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[validate(length(max = 64))]
    pub entity: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[validate(length(max = 256))]
    pub placeholder: Option<String>,
    /// `type`; in a `crm load` line (whose own `type` is `customField`), `fieldType`.
    #[serde(
        default,
        rename = "type",
        alias = "fieldType",
        skip_serializing_if = "Option::is_none"
    )]
    #[validate(length(max = 64))]
    pub kind: Option<String>,
    #[serde(
        default,
        rename = "validation_type",
        skip_serializing_if = "Option::is_none"
    )]
    #[validate(length(max = 64))]
    pub validation_type: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub options: Option<Map<String, Value>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub validate: Option<Map<String, Value>>,
    #[serde(
        default,
        rename = "validation_mask",
        skip_serializing_if = "Option::is_none"
    )]
    pub validation_mask: Option<Map<String, Value>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dependency: Option<Map<String, Value>>,
    #[serde(default = "yes")]
    pub is_active: bool,
    #[serde(default)]
    pub is_deleted: bool,
    #[serde(default)]
    pub invisible: bool,
    #[serde(default)]
    pub is_unique_identifier: bool,
    #[serde(default)]
    pub is_integration: bool,
    #[serde(default)]
    pub show_always: bool,
    #[serde(default)]
    pub required_to_resolve: bool,
    #[serde(default)]
    pub reset_on_new_call: bool,
    #[serde(default)]
    pub is_dependent: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub position: Option<f64>,
}

fn yes() -> bool {
    true
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CustomField {
    pub id: CustomFieldId,
    pub workspace_id: WorkspaceId,
    #[serde(flatten)]
    pub data: CustomFieldData,
    #[serde(flatten)]
    pub stamps: Stamps,
    pub version: u64,
}

crate::versioned!(CustomField);

impl catalog::Catalog for CustomField {
    const WHAT: &'static str = "custom field";
    const LIST: &'static str = LIST;
    type Id = CustomFieldId;
    fn key_of(workspace_id: WorkspaceId, id: CustomFieldId) -> Key {
        keys::custom_field(workspace_id, id)
    }
    fn partitions(workspace_id: WorkspaceId) -> Vec<String> {
        vec![keys::custom_fields(workspace_id)]
    }
}

impl Record for CustomField {
    const EVENTS: Option<&'static str> = Some("customField");

    fn event_object(&self) -> serde_json::Value {
        crate::record::as_event_object(CustomFieldView::from(self.clone()))
    }
    const TYPE: &'static str = "CustomField";
    const PERSONAL: Personal = Personal::none(&[
        "_id",
        "dependency",
        "description",
        "placeholder",
        "validate",
        "validation_mask",
        "validation_type",
        "entity",
        "key",
        "name",
        "type",
        "options",
    ]);
    fn key(&self) -> Key {
        keys::custom_field(self.workspace_id, self.id)
    }
}

/// The `/v3` Custom field.
#[derive(Debug, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CustomFieldView {
    pub id: String,
    pub workspace_id: WorkspaceId,
    #[serde(flatten)]
    pub data: CustomFieldData,
    #[serde(flatten)]
    pub stamps: Stamps,
}

impl From<CustomField> for CustomFieldView {
    fn from(f: CustomField) -> Self {
        Self {
            id: f.id.to_string(),
            workspace_id: f.workspace_id,
            data: f.data,
            stamps: f.stamps,
        }
    }
}

/// The `/v1` public custom field.
#[derive(Debug, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CustomFieldV1 {
    pub id: String,
    pub key: String,
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(rename = "type", skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub entity: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub options: Option<Map<String, Value>>,
    pub is_active: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub position: Option<f64>,
}

impl From<CustomField> for CustomFieldV1 {
    fn from(f: CustomField) -> Self {
        let d = f.data;
        Self {
            id: f.id.to_string(),
            key: d.key.unwrap_or_else(|| f.id.to_string()),
            name: d.name,
            description: d.description,
            kind: d.kind,
            entity: d.entity,
            options: d.options,
            is_active: d.is_active,
            position: d.position,
        }
    }
}

/// A `customField` line of `crm load`: an id and the record's fields.
#[derive(Debug, Deserialize, Validate, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CustomFieldLine {
    #[validate(range(min = 1, max = 9007199254740991u64))]
    pub id: u64,
    #[serde(flatten)]
    #[validate(nested)]
    pub data: CustomFieldData,
}

/// The `crm load` lines of this resource: `customField`.
pub fn line_types() -> Vec<crate::load::LineType> {
    vec![crate::load::LineType::of::<CustomFieldLine>()]
}

#[async_trait::async_trait]
impl crate::load::Loadable for CustomFieldLine {
    const TYPE: &'static str = "customField";

    async fn load(self, store: &dyn Store, caller: &Caller) -> ApiResult<()> {
        load(store, caller, self).await
    }
}

pub async fn load(store: &dyn Store, caller: &Caller, line: CustomFieldLine) -> ApiResult<()> {
    let ws = caller.workspace_id;
    let build = |stored: Option<CustomField>| match stored {
        Some(stored) => CustomField {
            data: line.data.clone(),
            ..stored
        },
        None => CustomField {
            id: CustomFieldId(line.id),
            workspace_id: ws,
            data: line.data.clone(),
            stamps: Stamps::new(),
            version: 1,
        },
    };
    catalog::load(
        store,
        caller,
        CustomFieldId(line.id),
        build,
        "customField.load",
    )
    .await?;
    Ok(())
}

pub async fn get(store: &dyn Store, caller: &Caller, id: CustomFieldId) -> ApiResult<CustomField> {
    catalog::get(store, caller, id).await
}

/// `/v1`: a definition that is not deleted (a deleted one is not public: 404).
pub async fn get_public(
    store: &dyn Store,
    caller: &Caller,
    id: CustomFieldId,
) -> ApiResult<CustomField> {
    let field = get(store, caller, id).await?;
    if field.data.is_deleted {
        return Err(crate::ApiError::not_found("custom field"));
    }
    Ok(field)
}

/// `/v3`: every definition, in id order, `totalCount` from the counter.
pub async fn list(
    store: &dyn Store,
    caller: &Caller,
    paging: Paging,
) -> ApiResult<ListPage<CustomField>> {
    catalog::list(store, caller, paging).await
}

/// `/v1`: the definitions that are not deleted, after the cursor (an id).
pub async fn list_v1(
    store: &dyn Store,
    caller: &Caller,
    paging: CursorPaging,
) -> ApiResult<CursorPage<CustomField>> {
    let after = paging.numeric_cursor()?.unwrap_or(0);
    let low = crate::ids::padded(after.saturating_add(1));
    let mut query = Query::new(
        Index::TABLE,
        keys::custom_fields(caller.workspace_id),
        SkRange::AtLeast(low),
    );
    // One more than the page, to know whether another follows; deleted
    // definitions are stepped over (a workspace has few of them).
    let wanted = paging.limit as usize + 1;
    let mut data = Vec::new();
    loop {
        query.limit = Some(wanted);
        let page = store.query(&query).await?;
        for item in page.items {
            let field: CustomField = record::from_item(item)?;
            if !field.data.is_deleted {
                data.push(field);
            }
        }
        match page.last_key {
            Some(last) if data.len() < wanted => query.start_after = Some(last),
            _ => break,
        }
    }
    let more = data.len() > paging.limit as usize;
    data.truncate(paging.limit as usize);
    let next_cursor = match data.last() {
        Some(last) if more => last.id.to_string(),
        _ => String::new(),
    };
    Ok(CursorPage { data, next_cursor })
}

/// The stored items of item_shapes/custom_fields.json read back (domain::item_shapes).
#[cfg(test)]
mod shapes {
    use crate::domain::item_shapes::{round_trip, texts_declared};

    #[test]
    fn custom_fields_keep_their_shape() {
        round_trip::<crate::domain::custom_fields::CustomField>("CustomField");
        texts_declared::<crate::domain::custom_fields::CustomField>();
    }
}
