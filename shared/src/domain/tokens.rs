//! API tokens: created (the secret is shown once), listed (never the secret nor
//! its hash), revoked (the next request with it is a 401).
//!
//! Each token is two items written together: the listed record in its
//! workspace, and the secret item keyed by the SHA-256 that authentication reads.
//! Revoking deletes both, and disables the webhook endpoints the token
//! registered in the same transaction: an endpoint reads with its owner's
//! scopes, and stops with it (docs/design.md, "Webhooks"). A token gives
//! another no scope it does not hold itself, and revokes none that holds
//! more (docs/design.md, "Scopes").

use serde::{Deserialize, Serialize};
use validator::Validate;

use crate::auth::{self, Caller, Scope, TokenSecret};
use crate::error::{ApiError, ApiResult};
use crate::ids::WorkspaceId;
use crate::ids::{self, Timestamp};
use crate::keys;
use crate::page::{ListPage, Paging, counted_page};
use crate::record::{self, Mutation, Personal, Record, Stamps};
use crate::store::{Index, Key, Query, SkRange, Store};

/// A token's secret is a record like any (auth reads it by key alone, below
/// the record layer).
impl Record for TokenSecret {
    const TYPE: &'static str = "TokenSecret";
    const PERSONAL: Personal = Personal::none(&["expiresAt", "scopes", "sha256", "tokenId"]);
    fn key(&self) -> Key {
        keys::token_secret(&self.sha256)
    }
}

pub const LIST: &str = "TOKEN";
/// How many characters of the secret are kept to tell tokens apart in lists.
const SHOWN_PREFIX: usize = 8;

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ApiToken {
    pub id: String,
    pub workspace_id: WorkspaceId,
    pub name: String,
    pub scopes: Vec<Scope>,
    /// The first characters of the secret (`crm_AbCd`), to recognise it.
    pub prefix: String,
    /// The token that created this one.
    pub created_by: String,
    #[schemars(with = "Option<crate::ids::Timestamp>")]
    #[serde(
        default,
        with = "ids::ts_format::option",
        skip_serializing_if = "Option::is_none"
    )]
    pub expires_at: Option<Timestamp>,
    /// Stored to delete the secret item on revocation; never shown.
    #[serde(skip_serializing_if = "String::is_empty", default)]
    sha256: String,
    #[serde(flatten)]
    pub stamps: Stamps,
}

impl Record for ApiToken {
    const EVENTS: Option<&'static str> = Some("apiToken");

    fn event_object(&self) -> serde_json::Value {
        crate::record::as_event_object(TokenView::from(self.clone()))
    }
    const TYPE: &'static str = "ApiToken";
    const PERSONAL: Personal = Personal::none(&[
        "createdBy",
        "expiresAt",
        "id",
        "name",
        "prefix",
        "scopes",
        "sha256",
    ]);
    fn key(&self) -> Key {
        keys::token(self.workspace_id, &self.id)
    }
}

/// A token as the API shows it: everything but the hash and the secret.
#[derive(Debug, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TokenView {
    pub id: String,
    pub name: String,
    pub scopes: Vec<Scope>,
    pub prefix: String,
    pub workspace_id: WorkspaceId,
    pub created_by: String,
    #[schemars(with = "Option<crate::ids::Timestamp>")]
    #[serde(
        default,
        with = "ids::ts_format::option",
        skip_serializing_if = "Option::is_none"
    )]
    pub expires_at: Option<Timestamp>,
    #[serde(flatten)]
    pub stamps: Stamps,
}

/// A token just created: as the API shows it, and its secret, shown this
/// once (`Authorization: Bearer <token>`).
#[derive(Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct IssuedToken {
    #[serde(flatten)]
    pub view: TokenView,
    pub token: String,
}

/// The scopes as they act: none stored (a token made before scopes) is `*:write`.
fn acting(scopes: Vec<Scope>) -> Vec<Scope> {
    if scopes.is_empty() {
        vec![Scope::WriteAll]
    } else {
        scopes
    }
}

impl From<ApiToken> for TokenView {
    fn from(t: ApiToken) -> Self {
        Self {
            id: t.id,
            name: t.name,
            scopes: acting(t.scopes),
            prefix: t.prefix,
            workspace_id: t.workspace_id,
            created_by: t.created_by,
            expires_at: t.expires_at,
            stamps: t.stamps,
        }
    }
}

/// `POST /v3/api-tokens`.
#[derive(Debug, Deserialize, Validate, schemars::JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct TokenCreate {
    #[validate(
        length(min = 1, max = 128),
        custom(function = "crate::validate::not_blank")
    )]
    pub name: String,
    /// What the token may do (at least one). Absent: the scopes of the token
    /// that creates it (`*:write` for an admin's). None it does not hold.
    pub scopes: Option<Vec<Scope>>,
    /// When the token stops working (RFC 3339, in the future). Absent: never.
    #[schemars(with = "Option<crate::ids::Timestamp>")]
    #[serde(default, with = "ids::ts_format::option")]
    pub expires_at: Option<Timestamp>,
}

/// A new token and its secret, ready to be written by a mutation.
pub struct Issued {
    pub token: ApiToken,
    pub secret: String,
}

