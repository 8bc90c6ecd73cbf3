//! `/v3/webhooks`: create (the secret shown once), read, list, change,
//! delete, and rotate the secret.

use super::record::{
    CreatedWebhook, ID_PREFIX, MAX_PER_WORKSPACE, ROTATION_OVERLAP, RotatedSecret, Webhook,
    WebhookCreate, WebhookPatch, WebhookView,
};
use crate::auth::Caller;
use crate::domain::events::TypeFilter;
use crate::error::{ApiError, ApiResult};
use crate::ids;
use crate::keys;
use crate::outbound::{self, sign, target};
use crate::page::{ListPage, read_up_to};
use crate::record::{self, Mutation, Stamps, from_item};
use crate::store::{Index, Query, SkRange, Store};

/// `url` checked as a delivery address (400 on `url` otherwise).
fn checked_url(url: &str, settings: &outbound::Settings) -> ApiResult<String> {
    target::parse(url.trim(), settings.allow_private)
        .map(|t| t.url.to_string())
        .map_err(|problem| ApiError::field("url", problem))
}

fn checked_types(types: Vec<String>) -> ApiResult<Vec<String>> {
    let mut types: Vec<String> = types.into_iter().map(|t| t.trim().to_owned()).collect();
    types.sort();
    types.dedup();
    TypeFilter::checked(types.clone(), "types")?;
    Ok(types)
}

pub async fn create(
    store: &dyn Store,
    caller: &Caller,
    settings: &outbound::Settings,
    input: WebhookCreate,
) -> ApiResult<CreatedWebhook> {
    let url = checked_url(&input.url, settings)?;
    let types = checked_types(input.types.unwrap_or_else(|| vec!["*".into()]))?;
    if all(store, caller).await?.len() >= MAX_PER_WORKSPACE {
        return Err(ApiError::conflict(format!(
            "a workspace has at most {MAX_PER_WORKSPACE} webhook endpoints; delete one first"
        )));
    }
    let webhook = Webhook {
        id: format!("{ID_PREFIX}{}", ids::new_ulid()),
        workspace_id: caller.workspace_id,
        url,
        types,
        description: input.description,
        enabled: input.enabled.unwrap_or(true),
        disabled_reason: None,
        import_rows: input.import_rows.unwrap_or(false),
        secret: sign::new_secret(),
        previous_secret: None,
        previous_until: None,
        stamps: Stamps::new(),
        version: 1,
    };
    let mut m = Mutation::new(caller);
    m.create(&webhook)?;
    m.commit(store, "webhook.create", "webhook", &webhook.id)
        .await?;
    Ok(CreatedWebhook {
        webhook: WebhookView::from(&webhook),
        secret: webhook.secret,
    })
}

/// One endpoint; another workspace's, or an id of no endpoint, is a 404.
pub async fn find(
    store: &dyn Store,
    caller: &Caller,
    id: &str,
    consistent: bool,
) -> ApiResult<Webhook> {
    if !id.strip_prefix(ID_PREFIX).is_some_and(ids::is_ulid) {
        return Err(ApiError::not_found("webhook"));
    }
    record::find(
        store,
        &keys::webhook(caller.workspace_id, id),
        consistent,
        "webhook",
    )
    .await
}

/// Every endpoint of the caller's workspace, oldest first (one Query: there
/// are at most [`MAX_PER_WORKSPACE`]).
pub async fn all(store: &dyn Store, caller: &Caller) -> ApiResult<Vec<Webhook>> {
    of_workspace(store, caller.workspace_id).await
}

pub async fn of_workspace(store: &dyn Store, ws: ids::WorkspaceId) -> ApiResult<Vec<Webhook>> {
    let query = Query::new(Index::TABLE, keys::webhooks(ws), SkRange::All);
    read_up_to(store, query, MAX_PER_WORKSPACE * 2)
        .await?
        .into_iter()
        .map(from_item)
        .collect()
}

pub async fn list(store: &dyn Store, caller: &Caller) -> ApiResult<ListPage<WebhookView>> {
    let data: Vec<WebhookView> = all(store, caller)
        .await?
        .iter()
        .map(WebhookView::from)
        .collect();
    Ok(ListPage {
        total_count: Some(data.len() as u64),
        data,
    })
}

pub async fn update(
    store: &dyn Store,
    caller: &Caller,
    settings: &outbound::Settings,
    id: &str,
    patch: WebhookPatch,
) -> ApiResult<Webhook> {
    let current = find(store, caller, id, true).await?;
    let mut next = current.clone();
    if let Some(url) = patch.url {
        next.url = checked_url(&url, settings)?;
    }
    if let Some(types) = patch.types {
        next.types = checked_types(types)?;
    }
    if let Some(description) = patch.description {
        next.description = description;
    }
    if let Some(enabled) = patch.enabled {
        next.enabled = enabled;
        if enabled {
            next.disabled_reason = None;
        }
    }
    if let Some(import_rows) = patch.import_rows {
        next.import_rows = import_rows;
    }
    let mut m = Mutation::new(caller);
    if !m.update(&current, &mut next)? {
        return Ok(current);
    }
    m.commit(store, "webhook.update", "webhook", id).await?;
    Ok(next)
}

pub async fn delete(store: &dyn Store, caller: &Caller, id: &str) -> ApiResult<Webhook> {
    let webhook = find(store, caller, id, true).await?;
    let mut m = Mutation::new(caller);
    m.delete_record(&webhook, "webhook");
    m.commit(store, "webhook.delete", "webhook", id).await?;
    Ok(webhook)
}

/// A new secret; the one before it signs too for [`ROTATION_OVERLAP`].
pub async fn rotate_secret(
    store: &dyn Store,
    caller: &Caller,
    id: &str,
) -> ApiResult<RotatedSecret> {
    let current = find(store, caller, id, true).await?;
    let until = ids::now() + ROTATION_OVERLAP;
    let mut next = current.clone();
    next.previous_secret = Some(current.secret.clone());
    next.previous_until = Some(until);
    next.secret = sign::new_secret();
    let mut m = Mutation::new(caller);
    m.update(&current, &mut next)?;
    m.commit(store, "webhook.rotateSecret", "webhook", id)
        .await?;
    Ok(RotatedSecret {
        secret: next.secret,
        previous_secret_expires_at: until,
    })
}

/// Disables the endpoint for `reason` (a `410 Gone`, days of failures): the
/// change is the `webhook.disabled` event.
pub async fn disable(store: &dyn Store, current: &Webhook, reason: String) -> ApiResult<()> {
    let caller = Caller::system(current.workspace_id, "webhooks");
    let mut next = current.clone();
    next.enabled = false;
    next.disabled_reason = Some(reason);
    let mut m = Mutation::new(&caller);
    if m.update(current, &mut next)? {
        m.commit(store, "webhook.disable", "webhook", &current.id)
            .await?;
    }
    Ok(())
}
