//! The events group: the workspace's event feed (`GET /v3/events`), which
//! an integrator follows to stay in sync.

use axum::Json;
use axum::extract::State;
use shared::auth::{Caller, Resource};
use shared::domain::events::{self, EventPage, EventQuery};
use shared::http::{AppState, Group, Params, Reply};

pub fn group() -> Group {
    Group::new("events")
        .scoped(Resource::Events)
        .get("/v3/events", feed)
        .summary("Follow the workspace's events, in the order they happened")
        .extension()
}

async fn feed(
    State(s): State<AppState>,
    caller: Caller,
    Params(q): Params<EventQuery>,
) -> Reply<EventPage> {
    Ok(Json(events::feed(s.store.as_ref(), &caller, q).await?))
}
