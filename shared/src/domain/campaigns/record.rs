//! The stored campaign (the spec's Campaign) and its lifecycle.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::ids::{self, Timestamp, WorkspaceId};
use crate::keys;
use crate::keys::CampaignId;
use crate::record::{Personal, Record, Stamps};
use crate::store::Key;

/// The life of a campaign. `draft` and `scheduled` are edited; the messaging
/// side starts a scheduled campaign (`running`), may pause and resume it, and
/// ends it (`finished` or `failed`); a person may cancel it until it ends.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, Hash, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum CampaignStatus {
    Draft,
    Scheduled,
    Running,
    Paused,
    Finished,
    Canceled,
    Failed,
}

impl CampaignStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            CampaignStatus::Draft => "draft",
            CampaignStatus::Scheduled => "scheduled",
            CampaignStatus::Running => "running",
            CampaignStatus::Paused => "paused",
            CampaignStatus::Finished => "finished",
            CampaignStatus::Canceled => "canceled",
            CampaignStatus::Failed => "failed",
        }
    }

    /// Over: nothing changes it any more (but late results).
    pub fn is_final(self) -> bool {
        matches!(
            self,
            CampaignStatus::Finished | CampaignStatus::Canceled | CampaignStatus::Failed
        )
    }
}

/// What the messaging side reported, summed.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ResultCounts {
    pub sent: u64,
    pub received: u64,
    pub read: u64,
    pub answered: u64,
    pub chunks_executed: u64,
    /// Per chunk: `{ "<chunkId>": { sent, received, read, answered } }`.
    #[serde(default)]
    pub by_chunk_id: Map<String, Value>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HealthCheckData {
    pub messages_processed: u64,
    #[schemars(with = "Option<crate::ids::Timestamp>")]
    #[serde(
        default,
        with = "ids::ts_format::option",
        skip_serializing_if = "Option::is_none"
    )]
    pub last_message_processed_at: Option<Timestamp>,
    pub health_check_executions: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chunk_id: Option<String>,
    #[schemars(with = "Option<crate::ids::Timestamp>")]
    #[serde(
        default,
        with = "ids::ts_format::option",
        skip_serializing_if = "Option::is_none"
    )]
    pub next_health_check_at: Option<Timestamp>,
    #[schemars(with = "Option<crate::ids::Timestamp>")]
    #[serde(
        default,
        with = "ids::ts_format::option",
        skip_serializing_if = "Option::is_none"
    )]
    pub last_health_check_at: Option<Timestamp>,
}

/// The writable fields: what a draft says.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CampaignFields {
    #[serde(default, rename = "_id", skip_serializing_if = "Option::is_none")]
    pub legacy_id: Option<String>,
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub channel_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub channel_type: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operator_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operator_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub business_hours_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lead_type: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scheduled_to: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub leads_asset_url: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text_raw: Option<String>,
    #[serde(default)]
    pub assets_urls: Vec<String>,
    #[serde(default)]
    pub should_create_conversation: bool,
    #[serde(default)]
    pub track_all_channels: bool,
    pub leads_count: u64,
    pub chunk_size: u64,
    pub seconds_between_messages: u64,
    pub seconds_between_chunks: u64,
    pub track_max_hours: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub template: Option<Map<String, Value>>,
}

/// The spec's Campaign, as stored and served.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Campaign {
    #[schemars(with = "crate::ids::IdString")]
    #[serde(with = "ids::id_string")]
    pub id: CampaignId,
    pub workspace_id: WorkspaceId,
    #[serde(flatten)]
    pub fields: CampaignFields,
    pub status: CampaignStatus,
    /// Running or paused.
    pub active: bool,
    pub chunks_count: u64,
    /// Percent of the leads processed.
    #[serde(serialize_with = "crate::record::number")]
    pub progress: f64,
    pub messages_processed: u64,
    #[schemars(with = "Option<crate::ids::Timestamp>")]
    #[serde(
        default,
        with = "ids::ts_format::option",
        skip_serializing_if = "Option::is_none"
    )]
    pub last_message_processed_at: Option<Timestamp>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub original_scheduled_to: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_scheduled_to: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finished_at_prediction: Option<String>,
    pub result_counts: ResultCounts,
    pub health_check_data: HealthCheckData,
    #[serde(flatten)]
    pub stamps: Stamps,
    pub version: u64,
}

