//! Time-ordered families over shards (issue #47, docs/plans/tenant-write-rate.md):
//! a partition that every mutation of a workspace appends to (the audit
//! entries) takes one tenant's whole write rate at the end of its key range,
//! where no split for heat helps. Spread over [`SHARDS`] partitions, each
//! takes an eighth.
//!
//! | Entity            | Access pattern                         | Index | pk                    | sk                      |
//! |-------------------|----------------------------------------|-------|-----------------------|-------------------------|
//! | A family's shard 1..7 | the family's own rows, merged by sort key (`page::merged`) | table | `W#<ws>#S<n>#<family>` | the family's |
//!
//! Shard 0 is the family's partition as it always was, so nothing is moved.
//! A write picks its shard from what the item is (its id), never at random,
//! so that a read by key computes it: one GetItem still. Items made before
//! the layout's cutover ([`sharded_from`], `CRM_SHARDED_FROM`) are in shard
//! 0 whatever their hash; unset, every item is, and the code runs as it did
//! before. A list reads every shard, old items included, in one round of
//! parallel Queries.
//!
//! Once set, the cutover is never moved nor unset: items written after it
//! sit in their shards, and a read by key must keep looking there. Set it
//! at least an hour after the deploy that carries this code, so that no
//! function of an older build still writes new items to shard 0.

use std::sync::OnceLock;

use super::collection;
use crate::ids::{Timestamp, WorkspaceId, padded};
use crate::store::Key;

/// Shards of a time-ordered family. Fixed for a cutover: changing it (or the
/// hashes) would move where stored items are looked for; a later layout is
/// a second cutover, never a rewrite.
pub const SHARDS: u32 = 8;

/// `W#<ws>#<family>` for shard 0, `W#<ws>#S<n>#<family>` for the others.
/// No collection is named `S<digits>`, and every shard still starts with
/// its workspace (`keys::workspace_of` holds).
pub fn shard_partition(workspace_id: WorkspaceId, family: &str, shard: u32) -> String {
    if shard == 0 {
        collection(workspace_id, family)
    } else {
        collection(workspace_id, &format!("S{shard}#{family}"))
    }
}

/// A record of a list by id kept over the shards (contacts, deals, tags,
/// products, new contacts): in the shard of its id, under its padded id.
pub fn by_id(workspace_id: WorkspaceId, family: &str, id: u64) -> Key {
    let shard = id_shard(id, sharded_from());
    Key::new(shard_partition(workspace_id, family, shard), padded(id))
}

/// Every shard of a family in use, shard 0 first.
pub fn shard_partitions(workspace_id: WorkspaceId, family: &str) -> Vec<String> {
    (0..shards_in_use())
        .map(|shard| shard_partition(workspace_id, family, shard))
        .collect()
}

/// The shards in use: all of them once the layout's cutover is set; until
/// then shard 0 alone, where every item is, so a list or a feed page costs
/// one Query as it did before the shards.
pub fn shards_in_use() -> u32 {
    if sharded_from().is_some() { SHARDS } else { 1 }
}

/// The shard of a ULID-keyed item (an audit entry): FNV-1a of its random
/// part (the last 16 characters), or 0 for an id made before `from`.
pub fn ulid_shard(id: &str, from: Option<Timestamp>) -> u32 {
    if !made_since(id, from) {
        return 0;
    }
    (fnv1a(&id.as_bytes()[id.len().saturating_sub(16)..]) % SHARDS as u64) as u32
}

/// The shard of an item kept with what it belongs to (a record's events,
/// under `<resource>#<id>`): FNV-1a of `owner`, so that all of one owner's
/// items made since `from` share a shard; 0 when `made` (the item's own
/// ULID) is from before `from`.
pub fn owner_shard(owner: &str, made: &str, from: Option<Timestamp>) -> u32 {
    if !made_since(made, from) {
        return 0;
    }
    (fnv1a(owner.as_bytes()) % SHARDS as u64) as u32
}

