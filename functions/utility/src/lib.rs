//! The utility group: the server's time, a diagnostic of the store, orders,
//! redirect sessions and page refreshes.

use axum::Json;
use shared::auth::{Caller, Need, Resource};
use shared::deploy::{READ, WRITE};
use shared::domain::billing::{self, OrderView};
use shared::domain::redirects::{self, RedirectSessionCreate, RedirectSessionView};
use shared::domain::utility::{self, StoreCheck, Time, UtcTime};
use shared::domain::workspaces::{self, RefreshPage, RefreshRequested};
use shared::http::{Body, Created, Ctx, Group, InPath, MaybeBody, Params, Reply, created};
use shared::page::{ListPage, OffsetQuery};

pub fn group() -> Group {
    Group::new("utility")
        .deployed(
            "/v3/time, /v3/test-store, /v3/orders, /v3/redirect-session, /v3/refresh-page",
            |f| f.actions(&[READ, WRITE]),
        )
        .scoped(Resource::Workspaces)
        .get("/v3/time", time)
        .summary("The server's local time")
        .needs(Need::Token)
        .get("/v3/time/utc", utc)
        .summary("The server's UTC time")
        .needs(Need::Token)
        .get("/v3/test-store", test_store)
        .summary("Check the store")
        .needs(Need::Token)
        .get("/v3/orders", orders)
        .summary("List orders (completed checkout links), newest first")
        .post("/v3/redirect-session", create_redirect)
        .summary("Create a redirect session")
        .get("/v3/redirect-session/{key}", take_redirect)
        .summary("Take a redirect session (read once)")
        .post("/v3/refresh-page", refresh_page)
        .summary("Ask the workspace's open clients to reload")
}

async fn time(_caller: Caller) -> Json<Time> {
    Json(utility::time())
}

async fn utc(_caller: Caller) -> Json<UtcTime> {
    Json(utility::utc())
}

async fn test_store(cx: Ctx) -> Reply<StoreCheck> {
    Ok(Json(utility::test_store(cx.store(), &cx.caller).await?))
}

/// The workspace's orders (completed checkout links), newest first.
async fn orders(cx: Ctx, Params(q): Params<OffsetQuery>) -> Reply<ListPage<OrderView>> {
    Ok(Json(
        billing::list(cx.store(), &cx.caller, q.paging()?)
            .await?
            .map(OrderView::from),
    ))
}

async fn create_redirect(
    cx: Ctx,
    Body(input): Body<RedirectSessionCreate>,
) -> Result<Created<RedirectSessionView>, shared::ApiError> {
    let session = redirects::create(cx.store(), &cx.caller, input).await?;
    Ok(created(RedirectSessionView::from(session)))
}

/// Answers the session once; then (and after its expiry) it is a 404.
async fn take_redirect(cx: Ctx, InPath(key): InPath<RedirectKey>) -> Reply<RedirectSessionView> {
    Ok(Json(
        redirects::take(cx.store(), &cx.caller, &key).await?.into(),
    ))
}

/// Asks every open client of the workspace to reload (201); an optional body
/// `{ "reason": "..." }` is accepted and not kept.
async fn refresh_page(
    cx: Ctx,
    MaybeBody(_body): MaybeBody<RefreshPage>,
) -> Result<Created<RefreshRequested>, shared::ApiError> {
    let refreshed: RefreshRequested = workspaces::request_refresh(cx.store(), &cx.caller).await?;
    Ok(created(refreshed))
}

shared::text_path_param!(RedirectKey, "key");
