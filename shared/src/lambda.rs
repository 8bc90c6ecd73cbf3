//! What every function's `main.rs` does once per cold start: JSON logs, one
//! `SdkConfig`, one DynamoDB client, and the group's Router on the DynamoDB store.

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
    if let Some(queue) = config.job_queue_with(&sdk) {
        state.queue = Some(Arc::new(queue));
    }
    state
}

/// The Router of one group, ready for `lambda_http::run`.
pub async fn app(group: Group) -> axum::Router {
    init_logs();
    http::app(state().await, vec![group])
}

/// The Router of a group that reads no table (the reference page): no SDK
/// configuration at cold start, and none of the SDK linked into its binary.
pub fn app_without_table(group: Group) -> axum::Router {
    init_logs();
    let empty = crate::store::embedded::EmbeddedStore::in_memory(&[]);
    http::app(AppState::new(Arc::new(empty)), vec![group])
}
