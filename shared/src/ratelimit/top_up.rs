//! Top-ups: a lease running low is topped up on its own task, while it
//! serves on, so that no request of a busy instance waits for a lease's
//! read and put (before, every request of the instance waited for them each
//! time a lease ran out: one `crm serve` GET in five, a Lambda instance's
//! every twentieth request at the default limits).
//!
//! A top-up takes more of the bucket (one read, one conditional put) and
//! gives nothing back: the lease keeps where its requests stand, so the
//! lease that replaces it some day gives back what neither served, exactly
//! as before. It is taken only when this instance wrote the bucket last;
//! otherwise the lease runs out and is replaced as any other, with what it
//! gives back counted against the other instances' leases (`lease.rs`).
//! While it is under way it holds the bucket's claim: a request that finds
//! the lease run out waits for the top-up, as for any lease under way.

use std::sync::Arc;

use super::lease::{limits_in, put, stored_in};
use super::{Claim, Kind, LEASE_TIME_US, Limiter, Limits, now_us};
use crate::ids::{self, WorkspaceId};
use crate::keys;
use crate::store::{Key, SharedStore, StoreError};

impl Limiter {
    /// Tops up this instance's lease of `key` by `by` requests (at most half
    /// of what the bucket has free), on a task of its own; nothing if the
    /// bucket is being leased or topped up already.
    pub(super) fn top_up(
        self: &Arc<Self>,
        store: &SharedStore,
        ws: WorkspaceId,
        (key, kind): (&Key, Kind),
        defaults: Limits,
        by: u32,
    ) {
        {
            let mut leases = self.local.lock().unwrap_or_else(|e| e.into_inner());
            match leases.get_mut(key) {
                Some(lease) if !lease.topping => lease.topping = true,
                _ => return,
            }
        }
        let Ok(claim) = Limiter::claim(Arc::clone(self), std::iter::once(key)) else {
            self.topped(key);
            return;
        };
        let (store, key) = (store.clone(), key.clone());
        // The request's clock, for its task (a test's moves by hand).
        tokio::spawn(ids::with_clock(ids::clock(), async move {
            let result = top_up(&claim, &store, ws, (&key, kind), defaults, by).await;
            if let Err(e) = result {
                tracing::warn!(error = %e, "rate limiter lease not topped up; leased when it runs out");
            }
            claim.limiter.topped(&key);
        }));
    }

    /// The top-up of `key` is over: its lease may be topped up again.
    fn topped(&self, key: &Key) {
        let mut leases = self.local.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(lease) = leases.get_mut(key) {
            lease.topping = false;
        }
    }
}

/// [`Limiter::top_up`]'s task, holding `claim` on the bucket.
async fn top_up(
    claim: &Claim<Arc<Limiter>>,
    store: &SharedStore,
    ws: WorkspaceId,
    (key, kind): (&Key, Kind),
    defaults: Limits,
    by: u32,
) -> Result<(), StoreError> {
    let limiter = &claim.limiter;
    let Some(lease) = limiter
        .local
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .get(key)
        .cloned()
    else {
        return Ok(());
    };
    let read = [key.clone(), keys::rate_limits(ws)];
    let items = store.batch_get(&read).await?;
    let policy = limits_in(&items, read.last(), defaults).of(kind);
    let now = now_us();
    let stored = stored_in(&items, key, Some(lease.seen()), policy, now);
    // Another instance leased since, or the limits changed: the lease is
    // replaced when it runs out, reading them.
    let ours = stored.is_some_and(|s| lease.is(s.version, s.tat));
    if !ours || policy != lease.policy {
        return Ok(());
    }
    let base = lease.tat.max(now);
    let by = by.min(policy.left(base, now).saturating_sub(kind.kept(policy)) / 2);
    if by == 0 {
        return Ok(());
    }
    let topped = super::Lease {
        version: lease.version + 1,
        tat: base + policy.time_of(by),
        ..lease.clone()
    };
    match store
        .write(vec![put(key, &topped, Some(lease.version))])
        .await
    {
        Ok(()) => {}
        // Another instance leased between the read and the put.
        Err(StoreError::ConditionFailed { .. }) => return Ok(()),
        Err(e) => return Err(e),
    }
    let mut leases = limiter.local.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(held) = leases
        .get_mut(key)
        .filter(|held| held.is(lease.version, lease.tat))
    {
        // A lease that lapsed meanwhile serves only the top-up: what it
        // held is given back by the lease that replaces it, as when it
        // lapses (its time lies within the bucket's `tat`). Nor does it
        // serve more than fits between where its requests stand and the
        // bucket's new `tat`: a lease idle for a while holds requests whose
        // time the bucket has refilled already.
        let now = now_us();
        let kept = if now >= held.until { 0 } else { held.held };
        let fits = policy.fits(topped.tat - held.used.max(now));
        held.held = (kept + by).min(fits);
        held.version = topped.version;
        held.tat = topped.tat;
        held.until = now + LEASE_TIME_US;
    }
    Ok(())
}
