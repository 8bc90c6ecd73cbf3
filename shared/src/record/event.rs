//! The event log: one event per record a mutation creates, changes or
//! deletes, written in the mutation's own transaction (no committed change
//! without its event, no event without its change). The feed, the record
//! histories and the webhooks all read it (`crate::domain::events`).
//!
//! An event's cursor is a ULID: events of a workspace sort as they were
//! made. A transaction may land a moment after its id was drawn, so the feed
//! shows an event only once it is older than [`SETTLE`]: then no event with
//! an earlier cursor can still appear, and a client that follows the feed
//! with `after=<cursor>` never skips one.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::{Personal, Record, Stamps};
use crate::auth::Caller;
use crate::ids::{self, Timestamp, WorkspaceId};
use crate::keys;
use crate::store::Key;

/// How long events are kept (DynamoDB TTL, and refused on read after).
pub const RETENTION: chrono::Duration = chrono::Duration::days(30);

/// How old an event is before the feed shows it: longer than a write may
/// take to land on DynamoDB after its id was drawn (the store's attempts
/// stop after 6 s, each at most 2 s).
pub const SETTLE: chrono::Duration = chrono::Duration::seconds(15);

/// The prefix of an event's id.
pub const ID_PREFIX: &str = "evt_";

/// One change of one record.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Event {
    /// `evt_` and the cursor.
    pub id: String,
    /// `<resource>.<verb>`: `contact.created`, `deal.won`, `tag.deleted`...
    #[serde(rename = "type")]
    pub kind: String,
    pub workspace_id: WorkspaceId,
    #[schemars(with = "crate::ids::Timestamp")]
    #[serde(with = "ids::ts_format")]
    pub occurred_at: Timestamp,
    /// Where a reader of the feed goes on from: `GET /v3/events?after=<cursor>`.
    pub cursor: String,
    /// `contact`, `deal`, `tag`...
    pub resource: String,
    /// The record's id, as the API names it.
    pub resource_id: String,
    /// The record's version after the change, for a receiver to order by.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<u64>,
    pub data: EventData,
    /// The token (or job: `import:<job>`) that made the change.
    pub token_id: String,
    pub request_id: String,
}

/// What an event says of its record.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct EventData {
    /// The record as the API shows it after the change (before it, for a deletion).
    pub object: Value,
    /// The fields the change moved, with their earlier values (`null`: absent
    /// before). Absent for a creation and a deletion.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub previous: Option<Map<String, Value>>,
}

/// An event as stored: with its expiry.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct StoredEvent {
    #[serde(flatten)]
    pub event: Event,
    /// Epoch seconds of its expiry, for DynamoDB's time to live.
    pub ttl: i64,
}

impl Record for StoredEvent {
    const TYPE: &'static str = "Event";
    /// Its data are copies of the record changed (`contacts::erase` scrubs
    /// a contact's down to its id).
    const PERSONAL: Personal = Personal {
        fields: &[],
        copies: &["data"],
        plain: &[
            "cursor",
            "id",
            "occurredAt",
            "requestId",
            "resource",
            "resourceId",
            "tokenId",
            "type",
        ],
    };
    fn key(&self) -> Key {
        let e = &self.event;
        keys::event(e.workspace_id, &e.resource, &e.resource_id, &e.cursor)
    }
    fn index_keys(&self) -> Vec<(&'static str, String)> {
        let e = &self.event;
        vec![
            (
                keys::GSI1.pk,
                keys::history(e.workspace_id, &e.resource, &e.resource_id),
            ),
            (keys::GSI1.sk, e.cursor.clone()),
        ]
    }
}

impl StoredEvent {
    /// Whether its 30 days are over (TTL deletes lazily: reads refuse it from then on).
    pub fn expired(&self, now: Timestamp) -> bool {
        self.ttl <= now.timestamp()
    }
}

/// A change a mutation is making, to be written as its event at commit.
pub(super) struct Change {
    /// The workspace of the record changed (its key's): the event is that
    /// workspace's, whoever made the change. `None` for a record of no
    /// workspace (the churn-reason list), whose event is the caller's.
    pub workspace: Option<WorkspaceId>,
    pub resource: &'static str,
    pub resource_id: String,
    pub verb: &'static str,
    pub object: Value,
    pub previous: Option<Map<String, Value>>,
    pub version: Option<u64>,
}

impl Change {
    /// The change of `after` from `before` (as read; `None` when not read)
    /// that `created` it or not, when `R`'s changes are events.
    pub fn of<R: Record>(before: Option<&R>, after: &R, created: bool) -> Option<Self> {
        let resource = R::EVENTS?;
        let object = after.event_object();
        let previous = before.map(|b| moved(&b.event_object(), &object));
        Some(Self {
            workspace: keys::workspace_of(&after.key()),
            resource,
            resource_id: after.event_id_in(&object),
            verb: after.event_verb(before, created),
            object,
            previous,
            version: after.event_version(),
        })
    }

    /// The deletion of `record` (a merge's too). Its version is one past the
    /// record's last: the record's last change had the record's own, and a
    /// receiver that applies only greater versions must apply this one.
    pub fn deleted<R: Record>(record: &R) -> Option<Self> {
        let resource = R::EVENTS?;
        let object = record.event_object();
        Some(Self {
            workspace: keys::workspace_of(&record.key()),
            resource,
            resource_id: record.event_id_in(&object),
            verb: "deleted",
            object,
            previous: None,
            version: record.event_version().map(|v| v + 1),
        })
    }

    /// Its event, made by `caller` (as `token_id`) now, in the workspace of
    /// the record changed (an operator's change of another workspace is an
    /// event of that workspace, never of the operator's).
    pub fn into_event(self, caller: &Caller, token_id: &str) -> StoredEvent {
        let cursor = ids::new_ulid();
        let occurred_at = Stamps::new().created_at;
        StoredEvent {
            event: Event {
                id: keys::concat(&[ID_PREFIX, &cursor]),
                kind: keys::concat(&[self.resource, ".", self.verb]),
                workspace_id: self.workspace.unwrap_or(caller.workspace_id),
                occurred_at,
                cursor,
                resource: self.resource.to_owned(),
                resource_id: self.resource_id,
                version: self.version,
                data: EventData {
                    object: self.object,
                    previous: self.previous,
                },
                token_id: token_id.to_owned(),
                request_id: caller.request_id.clone(),
            },
            ttl: (occurred_at + RETENTION).timestamp(),
        }
    }
}

/// The top-level fields of `before` that `after` changed, with their values
/// in `before` (`null` where `before` had none).
fn moved(before: &Value, after: &Value) -> Map<String, Value> {
    let (Some(before), Some(after)) = (before.as_object(), after.as_object()) else {
        return Map::new();
    };
    let mut moved = Map::new();
    for key in before.keys().chain(after.keys()) {
        if before.get(key) != after.get(key) && !moved.contains_key(key) {
            moved.insert(key.clone(), before.get(key).cloned().unwrap_or(Value::Null));
        }
    }
    moved
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn previous_holds_what_moved_as_it_was() {
        let before = json!({ "name": "Ana", "tags": [1], "gone": true, "same": 1 });
        let after = json!({ "name": "Ana Maria", "tags": [1, 2], "new": "x", "same": 1 });
        assert_eq!(
            Value::Object(moved(&before, &after)),
            json!({ "name": "Ana", "tags": [1], "gone": true, "new": null })
        );
    }
}
