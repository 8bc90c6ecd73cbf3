//! Contacts: one stored record, served as the `/v3` Contact and the `/v1` Contact.
//!
//! A contact's phone is its identity: stored in canonical E.164 form
//! ([`crate::phone`]) and claimed through a sentinel item, so a workspace never
//! has two contacts for one phone (create answers 409; find-or-create answers
//! the existing contact). Its e-mail, the words of its name and its `newContact`
//! flag are index items written in the contact's own transaction, so searches
//! and filters read only what they return.

use std::collections::{BTreeSet, HashMap};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use validator::Validate;

use crate::auth::Caller;
use crate::domain::relations;
use crate::error::{ApiError, ApiResult};
use crate::ids::{self, Timestamp};
use crate::keys;
use crate::page::{
    CursorPage, CursorPaging, ListPage, MAX_WINDOW, Paging, counted_page, cursor_page, offset_page,
    read_up_to,
};
use crate::record::{self, Mutation, Record, Stamps, with_fresh_id};
use crate::store::{Index, Item, Key, PK, Query, SK, SkRange, Store, TYPE};
use crate::validate::nullable;
use crate::{phone, text};

/// Counters behind `totalCount`.
pub const LIST: &str = "CONTACT";
pub const NEW_LIST: &str = "NEWCONTACT";

// ------------------------------------------------------------------ records

/// `crmData`: the members the spec lists for `/v1`, used by both versions.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CrmData {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub utm_campaigns: Option<Map<String, Value>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub referrals: Option<Referrals>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub crm_alpha_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub crm_beta_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub crm_beta_type: Option<String>,
    #[serde(default, rename = "cloud_api", skip_serializing_if = "Option::is_none")]
    pub cloud_api: Option<Map<String, Value>>,
}

/// `crmData.referrals`: string members only, the ones the spec names.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Referrals {
    #[serde(default, rename = "_bg", skip_serializing_if = "Option::is_none")]
    pub bg: Option<String>,
    #[serde(default, rename = "_bt", skip_serializing_if = "Option::is_none")]
    pub bt: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gclid: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offer: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub utm_ad: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub utm_term: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gad_source: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub media_type: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_url: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub utm_medium: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub utm_source: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_type: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub utm_ad_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub utm_campaign: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub utm_ad_collection: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub utm_campaign_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub utm_ad_collection_name: Option<String>,
}

/// The writable fields of a contact, as stored and as `/v3` shows them.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ContactFields {
    #[serde(default, rename = "_id", skip_serializing_if = "Option::is_none")]
    pub legacy_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub email: Option<String>,
    /// Canonical E.164.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phone: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub location: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub avatar: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub notes: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub external_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub origin: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub social_a_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub social_b_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub social_c_id: Option<String>,
    #[serde(default)]
    pub is_imported: bool,
    #[serde(default)]
    pub has_conversation: bool,
    #[serde(default)]
    pub new_contact: bool,
    #[serde(default)]
    pub is_private: bool,
    #[serde(default)]
    pub custom_fields: Map<String, Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub crm_data: Option<CrmData>,
    #[serde(
        default,
        rename = "CustomerCustomField",
        skip_serializing_if = "Option::is_none"
    )]
    pub customer_custom_field: Option<Map<String, Value>>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Contact {
    pub id: u64,
    pub workspace_id: u64,
    #[serde(flatten)]
    pub fields: ContactFields,
    #[serde(flatten)]
    pub stamps: Stamps,
    pub version: u64,
    /// Organizations linked by `crm load` (not a field of the spec's record; a
    /// listing with `withOrganization=true` shows them).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub organization_ids: Vec<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub main_organization_id: Option<u64>,
}

crate::versioned!(Contact);

impl Record for Contact {
    const TYPE: &'static str = "Contact";
    fn key(&self) -> Key {
        keys::contact(self.workspace_id, self.id)
    }
    fn index_keys(&self) -> Vec<(&'static str, String)> {
        let name = text::fold(self.fields.name.as_deref().unwrap_or(""));
        vec![
            (keys::GSI1.pk, keys::contacts_by_name(self.workspace_id)),
            (keys::GSI1.sk, keys::contact_name_sort(&name, self.id)),
        ]
    }
}

impl Contact {
    /// The non-unique index items of this contact: e-mail, name words, new.
    fn index_item_keys(&self) -> BTreeSet<Key> {
        let ws = self.workspace_id;
        let mut keys = BTreeSet::new();
        if let Some(email) = &self.fields.email {
            keys.insert(keys::contact_email(ws, &email.to_lowercase(), self.id));
        }
        for word in text::search_words(self.fields.name.as_deref().unwrap_or("")) {
            keys.insert(keys::contact_word(ws, &word, self.id));
        }
        if self.fields.new_contact {
            keys.insert(keys::new_contact(ws, self.id));
        }
        keys
    }

