//! Idempotency keys: a `POST` retried with the same `Idempotency-Key` has its
//! effect once and answers the first response again.
//!
//! One record per (workspace, key), kept 24 hours (DynamoDB TTL, and refused
//! on read after expiry on both stores). Its life:
//!
//! 1. **running**: claimed by a conditional put before the handler runs. Of
//!    concurrent requests with one key exactly one claims it; the others get
//!    409 (or the stored answer once there is one).
//! 2. **applied**: every transaction the handler commits ([`Mutation`]) also
//!    moves the record, on the condition that its claim still holds. So the
//!    effect and the record of it are one write: no crash can leave either
//!    without the other (Stripe records the key beside the write, not in it).
//! 3. **done**: the status and body of the answer, written after the handler.
//!
//! A request that fails before any write (a 4xx or 5xx with no commit) gives
//! its claim back, so a corrected retry with the same key runs. A claim whose
//! process died before any write is taken over after [`LEASE`]. A record that
//! was applied but whose answer was lost (a crash between the two writes, or an
//! answer too large to keep) answers 409 naming what happened.
//!
//! [`Mutation`]: crate::record::Mutation

use std::sync::{Arc, Mutex};

use axum::http::StatusCode;
use serde::{Deserialize, Serialize};

use crate::error::{ApiError, ApiResult};
use crate::ids::{self, Timestamp, WorkspaceId, sha256_hex};
use crate::keys;
use crate::record::{self, Record};
use crate::store::{Condition, Key, Store, StoreError, Write};

/// How long a key is remembered.
pub const RETENTION: chrono::Duration = chrono::Duration::hours(24);
/// How long a claim without any write blocks its key (longer than any request).
pub const LEASE: chrono::Duration = chrono::Duration::seconds(60);
/// The longest key, in printable ASCII characters.
pub const MAX_KEY_LEN: usize = 255;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum State {
    Running,
    Applied,
    Done,
}

/// The stored record of one key.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct IdempotencyRecord {
    pub workspace_id: WorkspaceId,
    /// SHA-256 of the key, hex (the key itself is the client's and may be anything printable).
    pub key_sha256: String,
    /// `POST /v3/tags`: the method and the path as requested.
    pub route: String,
    /// SHA-256 of the body, hex.
    pub body_sha256: String,
    pub state: State,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    /// The answer's headers worth replaying (content type and the API's own).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub headers: Vec<(String, String)>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<String>,
    #[serde(with = "ids::ts_format")]
    pub lease_until: Timestamp,
    #[serde(with = "ids::ts_format")]
    pub expires_at: Timestamp,
    /// Epoch seconds of `expiresAt`, for DynamoDB's time to live.
    pub ttl: i64,
    pub version: u64,
}

impl Record for IdempotencyRecord {
    const TYPE: &'static str = "IdempotencyKey";
    fn key(&self) -> Key {
        keys::idempotency(self.workspace_id, &self.key_sha256)
    }
}

/// Whether a header value is a usable key: 1..=255 printable ASCII characters.
pub fn valid_key(key: &str) -> bool {
    !key.is_empty() && key.len() <= MAX_KEY_LEN && key.bytes().all(|b| (0x20..=0x7e).contains(&b))
}

/// What a request with a key is to do.
pub enum Begin {
    /// Run the handler under this claim.
    Run(Claim),
    /// Answer the stored response again.
    Replay {
        status: u16,
        headers: Vec<(String, String)>,
        body: String,
    },
}

/// A claim held by the request being served (shared with the writes below it).
#[derive(Clone)]
pub struct Claim(Arc<Mutex<IdempotencyRecord>>);

impl Claim {
    fn record(&self) -> IdempotencyRecord {
        self.0.lock().expect("claim lock").clone()
    }

    /// Whether a write of the request has committed.
    pub fn applied(&self) -> bool {
        self.record().state != State::Running
    }
}

