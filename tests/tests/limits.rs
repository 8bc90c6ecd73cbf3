//! Rate limits: a token bucket per token and one per workspace, with the
//! IETF `RateLimit-Policy` and `RateLimit` headers on every answer, a 429
//! with `Retry-After` past the limit, limits an operator sets per
//! workspace, and requests let through when the limiter's store fails;
//! every quota granted whole, whatever the pauses between requests (a
//! lease costs nothing it does not serve); a 403 (a token that holds,
//! without the scope) counts and says so too. The clock is the test's:
//! nothing sleeps.

use std::collections::BTreeMap;
use std::sync::Arc;

use api_tests::serde_json::{Value, json};
use api_tests::{TestApp, TestResponse, api_test};
use chrono::Duration;
use shared::auth::{Resource, Scope};
use shared::ids::{ManualClock, WorkspaceId};
use shared::ratelimit::{Kind, Limiter, Limits, Policy};
use shared::store::{Item, Key, Page, Query, SharedStore, Store, StoreError, Write};

/// A store whose every call fails, as DynamoDB does when it is unreachable.
#[derive(Default)]
struct DownStore(shared::store::Metrics);

#[async_trait::async_trait]
impl Store for DownStore {
    async fn get(&self, _: &Key, _: bool) -> Result<Option<Item>, StoreError> {
        Err(StoreError::Unavailable("down".into()))
    }
    async fn batch_get(&self, _: &[Key]) -> Result<Vec<Item>, StoreError> {
        Err(StoreError::Unavailable("down".into()))
    }
    async fn query(&self, _: &Query) -> Result<Page, StoreError> {
        Err(StoreError::Unavailable("down".into()))
    }
    async fn write(&self, _: Vec<Write>) -> Result<(), StoreError> {
        Err(StoreError::Unavailable("down".into()))
    }
    fn metrics(&self) -> &shared::store::Metrics {
        &self.0
    }
    fn backend(&self) -> &'static str {
        "down"
    }
}

fn limits(token: u32, workspace: u32) -> Limits {
    Limits {
        token: Policy {
            quota: token,
            window_seconds: 10,
        },
        workspace: Policy {
            quota: workspace,
            window_seconds: 10,
        },
        writes: WIDE,
    }
}

/// The `RateLimit` header's `r` of each policy: `{"token": 4, "workspace": 99}`.
fn remaining(answer: &TestResponse) -> BTreeMap<String, u32> {
    let header = answer.headers["ratelimit"].to_str().unwrap();
    header
        .split(", ")
        .map(|item| {
            let name = item.split(';').next().unwrap().trim_matches('"').to_owned();
            let r = item
                .split(';')
                .find_map(|p| p.strip_prefix("r="))
                .unwrap()
                .parse()
                .unwrap();
            (name, r)
        })
        .collect()
}

async fn a_token(app: &TestApp, name: &str) -> String {
    let created = app
        .post("/v3/api-tokens", json!({ "name": name }))
        .await
        .expect(201);
    created["token"].as_str().unwrap().to_owned()
}

