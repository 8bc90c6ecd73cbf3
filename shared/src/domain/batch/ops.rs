//! The operations each resource takes in a batch, each applied by the domain
//! function of its single route: `create`, `update`, `upsert` where the
//! resource has a unique key (a contact's phone, e-mail or `externalId`; a
//! tag's name), `delete` where it has a delete.

use serde::Deserialize;
use serde_json::Value;

use super::{Applied, BatchAnswer, BatchRequest, run};
use crate::auth::Caller;
use crate::domain::contacts::{self, ContactPatch, ContactV3, Creation};
use crate::domain::deals::{self, DealCreate, DealPatch, DealView};
use crate::domain::products::{self, ProductPatch, ProductView};
use crate::domain::tags::{self, TagCreate, TagPatch, TagV3};
use crate::keys::{DealId, ProductId, TagId};
use crate::store::Store;

/// What a contacts batch does with an operation.
#[derive(Debug, Clone, Copy, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum ContactOp {
    /// As `POST /v3/contacts`: `data`.
    Create,
    /// As `PATCH /v3/contacts/{id}`: `id`, `data`.
    Update,
    /// Updates the contact found `by` its phone (the default), e-mail or
    /// `externalId` in `data`, or creates it.
    Upsert,
}

/// `POST /v3/contacts/batch`.
pub async fn contacts(
    store: &dyn Store,
    caller: &Caller,
    request: BatchRequest<ContactOp, ContactPatch>,
) -> BatchAnswer<ContactV3> {
    run(store, request, contact_claims, |op| async move {
        let (contact, created) = match op.op {
            ContactOp::Create => {
                let input = op.no_id()?.no_by()?.data()?;
                (
                    contacts::create(store, caller, input, Creation::Api).await?,
                    true,
                )
            }
            ContactOp::Update => {
                let (id, input) = (op.no_by()?.id()?, op.data()?);
                (contacts::update(store, caller, id, input).await?, false)
            }
            ContactOp::Upsert => {
                let input = op.no_id()?.data()?;
                contacts::upsert(store, caller, op.by.unwrap_or_default(), input).await?
            }
        };
        Ok(Applied::new(contact.id, created, contact.into()))
    })
    .await
}

/// What a tags batch does with an operation.
#[derive(Debug, Clone, Copy, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum TagOp {
    /// As `POST /v3/tags`: `data`.
    Create,
    /// As `PATCH /v3/tags/{id}`: `id`, `data`.
    Update,
    /// Updates the tag of `data`'s name (without case or accents), or
    /// creates it.
    Upsert,
    /// As `DELETE /v3/tags/{id}`: `id`; the result shows the tag as it was.
    Delete,
}

/// A tag's fields: a create's (`create`, `upsert`) or a PATCH's (`update`).
#[derive(schemars::JsonSchema)]
#[serde(untagged)]
pub enum TagData {
    Create(TagCreate),
    Update(TagPatch),
}

/// `POST /v3/tags/batch`.
pub async fn tags(
    store: &dyn Store,
    caller: &Caller,
    request: BatchRequest<TagOp, TagData>,
) -> BatchAnswer<TagV3> {
    run(store, request, tag_claims, |op| async move {
        op.no_by()?;
        let (tag, created) = match op.op {
            TagOp::Create => (
                tags::create(store, caller, op.no_id()?.data()?).await?,
                true,
            ),
            TagOp::Update => {
                let (id, patch) = (op.id()?, op.data()?);
                (tags::update(store, caller, TagId(id), patch).await?, false)
            }
            TagOp::Upsert => tags::upsert(store, caller, op.no_id()?.data()?).await?,
            TagOp::Delete => (
                tags::delete(store, caller, TagId(op.no_data()?.id()?)).await?,
                false,
            ),
        };
        Ok(Applied::new(tag.id, created, tag.into()))
    })
    .await
}

/// What a deals batch does with an operation.
#[derive(Debug, Clone, Copy, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum DealOp {
    /// As `POST /v3/deals`: `data`.
    Create,
    /// As `PATCH /v3/deals/{id}`: `id`, `data`.
    Update,
}

/// A deal's fields: a create's or a PATCH's.
#[derive(schemars::JsonSchema)]
#[serde(untagged)]
pub enum DealData {
    Create(DealCreate),
    Update(DealPatch),
}

/// `POST /v3/deals/batch`.
pub async fn deals(
    store: &dyn Store,
    caller: &Caller,
    request: BatchRequest<DealOp, DealData>,
) -> BatchAnswer<DealView> {
    run(store, request, id_claims, |op| async move {
        op.no_by()?;
        let (deal, created) = match op.op {
            DealOp::Create => (
                deals::create(store, caller, op.no_id()?.data()?).await?,
                true,
            ),
            DealOp::Update => {
                let (id, patch) = (op.id()?, op.data()?);
                (
                    deals::update(store, caller, DealId(id), patch).await?,
                    false,
                )
            }
        };
        Ok(Applied::new(deal.id, created, deal.into()))
    })
    .await
}

/// What a products batch does with an operation (products are loaded, not
/// created, through the API: `crm load`).
#[derive(Debug, Clone, Copy, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum ProductOp {
    /// As `PATCH /v3/products/{id}`: `id`, `data`.
    Update,
}

/// `POST /v3/products/batch`.
pub async fn products(
    store: &dyn Store,
    caller: &Caller,
    request: BatchRequest<ProductOp, ProductPatch>,
) -> BatchAnswer<ProductView> {
    run(store, request, id_claims, |op| async move {
        let ProductOp::Update = op.op;
        let (id, patch) = (op.no_by()?.id()?, op.data()?);
        let product = products::update(store, caller, ProductId(id), patch).await?;
        Ok(Applied::new(product.id, false, product.into()))
    })
    .await
}

/// The record an operation names by id (`update`, `delete`).
fn id_claims(raw: &Value) -> Vec<String> {
    match raw.get("id") {
        Some(Value::String(id)) => vec![format!("id:{id}")],
        Some(Value::Number(id)) => vec![format!("id:{id}")],
        _ => Vec::new(),
    }
}

/// A contact's id, and the values that are one contact's only: each phone
/// (its last eight digits, which every way of writing it shares), the
/// e-mail without case, the `externalId`.
fn contact_claims(raw: &Value) -> Vec<String> {
    let mut claims = id_claims(raw);
    let data = &raw["data"];
    let phones = data["phone"].as_str().into_iter().chain(
        data["phones"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str),
    );
    for phone in phones {
        let digits: String = phone.chars().filter(char::is_ascii_digit).collect();
        claims.push(format!(
            "phone:{}",
            &digits[digits.len().saturating_sub(8)..]
        ));
    }
    if let Some(email) = data["email"].as_str() {
        claims.push(format!("email:{}", email.trim().to_lowercase()));
    }
    if let Some(external) = data["externalId"].as_str() {
        claims.push(format!("ext:{}", external.trim()));
    }
    claims
}

/// A tag's id, and its name as names compare (without case or accents).
fn tag_claims(raw: &Value) -> Vec<String> {
    let mut claims = id_claims(raw);
    if let Some(name) = raw["data"]["name"].as_str() {
        claims.push(format!("name:{}", crate::text::fold(name)));
    }
    claims
}
