//! Bulk exports: every record of an object (within the filters), in key
//! order, as CSV or JSON lines, written page by page in parts.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use validator::Validate;

use super::{
    Format, Job, JobStatus, JobTimes, Object, commit_status, file_name, rate, read, require,
    save_progress,
};
use crate::auth::{Caller, Identity, Scope};
use crate::domain::{contacts, deals, products, tags};
use crate::error::{ApiError, ApiResult};
use crate::files::{FileWriter, Files};
use crate::ids::{self, Timestamp, WorkspaceId};
use crate::keys;
use crate::queue::{JobMessage, JobQueue};
use crate::record::{self, Mutation, Personal, Record, Stamps};
use crate::store::{Index, Item, Query, SkRange, Store, TYPE};

/// The kind of job message of a bulk export.
pub const KIND: &str = "bulkExport";
/// Records read a page.
const PAGE: usize = 500;
/// Progress is saved every this many pages.
const PROGRESS_PAGES: u64 = 20;

/// Which records an export takes, by their stamps (each bound inclusive).
#[derive(
    Debug, Clone, Default, Serialize, Deserialize, PartialEq, Validate, schemars::JsonSchema,
)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ExportFilters {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_at_from: Option<Timestamp>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_at_to: Option<Timestamp>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub updated_at_from: Option<Timestamp>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub updated_at_to: Option<Timestamp>,
}

impl ExportFilters {
    fn keeps(&self, item: &Item) -> bool {
        let at = |field: &str| {
            item.get(field)
                .and_then(Value::as_str)
                .and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok())
                .map(|t| t.with_timezone(&chrono::Utc))
        };
        let within = |t: Option<Timestamp>, from: Option<Timestamp>, to: Option<Timestamp>| {
            if from.is_none() && to.is_none() {
                return true;
            }
            t.is_some_and(|t| from.is_none_or(|f| t >= f) && to.is_none_or(|u| t <= u))
        };
        within(at("createdAt"), self.created_at_from, self.created_at_to)
            && within(
                at("lastUpdateAt").or(at("createdAt")),
                self.updated_at_from,
                self.updated_at_to,
            )
    }
}

/// `POST /v3/exports`.
#[derive(Debug, Deserialize, Validate, schemars::JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ExportCreate {
    pub object: Object,
    /// `csv` (the default) or `jsonl`.
    pub format: Option<Format>,
    pub filters: Option<ExportFilters>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ExportJob {
    pub id: String,
    pub workspace_id: WorkspaceId,
    pub object: Object,
    pub format: Format,
    #[serde(default)]
    pub filters: ExportFilters,
    pub status: JobStatus,
    pub token_id: String,
    pub file: String,
    pub records: u64,
    pub bytes: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    #[serde(flatten)]
    pub times: JobTimes,
    #[serde(flatten)]
    pub stamps: Stamps,
    pub version: u64,
}

impl Record for ExportJob {
    const TYPE: &'static str = "BulkExport";
    const PERSONAL: Personal = Personal::none(&[
        "error",
        "file",
        "filters",
        "finishedAt",
        "format",
        "id",
        "object",
        "startedAt",
        "status",
        "tokenId",
    ]);

    fn key(&self) -> crate::store::Key {
        keys::bulk_export(self.workspace_id, &self.id)
    }
}

#[derive(Debug, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ExportView {
    pub id: String,
    pub object: Object,
    pub format: Format,
    pub filters: ExportFilters,
    pub status: JobStatus,
    /// Records written so far.
    pub records: u64,
    pub bytes: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub records_per_second: Option<f64>,
    /// Once `done`: GET the file here (good for an hour; each read of the
    /// job gives a fresh one). The file is kept 7 days.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub download_url: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    #[serde(flatten)]
    pub times: JobTimes,
    #[serde(flatten)]
    pub stamps: Stamps,
}

impl ExportView {
    fn of(job: ExportJob, download_url: Option<String>) -> Self {
        let until = job.times.finished_at.unwrap_or_else(ids::now);
        Self {
            records_per_second: rate(job.records, job.times.started_at, until),
            id: job.id,
            object: job.object,
            format: job.format,
            filters: job.filters,
            status: job.status,
            records: job.records,
            bytes: job.bytes,
            download_url,
            error: job.error,
            times: job.times,
            stamps: job.stamps,
        }
    }
}

