//! Bulk imports: the job, its view and its API; the run is [`run`].

mod run;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use validator::Validate;

use super::{
    Format, Job, JobStatus, JobTimes, Mapping, Object, check_mapping, commit_status, file_name,
    rate, read, require,
};
use crate::auth::{Caller, Scope};
use crate::domain::contacts::UpsertKey;
use crate::error::{ApiError, ApiResult};
use crate::files::{Files, MAX_IMPORT_BYTES};
use crate::ids::{self, WorkspaceId};
use crate::keys;
use crate::queue::{JobMessage, JobQueue};
use crate::record::{self, Mutation, Personal, Record, Stamps};
use crate::store::{Key, SK, Store};

pub use run::{Run, WINDOW, process};

/// The kind of job message of a bulk import.
pub const KIND: &str = "bulkImport";

/// What each row does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
#[schemars(rename = "ImportMode")]
pub enum Mode {
    /// Creates a record per row (the default; products take only `update`).
    Create,
    /// Contacts: updates the contact found `by` its phone, e-mail or
    /// `externalId`, or creates it. Tags: by name.
    Upsert,
    /// Updates the record of the row's `id` column.
    Update,
}

impl Mode {
    pub(super) fn op(self) -> &'static str {
        match self {
            Mode::Create => "create",
            Mode::Upsert => "upsert",
            Mode::Update => "update",
        }
    }
}

/// `POST /v3/imports`.
#[derive(Debug, Deserialize, Validate, schemars::JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ImportCreate {
    pub object: Object,
    /// `csv` (the default; a header row names the columns) or `jsonl`.
    pub format: Option<Format>,
    /// `create` (the default), `upsert` (contacts, tags) or `update` (by `id`).
    pub mode: Option<Mode>,
    /// What a contacts upsert finds the contact by (default `phone`).
    pub by: Option<UpsertKey>,
    /// Column (or JSON key) to field: `{"E-mail": "email", "Plan":
    /// "customFields.plan", "Notes": ""}` (empty: the column is skipped).
    /// Unmapped columns are fields of their own name.
    #[validate(length(max = 200))]
    pub mapping: Option<Mapping>,
}

/// A bulk import.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ImportJob {
    pub id: String,
    pub workspace_id: WorkspaceId,
    pub object: Object,
    pub format: Format,
    pub mode: Mode,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub by: Option<UpsertKey>,
    #[serde(default)]
    pub mapping: Mapping,
    pub status: JobStatus,
    /// The token that made it (the rows' audit entries name the job).
    pub token_id: String,
    pub file: String,
    /// The CSV header, once read.
    #[serde(default)]
    pub columns: Vec<String>,
    /// The checkpoint: the first byte of the next row.
    pub offset: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes: Option<u64>,
    pub rows: u64,
    pub created: u64,
    pub updated: u64,
    pub failed: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    #[serde(flatten)]
    pub times: JobTimes,
    #[serde(flatten)]
    pub stamps: Stamps,
    pub version: u64,
}

impl Record for ImportJob {
    const TYPE: &'static str = "BulkImport";
    /// The rows are in the file, not in the job.
    const PERSONAL: Personal = Personal::none(&[
        "error",
        "by",
        "columns",
        "file",
        "finishedAt",
        "format",
        "id",
        "mapping",
        "mode",
        "object",
        "startedAt",
        "status",
        "tokenId",
    ]);
    fn key(&self) -> Key {
        keys::bulk_import(self.workspace_id, &self.id)
    }
}

/// A bulk import as the API shows it.
#[derive(Debug, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ImportView {
    pub id: String,
    pub object: Object,
    pub format: Format,
    pub mode: Mode,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub by: Option<UpsertKey>,
    pub mapping: Mapping,
    pub status: JobStatus,
    /// While `awaitingUpload`: PUT the file here (good for an hour; each
    /// read of the job gives a fresh one), then `POST /v3/imports/{id}/start`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub upload_url: Option<String>,
    /// The file's size, once started.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bytes: Option<u64>,
    /// How far the job has read the file.
    pub bytes_read: u64,
    /// Rows read so far: each created, updated or failed.
    pub rows: u64,
    pub created: u64,
    pub updated: u64,
    /// Rows refused, each with its reason at `GET /v3/imports/{id}/errors`.
    pub failed: u64,
    /// Rows a second since the job started.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rows_per_second: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    #[serde(flatten)]
    pub times: JobTimes,
    #[serde(flatten)]
    pub stamps: Stamps,
}

