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

use super::lookup::email_holders;
use super::record::{Contact, Erased};
use super::view::ContactV3;
use super::write::{read, stage_update};
use crate::auth::Caller;
use crate::domain::deals::{self, Deal, DealView};
use crate::domain::relations::{Organization, OrganizationView};
use crate::domain::sessions::{self, Session};
use crate::domain::webhooks::{Delivery, endpoints};
use crate::domain::welcome::WelcomeMessage;
use crate::error::{ApiError, ApiResult};
use crate::idempotency::{self, IdempotencyRecord, State as IdempotencyState};
use crate::ids::{self, Timestamp, WorkspaceId};
use crate::keys;
use crate::keys::OrganizationId;
use crate::page::read_up_to;
use crate::queue::{JobMessage, JobQueue};
use crate::record::{Event, Mutation, find_many, personal, retrying, to_item};
use crate::store::{
    Condition, Index, Item, Key, MAX_BATCH_GET, Query, SkRange, Store, StoreError, VERSION, Write,
};
use footprint::Footprint;

/// Deletes made together (each an item of its own, no condition).
const DELETES: usize = 25;

/// Writes of one delivery that meet a sender's, made again on what it wrote.
const SCRUB_TRIES: usize = 5;

/// The job of an erasure too large for its request.
pub const KIND: &str = "contactErase";

/// The records (deals, sessions, messages, events) an erasure scrubs in its
/// request; a person with more is erased by the job worker.
pub const INLINE_RECORDS: usize = 200;

/// `POST /v3/contacts/{id}/erase`: the tombstone, and `true`; or, for a
/// person with more than [`INLINE_RECORDS`] records, the contact as it is
/// still, and `false`: the job worker erases it (as the token that asked).
pub async fn request(
    store: &dyn Store,
    queue: &dyn JobQueue,
    caller: &Caller,
    id: u64,
) -> ApiResult<(Contact, bool)> {
    let Some((contact, found)) = prepare(store, caller, id).await? else {
        return Ok((erased_already(store, caller, id).await?, true));
    };
    if found.size() <= INLINE_RECORDS {
        return Ok((erase_found(store, caller, contact, found).await?, true));
    }
    let token = caller.token_id().await?;
    let message = JobMessage::new(KIND, caller.workspace_id, format!("{}:{token}", contact.id));
    queue.send(&message).await.map_err(|e| {
        tracing::error!(contact = contact.id, error = %e, "could not queue an erasure");
        ApiError::unavailable("the erasure could not be queued; retry it")
    })?;
    Ok((contact, false))
}

/// The job worker's run of an erasure message (`<contact id>:<token id>`).
pub async fn process(store: &dyn Store, ws: WorkspaceId, job_id: &str) -> ApiResult<Contact> {
    let parsed = job_id
        .split_once(':')
        .and_then(|(id, token)| Some((id.parse::<u64>().ok()?, token)));
    let Some((id, token)) = parsed else {
        return Err(ApiError::bad_request(format!("{job_id:?} is no erasure")));
    };
    // The worker acts as the token that asked: the tombstone names it.
    erase(store, &Caller::system(ws, token), id).await
}

/// Erases the person of contact `id` (a merged id: its survivor's); the
/// tombstone. An erased contact is erased already: the same answer.
pub async fn erase(store: &dyn Store, caller: &Caller, id: u64) -> ApiResult<Contact> {
    match prepare(store, caller, id).await? {
        Some((contact, found)) => erase_found(store, caller, contact, found).await,
        None => erased_already(store, caller, id).await,
    }
}

/// The tombstone of a contact erased already, its erasure finished: one
/// stopped after its last write and before the store's purge (a crash, a
/// failed rewrite) is finished by asking again, as one stopped earlier is.
async fn erased_already(store: &dyn Store, caller: &Caller, id: u64) -> ApiResult<Contact> {
    let tombstone = read(store, caller.workspace_id, id, true).await?;
    store.purge().await?;
    Ok(tombstone)
}

/// The contact and its footprint; `None` when it is erased already.
async fn prepare(
    store: &dyn Store,
    caller: &Caller,
    id: u64,
) -> ApiResult<Option<(Contact, Footprint)>> {
    let ws = caller.workspace_id;
    let contact = read(store, ws, id, true).await?;
    if contact.erased.is_some() {
        return Ok(None);
    }
    if store
        .get(&keys::contact_merging(ws, contact.id), true)
        .await?
        .is_some()
    {
        return Err(ApiError::conflict(
            "this contact is being merged; erase the contact it is merged into once the merge is done",
        ));
    }
    let found = Footprint::of(store, &contact).await?;
    Ok(Some((contact, found)))
}