/// `POST /v3/exports`: the job, queued.
pub async fn create(
    store: &dyn Store,
    queue: &dyn JobQueue,
    caller: &Caller,
    input: ExportCreate,
) -> ApiResult<ExportView> {
    require(caller, Scope::Read(input.object.resource())).await?;
    let format = input.format.unwrap_or(Format::Csv);
    let id = ids::new_ulid();
    let ws = caller.workspace_id;
    let job = ExportJob {
        file: file_name(ws, "export", &id, format),
        id,
        workspace_id: ws,
        object: input.object,
        format,
        filters: input.filters.unwrap_or_default(),
        status: JobStatus::Queued,
        token_id: caller.token_id().await?.to_owned(),
        records: 0,
        bytes: 0,
        error: None,
        times: JobTimes::default(),
        stamps: Stamps::new(),
        version: 1,
    };
    let mut m = Mutation::new(caller);
    m.create(&job)?;
    m.commit(store, "export.create", "bulk", &job.id).await?;
    queue
        .send(&JobMessage::new(KIND, ws, job.id.clone()))
        .await
        .map_err(|e| {
            tracing::error!(job = %job.id, error = %e, "could not queue an export");
            ApiError::unavailable("the export was recorded but could not be queued; make it again")
        })?;
    Ok(ExportView::of(job, None))
}

impl Job for ExportJob {
    const WHAT: &'static str = "export";
    fn key_of(workspace: WorkspaceId, id: &str) -> crate::store::Key {
        keys::bulk_export(workspace, id)
    }
    fn object(&self) -> Object {
        self.object
    }
}

/// `GET /v3/exports/{id}`: a fresh download URL once done.
pub async fn get(
    store: &dyn Store,
    files: &dyn Files,
    caller: &Caller,
    id: &str,
) -> ApiResult<ExportView> {
    let job: ExportJob = read(store, caller, id).await?;
    let url = match job.status {
        JobStatus::Done => {
            let filename = format!(
                "{}-{}.{}",
                job.object.name(),
                job.id.to_lowercase(),
                job.format.extension()
            );
            Some(files.download_url(&job.file, &filename).await?)
        }
        _ => None,
    };
    Ok(ExportView::of(job, url))
}

/// Writes the export's file from the first record (a run that stopped
/// starts it over: the file appears only once finished). Safe to run again.
pub async fn process(
    store: &dyn Store,
    files: &dyn Files,
    ws: WorkspaceId,
    id: &str,
) -> ApiResult<ExportJob> {
    let key = keys::bulk_export(ws, id);
    let mut job: ExportJob = record::find(store, &key, true, "export").await?;
    if job.status.is_final() {
        return Ok(job);
    }
    let caller = Caller::new(
        Identity {
            workspace_id: ws,
            token_id: format!("export:{}", job.id),
            scopes: vec![Scope::Read(job.object.resource())],
            expires_at: None,
        },
        job.id.clone(),
    );
    let version = job.version;
    job.status = JobStatus::Running;
    job.times.started_at = Some(ids::now());
    job.records = 0;
    job.bytes = 0;
    job.version += 1;
    if !save_progress(store, &job, version, Vec::new()).await? {
        return record::find(store, &key, true, "export").await;
    }
    let mut out = Out::new(job.format, job.object, files.create(&job.file).await?);
    // A list kept over shards is walked one shard after the other: order in
    // a file does not matter, memory stays one page.
    let (partitions, kind) = match job.object {
        Object::Contacts => (keys::contact_partitions(ws), contacts::Contact::TYPE),
        Object::Deals => (keys::deal_partitions(ws), deals::Deal::TYPE),
        Object::Tags => (keys::tags(ws), tags::Tag::TYPE),
        Object::Products => (keys::products(ws), products::Product::TYPE),
    };
    let mut partitions = partitions.into_iter();
    let mut query = Query::new(
        Index::TABLE,
        partitions.next().unwrap_or_default(),
        SkRange::All,
    );
    query.limit = Some(PAGE);
    let mut pages = 0u64;
    loop {
        let page = store.query(&query).await?;
        for item in page.items {
            if item.get(TYPE).and_then(Value::as_str) != Some(kind) || !job.filters.keeps(&item) {
                continue;
            }
            out.write(view_of(job.object, item)?).await?;
            job.records += 1;
        }
        pages += 1;
        if pages.is_multiple_of(PROGRESS_PAGES) {
            let version = job.version;
            job.bytes = out.size;
            job.version += 1;
            if !save_progress(store, &job, version, Vec::new()).await? {
                // Canceled meanwhile, or another run of it: that one goes on.
                return record::find(store, &key, true, "export").await;
            }
        }
        match page.last_key {
            Some(last) => query.start_after = Some(last),
            None => match partitions.next() {
                Some(next) => {
                    query.pk = next;
                    query.start_after = None;
                }
                None => break,
            },
        }
    }
    job.bytes = out.finish().await?;
    let version = job.version;
    job.status = JobStatus::Done;
    job.times.finished_at = Some(ids::now());
    job.stamps.touch();
    job.version += 1;
    match commit_status(store, &caller, &job, version, "export.complete", &job.id).await {
        Err(e) if record::changed_meanwhile(&e) => record::find(store, &key, true, "export").await,
        Err(e) => Err(e),
        Ok(()) => Ok(job),
    }
}

