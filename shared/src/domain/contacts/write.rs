//! Creating and changing contacts: the phone sentinel, the index items and the
//! counters move in the contact's own transaction.

use serde_json::Value;

use super::input::{ContactPatch, canonical_phone};
use super::record::{Contact, ContactFields};
use super::{LIST, NEW_LIST};
use crate::auth::Caller;
use crate::domain::events;
use crate::error::{ApiError, ApiResult};
use crate::ids::WorkspaceId;
use crate::keys;
use crate::patch::Patch;
use crate::record::{self, CommitError, Mutation, Stamps, with_fresh_id};
use crate::store::{Key, SK, Store};

/// The attribute of a merged id's pointer that names its survivor.
pub(super) const MERGED_INTO: &str = "mergedInto";

/// 410: the contact is a tombstone (`POST /v3/contacts/{id}/erase`).
pub(super) fn erased() -> ApiError {
    ApiError::new(
        http::StatusCode::GONE,
        "this contact was erased: it keeps no personal data and takes none",
    )
}

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
    contact.index_item_keys().len() + usize::from(contact.fields.email.is_some())
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
    contact.hold_email(m);
    if count {
        m.count_in(ws, LIST, 1);
    }
    if contact.fields.new_contact {
        m.count_in(ws, NEW_LIST, 1);
    }
    crate::domain::rollups::stage(m, ws, &[], &crate::domain::rollups::of_contact(contact));
    Ok(())
}

pub async fn create(
    store: &dyn Store,
    caller: &Caller,
    input: ContactPatch,
    how: Creation,
) -> ApiResult<Contact> {
    let fields = new_fields(input, how)?;
    with_fresh_id(|id| insert(store, caller, id, &fields, Stamps::new())).await
}

/// A new contact's fields from a create body.
pub(super) fn new_fields(input: ContactPatch, how: Creation) -> ApiResult<ContactFields> {
    if how == Creation::Api && input.phones.is_some() {
        return Err(ApiError::field(
            "phones",
            "only find-or-create takes a list of phones",
        ));
    }
    let mut fields = ContactFields::default();
    input.apply(&mut fields)?;
    Ok(fields)
}

/// Creates the contact `id`, its phone's claim, index items and counts, in
/// one transaction.
pub(super) async fn insert(
    store: &dyn Store,
    caller: &Caller,
    id: u64,
    fields: &ContactFields,
    stamps: Stamps,
) -> Result<Contact, CommitError> {
    let contact = Contact::new(id, caller.workspace_id, fields.clone(), stamps);
    let mut m = Mutation::new(caller);
    add_contact(&mut m, &contact, true)?;
    m.commit(store, "contact.create", "contact", &contact.id.to_string())
        .await?;
    Ok(contact)
}

/// One contact by id: one GetItem (a merged id answers its survivor).
pub async fn get(store: &dyn Store, caller: &Caller, id: u64) -> ApiResult<Contact> {
    read(store, caller.workspace_id, id, false).await
}

/// Contact `id`, or the contact it was merged into: a merged id stays an
/// alias of its survivor. One GetItem; a missing id costs one more, and a
/// merged one one more per merge.
pub async fn read(
    store: &dyn Store,
    ws: WorkspaceId,
    id: u64,
    consistent: bool,
) -> ApiResult<Contact> {
    let mut id = id;
    for _ in 0..8 {
        if let Some(found) = record::get(store, &keys::contact(ws, id), consistent).await? {
            return Ok(found);
        }
        let pointer = store.get(&keys::merged_contact(ws, id), consistent).await?;
        match pointer.as_ref().and_then(|p| p.get(MERGED_INTO)?.as_u64()) {
            Some(survivor) => id = survivor,
            None => break,
        }
    }
    Err(ApiError::not_found("contact"))
}

pub async fn update(
    store: &dyn Store,
    caller: &Caller,
    id: u64,
    input: ContactPatch,
) -> ApiResult<Contact> {
    if input.phones.is_some() {
        return Err(ApiError::field(
            "phones",
            "only find-or-create takes a list of phones",
        ));
    }
    let current = read(store, caller.workspace_id, id, true).await?;
    update_read(store, caller, current, input).await
}

/// [`update`] of a contact read already (strongly consistent): its write is
/// conditional on the version read.
pub(super) async fn update_read(
    store: &dyn Store,
    caller: &Caller,
    current: Contact,
    input: ContactPatch,
) -> ApiResult<Contact> {
    let id = current.id;
    if current.erased.is_some() {
        return Err(erased());
    }
    let mut contact = current.clone();
    input.apply(&mut contact.fields)?;
    let mut m = Mutation::new(caller);
    if !m.update(&current, &mut contact)? {
        return Ok(current);
    }
    stage_update(&mut m, &current, &contact, true);
    m.commit(store, "contact.update", "contact", &id.to_string())
        .await?;
    Ok(contact)
}

/// Stages the writes that follow a contact's change from `current` to
/// `next` (its record staged already): the phone's sentinel (claimed when
/// `claim_phone`; a merge moves a sentinel it owns), the index items, the
/// e-mail's holder, the rollups and the new-contacts counter.
pub(super) fn stage_update(
    m: &mut Mutation<'_>,
    current: &Contact,
    next: &Contact,
    claim_phone: bool,
) {
    let (ws, id) = (next.workspace_id, next.id);
    if claim_phone && next.fields.phone != current.fields.phone {
        if let Some(old) = &current.fields.phone {
            m.remove(keys::contact_phone(ws, old));
        }
        if let Some(new) = &next.fields.phone {
            m.claim(
                keys::contact_phone(ws, new),
                &id.to_string(),
                phone_taken(new),
            );
        }
    }
    let (old, new) = (current.index_item_keys(), next.index_item_keys());
    for key in old.difference(&new) {
        m.remove(key.clone());
    }
    for key in new.difference(&old) {
        m.put_item(next.index_item(key.clone()));
    }
    if next.email_key() != current.email_key() {
        next.hold_email(m);
    }
    // `contacts.new` counts contacts that are new, on their creation day.
    crate::domain::rollups::stage(
        m,
        ws,
        &crate::domain::rollups::of_contact(current),
        &crate::domain::rollups::of_contact(next),
    );
    match (current.fields.new_contact, next.fields.new_contact) {
        (false, true) => m.count_in(ws, NEW_LIST, 1),
        (true, false) => m.count_in(ws, NEW_LIST, -1),
        _ => m,
    };
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
    // The owner may have been merged since: its survivor holds the phone.
    match read(store, caller.workspace_id, id, true).await {
        Ok(contact) => Ok(Some(contact)),
        Err(e) if e.status == http::StatusCode::NOT_FOUND => Ok(None),
        Err(e) => Err(e),
    }
}

/// Finds the contact of any of the phones (every variant is one canonical phone),
/// or creates it with the first. Two concurrent calls for one phone get one contact.
pub async fn find_or_create(
    store: &dyn Store,
    caller: &Caller,
    mut input: ContactPatch,
) -> ApiResult<(Contact, bool)> {
    let mut phones = Vec::new();
    if let Patch::Set(raw) = &input.phone {
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
    input.phone = Patch::Set(first.clone());
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

/// The contact's events, oldest first; 404 for another workspace's, as its GET.
pub async fn history(
    store: &dyn Store,
    caller: &Caller,
    id: u64,
    q: events::HistoryQuery,
) -> ApiResult<events::EventPage> {
    // A merged contact's history stays readable under its own id.
    read(store, caller.workspace_id, id, false).await?;
    events::history_of(store, caller, "contact", &id.to_string(), q).await
}
