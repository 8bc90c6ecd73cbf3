//! The deals group: `/v3/deals`, with filters in flat and nested forms.

use axum::Json;
use shared::ApiError;
use shared::auth::Resource;
use shared::deploy::{BATCH, READ, WRITE};
use shared::domain::batch::{self, BatchAnswer, BatchRequest, DealData, DealOp};
use shared::domain::deals::{self, DealCreate, DealPatch, DealQuery, DealView};
use shared::domain::events::{EventPage, HistoryQuery};
use shared::http::{
    Body, Created, Ctx, Group, Grouped, InPath, Meter, MultiStatus, Params, PathKey, Reply, created,
};
use shared::keys::DealId;
use shared::page::ListPage;

pub fn group() -> Group {
    Group::new("deals")
        .deployed("/v3/deals", |f| f.actions(&[READ, BATCH, WRITE]).index())
        .scoped(Resource::Deals)
        .get("/v3/deals", list)
        .summary("List deals (flat, nested or JSON filters)")
        .post("/v3/deals", create)
        .reads_back("/v3/deals/{id}")
        .summary("Create a deal")
        .post("/v3/deals/batch", batch)
        .summary("Create or update up to 100 deals, each answered on its own")
        .extension()
        .get("/v3/deals/{id}", get)
        .summary("Read a deal")
        .get("/v3/deals/{id}/history", history)
        .summary("Read a deal's events, oldest first")
        .describe("Each event carries the deal as its GET shows it: `deals:read` (or `deals:write`, `*:read`, `*:write`, `admin`) decides, as for the deal's GET; `events:read` alone reads no history.")
        .extension()
        .patch("/v3/deals/{id}", update)
        .summary("Update a deal")
}

async fn list(cx: Ctx, Grouped(q): Grouped<DealQuery>) -> Reply<ListPage<DealView>> {
    Ok(Json(
        deals::list(cx.store(), &cx.caller, q)
            .await?
            .map(DealView::from),
    ))
}

async fn create(cx: Ctx, Body(input): Body<DealCreate>) -> Result<Created<DealView>, ApiError> {
    Ok(created(DealView::from(
        deals::create(cx.store(), &cx.caller, input).await?,
    )))
}

async fn history(
    cx: Ctx,
    InPath(id): InPath<DealId>,
    Params(q): Params<HistoryQuery>,
) -> Reply<EventPage> {
    Ok(Json(deals::history(cx.store(), &cx.caller, id, q).await?))
}

async fn get(cx: Ctx, InPath(id): InPath<DealId>) -> Reply<DealView> {
    Ok(Json(deals::get(cx.store(), &cx.caller, id).await?.into()))
}

/// The spec types this path id as a string: one that is not a deal id is not found.
async fn update(cx: Ctx, InPath(id): PathKey, Body(input): Body<DealPatch>) -> Reply<DealView> {
    let id = id
        .parse()
        .map(DealId)
        .map_err(|_| ApiError::not_found("deal"))?;
    Ok(Json(
        deals::update(cx.store(), &cx.caller, id, input)
            .await?
            .into(),
    ))
}

/// 200 when every operation succeeded, 207 when some did not.
async fn batch(
    cx: Ctx,
    meter: Meter,
    Body(request): Body<BatchRequest<DealOp, DealData>>,
) -> Result<MultiStatus<BatchAnswer<DealView>>, ApiError> {
    meter.charge_batch(request.operations.len()).await?;
    let answer = batch::deals(cx.store(), &cx.caller, request).await;
    Ok(MultiStatus::of(answer, BatchAnswer::some_failed))
}
