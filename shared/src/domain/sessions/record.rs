//! The stored session, the body that brings one in, and the metrics the
//! service computes from its times (never taken from the client).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use validator::Validate;

use crate::error::{ApiError, ApiResult};
use crate::ids::{self, Timestamp, WorkspaceId};
use crate::keys;
use crate::record::{Record, Stamps};
use crate::store::Key;

/// What happened in a session, in order.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
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
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub enum Author {
    Contact,
    Operator,
    Bot,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Validate)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Trail {
    #[serde(rename = "type")]
    pub kind: TrailKind,
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
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Validate)]
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

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Validate)]
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
#[derive(Debug, Clone, Deserialize, Validate)]
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
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
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
    const TYPE: &'static str = "Session";
    fn key(&self) -> Key {
        keys::session(self.workspace_id, &self.id)
    }
}

/// The times the metrics come from, read off the trails.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct SessionTimes {
    /// Where the measured service starts: the last reopening, else the opening.
    #[serde(with = "ids::ts_format")]
    pub service_started_at: Timestamp,
    #[serde(
        default,
        with = "ids::ts_format::option",
        skip_serializing_if = "Option::is_none"
    )]
    pub queued_at: Option<Timestamp>,
    #[serde(
        default,
        with = "ids::ts_format::option",
        skip_serializing_if = "Option::is_none"
    )]
    pub assigned_at: Option<Timestamp>,
    #[serde(
        default,
        with = "ids::ts_format::option",
        skip_serializing_if = "Option::is_none"
    )]
    pub first_reply_at: Option<Timestamp>,
    #[serde(
        default,
        with = "ids::ts_format::option",
        skip_serializing_if = "Option::is_none"
    )]
    pub finished_at: Option<Timestamp>,
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
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq)]
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

fn seconds(from: Timestamp, to: Timestamp) -> f64 {
    ((to - from).num_milliseconds().max(0)) as f64 / 1000.0
}