api_test! {
    /// A token's burst: its quota at once, the headers counting down, then a
    /// 429 in the error shape with `Retry-After`; the bucket refills one
    /// request per `window / quota`.
    async fn a_token_gets_its_burst_then_a_429(app) {
        let (app, clock) = app.rate_limited(limits(5, 100));
        let token = a_token(&app, "burst").await;
        let client = app.as_token(&token);
        for left in (0..5).rev() {
            let answer = client.get("/v3/tags").await;
            assert_eq!(answer.status, 200, "{}", answer.body);
            assert_eq!(answer.headers["ratelimit-policy"], r#""token";q=5;w=10, "workspace";q=100;w=10"#);
            assert_eq!(remaining(&answer)["token"], left);
        }
        let refused = client.get("/v3/tags").await;
        assert_eq!(refused.status, 429, "{}", refused.body);
        assert_eq!(refused.body["statusCode"], 429);
        assert!(refused.body["message"].as_str().unwrap().contains("token"), "{}", refused.body);
        assert_eq!(refused.headers["retry-after"], "2", "one request every 2 s");
        assert_eq!(remaining(&refused)["token"], 0);
        client.post("/v3/tags", json!({ "name": "late" })).await.expect_error(429);
        clock.advance(Duration::seconds(2));
        client.post("/v3/tags", json!({ "name": "later" })).await.expect(201);
        client.get("/v3/tags").await.expect_error(429);
        // Another token of the workspace has its own bucket.
        let other = a_token(&app, "other").await;
        app.as_token(&other).get("/v3/tags").await.expect(200);
        // Errors carry the headers too.
        clock.advance(Duration::seconds(10));
        let missing = client.get("/v3/tags/1").await;
        assert_eq!(missing.status, 404);
        assert!(missing.headers.contains_key("ratelimit"));
    }
}

api_test! {
    /// The workspace's bucket is shared by its tokens: together they get
    /// its quota, and the 429 names the workspace.
    async fn a_workspace_shares_its_bucket(app) {
        let (app, _clock) = app.rate_limited(limits(100, 9));
        let (_, theirs) = app.new_workspace("Theirs").await;
        // The admin's token made these three requests: three of the nine.
        let (one, two) = (a_token(&app, "one").await, a_token(&app, "two").await);
        for _ in 0..3 {
            app.as_token(&one).get("/v3/tags").await.expect(200);
            app.as_token(&two).get("/v3/tags").await.expect(200);
        }
        let refused = app.as_token(&one).get("/v3/tags").await;
        assert_eq!(refused.status, 429, "{}", refused.body);
        assert!(refused.body["message"].as_str().unwrap().contains("workspace"), "{}", refused.body);
        assert_eq!(remaining(&refused)["workspace"], 0);
        // Another workspace is not held back.
        app.as_token(&theirs).get("/v3/tags").await.expect(200);
    }
}

api_test! {
    /// An operator sets a workspace's own limits; new leases take them.
    async fn an_admin_sets_a_workspaces_limits(app) {
        let (app, _clock) = app.rate_limited(limits(100, 1000));
        let path = "/v3/workspaces/1/rate-limits";
        assert_eq!(app.get(path).await.expect(200), json!(limits(100, 1000)));
        app.get("/v3/workspaces/9999/rate-limits").await.expect_error(404);
        let reader = a_token(&app, "reader").await;
        app.as_token(&reader).get(path).await.expect_error(403);
        app.send(http::Method::PUT, path, Some(api_tests::ADMIN_TOKEN), Some(json!({ "token": { "quota": 0, "windowSeconds": 10 }, "workspace": { "quota": 5, "windowSeconds": 10 } })))
            .await.expect_field_error("token.quota");
        let set = app.send(http::Method::PUT, path, Some(api_tests::ADMIN_TOKEN), Some(json!(limits(2, 1000)))).await.expect(200);
        assert_eq!(set, json!(limits(2, 1000)));
        let token = a_token(&app, "after").await;
        let client = app.as_token(&token);
        let first = client.get("/v3/tags").await;
        assert_eq!(first.status, 200);
        assert_eq!(first.headers["ratelimit-policy"], r#""token";q=2;w=10, "workspace";q=1000;w=10"#);
        client.get("/v3/tags").await.expect(200);
        client.get("/v3/tags").await.expect_error(429);
    }
}

api_test! {
    /// A store that fails lets requests through, without headers: a limiter
    /// must not take the API down with it.
    async fn a_failing_store_lets_requests_through(app) {
        let limiter = Limiter::with(limits(1, 1));
        let down = DownStore::default();
        for _ in 0..3 {
            let admission = limiter.admit(&down, shared::ids::WorkspaceId(1), "abc", 1, 0).await;
            assert!(admission.refusal().is_none() && admission.standings.is_empty());
        }
        // And the same limiter on the real store refuses the second.
        assert!(limiter.admit(app.store.as_ref(), shared::ids::WorkspaceId(1), "abc", 1, 0).await.refusal().is_none());
        assert!(limiter.admit(app.store.as_ref(), shared::ids::WorkspaceId(1), "abc", 1, 0).await.refusal().is_some());
    }
}

api_test! {
    /// A batch counts one request per operation: the bucket's headers say
    /// so, and a batch larger than what is left is a 429 that writes nothing.
    async fn a_batch_counts_per_operation(app) {
        let (app, clock) = app.rate_limited(limits(10, 100));
        let token = a_token(&app, "batch").await;
        let client = app.as_token(&token);
        let creates = |n: usize| {
            let operations: Vec<_> = (0..n).map(|i| json!({ "op": "create", "data": { "name": format!("t{n}-{i}") } })).collect();
            json!({ "operations": operations })
        };
        let answer = client.post("/v3/tags/batch", creates(7)).await;
        assert_eq!(answer.status, 200, "{}", answer.body);
        assert_eq!(remaining(&answer)["token"], 3);
        let refused = client.post("/v3/tags/batch", creates(4)).await;
        assert_eq!(refused.status, 429, "{}", refused.body);
        assert_eq!(refused.headers["retry-after"], "1", "one more request in 1 s");
        assert_eq!(app.get("/v3/tags").await.expect(200)["totalCount"], 7);
        // A batch larger than the whole bucket waits for the whole bucket.
        clock.advance(Duration::seconds(10));
        let answer = client.post("/v3/tags/batch", creates(12)).await;
        assert_eq!(answer.status, 200, "{}", answer.body);
        assert_eq!(remaining(&answer)["token"], 0);
    }
}

fn policy(quota: u32, window_seconds: u32) -> Policy {
    Policy {
        quota,
        window_seconds,
    }
}

/// The largest limits an operator may set: a bucket these tests never empty.
const WIDE: Policy = Policy {
    quota: 1_000_000,
    window_seconds: 1,
};

/// A bucket as it stands when each request is taken on its own (GCRA, no
/// leases), in microseconds since the test began: what every answer is
/// held to. The policies tested refill in whole microseconds.
struct Ideal {
    window: i64,
    interval: i64,
    tat: i64,
    now: i64,
}

impl Ideal {
    fn new(policy: Policy) -> Self {
        let window = i64::from(policy.window_seconds) * 1_000_000;
        assert_eq!(
            window % i64::from(policy.quota),
            0,
            "a whole number of µs per request"
        );
        Self {
            window,
            interval: window / i64::from(policy.quota),
            tat: 0,
            now: 0,
        }
    }

    fn left(&self) -> u32 {
        u32::try_from((self.now + self.window - self.tat.max(self.now)) / self.interval).unwrap()
    }

    /// The milliseconds until one more request fits.
    fn wait_ms(&self) -> i64 {
        ((self.tat.max(self.now) + self.interval - self.window - self.now).max(0) + 999) / 1000
    }

    /// `ms` later, one request: what is left after it, or the seconds
    /// until it fits (`Retry-After`).
    fn take(&mut self, ms: i64) -> Result<u32, String> {
        self.now += ms * 1000;
        if self.left() == 0 {
            let seconds = ((self.wait_ms() * 1000).max(1) + 999_999) / 1_000_000;
            return Err(seconds.to_string());
        }
        self.tat = self.tat.max(self.now) + self.interval;
        Ok(self.left())
    }
}

/// `GET /v3/tags` with `token` after each pause (ms, on the test's clock),
/// every answer held to `ideal`: 200 with what `bucket` has left, or 429
/// with its `Retry-After`.
async fn hold_to(
    app: &TestApp,
    clock: &ManualClock,
    token: &str,
    bucket: &str,
    ideal: &mut Ideal,
    pauses: &[i64],
) {
    for &pause in pauses {
        clock.advance(Duration::milliseconds(pause));
        let answer = app.as_token(token).get("/v3/tags").await;
        let expected = ideal.take(pause);
        let at = format!("{bucket} at {} ms", ideal.now / 1000);
        match expected {
            Ok(left) => {
                assert_eq!(answer.status, 200, "{at}: {}", answer.body);
                assert_eq!(remaining(&answer)[bucket], left, "{at}");
            }
            Err(wait) => {
                assert_eq!(answer.status, 429, "{at}: {}", answer.body);
                assert_eq!(answer.headers["retry-after"], wait.as_str(), "{at}");
                assert_eq!(remaining(&answer)[bucket], 0, "{at}");
            }
        }
    }
}

/// Requests after pauses longer than a lease's life (2.6 s) and within one,
/// a burst past the end of the bucket, a wait of its `Retry-After`, and a
/// whole window: every answer as if each request were taken on its own.
async fn granted_whole(
    app: &TestApp,
    clock: &ManualClock,
    token: &str,
    bucket: &str,
    policy: Policy,
) {
    let mut ideal = Ideal::new(policy);
    let mut pauses = vec![0, 2_600, 500, 1_900, 2_000, 1, 999];
    pauses.extend(std::iter::repeat_n(0, policy.quota.min(120) as usize + 1));
    hold_to(app, clock, token, bucket, &mut ideal, &pauses).await;
    let window = i64::from(policy.window_seconds) * 1000;
    let wait = ideal.wait_ms();
    hold_to(app, clock, token, bucket, &mut ideal, &[wait, 0, window, 0]).await;
}

/// A token's bucket at `policy` (the workspace's never in the way).
async fn a_token_is_granted(app: TestApp, policy: Policy) {
    let (app, clock) = app.rate_limited(Limits {
        token: policy,
        workspace: WIDE,
        writes: WIDE,
    });
    let token = a_token(&app, "quota").await;
    granted_whole(&app, &clock, &token, "token", policy).await;
}

api_test! {
    /// 1 per second.
    async fn one_a_second_is_granted_whole(app) {
        a_token_is_granted(app, policy(1, 1)).await;
    }
}

api_test! {
    /// 20 per 5 s (#44: a 2.6 s pause left 9 requests, not 19).
    async fn twenty_per_five_seconds_is_granted_whole(app) {
        a_token_is_granted(app, policy(20, 5)).await;
    }
}

api_test! {
    /// 20 per hour (#44: the second request after a pause was a 429).
    async fn twenty_an_hour_is_granted_whole(app) {
        a_token_is_granted(app, policy(20, 3600)).await;
    }
}

api_test! {
    /// 100 per 10 s, the default.
    async fn a_hundred_per_ten_seconds_is_granted_whole(app) {
        a_token_is_granted(app, policy(100, 10)).await;
    }
}

api_test! {
    /// A million a second, the largest quota: what is left never passes
    /// it (a lease's requests are not counted twice once time moves).
    async fn a_million_a_second_is_granted_whole(app) {
        a_token_is_granted(app, WIDE).await;
    }
}

api_test! {
    /// A workspace's bucket at 30 per hour (#44: it fell from 29 to 9).
    async fn a_workspace_at_thirty_an_hour_is_granted_whole(app) {
        let limit = policy(30, 3600);
        let (app, clock) = app.rate_limited(Limits { token: WIDE, workspace: limit, writes: WIDE });
        granted_whole(&app, &clock, api_tests::ADMIN_TOKEN, "workspace", limit).await;
    }
}

api_test! {
    /// #44's cases side by side: what a lease took and did not serve is
    /// not lost when it lapses. At 20 per 5 s a pause of 2.6 s leaves 19
    /// (the bucket refilled), at 30 per hour a workspace goes from 28 to
    /// 27, and at 20 per hour the second request is served.
    async fn a_lease_costs_no_request_it_does_not_serve(app) {
        let (app, clock) = app.rate_limited(Limits { token: policy(20, 5), workspace: policy(30, 3600), writes: WIDE });
        let token = a_token(&app, "paused").await; // one of the workspace's 30
        let client = app.as_token(&token);
        let first = client.get("/v3/tags").await;
        assert_eq!(remaining(&first), BTreeMap::from([("token".into(), 19), ("workspace".into(), 28)]));
        clock.advance(Duration::milliseconds(2_600));
        let second = client.get("/v3/tags").await;
        assert_eq!(second.status, 200, "{}", second.body);
        assert_eq!(remaining(&second), BTreeMap::from([("token".into(), 19), ("workspace".into(), 27)]));
    }
}

api_test! {
    /// The same at 20 per hour: one request every 3 minutes, 20 at once.
    async fn twenty_an_hour_are_twenty_requests(app) {
        let (app, clock) = app.rate_limited(Limits { token: policy(20, 3600), workspace: WIDE, writes: WIDE });
        let token = a_token(&app, "hourly").await;
        let client = app.as_token(&token);
        assert_eq!(remaining(&client.get("/v3/tags").await)["token"], 19);
        clock.advance(Duration::seconds(3));
        for left in (0..19).rev() {
            let answer = client.get("/v3/tags").await;
            assert_eq!(answer.status, 200, "{}", answer.body);
            assert_eq!(remaining(&answer)["token"], left);
        }
        let refused = client.get("/v3/tags").await;
        assert_eq!(refused.status, 429, "{}", refused.body);
        assert_eq!(refused.headers["retry-after"], "177", "3 minutes after the first, less the 3 s");
    }
}

/// What the token's bucket has left after `limiter` takes `cost` more
/// requests at `clock`'s time, or `None` when it refuses them.
async fn left_after(
    limiter: &Limiter,
    store: &dyn Store,
    clock: &Arc<ManualClock>,
    cost: u32,
) -> Option<u32> {
    let admission = shared::ids::with_clock(
        clock.clone(),
        limiter.admit(store, WorkspaceId(1), "instances", cost, 0),
    )
    .await;
    match admission.refusal() {
        Some(_) => None,
        None => Some(admission.standings[0].remaining),
    }
}

api_test! {
    /// Two instances of the API (two limiters, one table) on one token at
    /// 20 per 5 s: what one leased and did not serve it gives back with its
    /// next lease, and the other gets it. Together they get the 20, no more.
    async fn what_one_instance_does_not_serve_another_gets(app) {
        let limits = Limits { token: policy(20, 5), workspace: WIDE, writes: WIDE };
        let (one, two) = (Limiter::with(limits), Limiter::with(limits));
        let clock = Arc::new(ManualClock::starting_now());
        let store = app.store.as_ref();
        assert_eq!(left_after(&one, store, &clock, 1).await, Some(19), "one leases 8, serves 1");
        assert_eq!(left_after(&two, store, &clock, 1).await, Some(11), "two leases 6 of the 12 free, serves 1");
        // A batch of 8 needs a new lease: one gives back its 7 unused.
        assert_eq!(left_after(&one, store, &clock, 8).await, Some(5), "16 taken, 1 served by two");
        assert_eq!(left_after(&two, store, &clock, 6).await, Some(4), "two gives back its 5: 16 served");
        let mut served = 16;
        for turn in 0..10 {
            let instance = if turn % 2 == 0 { &one } else { &two };
            served += u32::from(left_after(instance, store, &clock, 1).await.is_some());
        }
        assert_eq!(served, 20, "together, the quota");
        // A window later, every lease has lapsed: the 20 again.
        clock.advance(Duration::seconds(5));
        let mut served = 0;
        for turn in 0..30 {
            let instance = if turn % 2 == 0 { &one } else { &two };
            served += u32::from(left_after(instance, store, &clock, 1).await.is_some());
        }
        assert_eq!(served, 20);
    }
}

/// A store that holds every write of a rate bucket (but the first `free`)
/// until the test lets them go ([`HeldWrites::open`]), counting those sent.
struct HeldWrites {
    inner: SharedStore,
    gate: tokio::sync::Semaphore,
    sent: std::sync::atomic::AtomicUsize,
    free: usize,
}

impl HeldWrites {
    fn new(inner: SharedStore) -> Arc<Self> {
        Self::after(inner, 0)
    }
    fn after(inner: SharedStore, free: usize) -> Arc<Self> {
        Arc::new(Self {
            inner,
            gate: tokio::sync::Semaphore::new(0),
            sent: Default::default(),
            free,
        })
    }
    /// Waits (on the test's own time) for `writes` to have been sent.
    async fn until_sent(&self, writes: usize) {
        for _ in 0..5_000 {
            if self.sent() >= writes {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(1)).await;
        }
        assert_eq!(self.sent(), writes);
    }
    fn open(&self) {
        self.gate
            .add_permits(tokio::sync::Semaphore::MAX_PERMITS / 2);
    }
    fn sent(&self) -> usize {
        self.sent.load(std::sync::atomic::Ordering::SeqCst)
    }
}

#[async_trait::async_trait]
impl Store for HeldWrites {
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
        let sent = self.sent.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let _open = match sent < self.free {
            true => None,
            false => Some(self.gate.acquire().await),
        };
        self.inner.write(writes).await
    }
    fn metrics(&self) -> &shared::store::Metrics {
        self.inner.metrics()
    }
    fn backend(&self) -> &'static str {
        self.inner.backend()
    }
}

