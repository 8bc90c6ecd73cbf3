//! A webhook endpoint: where a workspace's events are delivered, which ones,
//! whose reads they are (its [`Owner`]), and the secrets that sign them.

use crate::patch::Patch;
use serde::{Deserialize, Serialize};
use validator::Validate;

use crate::auth::{Identity, Scope};
use crate::domain::events::{self, TypeFilter};
use crate::ids::{self, Timestamp, WorkspaceId};
use crate::keys;
use crate::record::{Event, Personal, Record, Stamps};
use crate::store::Key;

/// The prefix of an endpoint's id.
pub const ID_PREFIX: &str = "wh_";

/// Endpoints per workspace, at most.
pub const MAX_PER_WORKSPACE: usize = 20;

/// How long the secret before a rotation still signs.
pub const ROTATION_OVERLAP: chrono::Duration = chrono::Duration::hours(24);

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Webhook {
    pub id: String,
    pub workspace_id: WorkspaceId,
    pub url: String,
    /// `contact.created`, `deal.*`, `*`.
    pub types: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    pub enabled: bool,
    /// Why the service disabled it (a `410 Gone`, five days of failures).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disabled_reason: Option<String>,
    /// One event per contact an import creates, besides `import.completed`.
    #[serde(default)]
    pub import_rows: bool,
    /// Signs every delivery; never answered after creation.
    pub secret: String,
    /// The secret before the last rotation, signing too until `previous_until`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub previous_secret: Option<String>,
    #[serde(
        default,
        with = "ids::ts_format::option",
        skip_serializing_if = "Option::is_none"
    )]
    pub previous_until: Option<Timestamp>,
    /// The token whose reads it delivers: the one that registered it, or
    /// last re-registered it (a `PATCH` of `url` or `types`, or enabling
    /// it). Absent on an endpoint registered before owners were kept, which
    /// delivers nothing until a token re-registers it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<Owner>,
    #[serde(flatten)]
    pub stamps: Stamps,
    pub version: u64,
}

/// Whose reads an endpoint delivers: an event goes out only if this token
/// may read its record (`crate::domain::events::readable`), and only while
/// the token stands. Revoking it disables the endpoint (in the revocation's
/// transaction, and again at any attempt that finds it gone); past its
/// `expiresAt`, the next attempt sends nothing and disables the endpoint.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "WebhookOwner")]
pub struct Owner {
    /// The token's id (`GET /v3/api-tokens` lists it).
    pub token_id: String,
    /// Its scopes as they act (`*:write` for a token stored with none).
    pub scopes: Vec<Scope>,
    /// When the token stops working, and the endpoint with it.
    #[schemars(with = "Option<crate::ids::Timestamp>")]
    #[serde(
        default,
        with = "ids::ts_format::option",
        skip_serializing_if = "Option::is_none"
    )]
    pub expires_at: Option<Timestamp>,
}

impl Owner {
    /// The token of `identity`, as an endpoint keeps it.
    pub fn of(identity: &Identity) -> Self {
        let scopes = if identity.scopes.is_empty() {
            vec![Scope::WriteAll]
        } else {
            identity.scopes.clone()
        };
        Self {
            token_id: identity.token_id.clone(),
            scopes,
            expires_at: identity.expires_at,
        }
    }

    /// Whether it may read events of `kind` (never with no scope kept).
    pub fn reads(&self, kind: &str) -> bool {
        !self.scopes.is_empty() && events::readable(&self.scopes, kind)
    }

    /// Whether its token has expired by `now`.
    pub fn expired(&self, now: Timestamp) -> bool {
        self.expires_at.is_some_and(|at| at <= now)
    }
}

crate::versioned!(Webhook);

impl Record for Webhook {
    const TYPE: &'static str = "Webhook";
    /// Secrets, but nobody's personal data.
    const PERSONAL: Personal = Personal::none(&[
        "description",
        "disabledReason",
        "id",
        "owner",
        "previousSecret",
        "previousUntil",
        "secret",
        "types",
        "url",
    ]);
    const EVENTS: Option<&'static str> = Some("webhook");

    fn key(&self) -> Key {
        keys::webhook(self.workspace_id, &self.id)
    }

