//! The index items of a session: one per partition it is listed in (all by
//! creation, finished by finish, and by operator, group, bot, channel, tag,
//! campaign, conversation and phone), each holding a [`Digest`] so a list
//! filters, sorts and sums without reading sessions. Sort keys are
//! `<time>#<id>`: a period is a key range of every partition.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::record::{Author, Session, TrailKind};
use crate::error::{ApiError, ApiResult};
use crate::ids::{self, WorkspaceId};
use crate::keys;
use crate::store::{Item, Key, PK, SK, TYPE};

/// Flags of a digest, one bit each.
pub mod flag {
    pub const FINISHED: u32 = 1;
    pub const WAITING: u32 = 1 << 1;
    pub const IN_PROGRESS: u32 = 1 << 2;
    pub const PENDING: u32 = 1 << 3;
    pub const RATED: u32 = 1 << 4;
    pub const NEW_CONTACT: u32 = 1 << 5;
    pub const ANSWERED_ON_DAY: u32 = 1 << 6;
    pub const REOPENED: u32 = 1 << 7;
    pub const TMA: u32 = 1 << 8;
    pub const TME: u32 = 1 << 9;
    pub const TMP: u32 = 1 << 10;
    pub const DEAL: u32 = 1 << 11;
    pub const WON_DEAL: u32 = 1 << 12;
    pub const TRANSFERRED: u32 = 1 << 13;
}

/// What a list filters, sorts and sums on, kept on every index item.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
pub struct Digest {
    pub id: String,
    /// Created, finished (epoch ms).
    #[serde(rename = "c")]
    pub created_ms: i64,
    #[serde(default, rename = "f")]
    pub finished_ms: Option<i64>,
    /// Current assignee, groups and bots gone through, channel, campaign.
    #[serde(default, rename = "o")]
    pub operator_id: Option<String>,
    #[serde(default, rename = "g")]
    pub group_ids: Vec<String>,
    #[serde(default, rename = "b")]
    pub bot_ids: Vec<String>,
    #[serde(default, rename = "ch")]
    pub channel_id: Option<String>,
    #[serde(default, rename = "cp")]
    pub campaign_id: Option<String>,
    #[serde(rename = "cv")]
    pub conversation_id: u64,
    #[serde(default, rename = "ph")]
    pub contact_phone: Option<String>,
    #[serde(default, rename = "t")]
    pub tag_ids: Vec<u64>,
    /// Trail kinds with their operator and group, for the `trails` filter.
    #[serde(default, rename = "tr")]
    pub trails: Vec<(TrailKind, Option<String>, Option<String>)>,
    /// [`flag`]s, one bit each.
    #[serde(rename = "fl")]
    pub flags: u32,
    #[serde(default)]
    pub tma: Option<f64>,
    #[serde(default)]
    pub tme: Option<f64>,
    #[serde(default)]
    pub tmp: Option<f64>,
    #[serde(default, rename = "r")]
    pub rating: Option<u8>,
}

/// The most groups and bots a session is listed under (each is an index item
/// written in its transaction, which DynamoDB caps at 100 items).
pub const MAX_GROUPS: usize = 5;
pub const MAX_BOTS: usize = 5;

