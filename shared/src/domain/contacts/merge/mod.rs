//! Merging contacts: `POST /v3/contacts/{id}/merge` with `{ "ids": [...] }`
//! moves everything of those contacts to contact `id`, the survivor.
//!
//! A merge is a job (`W#<ws>#MERGE`, `<ulid>`) made of steps, each one
//! transaction that moves one record: a deal (its copy of the contact and its
//! contact index), a session, a conversation (and its last-session items),
//! and last, per merged contact, the contact itself: its fields fill the
//! survivor's empty ones, its organizations and phone move, its record and
//! index items go, and a pointer answers its id with the survivor. A step
//! reads what it moves again and leaves what moved already, so a run may stop
//! anywhere (a crash, a timeout) and the next one finishes: nothing is ever
//! half-moved, and what is left is found again by the same index queries.
//!
//! The request runs up to [`INLINE_MOVES`] steps itself and answers the
//! finished job (200); a larger merge answers 202 and goes on in the
//! background. A message sent before the first step, due a little later,
//! finishes a merge whose request died on the way.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use validator::Validate;

mod steps;

use super::record::Contact;
use super::write::{erased, read};
use crate::auth::Caller;
use crate::domain::batch::RecordId;
use crate::error::{ApiError, ApiResult};
use crate::ids::{self, WorkspaceId};
use crate::keys;
use crate::queue::{JobMessage, JobQueue};
use crate::record::{self, Mutation, Personal, Record, Stamps, changed_meanwhile, retrying};
use crate::store::Store;
use steps::{absorb, left_to_move};

pub const KIND: &str = "contactMerge";

/// The steps a request makes itself before leaving the rest to the background.
pub const INLINE_MOVES: u32 = 25;

/// When the safety message of a merge is due: after its request's own steps.
const SAFETY_DELAY: Duration = Duration::from_secs(60);

#[derive(Debug, Deserialize, Validate, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MergeRequest {
    /// The contacts merged into this one (1 to 10, each once).
    #[validate(length(min = 1, max = 10))]
    pub ids: Vec<RecordId>,
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum MergeStatus {
    Running,
    Done,
    /// Stopped: the contact merged into was erased, or merged into one of
    /// the contacts merged (`error` says which); what moved stays moved.
    Failed,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct MergeJob {
    pub id: String,
    pub workspace_id: WorkspaceId,
    pub survivor_id: u64,
    pub merged_ids: Vec<u64>,
    pub status: MergeStatus,
    /// Records moved (deals, sessions, conversations, contacts); a step that
    /// two runs made at once counts once per run.
    pub moved: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    #[serde(flatten)]
    pub stamps: Stamps,
    pub version: u64,
}

impl Record for MergeJob {
    const TYPE: &'static str = "ContactMerge";
    const PERSONAL: Personal = Personal::none(&["id", "status"]);
    fn key(&self) -> crate::store::Key {
        keys::contact_merge(self.workspace_id, &self.id)
    }
}

crate::versioned!(MergeJob);

/// A merge as the API shows it.
#[derive(Debug, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MergeView {
    pub id: String,
    /// `running` until every record moved, then `done`.
    pub status: MergeStatus,
    /// The contact merged into.
    pub survivor_id: String,
    /// The contacts merged: their ids now answer the survivor.
    pub merged_ids: Vec<String>,
    pub moved: u32,
    /// Why a `failed` merge stopped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    #[serde(flatten)]
    pub stamps: Stamps,
}

impl From<MergeJob> for MergeView {
    fn from(j: MergeJob) -> Self {
        Self {
            id: j.id,
            status: j.status,
            survivor_id: j.survivor_id.to_string(),
            merged_ids: j.merged_ids.iter().map(u64::to_string).collect(),
            moved: j.moved,
            error: j.error,
            stamps: j.stamps,
        }
    }
}

/// Records the merge of `request.ids` into `survivor_id`, runs its first
/// steps and answers the job: done, or running on in the background.
pub async fn start(
    store: &dyn Store,
    queue: &dyn JobQueue,
    caller: &Caller,
    survivor_id: u64,
    request: MergeRequest,
) -> ApiResult<MergeJob> {
    let ws = caller.workspace_id;
    let survivor =
        record::find::<Contact>(store, &keys::contact(ws, survivor_id), true, "contact").await?;
    if survivor.erased.is_some() {
        return Err(erased());
    }
    if store
        .get(&keys::contact_merging(ws, survivor.id), true)
        .await?
        .is_some()
    {
        return Err(ApiError::conflict(format!(
            "contact {} is being merged into another; merge into that one",
            survivor.id
        )));
    }
    let mut merged_ids = Vec::with_capacity(request.ids.len());
    for (i, RecordId(id)) in request.ids.iter().enumerate() {
        let field = format!("ids[{i}]");
        if *id == survivor.id {
            return Err(ApiError::field(field, "is the contact merged into"));
        }
        if merged_ids.contains(id) {
            return Err(ApiError::field(field, "names a contact twice"));
        }
        // Each must be a contact of this workspace now (not merged already).
        match record::get::<Contact>(store, &keys::contact(ws, *id), true).await? {
            None => return Err(ApiError::not_found("contact")),
            Some(c) if c.erased.is_some() => return Err(erased()),
            Some(_) => {}
        }
        merged_ids.push(*id);
    }
    let job = MergeJob {
        id: ids::new_ulid(),
        workspace_id: ws,
        survivor_id: survivor.id,
        merged_ids,
        status: MergeStatus::Running,
        moved: 0,
        error: None,
        stamps: Stamps::new(),
        version: 1,
    };
    let mut m = Mutation::new(caller);
    m.create(&job)?;
    // A contact is merged by one job at a time: two merges of one contact
    // into two survivors would split its records.
    for id in &job.merged_ids {
        m.claim(
            keys::contact_merging(ws, *id),
            &job.id,
            ApiError::conflict(format!(
                "contact {id} is being merged already; read it again once that merge is done"
            )),
        );
    }
    m.commit(store, "contactMerge.create", "contactMerge", &job.id)
        .await?;
    let message = JobMessage::new(KIND, ws, job.id.clone());
    send(queue, &message, SAFETY_DELAY).await?;
    let ran = run(store, caller, job, Some(INLINE_MOVES)).await?;
    if ran.status == MergeStatus::Running {
        send(queue, &message, Duration::ZERO).await?;
    }
    Ok(ran)
}

