//! The create and PATCH bodies, and what a body needs read before its rules
//! apply ([`super::rules`]): the contact and the catalog products.

use std::collections::{BTreeMap, HashMap};

use serde::Deserialize;
use serde_json::{Map, Value};
use validator::Validate;

use super::record::{
    AuthorType, DealContact, DealContactInput, DealContext, DealConversation, DealFields,
    DealProduct, DealStatus,
};
use super::rules;
use crate::domain::products;
use crate::error::{ApiError, ApiResult};
use crate::ids::{ClientTime, Timestamp, WorkspaceId};
use crate::keys::ContactId;
use crate::patch::Patch;
use crate::store::Store;

/// `POST /v3/deals`: a new deal. The spec's required fields are required;
/// the contact is `contactId` or `contact.id`.
// The body is read into this type or refused, naming the field: no field
// is filled in later, and no list of required fields stands beside it.
#[derive(Debug, Deserialize, Validate, schemars::JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[schemars(transform = contact_or_id)]
pub struct DealCreate {
    #[serde(default, rename = "_id")]
    #[validate(length(max = 128))]
    pub legacy_id: Option<String>,
    #[validate(
        length(min = 1, max = 256),
        custom(function = "crate::validate::not_blank")
    )]
    pub name: String,
    #[validate(range(min = -1e15, max = 1e15))]
    pub value: f64,
    pub status: DealStatus,
    #[validate(nested)]
    pub contact: Option<DealContactInput>,
    pub contact_id: Option<ContactId>,
    pub operator_id: u64,
    pub group_id: u64,
    #[validate(length(min = 1, max = 128))]
    pub pipeline_id: String,
    #[validate(length(min = 1, max = 128))]
    pub stage_id: String,
    #[validate(length(min = 1, max = 128))]
    pub origin: String,
    /// At most 20 (with 20 products): every tag and product is an index item
    /// written in the deal's transaction, which DynamoDB caps at 100 items.
    #[validate(length(max = 20))]
    pub tag_ids: Vec<u64>,
    #[validate(length(max = 20))]
    pub lost_reason: Option<Vec<String>>,
    #[validate(length(max = 2000))]
    pub lost_reason_obs: Option<String>,
    #[validate(length(max = 20), nested)]
    pub products: Option<Vec<DealProduct>>,
    pub won_lost_date: Option<ClientTime>,
    pub due_date: Option<ClientTime>,
    /// Computed: refused with a 400.
    pub last_stage_changed: Option<Value>,
    #[validate(nested)]
    pub conversation: Option<DealConversation>,
    #[validate(length(max = 128))]
    pub campaign: Option<String>,
    pub author_type: Option<AuthorType>,
    pub author_id: Option<Map<String, Value>>,
    pub position: Option<f64>,
    pub focused_counts: Option<f64>,
    pub comments: Option<f64>,
    pub tasks: Option<Map<String, Value>>,
    /// Computed: refused with a 400.
    pub time_in_stage: Option<Value>,
    pub custom_fields: Option<Map<String, Value>>,
    #[validate(nested)]
    pub context: Option<DealContext>,
}

fn contact_or_id(schema: &mut schemars::Schema) {
    crate::validate::needs_one_of(schema, &["contact", "contactId"], false);
}

/// `PATCH /v3/deals/{id}`: any Deal field; `null` clears an optional one.
#[derive(Debug, Default, Deserialize, Validate, schemars::JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct DealPatch {
    #[serde(default, rename = "_id")]
    #[validate(length(max = 128))]
    pub legacy_id: Patch<String>,
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
    pub contact_id: Option<ContactId>,
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
    #[serde(default)]
    #[validate(length(max = 20))]
    pub lost_reason: Patch<Vec<String>>,
    #[serde(default)]
    #[validate(length(max = 2000))]
    pub lost_reason_obs: Patch<String>,
    #[validate(length(max = 20), nested)]
    pub products: Option<Vec<DealProduct>>,
    #[serde(default)]
    pub won_lost_date: Patch<ClientTime>,
    #[serde(default)]
    pub due_date: Patch<ClientTime>,
    /// Computed: refused with a 400.
    pub last_stage_changed: Option<Value>,
    #[serde(default)]
    #[validate(nested)]
    pub conversation: Patch<DealConversation>,
    #[serde(default)]
    #[validate(length(max = 128))]
    pub campaign: Patch<String>,
    #[serde(default)]
    pub author_type: Patch<AuthorType>,
    #[serde(default)]
    pub author_id: Patch<Map<String, Value>>,
    #[serde(default)]
    pub position: Patch<f64>,
    #[serde(default)]
    pub focused_counts: Patch<f64>,
    #[serde(default)]
    pub comments: Patch<f64>,
    #[serde(default)]
    pub tasks: Patch<Map<String, Value>>,
    /// Computed: refused with a 400.
    pub time_in_stage: Option<Value>,
    #[serde(default)]
    pub custom_fields: Patch<Map<String, Value>>,
    #[serde(default)]
    #[validate(nested)]
    pub context: Patch<DealContext>,
}

