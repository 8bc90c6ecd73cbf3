//! Products: the catalog of a workspace. The spec has only `PATCH
//! /v3/products/{id}`; products come in with `crm load`, and `GET /v3/products`
//! and `GET /v3/products/{id}` (extensions) show what a client patches. Deals
//! carry catalog products, and the deal list's `productIds` filter finds them.

use serde::{Deserialize, Serialize};
use validator::Validate;

use crate::auth::Caller;
use crate::domain::catalog;
use crate::error::{ApiError, ApiResult};
use crate::ids::WorkspaceId;
use crate::keys;
use crate::keys::ProductId;
use crate::page::{ListPage, Paging};
use crate::patch::Patch;
use crate::record::{self, Mutation, Personal, Record, Stamps};
use crate::store::{Key, Store};

pub const LIST: &str = "PRODUCT";

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Product {
    pub id: ProductId,
    pub workspace_id: WorkspaceId,
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    pub price: f64,
    #[serde(default, rename = "_id", skip_serializing_if = "Option::is_none")]
    pub legacy_id: Option<String>,
    #[serde(flatten)]
    pub stamps: Stamps,
    pub version: u64,
}

crate::versioned!(Product);

impl catalog::Catalog for Product {
    const WHAT: &'static str = "product";
    const LIST: &'static str = LIST;
    type Id = ProductId;
    fn key_of(workspace_id: WorkspaceId, id: ProductId) -> Key {
        keys::product(workspace_id, id)
    }
    fn partitions(workspace_id: WorkspaceId) -> Vec<String> {
        keys::products(workspace_id)
    }
}

impl Record for Product {
    const EVENTS: Option<&'static str> = Some("product");

    fn event_object(&self) -> serde_json::Value {
        crate::record::as_event_object(ProductView::from(self.clone()))
    }
    const TYPE: &'static str = "Product";
    const PERSONAL: Personal = Personal::none(&["_id", "description", "name"]);
    fn key(&self) -> Key {
        keys::product(self.workspace_id, self.id)
    }
}

/// The spec's Product. `description` is `""` when none was given, so the update
/// response always has the members the spec marks required.
#[derive(Debug, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProductView {
    pub id: String,
    #[serde(rename = "_id", skip_serializing_if = "Option::is_none")]
    pub legacy_id: Option<String>,
    pub name: String,
    pub description: String,
    pub price: f64,
    pub workspace_id: WorkspaceId,
    #[serde(flatten)]
    pub stamps: Stamps,
}

impl From<Product> for ProductView {
    fn from(p: Product) -> Self {
        Self {
            id: p.id.to_string(),
            legacy_id: p.legacy_id,
            name: p.name,
            description: p.description.unwrap_or_default(),
            price: p.price,
            workspace_id: p.workspace_id,
            stamps: p.stamps,
        }
    }
}

/// `PATCH /v3/products/{id}`: `_id`, `name`, `description`, `price`, all optional.
#[derive(Debug, Default, Deserialize, Validate, schemars::JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ProductPatch {
    #[serde(default, rename = "_id")]
    #[validate(length(max = 128))]
    pub legacy_id: Patch<String>,
    #[schemars(with = "String")]
    #[serde(default, deserialize_with = "crate::validate::present")]
    #[validate(
        length(min = 1, max = 128),
        custom(function = "crate::validate::not_blank")
    )]
    pub name: Option<String>,
    #[serde(default)]
    #[validate(length(max = 2000))]
    pub description: Patch<String>,
    #[schemars(with = "f64")]
    #[serde(default, deserialize_with = "crate::validate::present")]
    #[validate(range(min = 0.0, max = 1e12))]
    pub price: Option<f64>,
}

/// A `product` line of `crm load`.
#[derive(Debug, Deserialize, Validate, schemars::JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ProductLine {
    #[validate(range(min = 1, max = 9007199254740991u64))]
    pub id: u64,
    #[validate(length(min = 1, max = 128))]
    pub name: String,
    #[validate(length(max = 2000))]
    pub description: Option<String>,
    #[validate(range(min = 0.0, max = 1e12))]
    pub price: f64,
}

pub async fn get(store: &dyn Store, caller: &Caller, id: ProductId) -> ApiResult<Product> {
    catalog::get(store, caller, id).await
}

pub async fn list(
    store: &dyn Store,
    caller: &Caller,
    paging: Paging,
) -> ApiResult<ListPage<Product>> {
    catalog::list(store, caller, paging).await
}

pub async fn update(
    store: &dyn Store,
    caller: &Caller,
    id: ProductId,
    patch: ProductPatch,
) -> ApiResult<Product> {
    let current: Product = record::find(
        store,
        &keys::product(caller.workspace_id, id),
        true,
        "product",
    )
    .await?;
    let mut product = current.clone();
    patch.legacy_id.apply(&mut product.legacy_id);
    if let Some(name) = patch.name {
        product.name = name.trim().to_owned();
    }
    patch.description.apply(&mut product.description);
    if let Some(price) = patch.price {
        product.price = price;
    }
    let mut m = Mutation::new(caller);
    if !m.update(&current, &mut product)? {
        return Ok(current);
    }
    m.commit(store, "product.update", "product", &id.to_string())
        .await?;
    Ok(product)
}

/// The `crm load` lines of this resource: `product`.
pub fn line_types() -> Vec<crate::load::LineType> {
    vec![crate::load::LineType::of::<ProductLine>()]
}

#[async_trait::async_trait]
impl crate::load::Loadable for ProductLine {
    const TYPE: &'static str = "product";

    async fn load(self, store: &dyn Store, caller: &Caller) -> ApiResult<()> {
        load(store, caller, self).await
    }
}

/// Loads one catalog product (creates it, or replaces it when it changed).
pub async fn load(store: &dyn Store, caller: &Caller, line: ProductLine) -> ApiResult<()> {
    let ws = caller.workspace_id;
    let build = |stored: Option<Product>| Product {
        name: line.name.trim().to_owned(),
        description: line.description.clone(),
        price: line.price,
        ..stored.unwrap_or(Product {
            id: ProductId(line.id),
            workspace_id: ws,
            name: String::new(),
            description: None,
            price: 0.0,
            legacy_id: None,
            stamps: Stamps::new(),
            version: 1,
        })
    };
    catalog::load(store, caller, ProductId(line.id), build, "product.load").await?;
    Ok(())
}

/// The catalog products of these ids, or a 404 naming the first unknown one.
pub async fn require(
    store: &dyn Store,
    workspace_id: WorkspaceId,
    ids: &[u64],
) -> ApiResult<Vec<Product>> {
    let mut unique = ids.to_vec();
    unique.sort_unstable();
    unique.dedup();
    let mut found = Vec::new();
    for chunk in unique.chunks(crate::store::MAX_BATCH_GET) {
        let keys: Vec<Key> = chunk
            .iter()
            .map(|&id| keys::product(workspace_id, ProductId(id)))
            .collect();
        for item in store.batch_get(&keys).await? {
            found.push(record::from_item::<Product>(item)?);
        }
    }
    if let Some(missing) = ids.iter().find(|id| !found.iter().any(|p| p.id.0 == **id)) {
        return Err(ApiError::not_found(&format!("product {missing}")));
    }
    Ok(found)
}

/// The stored items of item_shapes/products.json read back (domain::item_shapes).
#[cfg(test)]
mod shapes {
    use crate::domain::item_shapes::{round_trip, texts_declared};

    #[test]
    fn products_keep_their_shape() {
        round_trip::<crate::domain::products::Product>("Product");
        texts_declared::<crate::domain::products::Product>();
    }
}
