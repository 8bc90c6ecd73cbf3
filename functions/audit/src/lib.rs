//! The audit group: the caller's audit entries, and (admin) every workspace's.

use axum::Json;
use shared::auth::{Need, Resource};
use shared::deploy::{BATCH, READ};
use shared::domain::audit::{self, AuditEntry};
use shared::http::{Ctx, Group, InPath, Params, PathKey, Reply};
use shared::page::{ListPage, OffsetQuery};

pub fn group() -> Group {
    Group::new("audit")
        .deployed("/v3/audit (reads only)", |f| {
            f.actions(&[READ, BATCH]).index()
        })
        .scoped(Resource::Audit)
        .get("/v3/audit", list)
        .summary("List the workspace's audit entries, newest first")
        .get("/v3/audit/admin", list_all)
        .summary("List every workspace's audit entries (admin)")
        .needs(Need::ADMIN)
        .get("/v3/audit/{id}", get)
        .summary("Read an audit entry")
}

async fn list(cx: Ctx, Params(q): Params<OffsetQuery>) -> Reply<ListPage<AuditEntry>> {
    Ok(Json(
        audit::list(cx.store(), &cx.caller, q.paging()?).await?,
    ))
}

async fn list_all(cx: Ctx, Params(q): Params<OffsetQuery>) -> Reply<ListPage<AuditEntry>> {
    Ok(Json(
        audit::list_all(cx.store(), &cx.caller, q.paging()?).await?,
    ))
}

async fn get(cx: Ctx, InPath(id): PathKey) -> Reply<AuditEntry> {
    Ok(Json(audit::get(cx.store(), &cx.caller, &id).await?))
}
