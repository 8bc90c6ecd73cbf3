//! Audit entries: one per successful mutation, written in the same transaction as
//! the change. Who (the token id), what (action, resource, id), when, and the
//! request id that ties the entry to the request log.

use crate::auth::Caller;
use crate::error::{ApiError, ApiResult};
use crate::ids;
use crate::keys;
use crate::page::{ListPage, Paging, counted_page, offset_page};
use crate::record;
use crate::store::{Index, Key, Query, SkRange, Store};

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
    caller.require_admin()?;
    let query = Query::new(keys::GSI1, keys::ALL_AUDIT, SkRange::All).backward();
    let shards: Vec<Key> = (0..keys::AUDIT_COUNTER_SHARDS)
        .map(keys::audit_counter_shard)
        .collect();
    let (items, counters) = tokio::try_join!(offset_page(store, query, paging), async {
        store.batch_get(&shards).await.map_err(ApiError::from)
    })?;
    let total = counters
        .iter()
        .filter_map(|c| c.get(record::COUNT).and_then(serde_json::Value::as_i64))
        .sum::<i64>()
        .max(0) as u64;
    Ok(ListPage {
        total_count: Some(total),
        data: items
            .into_iter()
            .map(record::from_item)
            .collect::<ApiResult<_>>()?,
    })
}
