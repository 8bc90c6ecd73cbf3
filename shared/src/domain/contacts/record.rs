//! The stored contact, its key and index attributes, and its index items.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::ids::WorkspaceId;
use crate::keys;
use crate::record::{Personal, Record, Stamps};
use crate::store::{Item, Key};
use crate::text;

/// `crmData`: the members the spec lists for `/v1`, used by both versions.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
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
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
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
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
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

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Contact {
    pub id: u64,
    pub workspace_id: WorkspaceId,
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
    /// The contacts merged into this one, and the phones they brought that
    /// stay this contact's identities: what an erasure of the person finds.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub merged_ids: Vec<u64>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub alias_phones: Vec<String>,
    /// Set on the tombstone an erasure leaves.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub erased: Option<Erased>,
}

/// Who erased a contact, and when.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Erased {
    #[schemars(with = "crate::ids::Timestamp")]
    #[serde(with = "crate::ids::ts_format")]
    pub at: crate::ids::Timestamp,
    /// The token that asked.
    pub by: String,
}

crate::versioned!(Contact);

impl Record for Contact {
    const EVENTS: Option<&'static str> = Some("contact");

    fn event_object(&self) -> serde_json::Value {
        crate::record::as_event_object(crate::domain::contacts::ContactV3::from(self.clone()))
    }
    const TYPE: &'static str = "Contact";
    /// All a contact says is the person's, but where they came from (a
    /// channel, counted by reports) and its tombstone's mark.
    const PERSONAL: Personal = Personal {
        fields: &[
            "_id",
            "name",
            "email",
            "phone",
            "location",
            "avatar",
            "notes",
            "externalId",
            "socialAId",
            "socialBId",
            "socialCId",
            "customFields",
            "crmData",
            "CustomerCustomField",
            "aliasPhones",
        ],
        copies: &[],
        plain: &["origin", "erased"],
    };
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
    /// A new contact, version 1.
    pub fn new(id: u64, workspace_id: WorkspaceId, fields: ContactFields, stamps: Stamps) -> Self {
        Self {
            id,
            workspace_id,
            fields,
            stamps,
            version: 1,
            organization_ids: Vec::new(),
            main_organization_id: None,
            merged_ids: Vec::new(),
            alias_phones: Vec::new(),
            erased: None,
        }
    }

    /// The non-unique index items of this contact: e-mail, external id, name
    /// words, new. (The e-mail's holder sentinel, [`Contact::hold_email`],
    /// is written when the e-mail is given, and kept.)
    pub(crate) fn index_item_keys(&self) -> BTreeSet<Key> {
        let ws = self.workspace_id;
        let mut keys = BTreeSet::new();
        if let Some(email) = &self.fields.email {
            keys.insert(keys::contact_email(ws, &email.to_lowercase(), self.id));
        }
        if let Some(external_id) = &self.fields.external_id {
            keys.insert(keys::contact_external_id(ws, external_id, self.id));
        }
        for word in text::search_words(self.fields.name.as_deref().unwrap_or("")) {
            keys.insert(keys::contact_word(ws, &word, self.id));
        }
        if self.fields.new_contact {
            keys.insert(keys::new_contact(ws, self.id));
        }
        keys
    }

    /// The e-mail as its index items hold it (without case).
    pub(crate) fn email_key(&self) -> Option<String> {
        self.fields.email.as_ref().map(|e| e.to_lowercase())
    }

    /// Holds the contact's e-mail, as the first holder or as a duplicate
    /// (`GET /v3/contacts/duplicates` reads the shared marks).
    pub(crate) fn hold_email(&self, m: &mut crate::record::Mutation<'_>) {
        let Some(email) = self.email_key() else {
            return;
        };
        let ws = self.workspace_id;
        let mark = keys::contact_shared_email(ws, &email).item("SharedValue");
        m.share(keys::contact_email_held(ws, &email), mark);
    }

    pub(crate) fn index_item(&self, key: Key) -> Item {
        let mut item = key.item("ContactIndex");
        item.insert("contactId".into(), self.id.into());
        item
    }
}
