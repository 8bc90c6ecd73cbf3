//! The read of a token's record, and the gate that lets a request's own reads
//! go out beside it.
//!
//! A token of the current format names its workspace, so a read request knows
//! its keys before the token's record is back. [`TokenCheck`] is that pending
//! read; [`Gated`] is the store every handler is given: a read issued while the
//! check is pending is sent at once and joined with the check (one round trip
//! for both), and hands nothing back unless the token holds; a write waits for
//! the check first. `http::around` awaits the check before any answer
//! leaves, so a handler that reads nothing is refused just the same.

use std::borrow::Cow;
use std::fmt;
use std::future::Future;
use std::sync::Arc;

use async_trait::async_trait;

use super::{Identity, Need, TokenSecret};
use crate::error::ApiError;
use crate::ids::{self, WorkspaceId};
use crate::keys;
use crate::store::{Item, Key, Metrics, Page, Query, SharedStore, Store, StoreError, Write};

/// A token's verdict: read once per request, shared by all who wait for it.
#[derive(Clone)]
pub struct TokenCheck(Arc<Check>);

struct Check {
    /// Who the token is, or why it does not hold (401): read once.
    identity: tokio::sync::OnceCell<Result<Identity, ApiError>>,
    /// The ungated store, the token's SHA-256 and the workspace it names.
    lookup: Option<(SharedStore, String, Option<WorkspaceId>)>,
    /// What the operation needs of the token (a 403 when it lacks it).
    need: Need,
}

impl fmt::Debug for TokenCheck {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0.identity.get() {
            Some(Ok(identity)) => write!(f, "TokenCheck({})", identity.token_id),
            Some(Err(_)) => f.write_str("TokenCheck(refused)"),
            None => f.write_str("TokenCheck(pending)"),
        }
    }
}

pub(super) fn invalid() -> ApiError {
    ApiError::unauthorized("invalid or revoked token")
}

impl TokenCheck {
    /// A caller known without a read (operator tools, the import worker).
    pub(super) fn settled(identity: Identity) -> Self {
        Self(Arc::new(Check {
            identity: tokio::sync::OnceCell::new_with(Some(Ok(identity))),
            lookup: None,
            need: Need::Token,
        }))
    }

    /// The read of the record of the token hashed `sha256`, not yet sent; it
    /// must belong to `named` when the token names a workspace, and grant `need`.
    pub(super) fn pending(
        store: SharedStore,
        sha256: String,
        named: Option<WorkspaceId>,
        need: Need,
    ) -> Self {
        Self(Arc::new(Check {
            identity: tokio::sync::OnceCell::new(),
            lookup: Some((store, sha256, named)),
            need,
        }))
    }

    /// Who the token is, or why it is refused (401, or 403 when it lacks
    /// what the operation needs); the first caller sends the read.
    pub async fn verdict(&self) -> Result<&Identity, ApiError> {
        let identity = self.authenticated().await?;
        identity.allows(self.0.need)?;
        Ok(identity)
    }

    /// Who the token is, whatever the operation needs: `Err` only when the
    /// token does not hold (401). A 403 is an answer to a token that holds,
    /// which its rate limits count.
    pub async fn authenticated(&self) -> Result<&Identity, ApiError> {
        self.0
            .identity
            .get_or_init(|| self.0.look_up())
            .await
            .as_ref()
            .map_err(Clone::clone)
    }

    pub fn is_settled(&self) -> bool {
        self.0.identity.initialized()
    }
}

impl Check {
    async fn look_up(&self) -> Result<Identity, ApiError> {
        let Some((store, sha256, named)) = &self.lookup else {
            return Err(ApiError::internal("a settled token check has no lookup"));
        };
        // Strongly consistent: a revoked token fails on its very next request.
        let item = store
            .get(&keys::token_secret(sha256), true)
            .await?
            .ok_or_else(invalid)?;
        let secret: TokenSecret =
            serde_json::from_value(serde_json::Value::Object(item)).map_err(|e| {
                ApiError::internal(format!("a stored token secret does not read back: {e}"))
            })?;
        if named.is_some_and(|ws| ws != secret.workspace_id) {
            return Err(invalid());
        }
        if secret.expires_at.is_some_and(|at| at <= ids::now()) {
            return Err(ApiError::unauthorized("token expired"));
        }
        Ok(Identity {
            workspace_id: secret.workspace_id,
            token_id: secret.token_id,
            scopes: secret.scopes,
            expires_at: secret.expires_at,
        })
    }
}

/// The request's token check while it is still pending.
fn pending() -> Option<TokenCheck> {
    crate::context::gate::<TokenCheck>().filter(|check| !check.is_settled())
}

/// Sends `read` beside the pending token check and gives its result only if
/// the token holds.
async fn beside_check<T>(
    read: impl Future<Output = Result<T, StoreError>>,
) -> Result<T, StoreError> {
    let Some(check) = pending() else {
        return read.await;
    };
    let (verdict, read) = tokio::join!(check.verdict(), read);
    verdict.map_err(|refusal| StoreError::Refused(Box::new(refusal)))?;
    read
}

/// The store as handlers see it: see the module's documentation.
pub struct Gated(pub SharedStore);

#[async_trait]
impl Store for Gated {
    async fn get(&self, key: &Key, consistent: bool) -> Result<Option<Item>, StoreError> {
        beside_check(self.0.get(key, consistent)).await
    }

    async fn batch_get(&self, keys: &[Key]) -> Result<Vec<Item>, StoreError> {
        beside_check(self.0.batch_get(keys)).await
    }

    async fn query(&self, query: &Query) -> Result<Page, StoreError> {
        beside_check(self.0.query(query)).await
    }

    async fn write(&self, writes: Vec<Write>) -> Result<(), StoreError> {
        if let Some(check) = pending() {
            check
                .verdict()
                .await
                .map_err(|refusal| StoreError::Refused(Box::new(refusal)))?;
        }
        self.0.write(writes).await
    }

    async fn write_all(&self, transactions: &[Vec<Cow<'_, Write>>]) -> Vec<Result<(), StoreError>> {
        if let Some(check) = pending()
            && let Err(refusal) = check.verdict().await
        {
            let refused = || StoreError::Refused(Box::new(refusal.clone()));
            return transactions.iter().map(|_| Err(refused())).collect();
        }
        self.0.write_all(transactions).await
    }

    async fn purge(&self) -> Result<(), StoreError> {
        self.0.purge().await
    }

    fn metrics(&self) -> &Metrics {
        self.0.metrics()
    }

    fn backend(&self) -> &'static str {
        self.0.backend()
    }
}
