//! Deals: records of the sales pipeline, with honest derived fields.
//!
//! - Moving to `won` or `lost` stamps `wonLostDate`; back to `open` clears it.
//! - `lostReason` and `lostReasonObs` live on lost deals only: leaving `lost`
//!   clears them, and setting them on a deal that is not lost is a 400.
//! - A stage change stamps `lastStageChanged` and adds the time spent in the
//!   previous stage (milliseconds) to `timeInStage[<previous stageId>]`. Both are
//!   computed: a body that sets them is a 400.
//! - A deal's contact is a contact of the workspace (`contactId` or
//!   `contact.id`); the deal keeps a snapshot of it. Deal products are catalog
//!   products; `total` is computed when absent.
//!
//! Lists: each deal writes small index items (by stage, status, operator,
//! pipeline, contact, and each tag and product), each holding a digest of the
//! deal. A list reads the narrowest partition its filters name, in the creation
//! window as an id range, and filters the rest on the digests; then it reads the
//! page's deals. An unfiltered list is one Query and the counter.

use std::collections::{BTreeMap, HashMap, HashSet};

use chrono::{Datelike, Duration, Months, TimeZone, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use validator::Validate;

use crate::auth::Caller;
use crate::domain::contacts::Contact;
use crate::domain::products;
use crate::error::{ApiError, ApiResult, FieldProblem};
use crate::ids::{self, Timestamp};
use crate::keys;
use crate::page::{ListPage, MAX_WINDOW, Paging, counted_page, read_up_to};
use crate::record::{self, Mutation, Record, Stamps, with_fresh_id};
use crate::store::{Index, Item, Key, PK, Query, SK, SkRange, Store, TYPE};
use crate::validate::nullable;

pub const LIST: &str = "DEAL";

#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, Hash)]
#[serde(rename_all = "lowercase")]
pub enum DealStatus {
    Open,
    Won,
    Lost,
}

impl DealStatus {
    fn as_str(self) -> &'static str {
        match self {
            DealStatus::Open => "open",
            DealStatus::Won => "won",
            DealStatus::Lost => "lost",
        }
    }
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
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
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct DealContact {
    pub id: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub avatar: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phone: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub email: Option<String>,
    #[serde(with = "ids::ts_format")]
    pub created_at: Timestamp,
    pub is_private: bool,
}

impl From<&Contact> for DealContact {
    fn from(c: &Contact) -> Self {
        Self {
            id: c.id,
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
#[derive(Debug, Clone, Deserialize, Validate)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct DealContactInput {
    pub id: u64,
    pub name: Option<String>,
    pub avatar: Option<String>,
    pub phone: Option<String>,
    pub email: Option<String>,
    pub created_at: Option<String>,
    pub is_private: Option<bool>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Validate)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct DealConversation {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub platform_id: Option<u64>,
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

#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum DiscountKind {
    /// `discount` is a percentage of price × quantity.
    Percent,
    /// `discount` is an amount off price × quantity.
    Amount,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct DiscountType {
    #[serde(rename = "type")]
    pub kind: DiscountKind,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Validate)]
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
    fn computed_total(&self) -> f64 {
        let gross = self.price.unwrap_or(0.0) * self.quantity;
        let net = match self.discount_type.as_ref().map(|d| d.kind) {
            Some(DiscountKind::Percent) => gross * (1.0 - self.discount.min(100.0) / 100.0),
            Some(DiscountKind::Amount) | None => gross - self.discount,
        };
        (net.max(0.0) * 100.0).round() / 100.0
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Validate)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct DealContext {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[validate(length(max = 128))]
    pub automation_id: Option<String>,
}

/// The fields of a deal, as stored and as the API shows them.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
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
    #[serde(
        default,
        with = "ids::ts_format::option",
        skip_serializing_if = "Option::is_none"
    )]
    pub won_lost_date: Option<Timestamp>,
    #[serde(
        default,
        with = "ids::ts_format::option",
        skip_serializing_if = "Option::is_none"
    )]
    pub due_date: Option<Timestamp>,
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

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Deal {
    pub id: u64,
    pub workspace_id: u64,
    #[serde(flatten)]
    pub fields: DealFields,
    #[serde(flatten)]
    pub stamps: Stamps,
    pub version: u64,
}

