//! A webhook endpoint: where a workspace's events are delivered, which ones,
//! and the secrets that sign them.

use serde::{Deserialize, Serialize};
use validator::Validate;

use crate::domain::events::TypeFilter;
use crate::ids::{self, Timestamp, WorkspaceId};
use crate::keys;
use crate::record::{Event, Record, Stamps};
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
    #[serde(flatten)]
    pub stamps: Stamps,
    pub version: u64,
}

crate::versioned!(Webhook);

impl Record for Webhook {
    const TYPE: &'static str = "Webhook";
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
    /// of a type it names; a contact an import created only when it asked
    /// for import rows (the import's own events always).
    pub fn wants(&self, event: &Event) -> bool {
        let import_row = event.token_id.starts_with("import:") && event.resource != "import";
        self.enabled
            && event.occurred_at >= self.stamps.created_at
            && (self.import_rows || !import_row)
            && self.filter().admits(&event.kind)
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
    /// `deal.*`, `*`.
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
/// description. Enabling a disabled endpoint clears its reason.
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
    #[serde(default, deserialize_with = "crate::validate::nullable")]
    #[validate(length(max = 256))]
    pub description: Option<Option<String>>,
    #[schemars(with = "bool")]
    #[serde(default, deserialize_with = "crate::validate::present")]
    pub enabled: Option<bool>,
    #[schemars(with = "bool")]
    #[serde(default, deserialize_with = "crate::validate::present")]
    pub import_rows: Option<bool>,
}
