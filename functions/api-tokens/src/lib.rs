//! The API-token group: create (the secret is shown once), list, revoke,
//! and the caller's own token.

use axum::Json;
use shared::auth::{Need, Resource};
use shared::deploy::{READ, WRITE};
use shared::domain::tokens::{self, IssuedToken, TokenCreate, TokenView};
use shared::http::{Body, Created, Ctx, Group, InPath, Params, PathKey, Reply, created};
use shared::page::{ListPage, OffsetQuery};

pub fn group() -> Group {
    Group::new("api-tokens")
        .deployed("/v3/api-tokens", |f| f.actions(&[READ, WRITE]))
        .scoped(Resource::ApiTokens)
        .post("/v3/api-tokens", create)
        .summary("Create an API token (the secret is shown once)")
        .get("/v3/api-tokens", list)
        .summary("List the workspace's API tokens")
        .get("/v3/api-tokens/self", current)
        .summary("The caller's own token: name, scopes, expiry (never the secret)")
        .extension()
        .needs(Need::Token)
        .delete("/v3/api-tokens/{id}", revoke)
        .summary("Revoke an API token")
}

async fn create(
    cx: Ctx,
    Body(input): Body<TokenCreate>,
) -> Result<Created<IssuedToken>, shared::ApiError> {
    let issued = tokens::create(cx.store(), &cx.caller, input).await?;
    Ok(created(issued.view()))
}

async fn list(cx: Ctx, Params(q): Params<OffsetQuery>) -> Reply<ListPage<TokenView>> {
    Ok(Json(
        tokens::list(cx.store(), &cx.caller, q.paging()?).await?,
    ))
}

async fn revoke(cx: Ctx, InPath(id): PathKey) -> Reply<TokenView> {
    Ok(Json(tokens::revoke(cx.store(), &cx.caller, &id).await?))
}

async fn current(cx: Ctx) -> Reply<TokenView> {
    Ok(Json(tokens::current(cx.store(), &cx.caller).await?))
}