/// What a list filters and sorts on, kept on every index item of the deal.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
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
    fn digest(&self) -> Digest {
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
    fn partitions(&self) -> Vec<String> {
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

    fn index_items(&self) -> Vec<Item> {
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

crate::versioned!(Deal);

impl Record for Deal {
    const TYPE: &'static str = "Deal";
    fn key(&self) -> Key {
        keys::deal(self.workspace_id, self.id)
    }
}

/// The spec's Deal.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DealView {
    pub id: String,
    pub workspace_id: u64,
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

// ------------------------------------------------------------------ input

/// `POST /v3/deals` and `PATCH /v3/deals/{id}`: every Deal field, all optional
/// in the body (a create checks the spec's required ones). `null` clears the
/// optional ones.
#[derive(Debug, Default, Deserialize, Validate)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct DealInput {
    #[serde(default, rename = "_id", deserialize_with = "nullable")]
    #[validate(length(max = 128))]
    pub legacy_id: Option<Option<String>>,
    #[validate(
        length(min = 1, max = 256),
        custom(function = "crate::validate::not_blank")
    )]
    pub name: Option<String>,
    #[validate(range(min = -1e15, max = 1e15))]
    pub value: Option<f64>,
    pub status: Option<DealStatus>,
    #[validate(nested)]
    pub contact: Option<DealContactInput>,
    pub contact_id: Option<u64>,
    pub operator_id: Option<u64>,
    pub group_id: Option<u64>,
    #[validate(length(min = 1, max = 128))]
    pub pipeline_id: Option<String>,
    #[validate(length(min = 1, max = 128))]
    pub stage_id: Option<String>,
    #[validate(length(min = 1, max = 128))]
    pub origin: Option<String>,
    /// At most 20 (with 20 products): every tag and product is an index item
    /// written in the deal's transaction, which DynamoDB caps at 100 items.
    #[validate(length(max = 20))]
    pub tag_ids: Option<Vec<u64>>,
    #[serde(default, deserialize_with = "nullable")]
    #[validate(length(max = 20))]
    pub lost_reason: Option<Option<Vec<String>>>,
    #[serde(default, deserialize_with = "nullable")]
    #[validate(length(max = 2000))]
    pub lost_reason_obs: Option<Option<String>>,
    #[validate(length(max = 20), nested)]
    pub products: Option<Vec<DealProduct>>,
    #[serde(default, deserialize_with = "nullable")]
    pub won_lost_date: Option<Option<String>>,
    #[serde(default, deserialize_with = "nullable")]
    pub due_date: Option<Option<String>>,
    /// Computed: refused with a 400.
    pub last_stage_changed: Option<Value>,
    #[serde(default, deserialize_with = "nullable")]
    #[validate(nested)]
    pub conversation: Option<Option<DealConversation>>,
    #[serde(default, deserialize_with = "nullable")]
    #[validate(length(max = 128))]
    pub campaign: Option<Option<String>>,
    #[serde(default, deserialize_with = "nullable")]
    pub author_type: Option<Option<AuthorType>>,
    #[serde(default, deserialize_with = "nullable")]
    pub author_id: Option<Option<Map<String, Value>>>,
    #[serde(default, deserialize_with = "nullable")]
    pub position: Option<Option<f64>>,
    #[serde(default, deserialize_with = "nullable")]
    pub focused_counts: Option<Option<f64>>,
    #[serde(default, deserialize_with = "nullable")]
    pub comments: Option<Option<f64>>,
    #[serde(default, deserialize_with = "nullable")]
    pub tasks: Option<Option<Map<String, Value>>>,
    /// Computed: refused with a 400.
    pub time_in_stage: Option<Value>,
    #[serde(default, deserialize_with = "nullable")]
    pub custom_fields: Option<Option<Map<String, Value>>>,
    #[serde(default, deserialize_with = "nullable")]
    #[validate(nested)]
    pub context: Option<Option<DealContext>>,
}

fn parse_time(field: &str, text: &str) -> ApiResult<Timestamp> {
    ids::parse_ts(text)
        .ok_or_else(|| ApiError::field(field, "must be an RFC 3339 date-time or a date"))
}

/// Resolves the deal's contact: it must be a contact of the workspace.
async fn contact_of(
    store: &dyn Store,
    ws: u64,
    input: &DealInput,
) -> ApiResult<Option<DealContact>> {
    let id = match (input.contact_id, input.contact.as_ref().map(|c| c.id)) {
        (Some(a), Some(b)) if a != b => {
            return Err(ApiError::field(
                "contactId",
                "names another contact than contact.id",
            ));
        }
        (Some(id), _) | (None, Some(id)) => id,
        (None, None) => return Ok(None),
    };
    let contact: Option<Contact> = record::get(store, &keys::contact(ws, id), true).await?;
    contact
        .map(|c| Some(DealContact::from(&c)))
        .ok_or_else(|| ApiError::not_found("contact"))
}