/// A request's place in the token `token`'s buckets as an HTTP request
/// takes it: the buckets read ahead (beside its own reads), then admitted
/// without waiting for its lease's writes.
async fn admitted_ahead(
    limiter: &Arc<Limiter>,
    store: &SharedStore,
    clock: &Arc<ManualClock>,
    token: &str,
) -> Option<u32> {
    let ws = WorkspaceId(1);
    let admission = shared::ids::with_clock(clock.clone(), async {
        let ahead = limiter.read_ahead(store.as_ref(), ws, token, 1).await;
        limiter.admit_ahead(store, ws, token, (1, 0), ahead).await
    })
    .await;
    match admission.refusal() {
        Some(_) => None,
        None => Some(admission.standings[0].remaining),
    }
}

api_test! {
    /// A new instance's first request reads its buckets beside its own
    /// reads and does not wait for its leases' writes (#45): it is answered
    /// while they are held. The next request waits for them, and is served
    /// from the lease they wrote, without another read or write.
    async fn a_first_request_does_not_wait_for_its_leases_writes(app) {
        let held = HeldWrites::new(app.store.clone());
        let store: SharedStore = held.clone();
        let limiter = Arc::new(Limiter::with(limits(100, 1000)));
        let clock = Arc::new(ManualClock::starting_now());
        let before = app.metrics();
        assert_eq!(admitted_ahead(&limiter, &store, &clock, "first").await, Some(99), "answered, its writes held");
        // The writes go on their own task: wait for it to reach the held store.
        held.until_sent(2).await; // both buckets' leases
        assert_eq!(app.metrics().batch_gets - before.batch_gets, 1, "one read, ahead");
        let bucket = shared::keys::rate_bucket(WorkspaceId(1), "first");
        assert!(app.store.get(&bucket, true).await.unwrap().is_none(), "not written yet");
        let (second, ()) = tokio::join!(admitted_ahead(&limiter, &store, &clock, "first"), async {
            tokio::task::yield_now().await;
            held.open();
        });
        assert_eq!(second, Some(98), "served from the lease");
        assert_eq!((held.sent(), app.metrics().batch_gets - before.batch_gets), (2, 1), "no other read or write");
        assert_eq!(app.store.get(&bucket, true).await.unwrap().unwrap()["version"], 1, "the lease landed");
    }
}

