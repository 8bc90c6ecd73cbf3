//! Leases: what an instance takes of its buckets at once. What it holds
//! serves first; the buckets it lacks are read in one BatchGetItem (with the
//! workspace's own limits) and each written by one conditional put, side by
//! side, so a lease costs two round trips whatever the number of buckets.
//!
//! A lease costs a token nothing it does not serve: the next lease of the
//! same bucket gives back, in its own put, what the last one took and did
//! not use ([`Back`]). An instance that never leases a bucket again (a
//! Lambda instance reaped) keeps what it holds, so a lease is never larger
//! than what the bucket refills over a lease's life, nor than half of what
//! the bucket has free ([`Policy::lease_size`]).

use std::collections::HashMap;

use futures_util::future::join_all;
use serde_json::json;

use super::{How, Kind, LEASE_TIME_US, Lease, Limiter, Limits, Policy, StoredLimits, now_us};
use crate::ids::WorkspaceId;
use crate::keys;
use crate::store::{Condition, Item, Key, Store, StoreError, Write};

/// Where a request stands in one bucket after taking from it.
#[derive(Debug, Clone, Copy)]
pub(super) struct Taken {
    pub policy: Policy,
    /// Where the bucket stands for this instance (its theoretical arrival
    /// time, GCRA) once the request is taken.
    pub at: i64,
    /// Requests the bucket lacks (0: taken).
    pub short: u32,
}

/// A bucket to lease, and what this instance's last lease of it gives back.
pub(super) struct Want {
    pub key: Key,
    pub kind: Kind,
    pub miss: Miss,
}

/// Why a request is not served from this instance's lease of a bucket: it
/// has none, or it lapsed, or it is short. What that lease gives back, and
/// the bucket as this instance last wrote it.
pub(super) struct Miss {
    /// What the lease did not use, given back by the lease that replaces it
    /// (once).
    pub back: Option<Back>,
    /// The bucket as this instance wrote it: an eventually consistent read
    /// may not show it yet.
    pub seen: Option<Stored>,
    /// Whether this instance never leased the bucket: the one lease whose
    /// write may be sent on rather than waited for ([`super::How`]).
    pub first: bool,
}

/// What a request took of a lease this instance holds: put back when
/// another of its buckets refuses it (a refused request takes nothing).
#[derive(Debug, Clone, Copy)]
pub(super) struct Took {
    version: u64,
    tat: i64,
    cost: u32,
    /// Where the lease's requests stood before this one, and after it.
    before: i64,
    after: i64,
    /// What the lease is to be topped up by, now that it runs low
    /// ([`Limiter::top_up`]).
    pub top_up: Option<u32>,
}

/// A lease being replaced: the bucket as it wrote it (`version`, `tat`,
/// `returned`), where the requests it served stand (`used`), and those it
/// took and did not serve (`held`, and their bucket time, `unused`).
#[derive(Debug, Clone, Copy)]
pub(super) struct Back {
    version: u64,
    tat: i64,
    returned: i64,
    used: i64,
    held: u32,
    unused: i64,
}

/// A bucket as read, or as this instance wrote it.
#[derive(Debug, Clone, Copy)]
pub(super) struct Stored {
    pub version: u64,
    pub tat: i64,
    /// The bucket time all leases have given back so far.
    returned: i64,
}

impl Back {
    /// The bucket time this lease gives back to the bucket `stored`, read
    /// at `now`.
    ///
    /// - Nobody wrote the bucket since: it is set to where the lease's
    ///   requests stand, as if each had been taken on its own. What lies
    ///   between goes back; requests served later than the lease's time
    ///   (an instance serves a lease for up to [`LEASE_TIME_US`]) are taken
    ///   now (a negative credit). One instance alone is thus exactly GCRA.
    /// - Another lease was written after it: its unused requests are the
    ///   last of its time, less what lies behind `now` (the bucket refilled
    ///   that already), less every give-back since, as if each had moved
    ///   this lease earlier. Never more than the bucket still holds of it.
    /// - The bucket was written anew (its item lapsed): it holds none of it.
    fn credit(&self, stored: Option<Stored>, now: i64) -> i64 {
        let Some(stored) = stored else {
            return 0;
        };
        if stored.version == self.version && stored.tat == self.tat {
            return self.tat - self.used.max(now);
        }
        if stored.version < self.version || stored.returned < self.returned {
            return 0;
        }
        let moved = stored.returned - self.returned;
        self.unused.min((self.tat - moved - now).max(0))
    }
}