/// Completes deal products from the catalog: each must be a product of the workspace.
async fn catalog_products(
    store: &dyn Store,
    ws: u64,
    products: Vec<DealProduct>,
) -> ApiResult<Vec<DealProduct>> {
    let mut ids = Vec::with_capacity(products.len());
    for (i, p) in products.iter().enumerate() {
        ids.push(
            p.id.parse::<u64>().map_err(|_| {
                ApiError::field(format!("products[{i}].id"), "must be a product id")
            })?,
        );
    }
    let catalog: HashMap<u64, products::Product> = products::require(store, ws, &ids)
        .await?
        .into_iter()
        .map(|p| (p.id, p))
        .collect();
    Ok(products
        .into_iter()
        .zip(ids)
        .map(|(mut p, id)| {
            let item = &catalog[&id];
            p.name = p.name.or_else(|| Some(item.name.clone()));
            p.price = p.price.or(Some(item.price));
            if p.total.is_none() {
                p.total = Some(p.computed_total());
            }
            p
        })
        .collect())
}

/// Applies an input to a deal (new or read), then the status and stage rules.
async fn apply(
    store: &dyn Store,
    ws: u64,
    deal: &mut DealFields,
    before: Option<&DealFields>,
    input: DealInput,
) -> ApiResult<()> {
    if input.last_stage_changed.is_some() {
        return Err(ApiError::field(
            "lastStageChanged",
            "is computed from stage changes",
        ));
    }
    if input.time_in_stage.is_some() {
        return Err(ApiError::field(
            "timeInStage",
            "is computed from stage changes",
        ));
    }
    if let Some(contact) = contact_of(store, ws, &input).await? {
        deal.contact = contact;
    }
    if let Some(products) = input.products {
        deal.products = catalog_products(store, ws, products).await?;
    }
    macro_rules! set {
        ($($field:ident),*) => {$( if let Some(v) = input.$field { deal.$field = v; } )*};
    }
    set!(value, status, operator_id, group_id, tag_ids);
    macro_rules! text {
        ($($field:ident),*) => {$( if let Some(v) = input.$field { deal.$field = v.trim().to_owned(); } )*};
    }
    text!(name, pipeline_id, stage_id, origin);
    set!(
        legacy_id,
        lost_reason,
        lost_reason_obs,
        conversation,
        campaign,
        author_type,
        author_id,
        position,
        focused_counts,
        comments,
        tasks,
        custom_fields,
        context
    );
    if let Some(due) = input.due_date {
        deal.due_date = due.map(|t| parse_time("dueDate", &t)).transpose()?;
    }
    let explicit_won_lost = match input.won_lost_date {
        Some(date) => Some(date.map(|t| parse_time("wonLostDate", &t)).transpose()?),
        None => None,
    };

    let now = ids::now();
    // Status: won and lost are stamped, open clears the stamp.
    let status_changed = before.is_none_or(|b| b.status != deal.status);
    match deal.status {
        DealStatus::Open => {
            if explicit_won_lost.flatten().is_some() {
                return Err(ApiError::field(
                    "wonLostDate",
                    "an open deal has no won/lost date",
                ));
            }
            deal.won_lost_date = None;
        }
        DealStatus::Won | DealStatus::Lost => {
            if let Some(date) = explicit_won_lost {
                deal.won_lost_date = date.or(Some(now));
            } else if status_changed {
                deal.won_lost_date = Some(now);
            }
        }
    }
    // Lost reasons belong to lost deals.
    if deal.status != DealStatus::Lost {
        let leaving_lost = before.is_some_and(|b| b.status == DealStatus::Lost);
        let sets_reason = |r: bool| r && !leaving_lost;
        if sets_reason(
            deal.lost_reason.is_some() && before.is_none_or(|b| b.lost_reason != deal.lost_reason),
        ) || sets_reason(
            deal.lost_reason_obs.is_some()
                && before.is_none_or(|b| b.lost_reason_obs != deal.lost_reason_obs),
        ) {
            return Err(ApiError::field(
                "lostReason",
                "only a lost deal has lost reasons",
            ));
        }
        deal.lost_reason = None;
        deal.lost_reason_obs = None;
    }
    // Stage: stamp the change and add the time spent in the stage left.
    if let Some(b) = before
        && b.stage_id != deal.stage_id
    {
        let entered = b.last_stage_changed.unwrap_or(now);
        *deal.time_in_stage.entry(b.stage_id.clone()).or_default() +=
            (now - entered).num_milliseconds().max(0);
        deal.last_stage_changed = Some(now);
    }
    Ok(())
}

