//! The test harness of the API suite.
//!
//! Every test is written once with [`api_test!`] and runs twice: on the embedded
//! store and on DynamoDB Local, each time on a fresh store (a new table per test
//! on DynamoDB Local). Requests go through the composed Router in-process, the
//! same Router `crm serve` serves and each Lambda runs a part of.
//!
//! DynamoDB Local is reached at `CRM_TEST_DYNAMODB_ENDPOINT`, which the test
//! command (`scripts/test.sh`) sets after starting it. Without it the DynamoDB
//! variants say they are skipped, unless `CRM_REQUIRE_DYNAMODB=1` makes that a
//! failure (as the test command does).

use std::sync::Arc;

use axum::Router;
use axum::body::Body;
use embedded_store::EmbeddedStore;
use embedded_store::partitions::PartitionWrites;
use http::{Method, Request, StatusCode};
use http_body_util::BodyExt;
use serde_json::{Value, json};
use shared::domain::workspaces;
use shared::http::AppState;
use shared::keys;
use shared::ratelimit::{Limiter, Limits};
use shared::store::{MetricsSnapshot, SharedStore};
use tower::ServiceExt;

pub use serde_json;

pub mod costs;
mod fault_proxy;
pub mod faults;
mod made;
mod read_back;
pub mod receiver;
pub mod suites;
use faults::{FaultProxy, Faults, FaultyStore};

/// The admin token every test app starts with (workspace 1).
pub const ADMIN_TOKEN: &str = "crm_test_admin_token_0123456789";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Embedded,
    /// The embedded store in a folder: its engine on disk, fsynced commits.
    OnDisk,
    DynamoDb,
}

pub struct TestApp {
    pub router: Router,
    pub store: SharedStore,
    pub backend: Backend,
    /// DynamoDB only: the table of this test.
    pub table: Option<String>,
    /// On disk only: the folder, removed when the test ends.
    pub folder: Option<TempFolder>,
    /// The app's job queue (kept to build the app again, [`TestApp::with_manual_clock`]).
    queue: shared::queue::SharedQueue,
    /// The store as a test reads it whole ([`TestApp::every_item`]).
    whole: Option<Whole>,
    /// The files of bulk jobs: moto's S3 beside DynamoDB Local when it
    /// runs, a folder otherwise ([`test_files`]).
    pub files: shared::files::SharedFiles,
    _files_folder: Option<Arc<TempFolder>>,
    /// The app's rate limiter, once it has one ([`TestApp::rate_limited`]).
    pub limiter: Option<Arc<Limiter>>,
}

/// Where local file URLs of the tests point: requests to it go to the router.
pub const LOCAL_BASE: &str = "http://crm.test";

/// The files of a test app: on DynamoDB, the S3 of the moto server that
/// stands in for SQS (CRM_TEST_SQS_ENDPOINT), so the AWS path (presigned
/// URLs, ranged reads, multipart writes) is the one tested; a folder
/// behind [`LOCAL_BASE`] otherwise.
async fn test_files(backend: Backend) -> (shared::files::SharedFiles, Option<Arc<TempFolder>>) {
    let moto = std::env::var("CRM_TEST_SQS_ENDPOINT")
        .ok()
        .filter(|e| !e.is_empty());
    if let (Backend::DynamoDb, Some(endpoint)) = (backend, moto) {
        let config = shared::config::Config {
            s3_endpoint: Some(endpoint.clone()),
            files_bucket: Some(TEST_BUCKET.to_owned()),
            ..Default::default()
        };
        let sdk = config.sdk_config().await;
        let files = config.files_with(&sdk).expect("a bucket");
        // Made once per process (moto keeps it while it runs).
        if !BUCKET_MADE.load(std::sync::atomic::Ordering::Relaxed) {
            let made = files
                .client()
                .create_bucket()
                .bucket(TEST_BUCKET)
                .send()
                .await;
            if let Err(e) = made {
                let owned = e.as_service_error().is_some_and(|e| {
                    e.is_bucket_already_owned_by_you() || e.is_bucket_already_exists()
                });
                assert!(owned, "create the test bucket on moto: {e:?}");
            }
            BUCKET_MADE.store(true, std::sync::atomic::Ordering::Relaxed);
        }
        return (Arc::new(files), None);
    }
    let folder = Arc::new(TempFolder::new("files"));
    let files =
        shared::files::local::LocalFiles::open(&folder.0, LOCAL_BASE).expect("a files folder");
    (Arc::new(files), Some(folder))
}