crate::versioned!(Campaign);

impl Record for Campaign {
    const EVENTS: Option<&'static str> = Some("campaign");

    /// A move of the lifecycle is named for where it goes: `campaign.started`.
    fn event_verb(&self, before: Option<&Self>, created: bool) -> &'static str {
        if created {
            return "created";
        }
        match (before.map(|b| b.status), self.status) {
            (Some(was), now) if was == now => "updated",
            (_, CampaignStatus::Draft) => "updated",
            (_, CampaignStatus::Scheduled) => "scheduled",
            (_, CampaignStatus::Running) => "started",
            (_, CampaignStatus::Paused) => "paused",
            (_, CampaignStatus::Finished) => "finished",
            (_, CampaignStatus::Canceled) => "canceled",
            (_, CampaignStatus::Failed) => "failed",
        }
    }
    const TYPE: &'static str = "Campaign";
    /// A message to many, not about one.
    const PERSONAL: Personal = Personal::none(&[
        "_id",
        "businessHoursId",
        "leadsAssetUrl",
        "operatorId",
        "operatorName",
        "resultCounts",
        "assetsUrls",
        "channelId",
        "channelType",
        "finishedAtPrediction",
        "healthCheckData",
        "id",
        "lastMessageProcessedAt",
        "leadType",
        "message",
        "name",
        "nextScheduledTo",
        "originalScheduledTo",
        "scheduledTo",
        "status",
        "template",
        "textRaw",
    ]);
    fn key(&self) -> Key {
        keys::campaign(self.workspace_id, self.id)
    }
}

impl Campaign {
    /// A campaign as it starts: nothing processed, nothing reported.
    pub fn new(
        id: CampaignId,
        workspace_id: WorkspaceId,
        fields: CampaignFields,
        status: CampaignStatus,
    ) -> Self {
        let mut campaign = Campaign {
            id,
            workspace_id,
            fields,
            status,
            active: false,
            chunks_count: 0,
            progress: 0.0,
            messages_processed: 0,
            last_message_processed_at: None,
            original_scheduled_to: None,
            next_scheduled_to: None,
            finished_at_prediction: None,
            result_counts: ResultCounts::default(),
            health_check_data: HealthCheckData::default(),
            stamps: Stamps::new(),
            version: 1,
        };
        campaign.derive();
        campaign
    }

    /// The figures that follow from the fields: chunks, the finish forecast
    /// (from `scheduledTo`: every message and every pause between chunks),
    /// progress and `active`.
    pub fn derive(&mut self) {
        let f = &self.fields;
        self.chunks_count = if f.chunk_size == 0 {
            0
        } else {
            f.leads_count.div_ceil(f.chunk_size)
        };
        self.finished_at_prediction =
            f.scheduled_to
                .as_deref()
                .and_then(ids::parse_ts)
                .map(|start| {
                    let seconds = f.leads_count * f.seconds_between_messages
                        + self.chunks_count.saturating_sub(1) * f.seconds_between_chunks;
                    ids::format_ts(
                        &(start + chrono::Duration::seconds(seconds.min(i64::MAX as u64) as i64)),
                    )
                });
        self.progress = if f.leads_count == 0 {
            0.0
        } else {
            ((self.messages_processed as f64 / f.leads_count as f64) * 10000.0).round() / 100.0
        }
        .min(100.0);
        self.active = matches!(
            self.status,
            CampaignStatus::Running | CampaignStatus::Paused
        );
    }
}