/// A stored record as the API's `/v3` view shows it.
fn view_of(object: Object, item: Item) -> ApiResult<Value> {
    fn view<R: Record, V: Serialize + From<R>>(item: Item) -> ApiResult<Value> {
        let record: R = record::from_item(item)?;
        serde_json::to_value(V::from(record)).map_err(ApiError::internal)
    }
    match object {
        Object::Contacts => view::<contacts::Contact, contacts::ContactV3>(item),
        Object::Deals => view::<deals::Deal, deals::DealView>(item),
        Object::Tags => view::<tags::Tag, tags::TagV3>(item),
        Object::Products => view::<products::Product, products::ProductView>(item),
    }
}

/// The columns of a CSV export: the view's fields, `id` first.
fn columns(object: Object) -> Vec<String> {
    let schema = match object {
        Object::Contacts => schemars::schema_for!(contacts::ContactV3),
        Object::Deals => schemars::schema_for!(deals::DealView),
        Object::Tags => schemars::schema_for!(tags::TagV3),
        Object::Products => schemars::schema_for!(products::ProductView),
    };
    let schema = serde_json::to_value(schema).unwrap_or_default();
    let mut columns: Vec<String> = schema["properties"]
        .as_object()
        .map(|p| p.keys().cloned().collect())
        .unwrap_or_default();
    columns.sort_by_key(|c| (c != "id", c.clone()));
    columns
}

/// The file being written: rows buffered into blocks of 256 KB.
struct Out {
    format: Format,
    columns: Vec<String>,
    writer: Box<dyn FileWriter>,
    buffer: Vec<u8>,
    size: u64,
    started: bool,
}

impl Out {
    fn new(format: Format, object: Object, writer: Box<dyn FileWriter>) -> Self {
        Self {
            format,
            columns: columns(object),
            writer,
            buffer: Vec::with_capacity(256 * 1024),
            size: 0,
            started: false,
        }
    }

    async fn write(&mut self, view: Value) -> ApiResult<()> {
        match self.format {
            Format::Jsonl => {
                serde_json::to_writer(&mut self.buffer, &view).map_err(ApiError::internal)?;
                self.buffer.push(b'\n');
            }
            Format::Csv => {
                let mut csv = csv::Writer::from_writer(Vec::new());
                if !self.started {
                    csv.write_record(&self.columns)
                        .map_err(ApiError::internal)?;
                    self.started = true;
                }
                let cells = self.columns.iter().map(|c| match &view[c.as_str()] {
                    Value::Null => String::new(),
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                });
                csv.write_record(cells).map_err(ApiError::internal)?;
                let bytes = csv.into_inner().map_err(ApiError::internal)?;
                self.buffer.extend_from_slice(&bytes);
            }
        }
        if self.buffer.len() >= 256 * 1024 {
            self.flush().await?;
        }
        Ok(())
    }

    async fn flush(&mut self) -> ApiResult<()> {
        self.size += self.buffer.len() as u64;
        self.writer.write(&self.buffer).await?;
        self.buffer.clear();
        Ok(())
    }

    async fn finish(mut self) -> ApiResult<u64> {
        if self.format == Format::Csv && !self.started {
            let mut csv = csv::Writer::from_writer(Vec::new());
            csv.write_record(&self.columns)
                .map_err(ApiError::internal)?;
            self.buffer
                .extend_from_slice(&csv.into_inner().map_err(ApiError::internal)?);
        }
        self.flush().await?;
        Ok(self.writer.finish().await?)
    }
}
