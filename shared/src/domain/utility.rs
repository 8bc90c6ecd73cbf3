//! The utility endpoints of the spec whose meaning is plain: the server's time,
//! and a diagnostic of the store.

use serde::{Deserialize, Serialize};

use crate::auth::Caller;
use crate::error::ApiResult;
use crate::ids;
use crate::keys;
use crate::store::Store;

/// `GET /v3/time`.
#[derive(Debug, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Time {
    pub time: String,
    /// Unix milliseconds.
    pub timestamp: i64,
    pub timezone: String,
}

/// `GET /v3/time/utc`.
#[derive(Debug, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct UtcTime {
    pub utc: String,
    pub timestamp: i64,
}

pub fn time() -> Time {
    let now = ids::now();
    Time {
        time: ids::format_ts(&now),
        timestamp: now.timestamp_millis(),
        timezone: "UTC".to_owned(),
    }
}

pub fn utc() -> UtcTime {
    let now = ids::now();
    UtcTime {
        utc: ids::format_ts(&now),
        timestamp: now.timestamp_millis(),
    }
}

/// `GET /v3/test-store`: the store answers a read (the caller's workspace).
#[derive(Debug, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct StoreCheck {
    pub status: String,
    pub backend: String,
    pub latency_ms: f64,
}

/// One strongly consistent read; a store that does not answer is a 503.
pub async fn test_store(store: &dyn Store, caller: &Caller) -> ApiResult<StoreCheck> {
    let started = std::time::Instant::now();
    store
        .get(&keys::workspace(caller.workspace_id), true)
        .await?;
    Ok(StoreCheck {
        status: "ok".to_owned(),
        backend: store.backend().to_owned(),
        latency_ms: (started.elapsed().as_secs_f64() * 1e6).round() / 1e3,
    })
}
