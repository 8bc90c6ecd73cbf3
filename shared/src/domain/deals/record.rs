//! The stored deal and its parts.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use validator::Validate;

use crate::domain::contacts::Contact;
use crate::ids::WorkspaceId;
use crate::ids::{self, Timestamp};
use crate::keys;
use crate::keys::{ContactId, DealId};
use crate::record::{Personal, Record, Stamps};
use crate::store::Key;

#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, Hash, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum DealStatus {
    Open,
    Won,
    Lost,
}

impl DealStatus {
    pub(super) fn as_str(self) -> &'static str {
        match self {
            DealStatus::Open => "open",
            DealStatus::Won => "won",
            DealStatus::Lost => "lost",
        }
    }
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum AuthorType {
    User,
    Bot,
    Automation,
    Workflow,
    Unknown,
    Cadence,
}

/// The deal's snapshot of its contact.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DealContact {
    pub id: ContactId,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub avatar: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phone: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub email: Option<String>,
    #[schemars(with = "crate::ids::Timestamp")]
    #[serde(with = "ids::ts_format")]
    pub created_at: Timestamp,
    pub is_private: bool,
}

impl From<&Contact> for DealContact {
    fn from(c: &Contact) -> Self {
        Self {
            id: ContactId(c.id),
            name: c.fields.name.clone(),
            avatar: c.fields.avatar.clone(),
            phone: c.fields.phone.clone(),
            email: c.fields.email.clone(),
            created_at: c.stamps.created_at,
            is_private: c.fields.is_private,
        }
    }
}

/// The contact member of a request: `id` names the contact; the rest is taken
/// from the contact record.
#[derive(Debug, Clone, Deserialize, Validate, schemars::JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct DealContactInput {
    pub id: ContactId,
    pub name: Option<String>,
    pub avatar: Option<String>,
    pub phone: Option<String>,
    pub email: Option<String>,
    pub created_at: Option<String>,
    pub is_private: Option<bool>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Validate, schemars::JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct DealConversation {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub platform_id: Option<u64>,
    #[schemars(with = "Option<crate::ids::Timestamp>")]
    #[serde(
        default,
        with = "ids::ts_format::option",
        skip_serializing_if = "Option::is_none"
    )]
    pub last_message_at: Option<Timestamp>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub show_pending: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pending_at: Option<String>,
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum DiscountKind {
    /// `discount` is a percentage of price × quantity.
    Percent,
    /// `discount` is an amount off price × quantity.
    Amount,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DiscountType {
    #[serde(rename = "type")]
    pub kind: DiscountKind,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Validate, schemars::JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct DealProduct {
    /// A catalog product id.
    #[validate(length(min = 1, max = 32))]
    pub id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[validate(length(max = 128))]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[validate(range(min = 0.0, max = 1e12))]
    pub price: Option<f64>,
    #[serde(default = "one")]
    #[validate(range(min = 0.0, max = 1e9))]
    pub quantity: f64,
    #[serde(default)]
    #[validate(range(min = 0.0, max = 1e12))]
    pub discount: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub discount_type: Option<DiscountType>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total: Option<f64>,
}

fn one() -> f64 {
    1.0
}

impl DealProduct {
    /// price × quantity less the discount (a percentage or an amount), never below 0.
    pub(super) fn computed_total(&self) -> f64 {
        let gross = self.price.unwrap_or(0.0) * self.quantity;
        let net = match self.discount_type.as_ref().map(|d| d.kind) {
            Some(DiscountKind::Percent) => gross * (1.0 - self.discount.min(100.0) / 100.0),
            Some(DiscountKind::Amount) | None => gross - self.discount,
        };
        (net.max(0.0) * 100.0).round() / 100.0
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Validate, schemars::JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct DealContext {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[validate(length(max = 128))]
    pub automation_id: Option<String>,
}

/// The fields of a deal, as stored and as the API shows them.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DealFields {
    #[serde(default, rename = "_id", skip_serializing_if = "Option::is_none")]
    pub legacy_id: Option<String>,
    pub name: String,
    pub value: f64,
    pub status: DealStatus,
    pub contact: DealContact,
    pub operator_id: u64,
    pub group_id: u64,
    pub pipeline_id: String,
    pub stage_id: String,
    pub origin: String,
    pub tag_ids: Vec<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lost_reason: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lost_reason_obs: Option<String>,
    #[serde(default)]
    pub products: Vec<DealProduct>,
    #[schemars(with = "Option<crate::ids::Timestamp>")]
    #[serde(
        default,
        with = "ids::ts_format::option",
        skip_serializing_if = "Option::is_none"
    )]
    pub won_lost_date: Option<Timestamp>,
    #[schemars(with = "Option<crate::ids::Timestamp>")]
    #[serde(
        default,
        with = "ids::ts_format::option",
        skip_serializing_if = "Option::is_none"
    )]
    pub due_date: Option<Timestamp>,
    #[schemars(with = "Option<crate::ids::Timestamp>")]
    #[serde(
        default,
        with = "ids::ts_format::option",
        skip_serializing_if = "Option::is_none"
    )]
    pub last_stage_changed: Option<Timestamp>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conversation: Option<DealConversation>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub campaign: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub author_type: Option<AuthorType>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub author_id: Option<Map<String, Value>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub position: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub focused_counts: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comments: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tasks: Option<Map<String, Value>>,
    /// Milliseconds spent in each stage left so far.
    #[serde(default)]
    pub time_in_stage: BTreeMap<String, i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub custom_fields: Option<Map<String, Value>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<DealContext>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Deal {
    pub id: DealId,
    pub workspace_id: WorkspaceId,
    #[serde(flatten)]
    pub fields: DealFields,
    #[serde(flatten)]
    pub stamps: Stamps,
    pub version: u64,
}

crate::versioned!(Deal);

impl Record for Deal {
    const EVENTS: Option<&'static str> = Some("deal");

    fn event_object(&self) -> serde_json::Value {
        crate::record::as_event_object(DealView::from(self.clone()))
    }

    /// Won and lost are events of their own, and so is a reopening.
    fn event_verb(&self, before: Option<&Self>, created: bool) -> &'static str {
        match (created, before.map(|b| b.fields.status), self.fields.status) {
            (true, ..) => "created",
            (false, Some(was), now) if was != now => match now {
                DealStatus::Won => "won",
                DealStatus::Lost => "lost",
                DealStatus::Open => "reopened",
            },
            _ => "updated",
        }
    }
    const TYPE: &'static str = "Deal";
    /// The contact's copy is theirs; what a seller writes may name them.
    const PERSONAL: Personal = Personal {
        fields: &[
            "contact.name",
            "contact.avatar",
            "contact.phone",
            "contact.email",
        ],
        copies: &[
            "name",
            "lostReason",
            "lostReasonObs",
            "customFields",
            "tasks",
            "authorId",
        ],
        plain: &[
            "conversation",
            "_id",
            "authorType",
            "campaign",
            "contact.createdAt",
            "context",
            "dueDate",
            "lastStageChanged",
            "origin",
            "pipelineId",
            "products",
            "stageId",
            "status",
            "timeInStage",
            "wonLostDate",
        ],
    };
    fn key(&self) -> Key {
        keys::deal(self.workspace_id, self.id)
    }
}

// The spec's Deal shares `DealFields` with the stored record on purpose: the
// spec's field names are the stored attribute names. A rename that would
// change the stored item is caught by the item-shape tests, which pin every
// stored attribute. Its events carry it (`event_object`).
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
