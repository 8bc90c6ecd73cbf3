//! The spec's Deal. It shares `DealFields` with the stored record on purpose:
//! the spec's field names are the stored attribute names. A rename that would
//! change the stored item is caught by the item-shape tests
//! (`shared/tests/item_shapes.rs`), which pin every stored attribute.

use serde::{Deserialize, Serialize};

use super::record::{Deal, DealFields};
use crate::ids::WorkspaceId;
use crate::record::Stamps;

/// The spec's Deal.
#[derive(Debug, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DealView {
    pub id: String,
    pub workspace_id: WorkspaceId,
    #[serde(flatten)]
    pub fields: DealFields,
    #[serde(flatten)]
    pub stamps: Stamps,
}

impl From<Deal> for DealView {
    fn from(d: Deal) -> Self {
        Self {
            id: d.id.to_string(),
            workspace_id: d.workspace_id,
            fields: d.fields,
            stamps: d.stamps,
        }
    }
}