const TEST_BUCKET: &str = "crm-test-files";
static BUCKET_MADE: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// A store's own handle, for a test-only full read (never the API's path).
#[derive(Clone)]
enum Whole {
    Embedded(Arc<EmbeddedStore>),
    DynamoDb(Arc<shared::store::dynamo::DynamoStore>),
}

/// A folder under the system's temporary folder, removed on drop.
pub struct TempFolder(pub std::path::PathBuf);

impl TempFolder {
    pub fn new(what: &str) -> Self {
        let path = std::env::temp_dir().join(format!("crm-{what}-{}", shared::ids::new_ulid()));
        std::fs::create_dir_all(&path).expect("a temporary folder");
        Self(path)
    }
}

impl Drop for TempFolder {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A response, its body parsed as JSON (or `Value::Null` when empty).
#[derive(Debug)]
pub struct TestResponse {
    pub status: StatusCode,
    pub headers: http::HeaderMap,
    pub body: Value,
}

impl TestResponse {
    /// Asserts the status, showing the body when it differs.
    #[track_caller]
    pub fn expect(self, status: u16) -> Value {
        assert_eq!(
            self.status.as_u16(),
            status,
            "expected {status}, got {} with body {}",
            self.status,
            self.body
        );
        self.body
    }

    /// Asserts an error of the one error shape, with this status.
    #[track_caller]
    pub fn expect_error(self, status: u16) -> Value {
        let body = self.expect(status);
        assert_eq!(body["statusCode"], json!(status), "error body: {body}");
        assert!(body["error"].is_string(), "error body: {body}");
        assert!(
            body["message"].as_str().is_some_and(|m| !m.is_empty()),
            "error body: {body}"
        );
        assert!(body["requestId"].is_string(), "error body: {body}");
        body
    }

    /// Whether the answer is a replay of an earlier one (`Idempotent-Replayed`).
    pub fn replayed(&self) -> bool {
        self.headers
            .get("idempotent-replayed")
            .is_some_and(|v| v == "true")
    }

    /// Asserts a 400 that names `field` in its details.
    #[track_caller]
    pub fn expect_field_error(self, field: &str) -> Value {
        let body = self.expect_error(400);
        let named = body["details"]
            .as_array()
            .is_some_and(|d| d.iter().any(|p| p["field"] == json!(field)));
        assert!(named, "expected a problem with field {field}, got {body}");
        body
    }
}

/// The suites run with the time-ordered families over shards from
/// 2025-01-01 (`keys::shards`): every id they make is sharded, and an item
/// written with a 2024 id stands for one stored before the cutover.
pub fn shard_layout() {
    shared::keys::shard_from(SHARDED_FROM.parse().expect("an RFC 3339 time"));
}

/// The cutover of [`shard_layout`].
pub const SHARDED_FROM: &str = "2025-01-01T00:00:00Z";

impl TestApp {
    /// Loads one `crm load` line into a workspace, as the operator tool does.
    pub async fn load_line(
        &self,
        workspace: u64,
        line: serde_json::Value,
    ) -> Result<&'static str, shared::ApiError> {
        shared::domain::load_line(
            self.store.as_ref(),
            &shared::auth::Caller::system(workspace, "test"),
            &line.to_string(),
        )
        .await
    }

    pub async fn embedded() -> Self {
        let store = Arc::new(EmbeddedStore::in_memory(keys::GSIS));
        let mut app = Self::with_store(store.clone(), Backend::Embedded, None).await;
        app.whole = Some(Whole::Embedded(store));
        app
    }

    /// The embedded store with its hot-key detector on, and the detector.
    pub async fn counting_partitions() -> (Self, Arc<PartitionWrites>) {
        let store = EmbeddedStore::in_memory(keys::GSIS).count_partitions();
        let partitions = store.partition_writes().expect("counting partitions");
        let app = Self::with_store(Arc::new(store), Backend::Embedded, None).await;
        (app, partitions)
    }

    /// The embedded store in a fresh folder (the engine on disk).
    pub async fn on_disk() -> Self {
        let folder = TempFolder::new("store");
        let store = Arc::new(EmbeddedStore::open(&folder.0, keys::GSIS).expect("open the store"));
        let mut app = Self::with_store(store.clone(), Backend::OnDisk, None).await;
        app.folder = Some(folder);
        app.whole = Some(Whole::Embedded(store));
        app
    }

