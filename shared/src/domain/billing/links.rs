//! Checkout links: create, read, deactivate, complete (see the module above).

use serde::{Deserialize, Serialize};
use validator::Validate;

use super::orders::{LIST, Order};
use crate::auth::Caller;
use crate::error::{ApiError, ApiResult};
use crate::ids::{self, Timestamp, WorkspaceId};
use crate::keys;
use crate::record::{self, Mutation, Personal, Record, Stamps, with_fresh_id};
use crate::store::{Key, Store};

const WHAT: &str = "checkout link";
pub const DEFAULT_HOURS: u32 = 72;
/// Days a link's record stays after its expiry before the time to live removes it.
pub const RETENTION_DAYS: i64 = 90;

/// What is stored; `expired` is computed on read.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum LinkStatus {
    Open,
    Completed,
    Expired,
    Deactivated,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CheckoutLink {
    pub code: String,
    pub workspace_id: WorkspaceId,
    pub plan: String,
    pub seats: u32,
    pub url: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub success_url: Option<String>,
    pub status: LinkStatus,
    #[schemars(with = "crate::ids::Timestamp")]
    #[serde(with = "ids::ts_format")]
    pub expires_at: Timestamp,
    /// Epoch seconds when DynamoDB may remove the record (none once completed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub order_id: Option<u64>,
    #[schemars(with = "Option<crate::ids::Timestamp>")]
    #[serde(
        default,
        with = "ids::ts_format::option",
        skip_serializing_if = "Option::is_none"
    )]
    pub completed_at: Option<Timestamp>,
    #[schemars(with = "Option<crate::ids::Timestamp>")]
    #[serde(
        default,
        with = "ids::ts_format::option",
        skip_serializing_if = "Option::is_none"
    )]
    pub deactivated_at: Option<Timestamp>,
    pub created_by: String,
    #[serde(flatten)]
    pub stamps: Stamps,
    pub version: u64,
}

crate::versioned!(CheckoutLink);

impl Record for CheckoutLink {
    const EVENTS: Option<&'static str> = Some("checkoutLink");

    fn event_object(&self) -> serde_json::Value {
        crate::record::as_event_object(CheckoutLinkView::from(self.clone()))
    }
    const TYPE: &'static str = "CheckoutLink";
    const PERSONAL: Personal = Personal::none(&[
        "code",
        "completedAt",
        "createdBy",
        "deactivatedAt",
        "expiresAt",
        "plan",
        "status",
        "successUrl",
        "url",
    ]);
    fn key(&self) -> Key {
        keys::checkout_link(self.workspace_id, &self.code)
    }
}

impl CheckoutLink {
    /// The status a reader sees at `now`: an open link past its expiry is expired.
    pub fn status_at(&self, now: Timestamp) -> LinkStatus {
        match self.status {
            LinkStatus::Open if now >= self.expires_at => LinkStatus::Expired,
            status => status,
        }
    }
}

#[derive(Debug, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CheckoutLinkView {
    pub code: String,
    pub workspace_id: WorkspaceId,
    pub plan: String,
    pub seats: u32,
    pub url: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub success_url: Option<String>,
    pub status: LinkStatus,
    #[schemars(with = "crate::ids::Timestamp")]
    #[serde(with = "ids::ts_format")]
    pub expires_at: Timestamp,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub order_id: Option<String>,
    #[schemars(with = "Option<crate::ids::Timestamp>")]
    #[serde(
        default,
        with = "ids::ts_format::option",
        skip_serializing_if = "Option::is_none"
    )]
    pub completed_at: Option<Timestamp>,
    #[schemars(with = "Option<crate::ids::Timestamp>")]
    #[serde(
        default,
        with = "ids::ts_format::option",
        skip_serializing_if = "Option::is_none"
    )]
    pub deactivated_at: Option<Timestamp>,
    #[serde(flatten)]
    pub stamps: Stamps,
}

impl From<CheckoutLink> for CheckoutLinkView {
    fn from(l: CheckoutLink) -> Self {
        Self {
            status: l.status_at(ids::now()),
            code: l.code,
            workspace_id: l.workspace_id,
            plan: l.plan,
            seats: l.seats,
            url: l.url,
            success_url: l.success_url,
            expires_at: l.expires_at,
            order_id: l.order_id.map(|id| id.to_string()),
            completed_at: l.completed_at,
            deactivated_at: l.deactivated_at,
            stamps: l.stamps,
        }
    }
}

/// `POST /v3/workspaces/checkout-link`.
#[derive(Debug, Deserialize, Validate, schemars::JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CheckoutLinkCreate {
    /// The plan's identifier (`pro`, `enterprise-2026`): lowercase letters,
    /// digits and dashes.
    #[validate(length(min = 1, max = 64), custom(function = "crate::validate::slug"))]
    pub plan: String,
    #[validate(range(min = 1, max = 10000))]
    pub seats: Option<u32>,
    #[validate(range(min = 1, max = 720))]
    pub expires_in_hours: Option<u32>,
    #[validate(
        length(min = 1, max = 2048),
        custom(function = "crate::validate::web_url")
    )]
    #[schemars(pattern(crate::validate::WEB_URL_PATTERN))]
    pub success_url: Option<String>,
}

/// `POST /v3/workspaces/checkout-link/{code}/complete`: what the payment
/// provider reports, all optional.
#[derive(Debug, Default, Deserialize, Validate, schemars::JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CompleteCheckout {
    #[validate(range(min = 0.0, max = 1e12))]
    pub amount: Option<f64>,
    /// ISO 4217, such as `USD`.
    #[validate(length(equal = 3), custom(function = "crate::validate::currency"))]
    pub currency: Option<String>,
    #[validate(length(min = 1, max = 128))]
    pub provider_reference: Option<String>,
}

