//! Campaigns of a migration, through `crm load`.

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{Map, Value};
use validator::{Validate, ValidationErrors};

use super::LIST;
use super::index::index_items;
use super::record::{Campaign, CampaignStatus, ResultCounts};
use super::write::{CampaignPatch, WHAT, save};
use crate::auth::Caller;
use crate::domain::rollups;
use crate::error::{ApiError, ApiResult};
use crate::keys;
use crate::keys::CampaignId;
use crate::load::{LineType, Loadable};
use crate::record::{self, Mutation};
use crate::store::Store;

/// A `campaign` line of `crm load`: an existing campaign of a migration, its
/// fields with `id`, `status` and, optionally, `resultCounts` and
/// `messagesProcessed`.
#[derive(Debug)]
pub struct CampaignLine {
    pub id: CampaignId,
    pub status: CampaignStatus,
    pub result_counts: ResultCounts,
    pub messages_processed: u64,
    pub input: CampaignPatch,
}

impl<'de> Deserialize<'de> for CampaignLine {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        let mut map = Map::deserialize(d)?;
        let id = crate::load::take_id(&mut map).map_err(D::Error::custom)?;
        let status = serde_json::from_value(
            map.remove("status")
                .unwrap_or(Value::String("draft".into())),
        )
        .map_err(D::Error::custom)?;
        let result_counts: ResultCounts = map
            .remove("resultCounts")
            .map(serde_json::from_value)
            .transpose()
            .map_err(D::Error::custom)?
            .unwrap_or_default();
        if result_counts.by_chunk_id.values().any(|v| !v.is_object()) {
            return Err(D::Error::custom(
                "resultCounts.byChunkId: each chunk's counts must be an object",
            ));
        }
        let messages_processed = map
            .remove("messagesProcessed")
            .and_then(|v| v.as_u64())
            .unwrap_or(0);
        let input = CampaignPatch::deserialize(Value::Object(map)).map_err(D::Error::custom)?;
        Ok(CampaignLine {
            id: CampaignId(id),
            status,
            result_counts,
            messages_processed,
            input,
        })
    }
}

impl Validate for CampaignLine {
    fn validate(&self) -> Result<(), ValidationErrors> {
        self.input.validate()
    }
}

#[async_trait]
impl Loadable for CampaignLine {
    const TYPE: &'static str = "campaign";

    async fn load(self, store: &dyn Store, caller: &Caller) -> ApiResult<()> {
        let ws = caller.workspace_id;
        let key = keys::campaign(ws, self.id);
        let now = crate::ids::now();
        let current: Option<Campaign> = record::get(store, &key, true).await?;
        let mut fields = current
            .as_ref()
            .map(|c| c.fields.clone())
            .unwrap_or_else(super::write::new_fields);
        if current.is_none() && self.input.name.is_none() {
            return Err(ApiError::field("name", "is required"));
        }
        self.input.apply(&mut fields)?;
        let mut next = match &current {
            Some(stored) => stored.clone(),
            // Created when its id says, as every record loaded under its id.
            None => Campaign {
                stamps: crate::load::stamps_of_id(self.id.0)?,
                ..Campaign::new(self.id, ws, fields.clone(), self.status)
            },
        };
        next.fields = fields;
        next.status = self.status;
        next.result_counts = self.result_counts;
        next.messages_processed = self.messages_processed;
        next.health_check_data.messages_processed = self.messages_processed;
        next.derive();
        match &current {
            Some(stored) => {
                // The campaign series move by what the line changes, on the day it is loaded.
                let (old, new) = (&stored.result_counts, &next.result_counts);
                let before = rollups::of_campaign_report(&now, old.sent, old.read, old.answered);
                let after = rollups::of_campaign_report(&now, new.sent, new.read, new.answered);
                save(store, caller, stored, next, "campaign.load", |m| {
                    rollups::stage(m, ws, &before, &after)
                })
                .await?;
            }
            None => {
                let mut m = Mutation::new(caller);
                m.create(&next)?.count_in(ws, LIST, 1);
                let r = &next.result_counts;
                rollups::stage(
                    &mut m,
                    ws,
                    &[],
                    &rollups::of_campaign_report(&now, r.sent, r.read, r.answered),
                );
                for item in index_items(&next) {
                    m.put_item(item);
                }
                m.commit(store, "campaign.load", WHAT, &self.id.to_string())
                    .await?;
            }
        }
        Ok(())
    }
}

/// The `crm load` lines of campaigns: `campaign`.
pub fn line_types() -> Vec<LineType> {
    vec![LineType::of::<CampaignLine>()]
}
