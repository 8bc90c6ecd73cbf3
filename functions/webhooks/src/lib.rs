//! The webhooks group: endpoints (`/v3/webhooks`), their secrets, and their
//! delivery logs. Deliveries themselves are made by the dispatcher and
//! sender functions (locally, by `crm serve`).

use axum::Json;
use shared::ApiError;
use shared::auth::Resource;
use shared::deploy::{BATCH, Queue, READ, WRITE};
use shared::domain::events;
use shared::domain::webhooks::{
    CreatedWebhook, DeliveryPage, DeliveryQuery, DeliveryView, Replay, ReplayRequest,
    RotatedSecret, WebhookCreate, WebhookPatch, WebhookView, endpoints, log,
};
use shared::http::{Body, Created, Ctx, Group, InPath, Params, PathKey, Reply, created};
use shared::page::ListPage;
use shared::record::Event;

pub fn group() -> Group {
    Group::new("webhooks")
        // 25 s: a ping waits for the endpoint's answer (15 s at most).
        .deployed("/v3/webhooks (endpoints, secrets, delivery logs, replays)", |f| f.actions(&[READ, BATCH, WRITE]).sends(Queue::Deliveries).timeout(25))
        .scoped(Resource::Webhooks)
        .post("/v3/webhooks", create)
        .summary("Register a webhook endpoint (its secret is shown once)")
        .describe(REGISTER)
        .extension()
        .get("/v3/webhooks", list)
        .summary("List the workspace's webhook endpoints")
        .extension()
        .get("/v3/webhooks/{id}", get)
        .summary("Read a webhook endpoint")
        .extension()
        .patch("/v3/webhooks/{id}", update)
        .summary("Change a webhook endpoint (url, types, enabled...)")
        .describe("Changing `url` or `types`, or enabling a disabled endpoint, registers it anew: every type it names must be readable by the patching token (403 naming the scope otherwise; `*` is every type that token reads), which becomes its `owner`. Changing `description` or `importRows`, or disabling it, keeps its owner.")
        .extension()
        .delete("/v3/webhooks/{id}", delete)
        .summary("Delete a webhook endpoint")
        .extension()
        .post("/v3/webhooks/{id}/rotate-secret", rotate)
        .summary("Make a new signing secret; the old one signs for 24 hours more")
        .extension()
        .post("/v3/webhooks/{id}/test", ping)
        .summary("Send a webhook.ping event now and answer how it went")
        .describe("Sent only while the endpoint's owner token stands and reads `webhook` events: 409 once that token was revoked or expired (register the endpoint anew with a `PATCH`).")
        .extension()
        .get("/v3/webhooks/{id}/deliveries", deliveries)
        .summary("List an endpoint's deliveries, newest first, with every attempt")
        .extension()
        .post("/v3/webhooks/{id}/deliveries/{deliveryId}/retry", retry)
        .summary("Send a delivery again now")
        .describe("The attempt sends the event only if the endpoint's owner token still stands and reads its type; otherwise the delivery fails saying why.")
        .extension()
        .post("/v3/webhooks/{id}/replay", replay)
        .summary("Deliver again every matching event since a time")
        .describe("Queues the events since `since` of the endpoint's types that its owner token reads; others are stepped over (`queued` counts what was queued). 409 once the owner token was revoked or expired.")
        .extension()
        .delivers::<Event>(
            events::TYPES,
            "An event, POSTed to every endpoint that asked for its type",
        )
        .noting(events::sent_with)
}

/// Whose reads an endpoint delivers (docs/design.md, "Webhooks").
const REGISTER: &str = "An endpoint delivers with the reads of the token that registers it, \
kept as its `owner`: every type in `types` must be readable by that token (`contact.*` \
needs `contacts:read`, or `contacts:write`, `*:read`, `*:write`, `admin`; the feed's \
description lists each resource's scope), 403 naming the scope otherwise; `*` is every \
type the token reads. Deliveries, replays and the test ping send only those. Revoking \
the token disables its endpoints at once; once it expires, the next delivery sends \
nothing and disables the endpoint. Register it anew (a `PATCH` of `types`, or \
`enabled: true`) with another token to resume, and replay what was missed.";

shared::text_path_param!(
    /// A delivery's id: `dlv_` and a ULID.
    DeliveryId,
    "deliveryId"
);

async fn create(
    cx: Ctx,
    Body(input): Body<WebhookCreate>,
) -> Result<Created<CreatedWebhook>, ApiError> {
    Ok(created(
        endpoints::create(cx.store(), &cx.caller, &cx.state.webhooks, input).await?,
    ))
}

async fn list(cx: Ctx) -> Reply<ListPage<WebhookView>> {
    Ok(Json(endpoints::list(cx.store(), &cx.caller).await?))
}

async fn get(cx: Ctx, InPath(id): PathKey) -> Reply<WebhookView> {
    let webhook = endpoints::find(cx.store(), &cx.caller, &id, false).await?;
    Ok(Json(WebhookView::from(&webhook)))
}

async fn update(
    cx: Ctx,
    InPath(id): PathKey,
    Body(patch): Body<WebhookPatch>,
) -> Reply<WebhookView> {
    let webhook = endpoints::update(cx.store(), &cx.caller, &cx.state.webhooks, &id, patch).await?;
    Ok(Json(WebhookView::from(&webhook)))
}

async fn delete(cx: Ctx, InPath(id): PathKey) -> Reply<WebhookView> {
    let webhook = endpoints::delete(cx.store(), &cx.caller, &id).await?;
    Ok(Json(WebhookView::from(&webhook)))
}

async fn rotate(cx: Ctx, InPath(id): PathKey) -> Reply<RotatedSecret> {
    Ok(Json(
        endpoints::rotate_secret(cx.store(), &cx.caller, &id).await?,
    ))
}

async fn ping(cx: Ctx, InPath(id): PathKey) -> Reply<DeliveryView> {
    Ok(Json(
        log::ping(cx.store(), &cx.caller, &cx.state.webhooks, &id).await?,
    ))
}

async fn deliveries(
    cx: Ctx,
    InPath(id): PathKey,
    Params(q): Params<DeliveryQuery>,
) -> Reply<DeliveryPage> {
    Ok(Json(log::deliveries(cx.store(), &cx.caller, &id, q).await?))
}

async fn retry(
    cx: Ctx,
    InPath(id): PathKey,
    InPath(delivery): InPath<DeliveryId>,
) -> Reply<DeliveryView> {
    let queue = cx.state.deliveries()?;
    Ok(Json(
        log::retry(cx.store(), queue, &cx.caller, &id, &delivery).await?,
    ))
}

async fn replay(cx: Ctx, InPath(id): PathKey, Body(request): Body<ReplayRequest>) -> Reply<Replay> {
    let queue = cx.state.deliveries()?;
    Ok(Json(
        log::replay(cx.store(), queue, &cx.caller, &id, request).await?,
    ))
}