pub async fn create(
    store: &dyn Store,
    caller: &Caller,
    input: CheckoutLinkCreate,
) -> ApiResult<CheckoutLink> {
    let stamps = Stamps::new();
    let hours = input.expires_in_hours.unwrap_or(DEFAULT_HOURS);
    let expires_at = stamps.created_at + chrono::Duration::hours(hours.into());
    let code = ids::unguessable();
    let link = CheckoutLink {
        url: format!("{}/{code}", crate::config::checkout_base_url()),
        code: code.clone(),
        workspace_id: caller.workspace_id,
        plan: input.plan,
        seats: input.seats.unwrap_or(1),
        success_url: input.success_url,
        status: LinkStatus::Open,
        expires_at,
        ttl: Some(ids::epoch_seconds(&expires_at) + RETENTION_DAYS * 86_400),
        order_id: None,
        completed_at: None,
        deactivated_at: None,
        created_by: caller.token_id().await?.to_owned(),
        stamps,
        version: 1,
    };
    let mut m = Mutation::new(caller);
    m.create(&link)?.claim(
        keys::checkout_code(&code),
        &caller.workspace_id.to_string(),
        ApiError::conflict("checkout code clash; retry"),
    );
    m.commit(store, "checkoutLink.create", "checkoutLink", &code)
        .await?;
    Ok(link)
}

pub async fn get(store: &dyn Store, caller: &Caller, code: &str) -> ApiResult<CheckoutLink> {
    if !ids::is_unguessable(code) {
        return Err(ApiError::not_found(WHAT));
    }
    record::find(
        store,
        &keys::checkout_link(caller.workspace_id, code),
        false,
        WHAT,
    )
    .await
}

/// `DELETE`: an open (or expired) link is deactivated; a deactivated one is
/// answered as it is; a completed one is a 409.
pub async fn deactivate(store: &dyn Store, caller: &Caller, code: &str) -> ApiResult<CheckoutLink> {
    if !ids::is_unguessable(code) {
        return Err(ApiError::not_found(WHAT));
    }
    let key = keys::checkout_link(caller.workspace_id, code);
    let current: CheckoutLink = record::find(store, &key, true, WHAT).await?;
    match current.status {
        LinkStatus::Completed => {
            return Err(ApiError::conflict(
                "a completed checkout link cannot be deactivated",
            ));
        }
        LinkStatus::Deactivated => return Ok(current),
        LinkStatus::Open | LinkStatus::Expired => {}
    }
    let mut link = current.clone();
    link.status = LinkStatus::Deactivated;
    link.deactivated_at = Some(ids::now());
    let mut m = Mutation::new(caller);
    m.update(&current, &mut link)?;
    m.commit(store, "checkoutLink.deactivate", "checkoutLink", code)
        .await?;
    Ok(link)
}

/// Completes an open link and creates its order in one transaction (admin
/// scope: the payment provider's callback). Again: the same order.
pub async fn complete(
    store: &dyn Store,
    caller: &Caller,
    code: &str,
    input: CompleteCheckout,
) -> ApiResult<Order> {
    caller.require_admin().await?;
    if !ids::is_unguessable(code) {
        return Err(ApiError::not_found(WHAT));
    }
    let owner = store.get(&keys::checkout_code(code), true).await?;
    let Some(ws) = owner
        .as_ref()
        .and_then(|i| i.get("owner"))
        .and_then(|v| v.as_str())
        .and_then(|v| v.parse::<u64>().ok())
        .map(WorkspaceId)
    else {
        return Err(ApiError::not_found(WHAT));
    };
    // The change is the link's workspace's: its audit entry goes there.
    let acting = caller.acting_in(ws);
    let current: CheckoutLink =
        record::find(store, &keys::checkout_link(ws, code), true, WHAT).await?;
    let now = ids::now();
    match current.status_at(now) {
        LinkStatus::Completed => {
            let id = current.order_id.unwrap_or_default();
            return record::find(store, &keys::order(ws, id), true, "order").await;
        }
        LinkStatus::Deactivated => {
            return Err(ApiError::conflict("the checkout link was deactivated"));
        }
        LinkStatus::Expired => return Err(ApiError::conflict("the checkout link expired")),
        LinkStatus::Open => {}
    }
    let done = with_fresh_id(|id| {
        let order = Order {
            id,
            workspace_id: ws,
            checkout_code: code.to_owned(),
            plan: current.plan.clone(),
            seats: current.seats,
            amount: input.amount,
            currency: input.currency.as_ref().map(|c| c.to_ascii_uppercase()),
            provider_reference: input.provider_reference.clone(),
            status: "paid".to_owned(),
            stamps: Stamps::new(),
        };
        let mut link = current.clone();
        link.status = LinkStatus::Completed;
        link.completed_at = Some(now);
        link.order_id = Some(id);
        link.ttl = None;
        let acting = &acting;
        let current = &current;
        async move {
            let mut m = Mutation::new(acting);
            m.update(current, &mut link)?;
            m.create(&order)?.count_in(ws, LIST, 1);
            m.commit(store, "checkoutLink.complete", "checkoutLink", code)
                .await?;
            Ok(order)
        }
    })
    .await;
    match done {
        // A concurrent completion won: answer its order.
        Err(e) if e.status == http::StatusCode::CONFLICT => {
            let link: CheckoutLink =
                record::find(store, &keys::checkout_link(ws, code), true, WHAT).await?;
            match link.order_id {
                Some(id) => record::find(store, &keys::order(ws, id), true, "order").await,
                None => Err(e),
            }
        }
        other => other,
    }
}