/// The shard of an item under a numeric id (a contact): the top bits of a
/// fixed multiplicative hash of the id, or 0 for an id made before `from`.
/// Ids of one millisecond differ in their low bits only, which the
/// multiplication carries to the top.
pub fn id_shard(id: u64, from: Option<Timestamp>) -> u32 {
    match from {
        Some(from) if crate::ids::id_time(id) >= from => {
            (id.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 32) as u32 % SHARDS
        }
        _ => 0,
    }
}

/// The shard of an index item keyed by a value (a phone, an e-mail, an
/// external id): FNV-1a of the value in a workspace made since the cutover
/// (`sharded`), else 0. A value carries no time, so a rule by the item's
/// age could not tell where an item of a value is; the workspace's age
/// can: a workspace made before the cutover keeps all of its value-keyed
/// items in shard 0, where they always were, and one made after has none
/// there. A lookup by value reads one partition either way.
pub fn value_shard(value: &str, sharded: bool) -> u32 {
    if sharded {
        (fnv1a(value.as_bytes()) % SHARDS as u64) as u32
    } else {
        0
    }
}

/// The partition of a workspace's index items of `family` keyed by `value`.
pub fn value_partition(workspace_id: WorkspaceId, family: &str, value: &str) -> String {
    let since = sharded_from().is_some_and(|from| crate::ids::id_time(workspace_id.0) >= from);
    shard_partition(workspace_id, family, value_shard(value, since))
}

/// An index item keyed by `value`, under `sk`, in its [`value_partition`].
pub fn by_value(workspace_id: WorkspaceId, family: &str, value: &str, sk: String) -> Key {
    Key::new(value_partition(workspace_id, family, value), sk)
}

/// Whether the ULID `id` was made at or after the cutover `from`.
fn made_since(id: &str, from: Option<Timestamp>) -> bool {
    let Some(from) = from else { return false };
    ulid::Ulid::from_string(id).is_ok_and(|u| u.timestamp_ms() as i64 >= from.timestamp_millis())
}

/// FNV-1a, 64 bits: small, fixed forever (a unit test pins it), and spreads
/// ULIDs' random characters evenly.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, byte| {
        (hash ^ u64::from(*byte)).wrapping_mul(0x0100_0000_01b3)
    })
}

static SHARDED_FROM: OnceLock<Option<Timestamp>> = OnceLock::new();

/// The process's cutover: `CRM_SHARDED_FROM` (RFC 3339), read once, unless
/// [`shard_from`] chose it first. A value that is not a time stops the
/// process at its first key rather than reading in the wrong partitions.
pub fn sharded_from() -> Option<Timestamp> {
    *SHARDED_FROM.get_or_init(|| {
        let value = std::env::var("CRM_SHARDED_FROM").ok()?;
        let value = value.trim();
        if value.is_empty() {
            return None;
        }
        match chrono::DateTime::parse_from_rfc3339(value) {
            Ok(at) => Some(at.with_timezone(&chrono::Utc)),
            Err(e) => panic!("CRM_SHARDED_FROM={value:?} is not an RFC 3339 time: {e}"),
        }
    })
}