/// Claims `key` for this request, or says what to answer instead.
pub async fn begin(
    store: &dyn Store,
    workspace_id: WorkspaceId,
    key: &str,
    route: &str,
    body: &[u8],
) -> ApiResult<Begin> {
    let key_sha256 = sha256_hex(key.as_bytes());
    let body_sha256 = sha256_hex(body);
    let now = ids::now();
    let stored: Option<IdempotencyRecord> =
        record::get(store, &keys::idempotency(workspace_id, &key_sha256), true).await?;
    let live = stored.as_ref().filter(|r| r.expires_at > now);
    if let Some(existing) = live {
        if existing.route != route {
            return Err(reused(format!("was used for {}", existing.route)));
        }
        if existing.body_sha256 != body_sha256 {
            return Err(reused("was used with a different body".to_owned()));
        }
        match existing.state {
            State::Done => {
                return Ok(Begin::Replay {
                    status: existing.status.unwrap_or(200),
                    headers: existing.headers.clone(),
                    body: existing.body.clone().unwrap_or_default(),
                });
            }
            // Applied, and the request may still be writing its answer.
            State::Applied | State::Running if existing.lease_until > now => {
                return Err(in_progress());
            }
            State::Applied => {
                return Err(ApiError::conflict(
                    "this request was applied, but its response was not kept; read the resource instead",
                ));
            }
            // A claim whose process died before any write: take it over.
            State::Running => {}
        }
    }
    let version = stored.as_ref().map_or(0, |r| r.version) + 1;
    let expires_at = now + RETENTION;
    let claim = IdempotencyRecord {
        workspace_id,
        key_sha256,
        route: route.to_owned(),
        body_sha256,
        state: State::Running,
        status: None,
        headers: Vec::new(),
        body: None,
        lease_until: now + LEASE,
        expires_at,
        ttl: expires_at.timestamp(),
        version,
    };
    // An expired record still in the table (TTL is lazy) is replaced like a
    // dead claim: on the condition that it is still the one read.
    let condition = match &stored {
        Some(existing) => Condition::VersionIs(existing.version),
        None => Condition::NotExists,
    };
    let write = vec![Write::Put {
        item: record::to_item(&claim)?,
        condition: Some(condition),
    }];
    match store.write(write).await {
        Ok(()) => Ok(Begin::Run(Claim(Arc::new(Mutex::new(claim))))),
        Err(StoreError::ConditionFailed { .. }) => Err(in_progress()),
        Err(e) => Err(e.into()),
    }
}

fn in_progress() -> ApiError {
    ApiError::conflict("a request with this Idempotency-Key is in progress; retry later")
        .retry_after(1)
}

fn reused(what: String) -> ApiError {
    ApiError::new(
        StatusCode::UNPROCESSABLE_ENTITY,
        format!("this Idempotency-Key {what}; use a new key for a new request"),
    )
}

tokio::task_local! {
    static CLAIM: Claim;
}

/// Runs `f` (the handler) under `claim`: its commits carry the claim.
pub async fn scope<F: std::future::Future>(claim: Claim, f: F) -> F::Output {
    CLAIM.scope(claim, f).await
}

/// The write that moves the current request's claim to `applied`, for the
/// transaction being committed, and the version it will have. `None` outside
/// a request with a key.
pub fn guard_write() -> Option<ApiResult<(Write, u64)>> {
    CLAIM
        .try_with(|claim| {
            let mut next = claim.record();
            let condition = Condition::VersionIs(next.version);
            next.version += 1;
            next.state = State::Applied;
            let version = next.version;
            record::to_item(&next).map(|item| {
                (
                    Write::Put {
                        item,
                        condition: Some(condition),
                    },
                    version,
                )
            })
        })
        .ok()
}

/// The transaction carrying [`guard_write`] committed.
pub fn guarded(version: u64) {
    let _ = CLAIM.try_with(|claim| {
        let mut record = claim.0.lock().expect("claim lock");
        record.version = version;
        record.state = State::Applied;
    });
}

/// The error of a transaction whose guard failed: the claim was taken over.
pub fn lost_claim() -> ApiError {
    ApiError::conflict("the Idempotency-Key of this request was taken over by a retry")
}

/// Keeps the answer of a request that wrote (or succeeded), or gives the
/// claim back when it neither wrote nor succeeded. A failure here is logged:
/// the request's own answer stands.
pub async fn finish(
    store: &dyn Store,
    claim: &Claim,
    status: u16,
    headers: Vec<(String, String)>,
    body: Option<String>,
) {
    let current = claim.record();
    let keep = current.state == State::Applied || (200..300).contains(&status);
    let write = if keep {
        let done = IdempotencyRecord {
            state: if body.is_some() {
                State::Done
            } else {
                State::Applied
            },
            status: Some(status),
            headers,
            body,
            version: current.version + 1,
            ..current.clone()
        };
        match record::to_item(&done) {
            Ok(item) => Write::Put {
                item,
                condition: Some(Condition::VersionIs(current.version)),
            },
            Err(e) => {
                tracing::warn!(error = %e.message, "idempotency record not kept");
                return;
            }
        }
    } else {
        Write::Delete {
            key: current.key(),
            condition: Some(Condition::VersionIs(current.version)),
        }
    };
    if let Err(e) = store.write(vec![write]).await {
        tracing::warn!(error = %e, "idempotency record not kept");
    }
}
