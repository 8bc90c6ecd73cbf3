//! Idempotency keys: a `POST` retried with the same `Idempotency-Key` has its
//! effect once and answers the first response again, whatever the network
//! did in between.
//!
//! One record per (workspace, token, key), kept 24 hours (DynamoDB TTL, and
//! refused on read after expiry on both stores). A key belongs to the token
//! that sent it: the same key from another token is another request, so a
//! replay can never hand one token what another was given (its scope check
//! is the route's, made before). The kept answer is sealed for that token
//! ([`seal`]). Its life:
//!
//! 1. **running**: claimed by a conditional put before the handler runs. Of
//!    concurrent requests with one key exactly one claims it; the others get
//!    409 (or the stored answer once there is one). The claim's version is
//!    drawn at random by the request, so it names this request's claim: a
//!    claim sent again after its answer was lost is recognised as the
//!    request's own, and a claim the request gives back is its own.
//! 2. **applied**: every transaction the handler commits ([`Mutation`]) also
//!    moves the record, on the condition that its claim still holds. So the
//!    effect and the record of it are one write: no crash can leave either
//!    without the other (Stripe records the key beside the write, not in it).
//!    The first such write also keeps where the answer can be read again
//!    ([`ReadBack`]: the created record's path and the status), for routes
//!    that declare it.
//! 3. **done**: the status and body of the answer (sealed, with its
//!    [`marks`]), written after the handler; or, when the answer cannot be
//!    kept (its commit's outcome was unknown to the store, or it is too
//!    large), only that it is to be read back.
//! 4. **erased**: the answer held a person since erased, or its request
//!    made or changed them: the answer is dropped and the key kept, so that
//!    a retry is told so (410) and never runs again ([`erased`]).
//!
//! A request that fails before any write (a 4xx or 5xx with no commit) gives
//! its claim back, so a corrected retry with the same key runs. A request
//! runs at most [`DEADLINE`]; a claim whose process died (or whose giving
//! back failed) blocks its key until [`LEASE`], then is taken over. An applied
//! request whose answer was not kept is answered by reading the record it
//! made (`GET` of its [`ReadBack`] path) with the status of the first answer;
//! where the route has no read-back (an answer shown once, such as a new
//! token's secret), with a 409 naming what happened.
//!
//! [`Mutation`]: crate::record::Mutation

mod claim;
pub mod marks;
mod seal;

pub use claim::{Claim, ReadBackRule, finish, scope, stopped};
pub use seal::Sealer;

use axum::http::StatusCode;
use serde::{Deserialize, Serialize};

use crate::error::{ApiError, ApiResult};
use crate::ids::{self, Timestamp, WorkspaceId, sha256_hex};
use crate::keys;
use crate::record::{self, Personal, Record};
use crate::store::{Condition, Key, Store, StoreError, Write};

/// How long a key is remembered.
pub const RETENTION: chrono::Duration = chrono::Duration::hours(24);
/// How long a request with a key may run: as long as a function may on AWS
/// (`Timeout` in infra/template.yaml); past it, the request is stopped.
pub const DEADLINE: std::time::Duration = std::time::Duration::from_secs(10);
/// How long a claim blocks its key: past [`DEADLINE`], so while it holds,
/// its request may truly still be running.
pub const LEASE: chrono::Duration = chrono::Duration::seconds(15);
/// The longest key, in printable ASCII characters.
pub const MAX_KEY_LEN: usize = 255;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum State {
    Running,
    Applied,
    Done,
    Erased,
}

/// Where the answer of an applied request is read again: a `GET` of `path`,
/// answered with `status` and `headers` (those of the first answer).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReadBack {
    pub path: String,
    pub status: u16,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub headers: Vec<(String, String)>,
}