    /// A backup of the store as it is now, restored: a new store of the same
    /// backend (a new table on DynamoDB Local) holding a copy of every item,
    /// and an app over it.
    pub async fn restored_copy(&self) -> TestApp {
        let items = self.every_item().await;
        let (store, whole): (SharedStore, Whole) = match self.backend {
            Backend::DynamoDb => {
                let (_, _, store) = dynamodb_table().await.expect("DynamoDB Local");
                let store = Arc::new(store);
                (store.clone(), Whole::DynamoDb(store))
            }
            _ => {
                let store = Arc::new(EmbeddedStore::in_memory(keys::GSIS));
                (store.clone(), Whole::Embedded(store))
            }
        };
        for item in items {
            let write = shared::store::Write::Put {
                item,
                condition: None,
            };
            store.write(vec![write]).await.expect("copy an item");
        }
        let mut app = Self::with_store(store, self.backend, None).await;
        app.whole = Some(whole);
        app
    }

    /// The files of the store's folder (on disk only; none otherwise), each
    /// as its bytes: what a copy of the folder, the README's backup, carries.
    pub fn folder_bytes(&self) -> Vec<(std::path::PathBuf, Vec<u8>)> {
        fn walk(dir: &std::path::Path, out: &mut Vec<(std::path::PathBuf, Vec<u8>)>) {
            for entry in std::fs::read_dir(dir).expect("the store's folder") {
                let path = entry.expect("a folder entry").path();
                if path.is_dir() {
                    walk(&path, out);
                } else if let Ok(bytes) = std::fs::read(&path) {
                    out.push((path, bytes));
                }
            }
        }
        let mut files = Vec::new();
        if let Some(folder) = &self.folder {
            walk(&folder.0, &mut files);
        }
        files
    }

    /// Where `needle` (any case) is in the store: the keys of the items that
    /// hold it, and the files of its folder whose bytes do.
    pub async fn places_holding(&self, needle: &str) -> Vec<String> {
        let needle = needle.to_lowercase();
        let mut places: Vec<String> = self
            .every_item()
            .await
            .into_iter()
            .filter(|item| {
                Value::Object(item.clone())
                    .to_string()
                    .to_lowercase()
                    .contains(&needle)
            })
            .map(|item| format!("item {} / {}", item["pk"], item["sk"]))
            .collect();
        for (path, bytes) in self.folder_bytes() {
            let lower = bytes.to_ascii_lowercase();
            if lower.windows(needle.len()).any(|w| w == needle.as_bytes()) {
                places.push(format!("file {}", path.display()));
            }
        }
        places
    }

    /// A fresh table on DynamoDB Local, or `None` (skipped) when it is not running.
    pub async fn dynamodb() -> Option<Self> {
        let (_, table, store) = dynamodb_table().await?;
        let store = Arc::new(store);
        let mut app = Self::with_store(store.clone(), Backend::DynamoDb, Some(table)).await;
        app.whole = Some(Whole::DynamoDb(store));
        Some(app)
    }

    /// The embedded store behind the fault wrapper ([`faults`]).
    pub async fn embedded_with_faults() -> (Self, Faults) {
        let inner: SharedStore = Arc::new(EmbeddedStore::in_memory(keys::GSIS));
        let store = Arc::new(FaultyStore::new(inner));
        let app = Self::with_store(store.clone(), Backend::Embedded, None).await;
        (app, Faults::Store(store))
    }

    /// A fresh table on DynamoDB Local behind the fault proxy ([`faults`]),
    /// or `None` (skipped) when it is not running.
    pub async fn dynamodb_with_faults() -> Option<(Self, Faults)> {
        let (endpoint, table, _) = dynamodb_table().await?;
        let proxy = FaultProxy::start(&endpoint, faults::SLOW).await;
        let mut config = dynamodb_config(&table, proxy.endpoint.clone());
        config.attempt_timeout = Some(faults::ATTEMPT_TIMEOUT);
        let store = config.dynamo_store().await;
        let app = Self::with_store(Arc::new(store), Backend::DynamoDb, Some(table)).await;
        Some((app, Faults::Proxy(proxy)))
    }

