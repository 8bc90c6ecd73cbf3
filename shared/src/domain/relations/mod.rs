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

use crate::error::ApiResult;
use crate::ids::{self, Timestamp, WorkspaceId};
use crate::keys;
use crate::keys::{ConversationId, OrganizationId};
use crate::record::{self, Mutation, Personal, Record, Stamps, Versioned};
use crate::store::Store;
use crate::store::{Item, Key};

pub use load::{ConversationLine, LinkLine, OrganizationLine, line_types};
pub use read::{
    contacts_by_last_session, contacts_of_organization, organizations_of, parse_organization_id,
};

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Organization {
    pub id: OrganizationId,
    pub workspace_id: WorkspaceId,
    pub name: String,
    pub active: bool,
    #[serde(flatten)]
    pub stamps: Stamps,
    pub version: u64,
}

impl Record for Organization {
    const EVENTS: Option<&'static str> = Some("organization");
    const TYPE: &'static str = "Organization";
    /// A company, not a person.
    const PERSONAL: Personal = Personal::none(&["name"]);
    fn key(&self) -> Key {
        keys::organization(self.workspace_id, self.id)
    }
}

/// An organization as a contact listing shows it (`withOrganization=true`).
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
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

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Validate, schemars::JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct LastSession {
    #[validate(length(min = 1, max = 128))]
    pub id: String,
    #[schemars(with = "crate::ids::Timestamp")]
    #[serde(with = "ids::ts_format")]
    pub created_at: Timestamp,
    /// The segment (inbox) the session is in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[validate(length(min = 1, max = 128))]
    pub segment_id: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Conversation {
    pub id: ConversationId,
    pub workspace_id: WorkspaceId,
    pub contact_id: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_session: Option<LastSession>,
    #[serde(flatten)]
    pub stamps: Stamps,
    pub version: u64,
}

impl Record for Conversation {
    const EVENTS: Option<&'static str> = Some("conversation");
    const TYPE: &'static str = "Conversation";
    const PERSONAL: Personal = Personal::none(&["lastSession"]);
    fn key(&self) -> Key {
        keys::conversation(self.workspace_id, self.id)
    }
    /// By contact (gsi1): what a merge moves.
    fn index_keys(&self) -> Vec<(&'static str, String)> {
        vec![
            (
                keys::GSI1.pk,
                keys::contact_conversations(self.workspace_id, self.contact_id),
            ),
            (keys::GSI1.sk, ids::padded(self.id.0)),
        ]
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
            crate::keys::ContactId(self.contact_id),
            self.id.0,
        );
        let mut keys = vec![Key::new(keys::last_sessions(ws), sk.clone())];
        if let Some(segment) = &session.segment_id {
            keys.push(Key::new(keys::segment_sessions(ws, segment), sk));
        }
        keys
    }
}

pub(crate) fn index_item(key: Key, contact_id: u64) -> Item {
    let mut item = key.item("RelationIndex");
    item.insert("contactId".into(), contact_id.into());
    item
}

crate::versioned!(Organization, Conversation);

/// Creates a loaded record, or writes it over the one read when it changed.
pub(super) fn save<R: Versioned>(
    m: &mut Mutation<'_>,
    record: &mut R,
    read: Option<&R>,
) -> ApiResult<()> {
    match read {
        None => {
            record.set_version(1);
            m.create(record)?;
        }
        Some(current) => {
            m.update(current, record)?;
        }
    }
    Ok(())
}

/// Moves conversation `id` to contact `to` (a merge): its record and its
/// last-session index items, which name the contact, in one transaction.
pub(crate) async fn move_conversation(
    store: &dyn Store,
    caller: &crate::auth::Caller,
    id: ConversationId,
    to: u64,
) -> ApiResult<()> {
    let ws = caller.workspace_id;
    let Some(current) =
        record::get::<Conversation>(store, &keys::conversation(ws, id), true).await?
    else {
        return Ok(());
    };
    let mut m = Mutation::new(caller);
    if stage_last_session(store, &mut m, ws, id, to, current.last_session, false).await? {
        m.commit(store, "conversation.merge", "conversation", &id.to_string())
            .await?;
    }
    Ok(())
}

/// Adds to `m` the writes that give conversation `id` (of contact `contact_id`)
/// its last session: its record and its index items, the ones the contact
/// list's `segmentId` and `sessionCreatedAtFrom/To` read. With `newer_only`, a
/// session older than the conversation's last one changes nothing (sessions
/// arrive in any order). Answers whether anything is to be written. The
/// loader's `conversation` lines and ingested sessions both come here: one
/// write path.
pub(crate) async fn stage_last_session(
    store: &dyn Store,
    m: &mut Mutation<'_>,
    ws: WorkspaceId,
    id: ConversationId,
    contact_id: u64,
    last_session: Option<LastSession>,
    newer_only: bool,
) -> ApiResult<bool> {
    let current: Option<Conversation> =
        record::get(store, &keys::conversation(ws, id), true).await?;
    if newer_only
        && let (Some(stored), Some(new)) = (
            current.as_ref().and_then(|c| c.last_session.as_ref()),
            last_session.as_ref(),
        )
        && new.created_at < stored.created_at
    {
        return Ok(false);
    }
    let mut conversation = current.clone().unwrap_or(Conversation {
        id,
        workspace_id: ws,
        contact_id,
        last_session: None,
        stamps: Stamps::new(),
        version: 0,
    });
    conversation.contact_id = contact_id;
    conversation.last_session = last_session;
    if current.as_ref() == Some(&conversation) {
        return Ok(false);
    }
    let old_keys = current
        .as_ref()
        .map(Conversation::index_keys)
        .unwrap_or_default();
    let new_keys = conversation.index_keys();
    for key in old_keys.iter().filter(|k| !new_keys.contains(k)) {
        m.remove(key.clone());
    }
    for key in new_keys.iter().filter(|k| !old_keys.contains(k)) {
        m.put_item(index_item(key.clone(), conversation.contact_id));
    }
    save(m, &mut conversation, current.as_ref())?;
    Ok(true)
}

/// The stored items of item_shapes/relations.json read back (domain::item_shapes).
#[cfg(test)]
mod shapes {
    use serde_json::Value;

    use super::{Conversation, Organization, index_item};
    use crate::domain::item_shapes::{literal, round_trip, stored, texts_declared};

    #[test]
    fn relations_keep_their_shape() {
        round_trip::<Organization>("Organization");
        texts_declared::<Organization>();
        let conversation = round_trip::<Conversation>("Conversation");
        texts_declared::<Conversation>();
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
}
