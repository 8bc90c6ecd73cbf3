//! `GET /v3/contacts`: each filter reads its own index into a set of ids, the
//! sets meet, and only the page is loaded.

use serde::Deserialize;
use validator::Validate;

use super::LIST;
use super::NEW_LIST;
use super::lookup::{email_ids, ids_of, load};
use super::record::Contact;
use super::search::search;
use crate::auth::Caller;
use crate::domain::relations;
use crate::error::{ApiError, ApiResult};
use crate::ids::ClientTime;
use crate::ids::WorkspaceId;
use crate::keys;
use crate::page::{ListPage, Paging, counted_merged_page, counted_page, each_shard, merged_page};
use crate::record;
use crate::store::{Query, SkRange, Store};
use crate::text;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum SortField {
    #[default]
    CreatedAt,
    Name,
    Id,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum SortOrder {
    Ascend,
    #[default]
    Descend,
}

/// The query of `GET /v3/contacts`.
#[derive(Debug, Default, Deserialize, Validate, schemars::JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ContactQuery {
    #[validate(length(min = 1, max = 128))]
    pub email_exact: Option<String>,
    #[validate(length(min = 1, max = 128))]
    pub search: Option<String>,
    pub new_contact: Option<bool>,
    #[validate(length(min = 1, max = 32))]
    pub organization_id: Option<String>,
    #[validate(length(min = 1, max = 128))]
    pub segment_id: Option<String>,
    pub session_created_at_from: Option<ClientTime>,
    pub session_created_at_to: Option<ClientTime>,
    pub with_organization: Option<bool>,
    pub sort_field: Option<SortField>,
    pub sort_order: Option<SortOrder>,
    /// Records per page (default 20).
    #[schemars(range(min = 1, max = 500), extend("default" = 20))]
    pub limit: Option<u64>,
    /// Records to skip; `offset + limit` is at most 10,000 (narrow with filters beyond).
    #[schemars(range(max = 9999), extend("default" = 0))]
    pub offset: Option<u64>,
}

/// `GET /v3/contacts`. Each filter (`emailExact`, `organizationId`, `segmentId`
/// with `sessionCreatedAtFrom/To`) reads its own index into a set of contact ids;
/// the sets meet, and a page of them is read. `search` reads its index and keeps
/// what the other filters allow. With no filter, `newContact=true` reads its
/// index and the rest reads the list in the order asked.
pub async fn list(
    store: &dyn Store,
    caller: &Caller,
    q: ContactQuery,
) -> ApiResult<ListPage<Contact>> {
    let paging = Paging::parse(q.limit, q.offset)?;
    let sort = q.sort_field.unwrap_or_default();
    let forward = q.sort_order.unwrap_or_default() == SortOrder::Ascend;
    let only_new = q.new_contact == Some(true);
    let ws = caller.workspace_id;

    let mut sets: Vec<Vec<u64>> = Vec::new();
    if let Some(email) = q.email_exact.as_deref() {
        sets.push(email_ids(store, ws, email).await?);
    }
    if let Some(org) = q.organization_id.as_deref() {
        let org = relations::parse_organization_id(org)?;
        sets.push(relations::contacts_of_organization(store, ws, org).await?);
    }
    let session_from = q.session_created_at_from.map(|t| t.0);
    let session_to = q.session_created_at_to.map(|t| t.0);
    if let (Some(from), Some(to)) = (session_from, session_to)
        && to < from
    {
        return Err(ApiError::field(
            "sessionCreatedAtTo",
            "must not be before sessionCreatedAtFrom",
        ));
    }
    if q.segment_id.is_some() || session_from.is_some() || session_to.is_some() {
        sets.push(
            relations::contacts_by_last_session(
                store,
                ws,
                q.segment_id.as_deref(),
                session_from,
                session_to,
            )
            .await?,
        );
    }
    let allowed = intersect(sets);

    if let Some(term) = q.search.as_deref() {
        let keep = |c: &Contact| {
            (!only_new || c.fields.new_contact)
                && allowed
                    .as_ref()
                    .is_none_or(|a| a.binary_search(&c.id).is_ok())
        };
        let data = search(store, caller, term, &keep, paging).await?;
        return Ok(ListPage {
            total_count: None,
            data,
        });
    }
    if let Some(ids) = allowed {
        return page_of_ids(store, ws, ids, sort, forward, only_new, paging).await;
    }
    if only_new {
        if sort == SortField::Name {
            return Err(ApiError::field(
                "sortField",
                "newContact=true lists by creation; sort by createdAt or id",
            ));
        }
        let shards = each_shard(keys::new_contacts(ws), SkRange::All, forward);
        let counter = keys::counter(ws, NEW_LIST);
        let (items, total) = tokio::try_join!(
            merged_page(store, shards, paging),
            record::count(store, &counter)
        )?;
        let data = load(store, ws, &ids_of(&items)).await?;
        return Ok(ListPage {
            total_count: Some(total),
            data,
        });
    }
    let counter = keys::counter(ws, LIST);
    match sort {
        SortField::Name => {
            let mut query = Query::new(keys::GSI1, keys::contacts_by_name(ws), SkRange::All);
            query.forward = forward;
            counted_page(store, query, paging, counter).await
        }
        // Ids are time-ordered: creation order is id order, in every shard.
        SortField::CreatedAt | SortField::Id => {
            let shards = each_shard(keys::contact_partitions(ws), SkRange::All, forward);
            counted_merged_page(store, shards, paging, counter).await
        }
    }
}

/// The ids in every set (each ascending), or `None` when no filter made a set.
fn intersect(sets: Vec<Vec<u64>>) -> Option<Vec<u64>> {
    let mut sets = sets.into_iter();
    let mut result = sets.next()?;
    for set in sets {
        result.retain(|id| set.binary_search(id).is_ok());
    }
    result.sort_unstable();
    result.dedup();
    Some(result)
}

/// A page of a set of contact ids. In creation order (id order) only the page
/// is read; sorting by name or filtering new contacts reads the set.
async fn page_of_ids(
    store: &dyn Store,
    ws: WorkspaceId,
    mut ids: Vec<u64>,
    sort: SortField,
    forward: bool,
    only_new: bool,
    paging: Paging,
) -> ApiResult<ListPage<Contact>> {
    let (offset, limit) = (paging.offset as usize, paging.limit as usize);
    if only_new || sort == SortField::Name {
        let mut all = load(store, ws, &ids).await?;
        all.retain(|c| !only_new || c.fields.new_contact);
        sort_contacts(&mut all, sort, forward);
        let total = all.len() as u64;
        let data = all.into_iter().skip(offset).take(limit).collect();
        return Ok(ListPage {
            total_count: Some(total),
            data,
        });
    }
    if !forward {
        ids.reverse();
    }
    let total = ids.len() as u64;
    let page: Vec<u64> = ids.into_iter().skip(offset).take(limit).collect();
    Ok(ListPage {
        total_count: Some(total),
        data: load(store, ws, &page).await?,
    })
}

fn sort_contacts(contacts: &mut [Contact], sort: SortField, forward: bool) {
    match sort {
        SortField::Name => contacts
            .sort_by_cached_key(|c| (text::fold(c.fields.name.as_deref().unwrap_or("")), c.id)),
        SortField::CreatedAt | SortField::Id => contacts.sort_by_key(|c| c.id),
    }
    if !forward {
        contacts.reverse();
    }
}
