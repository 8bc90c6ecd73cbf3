//! Checkout links: create, read, deactivate, and (admin) complete into an order.

use axum::Json;
use axum::extract::State;
use shared::auth::Caller;
use shared::domain::billing::{
    self, CheckoutLinkCreate, CheckoutLinkView, CompleteCheckout, OrderView,
};
use shared::http::{AppState, Body, Created, InPath, MaybeBody, Reply, created};

pub async fn create_link(
    State(s): State<AppState>,
    caller: Caller,
    Body(input): Body<CheckoutLinkCreate>,
) -> Result<Created<CheckoutLinkView>, shared::ApiError> {
    let link = billing::create(s.store.as_ref(), &caller, input).await?;
    Ok(created(CheckoutLinkView::from(link)))
}

pub async fn get_link(
    State(s): State<AppState>,
    caller: Caller,
    InPath(code): InPath<CheckoutCode>,
) -> Reply<CheckoutLinkView> {
    Ok(Json(
        billing::get(s.store.as_ref(), &caller, &code).await?.into(),
    ))
}

pub async fn deactivate_link(
    State(s): State<AppState>,
    caller: Caller,
    InPath(code): InPath<CheckoutCode>,
) -> Reply<CheckoutLinkView> {
    Ok(Json(
        billing::deactivate(s.store.as_ref(), &caller, &code)
            .await?
            .into(),
    ))
}

/// Operators only (the payment provider's callback): 201 with the order.
pub async fn complete_link(
    State(s): State<AppState>,
    caller: Caller,
    InPath(code): InPath<CheckoutCode>,
    MaybeBody(input): MaybeBody<CompleteCheckout>,
) -> Result<Created<OrderView>, shared::ApiError> {
    let order =
        billing::complete(s.store.as_ref(), &caller, &code, input.unwrap_or_default()).await?;
    Ok(created(OrderView::from(order)))
}

shared::text_path_param!(CheckoutCode, "code");
