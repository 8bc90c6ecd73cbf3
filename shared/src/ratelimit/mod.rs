//! Rate limits: a token bucket per token and one per workspace, kept in the
//! table, taken in leases (docs/design.md, "Rate limits").
//!
//! A bucket is one item holding its theoretical arrival time (`tat`, GCRA):
//! a bucket of `quota` requests per `window` refills one request every
//! `window / quota`, and a request is allowed while `tat` stays within one
//! window of now. An instance does not write the bucket per request: it
//! takes a lease of up to [`LEASE`] requests at once (one read and one
//! conditional write), serves them from memory for up to [`LEASE_TIME_US`],
//! and leases again when they run out. Leased requests count against the
//! bucket when they are taken, so instances together never pass the quota;
//! the next lease gives back what the last one did not serve, so a lease
//! costs a token nothing it does not get (one instance alone is exactly the
//! bucket: `lease.rs`). If the store fails, the request goes through
//! (logged): a limiter must not take the API down with it.
//!
//! Off a request's path (the HTTP guard, [`Limiter::admit_ahead`]): the
//! buckets are read beside the request's own reads ([`Limiter::read_ahead`]),
//! and an instance's first lease of a bucket (what every new Lambda instance
//! takes) has its write sent on, not waited for: the request is admitted on
//! what the read allows, and the instance's next request of that bucket
//! waits for the write to land. A write that does not land (another instance
//! leased in between) drops the lease, and later leases of the bucket are
//! waited for: that first request is all an instance can pass a quota by.
//! A lease running low is topped up on a task of its own (`top_up.rs`), so
//! that a busy instance's requests do not wait for its renewal either.

use std::collections::HashMap;
use std::ops::Deref;
use std::sync::{Arc, Mutex};

use futures_util::FutureExt;
use futures_util::future::{BoxFuture, Shared};

use crate::ids::{self, WorkspaceId};
use crate::keys;
use crate::store::{Item, Key, SharedStore, Store, StoreError, Write};

mod admission;
mod budget;
mod lease;
mod policy;
mod top_up;

pub use admission::{Admission, Standing};
pub use budget::{AtLimit, Budgeted, OPERATION_FLOOR, items_of};
use policy::StoredLimits;
pub use policy::{Kind, LEASE, LEASE_TIME_US, Limits, MAX_LEASE, Policy, limits_of, set_limits};

use lease::Taken;
/// The limits of every process: off, or these defaults (a workspace's own
/// replace them).
pub struct Limiter {
    defaults: Option<Limits>,
    local: Mutex<HashMap<Key, Lease>>,
    /// The buckets a request of this instance is leasing now.
    leasing: Mutex<HashMap<Key, Landing>>,
}

/// What this instance holds of one bucket.
#[derive(Clone)]
struct Lease {
    policy: Policy,
    /// The most it holds ([`Kind::most_leased`]).
    most: u32,
    /// The bucket as this instance last wrote it: its `version`, its `tat`,
    /// and what all leases had given back (`returned`, bucket time).
    version: u64,
    tat: i64,
    returned: i64,
    /// Where the requests it served stand, as if each had been taken on its
    /// own (GCRA): what lies between this and `tat` it took and did not use.
    used: i64,
    /// Requests taken and not used yet.
    held: u32,
    until: i64,
    /// Whether the lease that replaces it still gives back what it did not
    /// use (once).
    to_give: bool,
    /// Its write, sent on and not landed yet: the next request waits for it.
    landing: Option<Landing>,
    /// False once its write, sent on, did not land: it serves nothing, and
    /// says only that this instance leased the bucket before.
    stands: bool,
    /// Whether it is being topped up ([`Limiter::top_up`]).
    topping: bool,
}

/// A lease's write on its way; done once it landed, or the lease was dropped.
type Landing = Shared<BoxFuture<'static, ()>>;

/// A request's claim on leasing some buckets ([`Limiter::claim`]): released,
/// and its waiters woken, when it drops.
/// Held by a request (`&Limiter`) or by a top-up's own task (`Arc`).
struct Claim<L: Deref<Target = Limiter>> {
    limiter: L,
    keys: Vec<Key>,
    done: Option<tokio::sync::oneshot::Sender<()>>,
}

