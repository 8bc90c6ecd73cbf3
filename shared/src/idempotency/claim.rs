//! The claim of the request being served: the commits below it carry it
//! ([`guard`]), and its answer is kept when it ends ([`finish`]).

use std::sync::{Arc, Mutex, MutexGuard};

use super::{IdempotencyRecord, ReadBack, Sealer, State, marks};
use crate::error::{ApiError, ApiResult};
use crate::record::{self, Record};
use crate::store::{Condition, Store, StoreError, Write};

/// Where a route's answer is read again, with the request's own path
/// parameters filled in; `{id}` is the id of the record its first commit makes.
#[derive(Debug, Clone)]
pub struct ReadBackRule {
    pub path: String,
    pub status: u16,
    pub headers: Vec<(String, String)>,
}

impl ReadBackRule {
    fn at(&self, resource_id: &str) -> ReadBack {
        ReadBack {
            path: self.path.replace("{id}", resource_id),
            status: self.status,
            headers: self.headers.clone(),
        }
    }
}

/// A claim held by the request being served (shared with the commits below it).
#[derive(Clone)]
pub struct Claim(Arc<Mutex<Held>>);

struct Held {
    /// The record as this request last wrote it.
    record: IdempotencyRecord,
    rule: Option<ReadBackRule>,
    /// What seals its answer for the token that sent the key.
    sealer: Sealer,
    /// The record as a commit that is under way, or whose outcome the store
    /// could not learn, would have left it: that commit may have landed.
    unsure: Option<IdempotencyRecord>,
}

impl Claim {
    pub(super) fn new(
        record: IdempotencyRecord,
        rule: Option<ReadBackRule>,
        sealer: Sealer,
    ) -> Self {
        Self(Arc::new(Mutex::new(Held {
            record,
            rule,
            sealer,
            unsure: None,
        })))
    }

    fn held(&self) -> MutexGuard<'_, Held> {
        self.0.lock().expect("claim lock")
    }

    /// Whether a write of the request has committed.
    pub fn applied(&self) -> bool {
        self.held().record.state != State::Running
    }
}

/// Runs `f` (the handler) under `claim`: its commits carry the claim.
pub async fn scope<F: std::future::Future>(claim: Claim, f: F) -> F::Output {
    record::guard::guarded(Arc::new(claim), f).await
}

/// Every commit of the request moves the key's record to `applied`, in its
/// own transaction, on the condition that the claim still holds. The first
/// keeps where the answer is read again. Until the commit is told to have
/// landed or failed, it counts as one that may have landed.
impl record::guard::Guard for Claim {
    fn guard(&self, resource_id: &str) -> ApiResult<record::guard::Guarded> {
        let mut held = self.held();
        let mut next = held.record.clone();
        next.version += 1;
        next.state = State::Applied;
        if next.read_back.is_none() {
            next.read_back = held.rule.as_ref().map(|rule| rule.at(resource_id));
        }
        let write = Write::Put {
            item: record::to_item(&next)?,
            condition: Some(Condition::VersionIs(held.record.version)),
        };
        held.unsure = Some(next);
        Ok(record::guard::Guarded {
            write,
            lost: lost_claim(),
            pending: Box::new(Guard {
                claim: self.clone(),
            }),
        })
    }
}

/// The claim's part of one commit, told how the commit went.
struct Guard {
    claim: Claim,
}

impl record::guard::Pending for Guard {
    fn landed(self: Box<Self>) {
        let mut held = self.claim.held();
        if let Some(next) = held.unsure.take() {
            held.record = next;
        }
    }

    fn failed(self: Box<Self>) {
        self.claim.held().unsure = None;
    }
}

/// The error of a transaction whose guard failed: the claim was taken over.
fn lost_claim() -> ApiError {
    ApiError::conflict("the Idempotency-Key of this request was taken over by a retry")
}

/// The answer of a request stopped at [`super::DEADLINE`].
pub fn stopped() -> ApiError {
    ApiError::unavailable(format!(
        "the request took longer than {} s and was stopped; a retry with the same \
         Idempotency-Key is safe (without a key, read before you retry)",
        super::DEADLINE.as_secs()
    ))
}

