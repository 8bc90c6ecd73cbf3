//! Audit entries: one per successful mutation, written in the same transaction as
//! the change. Who (the token id), what (action, resource, id), when, and the
//! request id that ties the entry to the request log.

use crate::auth::Caller;
use crate::error::{ApiError, ApiResult};
use crate::ids;
use crate::keys;
use crate::page::{ListPage, Paging, counted_page, read_up_to};
use crate::record;
use crate::store::{Index, Query, SkRange, Store};

pub use crate::record::{AUDIT_LIST as LIST, AuditEntry};

/// The caller's workspace, newest first.
pub async fn list(
    store: &dyn Store,
    caller: &Caller,
    paging: Paging,
) -> ApiResult<ListPage<AuditEntry>> {
    let query = Query::new(
        Index::TABLE,
        keys::audit_entries(caller.workspace_id),
        SkRange::All,
    )
    .backward();
    counted_page(
        store,
        query,
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

/// One page of the admin view, newest first: the newest `offset + limit`
/// entries of each index shard (read at once), merged by id (ULIDs sort by
/// time). A page costs 17 queries (16 shards and the partition from before
/// sharding) of at most `offset + limit` entries each, whatever the size of the
/// service; `offset + limit` is at most 10,000 as in every offset list.
async fn newest_of_shards(store: &dyn Store, paging: Paging) -> ApiResult<Vec<crate::store::Item>> {
    let wanted = (paging.offset + paging.limit) as usize;
    let reads = keys::audit_index_partitions().into_iter().map(|partition| {
        let query = Query::new(keys::GSI1, partition, SkRange::All).backward();
        read_up_to(store, query, wanted)
    });
    let mut items: Vec<_> = futures_util::future::try_join_all(reads)
        .await?
        .into_iter()
        .flatten()
        .collect();
    let id = |item: &crate::store::Item| {
        item.get(keys::GSI1.sk)
            .and_then(|v| v.as_str())
            .map(str::to_owned)
            .unwrap_or_default()
    };
    items.sort_by_key(|item| std::cmp::Reverse(id(item)));
    Ok(items
        .into_iter()
        .skip(paging.offset as usize)
        .take(paging.limit as usize)
        .collect())
}
