//! Workspaces: the tenants. `GET /v3/workspaces/info` shows the caller's own;
//! `POST /v3/workspaces` (admin, an extension of the spec) creates one together
//! with its first token, in one transaction.

use serde::{Deserialize, Serialize};
use validator::Validate;

use crate::auth::{Caller, Scope, TOKEN_PREFIX, hash_token};
use crate::domain::tokens::{self, IssuedToken};
use crate::error::{ApiError, ApiResult};
use crate::ids::{self, Timestamp, WorkspaceId};
use crate::keys;
use crate::record::{self, Mutation, Personal, Record, Stamps, with_fresh_id};
use crate::store::{Key, Store};

/// The workspace `crm serve` and `crm bootstrap` create on an empty store.
pub const FIRST_WORKSPACE: WorkspaceId = WorkspaceId(1);

#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default, schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Environment {
    #[default]
    Production,
    Testing,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Workspace {
    pub id: WorkspaceId,
    pub name: String,
    #[serde(default)]
    pub environment: Environment,
    /// When a client last asked every open client to reload (`POST /v3/refresh-page`).
    #[schemars(with = "Option<crate::ids::Timestamp>")]
    #[serde(
        default,
        with = "crate::ids::ts_format::option",
        skip_serializing_if = "Option::is_none"
    )]
    pub refresh_requested_at: Option<Timestamp>,
    #[serde(flatten)]
    pub stamps: Stamps,
    pub version: u64,
}

crate::versioned!(Workspace);

impl Record for Workspace {
    const EVENTS: Option<&'static str> = Some("workspace");

    fn event_object(&self) -> serde_json::Value {
        crate::record::as_event_object(WorkspaceView::from(self.clone()))
    }
    const TYPE: &'static str = "Workspace";
    const PERSONAL: Personal = Personal::none(&["environment", "name", "refreshRequestedAt"]);
    fn key(&self) -> Key {
        keys::workspace(self.id)
    }
}

#[derive(Debug, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WorkspaceView {
    pub id: String,
    pub workspace_id: WorkspaceId,
    pub name: String,
    pub environment: Environment,
    #[schemars(with = "Option<crate::ids::Timestamp>")]
    #[serde(
        default,
        with = "crate::ids::ts_format::option",
        skip_serializing_if = "Option::is_none"
    )]
    pub refresh_requested_at: Option<Timestamp>,
    #[serde(flatten)]
    pub stamps: Stamps,
}

impl From<Workspace> for WorkspaceView {
    fn from(w: Workspace) -> Self {
        Self {
            id: w.id.to_string(),
            workspace_id: w.id,
            name: w.name,
            environment: w.environment,
            refresh_requested_at: w.refresh_requested_at,
            stamps: w.stamps,
        }
    }
}

/// `POST /v3/workspaces`.
#[derive(Debug, Deserialize, Validate, schemars::JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct WorkspaceCreate {
    #[validate(
        length(min = 1, max = 128),
        custom(function = "crate::validate::not_blank")
    )]
    pub name: String,
    /// The name of the first token (default "default").
    #[validate(length(min = 1, max = 128))]
    pub token_name: Option<String>,
}

/// The answer of `POST /v3/workspaces`: the workspace, and its first token whose
/// `token` member holds the secret (shown this once).
#[derive(Debug, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CreatedWorkspace {
    pub workspace: WorkspaceView,
    pub token: IssuedToken,
}

pub async fn info(store: &dyn Store, caller: &Caller) -> ApiResult<Workspace> {
    record::find(
        store,
        &keys::workspace(caller.workspace_id),
        false,
        "workspace",
    )
    .await
}

pub async fn create(
    store: &dyn Store,
    caller: &Caller,
    input: WorkspaceCreate,
) -> ApiResult<CreatedWorkspace> {
    caller.require_admin().await?;
    let token_name = input.token_name.as_deref().unwrap_or("default").to_owned();
    let created_by = caller.token_id().await?.to_owned();
    with_fresh_id(|id| {
        let id = WorkspaceId(id);
        let workspace = Workspace {
            id,
            name: input.name.trim().to_owned(),
            environment: Environment::Production,
            refresh_requested_at: None,
            stamps: Stamps::new(),
            version: 1,
        };
        let token_name = token_name.clone();
        // The change is the new workspace's: its events (`workspace.created`,
        // `apiToken.created`) and its audit entry go there, never into the
        // operator's workspace, whose readers and webhooks would see them.
        let acting = caller.acting_in(id);
        let created_by = created_by.clone();
        async move {
            let mut m = Mutation::new(&acting);
            m.create(&workspace)?;
            let issued = tokens::issue(
                &mut m,
                &created_by,
                id,
                &token_name,
                vec![Scope::WriteAll],
                None,
                None,
            )?;
            m.commit(store, "workspace.create", "workspace", &id.to_string())
                .await?;
            Ok(CreatedWorkspace {
                workspace: workspace.into(),
                token: issued.view(),
            })
        }
    })
    .await
}

/// Moves a workspace into or out of the testing environment (operators only).
/// Moving it where it is already changes nothing.
pub async fn set_environment(
    store: &dyn Store,
    caller: &Caller,
    id: WorkspaceId,
    environment: Environment,
) -> ApiResult<Workspace> {
    caller.require_admin().await?;
    let current: Workspace = record::find(store, &keys::workspace(id), true, "workspace").await?;
    let mut workspace = Workspace {
        environment,
        ..current.clone()
    };
    // The workspace moved is the one changed: its event and audit entry are its own.
    let acting = caller.acting_in(id);
    let mut m = Mutation::new(&acting);
    if !m.update(&current, &mut workspace)? {
        return Ok(current);
    }
    let action = match environment {
        Environment::Testing => "workspace.promoteTesting",
        Environment::Production => "workspace.demoteTesting",
    };
    m.commit(store, action, "workspace", &id.to_string())
        .await?;
    Ok(workspace)
}

