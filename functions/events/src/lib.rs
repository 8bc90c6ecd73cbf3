//! The events group: the workspace's event feed (`GET /v3/events`), which
//! an integrator follows to stay in sync.

use std::sync::LazyLock;

use axum::Json;
use shared::auth::Resource;
use shared::deploy::READ;
use shared::domain::events::{self, EventPage, EventQuery};
use shared::http::{Ctx, Group, Params, Reply};

pub fn group() -> Group {
    Group::new("events")
        .deployed("/v3/events (reads only)", |f| f.actions(&[READ]))
        .scoped(Resource::Events)
        .get("/v3/events", feed)
        .summary("Follow the workspace's events, in the order they happened")
        .describe(FEED.as_str())
        .extension()
}

/// Which scopes decide what the feed answers (docs/api-contract.md, "Events"),
/// which scope reads which events written from `events::READ_BY`.
static FEED: LazyLock<String> = LazyLock::new(|| {
    format!(
        "`events:read` opens the feed; the token's other scopes decide what it shows. \
An event carries its record, so it is shown only to a token that may read that record: \
{}. Each is granted too by the resource's `:write`, by `*:read`, `*:write` and `admin`. \
Events the token may not read are stepped over as events of other types are: a page may \
hold fewer than `limit` with `hasMore: true`, and `nextCursor` goes on past them. A \
`types` filter naming a type the token may not read (`deal.*` without `deals:read`) is \
a 403 naming the scope (`X-Accepted-Scopes` lists what grants it); `*`, the default, is \
every type the token reads.",
        events::readers()
    )
});

async fn feed(cx: Ctx, Params(q): Params<EventQuery>) -> Reply<EventPage> {
    Ok(Json(events::feed(cx.store(), &cx.caller, q).await?))
}