    pub async fn with_store(store: SharedStore, backend: Backend, table: Option<String>) -> Self {
        shard_layout();
        // Logs (a 500's cause among them) go to the test's output, shown when it fails.
        let _ = tracing_subscriber::fmt()
            .with_test_writer()
            .with_env_filter("warn")
            .try_init();
        workspaces::bootstrap(
            store.as_ref(),
            "Test workspace",
            Some(ADMIN_TOKEN.to_owned()),
        )
        .await
        .expect("bootstrap workspace 1");
        let webhooks = webhook_settings();
        let (files, files_folder) = test_files(backend).await;
        let queue = local_queue(&store, &webhooks, &files).await;
        // Rate limits are off but where a test turns them on
        // (`TestApp::rate_limited`): the suites send far more than a token's quota.
        let state = AppState::new(store.clone())
            .with_queue(queue.clone())
            .with_webhooks(webhooks)
            .with_files(files.clone())
            .with_limiter(Limiter::off());
        Self {
            router: crm::app(state),
            store,
            backend,
            table,
            folder: None,
            queue,
            whole: None,
            files,
            _files_folder: files_folder,
            limiter: None,
        }
    }

    /// Every item of the store, read whole (a Scan on DynamoDB): for tests
    /// that must see what no request reads, such as an erasure's leftovers.
    pub async fn every_item(&self) -> Vec<shared::store::Item> {
        match self
            .whole
            .as_ref()
            .expect("a store read whole: embedded or DynamoDB")
        {
            Whole::Embedded(store) => store.every_item().expect("read the store"),
            Whole::DynamoDb(store) => {
                let mut items = Vec::new();
                let mut start = None;
                loop {
                    let page = store
                        .client()
                        .scan()
                        .table_name(store.table())
                        .set_exclusive_start_key(start)
                        .send()
                        .await
                        .expect("scan the test table");
                    for item in page.items.unwrap_or_default() {
                        items.push(serde_dynamo::from_item(item).expect("an item"));
                    }
                    start = page.last_evaluated_key;
                    if start.is_none() {
                        return items;
                    }
                }
            }
        }
    }

    /// The same app delivering webhooks as `crm serve` does: a queue whose
    /// runner makes deliveries with `settings`, and the dispatcher following
    /// the log every 20 ms, for as long as the test runs.
    pub async fn delivering(mut self, settings: shared::outbound::Settings) -> Self {
        let queue = local_queue(&self.store, &settings, &self.files).await;
        tokio::spawn(shared::domain::webhooks::follow(
            self.store.clone(),
            queue.clone(),
            std::time::Duration::from_millis(20),
        ));
        let state = AppState::new(self.store.clone())
            .with_queue(queue.clone())
            .with_webhooks(settings)
            .with_files(self.files.clone())
            .with_limiter(Limiter::off());
        self.router = crm::app(state);
        self.queue = queue;
        self
    }

    /// The same app with the write budget `writes` (requests wide), on the
    /// system's clock: its API writes refused past it, its jobs (the local
    /// queue's runner) paced by it, as `crm serve` runs them.
    pub async fn with_write_budget(mut self, writes: shared::ratelimit::Policy) -> Self {
        let wide = shared::ratelimit::Policy {
            quota: 1_000_000,
            window_seconds: 1,
        };
        let limits = Limits {
            token: wide,
            workspace: wide,
            writes,
        };
        let webhooks = webhook_settings();
        let paced = shared::ratelimit::Budgeted::new(
            self.store.clone(),
            Arc::new(Limiter::with(limits)),
            shared::ratelimit::AtLimit::Pace,
        );
        let runner = shared::domain::jobs::Jobs {
            webhooks: Arc::new(webhooks.clone()),
            files: Some(self.files.clone()),
            budgeted: Some(Arc::new(paced)),
        };
        let queue: shared::queue::SharedQueue =
            Arc::new(shared::queue::LocalQueue::start(self.store.clone(), Arc::new(runner)).await);
        let state = AppState::new(self.store.clone())
            .with_queue(queue.clone())
            .with_webhooks(webhooks)
            .with_files(self.files.clone())
            .with_limiter(Limiter::with(limits));
        self.limiter = Some(state.limiter.clone());
        self.router = crm::app(state);
        self.queue = queue;
        self
    }

    /// The same app, its requests reading a clock the test moves (no test
    /// waits for time to pass).
    pub fn with_manual_clock(self) -> (Self, Arc<shared::ids::ManualClock>) {
        self.clocked(Limiter::off())
    }

    /// The app with rate limits `limits` (a workspace's own replace them),
    /// on a clock the test moves.
    pub fn rate_limited(self, limits: Limits) -> (Self, Arc<shared::ids::ManualClock>) {
        self.clocked(Limiter::with(limits))
    }

