//! What every function's `main.rs` does once per cold start: JSON logs, one
//! `SdkConfig`, one DynamoDB client, and the group's Router on the DynamoDB store.
//! Each `main` runs on tokio's current-thread runtime: Lambda sends one event at
//! a time, and one thread serves a request's reads side by side (docs/design.md,
//! "Build and cold start").

use std::sync::Arc;

use crate::config::Config;
use crate::http::{self, AppState, Group};

/// JSON logs for CloudWatch, one line per event; `RUST_LOG` filters (default `info`).
pub fn init_logs() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let _ = tracing_subscriber::fmt()
        .json()
        .with_env_filter(filter)
        .with_ansi(false)
        .without_time() // CloudWatch stamps every line
        .with_current_span(false)
        .with_target(false)
        .try_init();
}

/// The state of a function: the DynamoDB store named by the environment and,
/// where the function has it, the SQS job queue. One `SdkConfig` for both.
pub async fn state() -> AppState {
    let config = Config::from_env();
    let sdk = config.sdk_config().await;
    #[allow(unused_mut)]
    let mut state = AppState::new(Arc::new(config.dynamo_store_with(&sdk)));
    #[cfg(feature = "sqs")]
    {
        if let Some(queue) = config.job_queue_with(&sdk) {
            state.queue = Some(Arc::new(queue));
        }
        if let Some(queue) = config.webhook_queue_with(&sdk) {
            state.deliveries = Some(Arc::new(queue));
        }
    }
    #[cfg(feature = "s3")]
    if let Some(files) = config.files_with(&sdk) {
        state.files = Some(Arc::new(files));
    }
    state
}

/// The state of a function that queues or makes webhook deliveries (the
/// dispatcher, the sender), with logs on and the delivery queue, which it
/// cannot work without.
pub async fn delivering() -> Result<(AppState, crate::queue::SharedQueue), String> {
    init_logs();
    let state = state().await;
    let queue = state
        .deliveries
        .clone()
        .ok_or("CRM_WEBHOOK_QUEUE_URL is not set")?;
    Ok((state, queue))
}

/// The Router of one group, ready for `lambda_http::run`.
pub async fn app(group: Group) -> axum::Router {
    init_logs();
    let state = state().await;
    if std::env::var("CRM_WARM_UP").is_ok_and(|v| v == "1") {
        warm_up(state.store.as_ref()).await;
    }
    http::app(state, vec![group])
}

/// The Router of a group whose routes relay requests through the app of
/// `groups` ([`AppState::with_relay`]): the MCP function.
pub async fn relaying_app(group: Group, groups: fn() -> Vec<Group>) -> axum::Router {
    init_logs();
    let state = state().await.with_relay(groups);
    http::app(state, vec![group])
}

/// With `CRM_WARM_UP=1`: one GetItem of a key that is never written, during
/// init, so the connection (TCP, TLS), the credentials and the SDK's
/// first-request work are paid before the first request rather than by it.
/// Off by default: measured (docs/bench-results.md), it adds a round trip to
/// every init and saves the first call far less, since the first call's reads
/// open their own connections side by side. It pays where init is off the
/// request path (provisioned concurrency). 0.5 RCU per cold start.
async fn warm_up(store: &dyn crate::store::Store) {
    let started = std::time::Instant::now();
    let read = tokio::time::timeout(
        std::time::Duration::from_secs(2),
        store.get(&crate::keys::warm_up(), false),
    )
    .await;
    let ms = started.elapsed().as_secs_f64() * 1000.0;
    match read {
        Ok(Ok(_)) => tracing::debug!(ms, "warm-up read"),
        // Not fatal: the first request opens the connection instead.
        Ok(Err(e)) => tracing::warn!(ms, error = %e, "warm-up read failed"),
        Err(_) => tracing::warn!(ms, "warm-up read timed out"),
    }
}

/// The Router of a group that reads no table (the reference page): no SDK
/// configuration at cold start, and none of the SDK linked into its binary.
pub fn app_without_table(group: Group) -> axum::Router {
    init_logs();
    http::app(AppState::new(Arc::new(NoTable)), vec![group])
}

/// The store of a function that reads no table: every call is refused.
struct NoTable;

#[async_trait::async_trait]
impl crate::store::Store for NoTable {
    async fn get(
        &self,
        _: &crate::store::Key,
        _: bool,
    ) -> Result<Option<crate::store::Item>, crate::store::StoreError> {
        Err(no_table())
    }
    async fn batch_get(
        &self,
        _: &[crate::store::Key],
    ) -> Result<Vec<crate::store::Item>, crate::store::StoreError> {
        Err(no_table())
    }
    async fn query(
        &self,
        _: &crate::store::Query,
    ) -> Result<crate::store::Page, crate::store::StoreError> {
        Err(no_table())
    }
    async fn write(&self, _: Vec<crate::store::Write>) -> Result<(), crate::store::StoreError> {
        Err(no_table())
    }
    fn metrics(&self) -> &crate::store::Metrics {
        static METRICS: std::sync::OnceLock<crate::store::Metrics> = std::sync::OnceLock::new();
        METRICS.get_or_init(crate::store::Metrics::default)
    }
    fn backend(&self) -> &'static str {
        "none"
    }
}

fn no_table() -> crate::store::StoreError {
    crate::store::StoreError::Invalid("this function reads no table".into())
}
