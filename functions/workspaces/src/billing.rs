//! Checkout links: create, read, deactivate, and (admin) complete into an order.

use axum::Json;
use shared::domain::billing::{
    self, CheckoutLinkCreate, CheckoutLinkView, CompleteCheckout, OrderView,
};
use shared::http::{Body, Created, Ctx, InPath, MaybeBody, Reply, created};

pub async fn create_link(
    cx: Ctx,
    Body(input): Body<CheckoutLinkCreate>,
) -> Result<Created<CheckoutLinkView>, shared::ApiError> {
    let link = billing::create(cx.store(), &cx.caller, input).await?;
    Ok(created(CheckoutLinkView::from(link)))
}

pub async fn get_link(cx: Ctx, InPath(code): InPath<CheckoutCode>) -> Reply<CheckoutLinkView> {
    Ok(Json(
        billing::get(cx.store(), &cx.caller, &code).await?.into(),
    ))
}

pub async fn deactivate_link(
    cx: Ctx,
    InPath(code): InPath<CheckoutCode>,
) -> Reply<CheckoutLinkView> {
    Ok(Json(
        billing::deactivate(cx.store(), &cx.caller, &code)
            .await?
            .into(),
    ))
}

/// Operators only (the payment provider's callback): 201 with the order.
pub async fn complete_link(
    cx: Ctx,
    InPath(code): InPath<CheckoutCode>,
    MaybeBody(input): MaybeBody<CompleteCheckout>,
) -> Result<Created<OrderView>, shared::ApiError> {
    let order = billing::complete(cx.store(), &cx.caller, &code, input.unwrap_or_default()).await?;
    Ok(created(OrderView::from(order)))
}

shared::text_path_param!(CheckoutCode, "code");