/// The spec's required create fields that a body lacks.
fn missing(input: &DealInput) -> Vec<FieldProblem> {
    let mut missing = Vec::new();
    let mut need = |present: bool, field: &str| {
        if !present {
            missing.push(FieldProblem {
                field: field.into(),
                problem: "is required".into(),
            });
        }
    };
    need(input.name.is_some(), "name");
    need(input.value.is_some(), "value");
    need(input.status.is_some(), "status");
    need(
        input.contact.is_some() || input.contact_id.is_some(),
        "contact",
    );
    need(input.operator_id.is_some(), "operatorId");
    need(input.group_id.is_some(), "groupId");
    need(input.pipeline_id.is_some(), "pipelineId");
    need(input.stage_id.is_some(), "stageId");
    need(input.origin.is_some(), "origin");
    need(input.tag_ids.is_some(), "tagIds");
    missing
}

pub async fn create(store: &dyn Store, caller: &Caller, input: DealInput) -> ApiResult<Deal> {
    let missing = missing(&input);
    if !missing.is_empty() {
        return Err(ApiError::fields(missing));
    }
    let ws = caller.workspace_id;
    let now = ids::now();
    let mut fields = DealFields {
        legacy_id: None,
        name: String::new(),
        value: 0.0,
        status: DealStatus::Open,
        contact: DealContact {
            id: 0,
            name: None,
            avatar: None,
            phone: None,
            email: None,
            created_at: now,
            is_private: false,
        },
        operator_id: 0,
        group_id: 0,
        pipeline_id: String::new(),
        stage_id: String::new(),
        origin: String::new(),
        tag_ids: Vec::new(),
        lost_reason: None,
        lost_reason_obs: None,
        products: Vec::new(),
        won_lost_date: None,
        due_date: None,
        last_stage_changed: Some(now),
        conversation: None,
        campaign: None,
        author_type: None,
        author_id: None,
        position: None,
        focused_counts: None,
        comments: None,
        tasks: None,
        time_in_stage: BTreeMap::new(),
        custom_fields: None,
        context: None,
    };
    apply(store, ws, &mut fields, None, input).await?;
    with_fresh_id(|id| {
        let deal = Deal {
            id,
            workspace_id: ws,
            fields: fields.clone(),
            stamps: Stamps::new(),
            version: 1,
        };
        async move {
            let mut m = Mutation::new(caller);
            m.create(&deal)?.count(keys::counter(ws, LIST), 1);
            for item in deal.index_items() {
                m.put_item(item);
            }
            m.commit(store, "deal.create", "deal", &id.to_string())
                .await?;
            Ok(deal)
        }
    })
    .await
}

pub async fn get(store: &dyn Store, caller: &Caller, id: u64) -> ApiResult<Deal> {
    record::find(store, &keys::deal(caller.workspace_id, id), false, "deal").await
}

pub async fn update(
    store: &dyn Store,
    caller: &Caller,
    id: u64,
    input: DealInput,
) -> ApiResult<Deal> {
    let ws = caller.workspace_id;
    let current: Deal = record::find(store, &keys::deal(ws, id), true, "deal").await?;
    let mut deal = current.clone();
    apply(store, ws, &mut deal.fields, Some(&current.fields), input).await?;
    let mut m = Mutation::new(caller);
    if !m.update(&current, &mut deal)? {
        return Ok(current);
    }
    let keep: HashSet<String> = deal.partitions().into_iter().collect();
    for old in current
        .partitions()
        .into_iter()
        .filter(|p| !keep.contains(p))
    {
        m.remove(Key::new(old, ids::padded(id)));
    }
    // Every index item carries the digest: rewrite them all.
    for item in deal.index_items() {
        m.put_item(item);
    }
    m.commit(store, "deal.update", "deal", &id.to_string())
        .await?;
    Ok(deal)
}

// ------------------------------------------------------------------ lists

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DatePreset {
    All,
    CurrentMonth,
    LastMonth,
    Last3Months,
    Last6Months,
    Last12Months,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Period {
    Today,
    Week,
    Month,
    Year,
    LastYear,
    LastMonth,
    #[serde(rename = "last_3_months")]
    Last3Months,
    #[serde(rename = "last_1h")]
    Last1h,
    #[serde(rename = "last_3h")]
    Last3h,
    #[serde(rename = "last_24h")]
    Last24h,
    Custom,
}

/// What `period` measures: the creation, the won/lost date or the last update.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub enum PeriodMetric {
    #[default]
    CreatedAt,
    WonLostDate,
    #[serde(alias = "lastUpdateAt")]
    UpdatedAt,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub enum SortBy {
    #[default]
    CreatedAt,
    #[serde(alias = "lastUpdateAt")]
    UpdatedAt,
    Value,
    Name,
    WonLostDate,
    Position,
}

/// The query of `GET /v3/deals`, after [`parse_query`] flattened it.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct DealQuery {
    pub limit: Option<u64>,
    pub offset: Option<u64>,
    pub role_id: Option<u64>,
    pub is_owner: Option<bool>,
    pub user_id: Option<u64>,
    #[serde(default)]
    pub stage_id: Vec<String>,
    pub sort_by: Option<SortBy>,
    pub sort: Option<String>,
    pub contact_id: Option<u64>,
    pub status: Option<DealStatus>,
    pub date: Option<DatePreset>,
    pub pipeline_id: Option<String>,
    pub operator_id: Option<u64>,
    pub group_id: Option<u64>,
    pub tag_id: Option<u64>,
    pub ignore_restrictions: Option<bool>,
    /// Accepted for compatibility; the spec does not say what it changes.
    pub include_operator_day: Option<bool>,
    #[serde(default)]
    pub operator_ids: Vec<u64>,
    #[serde(default)]
    pub group_ids: Vec<u64>,
    #[serde(default)]
    pub product_ids: Vec<String>,
    #[serde(default)]
    pub tag_ids: Vec<u64>,
    pub created_at_from: Option<String>,
    pub created_at_to: Option<String>,
    pub won_lost_at_from: Option<String>,
    pub won_lost_at_to: Option<String>,
    pub period: Option<Period>,
    pub period_metric: Option<PeriodMetric>,
    pub period_from: Option<String>,
    pub period_to: Option<String>,
}

