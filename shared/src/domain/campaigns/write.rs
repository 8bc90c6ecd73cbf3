//! Creating, editing and moving campaigns, and the results the messaging side
//! reports. Every change is a conditional write on the version read: two
//! concurrent `start`s give one start, never two runs.

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{Map, Value};
use validator::{Validate, ValidationErrors};

use super::LIST;
use super::index::{index_items, index_keys};
use super::record::{Campaign, CampaignFields, CampaignStatus, HealthCheckData, ResultCounts};
use crate::auth::Caller;
use crate::error::{ApiError, ApiResult};
use crate::ids::{self, ClientTime};
use crate::keys;
use crate::load::{LineType, Loadable};
use crate::record::{self, CommitError, Mutation, Stamps, with_fresh_id};
use crate::store::Store;
use crate::validate::nullable;

const WHAT: &str = "campaign";

/// `POST /v3/campaigns` (a draft; `name` required) and `PATCH
/// /v3/campaigns/{id}` (while draft or scheduled): the writable fields.
#[derive(Debug, Default, Deserialize, Validate)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CampaignInput {
    #[serde(default, rename = "_id", deserialize_with = "nullable")]
    #[validate(length(max = 128))]
    pub legacy_id: Option<Option<String>>,
    #[validate(
        length(min = 1, max = 128),
        custom(function = "crate::validate::not_blank")
    )]
    pub name: Option<String>,
    #[serde(default, deserialize_with = "nullable")]
    #[validate(length(min = 1, max = 64))]
    pub channel_id: Option<Option<String>>,
    /// `whatsapp`, `instagram`, `messenger`, `telegram`, `sms` or `email`.
    #[serde(default, deserialize_with = "nullable")]
    #[validate(custom(function = "crate::validate::channel_type"))]
    pub channel_type: Option<Option<String>>,
    #[serde(default, deserialize_with = "nullable")]
    #[validate(length(min = 1, max = 64))]
    pub operator_id: Option<Option<String>>,
    #[serde(default, deserialize_with = "nullable")]
    #[validate(length(min = 1, max = 128))]
    pub operator_name: Option<Option<String>>,
    #[serde(default, deserialize_with = "nullable")]
    #[validate(length(min = 1, max = 64))]
    pub business_hours_id: Option<Option<String>>,
    /// `contacts` (existing contacts), `list` (an uploaded list) or `segment`.
    #[serde(default, deserialize_with = "nullable")]
    #[validate(custom(function = "crate::validate::lead_type"))]
    pub lead_type: Option<Option<String>>,
    #[serde(default, deserialize_with = "nullable")]
    pub scheduled_to: Option<Option<ClientTime>>,
    #[serde(default, deserialize_with = "nullable")]
    #[validate(
        length(min = 1, max = 2048),
        custom(function = "crate::validate::web_url")
    )]
    pub leads_asset_url: Option<Option<String>>,
    #[serde(default, deserialize_with = "nullable")]
    #[validate(length(min = 1, max = 4096))]
    pub message: Option<Option<String>>,
    #[serde(default, deserialize_with = "nullable")]
    #[validate(length(max = 4096))]
    pub text_raw: Option<Option<String>>,
    #[validate(length(max = 10))]
    pub assets_urls: Option<Vec<String>>,
    pub should_create_conversation: Option<bool>,
    pub track_all_channels: Option<bool>,
    #[validate(range(max = 1000000))]
    pub leads_count: Option<u64>,
    #[validate(range(min = 1, max = 10000))]
    pub chunk_size: Option<u64>,
    #[validate(range(max = 3600))]
    pub seconds_between_messages: Option<u64>,
    #[validate(range(max = 86400))]
    pub seconds_between_chunks: Option<u64>,
    #[validate(range(max = 720))]
    pub track_max_hours: Option<u64>,
    #[serde(default, deserialize_with = "nullable")]
    pub template: Option<Option<Map<String, Value>>>,
}

impl CampaignInput {
    fn apply(self, f: &mut CampaignFields) -> ApiResult<()> {
        for (i, url) in self.assets_urls.iter().flatten().enumerate() {
            crate::validate::web_url(url).map_err(|_| {
                ApiError::field(
                    format!("assetsUrls[{i}]"),
                    "must be an absolute http or https address",
                )
            })?;
        }
        macro_rules! set {
            ($($field:ident),*) => {$( if let Some(v) = self.$field { f.$field = v; } )*};
        }
        set!(
            legacy_id,
            channel_id,
            channel_type,
            operator_id,
            operator_name,
            business_hours_id,
            lead_type,
            leads_asset_url,
            message,
            text_raw,
            assets_urls,
            should_create_conversation,
            track_all_channels,
            leads_count,
            chunk_size,
            seconds_between_messages,
            seconds_between_chunks,
            track_max_hours,
            template
        );
        if let Some(name) = self.name {
            f.name = name.trim().to_owned();
        }
        if let Some(when) = self.scheduled_to {
            f.scheduled_to = when.map(|t| ids::format_ts(&t.0));
        }
        Ok(())
    }
}

