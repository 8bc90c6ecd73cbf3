//! An import's run: the file read in blocks from the job's checkpoint, its
//! rows through the object's batch in windows (each row marked), a
//! checkpoint after each window, until the file ends, the job is canceled
//! or the deadline passes.

use std::time::Instant;

use serde_json::{Value, json};

use super::super::rows::{self, Kinds, Shape};
use super::super::{JobStatus, Object, commit_status, save_progress};
use super::{Failure, ImportJob, KIND, Mode};
use crate::auth::{Caller, Identity, Scope};
use crate::domain::batch::{self, BatchRequest, ItemResult, RowMarks};
use crate::error::{ApiError, ApiResult};
use crate::files::Files;
use crate::ids::{self, WorkspaceId};
use crate::keys;
use crate::queue::{JobMessage, JobQueue};
use crate::record::{self, marks};
use crate::store::{Key, PK, SK, Store, TTL, TYPE, Write};

/// Rows run together: one batch of the resource (its shared commits).
pub const WINDOW: usize = 100;
/// Bytes read from the file at a time; grown for a row longer than this.
const BLOCK: usize = 1024 * 1024;
/// The longest row taken.
const MAX_ROW: usize = 16 * 1024 * 1024;
/// Failed rows are kept as long as the files: a week.
const ERRORS_TTL_DAYS: i64 = 7;

/// What a run of a job may do besides its store.
pub struct Run<'a> {
    pub files: &'a dyn Files,
    pub queue: Option<&'a dyn JobQueue>,
    /// Past it, the job checkpoints, sends itself again and returns (a
    /// Lambda's time); `None`: to the end.
    pub deadline: Option<Instant>,
}

/// Runs a job from its checkpoint: windows of rows through the resource's
/// batch, each followed by a checkpoint, until the file ends, the job is
/// canceled or the deadline passes. Safe to run again and side by side.
pub async fn process(
    store: &dyn Store,
    run: &Run<'_>,
    ws: WorkspaceId,
    id: &str,
) -> ApiResult<ImportJob> {
    let key = keys::bulk_import(ws, id);
    let mut job: ImportJob = record::find(store, &key, true, "import").await?;
    if job.status.is_final() || job.status == JobStatus::AwaitingUpload {
        return Ok(job);
    }
    // The rows act as the job, with the scope the job was made with.
    let caller = Caller::new(
        Identity {
            workspace_id: ws,
            token_id: format!("import:{}", job.id),
            scopes: vec![Scope::Write(job.object.resource())],
            expires_at: None,
        },
        job.id.clone(),
    );
    if job.status == JobStatus::Queued {
        let version = job.version;
        job.status = JobStatus::Running;
        job.times.started_at = Some(ids::now());
        job.version += 1;
        if !save_progress(store, &job, version, Vec::new()).await? {
            return record::find(store, &key, true, "import").await;
        }
    }
    let size = match run.files.size(&job.file).await? {
        Some(size) => size,
        None => return fail(store, &caller, job, "the uploaded file is gone").await,
    };
    let kinds = Kinds::of(schema_of(job.object, job.mode));
    let mut block_size = BLOCK;
    while job.offset < size {
        if run.deadline.is_some_and(|d| Instant::now() >= d) {
            return pause(run, job).await;
        }
        let block = run.files.read(&job.file, job.offset, block_size).await?;
        let at_end = job.offset + block.len() as u64 >= size;
        let shape = Shape {
            op: job.mode.op(),
            by: job.by.map(|b| json!(b)),
            mapping: &job.mapping,
            kinds: &kinds,
        };
        let mut columns = job.columns.clone();
        let parsed = match rows::parse(
            job.format,
            &block,
            at_end,
            &mut columns,
            &shape,
            job.rows + 1,
            WINDOW,
        ) {
            Ok(parsed) => parsed,
            Err(reason) => return fail(store, &caller, job, &reason).await,
        };
        if parsed.consumed == 0 {
            // No whole row in the block: a longer one.
            if at_end || block_size >= MAX_ROW {
                let reason = format!(
                    "row {} is longer than {} MB or has an unclosed quote",
                    job.rows + 1,
                    MAX_ROW >> 20
                );
                return fail(store, &caller, job, &reason).await;
            }
            block_size *= 2;
            continue;
        }
        block_size = BLOCK;
        let window = apply(store, &caller, &job, parsed.rows).await?;
        let version = job.version;
        job.columns = columns;
        job.offset += parsed.consumed as u64;
        job.rows += window.rows;
        job.created += window.created;
        job.updated += window.updated;
        job.failed += window.failures.len() as u64;
        job.version += 1;
        let more = match window.failures.first() {
            None => Vec::new(),
            Some(first) => vec![errors_item(&job, first.row, &window.failures)?],
        };
        if !save_progress(store, &job, version, more).await? {
            // Canceled, or another run of it moved on: that one goes on.
            return record::find(store, &key, true, "import").await;
        }
    }
    let version = job.version;
    job.status = JobStatus::Done;
    job.times.finished_at = Some(ids::now());
    job.stamps.touch();
    job.version += 1;
    match commit_status(store, &caller, &job, version, "import.complete", &job.id).await {
        Ok(()) => {}
        Err(e) if record::changed_meanwhile(&e) => {
            return record::find(store, &key, true, "import").await;
        }
        Err(e) => return Err(e),
    }
    // The file held the rows for this run only (personal data, kept no longer).
    if let Err(e) = run.files.remove(&job.file).await {
        tracing::warn!(job = %job.id, error = %e, "could not remove an import's file");
    }
    Ok(job)
}

