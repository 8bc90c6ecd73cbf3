//! Erasure and access (LGPD, GDPR): `POST /v3/contacts/{id}/erase` removes a
//! person's personal data from everywhere this service keeps it, and
//! `GET /v3/contacts/{id}/export` answers everything kept about them.
//!
//! The records are found from the contact ([`footprint`]): its deals, its
//! conversations and their sessions, the sessions of its phones, the
//! welcome messages sent to them, the events of all of these, and the
//! webhook deliveries of those events. Each is scrubbed on its own (one
//! write each, whose event carries no earlier values); the contact itself
//! goes last, into a tombstone without personal data that keeps its id, its
//! place in the counts and what references it. So an erasure stopped on the
//! way (a crash, a timeout) is finished by asking again, which finds what is
//! left from the contact, still whole until the end.

mod footprint;

use serde::Serialize;
use serde_json::{Map, Value};

use super::record::{Contact, ContactFields, Erased};
use super::view::ContactV3;
use super::write::{read, stage_update};
use crate::auth::Caller;
use crate::domain::deals::{self, Deal, DealView};
use crate::domain::relations::{Organization, OrganizationView};
use crate::domain::sessions::{self, Session};
use crate::domain::webhooks::endpoints;
use crate::domain::welcome::WelcomeMessage;
use crate::error::ApiResult;
use crate::ids::{self, Timestamp};
use crate::keys;
use crate::page::read_up_to;
use crate::record::{Event, Mutation, find_many, retrying, to_item};
use crate::store::{Index, Key, MAX_BATCH_GET, Query, SkRange, Store, Write};
use footprint::{Footprint, Secrets};

/// Writes of copies made together (each an item of its own, no condition).
const WRITES: usize = 25;

/// Erases the person of contact `id` (a merged id: its survivor's); the
/// tombstone. An erased contact is erased already: the same answer.
pub async fn erase(store: &dyn Store, caller: &Caller, id: u64) -> ApiResult<Contact> {
    let ws = caller.workspace_id;
    let contact = read(store, ws, id, true).await?;
    if contact.erased.is_some() {
        return Ok(contact);
    }
    let found = Footprint::of(store, &contact).await?;
    let secrets = Secrets::of(&contact, &found.phones);
    for &deal in &found.deals {
        retrying(|| deals::erase_contact(store, caller, deal)).await?;
    }
    for session in &found.sessions {
        retrying(|| sessions::erase_phone(store, caller, session)).await?;
    }
    let mut writes = Vec::new();
    let cursors = scrub_events(store, &found, &secrets, &mut writes).await?;
    scrub_deliveries(store, ws, &cursors, &mut writes).await?;
    for message in &found.welcome_messages {
        writes.push(remove(keys::welcome_message(ws, message)));
    }
    forget_keys(store, &contact, &found, &secrets, &mut writes).await?;
    for chunk in writes.chunks(WRITES) {
        store.write(chunk.to_vec()).await?;
    }

    // Last, the contact: its tombstone, and its phone and index items gone.
    let token = caller.token_id().await?;
    let mut tombstone = contact.clone();
    let f = &contact.fields;
    tombstone.fields = ContactFields {
        is_imported: f.is_imported,
        has_conversation: f.has_conversation,
        new_contact: f.new_contact,
        is_private: f.is_private,
        ..ContactFields::default()
    };
    tombstone.alias_phones.clear();
    tombstone.erased = Some(Erased {
        at: ids::now(),
        by: token.to_owned(),
    });
    let mut m = Mutation::redacting(caller);
    m.erase(&contact, &mut tombstone)?;
    stage_update(&mut m, &contact, &tombstone, true);
    m.commit(store, "contact.erase", "contact", &contact.id.to_string())
        .await?;
    Ok(tombstone)
}

fn remove(key: Key) -> Write {
    Write::Delete {
        key,
        condition: None,
    }
}

/// Every event of the person's records, scrubbed: a contact's event keeps
/// only the contact's id; another's loses every string that holds the
/// person's. Answers the cursors of the events it changed.
async fn scrub_events(
    store: &dyn Store,
    found: &Footprint,
    secrets: &Secrets,
    writes: &mut Vec<Write>,
) -> ApiResult<Vec<String>> {
    let mut cursors = Vec::new();
    for mut stored in found.events(store).await? {
        let data = &mut stored.event.data;
        let changed = if stored.event.resource == "contact" {
            let mut object = Map::new();
            object.insert("id".into(), stored.event.resource_id.clone().into());
            data.object = Value::Object(object);
            data.previous = None;
            true
        } else {
            let mut changed = secrets.blank(&mut data.object);
            if let Some(previous) = &mut data.previous {
                for value in previous.values_mut() {
                    changed |= secrets.blank(value);
                }
            }
            changed
        };
        if changed {
            cursors.push(stored.event.cursor.clone());
            writes.push(Write::Put {
                item: to_item(&stored)?,
                condition: None,
            });
        }
    }
    Ok(cursors)
}

