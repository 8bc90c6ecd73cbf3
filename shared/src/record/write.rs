//! Writes built on [`Mutation`]: a record an operator loads, and a create
//! that draws fresh ids until one is free.

use super::mutation::{CommitError, Mutation, changed_meanwhile};
use super::{Versioned, get};
use crate::auth::Caller;
use crate::error::{ApiError, ApiResult};
use crate::ids;
use crate::keys;
use crate::store::{Key, Store};

/// Loads a record an operator brings in (`crm load`). `build` makes the record
/// from the stored one, if any, so that `createdAt` stays. A new record is
/// created (moving its list's counter, when it has one); a changed one is
/// written over the stored one; an unchanged one writes nothing.
pub async fn upsert<R: Versioned + Clone>(
    store: &dyn Store,
    caller: &Caller,
    key: &Key,
    build: impl FnOnce(Option<R>) -> R,
    counter: Option<keys::Counter>,
    action: &str,
) -> ApiResult<R> {
    let current: Option<R> = get(store, key, true).await?;
    let mut next = build(current.clone());
    let mut m = Mutation::new(caller);
    match &current {
        Some(stored) => {
            if !m.update(stored, &mut next)? {
                return Ok(next);
            }
        }
        None => {
            next.set_version(1);
            m.create(&next)?;
            if let Some(counter) = &counter {
                m.count_list(counter, 1);
            }
        }
    }
    let resource = R::TYPE.to_owned();
    m.commit(store, action, &resource, &key.sk).await?;
    Ok(next)
}

/// Runs `attempt` with fresh ids until one is free (a clash needs two processes in
/// one millisecond drawing the same 12 bits; three clashes in a row is a bug).
pub async fn with_fresh_id<T, F, Fut>(mut attempt: F) -> ApiResult<T>
where
    F: FnMut(u64) -> Fut,
    Fut: std::future::Future<Output = Result<T, CommitError>>,
{
    for _ in 0..3 {
        match attempt(ids::new_id()).await {
            Ok(value) => return Ok(value),
            Err(CommitError::IdTaken) => continue,
            Err(CommitError::Api(e)) => return Err(e),
        }
    }
    Err(ApiError::internal("three id clashes in a row"))
}

impl From<CommitError> for ApiError {
    fn from(e: CommitError) -> Self {
        match e {
            CommitError::IdTaken => ApiError::internal("id clash on a record that is not new"),
            CommitError::Api(e) => e,
        }
    }
}

/// Runs `step` again when what it writes changed under it (a concurrent
/// change, or another run of the same job), after a growing pause.
pub async fn retrying<F, Fut>(mut step: F) -> ApiResult<()>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = ApiResult<()>>,
{
    let mut last = None;
    for attempt in 0..6 {
        super::pause_before(attempt).await;
        match step().await {
            Err(e) if changed_meanwhile(&e) => last = Some(e),
            done => return done,
        }
    }
    Err(last.unwrap_or_else(|| ApiError::conflict("a record kept changing; retry")))
}