/// The deadline came: the job goes on in a new message.
async fn pause(run: &Run<'_>, job: ImportJob) -> ApiResult<ImportJob> {
    let queue = run
        .queue
        .ok_or_else(|| ApiError::unavailable("no queue to resume the import on"))?;
    queue
        .send(&JobMessage::new(KIND, job.workspace_id, job.id.clone()))
        .await
        .map_err(ApiError::unavailable)?;
    Ok(job)
}

async fn fail(
    store: &dyn Store,
    caller: &Caller,
    mut job: ImportJob,
    reason: &str,
) -> ApiResult<ImportJob> {
    let version = job.version;
    job.status = JobStatus::Failed;
    job.error = Some(reason.to_owned());
    job.times.finished_at = Some(ids::now());
    job.stamps.touch();
    job.version += 1;
    commit_status(store, caller, &job, version, "import.fail", &job.id).await?;
    Ok(job)
}

/// The JSON Schema of a row's `data`: the body of the object's single route.
fn schema_of(object: Object, mode: Mode) -> Value {
    use crate::domain::{contacts, deals, products, tags};
    let schema = match (object, mode) {
        (Object::Contacts, _) => schemars::schema_for!(contacts::ContactPatch),
        (Object::Deals, Mode::Update) => schemars::schema_for!(deals::DealPatch),
        (Object::Deals, _) => schemars::schema_for!(deals::DealCreate),
        (Object::Tags, Mode::Update) => schemars::schema_for!(tags::TagPatch),
        (Object::Tags, _) => schemars::schema_for!(tags::TagCreate),
        (Object::Products, _) => schemars::schema_for!(products::ProductPatch),
    };
    serde_json::to_value(schema).unwrap_or_default()
}

/// What a window did.
struct Window {
    rows: u64,
    created: u64,
    updated: u64,
    failures: Vec<Failure>,
}

/// Runs a window's rows through the object's batch, each with its mark.
async fn apply(
    store: &dyn Store,
    caller: &Caller,
    job: &ImportJob,
    rows: Vec<rows::Row>,
) -> ApiResult<Window> {
    let mut window = Window {
        rows: rows.len() as u64,
        created: 0,
        updated: 0,
        failures: Vec::new(),
    };
    let Some(first) = rows.first().map(|r| r.number) else {
        return Ok(window);
    };
    // Rows that are operations, by position in the batch; marks by row number.
    let mut operations = Vec::new();
    let mut of_operation = Vec::new();
    for (at, row) in rows.iter().enumerate() {
        match &row.operation {
            Ok(op) => {
                operations.push(op.clone());
                of_operation.push(at);
            }
            Err(reason) => window.failures.push(Failure {
                row: row.number,
                error: reason.clone(),
                record: row.text.clone(),
            }),
        }
    }
    let results = run_batch(store, caller, job, first, operations, &of_operation, &rows).await;
    let mut again = Vec::new();
    for (result, at) in results.into_iter().zip(&of_operation) {
        let row = &rows[*at];
        match result {
            Outcome::Applied { created: true } => window.created += 1,
            Outcome::Applied { created: false } => window.updated += 1,
            Outcome::Marked => again.push(row.number),
            Outcome::Failed {
                server: true,
                reason,
            } => {
                // The store failed: the window runs again from the checkpoint.
                return Err(ApiError::unavailable(reason));
            }
            Outcome::Failed { reason, .. } => window.failures.push(Failure {
                row: row.number,
                error: reason,
                record: row.text.clone(),
            }),
        }
    }
    // Rows applied by a run whose checkpoint was lost: counted from their marks.
    let keys: Vec<Key> = again
        .iter()
        .map(|n| keys::bulk_import_row(job.workspace_id, &job.id, *n))
        .collect();
    for chunk in keys.chunks(crate::store::MAX_BATCH_GET) {
        for item in store.batch_get(chunk).await? {
            match marks::read(&item) {
                Some((_, true)) => window.created += 1,
                _ => window.updated += 1,
            }
        }
    }
    window.failures.sort_by_key(|f| f.row);
    Ok(window)
}

