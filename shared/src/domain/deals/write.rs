//! Creating, reading and changing deals; the index items move in the deal's
//! own transaction.

use std::collections::HashSet;

use super::LIST;
use super::input::{self, DealCreate, DealPatch};
use super::record::{Deal, DealContact, DealFields};
use crate::auth::Caller;
use crate::domain::contacts::Contact;
use crate::domain::events;
use crate::domain::rollups;
use crate::error::ApiResult;
use crate::ids;
use crate::keys;
use crate::keys::DealId;
use crate::record::{self, CommitError, Mutation, Stamps, personal, with_fresh_id};
use crate::store::{Key, Store};

pub async fn create(store: &dyn Store, caller: &Caller, input: DealCreate) -> ApiResult<Deal> {
    let fields = input::created(store, caller.workspace_id, input, ids::now()).await?;
    with_fresh_id(|id| insert(store, caller, DealId(id), &fields, Stamps::new())).await
}

/// Creates the deal `id`, its index items and counts, in one transaction.
pub(super) async fn insert(
    store: &dyn Store,
    caller: &Caller,
    id: DealId,
    fields: &DealFields,
    stamps: Stamps,
) -> Result<Deal, CommitError> {
    let ws = caller.workspace_id;
    let deal = Deal {
        id,
        workspace_id: ws,
        fields: fields.clone(),
        stamps,
        version: 1,
    };
    let mut m = Mutation::new(caller);
    m.create(&deal)?.count_in(ws, LIST, 1);
    rollups::stage(&mut m, ws, &[], &rollups::of_deal(&deal));
    for item in deal.index_items() {
        m.put_item(item);
    }
    m.commit(store, "deal.create", "deal", &id.to_string())
        .await?;
    Ok(deal)
}

pub async fn get(store: &dyn Store, caller: &Caller, id: DealId) -> ApiResult<Deal> {
    record::find(store, &keys::deal(caller.workspace_id, id), false, "deal").await
}

pub async fn update(
    store: &dyn Store,
    caller: &Caller,
    id: DealId,
    input: DealPatch,
) -> ApiResult<Deal> {
    let ws = caller.workspace_id;
    let current: Deal = record::find(store, &keys::deal(ws, id), true, "deal").await?;
    let fields = input::patched(store, ws, &current.fields, input, ids::now()).await?;
    write(store, caller, current, fields, "deal.update", false).await
}

/// Moves deal `id` to `contact` (a merge): its copy of the contact and its
/// contact index, in one transaction; a deal of that contact already is left.
pub(crate) async fn move_to_contact(
    store: &dyn Store,
    caller: &Caller,
    id: DealId,
    contact: &Contact,
) -> ApiResult<()> {
    let ws = caller.workspace_id;
    let Some(current) = record::get::<Deal>(store, &keys::deal(ws, id), true).await? else {
        return Ok(());
    };
    if current.fields.contact.id.0 == contact.id {
        return Ok(());
    }
    let mut fields = current.fields.clone();
    fields.contact = DealContact::from(contact);
    write(store, caller, current, fields, "deal.merge", false).await?;
    Ok(())
}

/// Erases the person of deal `id` (an erasure of them): its declared
/// personal data (the copy of its contact, but the id) and, in what a
/// seller wrote (its name, lost reason, custom fields), each text that
/// `theirs` says is the person's; its event carries no earlier values.
pub(crate) async fn erase_person(
    store: &dyn Store,
    caller: &Caller,
    id: DealId,
    theirs: &(dyn Fn(&str) -> bool + Sync),
) -> ApiResult<()> {
    let ws = caller.workspace_id;
    let Some(current) = record::get::<Deal>(store, &keys::deal(ws, id), true).await? else {
        return Ok(());
    };
    let erased = personal::erased(&current, theirs)?;
    if erased != current {
        write(store, caller, current, erased.fields, "deal.erase", true).await?;
    }
    Ok(())
}

/// Writes `fields` over the deal read as `current` (409 when it changed in
/// between), moving its index items and rollups.
async fn write(
    store: &dyn Store,
    caller: &Caller,
    current: Deal,
    fields: DealFields,
    action: &str,
    redact: bool,
) -> ApiResult<Deal> {
    let (ws, id) = (caller.workspace_id, current.id);
    let mut deal = current.clone();
    deal.fields = fields;
    let mut m = if redact {
        Mutation::redacting(caller)
    } else {
        Mutation::new(caller)
    };
    if !m.update(&current, &mut deal)? {
        return Ok(current);
    }
    let keep: HashSet<String> = deal.partitions().into_iter().collect();
    for old in current
        .partitions()
        .into_iter()
        .filter(|p| !keep.contains(p))
    {
        m.remove(Key::new(old, ids::padded(id.0)));
    }
    rollups::stage(
        &mut m,
        ws,
        &rollups::of_deal(&current),
        &rollups::of_deal(&deal),
    );
    // Every index item carries the digest: rewrite them all.
    for item in deal.index_items() {
        m.put_item(item);
    }
    m.commit(store, action, "deal", &id.to_string()).await?;
    Ok(deal)
}

/// The deal's events, oldest first; 404 for another workspace's, as its GET.
pub async fn history(
    store: &dyn Store,
    caller: &Caller,
    id: DealId,
    q: events::HistoryQuery,
) -> ApiResult<events::EventPage> {
    let key = keys::deal(caller.workspace_id, id);
    events::history::<Deal>(store, caller, &key, "deal", q).await
}