api_test! {
    /// Two new instances reading one bucket at once both admit their first
    /// request; one lease lands and the other does not, and that instance
    /// leases again at its next request. Together they pass the quota by
    /// that one request, no more.
    async fn two_first_requests_at_once_pass_the_quota_by_one_at_most(app) {
        let limits = Limits { token: policy(20, 5), workspace: WIDE, writes: WIDE };
        let (one, two) = (Arc::new(Limiter::with(limits)), Arc::new(Limiter::with(limits)));
        let clock = Arc::new(ManualClock::starting_now());
        let store: SharedStore = app.store.clone();
        let ws = WorkspaceId(1);
        let (first, second) = shared::ids::with_clock(clock.clone(), async {
            let (a, b) = tokio::join!(
                one.read_ahead(store.as_ref(), ws, "both", 1),
                two.read_ahead(store.as_ref(), ws, "both", 1)
            );
            (one.admit_ahead(&store, ws, "both", (1, 0), a).await, two.admit_ahead(&store, ws, "both", (1, 0), b).await)
        })
        .await;
        assert!(first.refusal().is_none() && second.refusal().is_none(), "both admitted on what they read");
        let mut served = 2;
        for turn in 0..60 {
            let instance = if turn % 2 == 0 { &one } else { &two };
            served += u32::from(admitted_ahead(instance, &store, &clock, "both").await.is_some());
        }
        assert_eq!(served, 21, "the quota, and the request served on the lease that did not land");
    }
}

