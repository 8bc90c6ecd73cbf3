//! Authentication: `Authorization: Bearer <token>` on every route.
//!
//! A token is `crm_` followed by 40 random base62 characters. Only its SHA-256 is
//! stored, as the key of a secret item that names the workspace, the token id and
//! the scopes. Authenticating is one strongly consistent GetItem, so a revoked
//! token fails on its very next request. Nothing here caches tokens for the same
//! reason.

use axum::extract::FromRequestParts;
use axum::http::header::AUTHORIZATION;
use axum::http::request::Parts;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::error::ApiError;
use crate::http::{AppState, RequestId};
use crate::ids::WorkspaceId;
use crate::ids::{self, Timestamp};
use crate::keys;
use crate::record::{self, Record};
use crate::store::Key;

/// The recognisable start of every token (secret scanners can look for it).
pub const TOKEN_PREFIX: &str = "crm_";
const TOKEN_RANDOM_CHARS: usize = 40;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Scope {
    /// Operator endpoints: workspaces, the admin audit, admin tokens.
    Admin,
}

/// The authenticated caller of one request.
#[derive(Debug, Clone)]
pub struct Caller {
    pub workspace_id: WorkspaceId,
    pub token_id: String,
    pub scopes: Vec<Scope>,
    pub request_id: String,
}

impl Caller {
    pub fn is_admin(&self) -> bool {
        self.scopes.contains(&Scope::Admin)
    }

    pub fn require_admin(&self) -> Result<(), ApiError> {
        if self.is_admin() {
            Ok(())
        } else {
            Err(ApiError::forbidden(
                "this operation needs a token with the admin scope",
            ))
        }
    }

    /// A caller acting for the system (operator tools), for audit entries.
    pub fn system(workspace_id: impl Into<WorkspaceId>, who: &str) -> Self {
        let workspace_id = workspace_id.into();
        Self {
            workspace_id,
            token_id: who.to_owned(),
            scopes: vec![Scope::Admin],
            request_id: ids::new_ulid(),
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

impl Record for TokenSecret {
    const TYPE: &'static str = "TokenSecret";
    fn key(&self) -> Key {
        keys::token_secret(&self.sha256)
    }
}

/// A new random token secret.
pub fn generate_token() -> String {
    let random = ids::random_base62(TOKEN_RANDOM_CHARS);
    format!("{TOKEN_PREFIX}{random}")
}

pub fn hash_token(token: &str) -> String {
    hex::encode(Sha256::digest(token.as_bytes()))
}

fn bearer(parts: &Parts) -> Result<&str, ApiError> {
    let header = parts.headers.get(AUTHORIZATION).ok_or_else(|| {
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

impl FromRequestParts<AppState> for Caller {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        // Authenticated already (by the Idempotency-Key middleware): no second read.
        if let Some(caller) = parts.extensions.get::<Caller>() {
            return Ok(caller.clone());
        }
        let token = bearer(parts)?;
        let invalid = || ApiError::unauthorized("invalid or revoked token");
        if !token.starts_with(TOKEN_PREFIX) || token.len() > 200 {
            return Err(invalid());
        }
        let secret: TokenSecret = record::get(
            state.store.as_ref(),
            &keys::token_secret(&hash_token(token)),
            true,
        )
        .await?
        .ok_or_else(invalid)?;
        if secret.expires_at.is_some_and(|at| at <= ids::now()) {
            return Err(ApiError::unauthorized("token expired"));
        }
        let request_id = parts
            .extensions
            .get::<RequestId>()
            .map(|r| r.0.clone())
            .unwrap_or_else(ids::new_ulid);
        Ok(Caller {
            workspace_id: secret.workspace_id,
            token_id: secret.token_id,
            scopes: secret.scopes,
            request_id,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_prefixed_random_and_hashed() {
        let a = generate_token();
        let b = generate_token();
        assert_ne!(a, b);
        assert!(a.starts_with("crm_") && a.len() == 44);
        assert!(a[4..].bytes().all(|c| c.is_ascii_alphanumeric()));
        assert_eq!(hash_token(&a).len(), 64);
        // The published SHA-256 test vector of "abc".
        assert_eq!(
            hash_token("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }
}
