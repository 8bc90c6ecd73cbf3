//! What the API shows of a contact: the `/v3` Contact, its listing item, and
//! the `/v1` Contact.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::list::{ContactQuery, list};
use super::record::{Contact, ContactFields, CrmData, Erased};
use crate::auth::Caller;
use crate::domain::relations;
use crate::error::ApiResult;
use crate::ids::WorkspaceId;
use crate::page::ListPage;
use crate::record::Stamps;
use crate::store::Store;

/// The `/v3` Contact.
#[derive(Debug, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ContactV3 {
    pub id: String,
    pub workspace_id: WorkspaceId,
    #[serde(flatten)]
    pub fields: ContactFields,
    #[serde(flatten)]
    pub stamps: Stamps,
    /// An erased contact (`POST /v3/contacts/{id}/erase`): a tombstone
    /// without personal data, kept so that counts and references stay whole.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub erased: Option<Erased>,
}

impl From<Contact> for ContactV3 {
    fn from(c: Contact) -> Self {
        Self {
            id: c.id.to_string(),
            workspace_id: c.workspace_id,
            fields: c.fields,
            stamps: c.stamps,
            erased: c.erased,
        }
    }
}

/// A contact of a `/v3` listing. With `withOrganization=true` it also carries its
/// main organization (`null` when it has none) and `organizationsCount`.
#[derive(Debug, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ContactListItem {
    #[serde(flatten)]
    pub contact: ContactV3,
    #[serde(flatten)]
    pub organizations: Option<WithOrganization>,
}

/// What `withOrganization=true` adds to a listed contact.
#[derive(Debug, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WithOrganization {
    /// Its main organization, `null` when it has none.
    pub organization: Option<relations::OrganizationView>,
    pub organizations_count: usize,
}

/// `GET /v3/contacts` as the API answers it: [`list`], plus the organizations
/// of the page when asked (one BatchGetItem).
pub async fn list_items(
    store: &dyn Store,
    caller: &Caller,
    q: ContactQuery,
) -> ApiResult<ListPage<ContactListItem>> {
    let with_organization = q.with_organization == Some(true);
    let page = list(store, caller, q).await?;
    let organizations = if with_organization {
        relations::organizations_of(store, &page.data).await?
    } else {
        HashMap::new()
    };
    Ok(page.map(|c| ContactListItem {
        organizations: with_organization.then(|| WithOrganization {
            organization: c
                .main_organization_id
                .and_then(|id| organizations.get(&id).cloned()),
            organizations_count: c.organization_ids.len(),
        }),
        contact: c.into(),
    }))
}

/// The `/v1` Contact: the spec's public fields, custom fields as `{ value }`.
#[derive(Debug, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ContactV1 {
    pub id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub external_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub origin: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub location: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub email: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub phone: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub avatar: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub notes: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub social_a_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub social_b_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub social_c_id: Option<String>,
    pub is_imported: bool,
    pub has_conversation: bool,
    pub new_contact: bool,
    pub is_private: bool,
    pub custom_fields: Map<String, Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub crm_data: Option<CrmData>,
}

impl From<Contact> for ContactV1 {
    fn from(c: Contact) -> Self {
        let f = c.fields;
        Self {
            id: c.id.to_string(),
            external_id: f.external_id,
            origin: f.origin,
            location: f.location,
            name: f.name,
            email: f.email,
            phone: f.phone,
            avatar: f.avatar,
            notes: f.notes,
            social_a_id: f.social_a_id,
            social_b_id: f.social_b_id,
            social_c_id: f.social_c_id,
            is_imported: f.is_imported,
            has_conversation: f.has_conversation,
            new_contact: f.new_contact,
            is_private: f.is_private,
            custom_fields: f
                .custom_fields
                .into_iter()
                .map(|(k, v)| (k, serde_json::json!({ "value": v })))
                .collect(),
            crm_data: f.crm_data,
        }
    }
}