api_test! {
    /// A lease running low (a quarter left) is topped up on a task of its
    /// own while it serves on (#45): no request waits for the top-up's read
    /// and put until the lease has run out, and the requests after it are
    /// served from what it wrote, with no other read or write. Each request
    /// is told what the bucket has left, as if taken on its own.
    async fn a_lease_running_low_is_topped_up_while_it_serves(app) {
        let held = HeldWrites::after(app.store.clone(), 2);
        let store: SharedStore = held.clone();
        let limiter = Arc::new(Limiter::with(Limits { token: policy(100, 10), workspace: WIDE, writes: WIDE }));
        let clock = Arc::new(ManualClock::starting_now());
        let before = app.metrics();
        let reads = || app.metrics().batch_gets - before.batch_gets;
        // Leases of 20: the fifteenth request leaves 5 and sends the top-up.
        for n in 1..=15 {
            assert_eq!(admitted_ahead(&limiter, &store, &clock, "low").await, Some(100 - n));
        }
        held.until_sent(3).await;
        assert_eq!(reads(), 2, "the first lease's read, and the top-up's");
        // Its put held: the lease's last 5 are served meanwhile (a request
        // waiting for it would never be answered).
        for n in 16..=20 {
            assert_eq!(admitted_ahead(&limiter, &store, &clock, "low").await, Some(100 - n));
        }
        // The lease run out, the next request waits for the top-up.
        let (twenty_first, ()) = tokio::join!(admitted_ahead(&limiter, &store, &clock, "low"), async {
            tokio::task::yield_now().await;
            held.open();
        });
        assert_eq!(twenty_first, Some(79), "served from the top-up");
        for n in 22..=34 {
            assert_eq!(admitted_ahead(&limiter, &store, &clock, "low").await, Some(100 - n));
        }
        assert_eq!((reads(), held.sent()), (2, 3), "served from the top-up of 20, no other read or write");
        let bucket = shared::keys::rate_bucket(WorkspaceId(1), "low");
        assert_eq!(app.store.get(&bucket, true).await.unwrap().unwrap()["version"], 2, "the top-up landed");
    }
}

