//! The custom-fields group: `/v3/custom-fields` and `/v1/custom-fields`, read only.

use axum::Json;
use shared::auth::Resource;
use shared::deploy::READ;
use shared::domain::custom_fields::{self, CustomFieldV1, CustomFieldView};
use shared::http::{Ctx, Group, InPath, Params, Reply};
use shared::keys::CustomFieldId;
use shared::page::{CursorPage, CursorQuery, ListPage, OffsetQuery};

pub fn group() -> Group {
    Group::new("custom-fields")
        .deployed(
            "/v3/custom-fields and /v1/custom-fields (reads only)",
            |f| f.actions(&[READ]),
        )
        .scoped(Resource::CustomFields)
        .get("/v3/custom-fields", list)
        .summary("List custom fields")
        .get("/v3/custom-fields/{id}", get)
        .summary("Read a custom field")
        .get("/v1/custom-fields", list_v1)
        .summary("List custom fields (public)")
        .get("/v1/custom-fields/{id}", get_v1)
        .summary("Read a custom field (public)")
}

async fn list(cx: Ctx, Params(q): Params<OffsetQuery>) -> Reply<ListPage<CustomFieldView>> {
    Ok(Json(
        custom_fields::list(cx.store(), &cx.caller, q.paging()?)
            .await?
            .map(CustomFieldView::from),
    ))
}

async fn get(cx: Ctx, InPath(id): InPath<CustomFieldId>) -> Reply<CustomFieldView> {
    Ok(Json(
        custom_fields::get(cx.store(), &cx.caller, id).await?.into(),
    ))
}

async fn list_v1(cx: Ctx, Params(q): Params<CursorQuery>) -> Reply<CursorPage<CustomFieldV1>> {
    let page = custom_fields::list_v1(cx.store(), &cx.caller, q.paging()?).await?;
    Ok(Json(CursorPage {
        data: page.data.into_iter().map(CustomFieldV1::from).collect(),
        next_cursor: page.next_cursor,
    }))
}

async fn get_v1(cx: Ctx, InPath(id): InPath<CustomFieldId>) -> Reply<CustomFieldV1> {
    Ok(Json(
        custom_fields::get_public(cx.store(), &cx.caller, id)
            .await?
            .into(),
    ))
}
