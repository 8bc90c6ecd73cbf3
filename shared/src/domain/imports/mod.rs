//! Contact imports: `POST /v3/contacts/import` validates a batch of up to 500
//! phone-book contacts, records a job with the batch (in chunks, in the same
//! transaction), sends the job id to the queue and answers 201 at once. The
//! worker ([`process`]) creates the contacts whose phone is not registered yet and
//! ignores the others.
//!
//! The worker is idempotent: SQS delivers at least once, so a run may repeat. A
//! finished job is left alone. A phone whose sentinel this job claimed in an
//! earlier, interrupted run counts as created, not as ignored. New contacts are
//! written in transactions of up to ~96 items, never one call per contact.

mod worker;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use validator::Validate;

use crate::auth::Caller;
use crate::error::{ApiError, ApiResult};
use crate::ids;
use crate::ids::WorkspaceId;
use crate::keys;
use crate::queue::{JobMessage, JobQueue};
use crate::record::{self, Mutation, Personal, Record, Stamps};
use crate::store::{Key, Store};

pub use worker::process;

/// The kind of job message of an import.
pub const KIND: &str = "contactImport";

/// The largest batch of one request (the spec).
pub const MAX_BATCH: usize = 500;
/// Chunks of the stored batch stay well under DynamoDB's 400 KB item.
const CHUNK_BYTES: usize = 300 * 1024;

/// One phone-book contact of an import.
#[derive(Debug, Clone, Serialize, Deserialize, Validate, schemars::JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ImportContact {
    #[validate(length(max = 128))]
    pub name: Option<String>,
    #[validate(length(min = 1, max = 100))]
    pub phone: String,
    #[validate(length(max = 128), custom(function = "crate::validate::email"))]
    #[schemars(email)]
    pub email: Option<String>,
    pub custom_fields: Option<Map<String, Value>>,
}

/// `POST /v3/contacts/import`.
#[derive(Debug, Serialize, Deserialize, Validate, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ImportRequest {
    #[validate(length(min = 1, max = 500), nested)]
    pub contacts: Vec<ImportContact>,
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum JobStatus {
    /// Recorded and queued; the worker has not finished it.
    Queued,
    /// Every contact was created or ignored; the counts are final.
    Done,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ImportJob {
    pub id: String,
    pub workspace_id: WorkspaceId,
    pub status: JobStatus,
    /// Contacts in the request.
    pub received: u32,
    /// Contacts this job created.
    pub created: u32,
    /// Contacts whose phone was registered already (or repeated in the batch).
    pub ignored: u32,
    /// Contacts that could not be created, with the reasons in `failures`.
    pub failed: u32,
    #[serde(default)]
    pub failures: Vec<ImportFailure>,
    pub chunks: u32,
    #[serde(flatten)]
    pub stamps: Stamps,
    pub version: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ImportFailure {
    /// Position in the request's `contacts`.
    pub index: u32,
    pub phone: String,
    pub reason: String,
}

impl Record for ImportJob {
    const EVENTS: Option<&'static str> = Some("import");

    fn event_object(&self) -> serde_json::Value {
        crate::record::as_event_object(ImportJobView::from(self.clone()))
    }

    /// The one event of an import a receiver needs: `import.completed`, with its counts.
    fn event_verb(&self, _: Option<&Self>, created: bool) -> &'static str {
        match (created, self.status) {
            (true, _) => "created",
            (false, JobStatus::Done) => "completed",
            (false, JobStatus::Queued) => "updated",
        }
    }
    const TYPE: &'static str = "ImportJob";
    const PERSONAL: Personal = Personal {
        fields: &[],
        copies: &["failures"],
        plain: &["id", "status"],
    };
    fn key(&self) -> Key {
        keys::import_job(self.workspace_id, &self.id)
    }
}

/// A job as the API shows it.
#[derive(Debug, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ImportJobView {
    pub id: String,
    pub workspace_id: WorkspaceId,
    pub status: JobStatus,
    pub received: u32,
    pub created: u32,
    pub ignored: u32,
    pub failed: u32,
    pub failures: Vec<ImportFailure>,
    #[serde(flatten)]
    pub stamps: Stamps,
}

impl From<ImportJob> for ImportJobView {
    fn from(j: ImportJob) -> Self {
        Self {
            id: j.id,
            workspace_id: j.workspace_id,
            status: j.status,
            received: j.received,
            created: j.created,
            ignored: j.ignored,
            failed: j.failed,
            failures: j.failures,
            stamps: j.stamps,
        }
    }
}

