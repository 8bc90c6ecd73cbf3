//! The audit entry every mutation writes in its own transaction: who (the
//! token id), what (action, resource, id), when, and the request id that ties
//! the entry to the request log. Listing entries is `crate::domain::audit`.

use serde::{Deserialize, Serialize};

use super::{Personal, Record, Stamps};
use crate::auth::Caller;
use crate::ids;
use crate::ids::WorkspaceId;
use crate::keys;
use crate::store::Key;

/// The counter behind the workspace's audit `totalCount`.
pub const AUDIT_LIST: &str = "AUDIT";

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AuditEntry {
    pub id: String,
    pub workspace_id: WorkspaceId,
    /// `<resource>.<verb>`, such as `tag.create` or `apiToken.revoke`.
    pub action: String,
    pub resource: String,
    pub resource_id: String,
    /// The API token that made the change.
    pub token_id: String,
    pub request_id: String,
    #[serde(flatten)]
    pub stamps: Stamps,
}

impl AuditEntry {
    pub fn new(
        caller: &Caller,
        token_id: &str,
        action: &str,
        resource: &str,
        resource_id: &str,
    ) -> Self {
        Self {
            id: ids::new_ulid(),
            workspace_id: caller.workspace_id,
            action: action.to_owned(),
            resource: resource.to_owned(),
            resource_id: resource_id.to_owned(),
            token_id: token_id.to_owned(),
            request_id: caller.request_id.clone(),
            stamps: Stamps::new(),
        }
    }
}

impl Record for AuditEntry {
    const TYPE: &'static str = "AuditEntry";
    /// An entry names a change, never its values.
    const PERSONAL: Personal = Personal::none(&[
        "action",
        "id",
        "requestId",
        "resource",
        "resourceId",
        "tokenId",
    ]);
    fn key(&self) -> Key {
        keys::audit_entry(self.workspace_id, &self.id)
    }
    fn index_keys(&self) -> Vec<(&'static str, String)> {
        vec![
            (keys::GSI1.pk, keys::audit_index_shard(&self.id)),
            (keys::GSI1.sk, self.id.clone()),
        ]
    }
}
