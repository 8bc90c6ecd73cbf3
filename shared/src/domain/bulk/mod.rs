//! Bulk imports and exports: a whole CRM in or out as files, as jobs.
//!
//! An import is a file of rows, each row one operation of the resource's
//! batch (`POST /v3/<object>/batch`): the same domain functions, validation,
//! events and shared commits, in windows of [`import::WINDOW`] rows. The
//! client creates the job (`POST /v3/imports`), PUTs the file to the upload
//! URL it answers (presigned S3 on AWS, the local server's folder locally),
//! and starts it (`POST /v3/imports/{id}/start`). The worker reads the file in
//! blocks from the job's checkpoint (the byte offset of its next row), so a
//! Lambda timeout or a SIGKILL resumes where it stopped; each row's change
//! commits with the row's mark (`record::marks`), so a row run again after
//! a lost checkpoint is counted, never applied twice.
//!
//! An export (`POST /v3/exports`) walks the object's records in key order,
//! page by page, into a file written in parts (constant memory), and answers
//! a download URL once done.
//!
//! Scopes follow the object: an import needs `<object>:write`, an export and
//! a read of either job `<object>:read` (a contacts export is personal data).

pub mod export;
pub mod import;
mod rows;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::auth::{Caller, Resource, Scope, missing};
use crate::error::{ApiError, ApiResult};
use crate::ids::{self, Timestamp, WorkspaceId};
use crate::record::{self, Mutation, Record};
use crate::store::{Key, Store};

pub use export::{ExportCreate, ExportJob, ExportView};
pub use import::{ImportCreate, ImportJob, ImportView};

/// What a bulk job carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
#[schemars(rename = "BulkObject")]
pub enum Object {
    Contacts,
    Deals,
    Tags,
    Products,
}

impl Object {
    pub fn resource(self) -> Resource {
        match self {
            Object::Contacts => Resource::Contacts,
            Object::Deals => Resource::Deals,
            Object::Tags => Resource::Tags,
            Object::Products => Resource::Products,
        }
    }

    pub fn name(self) -> &'static str {
        self.resource().name()
    }
}

/// The file's format: CSV with a header row, or JSON lines (one object a line).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
#[schemars(rename = "BulkFormat")]
pub enum Format {
    Csv,
    Jsonl,
}

impl Format {
    pub fn extension(self) -> &'static str {
        match self {
            Format::Csv => "csv",
            Format::Jsonl => "jsonl",
        }
    }
}

/// Where a job is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "BulkJobStatus")]
pub enum JobStatus {
    /// An import waiting for its file (PUT it to `uploadUrl`, then start it).
    AwaitingUpload,
    /// Queued; the worker has not begun.
    Queued,
    /// The worker is at it (or will resume it after a stop).
    Running,
    /// Finished: every row applied or failed (an import), the file written (an export).
    Done,
    /// Stopped by `POST .../cancel`; what was applied stays.
    Canceled,
    /// The job could not go on (`error` says why).
    Failed,
}

impl JobStatus {
    pub fn is_final(self) -> bool {
        matches!(
            self,
            JobStatus::Done | JobStatus::Canceled | JobStatus::Failed
        )
    }
}

/// When a job's run began and ended.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct JobTimes {
    #[serde(
        default,
        with = "ids::ts_format::option",
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(with = "Option<Timestamp>")]
    pub started_at: Option<Timestamp>,
    #[serde(
        default,
        with = "ids::ts_format::option",
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(with = "Option<Timestamp>")]
    pub finished_at: Option<Timestamp>,
}

/// The files of a job: `<workspace>-<kind>-<id>.<ext>`.
fn file_name(ws: WorkspaceId, kind: &str, id: &str, format: Format) -> String {
    format!("{ws}-{kind}-{}.{}", id.to_lowercase(), format.extension())
}

/// The 403 of a token without `scope`, or `Ok`.
async fn require(caller: &Caller, scope: Scope) -> ApiResult<()> {
    if caller.identity().await?.has(scope) {
        Ok(())
    } else {
        Err(missing(scope))
    }
}

/// Throughput of a job so far, rows (or records) a second.
fn rate(done: u64, started: Option<Timestamp>, until: Timestamp) -> Option<f64> {
    let started = started?;
    let ms = (until - started).num_milliseconds();
    (ms > 0).then(|| ((done as f64) * 1000.0 / ms as f64 * 10.0).round() / 10.0)
}

/// A bulk job's record: where it is kept, and the object whose scopes it takes.
trait Job: Record {
    /// Its name in a 404.
    const WHAT: &'static str;
    fn key_of(workspace: WorkspaceId, id: &str) -> Key;
    fn object(&self) -> Object;
}

/// A job of the caller's workspace by id (404 when the id is not a ULID),
/// for a token that reads its object (403 otherwise).
async fn read<R: Job>(store: &dyn Store, caller: &Caller, id: &str) -> ApiResult<R> {
    if !ids::is_ulid(id) {
        return Err(ApiError::not_found(R::WHAT));
    }
    let job: R = record::find(store, &R::key_of(caller.workspace_id, id), true, R::WHAT).await?;
    require(caller, Scope::Read(job.object().resource())).await?;
    Ok(job)
}

/// Writes a job's bookkeeping (progress, a checkpoint) over version
/// `version`: no audit entry, no event, as a record's progress is not a
/// change of the CRM's data. `false`: someone else wrote it (a cancel).
async fn save_progress<R: Record>(
    store: &dyn Store,
    job: &R,
    version: u64,
    more: Vec<crate::store::Write>,
) -> ApiResult<bool> {
    let mut writes = vec![crate::store::Write::Put {
        item: record::to_item(job)?,
        condition: Some(crate::store::Condition::VersionIs(version)),
    }];
    writes.extend(more);
    match store.write(writes).await {
        Ok(()) => Ok(true),
        Err(crate::store::StoreError::ConditionFailed { index: 0 }) => Ok(false),
        Err(e) => Err(e.into()),
    }
}

/// Commits a job's change of status (audited, an event).
async fn commit_status<R: Record>(
    store: &dyn Store,
    caller: &Caller,
    job: &R,
    version: u64,
    action: &str,
    id: &str,
) -> ApiResult<()> {
    let mut m = Mutation::new(caller);
    m.replace(job, version)?;
    m.commit(store, action, "bulk", id)
        .await
        .map_err(Into::into)
}

/// Mapping of a file's columns (or JSON keys) to the fields of the object.
pub type Mapping = BTreeMap<String, String>;

/// Checks a mapping's targets: field paths of letters, digits and dots.
fn check_mapping(mapping: &Mapping) -> ApiResult<()> {
    for (column, field) in mapping {
        let ok = field.is_empty()
            || field.split('.').all(|part| {
                !part.is_empty() && part.chars().all(|c| c.is_alphanumeric() || c == '_')
            });
        if !ok || column.is_empty() {
            return Err(ApiError::field(
                format!("mapping.{column}"),
                "must name a field (`email`, `customFields.plan`), or be empty to skip the column",
            ));
        }
    }
    Ok(())
}

/// The stored items of item_shapes/bulk.json read back (domain::item_shapes).
#[cfg(test)]
mod shapes {
    use crate::domain::item_shapes::{round_trip, texts_declared};

    #[test]
    fn bulk_jobs_keep_their_shape() {
        round_trip::<crate::domain::bulk::ImportJob>("BulkImport");
        texts_declared::<crate::domain::bulk::ImportJob>();
        round_trip::<crate::domain::bulk::ExportJob>("BulkExport");
        texts_declared::<crate::domain::bulk::ExportJob>();
    }
}
