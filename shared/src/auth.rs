//! Authentication: `Authorization: Bearer <token>` on every route.
//!
//! A token is `crm_<workspace>_` followed by 32 random base62 characters and a
//! 6-character checksum ([`generate_token`]); tokens made before carry
//! `crm_` and 40 random characters, and still work. Only its SHA-256 is
//! stored, as the key of a secret item that names the workspace, the token id and
//! the scopes. A token whose checksum does not hold is refused without a read. Authenticating is one strongly consistent GetItem, so a revoked
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
const TOKEN_RANDOM_CHARS: usize = 32;
const TOKEN_CHECKSUM_CHARS: usize = 6;

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

/// A new token of `workspace`: `crm_<workspace>_<32 random><6 checksum>`, all
/// base62 after the workspace (190 random bits). The workspace tells a request
/// its tenant before any read; the checksum, of everything before it, lets a
/// mistyped or made-up token be refused with no read at all (as GitHub's
/// tokens are). The checksum is no secret: the stored hash is what proves a token.
pub fn generate_token(workspace: WorkspaceId) -> String {
    let body = format!(
        "{TOKEN_PREFIX}{workspace}_{}",
        ids::random_base62(TOKEN_RANDOM_CHARS)
    );
    let checksum = checksum(&body);
    body + &checksum
}

fn checksum(body: &str) -> String {
    Sha256::digest(body.as_bytes())
        .iter()
        .take(TOKEN_CHECKSUM_CHARS)
        .map(|b| ids::BASE62[usize::from(*b) % ids::BASE62.len()] as char)
        .collect()
}

/// What a bearer token says before anything is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenShape {
    /// `crm_<workspace>_...` with a checksum that holds.
    Current(WorkspaceId),
    /// The earlier format (`crm_` and 40 characters) or a chosen bootstrap token.
    Legacy,
    /// The current format with a checksum that does not hold: refused unread.
    Malformed,
}

pub fn token_shape(token: &str) -> TokenShape {
    let Some(rest) = token.strip_prefix(TOKEN_PREFIX) else {
        return TokenShape::Malformed;
    };
    let Some((workspace, tail)) = rest.split_once('_') else {
        return TokenShape::Legacy;
    };
    let current = !workspace.is_empty()
        && workspace.bytes().all(|b| b.is_ascii_digit())
        && tail.len() == TOKEN_RANDOM_CHARS + TOKEN_CHECKSUM_CHARS
        && tail.bytes().all(|b| b.is_ascii_alphanumeric());
    if !current {
        return TokenShape::Legacy;
    }
    let (body, sum) = token.split_at(token.len() - TOKEN_CHECKSUM_CHARS);
    match workspace.parse::<u64>() {
        Ok(id) if checksum(body) == sum => TokenShape::Current(WorkspaceId(id)),
        _ => TokenShape::Malformed,
    }
}

pub fn hash_token(token: &str) -> String {
    ids::sha256_hex(token.as_bytes())
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
        let shape = token_shape(token);
        if shape == TokenShape::Malformed {
            return Err(invalid());
        }
        let secret: TokenSecret = record::get(
            state.store.as_ref(),
            &keys::token_secret(&hash_token(token)),
            true,
        )
        .await?
        .ok_or_else(invalid)?;
        if matches!(shape, TokenShape::Current(ws) if ws != secret.workspace_id) {
            return Err(invalid());
        }
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
    fn tokens_name_their_workspace_and_carry_a_checksum() {
        let a = generate_token(WorkspaceId(42));
        let b = generate_token(WorkspaceId(42));
        assert_ne!(a, b);
        assert!(
            a.starts_with("crm_42_") && a.len() == "crm_42_".len() + 38,
            "{a}"
        );
        assert!(a[7..].bytes().all(|c| c.is_ascii_alphanumeric()));
        assert_eq!(token_shape(&a), TokenShape::Current(WorkspaceId(42)));
        // Any one character changed is caught by the checksum (or reads as
        // another shape, which the stored hash then refuses).
        for i in 7..a.len() {
            let mut typo = a.clone().into_bytes();
            typo[i] = if typo[i] == b'x' { b'y' } else { b'x' };
            let typo = String::from_utf8(typo).unwrap();
            assert_eq!(token_shape(&typo), TokenShape::Malformed, "{typo}");
        }
        // Another workspace in a real token: the checksum no longer holds.
        assert_eq!(
            token_shape(&a.replacen("crm_42_", "crm_43_", 1)),
            TokenShape::Malformed
        );
        // Earlier tokens and chosen bootstrap tokens take the earlier path.
        assert_eq!(
            token_shape(&format!("crm_{}", "a".repeat(40))),
            TokenShape::Legacy
        );
        assert_eq!(
            token_shape("crm_local_dev_token_0123456789"),
            TokenShape::Legacy
        );
        assert_eq!(hash_token(&a).len(), 64);
        // The published SHA-256 test vector of "abc".
        assert_eq!(
            hash_token("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }
}
