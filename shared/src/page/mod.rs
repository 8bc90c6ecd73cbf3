//! Pagination, written once for every list.
//!
//! `/v3` lists take `limit` (1..=500, default 20) and `offset` (>= 0, default 0) and
//! answer `{ totalCount, data }`. A page is one Query from the offset on; the offset
//! itself is stepped over with key-only reads of the same range. DynamoDB charges
//! a key-only read like a full one, so the step is bounded: `offset + limit` may not
//! pass [`MAX_WINDOW`] (the same rule as Elasticsearch's `max_result_window`);
//! past it, narrow the list with its filters. See docs/design.md for the costs.
//!
//! `/v1` lists take `limit` (1..=100, default 10) and `cursor`, the id of the last
//! record of the previous page, and answer `{ data, nextCursor }`.

use serde::{Deserialize, Serialize};

use crate::error::{ApiError, ApiResult};
use crate::store::{Item, Query, Store};

mod merge;
pub use merge::{each_shard, merged, merged_more};

/// The deepest item an offset page may reach.
pub const MAX_WINDOW: u64 = 10_000;

/// The query of a `/v3` list that has no filters.
#[derive(Debug, Deserialize, validator::Validate, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OffsetQuery {
    /// Records per page (default 20).
    #[schemars(range(min = 1, max = 500), extend("default" = 20))]
    pub limit: Option<u64>,
    /// Records to skip; `offset + limit` is at most 10,000 (narrow with filters beyond).
    #[schemars(range(max = 9999), extend("default" = 0))]
    pub offset: Option<u64>,
}

impl OffsetQuery {
    pub fn paging(&self) -> ApiResult<Paging> {
        Paging::parse(self.limit, self.offset)
    }
}

/// The query of a `/v1` list that has no filters.
#[derive(Debug, Deserialize, validator::Validate, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CursorQuery {
    /// Records per page (default 10).
    #[schemars(range(min = 1, max = 100), extend("default" = 10))]
    pub limit: Option<u64>,
    pub cursor: Option<String>,
}

impl CursorQuery {
    pub fn paging(self) -> ApiResult<CursorPaging> {
        CursorPaging::parse(self.limit, self.cursor)
    }
}

/// `limit` and `offset` of a `/v3` list, checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Paging {
    pub limit: u64,
    pub offset: u64,
}

impl Paging {
    pub const DEFAULT_LIMIT: u64 = 20;
    pub const MAX_LIMIT: u64 = 500;

    pub fn parse(limit: Option<u64>, offset: Option<u64>) -> ApiResult<Self> {
        let limit = limit.unwrap_or(Self::DEFAULT_LIMIT);
        let offset = offset.unwrap_or(0);
        if !(1..=Self::MAX_LIMIT).contains(&limit) {
            return Err(ApiError::field(
                "limit",
                format!("must be between 1 and {}", Self::MAX_LIMIT),
            ));
        }
        if offset.saturating_add(limit) > MAX_WINDOW {
            return Err(ApiError::field(
                "offset",
                format!(
                    "offset + limit must be at most {MAX_WINDOW}; narrow the list with filters"
                ),
            ));
        }
        Ok(Self { limit, offset })
    }
}

/// `limit` and `cursor` of a `/v1` list, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CursorPaging {
    pub limit: u64,
    pub cursor: Option<String>,
}

impl CursorPaging {
    pub const DEFAULT_LIMIT: u64 = 10;
    pub const MAX_LIMIT: u64 = 100;

    pub fn parse(limit: Option<u64>, cursor: Option<String>) -> ApiResult<Self> {
        let limit = limit.unwrap_or(Self::DEFAULT_LIMIT);
        if !(1..=Self::MAX_LIMIT).contains(&limit) {
            return Err(ApiError::field(
                "limit",
                format!("must be between 1 and {}", Self::MAX_LIMIT),
            ));
        }
        Ok(Self {
            limit,
            cursor: cursor.filter(|c| !c.is_empty()),
        })
    }

    /// The cursor as a numeric record id.
    pub fn numeric_cursor(&self) -> ApiResult<Option<u64>> {
        self.cursor
            .as_deref()
            .map(|c| {
                c.parse::<u64>().map_err(|_| {
                    ApiError::field(
                        "cursor",
                        "must be the id of the last record of the previous page",
                    )
                })
            })
            .transpose()
    }
}

/// The `/v3` list envelope.
#[derive(Debug, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "{T}List")]
pub struct ListPage<T> {
    /// Absent where the spec says a list does not return it (contact search).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub total_count: Option<u64>,
    pub data: Vec<T>,
}

/// The `/v1` list envelope. `nextCursor` is empty on the last page.
#[derive(Debug, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "{T}CursorPage")]
pub struct CursorPage<T> {
    pub data: Vec<T>,
    pub next_cursor: String,
}

/// Reads `paging.limit` items of a range after stepping over `paging.offset`.
pub async fn offset_page(store: &dyn Store, query: Query, paging: Paging) -> ApiResult<Vec<Item>> {
    let mut query = query;
    let mut to_skip = paging.offset as usize;
    while to_skip > 0 {
        let step = Query {
            keys_only: true,
            limit: Some(to_skip),
            ..query.clone()
        };
        let page = store.query(&step).await?;
        to_skip -= page.items.len();
        match page.last_key {
            Some(last) => query.start_after = Some(last),
            None => return Ok(Vec::new()), // the offset is past the end
        }
    }
    read_up_to(store, query, paging.limit as usize).await
}