/// `requests` of one instance at once, none holding a lease, at 1,000 per
/// token and 10,000 per workspace (leases of 50 and 500): what each token
/// request left, sorted, and the BatchGetItems and puts they cost.
async fn herd(app: &TestApp, requests: usize) -> (Vec<u32>, u64, u64) {
    let limiter = Arc::new(Limiter::with(limits(1000, 10_000)));
    let clock = Arc::new(ManualClock::starting_now());
    let store: SharedStore = app.store.clone();
    let before = app.metrics();
    let all = futures::future::join_all((0..requests).map(|_| {
        shared::ids::with_clock(
            clock.clone(),
            limiter.admit(store.as_ref(), WorkspaceId(1), "herd", 1, 0),
        )
    }))
    .await;
    let mut left: Vec<u32> = all.iter().map(|a| a.standings[0].remaining).collect();
    left.sort_unstable();
    let after = app.metrics();
    (
        left,
        after.batch_gets - before.batch_gets,
        after.writes - before.writes,
    )
}

api_test! {
    /// Fifty requests of one instance that find no lease at once send one
    /// lease between them, not fifty (all but one failing its condition):
    /// the others wait for it and take from it.
    async fn requests_without_a_lease_wait_for_the_one_being_taken(app) {
        let (left, reads, writes) = herd(&app, 50).await;
        assert_eq!(left, (950..1000).collect::<Vec<_>>(), "each took one, from one lease of 50");
        assert_eq!((reads, writes), (1, 2), "one read, one put per bucket");
    }
}

api_test! {
    /// Six hundred requests of one instance at once, through leases of 50:
    /// each lease is one read and one put, however many requests wait for
    /// it, and no put fails its condition (requests that gave up waiting
    /// and leased beside the lease under way sent three times the writes,
    /// nearly all of them refused, under `crm serve`'s 256 connections).
    async fn a_herd_waits_lease_after_lease_and_leases_beside_none(app) {
        let (left, reads, writes) = herd(&app, 600).await;
        assert_eq!(left, (400..1000).collect::<Vec<_>>(), "each took one");
        // The token's twelve leases of 50; the workspace's two of 500, the
        // second read with the token's eleventh.
        assert_eq!(reads, 12, "one read a lease");
        assert_eq!(writes, 14, "one put a bucket and lease, none refused");
    }
}