impl Session {
    pub(crate) fn digest(&self) -> Digest {
        let t = &self.times;
        let mut fl = 0;
        let mut set = |on: bool, bit: u32| {
            if on {
                fl |= bit;
            }
        };
        let finished = t.finished_at.is_some();
        set(finished, flag::FINISHED);
        set(
            t.queued_at.is_some() && t.assigned_at.is_none() && !finished,
            flag::WAITING,
        );
        set(t.assigned_at.is_some() && !finished, flag::IN_PROGRESS);
        let last_message = self
            .trails
            .iter()
            .rev()
            .find(|x| x.kind == TrailKind::Message);
        set(
            !finished && last_message.is_some_and(|m| m.from == Some(Author::Contact)),
            flag::PENDING,
        );
        set(self.rating.is_some(), flag::RATED);
        set(self.is_new_contact, flag::NEW_CONTACT);
        set(
            t.first_reply_at
                .is_some_and(|r| r.date_naive() == self.stamps.created_at.date_naive()),
            flag::ANSWERED_ON_DAY,
        );
        set(t.reopened_at.is_some(), flag::REOPENED);
        set(self.metrics.tma.is_some(), flag::TMA);
        set(self.metrics.tme.is_some(), flag::TME);
        set(self.metrics.tmp.is_some(), flag::TMP);
        set(!self.deals.ids.is_empty(), flag::DEAL);
        set(self.deals.won, flag::WON_DEAL);
        set(t.transferred, flag::TRANSFERRED);
        Digest {
            id: self.id.clone(),
            created_ms: self.stamps.created_at.timestamp_millis(),
            finished_ms: t.finished_at.map(|f| f.timestamp_millis()),
            operator_id: t.operator_id.clone(),
            group_ids: t.groups.clone(),
            bot_ids: t.bots.clone(),
            channel_id: self.conversation.channel_id.clone(),
            campaign_id: self.campaign_id.clone(),
            conversation_id: self.conversation.id,
            contact_phone: self.conversation.contact_phone.clone(),
            tag_ids: self.tags.clone(),
            trails: self
                .trails
                .iter()
                .map(|x| (x.kind, x.operator_id.clone(), x.group_id.clone()))
                .collect(),
            flags: fl,
            tma: self.metrics.tma,
            tme: self.metrics.tme,
            tmp: self.metrics.tmp,
            rating: self.rating,
        }
    }

    /// The index items' keys: (partition, sort key).
    pub(crate) fn index_keys(&self) -> ApiResult<Vec<Key>> {
        let ws = self.workspace_id;
        let t = &self.times;
        if t.groups.len() > MAX_GROUPS || t.bots.len() > MAX_BOTS {
            return Err(ApiError::field(
                "trails",
                format!("name at most {MAX_GROUPS} groups and {MAX_BOTS} bots"),
            ));
        }
        let created = sort_key(&ids::format_ts(&self.stamps.created_at), &self.id);
        let by =
            |kind: &str, value: &str| Key::new(keys::sessions_by(ws, kind, value), created.clone());
        let mut out = vec![Key::new(
            keys::sessions_by(ws, "CREATED", "ALL"),
            created.clone(),
        )];
        if let Some(f) = t.finished_at {
            out.push(Key::new(
                keys::sessions_by(ws, "FINISHED", "ALL"),
                sort_key(&ids::format_ts(&f), &self.id),
            ));
        }
        if let Some(o) = &t.operator_id {
            out.push(by("OPERATOR", o));
        }
        out.extend(t.groups.iter().map(|g| by("GROUP", g)));
        out.extend(t.bots.iter().map(|b| by("BOT", b)));
        if let Some(ch) = &self.conversation.channel_id {
            out.push(by("CHANNEL", ch));
        }
        out.extend(self.tags.iter().map(|tag| by("TAG", &tag.to_string())));
        if let Some(cp) = &self.campaign_id {
            out.push(by("CAMPAIGN", cp));
        }
        out.push(by("CONVERSATION", &self.conversation.id.to_string()));
        if let Some(ph) = &self.conversation.contact_phone {
            out.push(by("PHONE", ph));
        }
        out.sort();
        out.dedup();
        Ok(out)
    }

    pub(crate) fn index_items(&self) -> ApiResult<Vec<Item>> {
        let digest = serde_json::to_value(self.digest()).unwrap_or(Value::Null);
        Ok(self
            .index_keys()?
            .into_iter()
            .map(|key| {
                let mut item = Item::new();
                item.insert(PK.into(), key.pk.into());
                item.insert(SK.into(), key.sk.into());
                item.insert(TYPE.into(), "SessionIndex".into());
                item.insert("d".into(), digest.clone());
                item
            })
            .collect())
    }
}

/// `<time>#<id>`: by time, then id.
pub fn sort_key(time: &str, id: &str) -> String {
    format!("{time}#{id}")
}

impl Digest {
    pub(super) fn of_item(item: &Item) -> ApiResult<Digest> {
        let d = item
            .get("d")
            .ok_or_else(|| ApiError::internal("a session index item without its digest"))?;
        serde_json::from_value(d.clone()).map_err(ApiError::internal)
    }
}

/// The partition of sessions of one kind and value (for the list's driving read).
pub fn partition(ws: WorkspaceId, kind: &str, value: &str) -> String {
    keys::sessions_by(ws, kind, value)
}
