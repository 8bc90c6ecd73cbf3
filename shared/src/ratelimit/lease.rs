//! Leases: what an instance takes of its buckets at once. What it holds
//! serves first; the buckets it lacks are read in one BatchGetItem (with the
//! workspace's own limits) and each written by one conditional put, side by
//! side, so a lease costs two round trips whatever the number of buckets.

use futures_util::future::join_all;
use serde_json::json;

use super::{
    LEASE, LEASE_TIME_US, Lease, Limiter, Limits, MAX_LEASE, Policy, StoredLimits, now_us,
};
use crate::ids::WorkspaceId;
use crate::keys;
use crate::store::{Condition, Key, Store, StoreError, Write};

/// Where a request stands in one bucket after taking from it.
#[derive(Debug, Clone, Copy)]
pub(super) struct Taken {
    pub policy: Policy,
    pub tat: i64,
    pub held: u32,
    /// Requests the bucket lacks (0: taken).
    pub short: u32,
}

/// A bucket to lease, and what this instance still holds of it.
pub(super) struct Want {
    pub key: Key,
    pub per_token: bool,
    pub kept: u32,
}

/// `cost` more requests for a request that took `already`, within a bucket
/// of `quota`: a request never takes more than a whole bucket.
fn within(quota: u32, (cost, already): (u32, u32)) -> u32 {
    cost.min(quota.saturating_sub(already))
}

impl Limiter {
    /// Takes from this instance's lease of `key` when it holds enough;
    /// otherwise what it still holds (kept when leasing more).
    pub(super) fn take_held(&self, key: &Key, cost: (u32, u32), now: i64) -> Result<Taken, u32> {
        let mut leases = self.local.lock().unwrap_or_else(|e| e.into_inner());
        let Some(lease) = leases.get_mut(key).filter(|l| now < l.until) else {
            return Err(0);
        };
        let cost = within(lease.policy.quota, cost);
        if lease.held < cost {
            return Err(lease.held);
        }
        lease.held -= cost;
        Ok(Taken {
            policy: lease.policy,
            tat: lease.tat,
            held: lease.held,
            short: 0,
        })
    }

    /// Leases `wants` (answered in their order). When one bucket lacks what
    /// the request needs, nothing is written and the request is refused.
    pub(super) async fn lease(
        &self,
        store: &dyn Store,
        ws: WorkspaceId,
        wants: &[Want],
        defaults: Limits,
        cost: (u32, u32),
    ) -> Result<Vec<Taken>, StoreError> {
        let mut taken: Vec<Option<Taken>> = vec![None; wants.len()];
        let mut pending: Vec<usize> = (0..wants.len()).collect();
        for _ in 0..4 {
            let mut read: Vec<Key> = pending.iter().map(|&i| wants[i].key.clone()).collect();
            read.push(keys::rate_limits(ws));
            let items = store.batch_get(&read).await?;
            let limits = items
                .iter()
                .find(|item| Key::of(item).as_ref() == read.last())
                .and_then(|item| serde_json::from_value::<StoredLimits>(item.clone().into()).ok())
                .map_or(defaults, |stored| stored.limits);
            let now = now_us();
            let mut writes = Vec::new();
            let mut refused = false;
            for &i in &pending {
                let want = &wants[i];
                let stored = items
                    .iter()
                    .find(|item| Key::of(item).as_ref() == Some(&want.key));
                let tat = stored.and_then(|item| item.get("tat")?.as_i64());
                let version = stored.and_then(|item| item.get("version")?.as_u64());
                let policy = if want.per_token {
                    limits.token
                } else {
                    limits.workspace
                };
                let base = tat.unwrap_or(now).max(now);
                let cost = within(policy.quota, cost);
                let wanted = cost.saturating_sub(want.kept);
                let free = policy.left(base, now);
                let standing = |held, short| Taken {
                    policy,
                    tat: base,
                    held,
                    short,
                };
                if wanted == 0 {
                    // Nothing to take (a batch whose first request took the
                    // whole bucket): where it stands, without a write.
                    taken[i] = Some(standing(want.kept - cost, 0));
                } else if free < wanted {
                    taken[i] = Some(standing(0, wanted));
                    refused = true;
                } else {
                    taken[i] = Some(standing(want.kept, 0)); // until written
                    let took = free.min((policy.quota / 20).clamp(LEASE, MAX_LEASE).max(wanted));
                    let tat = base + (f64::from(took) * policy.interval_us()).ceil() as i64;
                    let item = json!({
                        "pk": want.key.pk, "sk": want.key.sk, "_type": "RateBucket",
                        "tat": tat, "version": version.unwrap_or(0) + 1,
                        "ttl": tat / 1_000_000 + i64::from(policy.window_seconds) + 60,
                    });
                    let lease = Lease {
                        policy,
                        tat,
                        held: want.kept + took - cost,
                        until: now + LEASE_TIME_US,
                    };
                    let write = Write::Put {
                        item: item.as_object().cloned().unwrap_or_default(),
                        condition: Some(match version {
                            Some(v) => Condition::VersionIs(v),
                            None => Condition::NotExists,
                        }),
                    };
                    writes.push((i, lease, write));
                }
            }
            if refused {
                // A refused request takes nothing.
                return Ok(taken.into_iter().flatten().collect());
            }
            let results = join_all(
                writes
                    .iter()
                    .map(|(.., write)| store.write(vec![write.clone()])),
            )
            .await;
            pending.clear();
            for ((i, lease, _), result) in writes.into_iter().zip(results) {
                match result {
                    Ok(()) => {
                        taken[i] = Some(Taken {
                            policy: lease.policy,
                            tat: lease.tat,
                            held: lease.held,
                            short: 0,
                        });
                        let mut leases = self.local.lock().unwrap_or_else(|e| e.into_inner());
                        leases.insert(wants[i].key.clone(), lease);
                    }
                    // Another instance leased first: read it again.
                    Err(StoreError::ConditionFailed { .. }) => pending.push(i),
                    Err(e) => return Err(e),
                }
            }
            if pending.is_empty() {
                break;
            }
        }
        if !pending.is_empty() {
            return Err(StoreError::Unavailable(
                "the bucket kept changing under the lease".into(),
            ));
        }
        Ok(taken.into_iter().flatten().collect())
    }
}