/// `POST /v3/campaigns/{id}/results`: one report of the messaging side,
/// counted once whatever the retries (`reportId`).
#[derive(Debug, Deserialize, Validate)]
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

/// The transitions, by their path (`POST /v3/campaigns/{id}/{action}`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    Schedule,
    Start,
    Pause,
    Resume,
    Cancel,
    Finish,
    Fail,
}

impl Action {
    pub fn parse(text: &str) -> ApiResult<Action> {
        Ok(match text {
            "schedule" => Action::Schedule,
            "start" => Action::Start,
            "pause" => Action::Pause,
            "resume" => Action::Resume,
            "cancel" => Action::Cancel,
            "finish" => Action::Finish,
            "fail" => Action::Fail,
            _ => {
                return Err(ApiError::not_found(
                    "campaign action (schedule, start, pause, resume, cancel, finish, fail)",
                ));
            }
        })
    }

    /// The statuses it moves from, and to.
    pub fn moves(self) -> (&'static [CampaignStatus], CampaignStatus) {
        use CampaignStatus::*;
        match self {
            Action::Schedule => (&[Draft], Scheduled),
            Action::Start => (&[Scheduled], Running),
            Action::Pause => (&[Running], Paused),
            Action::Resume => (&[Paused], Running),
            Action::Cancel => (&[Draft, Scheduled, Running, Paused], Canceled),
            Action::Finish => (&[Running, Paused], Finished),
            Action::Fail => (&[Scheduled, Running, Paused], Failed),
        }
    }
}