/// The deal's contact, when the body names one (`contactId` or
/// `contact.id`): it must be a contact of the workspace.
async fn contact_of(
    store: &dyn Store,
    ws: WorkspaceId,
    contact_id: Option<ContactId>,
    contact: Option<&DealContactInput>,
) -> ApiResult<Option<DealContact>> {
    let id = match (contact_id, contact.map(|c| c.id)) {
        (Some(a), Some(b)) if a != b => {
            return Err(ApiError::field(
                "contactId",
                "names another contact than contact.id",
            ));
        }
        (Some(id), _) | (None, Some(id)) => id,
        (None, None) => return Ok(None),
    };
    // A merged contact's id names its survivor.
    let contact = crate::domain::contacts::read(store, ws, id.0, true).await?;
    Ok(Some(DealContact::from(&contact)))
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
        .map(|p| (p.id.0, p))
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

/// The fields that are computed, never set by a body.
fn refuse_computed(
    last_stage_changed: &Option<Value>,
    time_in_stage: &Option<Value>,
) -> ApiResult<()> {
    for (set, field) in [
        (last_stage_changed.is_some(), "lastStageChanged"),
        (time_in_stage.is_some(), "timeInStage"),
    ] {
        if set {
            return Err(ApiError::field(field, "is computed from stage changes"));
        }
    }
    Ok(())
}

/// A new deal's fields from its create body, at `now`: its contact and
/// products read, then the rules.
pub(super) async fn created(
    store: &dyn Store,
    ws: WorkspaceId,
    input: DealCreate,
    now: Timestamp,
) -> ApiResult<DealFields> {
    refuse_computed(&input.last_stage_changed, &input.time_in_stage)?;
    let contact = contact_of(store, ws, input.contact_id, input.contact.as_ref())
        .await?
        .ok_or_else(|| ApiError::field("contact", "is required: contactId or contact.id"))?;
    let products = catalog_products(store, ws, input.products.unwrap_or_default()).await?;
    let mut deal = DealFields {
        legacy_id: input.legacy_id,
        name: input.name.trim().to_owned(),
        value: input.value,
        status: input.status,
        contact,
        operator_id: input.operator_id,
        group_id: input.group_id,
        pipeline_id: input.pipeline_id.trim().to_owned(),
        stage_id: input.stage_id.trim().to_owned(),
        origin: input.origin.trim().to_owned(),
        tag_ids: input.tag_ids,
        lost_reason: input.lost_reason,
        lost_reason_obs: input.lost_reason_obs,
        products,
        won_lost_date: None,
        due_date: input.due_date.map(|t| t.0),
        last_stage_changed: Some(now),
        conversation: input.conversation,
        campaign: input.campaign,
        author_type: input.author_type,
        author_id: input.author_id,
        position: input.position,
        focused_counts: input.focused_counts,
        comments: input.comments,
        tasks: input.tasks,
        time_in_stage: BTreeMap::new(),
        custom_fields: input.custom_fields,
        context: input.context,
    };
    let won_lost = Patch::set_or_keep(input.won_lost_date.map(|t| t.0));
    rules::settle(&mut deal, None, won_lost, now)?;
    Ok(deal)
}

/// A deal's fields after a PATCH at `now`: the fields it names (its contact
/// and products read), then the rules.
pub(super) async fn patched(
    store: &dyn Store,
    ws: WorkspaceId,
    before: &DealFields,
    input: DealPatch,
    now: Timestamp,
) -> ApiResult<DealFields> {
    refuse_computed(&input.last_stage_changed, &input.time_in_stage)?;
    let mut deal = before.clone();
    if let Some(contact) = contact_of(store, ws, input.contact_id, input.contact.as_ref()).await? {
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
    macro_rules! patch {
        ($($field:ident),*) => {$( input.$field.apply(&mut deal.$field); )*};
    }
    patch!(
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
    input.due_date.map(|t| t.0).apply(&mut deal.due_date);
    let won_lost = input.won_lost_date.map(|t| t.0);
    rules::settle(&mut deal, Some(before), won_lost, now)?;
    Ok(deal)
}