enum Outcome {
    Applied {
        created: bool,
    },
    /// Applied by an earlier run.
    Marked,
    Failed {
        server: bool,
        reason: String,
    },
}

/// The batch of the job's object over `operations` (row `first + i` is the
/// mark of the operation of row index `of_operation[i]`).
async fn run_batch(
    store: &dyn Store,
    caller: &Caller,
    job: &ImportJob,
    first: u64,
    operations: Vec<Value>,
    of_operation: &[usize],
    rows: &[rows::Row],
) -> Vec<Outcome> {
    if operations.is_empty() {
        return Vec::new();
    }
    // Marks are by row number: the batch numbers its operations from 0, so
    // a window whose rows all became operations maps one to one; otherwise
    // each operation runs in a batch of its own run of rows.
    let contiguous = of_operation
        .iter()
        .enumerate()
        .all(|(i, at)| rows[*at].number == first + i as u64);
    if contiguous {
        let marks = RowMarks {
            workspace_id: job.workspace_id,
            job_id: job.id.clone(),
            first_row: first,
        };
        return batch_of(store, caller, job.object, operations, marks).await;
    }
    let mut outcomes = Vec::with_capacity(operations.len());
    // Runs of consecutive row numbers, each its own batch.
    let mut start = 0;
    while start < operations.len() {
        let mut end = start + 1;
        while end < operations.len()
            && rows[of_operation[end]].number == rows[of_operation[end - 1]].number + 1
        {
            end += 1;
        }
        let marks = RowMarks {
            workspace_id: job.workspace_id,
            job_id: job.id.clone(),
            first_row: rows[of_operation[start]].number,
        };
        outcomes.extend(
            batch_of(
                store,
                caller,
                job.object,
                operations[start..end].to_vec(),
                marks,
            )
            .await,
        );
        start = end;
    }
    outcomes
}

async fn batch_of(
    store: &dyn Store,
    caller: &Caller,
    object: Object,
    operations: Vec<Value>,
    marks: RowMarks,
) -> Vec<Outcome> {
    fn outcomes<V>(results: Vec<ItemResult<V>>) -> Vec<Outcome> {
        results.into_iter().map(outcome).collect()
    }
    match object {
        Object::Contacts => outcomes(
            batch::contacts(store, caller, BatchRequest::marked(operations, marks))
                .await
                .results,
        ),
        Object::Deals => outcomes(
            batch::deals(store, caller, BatchRequest::marked(operations, marks))
                .await
                .results,
        ),
        Object::Tags => outcomes(
            batch::tags(store, caller, BatchRequest::marked(operations, marks))
                .await
                .results,
        ),
        Object::Products => outcomes(
            batch::products(store, caller, BatchRequest::marked(operations, marks))
                .await
                .results,
        ),
    }
}

fn outcome<V>(result: ItemResult<V>) -> Outcome {
    match result.error {
        None => Outcome::Applied {
            created: result.created.unwrap_or(false),
        },
        Some(error) if marks::already_applied_body(&error) => Outcome::Marked,
        Some(error) => Outcome::Failed {
            server: result.status >= 500,
            reason: describe(&error),
        },
    }
}

/// An error body as one line: each field's problem, or the message.
fn describe(error: &Value) -> String {
    let strip = |field: &str| {
        let field = field.split_once("].").map_or(field, |(_, rest)| rest);
        field.strip_prefix("data.").unwrap_or(field).to_owned()
    };
    match error["details"].as_array() {
        Some(details) if !details.is_empty() => details
            .iter()
            .map(|d| {
                format!(
                    "{}: {}",
                    strip(d["field"].as_str().unwrap_or_default()),
                    d["problem"].as_str().unwrap_or_default()
                )
            })
            .collect::<Vec<_>>()
            .join("; "),
        _ => error["message"].as_str().unwrap_or("refused").to_owned(),
    }
}

/// The failed rows of a window, one item, expiring with the files.
fn errors_item(job: &ImportJob, first_row: u64, failures: &[Failure]) -> ApiResult<Write> {
    let key = keys::bulk_import_error(job.workspace_id, &job.id, first_row);
    let ttl = chrono::Utc::now().timestamp() + ERRORS_TTL_DAYS * 86_400;
    let item = json!({
        PK: key.pk,
        SK: key.sk,
        TYPE: "BulkImportErrors",
        "failures": failures,
        TTL: ttl,
    });
    match item {
        Value::Object(item) => Ok(Write::Put {
            item,
            condition: None,
        }),
        _ => Err(ApiError::internal("an errors item is an object")),
    }
}
