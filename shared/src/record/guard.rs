//! What the request's scope adds to each of its commits, in the same
//! transaction (an `Idempotency-Key`'s record: `crate::idempotency`). This
//! layer runs the hook and does not name who installs it.

use std::future::Future;
use std::sync::Arc;

use crate::error::{ApiError, ApiResult};
use crate::store::Write;

/// A guard of the commits of one request.
pub trait Guard: Send + Sync {
    /// The write to add to the commit of `resource_id`.
    fn guard(&self, resource_id: &str) -> ApiResult<Guarded>;
}

/// A guard's write for one commit: `write` goes into the transaction;
/// `lost` answers its failed condition; `pending` is told how the commit
/// went (and, never told, stands for a commit that may have landed).
pub struct Guarded {
    pub write: Write,
    pub lost: ApiError,
    pub pending: Box<dyn Pending>,
}

/// How a guarded commit went.
pub trait Pending: Send {
    /// It landed.
    fn landed(self: Box<Self>);
    /// It wrote nothing.
    fn failed(self: Box<Self>);
}

tokio::task_local! {
    static GUARD: Arc<dyn Guard>;
}

/// Runs `f` with `guard` on every commit it makes.
pub async fn guarded<F: Future>(guard: Arc<dyn Guard>, f: F) -> F::Output {
    GUARD.scope(guard, f).await
}

/// The current request's guard for the commit of `resource_id`, if it has one.
pub(super) fn current(resource_id: &str) -> Option<ApiResult<Guarded>> {
    GUARD.try_with(|g| g.guard(resource_id)).ok()
}
