//! `GET /v1/contacts`: cursor pages, oldest first, with the public filters.

use serde::Deserialize;
use validator::Validate;

use super::input::canonical_phone;
use super::lookup::{email_ids, load};
use super::record::Contact;
use super::write::by_phone;
use crate::auth::Caller;
use crate::error::ApiResult;
use crate::ids::{self, ClientTime};
use crate::keys;
use crate::page::{CursorPage, CursorPaging, cursor_records, each_shard};
use crate::store::{SkRange, Store};

/// The query of `GET /v1/contacts`.
#[derive(Debug, Default, Deserialize, Validate, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct V1Query {
    /// Records per page (default 10).
    #[schemars(range(min = 1, max = 100), extend("default" = 10))]
    pub limit: Option<u64>,
    pub cursor: Option<String>,
    pub created_at_from: Option<ClientTime>,
    pub created_at_to: Option<ClientTime>,
    #[validate(length(min = 1, max = 100))]
    pub phone: Option<String>,
    #[validate(length(min = 1, max = 128))]
    pub email: Option<String>,
}

/// `GET /v1/contacts`: oldest first after the cursor (a contact id).
pub async fn list_v1(
    store: &dyn Store,
    caller: &Caller,
    q: V1Query,
) -> ApiResult<CursorPage<Contact>> {
    let paging = CursorPaging::parse(q.limit, q.cursor)?;
    let after = paging.numeric_cursor()?.unwrap_or(0);
    let from = q.created_at_from.map(|t| t.0);
    let to = q.created_at_to.map(|t| t.0);
    let in_time = |c: &Contact| {
        from.is_none_or(|f| c.stamps.created_at >= f) && to.is_none_or(|t| c.stamps.created_at <= t)
    };
    let ws = caller.workspace_id;

    // A phone or an e-mail names a handful of contacts: read them and filter.
    let few = if let Some(raw) = q.phone.as_deref() {
        let e164 = canonical_phone("phone", raw)?;
        Some(
            by_phone(store, caller, &e164)
                .await?
                .into_iter()
                .collect::<Vec<_>>(),
        )
    } else if let Some(email) = q.email.as_deref() {
        let ids = email_ids(store, ws, email).await?;
        Some(load(store, ws, &ids).await?)
    } else {
        None
    };
    if let Some(mut found) = few {
        found.retain(|c| c.id > after && in_time(c));
        found.sort_by_key(|c| c.id);
        let more = found.len() > paging.limit as usize;
        found.truncate(paging.limit as usize);
        let next_cursor = if more {
            found.last().map(|c| c.id.to_string()).unwrap_or_default()
        } else {
            String::new()
        };
        return Ok(CursorPage {
            data: found,
            next_cursor,
        });
    }

    // Otherwise the creation window is an id range of the table.
    let (low, high) = ids::id_range(
        &from.unwrap_or_default(),
        &to.unwrap_or_else(|| ids::now() + chrono::Duration::days(1)),
    );
    let low = low.max(after.saturating_add(1));
    let range = SkRange::Between(ids::padded(low), ids::padded(high));
    let shards = each_shard(keys::contact_partitions(ws), range, true);
    cursor_records(store, shards, paging.limit, |r: &Contact| r.id.to_string()).await
}
