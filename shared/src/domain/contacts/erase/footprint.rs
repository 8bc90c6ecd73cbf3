//! Where a person's data is: every record and copy an erasure scrubs and an
//! export gathers, found from the contact through the indexes its records
//! are written with (no table scan), and the values that are theirs, taken
//! from the contact and from its history (earlier names, e-mails, phones).

use serde_json::Value;

use super::super::record::Contact;
use crate::error::ApiResult;
use crate::ids::WorkspaceId;
use crate::keys;
use crate::keys::DealId;
use crate::page::read_up_to;
use crate::record::{StoredEvent, personal};
use crate::store::{Index, Item, Query, SK, SkRange, Store};

/// The records of one person, by id, and their events.
pub(super) struct Footprint {
    pub workspace: WorkspaceId,
    /// The contact's id and the ids merged into it.
    pub contact_ids: Vec<u64>,
    /// Every phone the person had here (canonical), and every e-mail.
    pub phones: Vec<String>,
    pub emails: Vec<String>,
    pub deals: Vec<DealId>,
    pub conversations: Vec<u64>,
    pub sessions: Vec<String>,
    /// Welcome messages sent to their phones.
    pub welcome_messages: Vec<String>,
    /// The events of all of the above, each once.
    pub events: Vec<StoredEvent>,
    /// The person's own words, for the copies.
    pub secrets: Secrets,
}

/// Every item of a partition (or of an index partition).
async fn all(store: &dyn Store, index: Index, pk: String, range: SkRange) -> ApiResult<Vec<Item>> {
    read_up_to(store, Query::new(index, pk, range), usize::MAX).await
}

fn sk_of(item: &Item) -> Option<&str> {
    item.get(SK).and_then(Value::as_str)
}

fn push_new<T: PartialEq>(list: &mut Vec<T>, value: T) {
    if !list.contains(&value) {
        list.push(value);
    }
}

impl Footprint {
    pub async fn of(store: &dyn Store, contact: &Contact) -> ApiResult<Self> {
        let ws = contact.workspace_id;
        let mut found = Self {
            workspace: ws,
            contact_ids: vec![contact.id],
            phones: Vec::new(),
            emails: Vec::new(),
            deals: Vec::new(),
            conversations: Vec::new(),
            sessions: Vec::new(),
            welcome_messages: Vec::new(),
            events: Vec::new(),
            secrets: Secrets::default(),
        };
        for id in &contact.merged_ids {
            push_new(&mut found.contact_ids, *id);
        }
        // What the person is and was: the contact, and each contact event's
        // values before and after.
        let mut values: Vec<(String, String)> = Vec::new();
        let contact_view =
            serde_json::to_value(super::super::view::ContactV3::from(contact.clone()))
                .unwrap_or_default();
        collect(&contact_view, &mut values);
        for phone in &contact.alias_phones {
            values.push(("phone".into(), phone.clone()));
        }
        for id in found.contact_ids.clone() {
            found.add_history(store, "contact", &id.to_string()).await?;
        }
        for event in &found.events {
            collect(&event.event.data.object, &mut values);
            if let Some(previous) = &event.event.data.previous {
                collect(&Value::Object(previous.clone()), &mut values);
            }
        }
        for (member, value) in &values {
            match member.as_str() {
                "phone" => push_new(&mut found.phones, value.clone()),
                "email" => push_new(&mut found.emails, value.to_lowercase()),
                _ => {}
            }
        }
        found.secrets = Secrets::of(&values);

        for id in found.contact_ids.clone() {
            let deal_index = keys::deals_of_contact(ws, id);
            for item in all(store, Index::TABLE, deal_index, SkRange::All).await? {
                if let Some(deal) = sk_of(&item).and_then(keys::trailing_id) {
                    push_new(&mut found.deals, DealId(deal));
                }
            }
            let theirs = keys::contact_conversations(ws, id);
            for item in all(store, keys::GSI1, theirs, SkRange::All).await? {
                if let Some(conversation) = sk_of(&item).and_then(keys::trailing_id) {
                    push_new(&mut found.conversations, conversation);
                }
            }
        }
        let partitions: Vec<String> = found
            .conversations
            .iter()
            .map(|c| keys::sessions_by(ws, "CONVERSATION", &c.to_string()))
            .chain(
                found
                    .phones
                    .iter()
                    .map(|p| keys::sessions_by(ws, "PHONE", p)),
            )
            .collect();
        for partition in partitions {
            for item in all(store, Index::TABLE, partition, SkRange::All).await? {
                if let Some((_, id)) = sk_of(&item).and_then(|sk| sk.split_once('#')) {
                    push_new(&mut found.sessions, id.to_owned());
                }
            }
        }
        for phone in &found.phones {
            let sent = keys::welcome_messages_to(ws, phone);
            for message in all(store, keys::GSI1, sent, SkRange::All).await? {
                if let Some(id) = sk_of(&message) {
                    push_new(&mut found.welcome_messages, id.to_owned());
                }
            }
        }
        let others: Vec<(&str, String)> = found
            .deals
            .iter()
            .map(|d| ("deal", d.to_string()))
            .chain(found.sessions.iter().map(|s| ("session", s.clone())))
            .chain(
                found
                    .conversations
                    .iter()
                    .map(|c| ("conversation", c.to_string())),
            )
            .chain(
                found
                    .welcome_messages
                    .iter()
                    .map(|m| ("welcomeMessage", m.clone())),
            )
            .collect();
        for (resource, id) in others {
            found.add_history(store, resource, &id).await?;
        }
        Ok(found)
    }