async fn erase_found(
    store: &dyn Store,
    caller: &Caller,
    contact: Contact,
    found: Footprint,
) -> ApiResult<Contact> {
    let ws = caller.workspace_id;
    // The copies first (events, then what finds them last), so that an
    // erasure stopped on the way finds everything again when asked again.
    scrub_events(store, &found).await?;
    scrub_deliveries(store, &found).await?;
    let mut deletes = Vec::new();
    for message in &found.welcome_messages {
        deletes.push(keys::welcome_message(ws, message));
    }
    forget_keys(store, &contact, &found, &mut deletes).await?;
    forget_answers(store, &found).await?;
    for chunk in deletes.chunks(DELETES) {
        let writes = chunk
            .iter()
            .map(|key| Write::Delete {
                key: key.clone(),
                condition: None,
            })
            .collect();
        store.write(writes).await?;
    }
    let theirs = |text: &str| found.secrets.theirs(text);
    for &deal in &found.deals {
        retrying(|| deals::erase_person(store, caller, deal, &theirs)).await?;
    }
    for session in &found.sessions {
        retrying(|| sessions::erase_person(store, caller, session, &theirs)).await?;
    }

    // Last, the contact: its tombstone, and its phone and index items gone.
    let token = caller.token_id().await?;
    let mut tombstone = personal::erased(&contact, &|_| false)?;
    let at = ids::now();
    tombstone.erased = Some(Erased {
        at,
        by: token.to_owned(),
    });
    let mut m = Mutation::redacting(caller);
    m.erase(&contact, &mut tombstone)?;
    stage_update(&mut m, &contact, &tombstone, true);
    m.put_item(ledger_entry(ws, contact.id, at));
    m.commit(store, "contact.erase", "contact", &contact.id.to_string())
        .await?;
    // And no byte of what it replaced left in the store's files.
    store.purge().await?;
    Ok(tombstone)
}

/// The erasure ledger's entry of contact `id` of `ws`, erased `at`: ids and
/// a time, nothing of the person (`keys::erased_contact`).
fn ledger_entry(ws: WorkspaceId, id: u64, at: Timestamp) -> Item {
    let at = ids::format_ts(&at);
    let mut entry = keys::erased_contact(ws, id).item("ErasedContact");
    entry.insert(keys::GSI1.pk.into(), keys::ERASURES.into());
    entry.insert(
        keys::GSI1.sk.into(),
        keys::erasure_in_ledger(&at, ws, id).into(),
    );
    entry.insert("workspaceId".into(), ws.0.into());
    entry.insert("contactId".into(), id.to_string().into());
    entry.insert("erasedAt".into(), at.into());
    entry
}

/// What [`reapply`] did.
#[derive(Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Reapplied {
    /// Entries of the ledger read.
    pub entries: usize,
    /// Contacts erased again (the backup held them whole).
    pub erased: usize,
    /// Contacts the backup holds erased already.
    pub already: usize,
    /// Contacts the backup does not hold (made after it).
    pub absent: usize,
}

/// Applies every erasure of the ledger kept in `ledger` (the live table, or
/// the live folder) again to `target` (a table restored from a backup, a
/// folder copied back): a restore brings back every person erased since the
/// backup, and this erases them again, the same way, and copies the ledger's
/// entries into `target`. Safe to run again: an erased contact is left.
pub async fn reapply(ledger: &dyn Store, target: &dyn Store) -> ApiResult<Reapplied> {
    let entries = read_up_to(
        ledger,
        Query::new(keys::GSI1, keys::ERASURES.to_owned(), SkRange::All),
        usize::MAX,
    )
    .await?;
    let mut done = Reapplied {
        entries: entries.len(),
        ..Reapplied::default()
    };
    for entry in entries {
        let ws = entry.get("workspaceId").and_then(Value::as_u64);
        let id = entry
            .get("contactId")
            .and_then(Value::as_str)
            .and_then(|id| id.parse::<u64>().ok());
        let (Some(ws), Some(id)) = (ws, id) else {
            continue;
        };
        let ws = WorkspaceId(ws);
        let caller = Caller::system(ws, "erasure-ledger");
        match read(target, ws, id, true).await {
            Err(e) if e.status == http::StatusCode::NOT_FOUND => done.absent += 1,
            Err(e) => return Err(e),
            Ok(contact) if contact.erased.is_some() => done.already += 1,
            Ok(_) => {
                erase(target, &caller, id).await?;
                done.erased += 1;
            }
        }
        target
            .write(vec![Write::Put {
                item: entry,
                condition: None,
            }])
            .await?;
    }
    Ok(done)
}