impl ImportView {
    pub fn of(job: ImportJob, upload_url: Option<String>) -> Self {
        let until = job.times.finished_at.unwrap_or_else(ids::now);
        Self {
            rows_per_second: rate(job.rows, job.times.started_at, until),
            id: job.id,
            object: job.object,
            format: job.format,
            mode: job.mode,
            by: job.by,
            mapping: job.mapping,
            status: job.status,
            upload_url,
            bytes: job.bytes,
            bytes_read: job.offset,
            rows: job.rows,
            created: job.created,
            updated: job.updated,
            failed: job.failed,
            error: job.error,
            times: job.times,
            stamps: job.stamps,
        }
    }
}

/// The modes each object takes (as its batch does).
fn check_mode(object: Object, mode: Mode, by: Option<UpsertKey>) -> ApiResult<()> {
    let allowed: &[Mode] = match object {
        Object::Contacts | Object::Tags => &[Mode::Create, Mode::Upsert, Mode::Update],
        Object::Deals => &[Mode::Create, Mode::Update],
        Object::Products => &[Mode::Update],
    };
    if !allowed.contains(&mode) {
        return Err(ApiError::field(
            "mode",
            format!(
                "{} imports take {}",
                object.name(),
                allowed
                    .iter()
                    .map(|m| m.op())
                    .collect::<Vec<_>>()
                    .join(" or ")
            ),
        ));
    }
    if by.is_some() && !(object == Object::Contacts && mode == Mode::Upsert) {
        return Err(ApiError::field(
            "by",
            "is only taken by an upsert of contacts",
        ));
    }
    Ok(())
}

/// `POST /v3/imports`: the job, awaiting its file.
pub async fn create(
    store: &dyn Store,
    files: &dyn Files,
    caller: &Caller,
    input: ImportCreate,
) -> ApiResult<ImportView> {
    require(caller, Scope::Write(input.object.resource())).await?;
    let default_mode = match input.object {
        Object::Products => Mode::Update,
        _ => Mode::Create,
    };
    let mode = input.mode.unwrap_or(default_mode);
    check_mode(input.object, mode, input.by)?;
    let mapping = input.mapping.unwrap_or_default();
    check_mapping(&mapping)?;
    let format = input.format.unwrap_or(Format::Csv);
    let id = ids::new_ulid();
    let ws = caller.workspace_id;
    let job = ImportJob {
        file: file_name(ws, "import", &id, format),
        id,
        workspace_id: ws,
        object: input.object,
        format,
        mode,
        by: input
            .by
            .or((input.object == Object::Contacts && mode == Mode::Upsert)
                .then_some(UpsertKey::Phone)),
        mapping,
        status: JobStatus::AwaitingUpload,
        token_id: caller.token_id().await?.to_owned(),
        columns: Vec::new(),
        offset: 0,
        bytes: None,
        rows: 0,
        created: 0,
        updated: 0,
        failed: 0,
        error: None,
        times: JobTimes::default(),
        stamps: Stamps::new(),
        version: 1,
    };
    let url = files.upload_url(&job.file).await?;
    let mut m = Mutation::new(caller);
    m.create(&job)?;
    m.commit(store, "import.create", "bulk", &job.id).await?;
    Ok(ImportView::of(job, Some(url)))
}

impl Job for ImportJob {
    const WHAT: &'static str = "import";
    fn key_of(workspace: WorkspaceId, id: &str) -> Key {
        keys::bulk_import(workspace, id)
    }
    fn object(&self) -> Object {
        self.object
    }
}

/// `GET /v3/imports/{id}`: a fresh upload URL while it awaits its file.
pub async fn get(
    store: &dyn Store,
    files: &dyn Files,
    caller: &Caller,
    id: &str,
) -> ApiResult<ImportView> {
    let job: ImportJob = read(store, caller, id).await?;
    let url = match job.status {
        JobStatus::AwaitingUpload => Some(files.upload_url(&job.file).await?),
        _ => None,
    };
    Ok(ImportView::of(job, url))
}

