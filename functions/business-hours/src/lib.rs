//! The business-hours group: `/v3/business-hours`, read only.

use axum::Json;
use axum::extract::State;
use shared::auth::{Caller, Resource};
use shared::domain::business_hours::{self, BusinessHourView};
use shared::http::{AppState, Group, InPath, Params, PathId, Reply};
use shared::page::{ListPage, OffsetQuery};

pub fn group() -> Group {
    Group::new("business-hours")
        .scoped(Resource::BusinessHours)
        .get("/v3/business-hours", list)
        .summary("List business hours")
        .get("/v3/business-hours/{id}", get)
        .summary("Read business hours")
}

async fn list(
    State(s): State<AppState>,
    caller: Caller,
    Params(q): Params<OffsetQuery>,
) -> Reply<ListPage<BusinessHourView>> {
    Ok(Json(
        business_hours::list(s.store.as_ref(), &caller, q.paging()?)
            .await?
            .map(BusinessHourView::from),
    ))
}

async fn get(
    State(s): State<AppState>,
    caller: Caller,
    InPath(id): PathId,
) -> Reply<BusinessHourView> {
    Ok(Json(
        business_hours::get(s.store.as_ref(), &caller, id)
            .await?
            .into(),
    ))
}
