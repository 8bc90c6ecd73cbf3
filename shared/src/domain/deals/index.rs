//! The index items of a deal: one per partition it is listed in (stage,
//! status, operator, pipeline, contact, each tag and product), each holding a
//! [`Digest`] of the deal so a list filters and sorts without reading deals.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::record::{Deal, DealStatus};
use crate::error::{ApiError, ApiResult};
use crate::ids;
use crate::keys;
use crate::keys::{ContactId, DealId};
use crate::record;
use crate::store::{Item, PK, SK, TYPE};

/// What a list filters and sorts on, kept on every index item of the deal.
/// Stored under short names (an index item per tag and product carries one,
/// so every byte counts many times).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
pub struct Digest {
    pub id: DealId,
    #[serde(rename = "s")]
    pub status: DealStatus,
    #[serde(rename = "o")]
    pub operator_id: u64,
    #[serde(rename = "g")]
    pub group_id: u64,
    #[serde(rename = "p")]
    pub pipeline_id: String,
    #[serde(rename = "st")]
    pub stage_id: String,
    #[serde(rename = "t")]
    pub tag_ids: Vec<u64>,
    #[serde(rename = "pr")]
    pub product_ids: Vec<String>,
    #[serde(rename = "c")]
    pub contact_id: ContactId,
    #[serde(rename = "v")]
    pub value: f64,
    /// The name folded for sorting ([`crate::text::fold`]).
    #[serde(rename = "n")]
    pub folded_name: String,
    /// `wonLostDate`, in epoch milliseconds.
    #[serde(default, rename = "w")]
    pub won_lost_ms: Option<i64>,
    /// `lastUpdateAt`, in epoch milliseconds.
    #[serde(rename = "u")]
    pub updated_ms: i64,
    #[serde(default, rename = "pos")]
    pub position: Option<f64>,
}

impl Deal {
    pub(super) fn digest(&self) -> Digest {
        let f = &self.fields;
        Digest {
            id: self.id,
            status: f.status,
            operator_id: f.operator_id,
            group_id: f.group_id,
            pipeline_id: f.pipeline_id.clone(),
            stage_id: f.stage_id.clone(),
            tag_ids: f.tag_ids.clone(),
            product_ids: f.products.iter().map(|p| p.id.clone()).collect(),
            contact_id: f.contact.id,
            value: f.value,
            folded_name: crate::text::fold(&f.name),
            won_lost_ms: f.won_lost_date.map(|t| t.timestamp_millis()),
            updated_ms: self.stamps.last_update_at.timestamp_millis(),
            position: f.position,
        }
    }

    /// The partitions this deal is listed in, besides the deals partition.
    pub(super) fn partitions(&self) -> Vec<String> {
        let (ws, f) = (self.workspace_id, &self.fields);
        let at = |kind: &str, value: &str| keys::deal_index(ws, kind, value, self.id);
        let mut parts = vec![
            at("STAGE", &f.stage_id),
            at("STATUS", f.status.as_str()),
            at("OPERATOR", &f.operator_id.to_string()),
            at("PIPELINE", &f.pipeline_id),
            at("CONTACT", &f.contact.id.to_string()),
        ];
        parts.extend(f.tag_ids.iter().map(|t| at("TAG", &t.to_string())));
        parts.extend(f.products.iter().map(|p| at("PRODUCT", &p.id)));
        parts.sort();
        parts.dedup();
        parts
    }

    pub(crate) fn index_items(&self) -> Vec<Item> {
        let digest = serde_json::to_value(self.digest()).unwrap_or(Value::Null);
        self.partitions()
            .into_iter()
            .map(|pk| {
                let mut item = Item::new();
                item.insert(PK.into(), pk.into());
                item.insert(SK.into(), ids::padded(self.id.0).into());
                item.insert(TYPE.into(), "DealIndex".into());
                item.insert("d".into(), digest.clone());
                item
            })
            .collect()
    }
}

impl Digest {
    /// The digest of an index item, or of the deal itself (the deals partition).
    pub(super) fn of_item(item: Item) -> ApiResult<Digest> {
        match item.get("d") {
            Some(d) => serde_json::from_value(d.clone()).map_err(ApiError::internal),
            None => Ok(record::from_item::<Deal>(item)?.digest()),
        }
    }
}
