//! The dashboards group: dashboards and their snapshots.

use axum::Json;
use shared::ApiError;
use shared::auth::Resource;
use shared::deploy::{Queue, READ};
use shared::domain::dashboards::{self, DashboardCreate, DashboardView, Snapshot, SnapshotCreate};
use shared::http::{Body, Created, Ctx, Group, InPath, Params, Reply, created};
use shared::keys::DashboardId;
use shared::page::{ListPage, OffsetQuery};

pub fn group() -> Group {
    Group::new("dashboards")
        .deployed("/v3/dashboards and their snapshots", |f| {
            f.actions(&[
                READ,
                &[
                    "dynamodb:PutItem",
                    "dynamodb:UpdateItem",
                    "dynamodb:ConditionCheckItem",
                ],
            ])
            .sends(Queue::Jobs)
        })
        .scoped(Resource::Dashboards)
        .post("/v3/dashboards", create)
        .reads_back("/v3/dashboards/{id}")
        .summary("Create a dashboard")
        .get("/v3/dashboards/{dashboardId}", get)
        .summary("Read a dashboard")
        .post("/v3/dashboards/{dashboardId}/snapshots", snapshot)
        .reads_back("/v3/dashboards/{dashboardId}/snapshots/{id}")
        .summary("Compute a snapshot in the background")
        .get("/v3/dashboards/{dashboardId}/snapshots", snapshots)
        .summary("List a dashboard's snapshots")
        .get("/v3/dashboards/{dashboardId}/snapshots/{id}", get_snapshot)
        .summary("Read a snapshot")
}

async fn create(
    cx: Ctx,
    Body(input): Body<DashboardCreate>,
) -> Result<Created<DashboardView>, ApiError> {
    Ok(created(DashboardView::from(
        dashboards::create(cx.store(), &cx.caller, input).await?,
    )))
}

async fn get(cx: Ctx, InPath(id): InPath<DashboardId>) -> Reply<DashboardView> {
    Ok(Json(
        dashboards::get(cx.store(), &cx.caller, id).await?.into(),
    ))
}

async fn snapshot(
    cx: Ctx,
    InPath(id): InPath<DashboardId>,
    Body(input): Body<SnapshotCreate>,
) -> Result<Created<Snapshot>, ApiError> {
    Ok(created(
        dashboards::snapshot(cx.store(), cx.state.jobs()?, &cx.caller, id, input).await?,
    ))
}

async fn snapshots(
    cx: Ctx,
    InPath(id): InPath<DashboardId>,
    Params(q): Params<OffsetQuery>,
) -> Reply<ListPage<Snapshot>> {
    Ok(Json(
        dashboards::snapshots(cx.store(), &cx.caller, id, q.paging()?).await?,
    ))
}

async fn get_snapshot(
    cx: Ctx,
    InPath(dashboard): InPath<DashboardId>,
    InPath(id): InPath<SnapshotId>,
) -> Reply<Snapshot> {
    Ok(Json(
        dashboards::get_snapshot(cx.store(), &cx.caller, dashboard, &id).await?,
    ))
}

shared::text_path_param!(SnapshotId, "id");