    /// The records an erasure writes.
    pub fn size(&self) -> usize {
        self.deals.len() + self.sessions.len() + self.welcome_messages.len() + self.events.len()
    }

    /// Adds the events of one record (each event once).
    async fn add_history(&mut self, store: &dyn Store, resource: &str, id: &str) -> ApiResult<()> {
        let partition = keys::history(self.workspace, resource, id);
        for item in all(store, keys::GSI1, partition, SkRange::All).await? {
            let event: StoredEvent = crate::record::from_item(item)?;
            if !self
                .events
                .iter()
                .any(|e| e.event.cursor == event.event.cursor)
            {
                self.events.push(event);
            }
        }
        Ok(())
    }
}

/// The person's values in a contact view (or an event's earlier values):
/// its top-level personal members, as `Contact` declares them (the view
/// shares the record's names).
fn collect(view: &Value, into: &mut Vec<(String, String)>) {
    into.extend(personal::values::<Contact>(view));
}

/// The person's own values. A string of a copy is theirs when it holds a
/// name (or a word of it, 4 letters or more), an e-mail or a phone, or when
/// it is one of their other values whole (an `externalId` such as `2025`
/// must not blank every date).
#[derive(Default)]
pub(super) struct Secrets {
    within: Vec<String>,
    whole: Vec<String>,
}

impl Secrets {
    fn of(values: &[(String, String)]) -> Self {
        let mut secrets = Self::default();
        for (member, value) in values {
            let value = value.to_lowercase();
            match member.as_str() {
                "email" | "phone" => push_new(&mut secrets.within, value),
                "name" => {
                    for word in value.split_whitespace() {
                        if word.chars().count() >= 4 && word.chars().all(char::is_alphabetic) {
                            push_new(&mut secrets.within, word.to_owned());
                        }
                    }
                    push_new(&mut secrets.whole, value);
                }
                _ if value.chars().count() >= 3 => push_new(&mut secrets.whole, value),
                _ => {}
            }
        }
        secrets
    }

    /// Whether `text`, a string of a copy, is theirs.
    pub fn theirs(&self, text: &str) -> bool {
        let lower = text.trim().to_lowercase();
        self.whole.contains(&lower) || self.within.iter().any(|w| lower.contains(w.as_str()))
    }

    /// Blanks (to `null`) every string in `value` that is theirs; says
    /// whether it changed anything.
    pub fn blank(&self, value: &mut Value) -> bool {
        match value {
            Value::String(s) if self.theirs(s) => {
                *value = Value::Null;
                true
            }
            Value::Array(items) => items.iter_mut().fold(false, |c, v| self.blank(v) | c),
            Value::Object(map) => map.values_mut().fold(false, |c, v| self.blank(v) | c),
            _ => false,
        }
    }

    /// The [`crate::idempotency::marks`] of their values: how a kept answer that
    /// holds them is found.
    pub fn marks(&self, ws: WorkspaceId) -> Vec<String> {
        let values = self.whole.iter().chain(&self.within).map(String::as_str);
        crate::idempotency::marks::of_values(ws, values)
    }
}
