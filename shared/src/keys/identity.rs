//! Tokens, their secrets, audit entries (and the admin view's index shards),
//! and idempotency keys: who acted, and what was already done.
//!
//! | Entity            | Access pattern                         | Index | pk                    | sk                      |
//! |-------------------|----------------------------------------|-------|-----------------------|-------------------------|
//! | API token         | by id; list in creation order          | table | `W#<ws>#TOKEN`        | `<ulid>`                |
//! | Token secret      | authenticate a bearer token            | table | `SECRET#<sha256 hex>` | `SECRET`                |
//! | Audit entry       | by id; list newest first (its shards merged) | table | `W#<ws>#AUDIT`, `W#<ws>#S<n>#AUDIT` ([`audit_entry`]) | `<ulid>` |
//! | Audit entry       | every workspace, newest first (admin)  | gsi1  | `AUDIT#<shard 0..15>` (and `AUDIT`, from before) | `<ulid>` |
//! | Event             | the feed, in the order events happened (after a cursor), its shards merged | table | `W#<ws>#EVENT`, `W#<ws>#S<n>#EVENT` (the record's shard) | `<ulid>`           |
//! | Event             | one record's history, oldest first     | gsi1  | `W#<ws>#HISTORY#<resource>#<id>` | `<ulid>`     |
//! | Idempotency record | a keyed request's stored answer (TTL) | table | `W#<ws>#IDEMPOTENCY` | `<key sha256>` |

use super::shards::{owner_shard, shard_partition, shard_partitions, sharded_from, ulid_shard};
use super::{collection, concat};
use crate::ids::WorkspaceId;
use crate::store::Key;

pub fn token(workspace_id: WorkspaceId, token_id: &str) -> Key {
    Key::new(collection(workspace_id, "TOKEN"), token_id)
}

pub fn tokens(workspace_id: WorkspaceId) -> String {
    collection(workspace_id, "TOKEN")
}

pub fn token_secret(sha256_hex: &str) -> Key {
    Key::new(format!("SECRET#{sha256_hex}"), "SECRET")
}

/// Audit entries: the partition every mutation of a workspace appends to,
/// so spread over the shards by the entry's id (`shards.rs`).
const AUDIT: &str = "AUDIT";

pub fn audit_entry(workspace_id: WorkspaceId, entry_id: &str) -> Key {
    let shard = ulid_shard(entry_id, sharded_from());
    Key::new(shard_partition(workspace_id, AUDIT, shard), entry_id)
}

/// Every shard of a workspace's audit entries, read together for a list.
pub fn audit_entries(workspace_id: WorkspaceId) -> Vec<String> {
    shard_partitions(workspace_id, AUDIT)
}

/// The admin view's first gsi1 partition (every audit entry written before
/// [`audit_index_shard`]), and the table partition of the admin counter.
pub const ALL_AUDIT: &str = "AUDIT";

/// Shards of the admin view's index: an entry's shard comes from its id, so
/// each of the 16 partitions takes 1/16 of the service's mutations.
pub const AUDIT_INDEX_SHARDS: u32 = 16;

/// The gsi1 partition of an audit entry in the admin view.
pub fn audit_index_shard(entry_id: &str) -> String {
    // The last characters of a ULID are random.
    let shard = entry_id.bytes().rev().take(4).map(u32::from).sum::<u32>() % AUDIT_INDEX_SHARDS;
    concat(&[ALL_AUDIT, "#", itoa::Buffer::new().format(shard)])
}

/// Every gsi1 partition of the admin view, the one from before sharding included.
pub fn audit_index_partitions() -> Vec<String> {
    (0..AUDIT_INDEX_SHARDS)
        .map(|shard| format!("{ALL_AUDIT}#{shard}"))
        .chain([ALL_AUDIT.to_owned()])
        .collect()
}

/// The record of one `Idempotency-Key` (its SHA-256) of a workspace.
pub fn idempotency(ws: WorkspaceId, key_sha256: &str) -> Key {
    Key::new(idempotency_records(ws), key_sha256)
}

pub fn idempotency_records(ws: WorkspaceId) -> String {
    collection(ws, "IDEMPOTENCY")
}

/// Every mutation appends at least one event, so the log is kept over the
/// shards (`shards.rs`), each record's events in the shard of the record:
/// one record's events stay in one partition (one stream shard on AWS, so
/// the dispatcher sees them in order), and a record's history can name each
/// event's key without reading it.
const EVENT: &str = "EVENT";

/// An event of record `id` of `resource`, under its cursor (a ULID: events
/// sort as they happened).
pub fn event(workspace_id: WorkspaceId, resource: &str, id: &str, cursor: &str) -> Key {
    event_in(workspace_id, event_shard(resource, id, cursor), cursor)
}

/// The shard of an event of record `id` of `resource` made at `cursor`.
pub fn event_shard(resource: &str, id: &str, cursor: &str) -> u32 {
    owner_shard(&concat(&[resource, "#", id]), cursor, sharded_from())
}

/// An event in shard `shard` of the log, under its cursor.
pub fn event_in(workspace_id: WorkspaceId, shard: u32, cursor: &str) -> Key {
    Key::new(shard_partition(workspace_id, EVENT, shard), cursor)
}

/// Every shard of a workspace's event log, read together for the feed.
pub fn event_partitions(workspace_id: WorkspaceId) -> Vec<String> {
    shard_partitions(workspace_id, EVENT)
}

/// One record's events (gsi1): `contact` 42's history.
pub fn history(workspace_id: WorkspaceId, resource: &str, id: &str) -> String {
    // `format!` kept: the table check reads this shape off the call.
    collection(workspace_id, &format!("HISTORY#{resource}#{id}"))
}