/// The parameters that take a list (`x=a&x=b`, `x[]=a`, `x=a,b`).
const LIST_PARAMS: &[&str] = &["stageId", "operatorIds", "groupIds", "productIds", "tagIds"];
const NUMBER_PARAMS: &[&str] = &[
    "limit",
    "offset",
    "roleId",
    "userId",
    "contactId",
    "operatorId",
    "groupId",
    "tagId",
    "operatorIds",
    "groupIds",
    "tagIds",
];
const BOOL_PARAMS: &[&str] = &["isOwner", "ignoreRestrictions", "includeOperatorDay"];
/// The groupings of the spec; their members are the same parameters.
const GROUPS: &[&str] = &["filters", "conditions", "sortedBy", "meta"];

/// Parses the deal list's query in every form it comes: flat (`status=won`),
/// nested (`filters[status]=won`, `filters[stageId][]=a`), or JSON in a grouping
/// (`filters={"status":"won","stageId":["a","b"]}`); `sort[value]=asc` too.
pub fn parse_query(raw: &str) -> ApiResult<DealQuery> {
    let mut params: BTreeMap<String, Vec<Value>> = BTreeMap::new();
    let mut push =
        |name: &str, value: Value| params.entry(name.to_owned()).or_default().push(value);
    for (key, value) in form_urlencoded::parse(raw.as_bytes()) {
        let key = key.strip_suffix("[]").unwrap_or(&key).to_owned();
        if let Some((group, inner)) = key.split_once('[') {
            let inner = inner.trim_end_matches(']').trim_end_matches("][");
            if group == "sort" {
                push("sortBy", Value::String(inner.to_owned()));
                push("sort", Value::String(value.into_owned()));
                continue;
            }
            if !GROUPS.contains(&group) {
                return Err(ApiError::field(key.clone(), "is not a known field"));
            }
            push(inner, Value::String(value.into_owned()));
        } else if GROUPS.contains(&key.as_str())
            || (key == "sort" && value.trim_start().starts_with('{'))
        {
            let Ok(Value::Object(members)) = serde_json::from_str::<Value>(&value) else {
                return Err(ApiError::field(
                    key,
                    "must be a JSON object or the nested form (filters[status]=won)",
                ));
            };
            for (name, member) in members {
                if key == "sort" {
                    push("sortBy", Value::String(name));
                    push("sort", member);
                } else if let Value::Array(values) = member {
                    values.into_iter().for_each(|v| push(&name, v));
                } else {
                    push(&name, member);
                }
            }
        } else {
            push(&key, Value::String(value.into_owned()));
        }
    }
    // Into a JSON object of the right types, for serde to check strictly.
    let mut object = Map::new();
    for (name, values) in params {
        let typed: Vec<Value> = values
            .into_iter()
            .flat_map(|v| match v {
                Value::String(s) if LIST_PARAMS.contains(&name.as_str()) => s
                    .split(',')
                    .filter(|p| !p.is_empty())
                    .map(|p| Value::String(p.to_owned()))
                    .collect(),
                other => vec![other],
            })
            .map(|v| coerce(&name, v))
            .collect::<ApiResult<_>>()?;
        let value = if LIST_PARAMS.contains(&name.as_str()) {
            Value::Array(typed)
        } else {
            typed.into_iter().last().unwrap_or(Value::Null)
        };
        object.insert(name, value);
    }
    let bytes = serde_json::to_vec(&Value::Object(object)).map_err(ApiError::internal)?;
    crate::http::parse_json(&bytes)
}