/// `POST /v3/imports/{id}/start`: queues the job once its file is there.
/// Starting a started job answers it as it is.
pub async fn start(
    store: &dyn Store,
    files: &dyn Files,
    queue: &dyn JobQueue,
    caller: &Caller,
    id: &str,
) -> ApiResult<ImportView> {
    let mut job: ImportJob = read(store, caller, id).await?;
    require(caller, Scope::Write(job.object.resource())).await?;
    if job.status != JobStatus::AwaitingUpload {
        return Ok(ImportView::of(job, None));
    }
    let Some(size) = files.size(&job.file).await? else {
        return Err(ApiError::conflict(
            "the file has not been uploaded: PUT it to the job's uploadUrl first",
        ));
    };
    if size > MAX_IMPORT_BYTES {
        return Err(ApiError::new(
            http::StatusCode::PAYLOAD_TOO_LARGE,
            format!(
                "the file is {} MB; an import takes at most {} MB (split it in several jobs)",
                size >> 20,
                MAX_IMPORT_BYTES >> 20
            ),
        ));
    }
    let version = job.version;
    job.status = JobStatus::Queued;
    job.bytes = Some(size);
    job.stamps.touch();
    job.version += 1;
    commit_status(store, caller, &job, version, "import.start", &job.id).await?;
    let message = JobMessage::new(KIND, job.workspace_id, job.id.clone());
    queue.send(&message).await.map_err(|e| {
        tracing::error!(job = %job.id, error = %e, "could not queue an import");
        ApiError::unavailable("the import could not be queued; start it again")
    })?;
    Ok(ImportView::of(job, None))
}

/// `POST /v3/imports/{id}/cancel`: stops the job at its next window; the
/// rows applied stay. A finished job answers as it is.
pub async fn cancel(store: &dyn Store, caller: &Caller, id: &str) -> ApiResult<ImportView> {
    loop {
        let mut job: ImportJob = read(store, caller, id).await?;
        require(caller, Scope::Write(job.object.resource())).await?;
        if job.status.is_final() {
            return Ok(ImportView::of(job, None));
        }
        let version = job.version;
        job.status = JobStatus::Canceled;
        job.times.finished_at = Some(ids::now());
        job.stamps.touch();
        job.version += 1;
        match commit_status(store, caller, &job, version, "import.cancel", &job.id).await {
            Ok(()) => return Ok(ImportView::of(job, None)),
            // The worker's checkpoint came first: read it again.
            Err(e) if record::changed_meanwhile(&e) => continue,
            Err(e) => return Err(e),
        }
    }
}

/// One failed row, as `GET /v3/imports/{id}/errors` lists it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub(super) struct Failure {
    pub(super) row: u64,
    pub(super) error: String,
    pub(super) record: String,
}

/// `GET /v3/imports/{id}/errors`: the failed rows as CSV (`row,error,record`),
/// up to [`ERRORS_PAGE`] windows' worth after row `after`; the next row to
/// ask from when there are more.
pub async fn errors(
    store: &dyn Store,
    caller: &Caller,
    id: &str,
    after: Option<u64>,
) -> ApiResult<(String, Option<u64>)> {
    let job: ImportJob = read(store, caller, id).await?;
    let mut query = crate::store::Query::new(
        crate::store::Index::TABLE,
        keys::bulk_import_errors(job.workspace_id, &job.id),
        crate::store::SkRange::All,
    );
    query.limit = Some(ERRORS_PAGE);
    if let Some(after) = after {
        let key = keys::bulk_import_error(job.workspace_id, &job.id, after);
        query.start_after = Some(key.start_after());
    }
    let page = store.query(&query).await?;
    let mut out = csv::Writer::from_writer(Vec::new());
    let _ = out.write_record(["row", "error", "record"]);
    let mut last = None;
    for item in &page.items {
        last = item
            .get(SK)
            .and_then(Value::as_str)
            .and_then(|sk| sk.strip_prefix("ROW#"))
            .and_then(|n| n.parse::<u64>().ok());
        let failures: Vec<Failure> =
            serde_json::from_value(item.get("failures").cloned().unwrap_or_default())
                .unwrap_or_default();
        for f in failures {
            let _ = out.write_record([f.row.to_string(), f.error, f.record]);
        }
    }
    let text = String::from_utf8(out.into_inner().unwrap_or_default()).unwrap_or_default();
    Ok((text, page.last_key.and(last)))
}

/// `GET /v3/imports/{id}/errors`.
#[derive(Debug, Deserialize, Validate, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "ImportErrorsQuery")]
pub struct ErrorsQuery {
    /// The row after which to list (the `Link` of the page before gives it).
    pub after: Option<u64>,
}

/// Windows of failed rows in one page of `errors`.
pub const ERRORS_PAGE: usize = 50;
