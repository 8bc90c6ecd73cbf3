//! Authentication: `Authorization: Bearer <token>` on every route.
//!
//! A token is `crm_<workspace>_` followed by 32 random base62 characters and a
//! 6-character checksum ([`generate_token`]); tokens made before carry `crm_`
//! and 40 random characters, and still work. Only its SHA-256 is stored, as
//! the key of a secret item that names the workspace, the token id and the
//! scopes. A token whose checksum does not hold is refused without a read.
//! Checking a token is one strongly consistent GetItem, so a revoked token
//! fails on its very next request; nothing caches tokens for that reason.
//!
//! A read (GET) with a token that names its workspace does not wait for that
//! GetItem: its own reads go out beside it and nothing leaves until the token
//! holds ([`check`]). Every other request, and every earlier token, is checked
//! before its handler runs.

mod check;
mod scope;
mod token;

use axum::http::HeaderMap;
use axum::http::header::AUTHORIZATION;
use serde::{Deserialize, Serialize};

pub use check::{Gated, TokenCheck};
pub use scope::{Need, Resource, Scope, grants, missing};
pub use token::{TOKEN_PREFIX, TokenShape, generate_token, hash_token, token_shape};

use crate::error::ApiError;
use crate::ids::WorkspaceId;
use crate::ids::{self, Timestamp};
use crate::store::SharedStore;

/// Who a token is, once its record has been read.
#[derive(Debug, Clone)]
pub struct Identity {
    pub workspace_id: WorkspaceId,
    pub token_id: String,
    pub scopes: Vec<Scope>,
    /// When the token stops working (`None`: never): a webhook endpoint it
    /// registers keeps it with its scopes, and stops with it.
    pub expires_at: Option<Timestamp>,
}

impl Identity {
    pub fn is_admin(&self) -> bool {
        self.has(Scope::Admin)
    }

    /// Whether its scopes grant `scope` ([`grants`]).
    pub fn has(&self, scope: Scope) -> bool {
        grants(&self.scopes, scope)
    }

    /// `Ok` when it may do what `need` asks, the 403 naming the scope otherwise.
    pub fn allows(&self, need: Need) -> Result<(), ApiError> {
        match need.scope() {
            Some(scope) if !self.has(scope) => Err(scope::missing(scope)),
            _ => Ok(()),
        }
    }
}

/// The caller of one request. Its workspace is known at once; who it is (token
/// id, scopes) only once the token's record is read, hence the async accessors.
#[derive(Debug, Clone)]
pub struct Caller {
    pub workspace_id: WorkspaceId,
    pub request_id: String,
    /// Its token's rate-limit bucket: a prefix of the token's SHA-256, known
    /// before the token's record is read.
    pub bucket: String,
    token: TokenCheck,
}

impl Caller {
    /// A caller whose identity is known already.
    pub fn new(identity: Identity, request_id: impl Into<String>) -> Self {
        Self {
            workspace_id: identity.workspace_id,
            request_id: request_id.into(),
            bucket: identity.token_id.clone(),
            token: TokenCheck::settled(identity),
        }
    }

    /// A caller acting for the system (operator tools), for audit entries.
    pub fn system(workspace_id: impl Into<WorkspaceId>, who: &str) -> Self {
        let identity = Identity {
            workspace_id: workspace_id.into(),
            token_id: who.to_owned(),
            scopes: vec![Scope::Admin],
            expires_at: None,
        };
        Self::new(identity, ids::new_ulid())
    }

    /// The same caller acting in another workspace (a change it may make there).
    pub fn acting_in(&self, workspace_id: WorkspaceId) -> Self {
        Self {
            workspace_id,
            ..self.clone()
        }
    }

    /// Who the token is: waits for its record when that is still being read.
    /// A 403 when the token lacks what the request's route needs.
    pub async fn identity(&self) -> Result<&Identity, ApiError> {
        self.token.verdict().await
    }

    /// Whether its token's record was read already: `false` for a read whose
    /// token check goes out beside its own reads ([`check`]).
    pub fn is_checked(&self) -> bool {
        self.token.is_settled()
    }