/// Writes `item` over the stored one, if it is still there (an event may
/// expire meanwhile: not written again).
async fn put_over(store: &dyn Store, item: Item) -> ApiResult<()> {
    let write = Write::Put {
        item,
        condition: Some(Condition::Exists),
    };
    match store.write(vec![write]).await {
        Err(StoreError::ConditionFailed { .. }) => Ok(()),
        done => Ok(done?),
    }
}

/// Every event of the person's records, scrubbed: a contact's event keeps
/// only the contact's id; another's loses every string that is theirs.
async fn scrub_events(store: &dyn Store, found: &Footprint) -> ApiResult<()> {
    for stored in &found.events {
        let mut stored = stored.clone();
        let data = &mut stored.event.data;
        let changed = if stored.event.resource == "contact" {
            let mut object = Map::new();
            object.insert("id".into(), stored.event.resource_id.clone().into());
            let changed = data.object != Value::Object(object.clone()) || data.previous.is_some();
            data.object = Value::Object(object);
            data.previous = None;
            changed
        } else {
            let mut changed = found.secrets.blank(&mut data.object);
            if let Some(previous) = &mut data.previous {
                for value in previous.values_mut() {
                    changed |= found.secrets.blank(value);
                }
            }
            changed
        };
        if changed {
            put_over(store, to_item(&stored)?).await?;
        }
    }
    Ok(())
}

/// The webhook deliveries of the person's events: the answers their
/// receivers gave (which may echo the body) are dropped.
async fn scrub_deliveries(store: &dyn Store, found: &Footprint) -> ApiResult<()> {
    let ws = found.workspace;
    let cursors: Vec<&str> = found
        .events
        .iter()
        .map(|e| e.event.cursor.as_str())
        .collect();
    for webhook in endpoints::of_workspace(store, ws).await? {
        for chunk in cursors.chunks(MAX_BATCH_GET) {
            let wanted: Vec<Key> = chunk
                .iter()
                .map(|c| keys::delivery(ws, &webhook.id, c))
                .collect();
            for item in store.batch_get(&wanted).await? {
                scrub_delivery(store, item).await?;
            }
        }
    }
    // A replay's delivery has an id of its own: found by its event (gsi1).
    for chunk in cursors.chunks(REPLAY_READS) {
        let reads = chunk.iter().map(|cursor| {
            let replays = Query::new(keys::GSI1, keys::replays_of(ws, cursor), SkRange::All);
            read_up_to(store, replays, usize::MAX)
        });
        for item in futures_util::future::try_join_all(reads)
            .await?
            .into_iter()
            .flatten()
        {
            scrub_delivery(store, item).await?;
        }
    }
    Ok(())
}

/// Events whose replays an erasure looks up at once.
const REPLAY_READS: usize = 16;

/// Writes `item`, a delivery, without the answers kept on it, over the
/// version read and with the next one, whether it held answers or not: a
/// sender's write from an earlier read (a claim; the outcome of an attempt
/// under way, whose answer may echo the person) then fails, and that sender
/// reads the delivery again and records its attempt without the answer
/// (`webhooks::delivery`). A sender that wrote first (or a read from before
/// it) makes this read the delivery again; one gone meanwhile is not written
/// again.
async fn scrub_delivery(store: &dyn Store, mut item: Item) -> ApiResult<()> {
    let Some(key) = Key::of(&item) else {
        return Ok(());
    };
    for _ in 0..SCRUB_TRIES {
        personal::erase_item::<Delivery>(&mut item, &|_| false);
        let Some(version) = item.get(VERSION).and_then(Value::as_u64) else {
            return put_over(store, item).await; // no version to move: over what is there
        };
        item.insert(VERSION.into(), (version + 1).into());
        let write = Write::Put {
            item,
            condition: Some(Condition::VersionIs(version)),
        };
        match store.write(vec![write]).await {
            Ok(()) => return Ok(()),
            Err(StoreError::ConditionFailed { .. }) => match store.get(&key, true).await? {
                Some(again) => item = again,
                None => return Ok(()),
            },
            Err(e) => return Err(e.into()),
        }
    }
    Err(ApiError::unavailable(
        "a webhook delivery of the person kept changing; send the erasure again",
    ))
}

