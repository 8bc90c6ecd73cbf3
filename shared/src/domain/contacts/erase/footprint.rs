//! Where a person's data is: every record and copy an erasure scrubs and an
//! export gathers, found from the contact through the indexes its records
//! are written with (no table scan).

use serde_json::Value;

use super::super::record::Contact;
use crate::error::ApiResult;
use crate::ids::WorkspaceId;
use crate::keys;
use crate::page::read_up_to;
use crate::record::StoredEvent;
use crate::store::{Index, Item, Query, SK, SkRange, Store};

/// The records of one person, by id.
pub(super) struct Footprint {
    pub workspace: WorkspaceId,
    /// The contact's id and the ids merged into it.
    pub contact_ids: Vec<u64>,
    /// The phone and the phones merged into it.
    pub phones: Vec<String>,
    pub deals: Vec<u64>,
    pub conversations: Vec<u64>,
    pub sessions: Vec<String>,
    /// Welcome messages sent to its phones.
    pub welcome_messages: Vec<String>,
}

/// Every item of a partition (or of an index partition).
async fn all(store: &dyn Store, index: Index, pk: String, range: SkRange) -> ApiResult<Vec<Item>> {
    read_up_to(store, Query::new(index, pk, range), usize::MAX).await
}

fn sk_of(item: &Item) -> Option<&str> {
    item.get(SK).and_then(Value::as_str)
}

impl Footprint {
    pub async fn of(store: &dyn Store, contact: &Contact) -> ApiResult<Self> {
        let ws = contact.workspace_id;
        let mut contact_ids = vec![contact.id];
        contact_ids.extend(&contact.merged_ids);
        let phones: Vec<String> = contact
            .fields
            .phone
            .iter()
            .chain(&contact.alias_phones)
            .cloned()
            .collect();
        let deal_index = keys::deals_by(ws, "CONTACT", &contact.id.to_string());
        let deals = all(store, Index::TABLE, deal_index, SkRange::All)
            .await?
            .iter()
            .filter_map(|i| keys::trailing_id(sk_of(i)?))
            .collect();
        let mut conversations = Vec::new();
        for id in &contact_ids {
            let theirs = keys::contact_conversations(ws, *id);
            for item in all(store, keys::GSI1, theirs, SkRange::All).await? {
                conversations.extend(sk_of(&item).and_then(keys::trailing_id));
            }
        }
        let mut sessions = Vec::new();
        let partitions = conversations
            .iter()
            .map(|c| keys::sessions_by(ws, "CONVERSATION", &c.to_string()))
            .chain(phones.iter().map(|p| keys::sessions_by(ws, "PHONE", p)));
        for partition in partitions {
            for item in all(store, Index::TABLE, partition, SkRange::All).await? {
                let id = sk_of(&item)
                    .and_then(|sk| sk.split_once('#'))
                    .map(|(_, id)| id);
                if let Some(id) = id
                    && !sessions.iter().any(|s| s == id)
                {
                    sessions.push(id.to_owned());
                }
            }
        }
        // The outbox has no index by phone; it is read whole (an erasure is rare).
        let welcome_messages = all(
            store,
            Index::TABLE,
            keys::welcome_messages(ws),
            SkRange::All,
        )
        .await?
        .iter()
        .filter(|m| {
            m.get("phone")
                .and_then(Value::as_str)
                .is_some_and(|p| phones.iter().any(|mine| mine == p))
        })
        .filter_map(|m| sk_of(m).map(str::to_owned))
        .collect();
        Ok(Self {
            workspace: ws,
            contact_ids,
            phones,
            deals,
            conversations,
            sessions,
            welcome_messages,
        })
    }

    /// The records whose events tell of the person: `(resource, id)`.
    pub fn histories(&self) -> Vec<(&'static str, String)> {
        let ids = |resource, ids: &mut dyn Iterator<Item = String>| {
            ids.map(|id| (resource, id)).collect::<Vec<_>>()
        };
        let mut out = ids("contact", &mut self.contact_ids.iter().map(u64::to_string));
        out.extend(ids("deal", &mut self.deals.iter().map(u64::to_string)));
        out.extend(ids("session", &mut self.sessions.iter().cloned()));
        out.extend(ids(
            "conversation",
            &mut self.conversations.iter().map(u64::to_string),
        ));
        out.extend(ids(
            "welcomeMessage",
            &mut self.welcome_messages.iter().cloned(),
        ));
        out
    }

    /// The events of those records, oldest first per record.
    pub async fn events(&self, store: &dyn Store) -> ApiResult<Vec<StoredEvent>> {
        let ws = self.workspace;
        let mut events = Vec::new();
        for (resource, id) in self.histories() {
            let partition = keys::history(ws, resource, &id);
            for item in all(store, keys::GSI1, partition, SkRange::All).await? {
                events.push(crate::record::from_item(item)?);
            }
        }
        Ok(events)
    }
}

/// The person's own words: a string of a copy that holds one of them is theirs.
pub(super) struct Secrets(Vec<String>);

impl Secrets {
    pub fn of(contact: &Contact, phones: &[String]) -> Self {
        let f = &contact.fields;
        let mut words: Vec<String> = [
            &f.name,
            &f.email,
            &f.external_id,
            &f.notes,
            &f.location,
            &f.avatar,
            &f.social_a_id,
            &f.social_b_id,
            &f.social_c_id,
            &f.legacy_id,
        ]
        .into_iter()
        .flatten()
        .chain(phones)
        // Each word of the name too: a message that greets them by it.
        .chain(
            f.name
                .iter()
                .flat_map(|n| n.split_whitespace().map(str::to_owned))
                .collect::<Vec<_>>()
                .iter(),
        )
        .map(|w| w.trim().to_lowercase())
        // Too short to be theirs alone.
        .filter(|w| w.chars().count() >= 3)
        .collect();
        words.sort();
        words.dedup();
        Self(words)
    }

    /// Blanks (to `null`) every string in `value` that holds a secret; says
    /// whether it changed anything.
    pub fn blank(&self, value: &mut Value) -> bool {
        match value {
            Value::String(s) => {
                let lower = s.to_lowercase();
                let theirs = self.0.iter().any(|w| lower.contains(w.as_str()));
                if theirs {
                    *value = Value::Null;
                }
                theirs
            }
            Value::Array(items) => items.iter_mut().fold(false, |c, v| self.blank(v) | c),
            Value::Object(map) => map.values_mut().fold(false, |c, v| self.blank(v) | c),
            _ => false,
        }
    }

    /// Whether `text` holds a secret.
    pub fn found_in(&self, text: &str) -> bool {
        let lower = text.to_lowercase();
        self.0.iter().any(|w| lower.contains(w.as_str()))
    }
}
