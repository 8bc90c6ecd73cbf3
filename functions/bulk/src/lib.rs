//! The bulk group: `/v3/imports` and `/v3/exports`, a whole CRM in or out
//! as files (shared::domain::bulk). Each route needs a token; the scope is
//! the object's (`contacts:write` to import contacts, `contacts:read` to
//! export them or read either job), checked by the domain.

use aide::openapi::{MediaType, Operation, Response as DocResponse, StatusCode as DocStatus};
use axum::Json;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use shared::ApiError;
use shared::auth::Need;
use shared::deploy::{Files, Queue, READ, WRITE};
use shared::domain::bulk::import::ErrorsQuery;
use shared::domain::bulk::{ExportCreate, ExportView, ImportCreate, ImportView, export, import};
use shared::http::{Body, Created, Ctx, Group, InPath, Params, PathKey, Reply, created};

pub fn group() -> Group {
    Group::new("bulk")
        .deployed("/v3/imports and /v3/exports (bulk files as jobs)", |f| {
            f.actions(&[READ, WRITE])
                .sends(Queue::Jobs)
                .files(Files::Presign)
        })
        .post("/v3/imports", create_import)
        .reads_back("/v3/imports/{id}")
        .summary("Make an import job: PUT its file to `uploadUrl`, then start it")
        .describe(IMPORT)
        .extension()
        .needs(Need::Token)
        .get("/v3/imports/{id}", get_import)
        .summary("Read an import: status, counts, rate (a fresh uploadUrl while awaiting its file)")
        .extension()
        .needs(Need::Token)
        .post("/v3/imports/{id}/start", start_import)
        .summary("Start an import once its file is uploaded")
        .extension()
        .needs(Need::Token)
        .post("/v3/imports/{id}/cancel", cancel_import)
        .summary("Cancel an import: it stops at its next window; rows applied stay")
        .extension()
        .needs(Need::Token)
        .get("/v3/imports/{id}/errors", import_errors)
        .summary("The failed rows of an import with their reasons (CSV)")
        .extension()
        .needs(Need::Token)
        .post("/v3/exports", create_export)
        .reads_back("/v3/exports/{id}")
        .summary("Make an export job of contacts, deals, tags or products")
        .extension()
        .needs(Need::Token)
        .get("/v3/exports/{id}", get_export)
        .summary("Read an export (its downloadUrl once done)")
        .extension()
        .needs(Need::Token)
}

const IMPORT: &str = "Each row of the file (CSV with a header row, or JSON lines) is one \
operation of the object's batch (`POST /v3/<object>/batch`): the same validation and \
events. `mapping` maps columns to fields (`customFields.plan`); unmapped columns are fields \
of their own name. The worker reads the file in windows of 100 rows with a checkpoint \
after each: a stop resumes there, and no row is applied twice. Needs `<object>:write`.";

async fn create_import(
    cx: Ctx,
    Body(input): Body<ImportCreate>,
) -> Result<Created<ImportView>, ApiError> {
    Ok(created(
        import::create(cx.store(), cx.state.files()?, &cx.caller, input).await?,
    ))
}

async fn get_import(cx: Ctx, InPath(id): PathKey) -> Reply<ImportView> {
    Ok(Json(
        import::get(cx.store(), cx.state.files()?, &cx.caller, &id).await?,
    ))
}

async fn start_import(cx: Ctx, InPath(id): PathKey) -> Reply<ImportView> {
    Ok(Json(
        import::start(
            cx.store(),
            cx.state.files()?,
            cx.state.jobs()?,
            &cx.caller,
            &id,
        )
        .await?,
    ))
}

async fn cancel_import(cx: Ctx, InPath(id): PathKey) -> Reply<ImportView> {
    Ok(Json(import::cancel(cx.store(), &cx.caller, &id).await?))
}

async fn import_errors(
    cx: Ctx,
    InPath(id): PathKey,
    Params(q): Params<ErrorsQuery>,
) -> Result<CsvPage, ApiError> {
    let (text, next) = import::errors(cx.store(), &cx.caller, &id, q.after).await?;
    Ok(CsvPage {
        text,
        next: next.map(|after| format!("</v3/imports/{id}/errors?after={after}>; rel=\"next\"")),
    })
}

async fn create_export(
    cx: Ctx,
    Body(input): Body<ExportCreate>,
) -> Result<Created<ExportView>, ApiError> {
    Ok(created(
        export::create(cx.store(), cx.state.jobs()?, &cx.caller, input).await?,
    ))
}

async fn get_export(cx: Ctx, InPath(id): PathKey) -> Reply<ExportView> {
    Ok(Json(
        export::get(cx.store(), cx.state.files()?, &cx.caller, &id).await?,
    ))
}

/// A page of failed rows as CSV; the next page in `Link`.
struct CsvPage {
    text: String,
    next: Option<String>,
}

impl IntoResponse for CsvPage {
    fn into_response(self) -> Response {
        let mut response = (
            [(header::CONTENT_TYPE, "text/csv; charset=utf-8")],
            self.text,
        )
            .into_response();
        if let Some(link) = self.next.and_then(|l| l.parse().ok()) {
            response.headers_mut().insert(header::LINK, link);
        }
        response
    }
}

impl aide::operation::OperationOutput for CsvPage {
    type Inner = ();
    fn inferred_responses(
        _: &mut aide::generate::GenContext,
        _: &mut Operation,
    ) -> Vec<(Option<DocStatus>, DocResponse)> {
        let media: MediaType = serde_json::from_value(serde_json::json!({
            "schema": { "type": "string" },
            "example": "row,error,record\n2,email: is not an e-mail address,\"Ana,ana@\"\n"
        }))
        .expect("a media type");
        vec![(
            Some(DocStatus::Code(200)),
            DocResponse {
                description: "`row,error,record`: each failed row's number (1 is the first \
                    row of data), why, and the row as the file had it; the next page in `Link`"
                    .to_owned(),
                content: [("text/csv".to_owned(), media)].into_iter().collect(),
                ..Default::default()
            },
        )]
    }
}