/// Keeps the answer of the request that held `claim`, or gives the claim
/// back when the request wrote nothing. A failure here is logged: the
/// request's own answer stands, and the lease settles the key later.
///
/// | the request | the record becomes |
/// |---|---|
/// | wrote, its answer fits | done, with the answer (sealed, marked) |
/// | wrote, its answer does not fit | done, to be read back |
/// | its last commit's outcome is unknown | done, to be read back, if that commit landed; as if it never ran, if not |
/// | wrote nothing, succeeded | done, with the answer |
/// | wrote nothing, failed (or its answer does not fit) | gone: the key runs again |
/// | wrote nothing, a batch's 207 (an operation failed, none wrote) | gone: the key runs again |
pub async fn finish(
    store: &dyn Store,
    claim: &Claim,
    status: u16,
    headers: Vec<(String, String)>,
    body: Option<String>,
) {
    let (current, unsure, body) = {
        let held = claim.held();
        let ws = held.record.workspace_id;
        // Sealed for the sender, marked for an erasure; an answer that cannot
        // be marked or sealed is not kept (as one too large is not).
        let body = body.and_then(|body| {
            let marks = marks::of_answer(ws, &body)?;
            let sealed = held.sealer.seal(&held.record.key_sha256, body.as_bytes())?;
            Some((sealed, marks))
        });
        (held.record.clone(), held.unsure.clone(), body)
    };
    let applied = current.state != State::Running;
    let settled = if let Some(unsure) = unsure {
        settle(store, &current, &unsure).await
    } else if applied || (200..300).contains(&status) && status != 207 && body.is_some() {
        let done = match body {
            Some((sealed, marks)) => IdempotencyRecord {
                status: Some(status),
                headers,
                sealed: Some(sealed),
                marks,
                ..current.clone()
            },
            None => current.clone(),
        };
        settled_write(store, done_over(&current, done)).await
    } else {
        settled_write(store, given_back(&current)).await
    };
    if let Err(e) = settled {
        tracing::warn!(error = %e, "idempotency record not kept");
    }
}

/// A request whose last commit may have landed: first as if it had not
/// (which fences that commit out for good: its condition is the version
/// written over), and when the record has moved on, as if it had.
async fn settle(
    store: &dyn Store,
    current: &IdempotencyRecord,
    unsure: &IdempotencyRecord,
) -> Result<(), StoreError> {
    let fence = if current.state == State::Running {
        given_back(current)
    } else {
        done_over(current, current.clone())
    };
    match settled_write(store, fence).await {
        Err(StoreError::ConditionFailed { .. }) => {
            settled_write(store, done_over(unsure, unsure.clone())).await
        }
        other => other,
    }
}

/// A write of the key's record after the request's own work, tried again
/// (three times at most) while the store fails: a key left as it is waits
/// for its lease. A condition that fails after an attempt whose outcome was
/// unknown is that attempt's own work: nothing else writes this version.
async fn settled_write(store: &dyn Store, write: Write) -> Result<(), StoreError> {
    let mut unsure = false;
    for attempt in 1..=3u64 {
        match store.write(vec![write.clone()]).await {
            Err(StoreError::ConditionFailed { .. }) if unsure => return Ok(()),
            Err(StoreError::Uncertain(_)) => unsure = true,
            Err(StoreError::Unavailable(_)) => {}
            other => return other,
        }
        tokio::time::sleep(std::time::Duration::from_millis(20 * attempt)).await;
    }
    Err(StoreError::Unavailable(
        "the key's record could not be written".into(),
    ))
}

/// `done` written over `current` as `current` was: the record is over.
fn done_over(current: &IdempotencyRecord, done: IdempotencyRecord) -> Write {
    let done = IdempotencyRecord {
        state: State::Done,
        version: current.version + 1,
        ..done
    };
    match record::to_item(&done) {
        Ok(item) => Write::Put {
            item,
            condition: Some(Condition::VersionIs(current.version)),
        },
        // Not reached: the record is plain data. Giving the key back is safe.
        Err(_) => given_back(current),
    }
}

/// The claim given back: a retry with the key runs.
fn given_back(current: &IdempotencyRecord) -> Write {
    Write::Delete {
        key: current.key(),
        condition: Some(Condition::VersionIs(current.version)),
    }
}

/// After a claim whose outcome the store could not learn: gives it back
/// if it stands (its version is this request's own draw).
pub(super) async fn give_back(store: &dyn Store, claim: &IdempotencyRecord) {
    match settled_write(store, given_back(claim)).await {
        Ok(()) | Err(StoreError::ConditionFailed { .. }) => {}
        Err(e) => tracing::warn!(error = %e, "an unsure claim was not given back"),
    }
}