impl Lease {
    pub(super) fn seen(&self) -> Stored {
        Stored {
            version: self.version,
            tat: self.tat,
            returned: self.returned,
        }
    }

    fn back(&self) -> Back {
        Back {
            version: self.version,
            tat: self.tat,
            returned: self.returned,
            used: self.used,
            held: self.held,
            unused: self.policy.time_of(self.held),
        }
    }

    /// What this lease is to be topped up by when it runs low: a quarter
    /// of a lease left, or a quarter of its life. It is topped up to a lease
    /// and a quarter (a lease at most at once), so that a busy instance
    /// writes once a lease, as before, and no request waits for it. A lease
    /// of fewer than four requests (a slow bucket) is not topped up, nor
    /// one being topped up or whose first write has not landed.
    fn low(&self, now: i64) -> Option<u32> {
        let size = self.policy.lease_size(self.most);
        let quarter = size / 4;
        let low = self.held <= quarter
            || self.until.saturating_sub(now).saturating_mul(4) <= LEASE_TIME_US;
        let free = !self.topping && self.landing.is_none() && self.stands;
        (quarter > 0 && low && free).then(|| (size + quarter).saturating_sub(self.held).min(size))
    }

    pub(super) fn is(&self, version: u64, tat: i64) -> bool {
        self.version == version && self.tat == tat
    }
}

/// `cost` more requests for a request that took `already`, within a bucket
/// of `quota`: a request never takes more than a whole bucket.
fn within(quota: u32, (cost, already): (u32, u32)) -> u32 {
    cost.min(quota.saturating_sub(already))
}

/// The workspace's own limits in a read of its buckets (`key`, the limits'
/// item), or the defaults.
pub(super) fn limits_in(items: &[Item], key: Option<&Key>, defaults: Limits) -> Limits {
    items
        .iter()
        .find(|item| Key::of(item).as_ref() == key)
        .and_then(|item| serde_json::from_value::<StoredLimits>(item.clone().into()).ok())
        .map_or(defaults, |stored| stored.limits)
}

/// The bucket `key` as read in `items`, or as this instance last wrote it
/// (`seen`): an eventually consistent read may not show that write yet, and
/// the bucket stands at least there (while that write is recent: an item
/// past its TTL is gone, and may have been made anew by another instance,
/// from version 1).
pub(super) fn stored_in(
    items: &[Item],
    key: &Key,
    seen: Option<Stored>,
    policy: Policy,
    now: i64,
) -> Option<Stored> {
    let item = items
        .iter()
        .find(|item| Key::of(item).as_ref() == Some(key));
    let tat = item.and_then(|item| item.get("tat")?.as_i64());
    let version = item.and_then(|item| item.get("version")?.as_u64());
    let returned = item
        .and_then(|item| item.get("returned")?.as_i64())
        .unwrap_or(0);
    let found = tat.zip(version).map(|(tat, version)| Stored {
        version,
        tat,
        returned,
    });
    let seen = seen.filter(|seen| now < seen.tat + policy.window_us());
    match (found, seen) {
        (Some(found), Some(seen)) if seen.version > found.version => Some(seen),
        (None, Some(seen)) => Some(seen),
        (found, _) => found,
    }
}

/// `lease`'s put to its bucket `key`, on the condition that the bucket is
/// still at the version `read` (or still absent).
pub(super) fn put(key: &Key, lease: &Lease, read: Option<u64>) -> Write {
    let item = json!({
        "pk": key.pk, "sk": key.sk, "_type": "RateBucket",
        "tat": lease.tat, "version": lease.version, "returned": lease.returned,
        "ttl": lease.tat / 1_000_000 + i64::from(lease.policy.window_seconds) + 60,
    });
    Write::Put {
        item: item.as_object().cloned().unwrap_or_default(),
        condition: Some(match read {
            Some(v) => Condition::VersionIs(v),
            None => Condition::NotExists,
        }),
    }
}