impl<L: Deref<Target = Limiter>> Drop for Claim<L> {
    fn drop(&mut self) {
        let mut leasing = self
            .limiter
            .leasing
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        for key in &self.keys {
            leasing.remove(key);
        }
        drop(leasing);
        if let Some(done) = self.done.take() {
            let _ = done.send(());
        }
    }
}

/// The buckets a request's lease would read, read beside the request's own
/// reads ([`Limiter::read_ahead`]): its first lease takes them instead.
pub struct Ahead {
    keys: Vec<Key>,
    items: Vec<Item>,
    /// This instance's leases of the buckets when they were read (their
    /// version and `tat`): a read from before another request's lease of
    /// this instance is stale, and a put made on it would fail its
    /// condition (under `crm serve`'s 256 connections, most did).
    leases: Vec<Option<(u64, i64)>>,
}

/// How a lease is taken: from what was read ahead, if anything, and with
/// its writes awaited or, given the store to send them with, sent on.
#[derive(Default)]
struct How<'a> {
    ahead: Option<Ahead>,
    send_on: Option<(&'a Arc<Limiter>, &'a SharedStore)>,
}

impl Limiter {
    /// From `CRM_RATE_LIMIT_TOKEN` and `CRM_RATE_LIMIT_WORKSPACE` (`100/10s`,
    /// `1000/10s` by default); `CRM_RATE_LIMITS=off` turns limits off.
    pub fn from_env() -> Self {
        if std::env::var("CRM_RATE_LIMITS").is_ok_and(|v| v == "off") {
            return Self::off();
        }
        let policy = |name: &str, default: Policy| {
            match std::env::var(name) {
            Err(_) => default,
            Ok(text) => Policy::parse(&text).unwrap_or_else(|| {
                tracing::warn!(variable = name, value = %text, "not a rate limit like 100/10s; the default applies");
                default
            }),
        }
        };
        Self::with(Limits {
            token: policy("CRM_RATE_LIMIT_TOKEN", Limits::DEFAULT.token),
            workspace: policy("CRM_RATE_LIMIT_WORKSPACE", Limits::DEFAULT.workspace),
            writes: policy("CRM_WRITE_BUDGET", Limits::DEFAULT.writes),
        })
    }

    pub fn with(defaults: Limits) -> Self {
        Self {
            defaults: Some(defaults),
            local: Mutex::default(),
            leasing: Mutex::default(),
        }
    }

    pub fn off() -> Self {
        Self {
            defaults: None,
            local: Mutex::default(),
            leasing: Mutex::default(),
        }
    }

    /// Takes `cost` more requests (a batch counts its operations) of
    /// `token`'s bucket (a token's SHA-256 prefix) and of its workspace's,
    /// for a request that took `already` of them. A request never takes more
    /// than a whole bucket (a larger batch waits for a full one). Never fails:
    /// a store error lets the request through. A lease's write is awaited.
    pub async fn admit(
        &self,
        store: &dyn Store,
        ws: WorkspaceId,
        token: &str,
        cost: u32,
        already: u32,
    ) -> Admission {
        let buckets = request_buckets(ws, token);
        self.admit_how(store, ws, &buckets, (cost, already), How::default())
            .await
    }

    /// Takes `items` of workspace `ws`'s write budget (`budget.rs`) for an
    /// API write, or for a job's (`kind`: [`Kind::Writes`] or
    /// [`Kind::JobWrites`]), its lease's write sent on with `store` (the
    /// ungated one: the bucket's own writes are not budgeted). Never fails,
    /// as [`Self::admit`].
    pub async fn admit_writes(
        self: &Arc<Self>,
        store: &SharedStore,
        ws: WorkspaceId,
        items: u32,
        kind: Kind,
    ) -> Admission {
        let how = How {
            ahead: None,
            send_on: Some((self, store)),
        };
        let buckets = [("writes", keys::write_bucket(ws), kind)];
        self.admit_how(store.as_ref(), ws, &buckets, (items, 0), how)
            .await
    }

    /// Whether any limits apply here (off: none, the write budget neither).
    pub fn is_on(&self) -> bool {
        self.defaults.is_some()
    }

