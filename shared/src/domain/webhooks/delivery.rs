//! Deliveries: one per event and endpoint, each attempt kept (status,
//! latency, the first 4 KB of the answer), retried on the schedule of
//! [`outbound::Settings`] until the endpoint answers 2xx. This module is the
//! record and its versioned writes; a run of its message is [`super::deliver`].
//!
//! Every write of a delivery is conditioned on the version read. An erasure
//! moves the version when it drops the answers kept on a delivery
//! (`contacts::erase`).

use serde::{Deserialize, Serialize};

use super::record::Webhook;
use crate::error::ApiResult;
use crate::ids::{self, Timestamp, WorkspaceId};
use crate::keys;
use crate::queue::JobMessage;
use crate::record::{self, Event, Personal, Record, to_item};
use crate::store::{Condition, Key, Store, StoreError, Write};

/// The kind of a delivery's queue message.
pub const KIND: &str = "webhookDelivery";

/// The prefix of a delivery's id in the API.
pub const ID_PREFIX: &str = "dlv_";

/// Attempts kept on a delivery (the latest); `attemptCount` counts them all.
const ATTEMPTS_KEPT: usize = 20;

#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum DeliveryStatus {
    /// Waiting for its first attempt or its next one (`nextAttemptAt`).
    Pending,
    /// An attempt is under way.
    Sending,
    /// The endpoint answered 2xx.
    Succeeded,
    /// No attempt left (`reason` says why); retry or replay to send again.
    Failed,
}

/// One POST of a delivery.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Attempt {
    /// 1 for the first attempt.
    pub number: u32,
    #[schemars(with = "crate::ids::Timestamp")]
    #[serde(with = "ids::ts_format")]
    pub at: Timestamp,
    /// The answer's status; absent when there was none (`error`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status_code: Option<u16>,
    /// Why there was no answer: an address refused, no connection, the timeout.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    pub latency_ms: u64,
    /// The first 4 KB of the answer's body.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Delivery {
    /// A ULID: the event's cursor for the first delivery of an event (so
    /// that dispatching it twice makes one), a new one for a replay or ping.
    pub id: String,
    pub workspace_id: WorkspaceId,
    pub webhook_id: String,
    /// The `webhook-id` of every attempt: the event's id.
    pub event_id: String,
    pub event_type: String,
    /// Where the event is read at each attempt; absent for a ping.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub event_cursor: Option<String>,
    /// The shard of the log that holds the event (`keys::event_shard`);
    /// absent (0) in a delivery made before the log was sharded.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub event_shard: u32,
    /// The body of a ping (no event in the log).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub payload: Option<String>,
    /// The token id of the endpoint's owner when the delivery was made: its
    /// record is read with the endpoint at each attempt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<String>,
    pub status: DeliveryStatus,
    #[serde(default)]
    pub attempts: Vec<Attempt>,
    #[serde(default)]
    pub attempt_count: u32,
    #[serde(
        default,
        with = "ids::ts_format::option",
        skip_serializing_if = "Option::is_none"
    )]
    pub next_attempt_at: Option<Timestamp>,
    #[serde(
        default,
        with = "ids::ts_format::option",
        skip_serializing_if = "Option::is_none"
    )]
    pub lease_until: Option<Timestamp>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    #[serde(with = "ids::ts_format")]
    pub created_at: Timestamp,
    pub version: u64,
    /// Kept as long as events are.
    pub ttl: i64,
}

impl Record for Delivery {
    const TYPE: &'static str = "Delivery";
    /// A receiver's answer may echo the event; the payload is a ping's.
    const PERSONAL: Personal = Personal {
        fields: &["attempts.response"],
        copies: &[],
        plain: &[
            "attempts.at",
            "attempts.error",
            "eventCursor",
            "eventId",
            "eventShard",
            "eventType",
            "id",
            "leaseUntil",
            "nextAttemptAt",
            "owner",
            "payload",
            "reason",
            "status",
            "webhookId",
        ],
    };
    fn key(&self) -> Key {
        keys::delivery(self.workspace_id, &self.webhook_id, &self.id)
    }
    /// A replay's delivery, under an id of its own, is indexed by its event,
    /// so that an erasure of the event's person finds its answers.
    fn index_keys(&self) -> Vec<(&'static str, String)> {
        match &self.event_cursor {
            Some(cursor) if *cursor != self.id => vec![
                (keys::GSI1.pk, keys::replays_of(self.workspace_id, cursor)),
                (keys::GSI1.sk, format!("{}#{}", self.webhook_id, self.id)),
            ],
            _ => Vec::new(),
        }
    }
}

impl Delivery {
    /// The delivery of `event` to `webhook`, under `id`.
    pub fn of(webhook: &Webhook, event: &Event, id: String) -> Self {
        let now = ids::now();
        Self {
            id,
            workspace_id: webhook.workspace_id,
            webhook_id: webhook.id.clone(),
            event_id: event.id.clone(),
            event_type: event.kind.clone(),
            event_cursor: Some(event.cursor.clone()),
            event_shard: keys::event_shard(&event.resource, &event.resource_id, &event.cursor),
            payload: None,
            owner: webhook.owner.as_ref().map(|o| o.token_id.clone()),
            status: DeliveryStatus::Pending,
            attempts: Vec::new(),
            attempt_count: 0,
            next_attempt_at: None,
            lease_until: None,
            reason: None,
            created_at: now,
            version: 1,
            ttl: (now + crate::record::event::RETENTION).timestamp(),
        }
    }

    /// Its queue message.
    pub fn message(&self) -> JobMessage {
        JobMessage::new(
            KIND,
            self.workspace_id,
            format!("{}/{}", self.webhook_id, self.id),
        )
    }

    /// The message of a run that waits for the claim ending at `until` to
    /// lapse, and takes the delivery over only if that claim is still there.
    pub(super) fn message_awaiting(&self, until: Timestamp) -> JobMessage {
        JobMessage::new(
            KIND,
            self.workspace_id,
            format!(
                "{}/{}/{}",
                self.webhook_id,
                self.id,
                until.timestamp_millis()
            ),
        )
    }

    pub(super) fn stop(&mut self, status: DeliveryStatus, reason: Option<String>) {
        self.status = status;
        self.reason = reason;
        self.next_attempt_at = None;
        self.lease_until = None;
    }

    pub(super) fn record(&mut self, attempt: Attempt) {
        self.attempt_count += 1;
        self.attempts.push(attempt);
        let over = self.attempts.len().saturating_sub(ATTEMPTS_KEPT);
        self.attempts.drain(..over);
    }
}

/// Writes `delivery` as version `version + 1` over `version` (`None`: new).
/// `false`: someone else wrote it first.
pub async fn save(
    store: &dyn Store,
    delivery: &mut Delivery,
    version: Option<u64>,
) -> ApiResult<bool> {
    let condition = match version {
        Some(v) => {
            delivery.version = v + 1;
            Condition::VersionIs(v)
        }
        None => Condition::NotExists,
    };
    let item = to_item(delivery)?;
    match store
        .write(vec![Write::Put {
            item,
            condition: Some(condition),
        }])
        .await
    {
        Ok(()) => Ok(true),
        Err(StoreError::ConditionFailed { .. }) => Ok(false),
        Err(e) => Err(e.into()),
    }
}

pub async fn read(
    store: &dyn Store,
    ws: WorkspaceId,
    webhook: &str,
    id: &str,
) -> ApiResult<Option<Delivery>> {
    record::get(store, &keys::delivery(ws, webhook, id), true).await
}

fn is_zero(shard: &u32) -> bool {
    *shard == 0
}