/// Items keyed by the person's phone or e-mail: the phones merged into the
/// contact (its own phone goes with the tombstone), each e-mail's holder and
/// mark when nobody else holds it, and recent welcome-message sentinels.
async fn forget_keys(
    store: &dyn Store,
    contact: &Contact,
    found: &Footprint,
    deletes: &mut Vec<Key>,
) -> ApiResult<()> {
    let ws = contact.workspace_id;
    let owners: Vec<String> = found.contact_ids.iter().map(u64::to_string).collect();
    for phone in &found.phones {
        let key = keys::contact_phone(ws, phone);
        let sentinel = store.get(&key, true).await?;
        let owner = sentinel.as_ref().and_then(|s| s.get("owner")?.as_str());
        // Its own phone goes with the tombstone, in its transaction.
        if contact.fields.phone.as_ref() != Some(phone)
            && owner.is_some_and(|o| owners.iter().any(|mine| mine == o))
        {
            deletes.push(key);
        }
        let sent = Query::new(
            Index::TABLE,
            keys::welcome_sent_of(ws),
            SkRange::Prefix(format!("{phone}#")),
        );
        for item in read_up_to(store, sent, usize::MAX).await? {
            deletes.extend(Key::of(&item));
        }
    }
    for email in &found.emails {
        let holders = email_holders(store, ws, email, 3).await?;
        let others = holders.iter().any(|h| !found.contact_ids.contains(h));
        if !others {
            deletes.push(keys::contact_email_held(ws, email));
            deletes.push(keys::contact_shared_email(ws, email));
        }
    }
    Ok(())
}

/// The kept answers (idempotency records, 24 hours) of requests about the
/// person: a path naming their contact, or an answer that holds their values
/// (found by its marks: the answer itself is sealed). Each is left erased:
/// its answer gone, its key kept, so that a retry is refused (410) instead
/// of running again and bringing the person back.
async fn forget_answers(store: &dyn Store, found: &Footprint) -> ApiResult<()> {
    let ws = found.workspace;
    let paths: Vec<String> = found
        .contact_ids
        .iter()
        .flat_map(|id| [format!("/v3/contacts/{id}"), format!("/v1/contacts/{id}")])
        .collect();
    let names_them = |path: &str| {
        let path = path.split('?').next().unwrap_or(path);
        paths.iter().any(|p| {
            path == p
                || path
                    .strip_prefix(p.as_str())
                    .is_some_and(|r| r.starts_with('/'))
        })
    };
    let theirs = found.secrets.marks(ws);
    let at = ids::now();
    let records = Query::new(Index::TABLE, keys::idempotency_records(ws), SkRange::All);
    for item in read_up_to(store, records, usize::MAX).await? {
        let Ok(record) = serde_json::from_value::<IdempotencyRecord>(Value::Object(item)) else {
            continue;
        };
        // A request still running keeps its claim (this erasure's own among
        // them); one erased already stays as it is.
        if matches!(
            record.state,
            IdempotencyState::Running | IdempotencyState::Erased
        ) {
            continue;
        }
        let route = record.route.split_once(' ').map_or("", |(_, path)| path);
        if names_them(route)
            || record
                .read_back
                .as_ref()
                .is_some_and(|r| names_them(&r.path))
            || record.marks.iter().any(|m| theirs.binary_search(m).is_ok())
        {
            match store
                .write(vec![idempotency::erased_over(&record, at)?])
                .await
            {
                // Moved on meanwhile (settled, expired): read again next time.
                Err(StoreError::ConditionFailed { .. }) | Ok(()) => {}
                Err(e) => return Err(e.into()),
            }
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
        .map(|&o| keys::organization(ws, OrganizationId(o)))
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
        events: found.events.into_iter().map(|e| e.event).collect(),
        contact: contact.into(),
    })
}