api_test! {
    /// A million a second through the limiter itself: a burst takes the
    /// million and no more, and a millisecond refills a thousand.
    async fn a_million_a_second_is_a_million(app) {
        let limiter = Limiter::with(Limits { token: WIDE, workspace: WIDE, writes: WIDE });
        let clock = Arc::new(ManualClock::starting_now());
        let store = app.store.as_ref();
        assert_eq!(left_after(&limiter, store, &clock, 1).await, Some(999_999));
        clock.advance(Duration::milliseconds(1));
        assert_eq!(left_after(&limiter, store, &clock, 1).await, Some(999_999), "never more than the quota");
        clock.advance(Duration::milliseconds(2_600));
        assert_eq!(left_after(&limiter, store, &clock, 1).await, Some(999_999));
        assert_eq!(left_after(&limiter, store, &clock, 999_999).await, Some(0));
        let refused = shared::ids::with_clock(clock.clone(), limiter.admit(store, WorkspaceId(1), "instances", 1, 0)).await;
        assert_eq!(refused.retry_after, Some(1));
        clock.advance(Duration::milliseconds(1));
        assert_eq!(left_after(&limiter, store, &clock, 1_000).await, Some(0));
        assert_eq!(left_after(&limiter, store, &clock, 1).await, None);
    }
}