impl Limiter {
    /// Takes from this instance's lease of `key` when it holds enough and
    /// has not lapsed. Otherwise the next lease replaces it, and gives back
    /// what it did not use (once: a request that finds it given back already
    /// leases without it).
    /// `leases` is this instance's, locked: a request takes from all its
    /// buckets under one lock ([`Limiter::take_all_held`]).
    pub(super) fn take_held(
        leases: &mut HashMap<Key, Lease>,
        key: &Key,
        cost: (u32, u32),
        now: i64,
    ) -> Result<(Taken, Took), Miss> {
        let Some(lease) = leases.get_mut(key) else {
            return Err(Miss {
                back: None,
                seen: None,
                first: true,
            });
        };
        let cost = within(lease.policy.quota, cost);
        if now >= lease.until || lease.held < cost {
            // Nothing more is served from it; what it did not use goes back
            // with the lease that replaces it.
            let back = std::mem::take(&mut lease.to_give).then(|| lease.back());
            lease.held = 0;
            let seen = lease.stands.then(|| lease.seen());
            return Err(Miss {
                back,
                seen,
                first: false,
            });
        }
        let before = lease.used;
        lease.held -= cost;
        if cost > 0 {
            lease.used = lease.used.max(now) + lease.policy.time_of(cost);
        }
        let taken = Taken {
            policy: lease.policy,
            at: lease.used,
            short: 0,
        };
        let took = Took {
            version: lease.version,
            tat: lease.tat,
            cost,
            before,
            after: lease.used,
            top_up: lease.low(now),
        };
        Ok((taken, took))
    }

    /// Puts back what `took` took of this instance's lease of `key` (the
    /// request was refused by its other bucket): where its requests stand
    /// is as before, or, when another request was served from it since,
    /// less this request's time.
    pub(super) fn untake(&self, key: &Key, took: Took) -> Option<Taken> {
        let mut leases = self.local.lock().unwrap_or_else(|e| e.into_inner());
        let lease = leases
            .get_mut(key)
            .filter(|lease| lease.is(took.version, took.tat))?;
        lease.held += took.cost;
        lease.used = if lease.used == took.after {
            took.before
        } else {
            lease.used - lease.policy.time_of(took.cost)
        };
        Some(Taken {
            policy: lease.policy,
            at: lease.used,
            short: 0,
        })
    }

    /// `back` was not given (no lease was written): the lease it came from
    /// holds its requests again, if no other replaced it meanwhile.
    pub(super) fn keep_back(&self, key: &Key, back: Back) {
        let mut leases = self.local.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(lease) = leases
            .get_mut(key)
            .filter(|lease| lease.is(back.version, back.tat))
        {
            lease.held = back.held;
            lease.to_give = true;
        }
    }

    /// Leases `wants` (answered in their order), each giving back what this
    /// instance's last lease of it did not use. When one bucket lacks what
    /// the request needs, nothing is written and the request is refused;
    /// what was to be given back waits for the next lease.
    pub(super) async fn lease(
        &self,
        store: &dyn Store,
        ws: WorkspaceId,
        wants: &[Want],
        defaults: Limits,
        cost: (u32, u32),
        how: How<'_>,
    ) -> Result<Vec<Taken>, StoreError> {
        let mut given = vec![false; wants.len()];
        let leased = self
            .write_leases(store, ws, wants, defaults, cost, how, &mut given)
            .await;
        for (want, given) in wants.iter().zip(given) {
            if let (Some(back), false) = (want.miss.back, given) {
                self.keep_back(&want.key, back);
            }
        }
        leased
    }

