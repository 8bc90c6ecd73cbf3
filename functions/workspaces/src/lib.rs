//! The workspaces group: the caller's workspace, and (admin) new workspaces.

use axum::Json;
use axum::extract::State;
use axum::response::Response;
use shared::auth::Caller;
use shared::domain::workspaces::{self, CreateWorkspace, Environment, WorkspaceView};
use shared::http::{AppState, Body, Group, PathId, Reply, created};

pub fn group() -> Group {
    Group::new("workspaces")
        .get("/v3/workspaces/info", info)
        .post("/v3/workspaces", create)
        .post("/v3/workspaces/promote-testing/{id}", promote_testing)
        .post("/v3/workspaces/demote-testing/{id}", demote_testing)
}

async fn info(State(s): State<AppState>, caller: Caller) -> Reply<WorkspaceView> {
    Ok(Json(
        workspaces::info(s.store.as_ref(), &caller).await?.into(),
    ))
}

async fn create(
    State(s): State<AppState>,
    caller: Caller,
    Body(input): Body<CreateWorkspace>,
) -> Result<Response, shared::ApiError> {
    Ok(created(
        workspaces::create(s.store.as_ref(), &caller, input).await?,
    ))
}

/// Operators only: the workspace moves to the testing environment (201).
async fn promote_testing(
    State(s): State<AppState>,
    caller: Caller,
    PathId(id): PathId,
) -> Result<Response, shared::ApiError> {
    let workspace = workspaces::set_environment(
        s.store.as_ref(),
        &caller,
        shared::ids::WorkspaceId(id),
        Environment::Testing,
    )
    .await?;
    Ok(created(WorkspaceView::from(workspace)))
}

/// Operators only: the workspace leaves the testing environment (201).
async fn demote_testing(
    State(s): State<AppState>,
    caller: Caller,
    PathId(id): PathId,
) -> Result<Response, shared::ApiError> {
    let workspace = workspaces::set_environment(
        s.store.as_ref(),
        &caller,
        shared::ids::WorkspaceId(id),
        Environment::Production,
    )
    .await?;
    Ok(created(WorkspaceView::from(workspace)))
}