/// The webhook deliveries of the scrubbed events: the answers their
/// receivers gave (which may echo the body) are dropped.
async fn scrub_deliveries(
    store: &dyn Store,
    ws: crate::ids::WorkspaceId,
    cursors: &[String],
    writes: &mut Vec<Write>,
) -> ApiResult<()> {
    for webhook in endpoints::of_workspace(store, ws).await? {
        for chunk in cursors.chunks(MAX_BATCH_GET) {
            let wanted: Vec<Key> = chunk
                .iter()
                .map(|c| keys::delivery(ws, &webhook.id, c))
                .collect();
            for mut item in store.batch_get(&wanted).await? {
                let mut changed = false;
                if let Some(Value::Array(attempts)) = item.get_mut("attempts") {
                    for attempt in attempts.iter_mut().filter_map(Value::as_object_mut) {
                        changed |= attempt.remove("response").is_some();
                    }
                }
                if changed {
                    writes.push(Write::Put {
                        item,
                        condition: None,
                    });
                }
            }
        }
    }
    Ok(())
}

/// Items keyed by the person's phone or e-mail, and stored answers that
/// hold their data: the phones merged into the contact (its own phone goes
/// with the tombstone), the e-mail's holder and mark when nobody else holds
/// it, recent welcome-message sentinels, and idempotency records (kept 24
/// hours) whose answer holds the person.
async fn forget_keys(
    store: &dyn Store,
    contact: &Contact,
    found: &Footprint,
    secrets: &Secrets,
    writes: &mut Vec<Write>,
) -> ApiResult<()> {
    let ws = contact.workspace_id;
    let owners: Vec<String> = found.contact_ids.iter().map(u64::to_string).collect();
    for phone in &contact.alias_phones {
        let key = keys::contact_phone(ws, phone);
        let owner = store.get(&key, true).await?;
        if owner
            .as_ref()
            .and_then(|s| s.get("owner")?.as_str())
            .is_some_and(|o| owners.iter().any(|mine| mine == o))
        {
            writes.push(remove(key));
        }
    }
    for phone in &found.phones {
        let sent = Query::new(
            Index::TABLE,
            keys::welcome_sent_of(ws),
            SkRange::Prefix(format!("{phone}#")),
        );
        for item in read_up_to(store, sent, usize::MAX).await? {
            writes.extend(Key::of(&item).map(remove));
        }
    }
    if let Some(email) = contact.email_key() {
        let holders = Query {
            keys_only: true,
            ..Query::new(
                Index::TABLE,
                keys::contact_emails(ws),
                SkRange::Prefix(keys::contact_email_prefix(&email)),
            )
        };
        let others = read_up_to(store, holders, 2).await?.into_iter().any(|i| {
            i.get(crate::store::SK)
                .and_then(Value::as_str)
                .and_then(keys::trailing_id)
                != Some(contact.id)
        });
        if !others {
            writes.push(remove(keys::contact_email_held(ws, &email)));
            writes.push(remove(keys::contact_shared_email(ws, &email)));
        }
    }
    let path = format!("/v3/contacts/{}", contact.id);
    let records = Query::new(Index::TABLE, keys::idempotency_records(ws), SkRange::All);
    for item in read_up_to(store, records, usize::MAX).await? {
        let text = serde_json::to_string(&item).unwrap_or_default();
        if secrets.found_in(&text) || text.contains(&path) {
            writes.extend(Key::of(&item).map(remove));
        }
    }
    Ok(())
}

/// Everything kept about a person (`GET /v3/contacts/{id}/export`).
#[derive(Debug, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ContactExport {
    #[schemars(with = "crate::ids::Timestamp")]
    #[serde(with = "ids::ts_format")]
    pub exported_at: Timestamp,
    pub contact: ContactV3,
    /// The contacts merged into this one.
    pub merged_ids: Vec<String>,
    /// Its phone and the phones merged into it.
    pub phones: Vec<String>,
    pub organizations: Vec<OrganizationView>,
    pub deals: Vec<DealView>,
    pub sessions: Vec<Session>,
    pub welcome_messages: Vec<WelcomeMessage>,
    /// The events of all of the above (kept 30 days), per record, oldest first.
    pub events: Vec<Event>,
}

/// What [`erase`] would find, as JSON.
pub async fn export(store: &dyn Store, caller: &Caller, id: u64) -> ApiResult<ContactExport> {
    let ws = caller.workspace_id;
    let contact = read(store, ws, id, true).await?;
    let found = Footprint::of(store, &contact).await?;
    let deal_keys: Vec<Key> = found.deals.iter().map(|&d| keys::deal(ws, d)).collect();
    let deals: Vec<Deal> = find_many(store, &deal_keys).await?;
    let session_keys: Vec<Key> = found
        .sessions
        .iter()
        .map(|s| keys::session(ws, s))
        .collect();
    let org_keys: Vec<Key> = contact
        .organization_ids
        .iter()
        .map(|&o| keys::organization(ws, o))
        .collect();
    let message_keys: Vec<Key> = found
        .welcome_messages
        .iter()
        .map(|m| keys::welcome_message(ws, m))
        .collect();
    let organizations: Vec<Organization> = find_many(store, &org_keys).await?;
    Ok(ContactExport {
        exported_at: ids::now(),
        merged_ids: contact.merged_ids.iter().map(u64::to_string).collect(),
        phones: found.phones.clone(),
        organizations: organizations.into_iter().map(Into::into).collect(),
        deals: deals.into_iter().map(Into::into).collect(),
        sessions: find_many(store, &session_keys).await?,
        welcome_messages: find_many(store, &message_keys).await?,
        events: found
            .events(store)
            .await?
            .into_iter()
            .map(|e| e.event)
            .collect(),
        contact: contact.into(),
    })
}