    fn index_item(&self, key: Key) -> Item {
        let mut item = Item::new();
        item.insert(PK.into(), key.pk.into());
        item.insert(SK.into(), key.sk.into());
        item.insert(TYPE.into(), "ContactIndex".into());
        item.insert("contactId".into(), self.id.into());
        item
    }
}

// ------------------------------------------------------------------ views

/// The `/v3` Contact.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ContactV3 {
    pub id: String,
    pub workspace_id: u64,
    #[serde(flatten)]
    pub fields: ContactFields,
    #[serde(flatten)]
    pub stamps: Stamps,
}

impl From<Contact> for ContactV3 {
    fn from(c: Contact) -> Self {
        Self {
            id: c.id.to_string(),
            workspace_id: c.workspace_id,
            fields: c.fields,
            stamps: c.stamps,
        }
    }
}

/// A contact of a `/v3` listing. With `withOrganization=true` it also carries its
/// main organization (`null` when it has none) and `organizationsCount`.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ContactListItem {
    #[serde(flatten)]
    pub contact: ContactV3,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub organization: Option<Option<relations::OrganizationView>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub organizations_count: Option<usize>,
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
        organization: with_organization.then(|| {
            c.main_organization_id
                .and_then(|id| organizations.get(&id).cloned())
        }),
        organizations_count: with_organization.then_some(c.organization_ids.len()),
        contact: c.into(),
    }))
}

/// The `/v1` Contact: the spec's public fields, custom fields as `{ value }`.
#[derive(Debug, Serialize, Deserialize)]
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

// ------------------------------------------------------------------ inputs

/// The `/v3` create and PATCH body: every field optional. `null` clears a field;
/// `customFields` merges (a key set to `null` is removed). Limits: name, email
/// and location 128 characters; phone, external ids, origin and social ids 100;
/// `_id` 128; avatar 2,048; notes 10,000.
#[derive(Debug, Default, Deserialize, Validate)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ContactInput {
    #[serde(default, rename = "_id", deserialize_with = "nullable")]
    #[validate(length(max = 128))]
    pub legacy_id: Option<Option<String>>,
    #[serde(default, deserialize_with = "nullable")]
    #[validate(length(max = 128))]
    pub name: Option<Option<String>>,
    #[serde(default, deserialize_with = "nullable")]
    #[validate(length(max = 128), email)]
    pub email: Option<Option<String>>,
    #[serde(default, deserialize_with = "nullable")]
    #[validate(length(max = 100))]
    pub phone: Option<Option<String>>,
    /// find-or-create only: more phones to look the contact up by (at most 10).
    #[serde(default)]
    #[validate(length(min = 1, max = 10))]
    pub phones: Option<Vec<String>>,
    #[serde(default, deserialize_with = "nullable")]
    #[validate(length(max = 128))]
    pub location: Option<Option<String>>,
    #[serde(default, deserialize_with = "nullable")]
    #[validate(length(max = 2048))]
    pub avatar: Option<Option<String>>,
    #[serde(default, deserialize_with = "nullable")]
    #[validate(length(max = 10000))]
    pub notes: Option<Option<String>>,
    #[serde(default, deserialize_with = "nullable")]
    #[validate(length(max = 100))]
    pub external_id: Option<Option<String>>,
    #[serde(default, deserialize_with = "nullable")]
    #[validate(length(max = 100))]
    pub origin: Option<Option<String>>,
    #[serde(default, deserialize_with = "nullable")]
    #[validate(length(max = 100))]
    pub social_a_id: Option<Option<String>>,
    #[serde(default, deserialize_with = "nullable")]
    #[validate(length(max = 100))]
    pub social_b_id: Option<Option<String>>,
    #[serde(default, deserialize_with = "nullable")]
    #[validate(length(max = 100))]
    pub social_c_id: Option<Option<String>>,
    #[serde(default, deserialize_with = "crate::validate::present")]
    pub is_imported: Option<bool>,
    #[serde(default, deserialize_with = "crate::validate::present")]
    pub has_conversation: Option<bool>,
    #[serde(default, deserialize_with = "crate::validate::present")]
    pub new_contact: Option<bool>,
    #[serde(default, deserialize_with = "crate::validate::present")]
    pub is_private: Option<bool>,
    #[serde(default, deserialize_with = "crate::validate::present")]
    pub custom_fields: Option<Map<String, Value>>,
    #[serde(default, deserialize_with = "nullable")]
    pub crm_data: Option<Option<CrmData>>,
    #[serde(default, rename = "CustomerCustomField", deserialize_with = "nullable")]
    pub customer_custom_field: Option<Option<Map<String, Value>>>,
}

