//! Audit entries: one per successful mutation, written in the same transaction as
//! the change. Who (the token id), what (action, resource, id), when, and the
//! request id that ties the entry to the request log.

use crate::auth::Caller;
use crate::error::{ApiError, ApiResult};
use crate::ids;
use crate::keys;
use crate::page::{ListPage, Paging, counted_merged_page, each_shard, merged};
use crate::record;
use crate::store::{Query, SkRange, Store};

pub use crate::record::{AUDIT_LIST as LIST, AuditEntry};

/// The caller's workspace, newest first: the shards of its entries
/// (`keys::audit_entries`) merged by id, which ULIDs sort by time.
pub async fn list(
    store: &dyn Store,
    caller: &Caller,
    paging: Paging,
) -> ApiResult<ListPage<AuditEntry>> {
    let shards = each_shard(
        keys::audit_entries(caller.workspace_id),
        SkRange::All,
        false,
    );
    counted_merged_page(
        store,
        shards,
        paging,
        keys::counter(caller.workspace_id, LIST),
    )
    .await
}

pub async fn get(store: &dyn Store, caller: &Caller, id: &str) -> ApiResult<AuditEntry> {
    if !ids::is_ulid(id) {
        return Err(ApiError::not_found("audit entry"));
    }
    record::find(
        store,
        &keys::audit_entry(caller.workspace_id, id),
        false,
        "audit entry",
    )
    .await
}

/// Every workspace, newest first: operators only.
pub async fn list_all(
    store: &dyn Store,
    caller: &Caller,
    paging: Paging,
) -> ApiResult<ListPage<AuditEntry>> {
    caller.require_admin().await?;
    let counter = keys::audit_counter();
    let (items, total) = tokio::try_join!(
        newest_of_shards(store, paging),
        record::count(store, counter)
    )?;
    Ok(ListPage {
        total_count: Some(total),
        data: items
            .into_iter()
            .map(record::from_item)
            .collect::<ApiResult<_>>()?,
    })
}

/// One page of the admin view, newest first: the index shards (16 and the
/// partition from before sharding) merged by id (`page::merged`), whatever
/// the size of the service.
async fn newest_of_shards(store: &dyn Store, paging: Paging) -> ApiResult<Vec<crate::store::Item>> {
    let shards = keys::audit_index_partitions()
        .into_iter()
        .map(|partition| Query::new(keys::GSI1, partition, SkRange::All).backward())
        .collect();
    let wanted = (paging.offset + paging.limit) as usize;
    let items = merged(store, shards, wanted).await?;
    Ok(items.into_iter().skip(paging.offset as usize).collect())
}
