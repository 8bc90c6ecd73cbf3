//! The worker side of an import: creates the contacts whose phone is new, in
//! batched transactions, and finishes the job. Safe to run again.

use std::collections::{HashMap, HashSet};

use serde_json::Value;

use super::{Chunk, ImportJob, JobStatus, Pending};
use crate::auth::{Caller, Identity};
use crate::domain::contacts::{self, Contact, ContactFields};
use crate::error::{ApiError, ApiResult};
use crate::ids;
use crate::ids::WorkspaceId;
use crate::keys;
use crate::page::read_up_to;
use crate::record::{self, CommitError, Mutation, Stamps};
use crate::store::{Index, Key, MAX_BATCH_GET, MAX_TRANSACTION_ITEMS, Query, SK, SkRange, Store};

/// Runs a job: creates the contacts whose phone is new. Safe to run again.
pub async fn process(store: &dyn Store, ws: WorkspaceId, job_id: &str) -> ApiResult<ImportJob> {
    let mut job: ImportJob =
        record::find(store, &keys::import_job(ws, job_id), true, "import job").await?;
    if job.status == JobStatus::Done {
        return Ok(job);
    }
    // The worker acts as the job: audit entries and phone sentinels name it.
    let worker = Identity {
        workspace_id: ws,
        token_id: format!("import:{}", job.id),
        scopes: Vec::new(),
        expires_at: None,
    };
    let caller = Caller::new(worker.clone(), job.id.clone());

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
        Some(by) if *by == worker.token_id => {
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
    // of each commit, the contacts counter and two rollup counters of the day,
    // take six items).
    let budget = MAX_TRANSACTION_ITEMS - 6;
    let mut batch: Vec<Contact> = Vec::new();
    let mut items = 0;
    let mut batches = Vec::new();
    for p in unique {
        let contact = new_contact(ws, p);
        // The contact, its phone's sentinel, its event, its index items.
        let cost = 3 + contacts::index_item_count(&contact);
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
        // The rows were for this run: kept no longer than needed (personal
        // data, which an erasure would otherwise have to find).
        for n in 0..job.chunks as usize {
            m.remove(keys::import_chunk(ws, job_id, n));
        }
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

fn new_contact(workspace_id: WorkspaceId, p: Pending) -> Contact {
    let fields = ContactFields {
        name: p.name,
        email: p.email,
        phone: Some(p.phone),
        custom_fields: p.custom_fields,
        is_imported: true,
        ..ContactFields::default()
    };
    // The id is given when written.
    Contact::new(0, workspace_id, fields, Stamps::new())
}

/// Who holds each of these phones: BatchGetItem of their sentinels, 100 at a time.
async fn claimants<'a>(
    store: &dyn Store,
    ws: WorkspaceId,
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
                .get(record::CLAIMED_BY)
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
        m.count_list(
            &keys::counter(caller.workspace_id, contacts::LIST),
            batch.len() as i64,
        );
        match m
            .commit(store, "contact.import", "contactImport", &caller.request_id)
            .await
        {
            Ok(()) => return Ok((created + batch.len() as u32, ignored)),
            Err(CommitError::IdTaken) => continue,
            Err(CommitError::Api(e)) if e.status == http::StatusCode::CONFLICT => {
                let worker = caller.token_id().await?;
                let claimed = claimants(
                    store,
                    caller.workspace_id,
                    batch.iter().filter_map(|c| c.fields.phone.as_deref()),
                )
                .await?;
                batch.retain(|c| {
                    match claimed.get(c.fields.phone.as_deref().unwrap_or_default()) {
                        Some(by) if by == worker => {
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