/// The `/v1` create and PATCH body: the public fields, custom fields as `{ value }`.
#[derive(Debug, Default, Deserialize, Validate)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ContactInputV1 {
    #[serde(default, deserialize_with = "nullable")]
    #[validate(length(max = 128))]
    pub name: Option<Option<String>>,
    #[serde(default, deserialize_with = "nullable")]
    #[validate(length(max = 128), email)]
    pub email: Option<Option<String>>,
    #[serde(default, deserialize_with = "nullable")]
    #[validate(length(max = 100))]
    pub phone: Option<Option<String>>,
    #[serde(default, deserialize_with = "nullable")]
    #[validate(length(max = 128))]
    pub location: Option<Option<String>>,
    #[serde(default, deserialize_with = "nullable")]
    #[validate(length(max = 2048))]
    pub avatar: Option<Option<String>>,
    #[serde(default, deserialize_with = "nullable")]
    #[validate(length(max = 10000))]
    pub notes: Option<Option<String>>,
    #[serde(default, deserialize_with = "nullable")]
    #[validate(length(max = 100))]
    pub external_id: Option<Option<String>>,
    #[serde(default, deserialize_with = "nullable")]
    #[validate(length(max = 100))]
    pub origin: Option<Option<String>>,
    #[serde(default, deserialize_with = "nullable")]
    #[validate(length(max = 100))]
    pub social_a_id: Option<Option<String>>,
    #[serde(default, deserialize_with = "nullable")]
    #[validate(length(max = 100))]
    pub social_b_id: Option<Option<String>>,
    #[serde(default, deserialize_with = "nullable")]
    #[validate(length(max = 100))]
    pub social_c_id: Option<Option<String>>,
    #[serde(default, deserialize_with = "crate::validate::present")]
    pub is_imported: Option<bool>,
    #[serde(default, deserialize_with = "crate::validate::present")]
    pub has_conversation: Option<bool>,
    #[serde(default, deserialize_with = "crate::validate::present")]
    pub new_contact: Option<bool>,
    #[serde(default, deserialize_with = "crate::validate::present")]
    pub is_private: Option<bool>,
    /// key -> `{ "value": ... }`; a key set to `null` is removed.
    #[serde(default, deserialize_with = "crate::validate::present")]
    pub custom_fields: Option<Map<String, Value>>,
    #[serde(default, deserialize_with = "nullable")]
    pub crm_data: Option<Option<CrmData>>,
}

impl TryFrom<ContactInputV1> for ContactInput {
    type Error = ApiError;

    fn try_from(v1: ContactInputV1) -> ApiResult<Self> {
        let custom_fields = v1
            .custom_fields
            .map(|fields| {
                fields
                    .into_iter()
                    .map(|(key, wrapped)| match wrapped {
                        Value::Null => Ok((key, Value::Null)),
                        Value::Object(mut o) if o.len() == 1 && o.contains_key("value") => {
                            Ok((key, o.remove("value").unwrap_or(Value::Null)))
                        }
                        _ => Err(ApiError::field(
                            format!("customFields.{key}"),
                            "must be an object { \"value\": ... } or null",
                        )),
                    })
                    .collect::<ApiResult<Map<String, Value>>>()
            })
            .transpose()?;
        Ok(Self {
            name: v1.name,
            email: v1.email,
            phone: v1.phone,
            location: v1.location,
            avatar: v1.avatar,
            notes: v1.notes,
            external_id: v1.external_id,
            origin: v1.origin,
            social_a_id: v1.social_a_id,
            social_b_id: v1.social_b_id,
            social_c_id: v1.social_c_id,
            is_imported: v1.is_imported,
            has_conversation: v1.has_conversation,
            new_contact: v1.new_contact,
            is_private: v1.is_private,
            custom_fields,
            crm_data: v1.crm_data,
            ..Self::default()
        })
    }
}

/// A text field set by a patch: trimmed, and empty means cleared.
fn text_value(value: Option<String>) -> Option<String> {
    value.map(|v| v.trim().to_owned()).filter(|v| !v.is_empty())
}

/// The canonical phone of an input, or a 400 naming `field`.
fn canonical_phone(field: &str, raw: &str) -> ApiResult<String> {
    phone::canonical(raw).map_err(|e| ApiError::field(field, e.to_string()))
}

impl ContactInput {
    /// Applies the input to a contact's fields.
    fn apply(self, f: &mut ContactFields) -> ApiResult<()> {
        macro_rules! texts {
            ($($field:ident),*) => {$(
                if let Some(value) = self.$field {
                    f.$field = text_value(value);
                }
            )*};
        }
        texts!(
            legacy_id,
            name,
            email,
            location,
            avatar,
            notes,
            external_id,
            origin,
            social_a_id,
            social_b_id,
            social_c_id
        );
        if let Some(value) = self.phone {
            f.phone = text_value(value)
                .map(|raw| canonical_phone("phone", &raw))
                .transpose()?;
        }
        macro_rules! flags {
            ($($field:ident),*) => {$(
                if let Some(value) = self.$field {
                    f.$field = value;
                }
            )*};
        }
        flags!(is_imported, has_conversation, new_contact, is_private);
        if let Some(changes) = self.custom_fields {
            for (key, value) in changes {
                if value.is_null() {
                    f.custom_fields.remove(&key);
                } else {
                    f.custom_fields.insert(key, value);
                }
            }
        }
        if let Some(crm_data) = self.crm_data {
            f.crm_data = crm_data;
        }
        if let Some(ccf) = self.customer_custom_field {
            f.customer_custom_field = ccf;
        }
        if f.name.is_none() && f.phone.is_none() && f.email.is_none() {
            return Err(ApiError::field(
                "name",
                "a contact needs a name, a phone or an e-mail",
            ));
        }
        Ok(())
    }
}

