//! The stored session, the body that brings one in, and the metrics the
//! service computes from its times (never taken from the client).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use validator::Validate;

use crate::ids::{self, Timestamp, WorkspaceId};
use crate::keys;
use crate::record::{Personal, Record, Stamps};
use crate::store::Key;

/// What happened in a session, in order.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum TrailKind {
    /// A bot handled the contact.
    Bot,
    /// The session waits in a group's queue.
    Queued,
    /// An operator took it (the first assignment, or a new one).
    Assigned,
    /// It moved to another operator or group.
    Transferred,
    /// A message: `from` says whose.
    Message,
    Finished,
    Reopened,
}

/// Who wrote a message.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum Author {
    Contact,
    Operator,
    Bot,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Validate, schemars::JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Trail {
    #[serde(rename = "type")]
    pub kind: TrailKind,
    #[schemars(with = "crate::ids::Timestamp")]
    #[serde(with = "ids::ts_format")]
    pub at: Timestamp,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[validate(length(min = 1, max = 64))]
    pub operator_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[validate(length(min = 1, max = 64))]
    pub group_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[validate(length(min = 1, max = 64))]
    pub bot_id: Option<String>,
    /// Messages only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<Author>,
}

/// The conversation a session belongs to.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Validate, schemars::JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct SessionConversation {
    #[validate(range(min = 1, max = 9007199254740991u64))]
    pub id: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub contact_id: Option<u64>,
    /// Canonical E.164 once stored (any format in a body).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[validate(length(min = 1, max = 100))]
    pub contact_phone: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[validate(length(min = 1, max = 64))]
    pub channel_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[validate(length(min = 1, max = 32))]
    pub channel_type: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub platform_id: Option<u64>,
}

#[derive(
    Debug, Clone, Default, Serialize, Deserialize, PartialEq, Validate, schemars::JsonSchema,
)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct SessionDeals {
    #[serde(default)]
    #[validate(length(max = 20))]
    pub ids: Vec<u64>,
    #[serde(default)]
    pub won: bool,
}

/// `PUT /v3/reports/sessions/{id}` and the `session` lines of `crm load`:
/// everything but the id (in the path, or `id` in a load line) and what the
/// service computes (`tma`, `tme`, `tmp`, the assignee, the finish).
#[derive(Debug, Clone, Deserialize, Validate, schemars::JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct SessionInput {
    #[serde(default, rename = "_id")]
    #[validate(length(min = 1, max = 128))]
    pub legacy_id: Option<String>,
    /// When the session opened.
    pub created_at: ids::ClientTime,
    #[validate(nested)]
    pub conversation: SessionConversation,
    /// The inbox segment the session is in (the contact list's `segmentId`).
    #[validate(length(min = 1, max = 128))]
    pub segment_id: Option<String>,
    #[serde(default)]
    #[validate(length(max = 500), nested)]
    pub trails: Vec<Trail>,
    #[serde(default)]
    #[validate(length(max = 20))]
    pub tags: Vec<u64>,
    #[serde(default)]
    #[validate(length(max = 50))]
    pub followers: Vec<u64>,
    #[serde(default)]
    #[validate(length(max = 50))]
    pub scheduled_messages: Vec<u64>,
    #[validate(length(min = 1, max = 64))]
    pub campaign_id: Option<String>,
    #[validate(length(max = 4000))]
    pub summary: Option<String>,
    #[validate(length(min = 1, max = 128))]
    pub merged_from_customer_id: Option<String>,
    #[serde(default)]
    pub tmp_reset_on_new_assignment: bool,
    #[serde(default)]
    #[validate(nested)]
    pub deals: SessionDeals,
    pub call: Option<Map<String, Value>>,
    #[validate(range(min = 1, max = 5))]
    pub rating: Option<u8>,
    #[serde(default)]
    pub is_new_contact: bool,
}

