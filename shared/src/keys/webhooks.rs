//! Webhook endpoints and their deliveries.
//!
//! | Entity            | Access pattern                         | Index | pk                    | sk                      |
//! |-------------------|----------------------------------------|-------|-----------------------|-------------------------|
//! | Webhook           | by id; list in creation order          | table | `W#<ws>#WEBHOOK`      | `wh_<ulid>`             |
//! | Webhook           | every endpoint (the local dispatcher)  | gsi1  | `WEBHOOKS`            | `<ws>#wh_<ulid>`        |
//! | Webhook health    | failing since; delivery slots (leases) | table | `W#<ws>#WEBHOOK#<id>` | `HEALTH`, `SLOT#<n:2>`  |
//! | Delivery          | by id; an endpoint's, newest first (its shards merged) | table | `W#<ws>#DELIVERY#<webhook>`, `W#<ws>#S<n>#DELIVERY#<webhook>` ([`delivery`]) | `<ulid>` |
//! | Delivery (a replay's) | by its event: what an erasure scrubs | gsi1 | `W#<ws>#REPLAYED#<event cursor>` | `<webhook>#<ulid>` |
//! | Dispatch cursor   | the events the local dispatcher has read | table | `W#<ws>`            | `DISPATCHED`            |

use super::shards::{shard_partition, shard_partitions, sharded_from, ulid_shard};
use super::{collection, ws};
use crate::ids::WorkspaceId;
use crate::store::Key;

pub fn webhook(workspace_id: WorkspaceId, id: &str) -> Key {
    Key::new(webhooks(workspace_id), id)
}

pub fn webhooks(workspace_id: WorkspaceId) -> String {
    collection(workspace_id, "WEBHOOK")
}

/// The gsi1 partition of every endpoint of the service: where the local
/// dispatcher finds the workspaces it follows (on AWS, the stream does).
pub const ALL_WEBHOOKS: &str = "WEBHOOKS";

/// An endpoint's sort key in [`ALL_WEBHOOKS`].
pub fn webhook_in_all(workspace_id: WorkspaceId, id: &str) -> String {
    format!("{workspace_id}#{id}")
}

/// The state of an endpoint that is not its settings: since when every
/// attempt failed.
pub fn webhook_health(workspace_id: WorkspaceId, id: &str) -> Key {
    Key::new(collection(workspace_id, &format!("WEBHOOK#{id}")), "HEALTH")
}

/// One of the `n` delivery slots of an endpoint (deliveries at a time).
pub fn webhook_slot(workspace_id: WorkspaceId, id: &str, n: u32) -> Key {
    Key::new(
        collection(workspace_id, &format!("WEBHOOK#{id}")),
        format!("SLOT#{n:02}"),
    )
}

/// An endpoint for `*` takes a delivery per event of its workspace, and an
/// update per attempt: its deliveries are kept over the shards
/// (`shards.rs`), each in the shard of its id.
pub fn delivery(workspace_id: WorkspaceId, webhook: &str, id: &str) -> Key {
    let shard = ulid_shard(id, sharded_from());
    Key::new(
        shard_partition(workspace_id, &format!("DELIVERY#{webhook}"), shard),
        id,
    )
}

/// Every shard of an endpoint's deliveries, by id (the event's cursor, or
/// a later ULID), read together for its log.
pub fn deliveries(workspace_id: WorkspaceId, webhook: &str) -> Vec<String> {
    shard_partitions(workspace_id, &format!("DELIVERY#{webhook}"))
}

/// The gsi1 partition of the replays of one event: a replay's delivery has
/// an id of its own (the first delivery's is the event's cursor), so an
/// erasure finds it here by the event.
pub fn replays_of(workspace_id: WorkspaceId, event_cursor: &str) -> String {
    collection(workspace_id, &format!("REPLAYED#{event_cursor}"))
}

/// How far the local dispatcher has read a workspace's events.
pub fn dispatched(workspace_id: WorkspaceId) -> Key {
    Key::new(ws(workspace_id), "DISPATCHED")
}