    fn index_keys(&self) -> Vec<(&'static str, String)> {
        vec![
            (keys::GSI1.pk, keys::ALL_WEBHOOKS.to_owned()),
            (
                keys::GSI1.sk,
                keys::webhook_in_all(self.workspace_id, &self.id),
            ),
        ]
    }

    fn event_object(&self) -> serde_json::Value {
        crate::record::as_event_object(WebhookView::from(self))
    }

    fn event_verb(&self, before: Option<&Self>, created: bool) -> &'static str {
        match (created, before.map(|b| b.enabled), self.enabled) {
            (true, ..) => "created",
            (false, Some(true), false) => "disabled",
            (false, Some(false), true) => "enabled",
            _ => "updated",
        }
    }
}

impl Webhook {
    /// The secrets that sign a delivery made `now`: the current one, and the
    /// one before it during the overlap.
    pub fn signing_secrets(&self, now: Timestamp) -> Vec<&str> {
        let mut secrets = vec![self.secret.as_str()];
        if let (Some(previous), Some(until)) = (&self.previous_secret, self.previous_until)
            && now < until
        {
            secrets.push(previous);
        }
        secrets
    }

    /// Whether `event` is delivered here: enabled, made after the endpoint,
    /// of a type it names and its owner reads; a contact an import created
    /// only when it asked for import rows (the import's own events always).
    pub fn wants(&self, event: &Event) -> bool {
        let import_row = event.token_id.starts_with("import:") && event.resource != "import";
        self.enabled
            && event.occurred_at >= self.stamps.created_at
            && (self.import_rows || !import_row)
            && self.filter().admits(&event.kind)
            && self.reads(&event.kind)
    }

    /// Whether its owner may read events of `kind` (none without an owner).
    pub fn reads(&self, kind: &str) -> bool {
        self.owner.as_ref().is_some_and(|owner| owner.reads(kind))
    }

    /// Why it may deliver nothing more, whatever the event, as of `now`: no
    /// owner kept, or the owner's token expired. (A revoked owner is found
    /// by reading its token's record: `endpoints::lapsed`.)
    pub fn lapsed(&self, now: Timestamp) -> Option<String> {
        match &self.owner {
            None => Some(
                "it was registered before endpoints kept the token they read with: \
                 re-register it (PATCH its types, or enable it) with a token that reads them"
                    .to_owned(),
            ),
            Some(owner) if owner.expired(now) => Some(format!(
                "the token that registered it ({}) expired; re-register it (PATCH its types, or enable it) with a token that reads them",
                owner.token_id
            )),
            Some(_) => None,
        }
    }

    /// Why it may deliver nothing more when its owner's token record was not
    /// found: the token was revoked.
    pub fn owner_gone(&self) -> String {
        format!(
            "the token that registered it ({}) was revoked; re-register it (PATCH its types, or enable it) with a token that reads them",
            self.owner.as_ref().map_or("none", |o| o.token_id.as_str())
        )
    }

    fn filter(&self) -> TypeFilter {
        TypeFilter::of(self.types.clone())
    }
}

/// How an endpoint is doing: since when every attempt failed (absent while
/// it answers). Not part of the endpoint's record, whose changes are events.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Health {
    pub workspace_id: WorkspaceId,
    pub webhook_id: String,
    #[serde(with = "ids::ts_format")]
    pub failing_since: Timestamp,
}

impl Record for Health {
    const TYPE: &'static str = "WebhookHealth";
    const PERSONAL: Personal = Personal::none(&["failingSince", "webhookId"]);
    fn key(&self) -> Key {
        keys::webhook_health(self.workspace_id, &self.webhook_id)
    }
}

// ------------------------------------------------------------------ views

