//! The products group: the spec's `PATCH /v3/products/{id}`, and the catalog
//! (`GET /v3/products`, `GET /v3/products/{id}`) as extensions.

use axum::Json;
use shared::auth::Resource;
use shared::deploy::{READ, WRITE};
use shared::domain::batch::{self, BatchAnswer, BatchRequest, ProductOp};
use shared::domain::products::{self, ProductPatch, ProductView};
use shared::http::{Body, Ctx, Group, InPath, Meter, MultiStatus, Params, Reply};
use shared::keys::ProductId;
use shared::page::{ListPage, OffsetQuery};

pub fn group() -> Group {
    Group::new("products")
        .deployed("/v3/products", |f| f.actions(&[READ, WRITE]))
        .scoped(Resource::Products)
        .get("/v3/products", list)
        .summary("List products")
        .extension()
        .post("/v3/products/batch", batch)
        .summary("Update up to 100 products, each answered on its own")
        .extension()
        .get("/v3/products/{id}", get)
        .summary("Read a product")
        .extension()
        .patch("/v3/products/{id}", update)
        .summary("Update a product")
}

async fn list(cx: Ctx, Params(q): Params<OffsetQuery>) -> Reply<ListPage<ProductView>> {
    Ok(Json(
        products::list(cx.store(), &cx.caller, q.paging()?)
            .await?
            .map(ProductView::from),
    ))
}

async fn get(cx: Ctx, InPath(id): InPath<ProductId>) -> Reply<ProductView> {
    Ok(Json(
        products::get(cx.store(), &cx.caller, id).await?.into(),
    ))
}

async fn update(
    cx: Ctx,
    InPath(id): InPath<ProductId>,
    Body(patch): Body<ProductPatch>,
) -> Reply<ProductView> {
    Ok(Json(
        products::update(cx.store(), &cx.caller, id, patch)
            .await?
            .into(),
    ))
}

/// 200 when every operation succeeded, 207 when some did not.
async fn batch(
    cx: Ctx,
    meter: Meter,
    Body(request): Body<BatchRequest<ProductOp, ProductPatch>>,
) -> Result<MultiStatus<BatchAnswer<ProductView>>, shared::ApiError> {
    meter.charge_batch(request.operations.len()).await?;
    let answer = batch::products(cx.store(), &cx.caller, request).await;
    Ok(MultiStatus::of(answer, BatchAnswer::some_failed))
}