    fn clocked(mut self, limiter: Limiter) -> (Self, Arc<shared::ids::ManualClock>) {
        let clock = Arc::new(shared::ids::ManualClock::starting_now());
        let state = AppState::new(self.store.clone())
            .with_queue(self.queue.clone())
            .with_webhooks(webhook_settings())
            .with_files(self.files.clone())
            .with_clock(clock.clone())
            .with_limiter(limiter);
        self.limiter = Some(state.limiter.clone());
        self.router = crm::app(state);
        (self, clock)
    }

    pub fn metrics(&self) -> MetricsSnapshot {
        self.store.metrics().snapshot()
    }

    /// Sends a request with the given token (or none).
    pub async fn send(
        &self,
        method: Method,
        path: &str,
        token: Option<&str>,
        body: Option<Value>,
    ) -> TestResponse {
        let mut builder = Request::builder().method(method).uri(path);
        if let Some(token) = token {
            builder = builder.header("authorization", format!("Bearer {token}"));
        }
        let body = match body {
            Some(json) => {
                builder = builder.header("content-type", "application/json");
                Body::from(json.to_string())
            }
            None => Body::empty(),
        };
        self.raw(builder.body(body).expect("a valid request")).await
    }

    /// PUTs `bytes` to a file URL a job answered (the local server's, through
    /// the router; moto's S3, over HTTP): the status.
    pub async fn put_file(&self, url: &str, bytes: Vec<u8>) -> u16 {
        self.file_request(Method::PUT, url, bytes).await.0
    }

    /// GETs a file URL a job answered: the status and the bytes.
    pub async fn get_file(&self, url: &str) -> (u16, Vec<u8>) {
        self.file_request(Method::GET, url, Vec::new()).await
    }

    async fn file_request(&self, method: Method, url: &str, bytes: Vec<u8>) -> (u16, Vec<u8>) {
        let response = if let Some(path) = url.strip_prefix(LOCAL_BASE) {
            let request = Request::builder()
                .method(method)
                .uri(path)
                .body(Body::from(bytes))
                .expect("a request");
            self.router
                .clone()
                .oneshot(request)
                .await
                .expect("an answer")
        } else {
            let client =
                hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
                    .build_http::<http_body_util::Full<bytes::Bytes>>();
            let request = Request::builder()
                .method(method)
                .uri(url)
                .body(http_body_util::Full::new(bytes::Bytes::from(bytes)))
                .expect("a request");
            let response = client
                .request(request)
                .await
                .expect("the file store answers");
            let (parts, body) = response.into_parts();
            let bytes = body.collect().await.expect("a body").to_bytes();
            return (parts.status.as_u16(), bytes.to_vec());
        };
        let status = response.status().as_u16();
        let bytes = response
            .into_body()
            .collect()
            .await
            .expect("a body")
            .to_bytes();
        (status, bytes.to_vec())
    }

    /// Sends a request as it is.
    pub async fn raw(&self, request: Request<Body>) -> TestResponse {
        let response = self
            .router
            .clone()
            .oneshot(request)
            .await
            .expect("the router answers");
        let status = response.status();
        let headers = response.headers().clone();
        let bytes = response
            .into_body()
            .collect()
            .await
            .expect("a body")
            .to_bytes();
        let json = headers
            .get(http::header::CONTENT_TYPE)
            .is_none_or(|v| v.as_bytes().starts_with(b"application/json"));
        let body = if bytes.is_empty() {
            Value::Null
        } else if !json {
            // The reference page and its files: text, not JSON.
            Value::String(String::from_utf8_lossy(&bytes).into_owned())
        } else {
            serde_json::from_slice(&bytes).unwrap_or_else(|e| {
                panic!("a JSON body ({e}): {}", String::from_utf8_lossy(&bytes))
            })
        };
        TestResponse {
            status,
            headers,
            body,
        }
    }

    /// A `POST` with the admin token and an `Idempotency-Key`.
    pub async fn post_with_key(&self, path: &str, key: &str, body: &Value) -> TestResponse {
        self.post_keyed(ADMIN_TOKEN, path, key, body).await
    }

    /// A `POST` with `token` and an `Idempotency-Key`.
    pub async fn post_keyed(
        &self,
        token: &str,
        path: &str,
        key: &str,
        body: &Value,
    ) -> TestResponse {
        let request = Request::builder()
            .method(Method::POST)
            .uri(path)
            .header("authorization", format!("Bearer {token}"))
            .header("content-type", "application/json")
            .header("idempotency-key", key)
            .body(Body::from(body.to_string()))
            .expect("a valid request");
        self.raw(request).await
    }

