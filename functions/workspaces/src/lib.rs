//! The workspaces group: the caller's workspace, (admin) new workspaces and
//! their environment, welcome messages, checkout links and churn-reason
//! suggestions.

mod billing;

use axum::Json;
use axum::extract::State;
use shared::auth::{Need, Resource};
use shared::deploy::{BATCH, READ, WRITE};
use shared::domain::churn::{self, AddReasons, ChurnReasonView, ReasonParam};
use shared::domain::welcome::{self, SendWelcome, WelcomeMessage};
use shared::domain::workspaces::{
    self, CreatedWorkspace, Environment, WorkspaceCreate, WorkspaceView,
};
use shared::http::{
    AppState, Body, Created, Ctx, Group, InPath, MaybeBody, Params, PathId, PathKey, ReadBackRoute,
    Reply, created,
};
use shared::page::ListPage;
use shared::ratelimit::Limits;

pub fn group() -> Group {
    Group::new("workspaces")
        .deployed(
            "/v3/workspaces (info, welcome messages, checkout links, churn reasons, operators)",
            |f| f.actions(&[READ, BATCH, WRITE]).checkout(),
        )
        .scoped(Resource::Workspaces)
        .get("/v3/workspaces/info", info)
        .summary("Read the caller's workspace")
        .post("/v3/workspaces", create)
        .summary("Create a workspace and its first token (admin)")
        .needs(Need::ADMIN)
        .extension()
        .post("/v3/workspaces/promote-testing/{id}", promote_testing)
        .summary("Move a workspace to testing (admin)")
        .needs(Need::ADMIN)
        .post("/v3/workspaces/demote-testing/{id}", demote_testing)
        .summary("Move a workspace back to production (admin)")
        .needs(Need::ADMIN)
        .get("/v3/workspaces/{id}/rate-limits", rate_limits)
        .summary("A workspace's rate limits, per token and for the workspace (admin)")
        .extension()
        .needs(Need::ADMIN)
        .put("/v3/workspaces/{id}/rate-limits", set_rate_limits)
        .summary("Set a workspace's rate limits (admin)")
        .extension()
        .needs(Need::ADMIN)
        .post("/v3/workspaces/send-welcome-message", send_welcome)
        // A duplicate writes nothing, so one read back was sent.
        .read_back(ReadBackRoute {
            path: "/v3/workspaces/welcome-messages/{id}",
            status: 201,
            header: Some(("x-welcome-duplicate", "false")),
        })
        .summary("Send a welcome message (deduplicated for 10 minutes)")
        .get("/v3/workspaces/welcome-messages/{id}", get_welcome)
        .summary("Read a welcome message")
        .extension()
        .post("/v3/workspaces/checkout-link", billing::create_link)
        .reads_back("/v3/workspaces/checkout-link/{id}")
        .summary("Create a checkout link")
        .get("/v3/workspaces/checkout-link/{code}", billing::get_link)
        .summary("Read a checkout link")
        .delete(
            "/v3/workspaces/checkout-link/{code}",
            billing::deactivate_link,
        )
        .summary("Deactivate a checkout link")
        .post(
            "/v3/workspaces/checkout-link/{code}/complete",
            billing::complete_link,
        )
        .summary("Complete a checkout link into an order (admin)")
        .needs(Need::ADMIN)
        .extension()
        .get("/v3/workspaces/churn-reasons/suggestions", churn_reasons)
        .summary("List churn reasons")
        .post(
            "/v3/workspaces/churn-reasons/suggestions",
            add_churn_reasons,
        )
        .summary("Add churn reasons (admin)")
        .needs(Need::ADMIN)
        .delete(
            "/v3/workspaces/churn-reasons/suggestions",
            remove_churn_reason,
        )
        .summary("Remove a churn reason (admin)")
        .needs(Need::ADMIN)
}

async fn info(cx: Ctx) -> Reply<WorkspaceView> {
    Ok(Json(workspaces::info(cx.store(), &cx.caller).await?.into()))
}

async fn create(
    cx: Ctx,
    Body(input): Body<WorkspaceCreate>,
) -> Result<Created<CreatedWorkspace>, shared::ApiError> {
    Ok(created(
        workspaces::create(cx.store(), &cx.caller, input).await?,
    ))
}

/// Operators only: the workspace moves to the testing environment (201).
async fn promote_testing(
    cx: Ctx,
    InPath(id): PathId,
) -> Result<Created<WorkspaceView>, shared::ApiError> {
    let workspace = workspaces::set_environment(
        cx.store(),
        &cx.caller,
        shared::ids::WorkspaceId(id),
        Environment::Testing,
    )
    .await?;
    Ok(created(WorkspaceView::from(workspace)))
}

/// Operators only: the workspace leaves the testing environment (201).
async fn demote_testing(
    cx: Ctx,
    InPath(id): PathId,
) -> Result<Created<WorkspaceView>, shared::ApiError> {
    let workspace = workspaces::set_environment(
        cx.store(),
        &cx.caller,
        shared::ids::WorkspaceId(id),
        Environment::Production,
    )
    .await?;
    Ok(created(WorkspaceView::from(workspace)))
}

/// 201 with the queued message; the same request again within the window
/// answers the first message with `x-welcome-duplicate: true`.
async fn send_welcome(
    cx: Ctx,
    Body(input): Body<SendWelcome>,
) -> Result<Created<WelcomeMessage>, shared::ApiError> {
    let sending = welcome::send(cx.store(), &cx.caller, input).await?;
    let duplicate = if sending.duplicate { "true" } else { "false" };
    Ok(created(sending.message).with_header("x-welcome-duplicate", duplicate))
}

async fn get_welcome(cx: Ctx, InPath(id): PathKey) -> Reply<WelcomeMessage> {
    Ok(Json(welcome::get(cx.store(), &cx.caller, &id).await?))
}

async fn churn_reasons(cx: Ctx) -> Reply<ListPage<ChurnReasonView>> {
    Ok(Json(churn::list(cx.store()).await?))
}

/// Operators only: adds reasons (existing ones are kept as they are); 201 with the list.
async fn add_churn_reasons(
    cx: Ctx,
    Body(input): Body<AddReasons>,
) -> Result<Created<ListPage<ChurnReasonView>>, shared::ApiError> {
    Ok(created(churn::add(cx.store(), &cx.caller, input).await?))
}

/// Operators only: removes the reason named by `?reason=` or `{ "reason" }`.
async fn remove_churn_reason(
    cx: Ctx,
    Params(query): Params<ReasonParam>,
    MaybeBody(body): MaybeBody<ReasonParam>,
) -> Reply<ChurnReasonView> {
    let reason = query.reason.or(body.and_then(|b| b.reason));
    Ok(Json(churn::remove(cx.store(), &cx.caller, reason).await?))
}

async fn rate_limits(State(s): State<AppState>, InPath(id): PathId) -> Reply<Limits> {
    let ws = shared::ids::WorkspaceId(id);
    Ok(Json(
        workspaces::rate_limits(s.store.as_ref(), &s.limiter, ws).await?,
    ))
}

async fn set_rate_limits(
    State(s): State<AppState>,
    InPath(id): PathId,
    Body(limits): Body<Limits>,
) -> Reply<Limits> {
    let ws = shared::ids::WorkspaceId(id);
    Ok(Json(
        workspaces::set_rate_limits(s.store.as_ref(), ws, limits).await?,
    ))
}
