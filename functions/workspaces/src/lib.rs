//! The workspaces group: the caller's workspace, and (admin) new workspaces.

use axum::Json;
use axum::extract::State;
use axum::response::Response;
use shared::auth::Caller;
use shared::domain::workspaces::{self, CreateWorkspace, WorkspaceView};
use shared::http::{AppState, Body, Group, Reply, created};

pub fn group() -> Group {
    Group::new("workspaces")
        .get("/v3/workspaces/info", info)
        .post("/v3/workspaces", create)
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
