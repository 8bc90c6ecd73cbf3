//! Redirect sessions (`POST /v3/redirect-session`, `GET
//! /v3/redirect-session/{key}`): a short-lived handoff, such as carrying a
//! signed-in user from one app to another. The POST stores a small JSON payload
//! and a target URL under an unguessable key (142 bits) for 10 to 3,600 seconds
//! (default 300). The GET answers it **once**: reading it deletes it in the same
//! conditional write, so a key that leaked after use, or two racing readers,
//! get a 404. After its expiry it is a 404 too; DynamoDB's time to live removes
//! it later.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use validator::Validate;

use crate::auth::Caller;
use crate::error::{ApiError, ApiResult};
use crate::ids::{self, Timestamp, WorkspaceId};
use crate::keys;
use crate::record::{self, Mutation, Personal, Record, Stamps};
use crate::store::{Key, Store};

/// The largest payload, as JSON.
pub const MAX_PAYLOAD_BYTES: usize = 8 * 1024;
pub const DEFAULT_SECONDS: u32 = 300;

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RedirectSession {
    pub key: String,
    pub workspace_id: WorkspaceId,
    pub target_url: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub payload: Option<Value>,
    #[schemars(with = "crate::ids::Timestamp")]
    #[serde(with = "ids::ts_format")]
    pub expires_at: Timestamp,
    /// Epoch seconds of `expiresAt`, for DynamoDB's time to live.
    pub ttl: i64,
    /// The token that created it.
    pub created_by: String,
    #[serde(flatten)]
    pub stamps: Stamps,
}

impl Record for RedirectSession {
    const TYPE: &'static str = "RedirectSession";
    const PERSONAL: Personal = Personal {
        fields: &[],
        copies: &["payload"],
        plain: &["createdBy", "expiresAt", "key", "targetUrl"],
    };
    fn key(&self) -> Key {
        keys::redirect_session(self.workspace_id, &self.key)
    }
}

/// A redirect session as the API shows it.
#[derive(Debug, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RedirectSessionView {
    pub key: String,
    pub workspace_id: WorkspaceId,
    pub target_url: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub payload: Option<Value>,
    #[schemars(with = "crate::ids::Timestamp")]
    #[serde(with = "ids::ts_format")]
    pub expires_at: Timestamp,
    #[schemars(with = "crate::ids::Timestamp")]
    #[serde(with = "ids::ts_format")]
    pub created_at: Timestamp,
}

impl From<RedirectSession> for RedirectSessionView {
    fn from(s: RedirectSession) -> Self {
        Self {
            key: s.key,
            workspace_id: s.workspace_id,
            target_url: s.target_url,
            payload: s.payload,
            expires_at: s.expires_at,
            created_at: s.stamps.created_at,
        }
    }
}

/// `POST /v3/redirect-session`.
#[derive(Debug, Deserialize, Validate, schemars::JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RedirectSessionCreate {
    #[validate(
        length(min = 1, max = 2048),
        custom(function = "crate::validate::web_url")
    )]
    #[schemars(pattern(crate::validate::WEB_URL_PATTERN))]
    pub target_url: String,
    pub payload: Option<Value>,
    #[validate(range(min = 10, max = 3600))]
    pub expires_in_seconds: Option<u32>,
}

pub async fn create(
    store: &dyn Store,
    caller: &Caller,
    input: RedirectSessionCreate,
) -> ApiResult<RedirectSession> {
    if let Some(payload) = &input.payload {
        let bytes = serde_json::to_vec(payload)
            .map_err(ApiError::internal)?
            .len();
        if bytes > MAX_PAYLOAD_BYTES {
            return Err(ApiError::field("payload", "must be at most 8 KB of JSON"));
        }
    }
    let seconds = input.expires_in_seconds.unwrap_or(DEFAULT_SECONDS);
    let stamps = Stamps::new();
    let expires_at = stamps.created_at + chrono::Duration::seconds(seconds.into());
    let session = RedirectSession {
        key: ids::unguessable(),
        workspace_id: caller.workspace_id,
        target_url: input.target_url,
        payload: input.payload,
        expires_at,
        ttl: ids::epoch_seconds(&expires_at),
        created_by: caller.token_id().await?.to_owned(),
        stamps,
    };
    let mut m = Mutation::new(caller);
    m.create(&session)?;
    m.commit(store, "redirectSession.create", "redirectSession", "-")
        .await?;
    Ok(session)
}

/// Answers the session once: it is deleted by the same read. Unknown, used and
/// expired keys are all 404.
pub async fn take(store: &dyn Store, caller: &Caller, key: &str) -> ApiResult<RedirectSession> {
    const WHAT: &str = "redirect session";
    if !ids::is_unguessable(key) {
        return Err(ApiError::not_found(WHAT));
    }
    let k = keys::redirect_session(caller.workspace_id, key);
    let session: RedirectSession = record::find(store, &k, true, WHAT).await?;
    if ids::now() >= session.expires_at {
        return Err(ApiError::not_found(WHAT));
    }
    let mut m = Mutation::new(caller);
    m.delete(k, WHAT);
    // The audit names no key: it would let a reader of the audit replay it.
    m.commit(store, "redirectSession.use", "redirectSession", "-")
        .await?;
    Ok(session)
}

/// The stored items of item_shapes/redirects.json read back (domain::item_shapes).
#[cfg(test)]
mod shapes {
    use crate::domain::item_shapes::{round_trip, texts_declared};

    #[test]
    fn redirect_sessions_keep_their_shape() {
        round_trip::<crate::domain::redirects::RedirectSession>("RedirectSession");
        texts_declared::<crate::domain::redirects::RedirectSession>();
    }
}
