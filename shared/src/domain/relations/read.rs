//! What the contact list reads of relations: the contacts of an organization,
//! contacts by the time of their last session, and the organizations of a page.

use std::collections::HashMap;

use serde_json::Value;

use super::{Organization, OrganizationView};
use crate::domain::contacts::Contact;
use crate::error::{ApiError, ApiResult};
use crate::ids::{self, Timestamp, WorkspaceId};
use crate::keys;
use crate::keys::OrganizationId;
use crate::page::{MAX_WINDOW, read_up_to};
use crate::record;
use crate::store::{Index, Key, Query, SK, SkRange, Store};

/// The ids of the contacts linked to an organization, ascending; none when the
/// organization is unknown or not active.
pub async fn contacts_of_organization(
    store: &dyn Store,
    ws: WorkspaceId,
    organization_id: u64,
) -> ApiResult<Vec<u64>> {
    let org: Option<Organization> = record::get(
        store,
        &keys::organization(ws, OrganizationId(organization_id)),
        false,
    )
    .await?;
    if !org.is_some_and(|o| o.active) {
        return Ok(Vec::new());
    }
    let query = Query {
        keys_only: true,
        ..Query::new(
            Index::TABLE,
            keys::organization_contacts(ws, organization_id),
            SkRange::All,
        )
    };
    let items = read_up_to(store, query, MAX_WINDOW as usize).await?;
    Ok(items
        .iter()
        .filter_map(|i| {
            i.get(SK)
                .and_then(Value::as_str)
                .and_then(|sk| sk.parse().ok())
        })
        .collect())
}

/// The ids of contacts having a conversation whose last session is in `segment`
/// (when given) and was created in `[from, to]` (each bound optional), ascending.
pub async fn contacts_by_last_session(
    store: &dyn Store,
    ws: WorkspaceId,
    segment: Option<&str>,
    from: Option<Timestamp>,
    to: Option<Timestamp>,
) -> ApiResult<Vec<u64>> {
    let partition = match segment {
        Some(segment) => keys::segment_sessions(ws, segment),
        None => keys::last_sessions(ws),
    };
    // Sort keys are `<time>#<contact>#<conversation>`; `$` sorts after `#`, so
    // `<to>$` bounds every entry of that very millisecond.
    let low = from.map(|t| ids::format_ts(&t));
    let high = to.map(|t| format!("{}$", ids::format_ts(&t)));
    let range = match (low, high) {
        (Some(l), Some(h)) => SkRange::Between(l, h),
        (Some(l), None) => SkRange::AtLeast(l),
        (None, Some(h)) => SkRange::AtMost(h),
        (None, None) => SkRange::All,
    };
    let query = Query {
        keys_only: true,
        ..Query::new(Index::TABLE, partition, range)
    };
    let items = read_up_to(store, query, MAX_WINDOW as usize).await?;
    let mut ids: Vec<u64> = items
        .iter()
        .filter_map(|i| {
            i.get(SK)
                .and_then(Value::as_str)
                .and_then(keys::last_session_contact)
        })
        .collect();
    ids.sort_unstable();
    ids.dedup();
    Ok(ids)
}

/// The main organization and the number of organizations of each contact:
/// one BatchGetItem of the main organizations of the page.
pub async fn organizations_of(
    store: &dyn Store,
    contacts: &[Contact],
) -> ApiResult<HashMap<u64, OrganizationView>> {
    let Some(first) = contacts.first() else {
        return Ok(HashMap::new());
    };
    let ws = first.workspace_id;
    let mut wanted: Vec<u64> = contacts
        .iter()
        .filter_map(|c| c.main_organization_id)
        .collect();
    wanted.sort_unstable();
    wanted.dedup();
    let mut found = HashMap::new();
    for chunk in wanted.chunks(crate::store::MAX_BATCH_GET) {
        let keys: Vec<Key> = chunk
            .iter()
            .map(|&id| keys::organization(ws, OrganizationId(id)))
            .collect();
        for item in store.batch_get(&keys).await? {
            let org: Organization = record::from_item(item)?;
            found.insert(org.id.0, OrganizationView::from(org));
        }
    }
    Ok(found)
}

/// `organizationId` of the contact list: a numeric organization id.
pub fn parse_organization_id(text: &str) -> ApiResult<u64> {
    text.trim()
        .parse()
        .map_err(|_| ApiError::field("organizationId", "must be the id of an organization"))
}