    /// Whether the token holds (whatever its scopes): a refusal of a token
    /// that holds is a 403, which its rate limits count; one that does not
    /// hold is a 401, which they do not.
    pub async fn holds(&self) -> bool {
        self.token.authenticated().await.is_ok()
    }

    pub async fn token_id(&self) -> Result<&str, ApiError> {
        Ok(&self.identity().await?.token_id)
    }

    pub async fn is_admin(&self) -> Result<bool, ApiError> {
        Ok(self.identity().await?.is_admin())
    }

    pub async fn require_admin(&self) -> Result<(), ApiError> {
        if self.is_admin().await? {
            Ok(())
        } else {
            Err(ApiError::forbidden(
                "this operation needs a token with the admin scope",
            ))
        }
    }
}

/// The stored side of a token: keyed by the SHA-256 of the secret.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TokenSecret {
    pub sha256: String,
    pub workspace_id: WorkspaceId,
    pub token_id: String,
    pub scopes: Vec<Scope>,
    #[schemars(with = "Option<crate::ids::Timestamp>")]
    #[serde(
        default,
        with = "ids::ts_format::option",
        skip_serializing_if = "Option::is_none"
    )]
    pub expires_at: Option<Timestamp>,
}

/// The bearer token of a request's headers.
pub fn bearer(headers: &HeaderMap) -> Result<&str, ApiError> {
    let header = headers.get(AUTHORIZATION).ok_or_else(|| {
        ApiError::unauthorized("missing Authorization header: send `Authorization: Bearer <token>`")
    })?;
    let value = header
        .to_str()
        .map_err(|_| ApiError::unauthorized("malformed Authorization header"))?;
    let (scheme, token) = value
        .split_once(' ')
        .ok_or_else(|| ApiError::unauthorized("Authorization header must be `Bearer <token>`"))?;
    if !scheme.eq_ignore_ascii_case("bearer") || token.trim().is_empty() {
        return Err(ApiError::unauthorized(
            "Authorization header must be `Bearer <token>`",
        ));
    }
    Ok(token.trim())
}

impl Caller {
    /// The caller of a request with `headers`, its token looked up in
    /// `store` (ungated). A request that only reads (`reads_only`: a GET or
    /// HEAD) with a token that names its workspace does not wait for the
    /// lookup: the check is registered as the request's gate, and its reads
    /// go out beside it ([`check`]). Any other waits for the verdict here.
    /// The verdict holds only if the token's scopes grant `need`.
    pub async fn authenticate(
        headers: &HeaderMap,
        reads_only: bool,
        store: SharedStore,
        need: Need,
    ) -> Result<Self, ApiError> {
        let caller = Self::authenticate_counted(headers, reads_only, store, need).await?;
        if caller.is_checked() {
            // Read already (not a gated read): its scopes too, here.
            caller.identity().await?;
        }
        Ok(caller)
    }

    /// [`Caller::authenticate`] for the guard of a route, which counts every
    /// answer to a token that holds in its rate limits: a token that holds
    /// but lacks the scope `need` asks for is a caller all the same, whose
    /// [`Caller::identity`] is that 403. Only a token that does not hold is
    /// refused here (401). The guard answers the 403 before any handler runs.
    pub async fn authenticate_counted(
        headers: &HeaderMap,
        reads_only: bool,
        store: SharedStore,
        need: Need,
    ) -> Result<Self, ApiError> {
        let token = bearer(headers)?;
        let named = match token_shape(token) {
            TokenShape::Malformed => return Err(check::invalid()),
            TokenShape::Current(workspace) => Some(workspace),
            TokenShape::Legacy => None,
        };
        let request_id = crate::context::request_id().unwrap_or_else(ids::new_ulid);
        let sha256 = hash_token(token);
        let bucket = sha256[..16].to_owned();
        let check = TokenCheck::pending(store, sha256, named, need);
        match named {
            Some(workspace_id) if reads_only && crate::context::set_gate(check.clone()) => {
                Ok(Caller {
                    workspace_id,
                    request_id,
                    bucket,
                    token: check,
                })
            }
            _ => {
                let identity = check.authenticated().await?;
                Ok(Caller {
                    workspace_id: identity.workspace_id,
                    request_id,
                    bucket,
                    token: check.clone(),
                })
            }
        }
    }
}
