//! Reads of the contacts' index items shared by the lists, the search and
//! the lookups (upsert, duplicates, `/v1`): contact ids by e-mail, the ids
//! index items name, and the contacts of some ids.

use serde_json::Value;

use super::record::Contact;
use crate::error::ApiResult;
use crate::ids::WorkspaceId;
use crate::keys;
use crate::page::{MAX_WINDOW, read_up_to};
use crate::record;
use crate::store::{Index, Item, Key, Query, SK, SkRange, Store};

/// Contacts by id, in the order given.
pub(super) async fn load(
    store: &dyn Store,
    workspace_id: WorkspaceId,
    ids: &[u64],
) -> ApiResult<Vec<Contact>> {
    let keys: Vec<Key> = ids
        .iter()
        .map(|&id| keys::contact(workspace_id, id))
        .collect();
    record::find_many(store, &keys).await
}

/// The contact ids at the end of index items' sort keys.
pub(super) fn ids_of(items: &[Item]) -> Vec<u64> {
    items
        .iter()
        .filter_map(|i| {
            i.get(SK)
                .and_then(Value::as_str)
                .and_then(keys::trailing_id)
        })
        .collect()
}

/// The contacts with this e-mail (without case), ascending.
pub(super) async fn email_ids(
    store: &dyn Store,
    ws: WorkspaceId,
    email: &str,
) -> ApiResult<Vec<u64>> {
    let email = email.trim().to_lowercase();
    email_holders(store, ws, &email, MAX_WINDOW as usize).await
}

/// Up to `n` ids, ascending, of the contacts holding `email` (lowercased
/// already).
pub(super) async fn email_holders(
    store: &dyn Store,
    ws: WorkspaceId,
    email: &str,
    n: usize,
) -> ApiResult<Vec<u64>> {
    let partition = keys::contact_emails(ws, email);
    let prefix = keys::contact_email_prefix(email);
    ids_by_value(store, partition, prefix, n).await
}

/// Up to `n` contact ids, ascending, of the index items keyed by one value
/// (`prefix`, `<value>#`) in its partition (`keys::value_partition`).
pub(super) async fn ids_by_value(
    store: &dyn Store,
    partition: String,
    prefix: String,
    n: usize,
) -> ApiResult<Vec<u64>> {
    let query = Query {
        keys_only: true,
        ..Query::new(Index::TABLE, partition, SkRange::Prefix(prefix))
    };
    Ok(ids_of(&read_up_to(store, query, n).await?))
}