api_test! {
    /// A token that holds but lacks the route's scope gets its 403 with the
    /// `RateLimit` headers, on a read and on a change, as every answer to a
    /// token that holds; the refusal counts as one request. A token that
    /// does not hold (401) takes nothing and gets none.
    async fn a_403_says_where_the_token_stands(app) {
        let (app, _clock) = app.rate_limited(limits(5, 100));
        let reader = api_tests::token_with(&app, &[Scope::Read(Resource::Tags)]).await;
        let client = app.as_token(&reader);
        let read = client.get("/v3/contacts").await;
        assert_eq!(read.status, 403, "{}", read.body);
        assert_eq!(read.headers["ratelimit-policy"], r#""token";q=5;w=10, "workspace";q=100;w=10"#);
        assert_eq!(remaining(&read)["token"], 4);
        assert!(read.headers.contains_key("x-accepted-scopes"), "{:?}", read.headers);
        let write = client.post("/v3/tags", json!({ "name": "refused" })).await;
        assert_eq!(write.status, 403, "{}", write.body);
        assert_eq!(remaining(&write)["token"], 3);
        assert_eq!(app.get("/v3/tags").await.expect(200)["totalCount"], 0, "a refused change writes nothing");
        // What it may do counts on from there.
        let allowed = client.get("/v3/tags").await;
        assert_eq!(allowed.status, 200, "{}", allowed.body);
        assert_eq!(remaining(&allowed)["token"], 2);
        let unknown = app.as_token("crm_1_NotAToken0000000000000000000000000000").get("/v3/tags").await;
        assert_eq!(unknown.status, 401, "{}", unknown.body);
        assert!(!unknown.headers.contains_key("ratelimit"), "{:?}", unknown.headers);
    }
}

/// The write budget's room: requests never in the way.
fn budget(writes: Policy) -> Limits {
    Limits { token: WIDE, workspace: WIDE, writes }
}

/// Every item but the limiter's own (`W#<ws>#RATE`), in key order.
async fn records(app: &TestApp) -> Vec<String> {
    let mut items: Vec<String> = app
        .every_item()
        .await
        .into_iter()
        .filter(|item| !item["pk"].as_str().unwrap_or_default().ends_with("#RATE"))
        .map(|item| Value::Object(item).to_string())
        .collect();
    items.sort();
    items
}

api_test! {
    /// The workspace's write budget (items by the KB a second, a transaction
    /// at least 10; API writes and jobs together): an API write past it is a
    /// 429 in the error shape naming it, with `Retry-After`, that writes
    /// nothing; once the window has passed, writes go through again. A
    /// made-up token naming the workspace takes nothing of its budget.
    async fn a_write_past_the_write_budget_is_a_429_that_writes_nothing(app) {
        let (app, clock) = app.rate_limited(budget(policy(40, 1)));
        let made_up = app.as_token("crm_1_NotAToken0000000000000000000000000000");
        for i in 0..10 {
            made_up.post("/v3/tags", json!({ "name": format!("x{i}") })).await.expect_error(401);
        }
        let (mut refused, mut created) = (None, 0);
        for i in 0..10 {
            let before = records(&app).await;
            let answer = app.post("/v3/tags", json!({ "name": format!("t{i}") })).await;
            if answer.status == 429 {
                refused = Some((answer, before));
                break;
            }
            let policy = answer.headers["ratelimit-policy"].to_str().unwrap().to_owned();
            assert!(policy.ends_with(r#", "writes";q=40;w=1"#), "a write says where the budget stands: {policy}");
            answer.expect(201);
            created += 1;
        }
        // A create counts 10 (7 items, the floor): 4 fit, in leases of 20, 10, 10.
        assert!(created >= 3, "the made-up token took none of the budget: {created} created");
        let (answer, before) = refused.expect("40 items a second hold at most 4 creates");
        assert_eq!(answer.body["statusCode"], 429);
        let message = answer.body["message"].as_str().unwrap();
        assert!(message.starts_with("write budget of the workspace reached: 40 items per 1 s"), "{message}");
        assert_eq!(answer.headers["retry-after"], "1");
        assert_eq!(remaining(&answer)["writes"], 0);
        assert_eq!(records(&app).await, before, "the refused create wrote nothing");
        // Reads are not writes: the budget does not stand in their way, nor
        // in their headers.
        let read = app.get("/v3/tags").await;
        assert!(!read.headers["ratelimit-policy"].to_str().unwrap().contains("writes"), "{:?}", read.headers);
        read.expect(200);
        clock.advance(Duration::seconds(1));
        app.post("/v3/tags", json!({ "name": "later" })).await.expect(201);
    }
}

api_test! {
    /// A keyed create refused by the write budget leaves its key free: the
    /// retry after `Retry-After` runs it, once.
    async fn a_keyed_write_refused_by_the_budget_applies_once_on_retry(app) {
        let (app, clock) = app.rate_limited(budget(policy(40, 1)));
        let mut refused = false;
        for i in 0..10 {
            let answer = app.post_with_key("/v3/tags", &format!("k{i}"), &json!({ "name": format!("t{i}") })).await;
            if answer.status == 429 {
                refused = true;
                // The same key again, after the wait: it runs, once.
                clock.advance(Duration::seconds(1));
                let key = format!("k{i}");
                app.post_with_key("/v3/tags", &key, &json!({ "name": format!("t{i}") })).await.expect(201);
                clock.advance(Duration::seconds(1));
                let again = app.post_with_key("/v3/tags", &key, &json!({ "name": format!("t{i}") })).await;
                again.expect(201);
                let names: Vec<Value> = app.get("/v3/tags?limit=100").await.expect(200)["data"]
                    .as_array().unwrap().iter().map(|t| t["name"].clone()).collect();
                assert_eq!(names.iter().filter(|n| **n == json!(format!("t{i}"))).count(), 1, "{names:?}");
                break;
            }
            answer.expect(201);
        }
        assert!(refused, "40 items a second hold at most 4 creates");
    }
}

api_test! {
    /// A job's writes (an import's) take the write budget only while a fifth
    /// of it stays free: of 100 items a second a job takes 80 at most, and
    /// an API write, another instance, still finds room beside it. A
    /// second later the job takes again.
    async fn a_job_leaves_the_api_a_fifth_of_the_write_budget(app) {
        let limits = budget(policy(100, 1));
        let (job, api) = (Arc::new(Limiter::with(limits)), Arc::new(Limiter::with(limits)));
        let clock = Arc::new(ManualClock::starting_now());
        let store = app.store.clone();
        shared::ids::with_clock(clock.clone(), async {
            let ws = WorkspaceId(1);
            let mut taken = 0;
            while job.admit_writes(&store, ws, 10, Kind::JobWrites).await.refusal().is_none() {
                job.settled().await;
                taken += 10;
                assert!(taken <= 80, "a job took {taken} of 100, past the API's fifth");
            }
            assert!(taken >= 60, "the job took {taken}");
            let answer = api.admit_writes(&store, ws, 10, Kind::Writes).await;
            assert!(answer.refusal().is_none(), "the API's write finds its fifth: {answer:?}");
            api.settled().await;
            clock.advance(Duration::seconds(1));
            assert!(job.admit_writes(&store, ws, 10, Kind::JobWrites).await.refusal().is_none());
        })
        .await;
    }
}

api_test! {
    /// A batch meets the write budget operation by operation: each either
    /// applied or a 429 naming the budget in its result, never half
    /// written; what the batch says it made is what the API holds.
    async fn a_batch_past_the_write_budget_applies_each_operation_or_none(app) {
        let (app, clock) = app.rate_limited(budget(policy(40, 1)));
        let mut refused = 0;
        for round in 0..4 {
            let operations: Vec<Value> = (0..10)
                .map(|i| json!({ "op": "create", "data": { "name": format!("c{round}-{i}") } }))
                .collect();
            let answer = app.post("/v3/contacts/batch", json!({ "operations": operations })).await;
            if answer.status == 429 {
                refused += 1;
                assert!(answer.body["message"].as_str().unwrap().contains("write budget"), "{}", answer.body);
                continue;
            }
            assert!(answer.status == 200 || answer.status == 207, "{}", answer.body);
            for result in answer.body["results"].as_array().unwrap() {
                match result["status"].as_u64().unwrap() {
                    201 => {}
                    429 => {
                        refused += 1;
                        assert!(result["error"]["message"].as_str().unwrap().contains("write budget"), "{result}");
                    }
                    other => panic!("{other}: {result}"),
                }
            }
        }
        assert!(refused > 0, "40 items a second do not hold 40 creates");
        clock.advance(Duration::seconds(2));
        let listed = app.get("/v3/contacts?limit=100").await.expect(200);
        let names: Vec<&str> = listed["data"].as_array().unwrap().iter().map(|c| c["name"].as_str().unwrap()).collect();
        assert_eq!(listed["totalCount"], json!(names.len()), "the count agrees with the records");
        assert!(names.len() < 40, "{names:?}");
    }
}
