//! The business-hours group: `/v3/business-hours`, read only.

use axum::Json;
use shared::auth::Resource;
use shared::deploy::READ;
use shared::domain::business_hours::{self, BusinessHourView};
use shared::http::{Ctx, Group, InPath, Params, Reply};
use shared::keys::BusinessHourId;
use shared::page::{ListPage, OffsetQuery};

pub fn group() -> Group {
    Group::new("business-hours")
        .deployed("/v3/business-hours (reads only)", |f| f.actions(&[READ]))
        .scoped(Resource::BusinessHours)
        .get("/v3/business-hours", list)
        .summary("List business hours")
        .get("/v3/business-hours/{id}", get)
        .summary("Read business hours")
}

async fn list(cx: Ctx, Params(q): Params<OffsetQuery>) -> Reply<ListPage<BusinessHourView>> {
    Ok(Json(
        business_hours::list(cx.store(), &cx.caller, q.paging()?)
            .await?
            .map(BusinessHourView::from),
    ))
}

async fn get(cx: Ctx, InPath(id): InPath<BusinessHourId>) -> Reply<BusinessHourView> {
    Ok(Json(
        business_hours::get(cx.store(), &cx.caller, id)
            .await?
            .into(),
    ))
}
