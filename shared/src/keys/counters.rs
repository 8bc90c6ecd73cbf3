//! Counters: a list's `totalCount` over shards, and the admin audit counter.
//!
//! | Entity            | Access pattern                         | Index | pk                    | sk                      |
//! |-------------------|----------------------------------------|-------|-----------------------|-------------------------|
//! | Counter           | `totalCount` of a list (shard 0)       | table | `W#<ws>`              | `COUNT#<list>`          |
//! | Counter shard     | the same, shard 1..N-1 ([`counter_shards`]); read only once sharded | table | `W#<ws>#COUNT#<shard>` | `COUNT#<list>`    |
//! | Counter shard, sharded layout | the same, shard 0..N-1 of a busy list ([`sharded_counter_shards`]), once `CRM_SHARDED_FROM` is set | table | `W#<ws>#COUNT#<list>#<shard>` | `COUNT#<list>` |
//! | Audit counter     | `totalCount` of the admin list (shard 0; 1..7 read only, from before) | table | `AUDIT` | `COUNT#<shard>` |
//! | Audit counter shard | the same, shard 1..63               | table | `AUDIT#COUNT#<shard>` | `COUNT#0`               |

use super::DashboardId;
use super::{ALL_AUDIT, collection, concat, ws};
use crate::ids::WorkspaceId;
use crate::store::Key;

/// Shards of the admin audit counter, which every mutation of the service
/// moves: each shard is its own partition and takes 1/64 of those writes
/// (64 × 500 transactional writes a second: 32,000 mutations a second,
/// 26 tenants at their write budget). A read sums them with the 7 of the
/// first layout in one BatchGetItem (71 keys of its 100). Raised from 16
/// without a migration: the shards written before still count.
pub const AUDIT_COUNTER_SHARDS: u32 = 64;

/// A `totalCount` kept over several items (shards), so that no one item takes
/// every create and delete of a busy list: a write moves one shard chosen at
/// random, a read sums them all in one BatchGetItem. Shard 0 is the item a
/// single counter always was, so a list counted before sharding needs no
/// migration; each other shard has a partition of its own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Counter {
    written: Vec<Key>,
    /// Shards of an earlier layout: read (their counts still stand), never moved.
    read_only: Vec<Key>,
}

impl Counter {
    /// Every item to read and sum.
    pub fn keys(&self) -> Vec<Key> {
        self.written
            .iter()
            .chain(&self.read_only)
            .cloned()
            .collect()
    }

    /// The shard that `pick` (any number) names: writes that pick alike move
    /// one shard, and add up into one write where they share a commit.
    pub fn shard(&self, pick: u32) -> Key {
        self.written[pick as usize % self.written.len()].clone()
    }
}

/// Shards of a list's counter. Lists that one tenant may write hundreds of
/// times a second (an import, a sync) get 4, and so does the audit list, which
/// every mutation of its workspace moves; lists written by people (tags,
/// campaigns, tokens...) keep one item, and one read. Each shard read costs
/// half a read unit: docs/design.md#scale has the arithmetic.
pub fn counter_shards(list: &str) -> u32 {
    match list {
        "AUDIT" | "CONTACT" | "NEWCONTACT" | "DEAL" => 4,
        _ => 1,
    }
}

/// Shards of a busy list's counter in the sharded layout (`keys::shards`,
/// once `CRM_SHARDED_FROM` is set), each in a partition of its own: in the
/// first layout shard `n` of every list shared `W#<ws>#COUNT#<n>` (and
/// shard 0 the workspace's item), so at 1,000 mutations a second of one
/// tenant each of those four took more than DynamoDB's 1,000 write units.
/// The audit counter, which every mutation moves, gets 8 (about 125 moves a
/// second each at that rate); lists of one shard keep their one item.
pub fn sharded_counter_shards(list: &str) -> u32 {
    match list {
        "AUDIT" => 8,
        "CONTACT" | "NEWCONTACT" | "DEAL" => 4,
        _ => 1,
    }
}

/// The counter behind a list's `totalCount`. In the sharded layout a busy
/// list writes its own partitions and still reads the first layout's
/// shards, whose counts stand: nothing is moved.
pub fn counter(workspace_id: WorkspaceId, list: &str) -> Counter {
    let first: Vec<Key> = (0..counter_shards(list))
        .map(|shard| shard_key(workspace_id, list, shard))
        .collect();
    match sharded_written(list) {
        Some(shards) => Counter {
            written: (0..shards)
                .map(|shard| sharded_key(workspace_id, list, shard))
                .collect(),
            read_only: first,
        },
        None => Counter {
            written: first,
            read_only: Vec::new(),
        },
    }
}

/// The shard of a list's counter that `pick` names, as
/// [`Counter::shard`] would, built alone: every mutation moves its
/// workspace's audit counter, and building all its keys to pick one was 2%
/// of a create.
pub fn counter_shard(workspace_id: WorkspaceId, list: &str, pick: u32) -> Key {
    match sharded_written(list) {
        Some(shards) => sharded_key(workspace_id, list, pick % shards),
        None => shard_key(workspace_id, list, pick % counter_shards(list)),
    }
}

/// The shards a list's counter writes in the sharded layout, when it has one.
fn sharded_written(list: &str) -> Option<u32> {
    let shards = sharded_counter_shards(list);
    (shards > 1 && super::sharded_from().is_some()).then_some(shards)
}

fn sharded_key(workspace_id: WorkspaceId, list: &str, shard: u32) -> Key {
    Key::new(
        collection(workspace_id, &format!("COUNT#{list}#{shard}")),
        format!("COUNT#{list}"),
    )
}

fn shard_key(workspace_id: WorkspaceId, list: &str, shard: u32) -> Key {
    let sk = concat(&["COUNT#", list]);
    match shard {
        0 => Key::new(ws(workspace_id), sk),
        n => {
            let mut digits = itoa::Buffer::new();
            let pk = concat(&[&ws(workspace_id), "#COUNT#", digits.format(n)]);
            Key::new(pk, sk)
        }
    }
}

/// The counter of every workspace's audit entries (the admin list). Every
/// mutation counts into it, so its keys are built once per process.
pub fn audit_counter() -> &'static Counter {
    static COUNTER: std::sync::LazyLock<Counter> = std::sync::LazyLock::new(|| {
        let written = (0..AUDIT_COUNTER_SHARDS)
            .map(|shard| match shard {
                0 => Key::new(ALL_AUDIT, "COUNT#0"),
                n => Key::new(format!("{ALL_AUDIT}#COUNT#{n}"), "COUNT#0"),
            })
            .collect();
        // Shards 1..7 of the first layout shared the `AUDIT` partition.
        let read_only = (1..8)
            .map(|n| Key::new(ALL_AUDIT, format!("COUNT#{n}")))
            .collect();
        Counter { written, read_only }
    });
    &COUNTER
}

/// The counter of one dashboard's snapshots.
pub fn snapshot_counter(workspace_id: WorkspaceId, dashboard_id: DashboardId) -> Counter {
    counter(workspace_id, &format!("SNAPSHOT#{dashboard_id}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shard_built_alone_is_the_shard_the_counter_picks() {
        for list in ["AUDIT", "CONTACT", "TAG"] {
            let counter = counter(WorkspaceId(7), list);
            for pick in 0..32 {
                assert_eq!(
                    counter_shard(WorkspaceId(7), list, pick),
                    counter.shard(pick),
                    "{list} {pick}"
                );
            }
        }
    }
}
