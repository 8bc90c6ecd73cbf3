//! Records this API reads but does not create: organizations (linked to
//! contacts) and conversations (with their last session). An operator loads them
//! with `crm load` (JSON lines, see `load`); the contact list filters on them
//! (`organizationId`, `segmentId`, `sessionCreatedAtFrom/To`) and shows them
//! (`withOrganization`).
//!
//! Every filter reads an index partition written with the record, never the
//! workspace's contacts: the contacts of an organization, and conversations by
//! the time of their last session (all, and per segment).

mod load;
mod read;

use serde::{Deserialize, Serialize};
use validator::Validate;

use crate::ids::WorkspaceId;
use crate::ids::{self, Timestamp};
use crate::keys;
use crate::record::{Record, Stamps};
use crate::store::{Item, Key, PK, SK, TYPE};

pub use load::{ConversationLine, LinkLine, OrganizationLine, line_types};
pub use read::{
    contacts_by_last_session, contacts_of_organization, organizations_of, parse_organization_id,
};

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Organization {
    pub id: u64,
    pub workspace_id: WorkspaceId,
    pub name: String,
    pub active: bool,
    #[serde(flatten)]
    pub stamps: Stamps,
    pub version: u64,
}

impl Record for Organization {
    const TYPE: &'static str = "Organization";
    fn key(&self) -> Key {
        keys::organization(self.workspace_id, self.id)
    }
}

/// An organization as a contact listing shows it (`withOrganization=true`).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OrganizationView {
    pub id: String,
    pub name: String,
    pub active: bool,
    pub workspace_id: WorkspaceId,
    #[serde(flatten)]
    pub stamps: Stamps,
}

impl From<Organization> for OrganizationView {
    fn from(o: Organization) -> Self {
        Self {
            id: o.id.to_string(),
            name: o.name,
            active: o.active,
            workspace_id: o.workspace_id,
            stamps: o.stamps,
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Validate)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct LastSession {
    #[validate(length(min = 1, max = 128))]
    pub id: String,
    #[serde(with = "ids::ts_format")]
    pub created_at: Timestamp,
    /// The segment (inbox) the session is in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[validate(length(min = 1, max = 128))]
    pub segment_id: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Conversation {
    pub id: u64,
    pub workspace_id: WorkspaceId,
    pub contact_id: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_session: Option<LastSession>,
    #[serde(flatten)]
    pub stamps: Stamps,
    pub version: u64,
}

impl Record for Conversation {
    const TYPE: &'static str = "Conversation";
    fn key(&self) -> Key {
        keys::conversation(self.workspace_id, self.id)
    }
}

impl Conversation {
    /// Its index items: by last-session time, overall and in its segment.
    pub(crate) fn index_keys(&self) -> Vec<Key> {
        let Some(session) = &self.last_session else {
            return Vec::new();
        };
        let ws = self.workspace_id;
        let sk = keys::last_session_sort(
            &ids::format_ts(&session.created_at),
            ids::ContactId(self.contact_id),
            self.id,
        );
        let mut keys = vec![Key::new(keys::last_sessions(ws), sk.clone())];
        if let Some(segment) = &session.segment_id {
            keys.push(Key::new(keys::segment_sessions(ws, segment), sk));
        }
        keys
    }
}

pub(crate) fn index_item(key: Key, contact_id: u64) -> Item {
    let mut item = Item::new();
    item.insert(PK.into(), key.pk.into());
    item.insert(SK.into(), key.sk.into());
    item.insert(TYPE.into(), "RelationIndex".into());
    item.insert("contactId".into(), contact_id.into());
    item
}

crate::versioned!(Organization, Conversation);
