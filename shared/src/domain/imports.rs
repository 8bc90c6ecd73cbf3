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

use std::collections::{HashMap, HashSet};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use validator::Validate;

use crate::auth::Caller;
use crate::domain::contacts::{self, Contact, ContactFields};
use crate::error::{ApiError, ApiResult};
use crate::ids;
use crate::keys;
use crate::page::read_up_to;
use crate::queue::{JobMessage, JobQueue};
use crate::record::{self, CommitError, Mutation, Record, Stamps};
use crate::store::{Index, Key, MAX_BATCH_GET, MAX_TRANSACTION_ITEMS, Query, SK, SkRange, Store};

/// The kind of job message of an import.
pub const KIND: &str = "contactImport";

/// The largest batch of one request (the spec).
pub const MAX_BATCH: usize = 500;
/// Chunks of the stored batch stay well under DynamoDB's 400 KB item.
const CHUNK_BYTES: usize = 300 * 1024;

/// One phone-book contact of an import.
#[derive(Debug, Clone, Serialize, Deserialize, Validate)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ImportContact {
    #[validate(length(max = 128))]
    pub name: Option<String>,
    #[validate(length(min = 1, max = 100))]
    pub phone: String,
    #[validate(length(max = 128), email)]
    pub email: Option<String>,
    pub custom_fields: Option<Map<String, Value>>,
}