    /// [`Self::admit`] on a request's path: a first lease takes what
    /// [`Self::read_ahead`] read, and its write is sent on, not awaited.
    pub async fn admit_ahead(
        self: &Arc<Self>,
        store: &SharedStore,
        ws: WorkspaceId,
        token: &str,
        (cost, already): (u32, u32),
        ahead: Option<Ahead>,
    ) -> Admission {
        let how = How {
            ahead,
            send_on: Some((self, store)),
        };
        let buckets = request_buckets(ws, token);
        self.admit_how(store.as_ref(), ws, &buckets, (cost, already), how)
            .await
    }

    /// Reads the buckets that a request of `cost` would lease (those this
    /// instance holds too little of), with the workspace's limits: a read
    /// that takes nothing, so it may go out before the token holds. `None`
    /// when nothing is to be leased, or the read failed.
    pub async fn read_ahead(
        &self,
        store: &dyn Store,
        ws: WorkspaceId,
        token: &str,
        cost: u32,
    ) -> Option<Ahead> {
        self.defaults?;
        let buckets = request_buckets(ws, token);
        let lacking = |leases: &HashMap<Key, Lease>, key: &Key, now: i64| {
            leases
                .get(key)
                .is_none_or(|lease| now >= lease.until || lease.held < cost.min(lease.policy.quota))
        };
        loop {
            let landing = {
                let leases = self.local.lock().unwrap_or_else(|e| e.into_inner());
                let landing = Self::landing(&leases, buckets.iter().map(|(_, key, _)| key));
                let now = now_us();
                // What a busy instance finds: both leases hold enough, and
                // nothing else is looked at (one lock a request).
                let lacks = buckets.iter().any(|(_, key, _)| lacking(&leases, key, now));
                if landing.is_empty() && !lacks {
                    return None;
                }
                landing
            };
            if landing.is_empty() {
                break;
            }
            // A read beside this instance's own write on its way would not see it.
            for landing in landing {
                landing.await;
            }
        }
        let mut keys: Vec<Key> = {
            let now = now_us();
            let leases = self.local.lock().unwrap_or_else(|e| e.into_inner());
            // One being leased by another request: this one will take from it.
            let leasing = self.leasing.lock().unwrap_or_else(|e| e.into_inner());
            buckets
                .into_iter()
                .map(|(_, key, _)| key)
                .filter(|key| !leasing.contains_key(key))
                .filter(|key| lacking(&leases, key, now))
                .collect()
        };
        if keys.is_empty() {
            return None;
        }
        let leases = self.stamps(&keys);
        keys.push(keys::rate_limits(ws));
        let items = store.batch_get(&keys).await.ok()?;
        Some(Ahead {
            keys,
            items,
            leases,
        })
    }

    /// Waits for this instance's leases and top-ups under way, and the
    /// writes it sent on: what a test counting writes waits for.
    pub async fn settled(&self) {
        loop {
            let mut under_way: Vec<Landing> = {
                let leasing = self.leasing.lock().unwrap_or_else(|e| e.into_inner());
                leasing.values().cloned().collect()
            };
            {
                let leases = self.local.lock().unwrap_or_else(|e| e.into_inner());
                under_way.extend(leases.values().filter_map(|lease| lease.landing.clone()));
            }
            under_way.retain(|landing| landing.peek().is_none());
            if under_way.is_empty() {
                return;
            }
            futures_util::future::join_all(under_way).await;
        }
    }

    /// This instance's leases of `keys` as they stand: which were written
    /// last, by version and `tat`.
    fn stamps(&self, keys: &[Key]) -> Vec<Option<(u64, i64)>> {
        let leases = self.local.lock().unwrap_or_else(|e| e.into_inner());
        keys.iter()
            .map(|key| leases.get(key).map(|lease| (lease.version, lease.tat)))
            .collect()
    }