fn coerce(name: &str, value: Value) -> ApiResult<Value> {
    let Value::String(text) = &value else {
        return Ok(value);
    };
    if NUMBER_PARAMS.contains(&name) {
        return text
            .trim()
            .parse::<u64>()
            .map(Value::from)
            .map_err(|_| ApiError::field(name, "must be a whole number"));
    }
    if BOOL_PARAMS.contains(&name) {
        return match text.as_str() {
            "true" => Ok(Value::Bool(true)),
            "false" => Ok(Value::Bool(false)),
            _ => Err(ApiError::field(name, "must be true or false")),
        };
    }
    Ok(value)
}

/// A time window `[from, to]` in milliseconds, either bound open.
#[derive(Debug, Clone, Copy, Default)]
struct Window {
    from: Option<i64>,
    to: Option<i64>,
}

impl Window {
    fn holds(&self, ms: Option<i64>) -> bool {
        match ms {
            Some(t) => self.from.is_none_or(|f| t >= f) && self.to.is_none_or(|e| t <= e),
            None => self.from.is_none() && self.to.is_none(),
        }
    }
    fn is_open(&self) -> bool {
        self.from.is_none() && self.to.is_none()
    }
    fn meet(self, other: Window) -> Window {
        Window {
            from: match (self.from, other.from) {
                (Some(a), Some(b)) => Some(a.max(b)),
                (a, b) => a.or(b),
            },
            to: match (self.to, other.to) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            },
        }
    }
}

fn month_start(t: Timestamp) -> Timestamp {
    Utc.with_ymd_and_hms(t.year(), t.month(), 1, 0, 0, 0)
        .single()
        .unwrap_or(t)
}

/// Preset windows, in UTC: `current_month` and `today` from the start of the month
/// or day; `last_month` and `last_year` the whole previous month or year; the
/// others rolling back from now.
fn preset_window(
    now: Timestamp,
    date: Option<DatePreset>,
    period: Option<Period>,
    q: &DealQuery,
) -> ApiResult<Window> {
    let ms = |t: Timestamp| Some(t.timestamp_millis());
    let back = |months: u32| now.checked_sub_months(Months::new(months)).unwrap_or(now);
    let mut window = Window::default();
    if let Some(date) = date {
        window = match date {
            DatePreset::All => Window::default(),
            DatePreset::CurrentMonth => Window {
                from: ms(month_start(now)),
                to: ms(now),
            },
            DatePreset::LastMonth => {
                let this = month_start(now);
                let last = this.checked_sub_months(Months::new(1)).unwrap_or(this);
                Window {
                    from: ms(last),
                    to: Some(this.timestamp_millis() - 1),
                }
            }
            DatePreset::Last3Months => Window {
                from: ms(back(3)),
                to: ms(now),
            },
            DatePreset::Last6Months => Window {
                from: ms(back(6)),
                to: ms(now),
            },
            DatePreset::Last12Months => Window {
                from: ms(back(12)),
                to: ms(now),
            },
        };
    }
    if let Some(period) = period {
        let day = Utc
            .with_ymd_and_hms(now.year(), now.month(), now.day(), 0, 0, 0)
            .single()
            .unwrap_or(now);
        let year = Utc
            .with_ymd_and_hms(now.year(), 1, 1, 0, 0, 0)
            .single()
            .unwrap_or(now);
        let p = match period {
            Period::Today => Window {
                from: ms(day),
                to: ms(now),
            },
            Period::Week => Window {
                from: ms(now - Duration::days(7)),
                to: ms(now),
            },
            Period::Month => Window {
                from: ms(back(1)),
                to: ms(now),
            },
            Period::Year => Window {
                from: ms(back(12)),
                to: ms(now),
            },
            Period::LastYear => {
                let last = Utc
                    .with_ymd_and_hms(now.year() - 1, 1, 1, 0, 0, 0)
                    .single()
                    .unwrap_or(year);
                Window {
                    from: ms(last),
                    to: Some(year.timestamp_millis() - 1),
                }
            }
            Period::LastMonth => {
                let this = month_start(now);
                let last = this.checked_sub_months(Months::new(1)).unwrap_or(this);
                Window {
                    from: ms(last),
                    to: Some(this.timestamp_millis() - 1),
                }
            }
            Period::Last3Months => Window {
                from: ms(back(3)),
                to: ms(now),
            },
            Period::Last1h => Window {
                from: ms(now - Duration::hours(1)),
                to: ms(now),
            },
            Period::Last3h => Window {
                from: ms(now - Duration::hours(3)),
                to: ms(now),
            },
            Period::Last24h => Window {
                from: ms(now - Duration::hours(24)),
                to: ms(now),
            },
            Period::Custom => {
                let from = q
                    .period_from
                    .as_deref()
                    .map(|t| parse_time("periodFrom", t))
                    .transpose()?;
                let to = q
                    .period_to
                    .as_deref()
                    .map(|t| parse_time("periodTo", t))
                    .transpose()?;
                if from.is_none() && to.is_none() {
                    return Err(ApiError::field(
                        "periodFrom",
                        "period=custom needs periodFrom or periodTo",
                    ));
                }
                Window {
                    from: from.map(|t| t.timestamp_millis()),
                    to: to.map(|t| t.timestamp_millis()),
                }
            }
        };
        window = p;
    }
    Ok(window)
}