// ------------------------------------------------------------------ writes

fn phone_taken(phone: &str) -> ApiError {
    ApiError::conflict(format!(
        "a contact with phone {phone} already exists in this workspace"
    ))
}

/// How a contact comes to be (for the audit entry and `isImported`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Creation {
    Api,
    FindOrCreate,
}

/// Items a new contact writes besides itself and its phone sentinel.
pub(crate) fn index_item_count(contact: &Contact) -> usize {
    contact.index_item_keys().len()
}

/// Adds a new contact and its index items to a mutation; `count` moves the list
/// counter for it (an import moves it once for a whole transaction).
pub(crate) fn add_contact(m: &mut Mutation<'_>, contact: &Contact, count: bool) -> ApiResult<()> {
    let ws = contact.workspace_id;
    m.create(contact)?;
    if let Some(phone) = &contact.fields.phone {
        m.claim(
            keys::contact_phone(ws, phone),
            &contact.id.to_string(),
            phone_taken(phone),
        );
    }
    for key in contact.index_item_keys() {
        m.put_item(contact.index_item(key));
    }
    if count {
        m.count(keys::counter(ws, LIST), 1);
    }
    if contact.fields.new_contact {
        m.count(keys::counter(ws, NEW_LIST), 1);
    }
    Ok(())
}

pub async fn create(
    store: &dyn Store,
    caller: &Caller,
    input: ContactInput,
    how: Creation,
) -> ApiResult<Contact> {
    if how == Creation::Api && input.phones.is_some() {
        return Err(ApiError::field(
            "phones",
            "only find-or-create takes a list of phones",
        ));
    }
    let mut fields = ContactFields::default();
    input.apply(&mut fields)?;
    with_fresh_id(|id| {
        let contact = Contact {
            id,
            workspace_id: caller.workspace_id,
            fields: fields.clone(),
            stamps: Stamps::new(),
            version: 1,
            organization_ids: Vec::new(),
            main_organization_id: None,
        };
        async move {
            let mut m = Mutation::new(caller);
            add_contact(&mut m, &contact, true)?;
            m.commit(store, "contact.create", "contact", &contact.id.to_string())
                .await?;
            Ok(contact)
        }
    })
    .await
}

/// One contact by id: one GetItem.
pub async fn get(store: &dyn Store, caller: &Caller, id: u64) -> ApiResult<Contact> {
    record::find(
        store,
        &keys::contact(caller.workspace_id, id),
        false,
        "contact",
    )
    .await
}

pub async fn update(
    store: &dyn Store,
    caller: &Caller,
    id: u64,
    input: ContactInput,
) -> ApiResult<Contact> {
    if input.phones.is_some() {
        return Err(ApiError::field(
            "phones",
            "only find-or-create takes a list of phones",
        ));
    }
    let current: Contact = record::find(
        store,
        &keys::contact(caller.workspace_id, id),
        true,
        "contact",
    )
    .await?;
    let mut contact = current.clone();
    input.apply(&mut contact.fields)?;
    let ws = caller.workspace_id;
    let mut m = Mutation::new(caller);
    if !m.update(&current, &mut contact)? {
        return Ok(current);
    }
    if contact.fields.phone != current.fields.phone {
        if let Some(old) = &current.fields.phone {
            m.remove(keys::contact_phone(ws, old));
        }
        if let Some(new) = &contact.fields.phone {
            m.claim(
                keys::contact_phone(ws, new),
                &id.to_string(),
                phone_taken(new),
            );
        }
    }
    let (old, new) = (current.index_item_keys(), contact.index_item_keys());
    for key in old.difference(&new) {
        m.remove(key.clone());
    }
    for key in new.difference(&old) {
        m.put_item(contact.index_item(key.clone()));
    }
    match (current.fields.new_contact, contact.fields.new_contact) {
        (false, true) => m.count(keys::counter(ws, NEW_LIST), 1),
        (true, false) => m.count(keys::counter(ws, NEW_LIST), -1),
        _ => &mut m,
    };
    m.commit(store, "contact.update", "contact", &id.to_string())
        .await?;
    Ok(contact)
}

/// The contact that holds a canonical phone, if any: one GetItem, then one more.
pub async fn by_phone(
    store: &dyn Store,
    caller: &Caller,
    e164: &str,
) -> ApiResult<Option<Contact>> {
    let Some(sentinel) = store
        .get(&keys::contact_phone(caller.workspace_id, e164), true)
        .await?
    else {
        return Ok(None);
    };
    let Some(id) = sentinel
        .get("owner")
        .and_then(Value::as_str)
        .and_then(|o| o.parse().ok())
    else {
        return Ok(None);
    };
    record::get(store, &keys::contact(caller.workspace_id, id), true).await
}

