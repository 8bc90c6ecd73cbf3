//! The index items of a deal: one per partition it is listed in (stage,
//! status, operator, pipeline, contact, each tag and product), each holding a
//! [`Digest`] of the deal so a list filters and sorts without reading deals.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::record::{Deal, DealStatus};
use crate::error::{ApiError, ApiResult};
use crate::ids;
use crate::keys;
use crate::record;
use crate::store::{Item, PK, SK, TYPE};

/// What a list filters and sorts on, kept on every index item of the deal.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
pub struct Digest {
    pub id: u64,
    pub s: DealStatus,
    pub o: u64,
    pub g: u64,
    pub p: String,
    pub st: String,
    pub t: Vec<u64>,
    pub pr: Vec<String>,
    pub c: u64,
    pub v: f64,
    pub n: String,
    #[serde(default)]
    pub w: Option<i64>,
    pub u: i64,
    #[serde(default)]
    pub pos: Option<f64>,
}

impl Deal {
    pub(super) fn digest(&self) -> Digest {
        let f = &self.fields;
        Digest {
            id: self.id,
            s: f.status,
            o: f.operator_id,
            g: f.group_id,
            p: f.pipeline_id.clone(),
            st: f.stage_id.clone(),
            t: f.tag_ids.clone(),
            pr: f.products.iter().map(|p| p.id.clone()).collect(),
            c: f.contact.id,
            v: f.value,
            n: crate::text::fold(&f.name),
            w: f.won_lost_date.map(|t| t.timestamp_millis()),
            u: self.stamps.last_update_at.timestamp_millis(),
            pos: f.position,
        }
    }

    /// The partitions this deal is listed in, besides the deals partition.
    pub(super) fn partitions(&self) -> Vec<String> {
        let (ws, f) = (self.workspace_id, &self.fields);
        let mut parts = vec![
            keys::deals_by(ws, "STAGE", &f.stage_id),
            keys::deals_by(ws, "STATUS", f.status.as_str()),
            keys::deals_by(ws, "OPERATOR", &f.operator_id.to_string()),
            keys::deals_by(ws, "PIPELINE", &f.pipeline_id),
            keys::deals_by(ws, "CONTACT", &f.contact.id.to_string()),
        ];
        parts.extend(
            f.tag_ids
                .iter()
                .map(|t| keys::deals_by(ws, "TAG", &t.to_string())),
        );
        parts.extend(
            f.products
                .iter()
                .map(|p| keys::deals_by(ws, "PRODUCT", &p.id)),
        );
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
                item.insert(SK.into(), ids::padded(self.id).into());
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
