//! The write budget: the items a workspace's writes may put a second, API
//! writes and background jobs together (decision 0038). A [`Store`] wrapper,
//! like `auth::Gated`: every write path reaches the table through it, so it
//! counts single commits, a batch's shared commits, imports and job
//! progress alike, exactly.
//!
//! What it counts: items, by the KB (a put `ceil(size / 1 KB)`, one more for
//! its gsi1 entry; a delete, an `ADD` or a check 1), and a transaction at
//! least [`OPERATION_FLOOR`]: every time-ordered family takes at most one
//! item of a transaction, so a budget of `B` items a second bounds each of
//! them at `B / 10` a second, below its partitions' ceiling.
//!
//! At the budget an API write is refused before anything is written (a 429
//! in the error shape, `Retry-After`); a job's write waits for the bucket
//! and goes on ([`AtLimit::Pace`]): imports are paced, never refused, and
//! take only while a fifth of the budget stays free for the API's writes
//! ([`Kind::JobWrites`]). The bucket is the limiter's (leases, GCRA,
//! failing open).

use std::borrow::Cow;
use std::sync::Arc;

use async_trait::async_trait;

use super::{Kind, Limiter};
use crate::error::ApiError;
use crate::keys;
use crate::store::{Item, Key, Metrics, Page, Query, SharedStore, Store, StoreError, Write};

/// What a transaction counts at least: the items an operation's audit
/// entry alone stands for (docs/plans/tenant-write-rate.md §3).
pub const OPERATION_FLOOR: u32 = 10;

/// What a write past the budget meets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AtLimit {
    /// Refused (an API request: the caller retries after `Retry-After`).
    Refuse,
    /// Waits for the bucket, then writes (a job: imports are paced).
    Pace,
}

/// `inner` with every write of a workspace taken from its write budget.
pub struct Budgeted {
    inner: SharedStore,
    limiter: Arc<Limiter>,
    at_limit: AtLimit,
}

impl Budgeted {
    /// The limiter's own bucket writes go to `inner`, not through this.
    pub fn new(inner: SharedStore, limiter: Arc<Limiter>, at_limit: AtLimit) -> Self {
        Self {
            inner,
            limiter,
            at_limit,
        }
    }

    /// `store` for background jobs: paced by the environment's limits
    /// (`CRM_WRITE_BUDGET`), with a limiter of its own, as another instance.
    pub fn paced(store: SharedStore) -> SharedStore {
        Arc::new(Self::new(
            store,
            Arc::new(Limiter::from_env()),
            AtLimit::Pace,
        ))
    }

    /// Takes `transactions`' items of their workspace's budget, waiting or
    /// refusing (the 429) at the limit. Writes that name no workspace are
    /// not counted.
    async fn take(&self, transactions: &[Vec<Cow<'_, Write>>]) -> Result<(), ApiError> {
        if !self.limiter.is_on() {
            return Ok(());
        }
        let Some(ws) = transactions
            .iter()
            .flat_map(|writes| writes.iter())
            .find_map(|write| keys::workspace_of(&write.key()?))
        else {
            return Ok(());
        };
        let items = transactions
            .iter()
            .map(|writes| items_of(writes.iter().map(AsRef::as_ref)))
            .fold(0u32, u32::saturating_add);
        loop {
            let kind = match self.at_limit {
                AtLimit::Refuse => Kind::Writes,
                AtLimit::Pace => Kind::JobWrites,
            };
            let admission = self
                .limiter
                .admit_writes(&self.inner, ws, items, kind)
                .await;
            // Where the budget stands, for the answer's `RateLimit` headers.
            if let Some(standing) = admission.standings.first() {
                crate::context::leave_note(*standing);
            }
            let Some(refusal) = admission.refusal() else {
                return Ok(());
            };
            if self.at_limit == AtLimit::Refuse {
                return Err(refusal);
            }
            // The system's time: a job paced under a test's manual clock
            // would wait for ever.
            let wait = admission.retry_after.unwrap_or(1).max(1);
            tracing::debug!(workspace = ws.0, wait, "write budget reached; paced");
            tokio::time::sleep(std::time::Duration::from_secs(u64::from(wait))).await;
        }
    }
}

/// The items one transaction counts against the budget.
pub fn items_of<'a>(writes: impl Iterator<Item = &'a Write>) -> u32 {
    let items: usize = writes
        .map(|write| match write {
            Write::Put { item, .. } => {
                let indexed = item.contains_key(keys::GSI1.pk);
                crate::store::item_size(item).div_ceil(1024).max(1) + usize::from(indexed)
            }
            Write::Delete { .. } | Write::Check { .. } | Write::Add { .. } => 1,
        })
        .sum();
    u32::try_from(items)
        .unwrap_or(u32::MAX)
        .max(OPERATION_FLOOR)
}

#[async_trait]
impl Store for Budgeted {
    async fn get(&self, key: &Key, consistent: bool) -> Result<Option<Item>, StoreError> {
        self.inner.get(key, consistent).await
    }

    async fn batch_get(&self, keys: &[Key]) -> Result<Vec<Item>, StoreError> {
        self.inner.batch_get(keys).await
    }

    async fn query(&self, query: &Query) -> Result<Page, StoreError> {
        self.inner.query(query).await
    }

    async fn write(&self, writes: Vec<Write>) -> Result<(), StoreError> {
        self.take(&[writes.iter().map(Cow::Borrowed).collect()])
            .await
            .map_err(|refusal| StoreError::Refused(Box::new(refusal)))?;
        self.inner.write(writes).await
    }

    async fn write_all(&self, transactions: &[Vec<Cow<'_, Write>>]) -> Vec<Result<(), StoreError>> {
        if let Err(refusal) = self.take(transactions).await {
            let refused = || StoreError::Refused(Box::new(refusal.clone()));
            return transactions.iter().map(|_| Err(refused())).collect();
        }
        self.inner.write_all(transactions).await
    }

    async fn purge(&self) -> Result<(), StoreError> {
        self.inner.purge().await
    }

    fn metrics(&self) -> &Metrics {
        self.inner.metrics()
    }

    fn backend(&self) -> &'static str {
        self.inner.backend()
    }
}
