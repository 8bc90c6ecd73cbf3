//! The tags group: `/v3/tags` and `/v1/tags`, one stored tag in two shapes.

use axum::Json;
use shared::auth::Resource;
use shared::deploy::{READ, WRITE};
use shared::domain::batch::{self, BatchAnswer, BatchRequest, TagData, TagOp};
use shared::domain::tags::{self, TagCreate, TagCreateV1, TagPatch, TagPatchV1, TagV1, TagV3};
use shared::http::{
    Body, Created, Ctx, Group, InPath, Linked, Meter, MultiStatus, Params, Reply, created,
    next_link,
};
use shared::keys::TagId;
use shared::page::{CursorQuery, ListPage, OffsetQuery};

pub fn group() -> Group {
    Group::new("tags")
        .deployed("/v3/tags and /v1/tags", |f| f.actions(&[READ, WRITE]))
        .scoped(Resource::Tags)
        .get("/v3/tags", list)
        .summary("List tags")
        .post("/v3/tags", create)
        .reads_back("/v3/tags/{id}")
        .summary("Create a tag")
        .post("/v3/tags/batch", batch)
        .summary("Create, update, upsert or delete up to 100 tags, each answered on its own")
        .extension()
        .get("/v3/tags/{id}", get)
        .summary("Read a tag")
        .patch("/v3/tags/{id}", update)
        .summary("Update a tag")
        .delete("/v3/tags/{id}", delete)
        .summary("Delete a tag")
        .get("/v1/tags", list_v1)
        .summary("List tags (an array; next page in Link)")
        .post("/v1/tags", create_v1)
        .reads_back("/v1/tags/{id}")
        .summary("Create a tag (public)")
        .get("/v1/tags/{id}", get_v1)
        .summary("Read a tag (public)")
        .patch("/v1/tags/{id}", update_v1)
        .summary("Update a tag (public)")
        .delete("/v1/tags/{id}", delete_v1)
        .summary("Delete a tag (public)")
}

async fn list(cx: Ctx, Params(q): Params<OffsetQuery>) -> Reply<ListPage<TagV3>> {
    Ok(Json(
        tags::list(cx.store(), &cx.caller, q.paging()?)
            .await?
            .map(TagV3::from),
    ))
}

async fn create(cx: Ctx, Body(input): Body<TagCreate>) -> Result<Created<TagV3>, shared::ApiError> {
    let tag = tags::create(cx.store(), &cx.caller, input).await?;
    Ok(created(TagV3::from(tag)))
}

async fn get(cx: Ctx, InPath(id): InPath<TagId>) -> Reply<TagV3> {
    Ok(Json(tags::get(cx.store(), &cx.caller, id).await?.into()))
}

async fn update(cx: Ctx, InPath(id): InPath<TagId>, Body(patch): Body<TagPatch>) -> Reply<TagV3> {
    Ok(Json(
        tags::update(cx.store(), &cx.caller, id, patch)
            .await?
            .into(),
    ))
}

async fn delete(cx: Ctx, InPath(id): InPath<TagId>) -> Reply<TagV3> {
    Ok(Json(tags::delete(cx.store(), &cx.caller, id).await?.into()))
}

/// `GET /v1/tags`: a JSON array, as the spec says. The next page, when there
/// is one, is announced in `Link: </v1/tags?limit=..&cursor=..>; rel="next"`.
async fn list_v1(
    cx: Ctx,
    Params(q): Params<CursorQuery>,
) -> Result<Linked<TagV1>, shared::ApiError> {
    let paging = q.paging()?;
    let limit = paging.limit;
    let page = tags::list_after(cx.store(), &cx.caller, paging).await?;
    let data: Vec<TagV1> = page.data.into_iter().map(TagV1::from).collect();
    Ok(next_link("/v1/tags", limit, &page.next_cursor, data))
}

async fn create_v1(
    cx: Ctx,
    Body(input): Body<TagCreateV1>,
) -> Result<Created<TagV1>, shared::ApiError> {
    let tag = tags::create(cx.store(), &cx.caller, input.into()).await?;
    Ok(created(TagV1::from(tag)))
}

async fn get_v1(cx: Ctx, InPath(id): InPath<TagId>) -> Reply<TagV1> {
    Ok(Json(tags::get(cx.store(), &cx.caller, id).await?.into()))
}

async fn update_v1(
    cx: Ctx,
    InPath(id): InPath<TagId>,
    Body(patch): Body<TagPatchV1>,
) -> Reply<TagV1> {
    Ok(Json(
        tags::update(cx.store(), &cx.caller, id, patch.into())
            .await?
            .into(),
    ))
}

async fn delete_v1(cx: Ctx, InPath(id): InPath<TagId>) -> Reply<TagV1> {
    Ok(Json(tags::delete(cx.store(), &cx.caller, id).await?.into()))
}

/// 200 when every operation succeeded, 207 when some did not.
async fn batch(
    cx: Ctx,
    meter: Meter,
    Body(request): Body<BatchRequest<TagOp, TagData>>,
) -> Result<MultiStatus<BatchAnswer<TagV3>>, shared::ApiError> {
    meter.charge_batch(request.operations.len()).await?;
    let answer = batch::tags(cx.store(), &cx.caller, request).await;
    Ok(MultiStatus::of(answer, BatchAnswer::some_failed))
}