/// Finds the contact of any of the phones (every variant is one canonical phone),
/// or creates it with the first. Two concurrent calls for one phone get one contact.
pub async fn find_or_create(
    store: &dyn Store,
    caller: &Caller,
    mut input: ContactInput,
) -> ApiResult<(Contact, bool)> {
    let mut phones = Vec::new();
    if let Some(Some(raw)) = &input.phone {
        phones.push(canonical_phone("phone", raw)?);
    }
    for (i, raw) in input.phones.take().unwrap_or_default().iter().enumerate() {
        let canonical = canonical_phone(&format!("phones[{i}]"), raw)?;
        if !phones.contains(&canonical) {
            phones.push(canonical);
        }
    }
    let Some(first) = phones.first().cloned() else {
        return Err(ApiError::field(
            "phone",
            "find-or-create needs a phone or a list of phones",
        ));
    };
    let keys: Vec<Key> = phones
        .iter()
        .map(|p| keys::contact_phone(caller.workspace_id, p))
        .collect();
    let found = store.batch_get(&keys).await?;
    // The first phone supplied that has a contact wins.
    for phone in &phones {
        let holder = found
            .iter()
            .find(|i| i.get(SK).and_then(Value::as_str) == Some(phone.as_str()));
        if holder.is_some()
            && let Some(contact) = by_phone(store, caller, phone).await?
        {
            return Ok((contact, false));
        }
    }
    input.phone = Some(Some(first.clone()));
    match create(store, caller, input, Creation::FindOrCreate).await {
        Ok(contact) => Ok((contact, true)),
        // Another request created it in between: answer that contact.
        Err(e) if e.status == http::StatusCode::CONFLICT => {
            match by_phone(store, caller, &first).await? {
                Some(contact) => Ok((contact, false)),
                None => Err(e),
            }
        }
        Err(e) => Err(e),
    }
}

// ------------------------------------------------------------------ reads

/// Contacts by id, in the order given (BatchGetItem in chunks of 100).
async fn load(store: &dyn Store, workspace_id: u64, ids: &[u64]) -> ApiResult<Vec<Contact>> {
    let mut by_id = HashMap::with_capacity(ids.len());
    for chunk in ids.chunks(crate::store::MAX_BATCH_GET) {
        let keys: Vec<Key> = chunk
            .iter()
            .map(|&id| keys::contact(workspace_id, id))
            .collect();
        for item in store.batch_get(&keys).await? {
            let contact: Contact = record::from_item(item)?;
            by_id.insert(contact.id, contact);
        }
    }
    Ok(ids.iter().filter_map(|id| by_id.remove(id)).collect())
}

