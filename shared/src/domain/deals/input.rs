//! The create and PATCH body, and the rules that apply it: required fields,
//! the contact and the catalog products, won/lost dates, lost reasons, stages.

use std::collections::HashMap;

use serde::Deserialize;
use serde_json::{Map, Value};
use validator::Validate;

use super::record::{
    AuthorType, DealContact, DealContactInput, DealContext, DealConversation, DealFields,
    DealProduct, DealStatus,
};
use crate::domain::contacts::Contact;
use crate::domain::products;
use crate::error::{ApiError, ApiResult, FieldProblem};
use crate::ids::WorkspaceId;
use crate::ids::{self, ClientTime};
use crate::keys;
use crate::record;
use crate::store::Store;
use crate::validate::{CreateFields, nullable};

/// `POST /v3/deals` and `PATCH /v3/deals/{id}`: every Deal field, all optional
/// in the body (a create checks the spec's required ones). `null` clears the
/// optional ones.
#[derive(Debug, Default, Deserialize, Validate, schemars::JsonSchema)]
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
    pub won_lost_date: Option<Option<ClientTime>>,
    #[serde(default, deserialize_with = "nullable")]
    pub due_date: Option<Option<ClientTime>>,
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

/// Resolves the deal's contact: it must be a contact of the workspace.
async fn contact_of(
    store: &dyn Store,
    ws: WorkspaceId,
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
    ws: WorkspaceId,
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
pub(super) async fn apply(
    store: &dyn Store,
    ws: WorkspaceId,
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
        deal.due_date = due.map(|t| t.0);
    }
    let explicit_won_lost = input.won_lost_date.map(|date| date.map(|t| t.0));

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

/// What [`missing`] checks, for the document (`http::Create`).
impl CreateFields for DealInput {
    const REQUIRED: &'static [&'static str] = &[
        "name",
        "value",
        "status",
        "operatorId",
        "groupId",
        "pipelineId",
        "stageId",
        "origin",
        "tagIds",
    ];
    const ANY_OF: &'static [&'static str] = &["contact", "contactId"];
}

/// The spec's required create fields that a body lacks.
pub(super) fn missing(input: &DealInput) -> Vec<FieldProblem> {
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