/// `POST /v3/contacts/import`.
#[derive(Debug, Serialize, Deserialize, Validate)]
#[serde(deny_unknown_fields)]
pub struct ImportRequest {
    #[validate(length(min = 1, max = 500), nested)]
    pub contacts: Vec<ImportContact>,
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum JobStatus {
    /// Recorded and queued; the worker has not finished it.
    Queued,
    /// Every contact was created or ignored; the counts are final.
    Done,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ImportJob {
    pub id: String,
    pub workspace_id: u64,
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

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ImportFailure {
    /// Position in the request's `contacts`.
    pub index: u32,
    pub phone: String,
    pub reason: String,
}

impl Record for ImportJob {
    const TYPE: &'static str = "ImportJob";
    fn key(&self) -> Key {
        keys::import_job(self.workspace_id, &self.id)
    }
}

/// A job as the API shows it.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ImportJobView {
    pub id: String,
    pub workspace_id: u64,
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
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
struct Pending {
    index: u32,
    phone: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    email: Option<String>,
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    custom_fields: Map<String, Value>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
struct Chunk {
    job_id: String,
    workspace_id: u64,
    n: usize,
    contacts: Vec<Pending>,
}

impl Record for Chunk {
    const TYPE: &'static str = "ImportChunk";
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

/// Runs a job: creates the contacts whose phone is new. Safe to run again.
pub async fn process(store: &dyn Store, ws: u64, job_id: &str) -> ApiResult<ImportJob> {
    let mut job: ImportJob =
        record::find(store, &keys::import_job(ws, job_id), true, "import job").await?;
    if job.status == JobStatus::Done {
        return Ok(job);
    }
    // The worker acts as the job: audit entries and phone sentinels name it.
    let caller = Caller {
        workspace_id: ws,
        token_id: format!("import:{}", job.id),
        scopes: Vec::new(),
        request_id: job.id.clone(),
    };

    let query = Query::new(
        Index::TABLE,
        keys::import_chunks(ws, &job.id),
        SkRange::Prefix("CHUNK#".into()),
    );
    let mut pending: Vec<Pending> = Vec::new();
    for item in read_up_to(store, query, job.chunks as usize).await? {
        let chunk: Chunk = record::from_item(item)?;
        pending.extend(chunk.contacts);
    }
    pending.sort_by_key(|p| p.index);

    // A phone repeated in the batch is created once; the repeats are ignored.
    let mut seen = HashSet::new();
    let (mut unique, repeats): (Vec<Pending>, Vec<Pending>) = pending
        .into_iter()
        .partition(|p| seen.insert(p.phone.clone()));
    let mut created = 0u32;
    let mut ignored = repeats.len() as u32;

    // Phones registered already: by another contact (ignored) or by this job before.
    let claimed = claimants(store, ws, unique.iter().map(|p| p.phone.as_str())).await?;
    unique.retain(|p| match claimed.get(&p.phone) {
        Some(by) if *by == caller.token_id => {
            created += 1;
            false
        }
        Some(_) => {
            ignored += 1;
            false
        }
        None => true,
    });

    // Pack the new contacts into transactions (the audit entry and two counters
    // of each commit, and the contacts counter, take four items).
    let budget = MAX_TRANSACTION_ITEMS - 4;
    let mut batch: Vec<Contact> = Vec::new();
    let mut items = 0;
    let mut batches = Vec::new();
    for p in unique {
        let contact = new_contact(ws, p);
        let cost = 2 + contacts::index_item_count(&contact);
        if items + cost > budget && !batch.is_empty() {
            batches.push(std::mem::take(&mut batch));
            items = 0;
        }
        items += cost;
        batch.push(contact);
    }
    if !batch.is_empty() {
        batches.push(batch);
    }
    for batch in batches {
        let (made, skipped) = write_batch(store, &caller, batch).await?;
        created += made;
        ignored += skipped;
    }

    // Record the outcome; a concurrent run of the same job may have done it first.
    loop {
        let version = job.version;
        job.status = JobStatus::Done;
        job.created = created;
        job.ignored = ignored;
        job.stamps.touch();
        job.version = version + 1;
        let mut m = Mutation::new(&caller);
        m.replace(&job, version)?;
        match m
            .commit(store, "contactImport.complete", "contactImport", &job.id)
            .await
        {
            Ok(()) => return Ok(job),
            Err(CommitError::Api(e)) if e.status == http::StatusCode::CONFLICT => {
                job =
                    record::find(store, &keys::import_job(ws, job_id), true, "import job").await?;
                if job.status == JobStatus::Done {
                    return Ok(job);
                }
            }
            Err(e) => return Err(e.into()),
        }
    }
}

fn new_contact(workspace_id: u64, p: Pending) -> Contact {
    Contact {
        id: 0, // given when written
        workspace_id,
        fields: ContactFields {
            name: p.name,
            email: p.email,
            phone: Some(p.phone),
            custom_fields: p.custom_fields,
            is_imported: true,
            ..ContactFields::default()
        },
        stamps: Stamps::new(),
        version: 1,
        organization_ids: Vec::new(),
        main_organization_id: None,
    }
}

/// Who holds each of these phones: BatchGetItem of their sentinels, 100 at a time.
async fn claimants<'a>(
    store: &dyn Store,
    ws: u64,
    phones: impl Iterator<Item = &'a str>,
) -> ApiResult<HashMap<String, String>> {
    let keys: Vec<Key> = phones.map(|p| keys::contact_phone(ws, p)).collect();
    let mut claimed = HashMap::new();
    for chunk in keys.chunks(MAX_BATCH_GET) {
        for item in store.batch_get(chunk).await? {
            let phone = item
                .get(SK)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned();
            let by = item
                .get("claimedBy")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned();
            claimed.insert(phone, by);
        }
    }
    Ok(claimed)
}

/// Writes one transaction of new contacts. A phone claimed meanwhile drops that
/// contact and the rest is tried again: claimed by the API, it is ignored; by a
/// concurrent run of this same job, it is created (by this job).
/// Returns (created, ignored).
async fn write_batch(
    store: &dyn Store,
    caller: &Caller,
    mut batch: Vec<Contact>,
) -> ApiResult<(u32, u32)> {
    let (mut created, mut ignored) = (0, 0);
    for _ in 0..10 {
        if batch.is_empty() {
            return Ok((created, ignored));
        }
        for contact in &mut batch {
            contact.id = ids::new_id();
        }
        let mut m = Mutation::new(caller);
        for contact in &batch {
            contacts::add_contact(&mut m, contact, false)?;
        }
        m.count(
            keys::counter(caller.workspace_id, contacts::LIST),
            batch.len() as i64,
        );
        match m
            .commit(store, "contact.import", "contactImport", &caller.request_id)
            .await
        {
            Ok(()) => return Ok((created + batch.len() as u32, ignored)),
            Err(CommitError::IdTaken) => continue,
            Err(CommitError::Api(e)) if e.status == http::StatusCode::CONFLICT => {
                let claimed = claimants(
                    store,
                    caller.workspace_id,
                    batch.iter().filter_map(|c| c.fields.phone.as_deref()),
                )
                .await?;
                batch.retain(|c| {
                    match claimed.get(c.fields.phone.as_deref().unwrap_or_default()) {
                        Some(by) if *by == caller.token_id => {
                            created += 1;
                            false
                        }
                        Some(_) => {
                            ignored += 1;
                            false
                        }
                        None => true,
                    }
                });
            }
            Err(e) => return Err(e.into()),
        }
    }
    Err(ApiError::unavailable(
        "an import batch kept conflicting; it will be retried",
    ))
}