/// Chooses the cutover for this process (the test harness), before any key
/// is built. Choosing another after the first is a bug: it panics.
pub fn shard_from(at: Timestamp) {
    let chosen = *SHARDED_FROM.get_or_init(|| Some(at));
    assert_eq!(
        chosen,
        Some(at),
        "the shard layout was chosen before shard_from({at}) was called"
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(text: &str) -> Timestamp {
        chrono::DateTime::parse_from_rfc3339(text)
            .unwrap()
            .with_timezone(&chrono::Utc)
    }

    /// Stored items are found by these numbers: they never change.
    #[test]
    fn the_hash_is_pinned() {
        let from = Some(at("2025-01-01T00:00:00Z"));
        let shards: Vec<u32> = [
            "01KB0000000000000000000000",
            "01KB0000000000000000000001",
            "01KB00000000000000000000ZZ",
            "01KBZZZZZZZZZZZZZZZZZZZZZZ",
            "01KBAX1Q9Y7T3N6M2C8D4F5G0H",
        ]
        .iter()
        .map(|id| ulid_shard(id, from))
        .collect();
        assert_eq!(shards, [5, 2, 5, 5, 7]);
        let made = "01KBAX1Q9Y7T3N6M2C8D4F5G0H";
        let owners: Vec<u32> = ["contact#1", "contact#2", "deal#42", "tag#7", "workspace#1"]
            .iter()
            .map(|owner| owner_shard(owner, made, from))
            .collect();
        assert_eq!(owners, [3, 6, 6, 5, 2]);
        // Made on 2026-11-01 (its first 4 ids of one millisecond, then the next's).
        let ids: Vec<u32> = [
            366_280_704_000_000_u64,
            366_280_704_000_001,
            366_280_704_000_002,
            366_280_704_000_003,
            366_280_704_004_096,
        ]
        .iter()
        .map(|id| id_shard(*id, from))
        .collect();
        assert_eq!(ids, [7, 1, 2, 4, 4]);
        assert_eq!(id_shard(1, from), 0, "an id of the epoch is from before");
        let values: Vec<u32> = ["+5511987654321", "ana@example.com", "crm-1", ""]
            .iter()
            .map(|value| value_shard(value, true))
            .collect();
        assert_eq!(values, [5, 0, 5, 5]);
        assert_eq!(value_shard("+5511987654321", false), 0);
        assert_eq!(owner_shard("contact#1", made, None), 0);
        assert_eq!(owner_shard("contact#1", "not a ulid", from), 0);
        assert_eq!(fnv1a(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a(b"a"), 0xaf63_dc4c_8601_ec8c);
    }

    #[test]
    fn ids_made_before_the_cutover_or_without_one_are_in_shard_0() {
        let id = "01KBAX1Q9Y7T3N6M2C8D4F5G0H"; // made in 2025-11
        assert_ne!(ulid_shard(id, Some(at("2025-01-01T00:00:00Z"))), 0);
        assert_eq!(ulid_shard(id, Some(at("2030-01-01T00:00:00Z"))), 0);
        assert_eq!(ulid_shard(id, None), 0);
        assert_eq!(
            ulid_shard("not a ulid", Some(at("2025-01-01T00:00:00Z"))),
            0
        );
    }

    #[test]
    fn new_ids_spread_over_every_shard() {
        let from = Some(at("2025-01-01T00:00:00Z"));
        let mut per_shard = [0u32; SHARDS as usize];
        for _ in 0..8000 {
            per_shard[ulid_shard(&crate::ids::new_ulid(), from) as usize] += 1;
        }
        assert!(
            per_shard.iter().all(|n| (800..1200).contains(n)),
            "{per_shard:?}"
        );
        // Numeric ids as one process makes them: a burst within a
        // millisecond, then the next milliseconds.
        let mut per_shard = [0u32; SHARDS as usize];
        for _ in 0..8000 {
            per_shard[id_shard(crate::ids::new_id(), from) as usize] += 1;
        }
        assert!(
            per_shard.iter().all(|n| (800..1200).contains(n)),
            "{per_shard:?}"
        );
    }

    #[test]
    fn shards_are_tenant_partitions_no_collection_can_imitate() {
        let ws = WorkspaceId(7);
        let all: Vec<String> = (0..SHARDS)
            .map(|shard| shard_partition(ws, "AUDIT", shard))
            .collect();
        assert_eq!(all[0], "W#7#AUDIT");
        assert_eq!(all[3], "W#7#S3#AUDIT");
        for pk in &all {
            let key = crate::store::Key::new(pk.clone(), "x");
            assert_eq!(super::super::workspace_of(&key), Some(ws));
        }
        // No family is named like a shard, so `S<n>#` can only be one.
        for family in ["AUDIT", "EVENT", "CONTACT", "DEAL", "TAG", "PRODUCT"] {
            assert!(
                !(family.starts_with('S') && family[1..].starts_with(|c: char| c.is_ascii_digit()))
            );
        }
    }
}
