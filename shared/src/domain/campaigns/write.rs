//! Creating and editing campaigns; every change is a conditional write on the
//! version read, through [`save`].

use serde::Deserialize;
use serde_json::{Map, Value};
use validator::Validate;

use super::LIST;
use super::index::{index_items, index_keys};
use super::record::{Campaign, CampaignFields, CampaignStatus};
use crate::auth::Caller;
use crate::error::{ApiError, ApiResult};
use crate::ids::{self, ClientTime};
use crate::keys;
use crate::keys::CampaignId;
use crate::patch::Patch;
use crate::record::{self, CommitError, Mutation, with_fresh_id};
use crate::store::Store;
use crate::validate::CreateFields;

pub(super) const WHAT: &str = "campaign";

/// `POST /v3/campaigns` (a draft; `name` required) and `PATCH
/// /v3/campaigns/{id}` (while draft or scheduled): the writable fields.
#[derive(Debug, Default, Deserialize, Validate, schemars::JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CampaignPatch {
    #[serde(default, rename = "_id")]
    #[validate(length(max = 128))]
    pub legacy_id: Patch<String>,
    #[validate(
        length(min = 1, max = 128),
        custom(function = "crate::validate::not_blank")
    )]
    pub name: Option<String>,
    #[serde(default)]
    #[validate(length(min = 1, max = 64))]
    pub channel_id: Patch<String>,
    /// `whatsapp`, `instagram`, `messenger`, `telegram`, `sms` or `email`.
    #[serde(default)]
    #[validate(custom(function = "crate::validate::channel_type"))]
    pub channel_type: Patch<String>,
    #[serde(default)]
    #[validate(length(min = 1, max = 64))]
    pub operator_id: Patch<String>,
    #[serde(default)]
    #[validate(length(min = 1, max = 128))]
    pub operator_name: Patch<String>,
    #[serde(default)]
    #[validate(length(min = 1, max = 64))]
    pub business_hours_id: Patch<String>,
    /// `contacts` (existing contacts), `list` (an uploaded list) or `segment`.
    #[serde(default)]
    #[validate(custom(function = "crate::validate::lead_type"))]
    pub lead_type: Patch<String>,
    #[serde(default)]
    pub scheduled_to: Patch<ClientTime>,
    #[serde(default)]
    #[validate(
        length(min = 1, max = 2048),
        custom(function = "crate::validate::web_url")
    )]
    #[schemars(pattern(crate::validate::WEB_URL_PATTERN))]
    pub leads_asset_url: Patch<String>,
    #[serde(default)]
    #[validate(length(min = 1, max = 4096))]
    pub message: Patch<String>,
    #[serde(default)]
    #[validate(length(max = 4096))]
    pub text_raw: Patch<String>,
    #[validate(length(max = 10))]
    #[schemars(inner(pattern(crate::validate::WEB_URL_PATTERN)))]
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
    #[serde(default)]
    pub template: Patch<Map<String, Value>>,
}

/// What [`create`] checks, for the document (`http::Create`).
impl CreateFields for CampaignPatch {
    const REQUIRED: &'static [&'static str] = &["name"];
}

impl CampaignPatch {
    pub(super) fn apply(self, f: &mut CampaignFields) -> ApiResult<()> {
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
            assets_urls,
            should_create_conversation,
            track_all_channels,
            leads_count,
            chunk_size,
            seconds_between_messages,
            seconds_between_chunks,
            track_max_hours
        );
        macro_rules! patch {
            ($($field:ident),*) => {$( self.$field.apply(&mut f.$field); )*};
        }
        patch!(
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
            template
        );
        if let Some(name) = self.name {
            f.name = name.trim().to_owned();
        }
        self.scheduled_to
            .map(|t| ids::format_ts(&t.0))
            .apply(&mut f.scheduled_to);
        Ok(())
    }
}

/// The fields of a new campaign before its body: the documented defaults.
pub(super) fn new_fields() -> CampaignFields {
    CampaignFields {
        chunk_size: 100,
        seconds_between_messages: 5,
        seconds_between_chunks: 60,
        track_max_hours: 48,
        ..CampaignFields::default()
    }
}

pub async fn create(
    store: &dyn Store,
    caller: &Caller,
    input: CampaignPatch,
) -> ApiResult<Campaign> {
    if input.name.is_none() {
        return Err(ApiError::field("name", "is required"));
    }
    let mut fields = new_fields();
    input.apply(&mut fields)?;
    let ws = caller.workspace_id;
    with_fresh_id(|id| {
        let campaign = Campaign::new(CampaignId(id), ws, fields.clone(), CampaignStatus::Draft);
        async move {
            let mut m = Mutation::new(caller);
            m.create(&campaign)?.count_in(ws, LIST, 1);
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

pub async fn get(store: &dyn Store, caller: &Caller, id: CampaignId) -> ApiResult<Campaign> {
    record::find(store, &keys::campaign(caller.workspace_id, id), false, WHAT).await
}

/// Writes `next` over `current` with its index items moved.
pub(super) async fn save(
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
    id: CampaignId,
    input: CampaignPatch,
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
        ready_to_schedule(&next.fields)?;
        next.next_scheduled_to = next.fields.scheduled_to.clone();
    }
    Ok(save(store, caller, &current, next, "campaign.update", |_| {}).await?)
}

/// What a scheduled campaign needs: a time, a message or template, and leads.
pub(super) fn ready_to_schedule(f: &CampaignFields) -> ApiResult<()> {
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
    Ok(())
}