/// The contact ids at the end of index items' sort keys.
fn ids_of(items: &[Item]) -> Vec<u64> {
    items
        .iter()
        .filter_map(|i| {
            i.get(SK)
                .and_then(Value::as_str)
                .and_then(keys::trailing_id)
        })
        .collect()
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub enum SortField {
    #[default]
    CreatedAt,
    Name,
    Id,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub enum SortOrder {
    Ascend,
    #[default]
    Descend,
}

/// The query of `GET /v3/contacts`.
#[derive(Debug, Default, Deserialize, Validate)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ContactQuery {
    #[validate(length(min = 1, max = 128))]
    pub email_exact: Option<String>,
    #[validate(length(min = 1, max = 128))]
    pub search: Option<String>,
    pub new_contact: Option<bool>,
    #[validate(length(min = 1, max = 32))]
    pub organization_id: Option<String>,
    #[validate(length(min = 1, max = 128))]
    pub segment_id: Option<String>,
    pub session_created_at_from: Option<String>,
    pub session_created_at_to: Option<String>,
    pub with_organization: Option<bool>,
    pub sort_field: Option<SortField>,
    pub sort_order: Option<SortOrder>,
    pub limit: Option<u64>,
    pub offset: Option<u64>,
}

/// `GET /v3/contacts`. Each filter (`emailExact`, `organizationId`, `segmentId`
/// with `sessionCreatedAtFrom/To`) reads its own index into a set of contact ids;
/// the sets meet, and a page of them is read. `search` reads its index and keeps
/// what the other filters allow. With no filter, `newContact=true` reads its
/// index and the rest reads the list in the order asked.
pub async fn list(
    store: &dyn Store,
    caller: &Caller,
    q: ContactQuery,
) -> ApiResult<ListPage<Contact>> {
    let paging = Paging::parse(q.limit, q.offset)?;
    let sort = q.sort_field.unwrap_or_default();
    let forward = q.sort_order.unwrap_or_default() == SortOrder::Ascend;
    let only_new = q.new_contact == Some(true);
    let ws = caller.workspace_id;

    let mut sets: Vec<Vec<u64>> = Vec::new();
    if let Some(email) = q.email_exact.as_deref() {
        sets.push(email_ids(store, ws, email).await?);
    }
    if let Some(org) = q.organization_id.as_deref() {
        let org = relations::parse_organization_id(org)?;
        sets.push(relations::contacts_of_organization(store, ws, org).await?);
    }
    let session_from = q
        .session_created_at_from
        .as_deref()
        .map(|t| parse_time("sessionCreatedAtFrom", t))
        .transpose()?;
    let session_to = q
        .session_created_at_to
        .as_deref()
        .map(|t| parse_time("sessionCreatedAtTo", t))
        .transpose()?;
    if let (Some(from), Some(to)) = (session_from, session_to)
        && to < from
    {
        return Err(ApiError::field(
            "sessionCreatedAtTo",
            "must not be before sessionCreatedAtFrom",
        ));
    }
    if q.segment_id.is_some() || session_from.is_some() || session_to.is_some() {
        sets.push(
            relations::contacts_by_last_session(
                store,
                ws,
                q.segment_id.as_deref(),
                session_from,
                session_to,
            )
            .await?,
        );
    }
    let allowed = intersect(sets);

    if let Some(term) = q.search.as_deref() {
        let keep = |c: &Contact| {
            (!only_new || c.fields.new_contact)
                && allowed
                    .as_ref()
                    .is_none_or(|a| a.binary_search(&c.id).is_ok())
        };
        let data = search(store, caller, term, &keep, paging).await?;
        return Ok(ListPage {
            total_count: None,
            data,
        });
    }
    if let Some(ids) = allowed {
        return page_of_ids(store, ws, ids, sort, forward, only_new, paging).await;
    }
    if only_new {
        if sort == SortField::Name {
            return Err(ApiError::field(
                "sortField",
                "newContact=true lists by creation; sort by createdAt or id",
            ));
        }
        let mut query = Query::new(Index::TABLE, keys::new_contacts(ws), SkRange::All);
        query.forward = forward;
        let counter = keys::counter(ws, NEW_LIST);
        let (items, total) = tokio::try_join!(
            offset_page(store, query, paging),
            record::count(store, &counter)
        )?;
        let data = load(store, ws, &ids_of(&items)).await?;
        return Ok(ListPage {
            total_count: Some(total),
            data,
        });
    }
    let mut query = match sort {
        SortField::Name => Query::new(keys::GSI1, keys::contacts_by_name(ws), SkRange::All),
        // Ids are time-ordered: creation order is id order.
        SortField::CreatedAt | SortField::Id => {
            Query::new(Index::TABLE, keys::contacts(ws), SkRange::All)
        }
    };
    query.forward = forward;
    counted_page(store, query, paging, keys::counter(ws, LIST)).await
}

/// The contacts with this e-mail (without case), ascending.
async fn email_ids(store: &dyn Store, ws: u64, email: &str) -> ApiResult<Vec<u64>> {
    let query = Query {
        keys_only: true,
        ..Query::new(
            Index::TABLE,
            keys::contact_emails(ws),
            SkRange::Prefix(keys::contact_email_prefix(&email.trim().to_lowercase())),
        )
    };
    Ok(ids_of(
        &read_up_to(store, query, MAX_WINDOW as usize).await?,
    ))
}

/// The ids in every set (each ascending), or `None` when no filter made a set.
fn intersect(sets: Vec<Vec<u64>>) -> Option<Vec<u64>> {
    let mut sets = sets.into_iter();
    let mut result = sets.next()?;
    for set in sets {
        result.retain(|id| set.binary_search(id).is_ok());
    }
    result.sort_unstable();
    result.dedup();
    Some(result)
}

/// A page of a set of contact ids. In creation order (id order) only the page
/// is read; sorting by name or filtering new contacts reads the set.
async fn page_of_ids(
    store: &dyn Store,
    ws: u64,
    mut ids: Vec<u64>,
    sort: SortField,
    forward: bool,
    only_new: bool,
    paging: Paging,
) -> ApiResult<ListPage<Contact>> {
    let (offset, limit) = (paging.offset as usize, paging.limit as usize);
    if only_new || sort == SortField::Name {
        let mut all = load(store, ws, &ids).await?;
        all.retain(|c| !only_new || c.fields.new_contact);
        sort_contacts(&mut all, sort, forward);
        let total = all.len() as u64;
        let data = all.into_iter().skip(offset).take(limit).collect();
        return Ok(ListPage {
            total_count: Some(total),
            data,
        });
    }
    if !forward {
        ids.reverse();
    }
    let total = ids.len() as u64;
    let page: Vec<u64> = ids.into_iter().skip(offset).take(limit).collect();
    Ok(ListPage {
        total_count: Some(total),
        data: load(store, ws, &page).await?,
    })
}

fn sort_contacts(contacts: &mut [Contact], sort: SortField, forward: bool) {
    match sort {
        SortField::Name => contacts
            .sort_by_cached_key(|c| (text::fold(c.fields.name.as_deref().unwrap_or("")), c.id)),
        SortField::CreatedAt | SortField::Id => contacts.sort_by_key(|c| c.id),
    }
    if !forward {
        contacts.reverse();
    }
}

/// `search`: an e-mail (exact), a phone in any format, an id, or the first
/// letters of words of the name (at least 3; case and accents ignored). Name
/// matches come in the order of the matched word.
async fn search(
    store: &dyn Store,
    caller: &Caller,
    term: &str,
    keep: &(dyn Fn(&Contact) -> bool + Sync),
    paging: Paging,
) -> ApiResult<Vec<Contact>> {
    let ws = caller.workspace_id;
    let term = term.trim();
    let page = |mut found: Vec<Contact>| -> Vec<Contact> {
        found.retain(|c| keep(c));
        found
            .into_iter()
            .skip(paging.offset as usize)
            .take(paging.limit as usize)
            .collect()
    };

    if term.contains('@') {
        let ids = email_ids(store, ws, term).await?;
        return Ok(page(load(store, ws, &ids).await?));
    }
    if term
        .chars()
        .all(|c| c.is_ascii_digit() || "+-() ./".contains(c))
        && term.chars().any(|c| c.is_ascii_digit())
    {
        let mut found = Vec::new();
        if let Ok(e164) = phone::canonical(term)
            && let Some(contact) = by_phone(store, caller, &e164).await?
        {
            found.push(contact);
        }
        if let Ok(id) = term.parse::<u64>()
            && !found.iter().any(|c| c.id == id)
            && let Some(contact) =
                record::get::<Contact>(store, &keys::contact(ws, id), false).await?
        {
            found.push(contact);
        }
        return Ok(page(found));
    }

    let terms = text::search_words(term);
    let Some(driving) = terms.iter().max_by_key(|t| t.len()).cloned() else {
        return Err(ApiError::field(
            "search",
            "a name search needs a word of at least 3 letters",
        ));
    };
    // Read the index of the longest word; the other words must prefix a word of the name.
    let mut query = Query::new(
        Index::TABLE,
        keys::contact_words(ws),
        SkRange::Prefix(driving),
    );
    query.keys_only = true;
    let wanted = (paging.offset + paging.limit) as usize;
    let mut matches = Vec::new();
    let mut seen = std::collections::HashSet::new();
    let mut read = 0;
    while matches.len() < wanted && read < MAX_WINDOW as usize {
        query.limit = Some(100);
        let step = store.query(&query).await?;
        read += step.items.len();
        let ids: Vec<u64> = ids_of(&step.items)
            .into_iter()
            .filter(|id| seen.insert(*id))
            .collect();
        for contact in load(store, ws, &ids).await? {
            let words = text::search_words(contact.fields.name.as_deref().unwrap_or(""));
            let all_match = terms
                .iter()
                .all(|t| words.iter().any(|w| w.starts_with(t.as_str())));
            if all_match && keep(&contact) {
                matches.push(contact);
            }
        }
        match step.last_key {
            Some(last) => query.start_after = Some(last),
            None => break,
        }
    }
    Ok(matches
        .into_iter()
        .skip(paging.offset as usize)
        .take(paging.limit as usize)
        .collect())
}

/// The query of `GET /v3/contacts/all`.
#[derive(Debug, Default, Deserialize, Validate)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct WindowQuery {
    pub last48h: Option<bool>,
    pub new_contact: Option<bool>,
    pub created_at_from: Option<String>,
    pub created_at_to: Option<String>,
    pub limit: Option<u64>,
    pub offset: Option<u64>,
}