    /// An event of workspace 1 as the log kept it before its shards: made
    /// at `at` (before [`SHARDED_FROM`]), in `W#1#EVENT`, kept 30 days from
    /// now. Answers its cursor.
    pub async fn an_old_event(&self, kind: &str, resource_id: &str, at: &str) -> String {
        use shared::record::{Event, EventData, StoredEvent};
        let at: shared::ids::Timestamp = at.parse().expect("an RFC 3339 time");
        let cursor = shared::domain::events::cursor_at(at);
        let (resource, _) = kind.split_once('.').expect("resource.verb");
        let stored = StoredEvent {
            event: Event {
                id: format!("evt_{cursor}"),
                kind: kind.to_owned(),
                workspace_id: shared::ids::WorkspaceId(1),
                occurred_at: at,
                cursor: cursor.clone(),
                resource: resource.to_owned(),
                resource_id: resource_id.to_owned(),
                version: Some(1),
                data: EventData {
                    object: json!({ "id": resource_id, "name": "from before" }),
                    previous: None,
                },
                token_id: "legacy".into(),
                request_id: "legacy".into(),
            },
            ttl: (chrono::Utc::now() + chrono::Duration::days(30)).timestamp(),
        };
        let item = shared::record::to_item(&stored).expect("an item");
        assert_eq!(
            item["pk"],
            json!("W#1#EVENT"),
            "an event from before is in shard 0"
        );
        self.store
            .write(vec![shared::store::Write::Put {
                item,
                condition: None,
            }])
            .await
            .expect("the event written");
        cursor
    }

    /// Where workspace 1's events are stored: each cursor with its partition.
    pub async fn stored_events(&self) -> Vec<(String, String)> {
        let mut stored = Vec::new();
        for partition in keys::event_partitions(shared::ids::WorkspaceId(1)) {
            let query = shared::store::Query::new(
                shared::store::Index::TABLE,
                partition.clone(),
                shared::store::SkRange::All,
            );
            let items = shared::page::read_up_to(self.store.as_ref(), query, 10_000)
                .await
                .expect("the log read");
            for item in items {
                let cursor = item["sk"].as_str().expect("a cursor").to_owned();
                stored.push((cursor, partition.clone()));
            }
        }
        stored.sort();
        stored
    }

    /// Creates a contact (a deal needs one) and answers its id.
    pub async fn a_contact(&self) -> u64 {
        let contact = self
            .post(
                "/v3/contacts",
                json!({ "name": "Buyer", "phone": "11987654321" }),
            )
            .await
            .expect(201);
        contact["id"]
            .as_str()
            .expect("a contact id")
            .parse()
            .expect("a numeric id")
    }

    /// Creates a tag named `name` and answers its path (`/v3/tags/{id}`).
    pub async fn tag_path(&self, name: &str) -> String {
        let tag = self
            .post("/v3/tags", json!({ "name": name }))
            .await
            .expect(201);
        format!("/v3/tags/{}", tag["id"].as_str().expect("a tag id"))
    }

    /// The same calls with the admin token of workspace 1.
    pub async fn get(&self, path: &str) -> TestResponse {
        self.send(Method::GET, path, Some(ADMIN_TOKEN), None).await
    }
    pub async fn post(&self, path: &str, body: Value) -> TestResponse {
        self.send(Method::POST, path, Some(ADMIN_TOKEN), Some(body))
            .await
    }
    pub async fn patch(&self, path: &str, body: Value) -> TestResponse {
        self.send(Method::PATCH, path, Some(ADMIN_TOKEN), Some(body))
            .await
    }
    pub async fn delete(&self, path: &str) -> TestResponse {
        self.send(Method::DELETE, path, Some(ADMIN_TOKEN), None)
            .await
    }

    /// `PUT /v3/reports/sessions/{id}`, which must answer 201 or 200; its body.
    pub async fn put_session(&self, id: &str, body: Value) -> Value {
        let path = format!("/v3/reports/sessions/{id}");
        let r = self
            .send(Method::PUT, &path, Some(ADMIN_TOKEN), Some(body))
            .await;
        let status = r.status.as_u16();
        assert!(status == 200 || status == 201, "{status} {}", r.body);
        r.body
    }

