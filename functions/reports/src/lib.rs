//! The reports group: session reports (`/v3/reports/sessions`), and the
//! extension through which the messaging side brings sessions in.

use axum::Json;
use shared::auth::Resource;
use shared::deploy::{BATCH, READ, WRITE};
use shared::domain::sessions::{self, Session, SessionInput, SessionList, SessionQuery};
use shared::http::{Body, Ctx, Group, Grouped, InPath, PathKey, Reply, Saved};

pub fn group() -> Group {
    Group::new("reports")
        .deployed(
            "/v3/reports/sessions (the report, and sessions coming in)",
            |f| f.actions(&[READ, BATCH, WRITE]),
        )
        .scoped(Resource::Reports)
        .get("/v3/reports/sessions", list)
        .summary("Report on sessions (every filter, with a summary)")
        .get("/v3/reports/sessions/{id}", get)
        .summary("Read a session")
        .put("/v3/reports/sessions/{id}", put)
        .summary("Record or replace a session")
        .extension()
}

async fn list(cx: Ctx, Grouped(q): Grouped<SessionQuery>) -> Reply<SessionList> {
    Ok(Json(sessions::list(cx.store(), &cx.caller, q).await?))
}

async fn get(cx: Ctx, InPath(id): PathKey) -> Reply<Session> {
    Ok(Json(sessions::get(cx.store(), &cx.caller, &id).await?))
}

/// Creates (201) or replaces (200) one session; the same body again is 200
/// and changes nothing.
async fn put(
    cx: Ctx,
    InPath(id): PathKey,
    Body(input): Body<SessionInput>,
) -> Result<Saved<Session>, shared::ApiError> {
    let (session, created) = sessions::put(cx.store(), &cx.caller, &id, input).await?;
    Ok(Saved {
        body: session,
        created,
    })
}
