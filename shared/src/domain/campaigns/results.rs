//! Results the messaging side reports, counted once per report id.

use serde::Deserialize;
use serde_json::Value;
use validator::Validate;

use super::record::{Campaign, CampaignStatus};
use super::write::{WHAT, save};
use crate::auth::Caller;
use crate::error::{ApiError, ApiResult};
use crate::ids::{self, ClientTime};
use crate::keys;
use crate::keys::CampaignId;
use crate::record::{self, CommitError, Mutation};
use crate::store::Store;

/// `POST /v3/campaigns/{id}/results`: one report of the messaging side,
/// counted once whatever the retries (`reportId`).
#[derive(Debug, Deserialize, Validate, schemars::JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ResultsReport {
    #[validate(length(min = 1, max = 64))]
    pub report_id: String,
    #[validate(length(min = 1, max = 64))]
    pub chunk_id: Option<String>,
    #[serde(default)]
    #[validate(range(max = 1000000))]
    pub sent: u64,
    #[serde(default)]
    #[validate(range(max = 1000000))]
    pub received: u64,
    #[serde(default)]
    #[validate(range(max = 1000000))]
    pub read: u64,
    #[serde(default)]
    #[validate(range(max = 1000000))]
    pub answered: u64,
    /// Messages processed (sent or given up) in this report.
    #[serde(default)]
    #[validate(range(max = 1000000))]
    pub processed: u64,
    /// This report closes its chunk.
    #[serde(default)]
    pub chunk_executed: bool,
    pub at: Option<ClientTime>,
}

/// Chunks counted one by one in `resultCounts.byChunkId`; past this many, only
/// the totals move.
pub const MAX_CHUNK_ENTRIES: usize = 500;

/// Adds a report's counts, once per `reportId`, retried when another report
/// wins the race for the campaign's version.
pub async fn report(
    store: &dyn Store,
    caller: &Caller,
    id: CampaignId,
    input: ResultsReport,
) -> ApiResult<(Campaign, bool)> {
    if !super::valid_report_id(&input.report_id) {
        return Err(ApiError::field(
            "reportId",
            "must be letters, digits, - _ . or :",
        ));
    }
    let ws = caller.workspace_id;
    let sentinel = keys::campaign_report(ws, id, &input.report_id);
    for _ in 0..8 {
        let current: Campaign = record::find(store, &keys::campaign(ws, id), true, WHAT).await?;
        if matches!(
            current.status,
            CampaignStatus::Draft | CampaignStatus::Scheduled
        ) {
            return Err(ApiError::conflict("results come once a campaign started"));
        }
        if store.get(&sentinel, true).await?.is_some() {
            return Ok((current, false));
        }
        let mut next = current.clone();
        let r = &mut next.result_counts;
        r.sent += input.sent;
        r.received += input.received;
        r.read += input.read;
        r.answered += input.answered;
        if input.chunk_executed {
            r.chunks_executed += 1;
        }
        // Per chunk while there are at most MAX_CHUNK_ENTRIES of them (the
        // campaign is one item, under 400 KB); the totals count every report.
        if let Some(chunk) = &input.chunk_id
            && (r.by_chunk_id.contains_key(chunk) || r.by_chunk_id.len() < MAX_CHUNK_ENTRIES)
        {
            let entry = r
                .by_chunk_id
                .entry(chunk.clone())
                .or_insert_with(|| serde_json::json!({}));
            if !entry.is_object() {
                *entry = serde_json::json!({});
            }
            if let Value::Object(counts) = entry {
                for (name, n) in [
                    ("sent", input.sent),
                    ("received", input.received),
                    ("read", input.read),
                    ("answered", input.answered),
                ] {
                    let before = counts.get(name).and_then(Value::as_u64).unwrap_or(0);
                    counts.insert(name.to_owned(), (before + n).into());
                }
            }
        }
        next.messages_processed += input.processed;
        let at = input.at.map(|t| t.0).unwrap_or_else(ids::now);
        if input.processed > 0 {
            next.last_message_processed_at = Some(at);
        }
        let h = &mut next.health_check_data;
        h.messages_processed = next.messages_processed;
        h.last_message_processed_at = next.last_message_processed_at;
        h.chunk_id = input.chunk_id.clone().or(h.chunk_id.take());
        let owner = input.report_id.clone();
        let moves =
            crate::domain::rollups::of_campaign_report(&at, input.sent, input.read, input.answered);
        let claim = |m: &mut Mutation<'_>| {
            m.claim(
                sentinel.clone(),
                &owner,
                ApiError::conflict("report counted"),
            );
            crate::domain::rollups::stage(m, ws, &[], &moves);
        };
        match save(store, caller, &current, next, "campaign.results", claim).await {
            Ok(campaign) => return Ok((campaign, true)),
            // Another report (or this one, retried) got there first: read again.
            Err(CommitError::Api(e)) if e.status == http::StatusCode::CONFLICT => continue,
            Err(e) => return Err(e.into()),
        }
    }
    Err(ApiError::unavailable("too many concurrent reports; retry"))
}