    /// DynamoDB only: the stream of a new table made as `crm create-table`
    /// makes it (the test's own table has none, [`Stream::Off`]), as
    /// DescribeTable tells it: (enabled, its view type).
    pub async fn declared_table_stream() -> Option<(bool, String)> {
        let (endpoint, _, _) = dynamodb_table().await?;
        let table = format!("crm-test-{}", shared::ids::new_ulid().to_lowercase());
        let store = dynamodb_config(&table, endpoint).dynamo_store().await;
        store
            .create_table(keys::GSIS, shared::store::dynamo::Stream::Declared)
            .await
            .expect("create a table as crm create-table does");
        let described = store
            .client()
            .describe_table()
            .table_name(store.table())
            .send()
            .await
            .expect("describe the test table");
        let stream = described.table?.stream_specification?;
        let view = stream.stream_view_type.map(|v| v.as_str().to_owned());
        Some((stream.stream_enabled, view.unwrap_or_default()))
    }

    /// Where the record of the admin token's `Idempotency-Key` `key` is kept.
    pub async fn key_record(&self, key: &str) -> shared::store::Key {
        let me = self.get("/v3/api-tokens/self").await.expect(200);
        let token_id = me["id"].as_str().expect("the token's id");
        shared::idempotency::record_key(shared::ids::WorkspaceId(1), token_id, key)
    }

    /// A client of this app acting with another token.
    pub fn as_token<'a>(&'a self, token: &'a str) -> Client<'a> {
        Client { app: self, token }
    }

    /// A new workspace (through the API) and a client with its first token.
    /// Moves a stored item's expiry (`attribute`, and its `ttl`) into the past,
    /// as if its time had come: expiry is tested without waiting for it.
    pub async fn expire(&self, key: shared::store::Key, attribute: &str) {
        let mut item = self.store.get(&key, true).await.unwrap().expect("the item");
        let past = chrono::Utc::now() - chrono::Duration::seconds(1);
        item.insert(attribute.into(), shared::ids::format_ts(&past).into());
        if item.contains_key(shared::store::TTL) {
            item.insert(shared::store::TTL.into(), past.timestamp().into());
        }
        let write = shared::store::Write::Put {
            item,
            condition: None,
        };
        self.store.write(vec![write]).await.unwrap();
    }

    pub async fn new_workspace(&self, name: &str) -> (u64, String) {
        let body = self
            .post("/v3/workspaces", json!({ "name": name }))
            .await
            .expect(201);
        let id = body["workspace"]["workspaceId"]
            .as_u64()
            .expect("a workspace id");
        let token = body["token"]["token"]
            .as_str()
            .expect("a token secret")
            .to_owned();
        (id, token)
    }
}

/// DynamoDB Local's endpoint, a fresh table on it and a store of that table,
/// or `None` (skipped) when it is not running.
async fn dynamodb_table() -> Option<(String, String, shared::store::dynamo::DynamoStore)> {
    let Some(endpoint) = std::env::var("CRM_TEST_DYNAMODB_ENDPOINT")
        .ok()
        .filter(|e| !e.is_empty())
    else {
        if std::env::var("CRM_REQUIRE_DYNAMODB").is_ok_and(|v| v == "1") {
            panic!("CRM_REQUIRE_DYNAMODB=1 but CRM_TEST_DYNAMODB_ENDPOINT is not set");
        }
        eprintln!("skipped: DynamoDB Local is not running (use scripts/test.sh)");
        return None;
    };
    let table = format!("crm-test-{}", shared::ids::new_ulid().to_lowercase());
    let store = dynamodb_config(&table, endpoint.clone())
        .dynamo_store()
        .await;
    store
        .create_table(keys::GSIS, shared::store::dynamo::Stream::Off)
        .await
        .expect("create the test table");
    Some((endpoint, table, store))
}

fn dynamodb_config(table: &str, endpoint: String) -> shared::config::Config {
    shared::config::Config {
        table: table.to_owned(),
        dynamodb_endpoint: Some(endpoint),
        ..Default::default()
    }
}

/// Requests with one token.
pub struct Client<'a> {
    app: &'a TestApp,
    token: &'a str,
}

impl Client<'_> {
    pub async fn get(&self, path: &str) -> TestResponse {
        self.app
            .send(Method::GET, path, Some(self.token), None)
            .await
    }
    pub async fn post(&self, path: &str, body: Value) -> TestResponse {
        self.app
            .send(Method::POST, path, Some(self.token), Some(body))
            .await
    }
    pub async fn patch(&self, path: &str, body: Value) -> TestResponse {
        self.app
            .send(Method::PATCH, path, Some(self.token), Some(body))
            .await
    }
    pub async fn delete(&self, path: &str) -> TestResponse {
        self.app
            .send(Method::DELETE, path, Some(self.token), None)
            .await
    }
}