    /// [`Self::lease`]: `given` says which wants' leases were written (or
    /// sent on).
    #[allow(clippy::too_many_arguments)]
    async fn write_leases(
        &self,
        store: &dyn Store,
        ws: WorkspaceId,
        wants: &[Want],
        defaults: Limits,
        cost: (u32, u32),
        mut how: How<'_>,
        given: &mut [bool],
    ) -> Result<Vec<Taken>, StoreError> {
        let mut taken: Vec<Option<Taken>> = vec![None; wants.len()];
        let mut pending: Vec<usize> = (0..wants.len()).collect();
        for _ in 0..4 {
            let mut read: Vec<Key> = pending.iter().map(|&i| wants[i].key.clone()).collect();
            read.push(keys::rate_limits(ws));
            let ahead = how.ahead.take().filter(|ahead| {
                ahead.keys == read && self.stamps(&read[..read.len() - 1]) == ahead.leases
            });
            let items = match ahead {
                Some(ahead) => ahead.items,
                None => store.batch_get(&read).await?,
            };
            let limits = limits_in(&items, read.last(), defaults);
            let now = now_us();
            let mut writes = Vec::new();
            let mut refused = false;
            for &i in &pending {
                let want = &wants[i];
                let policy = limits.of(want.kind);
                let stored = stored_in(&items, &want.key, want.miss.seen, policy, now);
                let credit = want.miss.back.map_or(0, |back| back.credit(stored, now));
                let base = (stored.map_or(now, |stored| stored.tat) - credit).max(now);
                // What the bucket keeps free of this kind's takes (a job's
                // writes leave the API a fifth of the budget).
                let kept = want.kind.kept(policy);
                let cost = within(policy.quota - kept, cost);
                let free = policy.left(base, now).saturating_sub(kept);
                let standing = |at, short| Taken { policy, at, short };
                if cost == 0 {
                    // Nothing to take (a batch whose first request took the
                    // whole bucket): where it stands, without a write.
                    taken[i] = Some(standing(base, 0));
                } else if free < cost {
                    taken[i] = Some(standing(base, cost));
                    refused = true;
                } else {
                    taken[i] = Some(standing(base, 0)); // until written
                    // Half of what is free at most: another instance finds
                    // some too.
                    let took = policy
                        .lease_size(want.kind.most_leased())
                        .min(free / 2)
                        .max(cost);
                    let version = stored.map(|stored| stored.version);
                    let returned = stored.map_or(0, |stored| stored.returned);
                    let lease = Lease {
                        policy,
                        most: want.kind.most_leased(),
                        version: version.unwrap_or(0) + 1,
                        tat: base + policy.time_of(took),
                        returned: returned + credit.max(0),
                        used: base + policy.time_of(cost),
                        held: took - cost,
                        until: now + LEASE_TIME_US,
                        to_give: true,
                        landing: None,
                        stands: true,
                        topping: false,
                    };
                    let write = put(&want.key, &lease, version);
                    writes.push((i, lease, write));
                }
            }
            if refused {
                // A refused request takes nothing.
                return Ok(taken.into_iter().flatten().collect());
            }
            if let Some((limiter, shared)) = how.send_on {
                // A first lease is admitted on what the read allows, its
                // write sent on (the module's documentation); the others wait.
                let (first, rest): (Vec<_>, Vec<_>) =
                    writes.into_iter().partition(|(i, ..)| wants[*i].miss.first);
                for (i, lease, write) in first {
                    taken[i] = Some(Taken {
                        policy: lease.policy,
                        at: lease.used,
                        short: 0,
                    });
                    given[i] = true;
                    limiter.send_on(shared.clone(), wants[i].key.clone(), lease, write);
                }
                writes = rest;
            }
            let results = join_all(
                writes
                    .iter()
                    .map(|(.., write)| store.write(vec![write.clone()])),
            )
            .await;
            pending.clear();
            let mut failed = None;
            for ((i, lease, _), result) in writes.into_iter().zip(results) {
                match result {
                    Ok(()) => {
                        taken[i] = Some(Taken {
                            policy: lease.policy,
                            at: lease.used,
                            short: 0,
                        });
                        given[i] = true;
                        let mut leases = self.local.lock().unwrap_or_else(|e| e.into_inner());
                        leases.insert(wants[i].key.clone(), lease);
                    }
                    // Another instance leased first: read it again.
                    Err(StoreError::ConditionFailed { .. }) => pending.push(i),
                    Err(e) => failed = Some(e),
                }
            }
            if let Some(e) = failed {
                return Err(e);
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
