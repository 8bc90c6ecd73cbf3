//! Welcome messages (`POST /v3/workspaces/send-welcome-message`). This service
//! sends no messages itself: it writes the request to an outbox, a record with
//! status `queued`, and the messaging side takes it from there. On AWS the
//! table's stream carries every new `WelcomeMessage` item to the messaging
//! side's consumer (the template outputs `TableStreamArn`; filter on `_type`),
//! so the record and its handoff cannot disagree: the transactional outbox.
//! `GET /v3/workspaces/welcome-messages/{id}` (an extension) shows a message.
//!
//! The same request twice within 10 minutes sends one message: "the same" is
//! the same recipient (its canonical phone, however written) and the same
//! content (template, text and variables). The second answer is the first
//! message, with `x-welcome-duplicate: true`. A sentinel item per recipient and
//! content, written in the message's transaction, makes this hold under races.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use validator::Validate;

use crate::auth::Caller;
use crate::domain::contacts::{self, Contact};
use crate::error::{ApiError, ApiResult};
use crate::ids::{self, Timestamp, WorkspaceId};
use crate::keys;
use crate::record::{self, CommitError, Mutation, Personal, Record, Stamps};
use crate::store::{Key, Store};
use crate::validate::needs_one_of;

/// Within this window the same message is sent once.
pub const DEDUP_MINUTES: i64 = 10;
const WHAT: &str = "welcome message";

#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum MessageStatus {
    /// In the outbox, for the messaging side.
    Queued,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WelcomeMessage {
    pub id: String,
    pub workspace_id: WorkspaceId,
    /// The recipient's canonical phone (E.164).
    pub phone: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub contact_id: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub template_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub variables: Map<String, Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub channel_id: Option<String>,
    pub status: MessageStatus,
    /// The token that asked.
    pub requested_by: String,
    #[serde(flatten)]
    pub stamps: Stamps,
}

impl Record for WelcomeMessage {
    const EVENTS: Option<&'static str> = Some("welcomeMessage");
    const TYPE: &'static str = "WelcomeMessage";
    /// An erasure deletes it whole (`contacts::erase`).
    const PERSONAL: Personal = Personal {
        fields: &["name", "phone", "text", "variables"],
        copies: &[],
        plain: &["channelId", "id", "requestedBy", "status", "templateId"],
    };
    fn key(&self) -> Key {
        keys::welcome_message(self.workspace_id, &self.id)
    }
    /// By recipient (gsi1): what an erasure of the person finds.
    fn index_keys(&self) -> Vec<(&'static str, String)> {
        vec![
            (
                keys::GSI1.pk,
                keys::welcome_messages_to(self.workspace_id, &self.phone),
            ),
            (keys::GSI1.sk, self.id.clone()),
        ]
    }
}

/// One message recently sent to one recipient: the first message's id.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Sent {
    workspace_id: WorkspaceId,
    phone: String,
    content: String,
    message_id: String,
    #[schemars(with = "crate::ids::Timestamp")]
    #[serde(with = "ids::ts_format")]
    until: Timestamp,
    ttl: i64,
    version: u64,
}

impl Record for Sent {
    const TYPE: &'static str = "WelcomeSent";
    /// An erasure deletes it whole (`contacts::erase`).
    const PERSONAL: Personal = Personal {
        fields: &["phone", "content"],
        copies: &[],
        plain: &["messageId", "until"],
    };
    fn key(&self) -> Key {
        keys::welcome_sent(self.workspace_id, &self.phone, &self.content)
    }
}

/// `POST /v3/workspaces/send-welcome-message`: a recipient (`contactId` or
/// `phone`) and a content (`templateId` and/or `text`).
#[derive(Debug, Deserialize, Validate, schemars::JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[schemars(transform = recipient_and_content)]
pub struct SendWelcome {
    pub contact_id: Option<u64>,
    #[validate(length(min = 1, max = 100))]
    pub phone: Option<String>,
    #[validate(length(min = 1, max = 128))]
    pub name: Option<String>,
    #[validate(length(min = 1, max = 128))]
    pub template_id: Option<String>,
    #[validate(
        length(min = 1, max = 4096),
        custom(function = "crate::validate::not_blank")
    )]
    pub text: Option<String>,
    /// Values for the template's placeholders (at most 4 KB of JSON).
    pub variables: Option<Map<String, Value>>,
    #[validate(length(min = 1, max = 128))]
    pub channel_id: Option<String>,
}

/// What [`send`] checks, for the document.
fn recipient_and_content(schema: &mut schemars::Schema) {
    needs_one_of(schema, &["contactId", "phone"], true);
    needs_one_of(schema, &["templateId", "text"], false);
}