/// An endpoint as the API shows it: everything but its secrets.
#[derive(Debug, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WebhookView {
    /// `wh_` and a ULID.
    pub id: String,
    pub url: String,
    /// The event types delivered: `contact.created`, `deal.*`, `*`.
    pub types: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    pub enabled: bool,
    /// Why the service disabled it: a `410 Gone`, or every attempt failing
    /// for five days.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub disabled_reason: Option<String>,
    /// Whether a contact import's rows are delivered one by one (besides
    /// `import.completed`, always delivered).
    pub import_rows: bool,
    /// Until when the secret before the last rotation still signs.
    #[schemars(with = "Option<crate::ids::Timestamp>")]
    #[serde(
        default,
        with = "ids::ts_format::option",
        skip_serializing_if = "Option::is_none"
    )]
    pub previous_secret_expires_at: Option<Timestamp>,
    /// The token whose reads it delivers: only events of records this token
    /// may read are sent (`*` in `types` is every type it reads). Absent:
    /// registered before owners were kept; it delivers nothing until a
    /// token re-registers it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub owner: Option<Owner>,
    pub workspace_id: WorkspaceId,
    #[serde(flatten)]
    pub stamps: Stamps,
}

impl From<&Webhook> for WebhookView {
    fn from(w: &Webhook) -> Self {
        Self {
            id: w.id.clone(),
            url: w.url.clone(),
            types: w.types.clone(),
            description: w.description.clone(),
            enabled: w.enabled,
            disabled_reason: w.disabled_reason.clone(),
            import_rows: w.import_rows,
            previous_secret_expires_at: w.previous_until.filter(|until| *until > ids::now()),
            owner: w.owner.clone(),
            workspace_id: w.workspace_id,
            stamps: w.stamps.clone(),
        }
    }
}

/// A new endpoint, with its secret: the only answer that shows it.
#[derive(Debug, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CreatedWebhook {
    #[serde(flatten)]
    pub webhook: WebhookView,
    /// `whsec_` and the base64 of 32 random bytes: verify deliveries with it
    /// (Standard Webhooks). Shown this once; rotate it if it is lost.
    pub secret: String,
}

/// A rotation's answer: the new secret, shown this once.
#[derive(Debug, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RotatedSecret {
    pub secret: String,
    /// Until when the secret before it still signs (each delivery carries a
    /// signature by both until then).
    #[schemars(with = "crate::ids::Timestamp")]
    #[serde(with = "ids::ts_format")]
    pub previous_secret_expires_at: Timestamp,
}

// ------------------------------------------------------------------ inputs

/// `POST /v3/webhooks`.
#[derive(Debug, Deserialize, Validate, schemars::JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct WebhookCreate {
    /// Where deliveries are POSTed: an `https` URL whose host resolves to
    /// public addresses.
    #[validate(length(min = 1, max = 2048))]
    pub url: String,
    /// The event types to deliver (default `["*"]`): `contact.created`,
    /// `deal.*`, `*`. Each must be readable by the token that registers the
    /// endpoint (`contact.*` needs `contacts:read` or what grants it; 403
    /// naming the scope otherwise); `*` is every type that token reads.
    #[validate(length(min = 1, max = 50))]
    pub types: Option<Vec<String>>,
    #[validate(length(max = 256))]
    pub description: Option<String>,
    /// Default `true`.
    pub enabled: Option<bool>,
    /// Deliver one `contact.created` per imported row too (default `false`:
    /// an import sends its `import.completed` alone).
    pub import_rows: Option<bool>,
}

/// `PATCH /v3/webhooks/{id}`: the fields given change; `null` clears the
/// description. Enabling a disabled endpoint clears its reason. Changing
/// `url` or `types`, or enabling it, re-registers it: every type it names
/// must be readable by the patching token (403 naming the scope), which
/// becomes its owner.
#[derive(Debug, Default, Deserialize, Validate, schemars::JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct WebhookPatch {
    #[schemars(with = "String")]
    #[serde(default, deserialize_with = "crate::validate::present")]
    #[validate(length(min = 1, max = 2048))]
    pub url: Option<String>,
    #[schemars(with = "Vec<String>")]
    #[serde(default, deserialize_with = "crate::validate::present")]
    #[validate(length(min = 1, max = 50))]
    pub types: Option<Vec<String>>,
    #[serde(default)]
    #[validate(length(max = 256))]
    pub description: Patch<String>,
    #[schemars(with = "bool")]
    #[serde(default, deserialize_with = "crate::validate::present")]
    pub enabled: Option<bool>,
    #[schemars(with = "bool")]
    #[serde(default, deserialize_with = "crate::validate::present")]
    pub import_rows: Option<bool>,
}
