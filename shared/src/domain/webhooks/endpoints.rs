//! `/v3/webhooks`: create (the secret shown once), read, list, change,
//! delete, and rotate the secret.
//!
//! An endpoint delivers with its owner's reads ([`Owner`]): the token that
//! registers it must read every type it names (403 naming the scope), and
//! a change of where or what it delivers (`url`, `types`, enabling it) is a
//! new registration by the patching token, held to the same rule.

use super::record::{
    CreatedWebhook, ID_PREFIX, MAX_PER_WORKSPACE, Owner, ROTATION_OVERLAP, RotatedSecret, Webhook,
    WebhookCreate, WebhookPatch, WebhookView,
};
use crate::auth::{self, Caller, Identity};
use crate::domain::events::TypeFilter;
use crate::error::{ApiError, ApiResult};
use crate::ids;
use crate::keys;
use crate::outbound::{self, sign, target};
use crate::page::{ListPage, read_up_to};
use crate::record::{self, CommitError, Mutation, Stamps, from_item};
use crate::store::{Index, Query, SkRange, Store};

/// `url` checked as a delivery address, as each attempt checks it (its host
/// resolved now: [`target::check`]); 400 on `url` otherwise.
async fn checked_url(url: &str, settings: &outbound::Settings) -> ApiResult<String> {
    target::check(url.trim(), settings.allow_private)
        .await
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

/// `identity` as the owner of an endpoint delivering `types`: 403 naming
/// the first read scope they need that it lacks (`*` needs none: it is
/// whatever the owner reads).
fn owner_of(identity: &Identity, types: &[String]) -> ApiResult<Owner> {
    if let Some(needed) = TypeFilter::of(types.to_vec()).unreadable(&identity.scopes) {
        return Err(auth::missing(needed));
    }
    Ok(Owner::of(identity))
}

pub async fn create(
    store: &dyn Store,
    caller: &Caller,
    settings: &outbound::Settings,
    input: WebhookCreate,
) -> ApiResult<CreatedWebhook> {
    let url = checked_url(&input.url, settings).await?;
    let types = checked_types(input.types.unwrap_or_else(|| vec!["*".into()]))?;
    let owner = owner_of(caller.identity().await?, &types)?;
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
        owner: Some(owner),
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
    // Where or what it delivers, or that it delivers again: a new
    // registration, by the patching token and with its reads.
    let registers = patch.url.is_some()
        || patch.types.is_some()
        || (patch.enabled == Some(true) && !current.enabled);
    if let Some(url) = patch.url {
        next.url = checked_url(&url, settings).await?;
    }
    if let Some(types) = patch.types {
        next.types = checked_types(types)?;
    }
    if registers {
        next.owner = Some(owner_of(caller.identity().await?, &next.types)?);
    }
    patch.description.apply(&mut next.description);
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

/// Disables the endpoint for `reason` (a `410 Gone`, days of failures, its
/// owner's token revoked or expired): the change is the `webhook.disabled`
/// event. An endpoint changed meanwhile (another run disabling it too) is
/// left as the other change made it.
pub async fn disable(store: &dyn Store, current: &Webhook, reason: String) -> ApiResult<()> {
    let caller = Caller::system(current.workspace_id, "webhooks");
    let mut next = current.clone();
    next.enabled = false;
    next.disabled_reason = Some(reason);
    let mut m = Mutation::new(&caller);
    if m.update(current, &mut next)? {
        match m
            .commit(store, "webhook.disable", "webhook", &current.id)
            .await
        {
            Ok(()) => {}
            Err(CommitError::Api(e)) if record::changed_meanwhile(&e) => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}

/// The endpoints of `ws` that `token_id` owns and that still deliver,
/// disabled within mutation `m` (a revocation's, so that the token and what
/// it reads through its endpoints stop together): at most
/// [`MAX_PER_WORKSPACE`], two items each.
pub async fn disable_owned_by(
    store: &dyn Store,
    m: &mut Mutation<'_>,
    ws: ids::WorkspaceId,
    token_id: &str,
) -> ApiResult<()> {
    for current in of_workspace(store, ws).await? {
        let owned = current
            .owner
            .as_ref()
            .is_some_and(|owner| owner.token_id == token_id);
        if owned && current.enabled {
            let mut next = current.clone();
            next.enabled = false;
            next.disabled_reason = Some(current.owner_gone());
            m.update(&current, &mut next)?;
        }
    }
    Ok(())
}

/// Why `webhook` may deliver nothing more: no owner, an expired one, or
/// one whose token is gone (one GetItem of the token's record). `None`:
/// it delivers what its owner reads.
pub async fn lapsed(store: &dyn Store, webhook: &Webhook) -> ApiResult<Option<String>> {
    if let Some(reason) = webhook.lapsed(ids::now()) {
        return Ok(Some(reason));
    }
    let Some(owner) = &webhook.owner else {
        return Ok(None);
    };
    let token = store
        .get(&keys::token(webhook.workspace_id, &owner.token_id), true)
        .await?;
    Ok(token.is_none().then(|| webhook.owner_gone()))
}