/// What the API answers: the message, and whether it is an earlier one.
pub struct Sending {
    pub message: WelcomeMessage,
    pub duplicate: bool,
}

pub async fn send(store: &dyn Store, caller: &Caller, input: SendWelcome) -> ApiResult<Sending> {
    let ws = caller.workspace_id;
    if input.template_id.is_none() && input.text.is_none() {
        return Err(ApiError::field(
            "text",
            "a welcome message needs a templateId or a text",
        ));
    }
    let variables = input.variables.unwrap_or_default();
    if serde_json::to_vec(&variables).map_or(0, |v| v.len()) > 4096 {
        return Err(ApiError::field("variables", "must be at most 4 KB of JSON"));
    }
    let (phone, contact_id, name) = match (input.contact_id, &input.phone) {
        (Some(_), Some(_)) => {
            return Err(ApiError::field(
                "phone",
                "give a contactId or a phone, not both",
            ));
        }
        (Some(id), None) => {
            let contact: Contact = contacts::get(store, caller, id).await?;
            let Some(phone) = contact.fields.phone.clone() else {
                return Err(ApiError::field("contactId", "the contact has no phone"));
            };
            (phone, Some(id), input.name.or(contact.fields.name))
        }
        (None, Some(raw)) => {
            let phone = crate::phone::canonical(raw)
                .map_err(|e| ApiError::field("phone", e.to_string()))?;
            (phone, None, input.name)
        }
        (None, None) => {
            return Err(ApiError::field(
                "phone",
                "a welcome message needs a contactId or a phone",
            ));
        }
    };
    let content = {
        let canonical = serde_json::json!([input.template_id, input.text, variables]);
        crate::ids::sha256_hex(canonical.to_string().as_bytes())
    };
    let sent_key = keys::welcome_sent(ws, &phone, &content);

    // Twice at most: a concurrent identical request may win the sentinel.
    for _ in 0..2 {
        let now = ids::now();
        let recent: Option<Sent> = record::get(store, &sent_key, true).await?;
        if let Some(sent) = &recent
            && now < sent.until
        {
            let message = record::find(
                store,
                &keys::welcome_message(ws, &sent.message_id),
                true,
                WHAT,
            )
            .await?;
            return Ok(Sending {
                message,
                duplicate: true,
            });
        }
        let message = WelcomeMessage {
            id: ids::new_ulid(),
            workspace_id: ws,
            phone: phone.clone(),
            contact_id,
            name: name.clone(),
            template_id: input.template_id.clone(),
            text: input.text.clone(),
            variables: variables.clone(),
            channel_id: input.channel_id.clone(),
            status: MessageStatus::Queued,
            requested_by: caller.token_id().await?.to_owned(),
            stamps: Stamps::new(),
        };
        let until = now + chrono::Duration::minutes(DEDUP_MINUTES);
        let next = Sent {
            workspace_id: ws,
            phone: phone.clone(),
            content: content.clone(),
            message_id: message.id.clone(),
            until,
            ttl: ids::epoch_seconds(&until),
            version: recent.as_ref().map_or(1, |s| s.version + 1),
        };
        let mut m = Mutation::new(caller);
        m.create(&message)?;
        match &recent {
            None => m.create(&next)?,
            Some(old) => m.replace(&next, old.version)?,
        };
        match m
            .commit(store, "welcomeMessage.send", "welcomeMessage", &message.id)
            .await
        {
            Ok(()) => {
                return Ok(Sending {
                    message,
                    duplicate: false,
                });
            }
            Err(CommitError::IdTaken) => continue,
            Err(CommitError::Api(e)) if e.status == http::StatusCode::CONFLICT => continue,
            Err(CommitError::Api(e)) => return Err(e),
        }
    }
    Err(ApiError::conflict(
        "the same message is being sent right now; retry",
    ))
}

pub async fn get(store: &dyn Store, caller: &Caller, id: &str) -> ApiResult<WelcomeMessage> {
    if !ids::is_ulid(id) {
        return Err(ApiError::not_found(WHAT));
    }
    record::find(
        store,
        &keys::welcome_message(caller.workspace_id, id),
        false,
        WHAT,
    )
    .await
}

/// The stored items of item_shapes/welcome.json read back (domain::item_shapes).
#[cfg(test)]
mod shapes {
    use crate::domain::item_shapes::{round_trip_deleted, texts_declared};

    #[test]
    fn welcome_messages_keep_their_shape() {
        round_trip_deleted::<crate::domain::welcome::WelcomeMessage>("WelcomeMessage");
        texts_declared::<crate::domain::welcome::WelcomeMessage>();
        round_trip_deleted::<crate::domain::welcome::Sent>("WelcomeSent");
        texts_declared::<crate::domain::welcome::Sent>();
    }
}