/// Writes one test that runs on both backends, as `<name>::embedded` and
/// `<name>::dynamodb`.
#[macro_export]
macro_rules! api_test {
    ($(#[$meta:meta])* async fn $name:ident($app:ident) $body:block) => {
        $(#[$meta])*
        mod $name {
            #[allow(unused_imports)]
            use super::*;

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn embedded() {
                let $app = $crate::TestApp::embedded().await;
                $body
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn dynamodb() {
                let Some($app) = $crate::TestApp::dynamodb().await else { return };
                $body
            }
        }
    };
}

/// Like [`api_test!`], with the store's faults in hand ([`faults`]): on the
/// embedded store behind the fault wrapper, and on DynamoDB Local behind the
/// fault proxy.
#[macro_export]
macro_rules! fault_test {
    ($(#[$meta:meta])* async fn $name:ident($app:ident, $faults:ident) $body:block) => {
        $(#[$meta])*
        mod $name {
            #[allow(unused_imports)]
            use super::*;

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn embedded() {
                let ($app, $faults) = $crate::TestApp::embedded_with_faults().await;
                $body
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn dynamodb() {
                let Some(($app, $faults)) = $crate::TestApp::dynamodb_with_faults().await else { return };
                $body
            }
        }
    };
}

/// How the tests deliver webhooks: to the test's own receiver on
/// 127.0.0.1, a schedule of milliseconds instead of days.
pub fn webhook_settings() -> shared::outbound::Settings {
    shared::outbound::Settings {
        schedule: shared::outbound::parse_durations("50ms,100ms,100ms,200ms,200ms").unwrap(),
        timeout: std::time::Duration::from_secs(5),
        concurrency: 4,
        disable_after: std::time::Duration::from_secs(5 * 86_400),
        allow_private: true,
    }
}

async fn local_queue(
    store: &SharedStore,
    webhooks: &shared::outbound::Settings,
    files: &shared::files::SharedFiles,
) -> shared::queue::SharedQueue {
    let runner = shared::domain::jobs::Jobs {
        webhooks: Arc::new(webhooks.clone()),
        files: Some(files.clone()),
        budgeted: None,
    };
    Arc::new(shared::queue::LocalQueue::start(store.clone(), Arc::new(runner)).await)
}

/// A queue that only records what it is sent, for tests that run the import
/// worker themselves (to redeliver, or to run it twice at once).
#[derive(Default)]
pub struct RecordingQueue(pub std::sync::Mutex<Vec<shared::queue::JobMessage>>);

#[async_trait::async_trait]
impl shared::queue::JobQueue for RecordingQueue {
    async fn send_after(
        &self,
        message: &shared::queue::JobMessage,
        _: std::time::Duration,
    ) -> Result<(), String> {
        self.0.lock().unwrap().push(message.clone());
        Ok(())
    }
}

/// Like [`api_test!`], and a third time on the embedded store on disk
/// (`<name>::on_disk`): for the store's own semantics.
#[macro_export]
macro_rules! store_test {
    ($(#[$meta:meta])* async fn $name:ident($app:ident) $body:block) => {
        $(#[$meta])*
        mod $name {
            #[allow(unused_imports)]
            use super::*;

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn embedded() {
                let $app = $crate::TestApp::embedded().await;
                $body
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn on_disk() {
                let $app = $crate::TestApp::on_disk().await;
                $body
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn dynamodb() {
                let Some($app) = $crate::TestApp::dynamodb().await else { return };
                $body
            }
        }
    };
}

/// Waits (boundedly) for the background job to compute a snapshot; answers it.
pub async fn computed_snapshot(app: &TestApp, dashboard: &str, snapshot: &str) -> Value {
    let path = format!("/v3/dashboards/{dashboard}/snapshots/{snapshot}");
    for _ in 0..400 {
        let s = app.get(&path).await.expect(200);
        if s["status"]["state"] == "done" {
            return s;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    panic!("snapshot {snapshot} was not computed");
}

/// A token of workspace 1 holding `scopes`, made by the admin token.
pub async fn token_with(app: &TestApp, scopes: &[shared::auth::Scope]) -> String {
    let scopes: Vec<String> = scopes.iter().map(ToString::to_string).collect();
    let created = app
        .post(
            "/v3/api-tokens",
            json!({ "name": "scoped", "scopes": scopes }),
        )
        .await
        .expect(201);
    created["token"].as_str().unwrap().to_owned()
}