/// The longest window of `createdAtFrom`/`createdAtTo` (the spec: 2 hours).
pub const MAX_WINDOW_HOURS: i64 = 2;

fn parse_time(field: &str, text: &str) -> ApiResult<Timestamp> {
    ids::parse_ts(text)
        .ok_or_else(|| ApiError::field(field, "must be an RFC 3339 date-time or a date"))
}

/// `GET /v3/contacts/all`: contacts created in a window of at most 2 hours (or the
/// last 48 hours), oldest first. One range query on the table: ids are time-ordered.
pub async fn list_window(
    store: &dyn Store,
    caller: &Caller,
    q: WindowQuery,
) -> ApiResult<ListPage<Contact>> {
    let paging = Paging::parse(q.limit, q.offset)?;
    let (from, to) = match (
        q.last48h == Some(true),
        &q.created_at_from,
        &q.created_at_to,
    ) {
        (true, None, None) => {
            let now = ids::now();
            (now - chrono::Duration::hours(48), now)
        }
        (true, _, _) => {
            return Err(ApiError::field(
                "last48h",
                "use last48h or createdAtFrom/createdAtTo, not both",
            ));
        }
        (false, Some(from), Some(to)) => {
            let (from, to) = (
                parse_time("createdAtFrom", from)?,
                parse_time("createdAtTo", to)?,
            );
            if to < from {
                return Err(ApiError::field(
                    "createdAtTo",
                    "must not be before createdAtFrom",
                ));
            }
            if to - from > chrono::Duration::hours(MAX_WINDOW_HOURS) {
                return Err(ApiError::field(
                    "createdAtTo",
                    "must be at most 2 hours after createdAtFrom",
                ));
            }
            (from, to)
        }
        (false, None, _) => {
            return Err(ApiError::field(
                "createdAtFrom",
                "is required (with createdAtTo), or pass last48h=true",
            ));
        }
        (false, Some(_), None) => {
            return Err(ApiError::field(
                "createdAtTo",
                "is required with createdAtFrom",
            ));
        }
    };
    let (low, high) = ids::id_range(&from, &to);
    let range = SkRange::Between(ids::padded(low), ids::padded(high));
    let ws = caller.workspace_id;
    let only_new = q.new_contact == Some(true);
    let partition = if only_new {
        keys::new_contacts(ws)
    } else {
        keys::contacts(ws)
    };
    let query = Query::new(Index::TABLE, partition, range);
    let counting = Query {
        keys_only: true,
        ..query.clone()
    };
    let (items, in_window) = tokio::try_join!(
        offset_page(store, query, paging),
        read_up_to(store, counting, usize::MAX),
    )?;
    let data = if only_new {
        load(store, ws, &ids_of(&items)).await?
    } else {
        items
            .into_iter()
            .map(record::from_item)
            .collect::<ApiResult<_>>()?
    };
    Ok(ListPage {
        total_count: Some(in_window.len() as u64),
        data,
    })
}

