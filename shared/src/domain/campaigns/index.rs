//! The index items of a campaign, each with a digest: by status, by channel,
//! and by each word of its name (sort key `<word>#<id>`, for word-prefix
//! search without case or accents).

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::record::{Campaign, CampaignStatus};
use crate::error::{ApiError, ApiResult};
use crate::ids::padded;
use crate::keys;
use crate::keys::CampaignId;
use crate::store::{Item, Key, PK, SK, TYPE};

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
pub struct Digest {
    pub id: CampaignId,
    #[serde(rename = "s")]
    pub status: CampaignStatus,
    #[serde(default, rename = "ch")]
    pub channel_id: Option<String>,
    /// The folded words of the name.
    #[serde(rename = "w")]
    pub words: Vec<String>,
}

/// Words of a name, folded, each at most this long in the index.
pub const MAX_WORDS: usize = 10;

pub fn words(name: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for word in crate::text::fold(name).split(|c: char| !c.is_alphanumeric()) {
        if !word.is_empty() && !out.iter().any(|w| w == word) {
            out.push(word.to_owned());
        }
        if out.len() == MAX_WORDS {
            break;
        }
    }
    out
}

pub(super) fn digest(c: &Campaign) -> Digest {
    Digest {
        id: c.id,
        status: c.status,
        channel_id: c.fields.channel_id.clone(),
        words: words(&c.fields.name),
    }
}

pub(super) fn index_keys(c: &Campaign) -> Vec<Key> {
    let ws = c.workspace_id;
    let id = padded(c.id.0);
    let mut out = vec![Key::new(
        keys::campaigns_by(ws, "STATUS", c.status.as_str()),
        id.clone(),
    )];
    if let Some(ch) = &c.fields.channel_id {
        out.push(Key::new(keys::campaigns_by(ws, "CHANNEL", ch), id.clone()));
    }
    for word in words(&c.fields.name) {
        out.push(Key::new(
            keys::campaigns_by(ws, "NAMEWORD", "ALL"),
            format!("{word}#{id}"),
        ));
    }
    out
}

pub(super) fn index_items(c: &Campaign) -> Vec<Item> {
    let d = serde_json::to_value(digest(c)).unwrap_or(Value::Null);
    index_keys(c)
        .into_iter()
        .map(|key| {
            let mut item = Item::new();
            item.insert(PK.into(), key.pk.into());
            item.insert(SK.into(), key.sk.into());
            item.insert(TYPE.into(), "CampaignIndex".into());
            item.insert("d".into(), d.clone());
            item
        })
        .collect()
}

pub(super) fn of_item(item: &Item) -> ApiResult<Digest> {
    let d = item
        .get("d")
        .ok_or_else(|| ApiError::internal("a campaign index item without its digest"))?;
    serde_json::from_value(d.clone()).map_err(ApiError::internal)
}