    /// Marks `keys` as being leased by the caller until the claim drops;
    /// `Err` with the lease under way when another request leases one.
    fn claim<'a, L: Deref<Target = Limiter>>(
        limiter: L,
        keys: impl Iterator<Item = &'a Key> + Clone,
    ) -> Result<Claim<L>, Landing> {
        let mut leasing = limiter.leasing.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(under_way) = keys.clone().find_map(|key| leasing.get(key)) {
            return Err(under_way.clone());
        }
        let (done, landing) = tokio::sync::oneshot::channel::<()>();
        let landing: Landing = landing.map(|_| ()).boxed().shared();
        let keys: Vec<Key> = keys.cloned().collect();
        for key in &keys {
            leasing.insert(key.clone(), landing.clone());
        }
        drop(leasing);
        Ok(Claim {
            limiter,
            keys,
            done: Some(done),
        })
    }

    /// The writes of this instance's leases of `keys` still on their way,
    /// in `leases` (locked).
    fn landing<'k>(
        leases: &HashMap<Key, Lease>,
        keys: impl Iterator<Item = &'k Key>,
    ) -> Vec<Landing> {
        keys.filter_map(|key| leases.get(key)?.landing.clone())
            .filter(|landing| landing.peek().is_none())
            .collect()
    }

    /// Takes a request's share of each of its buckets from this instance's
    /// leases, under one lock: what each served ([`Taken`], [`lease::Took`])
    /// and the buckets to lease. `Err`: writes of these leases still on
    /// their way, to wait for first (a request takes from a lease once its
    /// write landed). One lock, where one per bucket and one to look for
    /// writes on their way had both cores of `crm serve` take it five times
    /// a GET (the read ahead's two besides).
    #[allow(clippy::type_complexity)]
    fn take_all_held(
        &self,
        buckets: &[(&'static str, Key, Kind)],
        cost: (u32, u32),
    ) -> Result<
        (
            Vec<Option<Taken>>,
            Vec<(usize, lease::Took)>,
            Vec<(usize, lease::Want)>,
        ),
        Vec<Landing>,
    > {
        let mut leases = self.local.lock().unwrap_or_else(|e| e.into_inner());
        let landing = Self::landing(&leases, buckets.iter().map(|(_, key, _)| key));
        if !landing.is_empty() {
            return Err(landing);
        }
        let now = now_us();
        let mut taken: Vec<Option<Taken>> = vec![None; buckets.len()];
        let mut held = Vec::new();
        let mut wants = Vec::new();
        for (i, (_, key, kind)) in buckets.iter().enumerate() {
            match Limiter::take_held(&mut leases, key, cost, now) {
                Ok((t, took)) => {
                    taken[i] = Some(t);
                    held.push((i, took));
                }
                Err(miss) => wants.push((
                    i,
                    lease::Want {
                        key: key.clone(),
                        kind: *kind,
                        miss,
                    },
                )),
            }
        }
        Ok((taken, held, wants))
    }

    /// Keeps `lease` of `key` and sends its `write` on: the lease serves
    /// once the write lands, and is dropped if it does not.
    fn send_on(self: &Arc<Self>, store: SharedStore, key: Key, mut lease: Lease, write: Write) {
        let (landed, landing) = tokio::sync::oneshot::channel::<()>();
        lease.landing = Some(landing.map(|_| ()).boxed().shared());
        let (version, tat) = (lease.version, lease.tat);
        self.local
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(key.clone(), lease);
        let limiter = Arc::clone(self);
        tokio::spawn(async move {
            let result = store.write(vec![write]).await;
            let mut leases = limiter.local.lock().unwrap_or_else(|e| e.into_inner());
            match result {
                Ok(()) => {
                    if let Some(lease) = leases.get_mut(&key).filter(|l| l.is(version, tat)) {
                        lease.landing = None;
                    }
                }
                Err(e) => {
                    // Another instance leased between the read and this
                    // write, or the store failed: the lease does not stand,
                    // and the next request leases anew, waiting for it.
                    if let Some(lease) = leases.get_mut(&key).filter(|l| l.is(version, tat)) {
                        lease.stands = false;
                        lease.held = 0;
                        lease.until = i64::MIN;
                        lease.to_give = false;
                        lease.landing = None;
                    }
                    if !matches!(e, StoreError::ConditionFailed { .. }) {
                        tracing::warn!(error = %e, "rate limiter lease not written; leased again at the next request");
                    }
                }
            }
            drop(leases);
            let _ = landed.send(());
        });
    }

    async fn admit_how(
        &self,
        store: &dyn Store,
        ws: WorkspaceId,
        buckets: &[(&'static str, Key, Kind)],
        (cost, already): (u32, u32),
        how: How<'_>,
    ) -> Admission {
        let Some(defaults) = self.defaults else {
            return Admission::default();
        };
        // What this instance holds serves first; the buckets it lacks are
        // leased together (one read, their writes side by side), by one
        // request at a time: the others wait for that lease and take from it
        // (without this, a lease running out under 256 connections sent a
        // lease from each, all but one failing its condition: a GET of
        // `crm serve` cost 10 µs more CPU with the limiter than without).
        // The leases as they stood before the last wait: a wait that ended
        // with none of them changed produced no lease (refused, or failed).
        let mut before_wait = None;
        let (mut taken, held, wants, claim) = loop {
            let (taken, held, wants) = match self.take_all_held(buckets, (cost, already)) {
                Ok(took) => took,
                Err(landing) => {
                    for landing in landing {
                        landing.await;
                    }
                    continue;
                }
            };
            if wants.is_empty() {
                break (taken, held, wants, None);
            }
            let keys: Vec<Key> = wants.iter().map(|(_, want)| want.key.clone()).collect();
            let stamps = self.stamps(&keys);
            let fruitless = before_wait.as_ref() == Some(&stamps);
            match Limiter::claim(self, keys.iter()) {
                Ok(claim) => break (taken, held, wants, Some(claim)),
                // Wait for the lease under way as long as waiting brings leases:
                // leasing beside it would fail its condition (under 256
                // connections, most such puts did: three times the writes).
                Err(leasing) if !fruitless => {
                    // Put back what this try took, and wait for that lease.
                    for (i, took) in held {
                        self.untake(&buckets[i].1, took);
                    }
                    for (_, want) in wants {
                        if let Some(back) = want.miss.back {
                            self.keep_back(&want.key, back);
                        }
                    }
                    before_wait = Some(stamps);
                    leasing.await;
                }
                // The lease waited for brought none (its bucket refused it,
                // or the store failed): lease side by side, so that a herd
                // refused by an empty bucket is not read one after another.
                Err(_) => break (taken, held, wants, None),
            }
        };
        if let Some((limiter, shared)) = how.send_on {
            for (i, took) in &held {
                if let Some(by) = took.top_up {
                    let (_, key, kind) = &buckets[*i];
                    limiter.top_up(shared, ws, (key, *kind), defaults, by);
                }
            }
        }
        if !wants.is_empty() {
            // Sent on only by the claim's holder: requests leasing side by
            // side (the lease waited for brought none) each wait for their put.
            let how = match &claim {
                Some(_) => how,
                None => How {
                    send_on: None,
                    ..how
                },
            };
            let (at, wants): (Vec<usize>, Vec<lease::Want>) = wants.into_iter().unzip();
            match self
                .lease(store, ws, &wants, defaults, (cost, already), how)
                .await
            {
                Ok(leased) => {
                    let refused = leased.iter().any(|t| t.short > 0);
                    at.into_iter()
                        .zip(leased)
                        .for_each(|(i, t)| taken[i] = Some(t));
                    // A refused request takes nothing, not even of a lease
                    // this instance holds.
                    if refused {
                        for (i, took) in held {
                            if let Some(t) = self.untake(&buckets[i].1, took) {
                                taken[i] = Some(t);
                            }
                        }
                    }
                }
                Err(e) => {
                    tracing::warn!(error = %e, "rate limiter store failed; request let through")
                }
            }
        }
        let mut admission = Admission::default();
        for ((name, ..), t) in buckets.iter().zip(taken) {
            let Some(Taken { policy, at, short }) = t else {
                continue;
            };
            let now = now_us();
            let at = at.max(now);
            admission.standings.push(Standing {
                name,
                policy,
                remaining: policy.left(at, now),
                reset: seconds(at - now),
            });
            if short > 0 && admission.refused_by.is_none() {
                // When the bucket will have what the request needs.
                let wait = at + policy.time_for(short) - policy.window_us() - now;
                admission.retry_after = Some(seconds(wait.max(1)));
                admission.refused_by = Some(admission.standings.len() - 1);
            }
        }
        admission
    }
}

/// A request's buckets: its token's, and its workspace's.
fn request_buckets(ws: WorkspaceId, token: &str) -> [(&'static str, Key, Kind); 2] {
    [
        ("token", keys::rate_bucket(ws, token), Kind::Token),
        ("workspace", keys::rate_bucket(ws, ""), Kind::Workspace),
    ]
}

/// Bucket times are in microseconds since the epoch.
fn now_us() -> i64 {
    ids::now().timestamp_micros()
}

/// Microseconds as whole seconds, rounded up (headers count seconds).
fn seconds(us: i64) -> u32 {
    u32::try_from((us.max(0) + 999_999) / 1_000_000).unwrap_or(u32::MAX)
}
