//! Orders: what a completed checkout link becomes. Listed newest first.

use serde::{Deserialize, Serialize};

use crate::auth::Caller;
use crate::error::ApiResult;
use crate::ids::WorkspaceId;
use crate::keys;
use crate::page::{ListPage, Paging, counted_page};
use crate::record::{Personal, Record, Stamps};
use crate::store::{Index, Key, Query, SkRange, Store};

/// The counter behind `totalCount`.
pub const LIST: &str = "ORDER";

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Order {
    pub id: u64,
    pub workspace_id: WorkspaceId,
    pub checkout_code: String,
    pub plan: String,
    pub seats: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub amount: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub currency: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider_reference: Option<String>,
    /// `paid`: an order exists once its checkout completed.
    pub status: String,
    #[serde(flatten)]
    pub stamps: Stamps,
}

impl Record for Order {
    const EVENTS: Option<&'static str> = Some("order");

    fn event_object(&self) -> serde_json::Value {
        crate::record::as_event_object(OrderView::from(self.clone()))
    }
    const TYPE: &'static str = "Order";
    const PERSONAL: Personal = Personal::none(&[
        "checkoutCode",
        "currency",
        "plan",
        "providerReference",
        "status",
    ]);
    fn key(&self) -> Key {
        keys::order(self.workspace_id, self.id)
    }
}

#[derive(Debug, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct OrderView {
    pub id: String,
    pub workspace_id: WorkspaceId,
    pub checkout_code: String,
    pub plan: String,
    pub seats: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub amount: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub currency: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub provider_reference: Option<String>,
    pub status: String,
    #[serde(flatten)]
    pub stamps: Stamps,
}

impl From<Order> for OrderView {
    fn from(o: Order) -> Self {
        Self {
            id: o.id.to_string(),
            workspace_id: o.workspace_id,
            checkout_code: o.checkout_code,
            plan: o.plan,
            seats: o.seats,
            amount: o.amount,
            currency: o.currency,
            provider_reference: o.provider_reference,
            status: o.status,
            stamps: o.stamps,
        }
    }
}

/// `GET /v3/orders`: newest first; one Query and the counter.
pub async fn list(
    store: &dyn Store,
    caller: &Caller,
    paging: Paging,
) -> ApiResult<ListPage<Order>> {
    let ws = caller.workspace_id;
    let query = Query::new(Index::TABLE, keys::orders(ws), SkRange::All).backward();
    counted_page(store, query, paging, keys::counter(ws, LIST)).await
}
