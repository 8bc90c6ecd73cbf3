//! Records an operator loads by id (`crm load`) and the API reads: products,
//! custom fields, business hours. One partition per kind and workspace (the
//! products': their shards), in id order, with a counter for `totalCount`.
//! Written once for every kind.

use crate::auth::Caller;
use crate::error::ApiResult;
use crate::ids::WorkspaceId;
use crate::keys;
use crate::page::{ListPage, Paging, counted_merged_page, each_shard};
use crate::record::{self, Versioned};
use crate::store::{Key, SkRange, Store};

pub trait Catalog: Versioned + Clone {
    /// Its id type.
    type Id: Copy + std::fmt::Display + Send + Sync;
    /// What a 404 calls it.
    const WHAT: &'static str;
    /// The list's counter.
    const LIST: &'static str;
    fn key_of(workspace_id: WorkspaceId, id: Self::Id) -> Key;
    /// Its list's partitions: one, or a family's shards (products).
    fn partitions(workspace_id: WorkspaceId) -> Vec<String>;
}

/// One record by id: one GetItem.
pub async fn get<R: Catalog>(store: &dyn Store, caller: &Caller, id: R::Id) -> ApiResult<R> {
    record::find(store, &R::key_of(caller.workspace_id, id), false, R::WHAT).await
}

/// A page in id order, `totalCount` from the counter.
pub async fn list<R: Catalog>(
    store: &dyn Store,
    caller: &Caller,
    paging: Paging,
) -> ApiResult<ListPage<R>> {
    let ws = caller.workspace_id;
    let shards = each_shard(R::partitions(ws), SkRange::All, true);
    counted_merged_page(store, shards, paging, keys::counter(ws, R::LIST)).await
}

/// Creates the record or writes it over the stored one (see [`record::upsert`]).
pub async fn load<R: Catalog>(
    store: &dyn Store,
    caller: &Caller,
    id: R::Id,
    build: impl FnOnce(Option<R>) -> R,
    action: &str,
) -> ApiResult<R> {
    let ws = caller.workspace_id;
    record::upsert(
        store,
        caller,
        &R::key_of(ws, id),
        build,
        Some(keys::counter(ws, R::LIST)),
        action,
    )
    .await
}