/// A session as stored and as the API shows it (see the module for the metrics).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Session {
    pub id: String,
    #[serde(default, rename = "_id", skip_serializing_if = "Option::is_none")]
    pub legacy_id: Option<String>,
    pub workspace_id: WorkspaceId,
    pub conversation: SessionConversation,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub segment_id: Option<String>,
    pub trails: Vec<Trail>,
    pub tags: Vec<u64>,
    pub followers: Vec<u64>,
    pub scheduled_messages: Vec<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub campaign_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub merged_from_customer_id: Option<String>,
    pub tmp_reset_on_new_assignment: bool,
    pub deals: SessionDeals,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call: Option<Map<String, Value>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rating: Option<u8>,
    pub is_new_contact: bool,
    pub operator_messages_count: u32,
    pub assigned_operator_messages_count: u32,
    pub bot_messages_count: u32,
    pub contact_messages_count: u32,
    pub total_messages_count: u32,
    #[serde(flatten)]
    pub times: SessionTimes,
    #[serde(flatten)]
    pub metrics: Metrics,
    #[serde(flatten)]
    pub stamps: Stamps,
    pub version: u64,
}

crate::versioned!(Session);

impl Record for Session {
    const EVENTS: Option<&'static str> = Some("session");

    /// A session comes in whole (`PUT`): every change is an upsert.
    fn event_verb(&self, _: Option<&Self>, _: bool) -> &'static str {
        "upserted"
    }
    const TYPE: &'static str = "Session";
    /// The contact's phone and a call (its recording, its number) are
    /// theirs; an operator's summary may name them.
    const PERSONAL: Personal = Personal {
        fields: &["conversation.contactPhone", "call"],
        copies: &["summary"],
        plain: &[
            "_id",
            "id",
            "answeredBy",
            "assignedAt",
            "botId",
            "bots",
            "campaignId",
            "conversation.channelId",
            "conversation.channelType",
            "finishedAt",
            "firstReplyAt",
            "groupId",
            "groups",
            "mergedFromCustomerId",
            "operatorId",
            "operators",
            "queuedAt",
            "reopenedAt",
            "segmentId",
            "serviceStartedAt",
            "trails",
        ],
    };
    fn key(&self) -> Key {
        keys::session(self.workspace_id, &self.id)
    }
}

/// The times the metrics come from, read off the trails.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionTimes {
    /// Where the measured service starts: the last reopening, else the opening.
    #[schemars(with = "crate::ids::Timestamp")]
    #[serde(with = "ids::ts_format")]
    pub service_started_at: Timestamp,
    #[schemars(with = "Option<crate::ids::Timestamp>")]
    #[serde(
        default,
        with = "ids::ts_format::option",
        skip_serializing_if = "Option::is_none"
    )]
    pub queued_at: Option<Timestamp>,
    #[schemars(with = "Option<crate::ids::Timestamp>")]
    #[serde(
        default,
        with = "ids::ts_format::option",
        skip_serializing_if = "Option::is_none"
    )]
    pub assigned_at: Option<Timestamp>,
    #[schemars(with = "Option<crate::ids::Timestamp>")]
    #[serde(
        default,
        with = "ids::ts_format::option",
        skip_serializing_if = "Option::is_none"
    )]
    pub first_reply_at: Option<Timestamp>,
    #[schemars(with = "Option<crate::ids::Timestamp>")]
    #[serde(
        default,
        with = "ids::ts_format::option",
        skip_serializing_if = "Option::is_none"
    )]
    pub finished_at: Option<Timestamp>,
    #[schemars(with = "Option<crate::ids::Timestamp>")]
    #[serde(
        default,
        with = "ids::ts_format::option",
        skip_serializing_if = "Option::is_none"
    )]
    pub reopened_at: Option<Timestamp>,
    /// The operator of the last assignment (the current one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operator_id: Option<String>,
    /// The operator who sent the first reply: the first response time is theirs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answered_by: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bot_id: Option<String>,
    /// Operators and groups the session went through (assignments, transfers).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub operators: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub groups: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub bots: Vec<String>,
    /// Whether the session was transferred (a change of assignment).
    #[serde(default)]
    pub transferred: bool,
}

/// Seconds (with milliseconds), computed by the service.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
pub struct Metrics {
    /// Handling time: first assignment until finished.
    #[serde(
        default,
        serialize_with = "crate::record::optional_number",
        skip_serializing_if = "Option::is_none"
    )]
    pub tma: Option<f64>,
    /// Waiting time: queued until the first assignment.
    #[serde(
        default,
        serialize_with = "crate::record::optional_number",
        skip_serializing_if = "Option::is_none"
    )]
    pub tme: Option<f64>,
    /// First response: the assignment (or, with `tmpResetOnNewAssignment`,
    /// the last assignment before it) until the first operator message.
    #[serde(
        default,
        serialize_with = "crate::record::optional_number",
        skip_serializing_if = "Option::is_none"
    )]
    pub tmp: Option<f64>,
}
