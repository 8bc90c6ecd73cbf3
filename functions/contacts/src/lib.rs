//! The contacts group: `/v3/contacts` and `/v1/contacts`, one stored contact in
//! two shapes, with phone identity across every path.

use axum::Json;
use shared::ApiError;
use shared::auth::{Need, Resource, Scope};
use shared::deploy::{BATCH, Queue, READ, WRITE};
use shared::domain::batch::{self, BatchAnswer, BatchRequest, ContactOp};
use shared::domain::contacts::{
    self, ContactExport, ContactListItem, ContactPatch, ContactPatchV1, ContactQuery, ContactV1,
    ContactV3, Creation, DuplicateGroup, MergeRequest, MergeStatus, MergeView, V1Query,
    WindowQuery,
};
use shared::domain::events::{EventPage, HistoryQuery};
use shared::domain::imports::{self, ImportJobView, ImportRequest};
use shared::http::{
    Body, Create, Created, Ctx, Group, InPath, Meter, MultiStatus, Params, PathId, PathKey,
    Progress, ReadBackRoute, Reply, created,
};
use shared::page::{CursorPage, CursorQuery, ListPage};

pub fn group() -> Group {
    Group::new("contacts")
        .deployed("/v3/contacts and /v1/contacts", |f| f.actions(&[READ, BATCH, WRITE]).index().sends(Queue::Jobs))
        .scoped(Resource::Contacts)
        .get("/v3/contacts", list)
        .summary("List contacts (search, filters, sort)")
        .post("/v3/contacts", create)
        .reads_back("/v3/contacts/{id}")
        .summary("Create a contact")
        .post("/v3/contacts/batch", batch)
        .summary("Create, update or upsert up to 100 contacts, each answered on its own")
        .extension()
        .get("/v3/contacts/duplicates", duplicates)
        .summary("List groups of contacts that share an e-mail")
        .extension()
        .get("/v3/contacts/all", list_window)
        .summary("List contacts created in a window of at most 2 hours")
        .post("/v3/contacts/find-or-create", find_or_create)
        // Only a request that created the contact writes, so one read back created it.
        .read_back(ReadBackRoute {
            path: "/v3/contacts/{id}",
            status: 201,
            header: Some(("x-contact-created", "true")),
        })
        .summary("Find a contact by phone, or create it")
        .post("/v3/contacts/import", import)
        .reads_back("/v3/contacts/import/{id}")
        .summary("Import up to 500 contacts in the background")
        .get("/v3/contacts/import/{id}", import_status)
        .summary("Read an import job")
        .extension()
        .get("/v3/contacts/{id}", get)
        .summary("Read a contact")
        .get("/v3/contacts/{id}/history", history)
        .summary("Read a contact's events, oldest first")
        .describe("Each event carries the contact as its GET shows it: `contacts:read` (or `contacts:write`, `*:read`, `*:write`, `admin`) decides, as for the contact's GET; `events:read` alone reads no history.")
        .extension()
        .patch("/v3/contacts/{id}", update)
        .summary("Update a contact")
        .post("/v3/contacts/{id}/merge", merge)
        .summary("Merge contacts into this one: their deals, sessions, organizations and identities move to it")
        .extension()
        .get("/v3/contacts/merge/{id}", merge_status)
        .summary("Read a merge")
        .extension()
        .post("/v3/contacts/{id}/erase", erase)
        .summary("Erase a person's personal data everywhere (LGPD/GDPR), leaving a tombstone")
        .needs(Need::Scope(Scope::EraseContacts))
        .extension()
        .get("/v3/contacts/{id}/export", export)
        .summary("Export everything stored about a person, as JSON")
        // It holds their deals, sessions and messages too: the data
        // protection scope, not `contacts:read`.
        .needs(Need::Scope(Scope::EraseContacts))
        .extension()
        .get("/v1/contacts", list_v1)
        .summary("List contacts (public, cursor pages)")
        .post("/v1/contacts", create_v1)
        .reads_back("/v1/contacts/{id}")
        .summary("Create a contact (public)")
        .get("/v1/contacts/{id}", get_v1)
        .summary("Read a contact (public)")
        .patch("/v1/contacts/{id}", update_v1)
        .summary("Update a contact (public)")
}

async fn list(cx: Ctx, Params(q): Params<ContactQuery>) -> Reply<ListPage<ContactListItem>> {
    Ok(Json(contacts::list_items(cx.store(), &cx.caller, q).await?))
}

async fn create(
    cx: Ctx,
    Body(Create(input)): Body<Create<ContactPatch>>,
) -> Result<Created<ContactV3>, ApiError> {
    let contact = contacts::create(cx.store(), &cx.caller, input, Creation::Api).await?;
    Ok(created(ContactV3::from(contact)))
}

/// 200 when every operation succeeded, 207 when some did not.
async fn batch(
    cx: Ctx,
    meter: Meter,
    Body(request): Body<BatchRequest<ContactOp, ContactPatch>>,
) -> Result<MultiStatus<BatchAnswer<ContactV3>>, ApiError> {
    meter.charge_batch(request.operations.len()).await?;
    let answer = batch::contacts(cx.store(), &cx.caller, request).await;
    Ok(MultiStatus::of(answer, BatchAnswer::some_failed))
}