fn explicit_window(
    from_field: &str,
    from: &Option<String>,
    to_field: &str,
    to: &Option<String>,
) -> ApiResult<Window> {
    let from = from
        .as_deref()
        .map(|t| parse_time(from_field, t))
        .transpose()?;
    let to = to.as_deref().map(|t| parse_time(to_field, t)).transpose()?;
    if let (Some(f), Some(t)) = (from, to)
        && t < f
    {
        return Err(ApiError::field(
            to_field,
            format!("must not be before {from_field}"),
        ));
    }
    Ok(Window {
        from: from.map(|t| t.timestamp_millis()),
        to: to.map(|t| t.timestamp_millis()),
    })
}

/// `GET /v3/deals`.
pub async fn list(store: &dyn Store, caller: &Caller, q: DealQuery) -> ApiResult<ListPage<Deal>> {
    let paging = Paging::parse(q.limit, q.offset)?;
    for (present, field) in [
        (q.role_id.is_some(), "roleId"),
        (q.is_owner.is_some(), "isOwner"),
        (q.user_id.is_some(), "userId"),
    ] {
        if !present {
            return Err(ApiError::field(field, "is required"));
        }
    }
    let ws = caller.workspace_id;
    let sees_all = q.is_owner == Some(true) || q.ignore_restrictions == Some(true);
    let descending = match q.sort.as_deref().map(str::to_ascii_lowercase).as_deref() {
        None | Some("desc" | "descend" | "-1") => true,
        Some("asc" | "ascend" | "1") => false,
        Some(_) => return Err(ApiError::field("sort", "must be asc or desc")),
    };
    let sort_by = q.sort_by.unwrap_or_default();

    // The constraints, each a set of allowed values (empty = no constraint).
    let mut operators: Vec<u64> = q.operator_ids.clone();
    operators.extend(q.operator_id);
    if !sees_all {
        let user = q.user_id.unwrap_or_default();
        if !operators.is_empty() && !operators.contains(&user) {
            return Ok(ListPage {
                total_count: Some(0),
                data: Vec::new(),
            });
        }
        operators = vec![user];
    }
    let mut groups = q.group_ids.clone();
    groups.extend(q.group_id);
    let mut tags = q.tag_ids.clone();
    tags.extend(q.tag_id);
    let stages = q.stage_id.clone();
    let products = q.product_ids.clone();

    let now = ids::now();
    let metric = q.period_metric.unwrap_or_default();
    let mut created = explicit_window(
        "createdAtFrom",
        &q.created_at_from,
        "createdAtTo",
        &q.created_at_to,
    )?;
    let mut won_lost = explicit_window(
        "wonLostAtFrom",
        &q.won_lost_at_from,
        "wonLostAtTo",
        &q.won_lost_at_to,
    )?;
    let mut updated = Window::default();
    if q.date.is_some() {
        created = created.meet(preset_window(now, q.date, None, &q)?);
    }
    if q.period.is_some() {
        let period = preset_window(now, None, q.period, &q)?;
        match metric {
            PeriodMetric::CreatedAt => created = created.meet(period),
            PeriodMetric::WonLostDate => won_lost = won_lost.meet(period),
            PeriodMetric::UpdatedAt => updated = updated.meet(period),
        }
    }

    let unfiltered = operators.is_empty()
        && groups.is_empty()
        && tags.is_empty()
        && stages.is_empty()
        && products.is_empty()
        && q.status.is_none()
        && q.pipeline_id.is_none()
        && q.contact_id.is_none()
        && created.is_open()
        && won_lost.is_open()
        && updated.is_open();
    if unfiltered && sort_by == SortBy::CreatedAt {
        let mut query = Query::new(Index::TABLE, keys::deals(ws), SkRange::All);
        query.forward = !descending;
        return counted_page(store, query, paging, keys::counter(ws, LIST)).await;
    }

    // The driving partitions: the narrowest index the filters name.
    let by = |kind: &str, values: Vec<String>| {
        values
            .into_iter()
            .map(|v| keys::deals_by(ws, kind, &v))
            .collect::<Vec<_>>()
    };
    let partitions: Vec<String> = if let Some(contact) = q.contact_id {
        by("CONTACT", vec![contact.to_string()])
    } else if !products.is_empty() {
        by("PRODUCT", products.clone())
    } else if !stages.is_empty() {
        by("STAGE", stages.clone())
    } else if !tags.is_empty() {
        by("TAG", tags.iter().map(u64::to_string).collect())
    } else if !operators.is_empty() {
        by("OPERATOR", operators.iter().map(u64::to_string).collect())
    } else if let Some(status) = q.status {
        by("STATUS", vec![status.as_str().to_owned()])
    } else if let Some(pipeline) = &q.pipeline_id {
        by("PIPELINE", vec![pipeline.clone()])
    } else {
        vec![keys::deals(ws)]
    };
    // Every partition is in id order, and ids are time-ordered: the creation
    // window is an id range of each.
    let range = if created.is_open() {
        SkRange::All
    } else {
        let from = created
            .from
            .and_then(chrono::DateTime::from_timestamp_millis)
            .unwrap_or_default();
        let to = created
            .to
            .and_then(chrono::DateTime::from_timestamp_millis)
            .unwrap_or_else(|| now + Duration::days(1));
        let (low, high) = ids::id_range(&from, &to);
        SkRange::Between(ids::padded(low), ids::padded(high))
    };

    let mut digests: Vec<Digest> = Vec::new();
    let mut seen = HashSet::new();
    for pk in partitions {
        let items = read_up_to(
            store,
            Query::new(Index::TABLE, pk, range.clone()),
            MAX_WINDOW as usize + 1,
        )
        .await?;
        for item in items {
            let digest: Digest = match item.get("d") {
                Some(d) => serde_json::from_value(d.clone()).map_err(ApiError::internal)?,
                None => record::from_item::<Deal>(item)?.digest(),
            };
            if seen.insert(digest.id) {
                digests.push(digest);
            }
        }
        if digests.len() > MAX_WINDOW as usize {
            return Err(ApiError::bad_request(
                "the filters match more than 10,000 deals; narrow them",
            ));
        }
    }
    let any = |wanted: &[String], have: &[String]| {
        wanted.is_empty() || wanted.iter().any(|w| have.contains(w))
    };
    digests.retain(|d| {
        (operators.is_empty() || operators.contains(&d.o))
            && (groups.is_empty() || groups.contains(&d.g))
            && (tags.is_empty() || tags.iter().any(|t| d.t.contains(t)))
            && (stages.is_empty() || stages.contains(&d.st))
            && any(&products, &d.pr)
            && q.status.is_none_or(|s| d.s == s)
            && q.pipeline_id.as_ref().is_none_or(|p| &d.p == p)
            && q.contact_id.is_none_or(|c| d.c == c)
            && created.holds(Some(ids::id_time(d.id).timestamp_millis()))
            && won_lost.holds(d.w)
            && updated.holds(Some(d.u))
    });
    match sort_by {
        SortBy::CreatedAt => digests.sort_by_key(|d| d.id),
        SortBy::UpdatedAt => digests.sort_by_key(|d| (d.u, d.id)),
        SortBy::Value => digests.sort_by(|a, b| a.v.total_cmp(&b.v).then(a.id.cmp(&b.id))),
        SortBy::Name => digests.sort_by(|a, b| a.n.cmp(&b.n).then(a.id.cmp(&b.id))),
        SortBy::WonLostDate => digests.sort_by_key(|d| (d.w, d.id)),
        SortBy::Position => digests.sort_by(|a, b| {
            a.pos
                .unwrap_or(f64::MAX)
                .total_cmp(&b.pos.unwrap_or(f64::MAX))
                .then(a.id.cmp(&b.id))
        }),
    }
    if descending {
        digests.reverse();
    }
    let total = digests.len() as u64;
    let page: Vec<u64> = digests
        .iter()
        .skip(paging.offset as usize)
        .take(paging.limit as usize)
        .map(|d| d.id)
        .collect();
    Ok(ListPage {
        total_count: Some(total),
        data: load(store, ws, &page).await?,
    })
}

/// Deals by id, in the order given.
async fn load(store: &dyn Store, ws: u64, ids: &[u64]) -> ApiResult<Vec<Deal>> {
    let mut by_id = HashMap::new();
    for chunk in ids.chunks(crate::store::MAX_BATCH_GET) {
        let keys: Vec<Key> = chunk.iter().map(|&id| keys::deal(ws, id)).collect();
        for item in store.batch_get(&keys).await? {
            let deal: Deal = record::from_item(item)?;
            by_id.insert(deal.id, deal);
        }
    }
    Ok(ids.iter().filter_map(|id| by_id.remove(id)).collect())
}
