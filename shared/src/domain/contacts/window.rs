//! `GET /v3/contacts/all`: a creation window of at most two hours.

use serde::Deserialize;
use validator::Validate;

use super::lookup::{ids_of, load};
use super::record::Contact;
use crate::auth::Caller;
use crate::error::{ApiError, ApiResult};
use crate::ids::{self, ClientTime};
use crate::keys;
use crate::page::{ListPage, Paging, merged_page, read_up_to};
use crate::record;
use crate::store::{Index, Query, SkRange, Store};

/// The query of `GET /v3/contacts/all`.
#[derive(Debug, Default, Deserialize, Validate, schemars::JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct WindowQuery {
    pub last48h: Option<bool>,
    pub new_contact: Option<bool>,
    pub created_at_from: Option<ClientTime>,
    pub created_at_to: Option<ClientTime>,
    /// Records per page (default 20).
    #[schemars(range(min = 1, max = 500), extend("default" = 20))]
    pub limit: Option<u64>,
    /// Records to skip; `offset + limit` is at most 10,000 (narrow with filters beyond).
    #[schemars(range(max = 9999), extend("default" = 0))]
    pub offset: Option<u64>,
}

/// The longest window of `createdAtFrom`/`createdAtTo` (the spec: 2 hours).
pub const MAX_WINDOW_HOURS: i64 = 2;

/// `GET /v3/contacts/all`: contacts created in a window of at most 2 hours (or the
/// last 48 hours), oldest first. One range query on the table: ids are time-ordered.
pub async fn list_window(
    store: &dyn Store,
    caller: &Caller,
    q: WindowQuery,
) -> ApiResult<ListPage<Contact>> {
    let paging = Paging::parse(q.limit, q.offset)?;
    let (from, to) = match (q.last48h == Some(true), q.created_at_from, q.created_at_to) {
        (true, None, None) => {
            let now = ids::now();
            (now - chrono::Duration::hours(48), now)
        }
        (true, _, _) => {
            return Err(ApiError::field(
                "last48h",
                "use last48h or createdAtFrom/createdAtTo, not both",
            ));
        }
        (false, Some(from), Some(to)) => {
            let (from, to) = (from.0, to.0);
            if to < from {
                return Err(ApiError::field(
                    "createdAtTo",
                    "must not be before createdAtFrom",
                ));
            }
            if to - from > chrono::Duration::hours(MAX_WINDOW_HOURS) {
                return Err(ApiError::field(
                    "createdAtTo",
                    "must be at most 2 hours after createdAtFrom",
                ));
            }
            (from, to)
        }
        (false, None, _) => {
            return Err(ApiError::field(
                "createdAtFrom",
                "is required (with createdAtTo), or pass last48h=true",
            ));
        }
        (false, Some(_), None) => {
            return Err(ApiError::field(
                "createdAtTo",
                "is required with createdAtFrom",
            ));
        }
    };
    let (low, high) = ids::id_range(&from, &to);
    let range = SkRange::Between(ids::padded(low), ids::padded(high));
    let ws = caller.workspace_id;
    let only_new = q.new_contact == Some(true);
    let partitions = if only_new {
        keys::new_contacts(ws)
    } else {
        keys::contact_partitions(ws)
    };
    let shards: Vec<Query> = partitions
        .into_iter()
        .map(|pk| Query::new(Index::TABLE, pk, range.clone()))
        .collect();
    // The window's count: its keys, every shard at once.
    let counting = shards.iter().map(|query| {
        let query = Query {
            keys_only: true,
            ..query.clone()
        };
        async move { ApiResult::Ok(read_up_to(store, query, usize::MAX).await?.len()) }
    });
    let (items, in_window) = tokio::try_join!(
        merged_page(store, shards.clone(), paging),
        futures_util::future::try_join_all(counting),
    )?;
    let in_window: usize = in_window.into_iter().sum();
    let data = if only_new {
        load(store, ws, &ids_of(&items)).await?
    } else {
        items
            .into_iter()
            .map(record::from_item)
            .collect::<ApiResult<_>>()?
    };
    Ok(ListPage {
        total_count: Some(in_window as u64),
        data,
    })
}