async fn duplicates(cx: Ctx, Params(q): Params<CursorQuery>) -> Reply<CursorPage<DuplicateGroup>> {
    Ok(Json(
        contacts::duplicates(cx.store(), &cx.caller, q.paging()?).await?,
    ))
}

async fn list_window(cx: Ctx, Params(q): Params<WindowQuery>) -> Reply<ListPage<ContactV3>> {
    Ok(Json(
        contacts::list_window(cx.store(), &cx.caller, q)
            .await?
            .map(ContactV3::from),
    ))
}

/// 201 as the spec says, found or created; `x-contact-created` tells which.
async fn find_or_create(
    cx: Ctx,
    Body(input): Body<ContactPatch>,
) -> Result<Created<ContactV3>, ApiError> {
    let (contact, was_created) = contacts::find_or_create(cx.store(), &cx.caller, input).await?;
    let was_created = if was_created { "true" } else { "false" };
    Ok(created(ContactV3::from(contact)).with_header("x-contact-created", was_created))
}

async fn history(cx: Ctx, InPath(id): PathId, Params(q): Params<HistoryQuery>) -> Reply<EventPage> {
    Ok(Json(
        contacts::history(cx.store(), &cx.caller, id, q).await?,
    ))
}

async fn get(cx: Ctx, InPath(id): PathId) -> Reply<ContactV3> {
    Ok(Json(
        contacts::get(cx.store(), &cx.caller, id).await?.into(),
    ))
}

async fn update(cx: Ctx, InPath(id): PathId, Body(input): Body<ContactPatch>) -> Reply<ContactV3> {
    Ok(Json(
        contacts::update(cx.store(), &cx.caller, id, input)
            .await?
            .into(),
    ))
}

/// 200 with the merge done; 202 while it runs on in the background.
async fn merge(
    cx: Ctx,
    InPath(id): PathId,
    Body(request): Body<MergeRequest>,
) -> Result<Progress<MergeView>, ApiError> {
    let job =
        contacts::merging::start(cx.store(), cx.state.jobs()?, &cx.caller, id, request).await?;
    let running_at =
        (job.status == MergeStatus::Running).then(|| format!("/v3/contacts/merge/{}", job.id));
    Ok(Progress {
        body: job.into(),
        running_at,
    })
}

async fn merge_status(cx: Ctx, InPath(id): PathKey) -> Reply<MergeView> {
    Ok(Json(
        contacts::merging::get(cx.store(), &cx.caller, &id)
            .await?
            .into(),
    ))
}

/// 200 with the tombstone (again for an erased contact); 202 for a person
/// with many records, erased in the background: `GET` it until `erased`.
async fn erase(cx: Ctx, InPath(id): PathId) -> Result<Progress<ContactV3>, ApiError> {
    let (contact, done) =
        contacts::erasing::request(cx.store(), cx.state.jobs()?, &cx.caller, id).await?;
    let running_at = (!done).then(|| format!("/v3/contacts/{}", contact.id));
    Ok(Progress {
        body: contact.into(),
        running_at,
    })
}

async fn export(cx: Ctx, InPath(id): PathId) -> Reply<ContactExport> {
    Ok(Json(contacts::export(cx.store(), &cx.caller, id).await?))
}

async fn list_v1(cx: Ctx, Params(q): Params<V1Query>) -> Reply<CursorPage<ContactV1>> {
    let page = contacts::list_v1(cx.store(), &cx.caller, q).await?;
    Ok(Json(CursorPage {
        data: page.data.into_iter().map(ContactV1::from).collect(),
        next_cursor: page.next_cursor,
    }))
}

async fn create_v1(
    cx: Ctx,
    Body(Create(input)): Body<Create<ContactPatchV1>>,
) -> Result<Created<ContactV1>, ApiError> {
    let contact =
        contacts::create(cx.store(), &cx.caller, input.try_into()?, Creation::Api).await?;
    Ok(created(ContactV1::from(contact)))
}

async fn get_v1(cx: Ctx, InPath(id): PathId) -> Reply<ContactV1> {
    Ok(Json(
        contacts::get(cx.store(), &cx.caller, id).await?.into(),
    ))
}

async fn update_v1(
    cx: Ctx,
    InPath(id): PathId,
    Body(input): Body<ContactPatchV1>,
) -> Reply<ContactV1> {
    Ok(Json(
        contacts::update(cx.store(), &cx.caller, id, input.try_into()?)
            .await?
            .into(),
    ))
}

/// 201 at once with the job; the worker creates the contacts in the background.
async fn import(
    cx: Ctx,
    Body(request): Body<ImportRequest>,
) -> Result<Created<ImportJobView>, ApiError> {
    let job = imports::start(cx.store(), cx.state.jobs()?, &cx.caller, request).await?;
    Ok(created(ImportJobView::from(job)))
}

async fn import_status(cx: Ctx, InPath(id): PathKey) -> Reply<ImportJobView> {
    Ok(Json(
        imports::get(cx.store(), &cx.caller, &id).await?.into(),
    ))
}