/// Reads the times off the trails and computes the metrics. Only what happens
/// from the service's start (the last reopening, else the opening) counts; a
/// bot's message is never a reply.
pub fn measure(
    created_at: Timestamp,
    trails: &[Trail],
    reset_on_new_assignment: bool,
) -> ApiResult<(SessionTimes, Metrics)> {
    for pair in trails.windows(2) {
        if pair[1].at < pair[0].at {
            return Err(ApiError::field("trails", "must be in time order"));
        }
    }
    if trails.first().is_some_and(|t| t.at < created_at) {
        return Err(ApiError::field("trails", "must not start before createdAt"));
    }
    let reopened_at = trails
        .iter()
        .rev()
        .find(|t| t.kind == TrailKind::Reopened)
        .map(|t| t.at);
    let start = reopened_at.unwrap_or(created_at);
    let service: Vec<&Trail> = trails.iter().filter(|t| t.at >= start).collect();
    let assignments: Vec<&&Trail> = service
        .iter()
        .filter(|t| matches!(t.kind, TrailKind::Assigned | TrailKind::Transferred))
        .collect();
    let first_assignment = assignments.first().map(|t| t.at);
    let queued_at = service
        .iter()
        .find(|t| t.kind == TrailKind::Queued)
        .map(|t| t.at);
    let reply = first_assignment.and_then(|assigned| {
        service.iter().find(|t| {
            t.kind == TrailKind::Message && t.from == Some(Author::Operator) && t.at >= assigned
        })
    });
    let finished_at = service
        .iter()
        .rev()
        .find(|t| t.kind == TrailKind::Finished)
        .map(|t| t.at)
        .filter(|f| reopened_at.is_none_or(|r| *f >= r));

    let tme = match (queued_at, first_assignment) {
        (Some(q), Some(a)) if a >= q => Some(seconds(q, a)),
        _ => None,
    };
    let tmp = reply.and_then(|reply| {
        let base = if reset_on_new_assignment {
            assignments
                .iter()
                .rev()
                .find(|a| a.at <= reply.at)
                .map(|a| a.at)
        } else {
            first_assignment
        };
        base.map(|b| seconds(b, reply.at))
    });
    let tma = match (first_assignment, finished_at) {
        (Some(a), Some(f)) if f >= a => Some(seconds(a, f)),
        _ => None,
    };
    let mut operators: Vec<String> = Vec::new();
    let mut groups: Vec<String> = Vec::new();
    let mut bots: Vec<String> = Vec::new();
    for t in trails {
        if let Some(o) = &t.operator_id
            && matches!(t.kind, TrailKind::Assigned | TrailKind::Transferred)
            && !operators.contains(o)
        {
            operators.push(o.clone());
        }
        if let Some(g) = &t.group_id
            && !groups.contains(g)
        {
            groups.push(g.clone());
        }
        if let Some(b) = &t.bot_id
            && !bots.contains(b)
        {
            bots.push(b.clone());
        }
    }
    let times = SessionTimes {
        service_started_at: start,
        queued_at,
        assigned_at: first_assignment,
        first_reply_at: reply.map(|r| r.at),
        finished_at,
        reopened_at,
        operator_id: assignments.last().and_then(|a| a.operator_id.clone()),
        answered_by: reply.and_then(|r| r.operator_id.clone()),
        group_id: trails.iter().rev().find_map(|t| t.group_id.clone()),
        bot_id: trails.iter().rev().find_map(|t| t.bot_id.clone()),
        operators,
        groups,
        bots,
        transferred: trails.iter().any(|t| t.kind == TrailKind::Transferred),
    };
    Ok((times, Metrics { tma, tme, tmp }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(minutes: i64) -> Timestamp {
        ids::parse_ts("2026-03-01T10:00:00Z").unwrap() + chrono::Duration::minutes(minutes)
    }

    fn trail(kind: TrailKind, minutes: i64, operator: Option<&str>, from: Option<Author>) -> Trail {
        Trail {
            kind,
            at: at(minutes),
            operator_id: operator.map(str::to_owned),
            group_id: None,
            bot_id: None,
            from,
        }
    }

    use TrailKind::*;

    /// The worked example of docs/design.md.
    #[test]
    fn metrics_of_a_plain_session() {
        let trails = [
            trail(Bot, 0, None, None),
            trail(Message, 1, None, Some(Author::Bot)),
            trail(Queued, 2, None, None),
            trail(Assigned, 7, Some("ana"), None),
            trail(Message, 9, None, Some(Author::Contact)),
            trail(Message, 10, Some("ana"), Some(Author::Operator)),
            trail(Finished, 37, None, None),
        ];
        let (times, m) = measure(at(0), &trails, false).unwrap();
        assert_eq!(m.tme, Some(300.0), "queued 10:02 until assigned 10:07");
        assert_eq!(
            m.tmp,
            Some(180.0),
            "assigned 10:07 until the first reply 10:10"
        );
        assert_eq!(m.tma, Some(1800.0), "assigned 10:07 until finished 10:37");
        assert_eq!(times.answered_by.as_deref(), Some("ana"));
    }

    #[test]
    fn a_bot_message_is_never_a_reply() {
        let trails = [
            trail(Queued, 0, None, None),
            trail(Assigned, 1, Some("ana"), None),
            trail(Message, 2, None, Some(Author::Bot)),
        ];
        let (_, m) = measure(at(0), &trails, false).unwrap();
        assert_eq!(m.tmp, None);
        assert_eq!(m.tma, None, "not finished");
    }

    #[test]
    fn a_transfer_resets_the_first_response_only_when_asked() {
        let trails = [
            trail(Assigned, 0, Some("ana"), None),
            trail(Transferred, 4, Some("rui"), None),
            trail(Message, 5, Some("rui"), Some(Author::Operator)),
        ];
        let (times, m) = measure(at(0), &trails, false).unwrap();
        assert_eq!(m.tmp, Some(300.0));
        assert_eq!(
            times.answered_by.as_deref(),
            Some("rui"),
            "the time goes to who answered"
        );
        assert_eq!(times.operator_id.as_deref(), Some("rui"));
        let (_, m) = measure(at(0), &trails, true).unwrap();
        assert_eq!(m.tmp, Some(60.0));
    }

    #[test]
    fn a_reopened_session_measures_from_its_reopening() {
        let trails = [
            trail(Queued, 0, None, None),
            trail(Assigned, 10, Some("ana"), None),
            trail(Finished, 20, None, None),
            trail(Reopened, 100, None, None),
            trail(Queued, 100, None, None),
            trail(Assigned, 103, Some("rui"), None),
            trail(Message, 104, Some("rui"), Some(Author::Operator)),
            trail(Finished, 110, None, None),
        ];
        let (times, m) = measure(at(0), &trails, false).unwrap();
        assert_eq!(times.service_started_at, at(100));
        assert_eq!(
            (m.tme, m.tmp, m.tma),
            (Some(180.0), Some(60.0), Some(420.0))
        );
    }

    #[test]
    fn trails_must_be_in_order() {
        let trails = [
            trail(Assigned, 5, Some("a"), None),
            trail(Queued, 1, None, None),
        ];
        assert!(measure(at(0), &trails, false).is_err());
        assert!(measure(at(10), &[trail(Queued, 1, None, None)], false).is_err());
    }
}