/// A validated contact waiting in a chunk: its phone already canonical.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(super) struct Pending {
    index: u32,
    phone: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    email: Option<String>,
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    custom_fields: Map<String, Value>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(super) struct Chunk {
    job_id: String,
    workspace_id: WorkspaceId,
    n: usize,
    #[serde(default)]
    contacts: Vec<Pending>,
}

impl Record for Chunk {
    const TYPE: &'static str = "ImportChunk";
    /// The rows still to create.
    const PERSONAL: Personal = Personal {
        fields: &["contacts"],
        copies: &[],
        plain: &["jobId"],
    };
    fn key(&self) -> Key {
        keys::import_chunk(self.workspace_id, &self.job_id, self.n)
    }
}

/// Validates the batch, records the job with its contacts and queues it.
pub async fn start(
    store: &dyn Store,
    queue: &dyn JobQueue,
    caller: &Caller,
    request: ImportRequest,
) -> ApiResult<ImportJob> {
    let mut pending = Vec::with_capacity(request.contacts.len());
    for (i, c) in request.contacts.into_iter().enumerate() {
        let phone = crate::phone::canonical(&c.phone)
            .map_err(|e| ApiError::field(format!("contacts[{i}].phone"), e.to_string()))?;
        let p = Pending {
            index: i as u32,
            phone,
            name: c
                .name
                .map(|n| n.trim().to_owned())
                .filter(|n| !n.is_empty()),
            email: c
                .email
                .map(|e| e.trim().to_owned())
                .filter(|e| !e.is_empty()),
            custom_fields: c.custom_fields.unwrap_or_default(),
        };
        let size = serde_json::to_string(&p)
            .map(|s| s.len())
            .unwrap_or(usize::MAX);
        if size > CHUNK_BYTES {
            return Err(ApiError::field(
                format!("contacts[{i}]"),
                "is larger than 300 KB",
            ));
        }
        pending.push(p);
    }

    let job_id = ids::new_ulid();
    let mut chunks: Vec<Chunk> = Vec::new();
    let mut size = 0;
    for p in pending {
        let bytes = serde_json::to_string(&p).map(|s| s.len()).unwrap_or(0);
        if chunks.is_empty() || size + bytes > CHUNK_BYTES {
            chunks.push(Chunk {
                job_id: job_id.clone(),
                workspace_id: caller.workspace_id,
                n: chunks.len(),
                contacts: Vec::new(),
            });
            size = 0;
        }
        size += bytes;
        chunks.last_mut().expect("a chunk").contacts.push(p);
    }
    let job = ImportJob {
        id: job_id.clone(),
        workspace_id: caller.workspace_id,
        status: JobStatus::Queued,
        received: chunks.iter().map(|c| c.contacts.len() as u32).sum(),
        created: 0,
        ignored: 0,
        failed: 0,
        failures: Vec::new(),
        chunks: chunks.len() as u32,
        stamps: Stamps::new(),
        version: 1,
    };
    let mut m = Mutation::new(caller);
    m.create(&job)?;
    for chunk in &chunks {
        m.create(chunk)?;
    }
    m.commit(store, "contactImport.create", "contactImport", &job_id)
        .await?;

    let message = JobMessage::new(KIND, caller.workspace_id, job_id.clone());
    queue.send(&message).await.map_err(|e| {
        tracing::error!(job = %job_id, error = %e, "could not queue an import");
        ApiError::unavailable("the import was recorded but could not be queued; retry the request")
    })?;
    Ok(job)
}

pub async fn get(store: &dyn Store, caller: &Caller, job_id: &str) -> ApiResult<ImportJob> {
    if !ids::is_ulid(job_id) {
        return Err(ApiError::not_found("import job"));
    }
    record::find(
        store,
        &keys::import_job(caller.workspace_id, job_id),
        true,
        "import job",
    )
    .await
}

/// The stored items of item_shapes/imports.json read back (domain::item_shapes).
#[cfg(test)]
mod shapes {
    use crate::domain::item_shapes::{round_trip, texts_declared};

    #[test]
    fn import_jobs_and_their_chunks_keep_their_shape() {
        round_trip::<crate::domain::imports::ImportJob>("ImportJob");
        texts_declared::<crate::domain::imports::ImportJob>();
        round_trip::<crate::domain::imports::Chunk>("ImportChunk");
        texts_declared::<crate::domain::imports::Chunk>();
    }
}