/// Reads up to `n` items of a range, following DynamoDB's 1 MB pages
/// ([`read_more`], without whether more follow).
pub async fn read_up_to(store: &dyn Store, mut query: Query, n: usize) -> ApiResult<Vec<Item>> {
    Ok(read_more(store, &mut query, n).await?.0)
}

/// Up to `n` more items of a query, which then continues after them, and
/// whether it may hold more (DynamoDB says so at a full page, even when
/// nothing follows).
async fn read_more(store: &dyn Store, query: &mut Query, n: usize) -> ApiResult<(Vec<Item>, bool)> {
    let mut items = Vec::new();
    while items.len() < n {
        query.limit = Some(n - items.len());
        let page = store.query(query).await?;
        items.extend(page.items);
        match page.last_key {
            Some(last) => query.start_after = Some(last),
            None => return Ok((items, false)),
        }
    }
    Ok((items, true))
}

/// Reads one `/v1` page: `limit` items after the cursor, plus one to learn whether
/// another page follows (so the last page never promises an empty next one).
/// `queries` are one range, or the shards of a family ([`merged`]).
pub async fn cursor_page(
    store: &dyn Store,
    queries: Vec<Query>,
    limit: u64,
) -> ApiResult<(Vec<Item>, bool)> {
    let limit = limit as usize;
    let mut items = merged(store, queries, limit + 1).await?;
    let more = items.len() > limit;
    items.truncate(limit);
    Ok((items, more))
}

/// A `/v1` page of records: up to `limit` of the range, and the cursor of the
/// last one (`cursor_of`) when the range holds more, else an empty cursor.
pub async fn cursor_records<R: crate::record::Record>(
    store: &dyn Store,
    queries: Vec<Query>,
    limit: u64,
    cursor_of: impl Fn(&R) -> String,
) -> ApiResult<CursorPage<R>> {
    let (items, more) = cursor_page(store, queries, limit).await?;
    let data: Vec<R> = items
        .into_iter()
        .map(crate::record::from_item)
        .collect::<ApiResult<_>>()?;
    let next_cursor = match data.last() {
        Some(last) if more => cursor_of(last),
        _ => String::new(),
    };
    Ok(CursorPage { data, next_cursor })
}

/// A `/v3` page of records with its `totalCount` from the list's counter item:
/// one Query (after the offset step) and one GetItem, side by side.
pub async fn counted_page<R: crate::record::Record>(
    store: &dyn Store,
    query: Query,
    paging: Paging,
    counter: crate::keys::Counter,
) -> ApiResult<ListPage<R>> {
    counted(store, offset_page(store, query, paging), counter).await
}

/// [`counted_page`] of a family kept over shards (`keys::shards`): one
/// Query a shard, merged ([`merged`]), beside the counter's read.
pub async fn counted_merged_page<R: crate::record::Record>(
    store: &dyn Store,
    shards: Vec<Query>,
    paging: Paging,
    counter: crate::keys::Counter,
) -> ApiResult<ListPage<R>> {
    counted(store, merged_page(store, shards, paging), counter).await
}

/// An offset page of a family kept over shards ([`merged`]); of one
/// partition, [`offset_page`] (which steps over the offset by keys only).
pub async fn merged_page(
    store: &dyn Store,
    mut shards: Vec<Query>,
    paging: Paging,
) -> ApiResult<Vec<Item>> {
    if shards.len() == 1 {
        return offset_page(store, shards.remove(0), paging).await;
    }
    let want = (paging.offset + paging.limit) as usize;
    let items = merged(store, shards, want).await?;
    Ok(items.into_iter().skip(paging.offset as usize).collect())
}

async fn counted<R: crate::record::Record>(
    store: &dyn Store,
    page: impl std::future::Future<Output = ApiResult<Vec<Item>>>,
    counter: crate::keys::Counter,
) -> ApiResult<ListPage<R>> {
    let (items, total) = tokio::try_join!(page, crate::record::count(store, &counter))?;
    Ok(ListPage {
        total_count: Some(total),
        data: items
            .into_iter()
            .map(crate::record::from_item)
            .collect::<ApiResult<_>>()?,
    })
}

impl<T> ListPage<T> {
    pub fn map<U>(self, f: impl FnMut(T) -> U) -> ListPage<U> {
        ListPage {
            total_count: self.total_count,
            data: self.data.into_iter().map(f).collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn v3_paging_bounds() {
        assert_eq!(
            Paging::parse(None, None).unwrap(),
            Paging {
                limit: 20,
                offset: 0
            }
        );
        assert!(Paging::parse(Some(0), None).is_err());
        assert!(Paging::parse(Some(501), None).is_err());
        assert!(Paging::parse(Some(500), Some(9_500)).is_ok());
        assert!(Paging::parse(Some(500), Some(9_501)).is_err());
        assert!(
            Paging::parse(Some(20), Some(u64::MAX)).is_err(),
            "no overflow"
        );
    }

    #[test]
    fn v1_paging_bounds() {
        assert_eq!(CursorPaging::parse(None, None).unwrap().limit, 10);
        assert!(CursorPaging::parse(Some(0), None).is_err());
        assert!(CursorPaging::parse(Some(101), None).is_err());
        let p = CursorPaging::parse(Some(5), Some("abc".into())).unwrap();
        assert!(p.numeric_cursor().is_err());
        assert_eq!(
            CursorPaging::parse(None, Some(String::new()))
                .unwrap()
                .cursor,
            None
        );
    }
}