/// The stored record of one key.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct IdempotencyRecord {
    pub workspace_id: WorkspaceId,
    /// SHA-256 of the token's id and the key, hex ([`record_key`]; the key
    /// itself is the client's and may be anything printable).
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
    /// The answer's body, sealed for the token that sent the key ([`Sealer`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sealed: Option<String>,
    /// The values the answer holds, as [`marks`]: how an erasure finds it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub marks: Vec<String>,
    /// When a person its answer held, or its request made, was erased.
    #[serde(
        default,
        with = "ids::ts_format::option",
        skip_serializing_if = "Option::is_none"
    )]
    pub erased_at: Option<Timestamp>,
    /// Where the answer is read again when `sealed` was not kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_back: Option<ReadBack>,
    #[serde(with = "ids::ts_format")]
    pub lease_until: Timestamp,
    #[serde(with = "ids::ts_format")]
    pub expires_at: Timestamp,
    /// Epoch seconds of `expiresAt`, for DynamoDB's time to live.
    pub ttl: i64,
    /// Drawn at random by the claiming request, then one more at each write:
    /// a condition on it names this request's claim, not any claim of the key.
    pub version: u64,
}

impl Record for IdempotencyRecord {
    const TYPE: &'static str = "IdempotencyKey";
    /// The kept answer, sealed, may hold anyone's data (`erased_over` drops
    /// it); its marks are digests.
    const PERSONAL: Personal = Personal {
        fields: &["sealed"],
        copies: &[],
        plain: &[
            "bodySha256",
            "erasedAt",
            "expiresAt",
            "headers",
            "keySha256",
            "leaseUntil",
            "marks",
            "readBack",
            "route",
            "state",
        ],
    };
    fn key(&self) -> Key {
        keys::idempotency(self.workspace_id, &self.key_sha256)
    }
}

/// The record of `key` sent by token `token_id` in workspace `ws`.
pub fn record_key(ws: WorkspaceId, token_id: &str, key: &str) -> Key {
    keys::idempotency(ws, &key_sha256(token_id, key))
}

fn key_sha256(token_id: &str, key: &str) -> String {
    sha256_hex(format!("{token_id}\n{key}").as_bytes())
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
    /// Answer by reading what the first request made.
    ReadBack(ReadBack),
}

/// Who sends a key: the token's workspace and id, and its sealer.
pub struct Sender {
    pub workspace_id: WorkspaceId,
    pub token_id: String,
    pub sealer: Sealer,
}

/// Claims `key` for this request of `sender`, or says what to answer
/// instead. `rule`: where the route's answer can be read again (its path
/// parameters filled).
pub async fn begin(
    store: &dyn Store,
    sender: Sender,
    key: &str,
    route: &str,
    body: &[u8],
    rule: Option<ReadBackRule>,
) -> ApiResult<Begin> {
    let workspace_id = sender.workspace_id;
    let key_sha256 = key_sha256(&sender.token_id, key);
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
            State::Erased => return Err(erased(existing)),
            State::Done => return answered(store, existing, &sender.sealer).await,
            // Applied, and the request may still be writing its answer.
            State::Applied | State::Running if existing.lease_until > now => {
                return Err(in_progress());
            }
            // Applied by a request that stopped before keeping its answer.
            State::Applied => return answered(store, existing, &sender.sealer).await,
            // A claim whose process died before any write: take it over.
            State::Running => {}
        }
    }
    let expires_at = now + RETENTION;
    let claim = IdempotencyRecord {
        workspace_id,
        key_sha256,
        route: route.to_owned(),
        body_sha256,
        state: State::Running,
        status: None,
        headers: Vec::new(),
        sealed: None,
        marks: Vec::new(),
        erased_at: None,
        read_back: None,
        lease_until: now + LEASE,
        expires_at,
        ttl: expires_at.timestamp(),
        version: rand::random_range(1..1 << 52),
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
        Ok(()) => Ok(Begin::Run(Claim::new(claim, rule, sender.sealer))),
        Err(StoreError::ConditionFailed { .. }) => Err(in_progress()),
        Err(e @ StoreError::Uncertain(_)) => {
            // The claim may stand, and this request answers now: give it
            // back if it does, so the client's retry is not kept waiting.
            claim::give_back(store, &claim).await;
            Err(e.into())
        }
        Err(e) => Err(e.into()),
    }
}