pub async fn create(
    store: &dyn Store,
    caller: &Caller,
    input: CampaignInput,
) -> ApiResult<Campaign> {
    if input.name.is_none() {
        return Err(ApiError::field("name", "is required"));
    }
    let mut fields = CampaignFields {
        chunk_size: 100,
        seconds_between_messages: 5,
        seconds_between_chunks: 60,
        track_max_hours: 48,
        ..CampaignFields::default()
    };
    input.apply(&mut fields)?;
    let ws = caller.workspace_id;
    with_fresh_id(|id| {
        let mut campaign = Campaign {
            id,
            workspace_id: ws,
            fields: fields.clone(),
            status: CampaignStatus::Draft,
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
        async move {
            let mut m = Mutation::new(caller);
            m.create(&campaign)?.count(keys::counter(ws, LIST), 1);
            for item in index_items(&campaign) {
                m.put_item(item);
            }
            m.commit(store, "campaign.create", WHAT, &id.to_string())
                .await?;
            Ok(campaign)
        }
    })
    .await
}

pub async fn get(store: &dyn Store, caller: &Caller, id: u64) -> ApiResult<Campaign> {
    record::find(store, &keys::campaign(caller.workspace_id, id), false, WHAT).await
}

/// Writes `next` over `current` with its index items moved.
async fn save(
    store: &dyn Store,
    caller: &Caller,
    current: &Campaign,
    mut next: Campaign,
    action: &str,
    extra: impl FnOnce(&mut Mutation<'_>),
) -> Result<Campaign, CommitError> {
    next.derive();
    let mut m = Mutation::new(caller);
    if !m.update(current, &mut next)? {
        return Ok(next);
    }
    let keep = index_keys(&next);
    for old in index_keys(current)
        .into_iter()
        .filter(|k| !keep.contains(k))
    {
        m.remove(old);
    }
    for item in index_items(&next) {
        m.put_item(item);
    }
    extra(&mut m);
    m.commit(store, action, WHAT, &next.id.to_string()).await?;
    Ok(next)
}

/// `PATCH`: while draft or scheduled only.
pub async fn update(
    store: &dyn Store,
    caller: &Caller,
    id: u64,
    input: CampaignInput,
) -> ApiResult<Campaign> {
    let current: Campaign =
        record::find(store, &keys::campaign(caller.workspace_id, id), true, WHAT).await?;
    if !matches!(
        current.status,
        CampaignStatus::Draft | CampaignStatus::Scheduled
    ) {
        return Err(ApiError::conflict(format!(
            "a {} campaign cannot be edited (only draft or scheduled ones)",
            current.status.as_str()
        )));
    }
    let mut next = current.clone();
    input.apply(&mut next.fields)?;
    if next.status == CampaignStatus::Scheduled {
        next.next_scheduled_to = next.fields.scheduled_to.clone();
    }
    Ok(save(store, caller, &current, next, "campaign.update", |_| {}).await?)
}

/// A transition, on the condition that nobody moved the campaign in between.
pub async fn transition(
    store: &dyn Store,
    caller: &Caller,
    id: u64,
    action: Action,
) -> ApiResult<Campaign> {
    let current: Campaign =
        record::find(store, &keys::campaign(caller.workspace_id, id), true, WHAT).await?;
    let (from, to) = action.moves();
    if !from.contains(&current.status) {
        return Err(ApiError::conflict(format!(
            "a {} campaign cannot move to {}",
            current.status.as_str(),
            to.as_str()
        )));
    }
    let mut next = current.clone();
    next.status = to;
    if action == Action::Schedule {
        let f = &next.fields;
        if f.scheduled_to.is_none() {
            return Err(ApiError::field(
                "scheduledTo",
                "is required to schedule a campaign",
            ));
        }
        if f.message.is_none() && f.template.is_none() {
            return Err(ApiError::field(
                "message",
                "a campaign needs a message or a template",
            ));
        }
        if f.leads_count == 0 {
            return Err(ApiError::field("leadsCount", "a campaign needs leads"));
        }
        next.original_scheduled_to = next.original_scheduled_to.or(f.scheduled_to.clone());
        next.next_scheduled_to = f.scheduled_to.clone();
    }
    let verb = match action {
        Action::Schedule => "campaign.schedule",
        Action::Start => "campaign.start",
        Action::Pause => "campaign.pause",
        Action::Resume => "campaign.resume",
        Action::Cancel => "campaign.cancel",
        Action::Finish => "campaign.finish",
        Action::Fail => "campaign.fail",
    };
    save(store, caller, &current, next, verb, |_| {})
        .await
        .map_err(|e| match e {
            // Moved by a concurrent request: this one lost.
            CommitError::Api(e) if e.status == http::StatusCode::CONFLICT => {
                ApiError::conflict(format!(
                    "the campaign changed while this request ran; it is no longer {}",
                    current.status.as_str()
                ))
            }
            other => other.into(),
        })
}

/// Adds a report's counts, once per `reportId`, retried when another report
/// wins the race for the campaign's version.
pub async fn report(
    store: &dyn Store,
    caller: &Caller,
    id: u64,
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
        if let Some(chunk) = &input.chunk_id {
            let entry = r
                .by_chunk_id
                .entry(chunk.clone())
                .or_insert_with(|| serde_json::json!({}));
            for (name, n) in [
                ("sent", input.sent),
                ("received", input.received),
                ("read", input.read),
                ("answered", input.answered),
            ] {
                let before = entry.get(name).and_then(Value::as_u64).unwrap_or(0);
                entry[name] = (before + n).into();
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
        let claim = |m: &mut Mutation<'_>| {
            m.claim(
                sentinel.clone(),
                &owner,
                ApiError::conflict("report counted"),
            );
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

/// A `campaign` line of `crm load`: an existing campaign of a migration, its
/// fields with `id`, `status` and, optionally, `resultCounts` and
/// `messagesProcessed`.
#[derive(Debug)]
pub struct CampaignLine {
    pub id: u64,
    pub status: CampaignStatus,
    pub result_counts: ResultCounts,
    pub messages_processed: u64,
    pub input: CampaignInput,
}

impl<'de> Deserialize<'de> for CampaignLine {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        let mut map = Map::deserialize(d)?;
        let id = map
            .remove("id")
            .and_then(|v| v.as_u64())
            .filter(|id| (1..=9007199254740991).contains(id))
            .ok_or_else(|| D::Error::custom("missing field `id` (a positive number)"))?;
        let status = serde_json::from_value(
            map.remove("status")
                .unwrap_or(Value::String("draft".into())),
        )
        .map_err(D::Error::custom)?;
        let result_counts = map
            .remove("resultCounts")
            .map(serde_json::from_value)
            .transpose()
            .map_err(D::Error::custom)?
            .unwrap_or_default();
        let messages_processed = map
            .remove("messagesProcessed")
            .and_then(|v| v.as_u64())
            .unwrap_or(0);
        let input = CampaignInput::deserialize(Value::Object(map)).map_err(D::Error::custom)?;
        Ok(CampaignLine {
            id,
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
        let current: Option<Campaign> = record::get(store, &key, true).await?;
        let mut fields = current
            .as_ref()
            .map(|c| c.fields.clone())
            .unwrap_or(CampaignFields {
                chunk_size: 100,
                ..CampaignFields::default()
            });
        if current.is_none() && self.input.name.is_none() {
            return Err(ApiError::field("name", "is required"));
        }
        self.input.apply(&mut fields)?;
        let mut next = current.clone().unwrap_or(Campaign {
            id: self.id,
            workspace_id: ws,
            fields: fields.clone(),
            status: self.status,
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
        });
        next.fields = fields;
        next.status = self.status;
        next.result_counts = self.result_counts;
        next.messages_processed = self.messages_processed;
        next.health_check_data.messages_processed = self.messages_processed;
        next.derive();
        match &current {
            Some(stored) => {
                save(store, caller, stored, next, "campaign.load", |_| {}).await?;
            }
            None => {
                let mut m = Mutation::new(caller);
                m.create(&next)?.count(keys::counter(ws, LIST), 1);
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