impl Issued {
    pub fn view(self) -> IssuedToken {
        IssuedToken {
            view: TokenView::from(self.token),
            token: self.secret,
        }
    }
}

/// Adds a new token of `workspace_id` to a mutation (used by token creation,
/// workspace creation and bootstrap). `secret` is generated unless given.
pub fn issue(
    m: &mut Mutation<'_>,
    created_by: &str,
    workspace_id: WorkspaceId,
    name: &str,
    scopes: Vec<Scope>,
    expires_at: Option<Timestamp>,
    secret: Option<String>,
) -> ApiResult<Issued> {
    let secret = secret.unwrap_or_else(|| auth::generate_token(workspace_id));
    let sha256 = auth::hash_token(&secret);
    let token = ApiToken {
        id: ids::new_ulid(),
        workspace_id,
        name: name.trim().to_owned(),
        scopes: scopes.clone(),
        prefix: secret.chars().take(SHOWN_PREFIX).collect(),
        created_by: created_by.to_owned(),
        expires_at,
        sha256: sha256.clone(),
        stamps: Stamps::new(),
    };
    let secret_item = TokenSecret {
        sha256,
        workspace_id,
        token_id: token.id.clone(),
        scopes,
        expires_at,
    };
    m.create(&token)?
        .put_item(record::to_item(&secret_item)?)
        .count_in(workspace_id, LIST, 1);
    Ok(Issued { token, secret })
}

pub async fn create(store: &dyn Store, caller: &Caller, input: TokenCreate) -> ApiResult<Issued> {
    let creator = caller.identity().await?;
    let mut scopes = match input.scopes {
        Some(scopes) if scopes.is_empty() => {
            return Err(ApiError::field(
                "scopes",
                "must name at least one scope (leave it out for the creating token's own)",
            ));
        }
        Some(scopes) => scopes,
        None if creator.is_admin() => vec![Scope::WriteAll],
        None => acting(creator.scopes.clone()),
    };
    scopes.sort();
    scopes.dedup();
    if let Some(more) = scopes.iter().find(|s| !creator.has(**s)) {
        return Err(ApiError::forbidden(format!(
            "a token cannot give a scope it does not hold: `{more}`"
        )));
    }
    if input.expires_at.is_some_and(|at| at <= ids::now()) {
        return Err(ApiError::field("expiresAt", "must be in the future"));
    }
    let mut m = Mutation::new(caller);
    let issued = issue(
        &mut m,
        caller.token_id().await?,
        caller.workspace_id,
        &input.name,
        scopes,
        input.expires_at,
        None,
    )?;
    m.commit(store, "apiToken.create", "apiToken", &issued.token.id)
        .await?;
    Ok(issued)
}

pub async fn list(
    store: &dyn Store,
    caller: &Caller,
    paging: Paging,
) -> ApiResult<ListPage<TokenView>> {
    let query = Query::new(
        Index::TABLE,
        keys::tokens(caller.workspace_id),
        SkRange::All,
    );
    let page = counted_page::<ApiToken>(
        store,
        query,
        paging,
        keys::counter(caller.workspace_id, LIST),
    )
    .await?;
    Ok(page.map(TokenView::from))
}

pub async fn revoke(store: &dyn Store, caller: &Caller, id: &str) -> ApiResult<TokenView> {
    if !ids::is_ulid(id) {
        return Err(ApiError::not_found("API token"));
    }
    let token: ApiToken = record::find(
        store,
        &keys::token(caller.workspace_id, id),
        true,
        "API token",
    )
    .await?;
    let revoker = caller.identity().await?;
    if let Some(more) = acting(token.scopes.clone())
        .iter()
        .find(|s| !revoker.has(**s))
    {
        return Err(ApiError::forbidden(format!(
            "a token cannot revoke one that holds a scope it does not: `{more}`"
        )));
    }
    let mut m = Mutation::new(caller);
    m.delete_record(&token, "API token")
        .remove(keys::token_secret(&token.sha256))
        .count_in(caller.workspace_id, LIST, -1);
    crate::domain::webhooks::endpoints::disable_owned_by(store, &mut m, caller.workspace_id, id)
        .await?;
    m.commit(store, "apiToken.revoke", "apiToken", id).await?;
    Ok(token.into())
}

/// `GET /v3/api-tokens/self`: the caller's own token, never its secret.
pub async fn current(store: &dyn Store, caller: &Caller) -> ApiResult<TokenView> {
    let id = caller.token_id().await?;
    let token: ApiToken = record::find(
        store,
        &keys::token(caller.workspace_id, id),
        false,
        "API token",
    )
    .await?;
    Ok(token.into())
}

/// The stored items of item_shapes/tokens.json read back (domain::item_shapes).
#[cfg(test)]
mod shapes {
    use crate::domain::item_shapes::{round_trip, texts_declared};

    #[test]
    fn tokens_keep_their_shape() {
        round_trip::<crate::domain::tokens::ApiToken>("ApiToken");
        texts_declared::<crate::domain::tokens::ApiToken>();
        round_trip::<super::TokenSecret>("TokenSecret");
        texts_declared::<super::TokenSecret>();
    }
}