async fn send(queue: &dyn JobQueue, message: &JobMessage, delay: Duration) -> ApiResult<()> {
    queue.send_after(message, delay).await.map_err(|e| {
        tracing::error!(job = %message.job_id, error = %e, "could not queue a merge");
        ApiError::unavailable("the merge was recorded but could not be queued; retry it")
    })
}

/// The merge job `id`.
pub async fn get(store: &dyn Store, caller: &Caller, id: &str) -> ApiResult<MergeJob> {
    if !ids::is_ulid(id) {
        return Err(ApiError::not_found("merge"));
    }
    record::find(
        store,
        &keys::contact_merge(caller.workspace_id, id),
        true,
        "merge",
    )
    .await
}

/// The worker's run of a merge message: every step left, to the end.
pub async fn process(store: &dyn Store, ws: WorkspaceId, id: &str) -> ApiResult<MergeJob> {
    let caller = Caller::system(ws, &format!("merge:{id}"));
    let job: MergeJob = record::find(store, &keys::contact_merge(ws, id), true, "merge").await?;
    run(store, &caller, job, None).await
}

/// Runs the steps of `job` left to do, at most `budget` of them, and records
/// what it did.
async fn run(
    store: &dyn Store,
    caller: &Caller,
    mut job: MergeJob,
    budget: Option<u32>,
) -> ApiResult<MergeJob> {
    if job.status != MergeStatus::Running {
        return Ok(job);
    }
    let ws = caller.workspace_id;
    let mut moved = 0;
    let mut finished = true;
    'merged: for &merged_id in &job.merged_ids {
        loop {
            let left = left_to_move(store, ws, merged_id, true).await?;
            if left.contact.is_none() {
                continue 'merged; // merged in an earlier run
            }
            // The survivor as it is now (merged since into another: that one).
            let survivor = read(store, ws, job.survivor_id, true).await?;
            let stop = if survivor.erased.is_some() {
                Some(format!("contact {} was erased", survivor.id))
            } else if job.merged_ids.contains(&survivor.id) {
                Some(format!(
                    "contact {} was merged into contact {merged_id} meanwhile",
                    job.survivor_id
                ))
            } else {
                None
            };
            if let Some(error) = stop {
                tracing::warn!(job = %job.id, %error, "a merge stopped");
                record_run(
                    store,
                    caller,
                    &mut job,
                    moved,
                    MergeStatus::Failed,
                    Some(error),
                )
                .await?;
                return Ok(job);
            }
            for step in &left.steps {
                if budget.is_some_and(|b| moved >= b) {
                    finished = false;
                    break 'merged;
                }
                retrying(|| step.apply(store, caller, &survivor)).await?;
                moved += 1;
            }
            if left.complete {
                retrying(|| absorb(store, caller, merged_id, job.survivor_id)).await?;
                moved += 1;
                // What named the merged contact while it was absorbed (its id
                // answers the survivor from now on).
                let late = left_to_move(store, ws, merged_id, false).await?;
                for step in &late.steps {
                    retrying(|| step.apply(store, caller, &survivor)).await?;
                    moved += 1;
                }
                continue 'merged;
            }
        }
    }
    let status = if finished {
        MergeStatus::Done
    } else {
        MergeStatus::Running
    };
    record_run(store, caller, &mut job, moved, status, None).await?;
    Ok(job)
}

/// Adds this run's moves to the job, and what became of it: still
/// `running`, `done`, or `failed` with its error (its claims then released:
/// the contacts it had not merged yet are free to be merged again).
async fn record_run(
    store: &dyn Store,
    caller: &Caller,
    job: &mut MergeJob,
    moved: u32,
    status: MergeStatus,
    error: Option<String>,
) -> ApiResult<()> {
    let ws = caller.workspace_id;
    loop {
        let Some(current) = record::get::<MergeJob>(store, &job.key(), true).await? else {
            return Err(ApiError::not_found("merge"));
        };
        let mut next = current.clone();
        next.moved += moved;
        next.status = status;
        next.error.clone_from(&error);
        let mut m = Mutation::new(caller);
        if !m.update(&current, &mut next)? {
            *job = current;
            return Ok(());
        }
        if status == MergeStatus::Failed {
            for id in &next.merged_ids {
                m.remove(keys::contact_merging(ws, *id));
            }
        }
        match m
            .commit(store, "contactMerge.run", "contactMerge", &job.id)
            .await
        {
            Ok(()) => {
                *job = next;
                return Ok(());
            }
            Err(record::CommitError::Api(e)) if changed_meanwhile(&e) => continue,
            Err(e) => return Err(e.into()),
        }
    }
}