/// The query of `GET /v1/contacts`.
#[derive(Debug, Default, Deserialize, Validate)]
#[serde(deny_unknown_fields)]
pub struct V1Query {
    pub limit: Option<u64>,
    pub cursor: Option<String>,
    pub created_at_from: Option<String>,
    pub created_at_to: Option<String>,
    #[validate(length(min = 1, max = 100))]
    pub phone: Option<String>,
    #[validate(length(min = 1, max = 128))]
    pub email: Option<String>,
}

/// `GET /v1/contacts`: oldest first after the cursor (a contact id).
pub async fn list_v1(
    store: &dyn Store,
    caller: &Caller,
    q: V1Query,
) -> ApiResult<CursorPage<Contact>> {
    let paging = CursorPaging::parse(q.limit, q.cursor)?;
    let after = paging.numeric_cursor()?.unwrap_or(0);
    let from = q
        .created_at_from
        .as_deref()
        .map(|t| parse_time("created_at_from", t))
        .transpose()?;
    let to = q
        .created_at_to
        .as_deref()
        .map(|t| parse_time("created_at_to", t))
        .transpose()?;
    let in_time = |c: &Contact| {
        from.is_none_or(|f| c.stamps.created_at >= f) && to.is_none_or(|t| c.stamps.created_at <= t)
    };
    let ws = caller.workspace_id;

    // A phone or an e-mail names a handful of contacts: read them and filter.
    let few = if let Some(raw) = q.phone.as_deref() {
        let e164 = canonical_phone("phone", raw)?;
        Some(
            by_phone(store, caller, &e164)
                .await?
                .into_iter()
                .collect::<Vec<_>>(),
        )
    } else if let Some(email) = q.email.as_deref() {
        let query = Query::new(
            Index::TABLE,
            keys::contact_emails(ws),
            SkRange::Prefix(keys::contact_email_prefix(&email.trim().to_lowercase())),
        );
        let ids = ids_of(&read_up_to(store, query, MAX_WINDOW as usize).await?);
        Some(load(store, ws, &ids).await?)
    } else {
        None
    };
    if let Some(mut found) = few {
        found.retain(|c| c.id > after && in_time(c));
        found.sort_by_key(|c| c.id);
        let more = found.len() > paging.limit as usize;
        found.truncate(paging.limit as usize);
        let next_cursor = if more {
            found.last().map(|c| c.id.to_string()).unwrap_or_default()
        } else {
            String::new()
        };
        return Ok(CursorPage {
            data: found,
            next_cursor,
        });
    }

    // Otherwise the creation window is an id range of the table.
    let (low, high) = ids::id_range(
        &from.unwrap_or_default(),
        &to.unwrap_or_else(|| ids::now() + chrono::Duration::days(1)),
    );
    let low = low.max(after.saturating_add(1));
    let query = Query::new(
        Index::TABLE,
        keys::contacts(ws),
        SkRange::Between(ids::padded(low), ids::padded(high)),
    );
    let (items, more) = cursor_page(store, query, paging.limit).await?;
    let data: Vec<Contact> = items
        .into_iter()
        .map(record::from_item)
        .collect::<ApiResult<_>>()?;
    let next_cursor = match data.last() {
        Some(last) if more => last.id.to_string(),
        _ => String::new(),
    };
    Ok(CursorPage { data, next_cursor })
}
