//! Creating, reading and changing deals; the index items move in the deal's
//! own transaction.

use std::collections::{BTreeMap, HashSet};

use super::LIST;
use super::input::{DealInput, apply, missing};
use super::record::{Deal, DealContact, DealFields, DealStatus};
use crate::auth::Caller;
use crate::domain::rollups;
use crate::error::{ApiError, ApiResult};
use crate::ids;
use crate::keys;
use crate::record::{self, CommitError, Mutation, Stamps, with_fresh_id};
use crate::store::{Key, Store};

pub async fn create(store: &dyn Store, caller: &Caller, input: DealInput) -> ApiResult<Deal> {
    let fields = new_fields(store, caller, input).await?;
    with_fresh_id(|id| insert(store, caller, id, &fields, Stamps::new())).await
}

/// A new deal's fields from a create body: the spec's required ones checked,
/// its contact and products read.
pub(super) async fn new_fields(
    store: &dyn Store,
    caller: &Caller,
    input: DealInput,
) -> ApiResult<DealFields> {
    let missing = missing(&input);
    if !missing.is_empty() {
        return Err(ApiError::fields(missing));
    }
    let ws = caller.workspace_id;
    let now = ids::now();
    let mut fields = DealFields {
        legacy_id: None,
        name: String::new(),
        value: 0.0,
        status: DealStatus::Open,
        contact: DealContact {
            id: 0,
            name: None,
            avatar: None,
            phone: None,
            email: None,
            created_at: now,
            is_private: false,
        },
        operator_id: 0,
        group_id: 0,
        pipeline_id: String::new(),
        stage_id: String::new(),
        origin: String::new(),
        tag_ids: Vec::new(),
        lost_reason: None,
        lost_reason_obs: None,
        products: Vec::new(),
        won_lost_date: None,
        due_date: None,
        last_stage_changed: Some(now),
        conversation: None,
        campaign: None,
        author_type: None,
        author_id: None,
        position: None,
        focused_counts: None,
        comments: None,
        tasks: None,
        time_in_stage: BTreeMap::new(),
        custom_fields: None,
        context: None,
    };
    apply(store, ws, &mut fields, None, input).await?;
    Ok(fields)
}

/// Creates the deal `id`, its index items and counts, in one transaction.
pub(super) async fn insert(
    store: &dyn Store,
    caller: &Caller,
    id: u64,
    fields: &DealFields,
    stamps: Stamps,
) -> Result<Deal, CommitError> {
    let ws = caller.workspace_id;
    let deal = Deal {
        id,
        workspace_id: ws,
        fields: fields.clone(),
        stamps,
        version: 1,
    };
    let mut m = Mutation::new(caller);
    m.create(&deal)?.count_list(&keys::counter(ws, LIST), 1);
    rollups::stage(&mut m, ws, &[], &rollups::of_deal(&deal));
    for item in deal.index_items() {
        m.put_item(item);
    }
    m.commit(store, "deal.create", "deal", &id.to_string())
        .await?;
    Ok(deal)
}

pub async fn get(store: &dyn Store, caller: &Caller, id: u64) -> ApiResult<Deal> {
    record::find(store, &keys::deal(caller.workspace_id, id), false, "deal").await
}

pub async fn update(
    store: &dyn Store,
    caller: &Caller,
    id: u64,
    input: DealInput,
) -> ApiResult<Deal> {
    let ws = caller.workspace_id;
    let current: Deal = record::find(store, &keys::deal(ws, id), true, "deal").await?;
    let mut deal = current.clone();
    apply(store, ws, &mut deal.fields, Some(&current.fields), input).await?;
    let mut m = Mutation::new(caller);
    if !m.update(&current, &mut deal)? {
        return Ok(current);
    }
    let keep: HashSet<String> = deal.partitions().into_iter().collect();
    for old in current
        .partitions()
        .into_iter()
        .filter(|p| !keep.contains(p))
    {
        m.remove(Key::new(old, ids::padded(id)));
    }
    rollups::stage(
        &mut m,
        ws,
        &rollups::of_deal(&current),
        &rollups::of_deal(&deal),
    );
    // Every index item carries the digest: rewrite them all.
    for item in deal.index_items() {
        m.put_item(item);
    }
    m.commit(store, "deal.update", "deal", &id.to_string())
        .await?;
    Ok(deal)
}