/// What bootstrapping did.
pub struct Bootstrap {
    pub created_workspace: bool,
    /// The secret of a newly issued admin token (`None` when the given one existed).
    pub new_token: Option<String>,
}

/// Makes sure workspace 1 and an admin token exist. With `token`, that exact
/// secret becomes an admin token of workspace 1 unless it already is one; without
/// it, a random admin token is issued only when the workspace is new.
pub async fn bootstrap(
    store: &dyn Store,
    name: &str,
    token: Option<String>,
) -> ApiResult<Bootstrap> {
    if let Some(t) = &token
        && (!t.starts_with(TOKEN_PREFIX) || t.len() < TOKEN_PREFIX.len() + 16)
    {
        return Err(ApiError::bad_request(format!(
            "a bootstrap token must start with `{TOKEN_PREFIX}` and have at least 16 more characters"
        )));
    }
    let caller = Caller::system(FIRST_WORKSPACE, "bootstrap");
    let exists = record::get::<Workspace>(store, &keys::workspace(FIRST_WORKSPACE), true)
        .await?
        .is_some();
    let token_known = match &token {
        Some(t) => store
            .get(&keys::token_secret(&hash_token(t)), true)
            .await?
            .is_some(),
        None => exists,
    };
    if exists && token_known {
        return Ok(Bootstrap {
            created_workspace: false,
            new_token: None,
        });
    }
    let mut m = Mutation::new(&caller);
    if !exists {
        m.create(&Workspace {
            id: FIRST_WORKSPACE,
            name: name.to_owned(),
            environment: Environment::Production,
            refresh_requested_at: None,
            stamps: Stamps::new(),
            version: 1,
        })?;
    }
    let issued = tokens::issue(
        &mut m,
        "bootstrap",
        FIRST_WORKSPACE,
        "bootstrap admin",
        vec![Scope::Admin],
        None,
        token,
    )?;
    m.commit(
        store,
        "workspace.bootstrap",
        "workspace",
        &FIRST_WORKSPACE.to_string(),
    )
    .await?;
    Ok(Bootstrap {
        created_workspace: !exists,
        new_token: Some(issued.secret),
    })
}

/// The optional body of `POST /v3/refresh-page`: a reason, accepted for the
/// clients' logs and not kept.
#[derive(Debug, Deserialize, Validate, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RefreshPage {
    #[validate(length(max = 256))]
    pub reason: Option<String>,
}

/// The answer of `POST /v3/refresh-page`.
#[derive(Debug, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RefreshRequested {
    pub workspace_id: WorkspaceId,
    #[schemars(with = "crate::ids::Timestamp")]
    #[serde(with = "crate::ids::ts_format")]
    pub refresh_requested_at: Timestamp,
}

/// `POST /v3/refresh-page`: records on the workspace that every open client
/// should reload. Clients poll `GET /v3/workspaces/info` and reload when its
/// `refreshRequestedAt` is later than their own start.
pub async fn request_refresh(store: &dyn Store, caller: &Caller) -> ApiResult<RefreshRequested> {
    // The client names no version: a request that meets another's change
    // reads the workspace again, rather than answer a 409 it cannot act on.
    let mut attempts = 0;
    loop {
        match refresh_once(store, caller).await {
            Err(e) if e.status == http::StatusCode::CONFLICT && attempts < 8 => attempts += 1,
            other => return other,
        }
    }
}

async fn refresh_once(store: &dyn Store, caller: &Caller) -> ApiResult<RefreshRequested> {
    let key = keys::workspace(caller.workspace_id);
    let current: Workspace = record::find(store, &key, true, "workspace").await?;
    let mut workspace = current.clone();
    let now = ids::now().max(
        current
            .refresh_requested_at
            .map_or(current.stamps.created_at, |t| {
                t + chrono::Duration::milliseconds(1)
            }),
    );
    workspace.refresh_requested_at = Some(now);
    let mut m = Mutation::new(caller);
    m.update(&current, &mut workspace)?;
    m.commit(
        store,
        "workspace.refreshPage",
        "workspace",
        &caller.workspace_id.to_string(),
    )
    .await?;
    Ok(RefreshRequested {
        workspace_id: caller.workspace_id,
        refresh_requested_at: now,
    })
}

/// Workspace `id`'s rate limits (its own, or the defaults); 404 for no workspace.
pub async fn rate_limits(
    store: &dyn Store,
    limiter: &crate::ratelimit::Limiter,
    id: WorkspaceId,
) -> ApiResult<crate::ratelimit::Limits> {
    let _: Workspace = record::find(store, &keys::workspace(id), false, "workspace").await?;
    crate::ratelimit::limits_of(store, limiter, id).await
}

/// Sets workspace `id`'s rate limits; 404 for no workspace.
pub async fn set_rate_limits(
    store: &dyn Store,
    id: WorkspaceId,
    limits: crate::ratelimit::Limits,
) -> ApiResult<crate::ratelimit::Limits> {
    let _: Workspace = record::find(store, &keys::workspace(id), false, "workspace").await?;
    crate::ratelimit::set_limits(store, id, limits).await
}

/// The stored items of item_shapes/workspaces.json read back (domain::item_shapes).
#[cfg(test)]
mod shapes {
    use crate::domain::item_shapes::{round_trip, texts_declared};

    #[test]
    fn workspaces_keep_their_shape() {
        round_trip::<crate::domain::workspaces::Workspace>("Workspace");
        texts_declared::<crate::domain::workspaces::Workspace>();
    }
}
