//! Rate limits: a workspace's buckets and its own limits, in one partition.
//!
//! | Entity            | Access pattern                         | Index | pk                    | sk                      |
//! |-------------------|----------------------------------------|-------|-----------------------|-------------------------|
//! | Rate bucket       | a token's bucket (by a prefix of its SHA-256), or the workspace's own | table | `W#<ws>#RATE` | `TOKEN#<prefix>` or `WORKSPACE` |
//! | Rate limits       | a workspace's own limits               | table | `W#<ws>#RATE`         | `LIMITS`                |
//! | Write budget      | the items a workspace's writes may put a second | table | `W#<ws>#RATE` | `WRITES`          |

use super::collection;
use crate::ids::WorkspaceId;
use crate::store::Key;

/// The bucket of a token (by a prefix of its SHA-256), or the workspace's
/// own when `token` is empty.
pub fn rate_bucket(workspace_id: WorkspaceId, token: &str) -> Key {
    let sk = if token.is_empty() {
        "WORKSPACE".to_owned()
    } else {
        super::concat(&["TOKEN#", token]) // every request builds one
    };
    Key::new(collection(workspace_id, "RATE"), sk)
}

/// The bucket of the workspace's write budget (`ratelimit::Budgeted`).
pub fn write_bucket(workspace_id: WorkspaceId) -> Key {
    Key::new(collection(workspace_id, "RATE"), "WRITES")
}

/// The workspace's limits, when an operator set them.
pub fn rate_limits(workspace_id: WorkspaceId) -> Key {
    Key::new(collection(workspace_id, "RATE"), "LIMITS")
}