/// The answer of a record whose request is over, opened with the sender's
/// key (the record is the sender's own: its key names the token). One that
/// names a contact erased since (an answer kept after the erasure had read
/// the keys: its request was running then) is left erased, and refused.
async fn answered(
    store: &dyn Store,
    existing: &IdempotencyRecord,
    sealer: &Sealer,
) -> ApiResult<Begin> {
    let opened = existing
        .sealed
        .as_deref()
        .and_then(|sealed| sealer.open(&existing.key_sha256, sealed))
        .and_then(|body| String::from_utf8(body).ok());
    if let Some(body) = &opened
        && names_an_erased_contact(store, existing.workspace_id, body).await?
    {
        let now = ids::now();
        // Moved on meanwhile: the retry is refused all the same.
        let _ = store.write(vec![erased_over(existing, now)?]).await;
        return Err(erased(&IdempotencyRecord {
            erased_at: Some(now),
            ..existing.clone()
        }));
    }
    match (opened, &existing.read_back) {
        (Some(body), _) if existing.state == State::Done => Ok(Begin::Replay {
            status: existing.status.unwrap_or(200),
            headers: existing.headers.clone(),
            body,
        }),
        (_, Some(read_back)) => Ok(Begin::ReadBack(read_back.clone())),
        _ => Err(ApiError::conflict(
            "this request was applied, and its answer (shown once) was not kept; \
             read or list the resource instead",
        )),
    }
}

/// Whether `body` names (as an `id` or a `contactId`) a contact of the
/// erasure ledger of `ws` (`keys::erased_contact`).
async fn names_an_erased_contact(
    store: &dyn Store,
    ws: WorkspaceId,
    body: &str,
) -> ApiResult<bool> {
    fn ids_in(value: &serde_json::Value, into: &mut Vec<u64>) {
        match value {
            serde_json::Value::Object(map) => {
                for (name, member) in map {
                    let id = match member {
                        serde_json::Value::String(s) => s.parse().ok(),
                        serde_json::Value::Number(n) => n.as_u64(),
                        _ => None,
                    };
                    if let (true, Some(id)) = (name == "id" || name == "contactId", id)
                        && !into.contains(&id)
                    {
                        into.push(id);
                    }
                    ids_in(member, into);
                }
            }
            serde_json::Value::Array(items) => items.iter().for_each(|v| ids_in(v, into)),
            _ => {}
        }
    }
    let Ok(json) = serde_json::from_str::<serde_json::Value>(body) else {
        return Ok(false);
    };
    let mut named = Vec::new();
    ids_in(&json, &mut named);
    // GetItems side by side: every function may GetItem its table, and a
    // replay is rare.
    let keys: Vec<Key> = named
        .iter()
        .map(|&id| keys::erased_contact(ws, id))
        .collect();
    let found = futures_util::future::join_all(keys.iter().map(|key| store.get(key, false))).await;
    for entry in found {
        if entry?.is_some() {
            return Ok(true);
        }
    }
    Ok(false)
}

/// 410: the key's request concerned a person erased since.
fn erased(existing: &IdempotencyRecord) -> ApiError {
    let when = existing
        .erased_at
        .map(|at| format!(" at {}", ids::format_ts(&at)))
        .unwrap_or_default();
    ApiError::new(
        StatusCode::GONE,
        format!(
            "this request concerned a person whose data was erased{when}; it is not run or \
             answered again (a new request needs a new Idempotency-Key)"
        ),
    )
}

/// The record as an erasure leaves it: the answer, its marks and headers and
/// where it was read gone, the key kept (until it expires) so that a retry
/// is refused. Written over `record` as it was read.
pub fn erased_over(record: &IdempotencyRecord, at: Timestamp) -> ApiResult<Write> {
    let erased = IdempotencyRecord {
        state: State::Erased,
        status: None,
        headers: Vec::new(),
        sealed: None,
        marks: Vec::new(),
        read_back: None,
        erased_at: Some(at),
        version: record.version + 1,
        ..record.clone()
    };
    Ok(Write::Put {
        item: record::to_item(&erased)?,
        condition: Some(Condition::VersionIs(record.version)),
    })
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
