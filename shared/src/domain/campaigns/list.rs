//! `GET /v3/campaigns`: newest first, `name` (word prefixes, without case or
//! accents), `channelId` and `status`, combinable. Unfiltered, one Query page
//! and the counter; filtered, the narrowest index (name words, then channel,
//! then status), its digests filtered, and the page loaded.

use std::collections::HashSet;

use serde::Deserialize;
use validator::Validate;

use super::LIST;
use super::index::{Digest, of_item, words};
use super::record::{Campaign, CampaignStatus};
use crate::auth::Caller;
use crate::error::{ApiError, ApiResult};
use crate::keys;
use crate::keys::CampaignId;
use crate::page::{ListPage, MAX_WINDOW, Paging, counted_page, read_up_to};
use crate::record;
use crate::store::{Index, Key, Query, SkRange, Store};

#[derive(Debug, Default, Deserialize, Validate, schemars::JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CampaignQuery {
    /// Records per page (default 20).
    #[schemars(range(min = 1, max = 500), extend("default" = 20))]
    pub limit: Option<u64>,
    /// Records to skip; `offset + limit` is at most 10,000 (narrow with filters beyond).
    #[schemars(range(max = 9999), extend("default" = 0))]
    pub offset: Option<u64>,
    #[validate(length(min = 1, max = 128))]
    pub name: Option<String>,
    #[validate(length(min = 1, max = 64))]
    pub channel_id: Option<String>,
    pub status: Option<CampaignStatus>,
}

pub async fn list(
    store: &dyn Store,
    caller: &Caller,
    q: CampaignQuery,
) -> ApiResult<ListPage<Campaign>> {
    let paging = Paging::parse(q.limit, q.offset)?;
    let ws = caller.workspace_id;
    let terms = q.name.as_deref().map(words).unwrap_or_default();
    if q.name.is_some() && terms.is_empty() {
        return Err(ApiError::field("name", "must hold a letter or a digit"));
    }
    if terms.is_empty() && q.channel_id.is_none() && q.status.is_none() {
        let query = Query::new(Index::TABLE, keys::campaigns(ws), SkRange::All).backward();
        return counted_page(store, query, paging, keys::counter(ws, LIST)).await;
    }
    let query = if let Some(driving) = terms.iter().max_by_key(|t| t.len()) {
        Query::new(
            Index::TABLE,
            keys::campaigns_by(ws, "NAMEWORD", "ALL"),
            SkRange::Prefix(driving.clone()),
        )
    } else if let Some(channel) = &q.channel_id {
        Query::new(
            Index::TABLE,
            keys::campaigns_by(ws, "CHANNEL", channel),
            SkRange::All,
        )
    } else {
        let status = q.status.map_or("", |s| s.as_str());
        Query::new(
            Index::TABLE,
            keys::campaigns_by(ws, "STATUS", status),
            SkRange::All,
        )
    };
    let items = read_up_to(store, query, MAX_WINDOW as usize + 1).await?;
    if items.len() > MAX_WINDOW as usize {
        return Err(ApiError::bad_request(
            "the filters match more than 10,000 campaigns; narrow them",
        ));
    }
    let admits = |d: &Digest| {
        terms
            .iter()
            .all(|t| d.words.iter().any(|w| w.starts_with(t.as_str())))
            && q.channel_id
                .as_ref()
                .is_none_or(|c| d.channel_id.as_ref() == Some(c))
            && q.status.is_none_or(|s| d.status == s)
    };
    let mut seen = HashSet::new();
    let mut ids: Vec<CampaignId> = Vec::new();
    for item in &items {
        let d = of_item(item)?;
        if admits(&d) && seen.insert(d.id) {
            ids.push(d.id);
        }
    }
    ids.sort_unstable_by(|a, b| b.cmp(a));
    let page: Vec<Key> = ids
        .iter()
        .skip(paging.offset as usize)
        .take(paging.limit as usize)
        .map(|&id| keys::campaign(ws, id))
        .collect();
    Ok(ListPage {
        total_count: Some(ids.len() as u64),
        data: record::find_many(store, &page).await?,
    })
}
