//! The dashboards group: dashboards and their snapshots.

use axum::Json;
use axum::extract::{RawPathParams, State};
use axum::response::Response;
use shared::ApiError;
use shared::auth::Caller;
use shared::domain::dashboards::{self, CreateDashboard, CreateSnapshot, DashboardView, Snapshot};
use shared::http::{AppState, Body, Group, Params, Reply, created, numeric_param, text_param};
use shared::page::{ListPage, OffsetQuery};

pub fn group() -> Group {
    Group::new("dashboards")
        .post("/v3/dashboards", create)
        .get("/v3/dashboards/{dashboardId}", get)
        .post("/v3/dashboards/{dashboardId}/snapshots", snapshot)
        .get("/v3/dashboards/{dashboardId}/snapshots", snapshots)
        .get("/v3/dashboards/{dashboardId}/snapshots/{id}", get_snapshot)
}

async fn create(
    State(s): State<AppState>,
    caller: Caller,
    Body(input): Body<CreateDashboard>,
) -> Result<Response, ApiError> {
    Ok(created(DashboardView::from(
        dashboards::create(s.store.as_ref(), &caller, input).await?,
    )))
}

async fn get(
    State(s): State<AppState>,
    caller: Caller,
    path: RawPathParams,
) -> Reply<DashboardView> {
    let id = numeric_param(&path, "dashboardId")?;
    Ok(Json(
        dashboards::get(s.store.as_ref(), &caller, id).await?.into(),
    ))
}

async fn snapshot(
    State(s): State<AppState>,
    caller: Caller,
    path: RawPathParams,
    Body(input): Body<CreateSnapshot>,
) -> Result<Response, ApiError> {
    let id = numeric_param(&path, "dashboardId")?;
    Ok(created(
        dashboards::snapshot(s.store.as_ref(), s.jobs()?, &caller, id, input).await?,
    ))
}

async fn snapshots(
    State(s): State<AppState>,
    caller: Caller,
    path: RawPathParams,
    Params(q): Params<OffsetQuery>,
) -> Reply<ListPage<Snapshot>> {
    let id = numeric_param(&path, "dashboardId")?;
    Ok(Json(
        dashboards::snapshots(s.store.as_ref(), &caller, id, q.paging()?).await?,
    ))
}

async fn get_snapshot(
    State(s): State<AppState>,
    caller: Caller,
    path: RawPathParams,
) -> Reply<Snapshot> {
    let dashboard = numeric_param(&path, "dashboardId")?;
    let id = text_param(&path, "id")?;
    Ok(Json(
        dashboards::get_snapshot(s.store.as_ref(), &caller, dashboard, &id).await?,
    ))
}
