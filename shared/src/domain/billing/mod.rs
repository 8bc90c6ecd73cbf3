//! Billing: checkout links and the orders they become.
//!
//! - `POST /v3/workspaces/checkout-link` makes a link to buy or change the
//!   workspace's plan: `{ plan, seats?, expiresInHours?, successUrl? }`. It
//!   answers an unguessable `code` (142 bits), the `url`
//!   (`CRM_CHECKOUT_BASE_URL/<code>`), `expiresAt` (default 72 hours, 1 to 720)
//!   and a `status`: `open`, `completed`, `expired` (an open link past
//!   `expiresAt`, computed on every read) or `deactivated`.
//! - `GET /v3/workspaces/checkout-link/{code}` shows it; another workspace's
//!   code is a 404.
//! - `DELETE` deactivates it. The record stays (for the audit) until DynamoDB's
//!   time to live removes it, 90 days after its expiry; a completed link cannot
//!   be deactivated (409).
//! - `POST /v3/workspaces/checkout-link/{code}/complete` (an extension, admin
//!   scope: what a payment provider's callback does) completes an open link and
//!   creates its order, in one transaction. Completing it again answers the
//!   same order. A completed link has no expiry and keeps its order's id.
//! - `GET /v3/orders`: the workspace's orders, newest first.

mod links;
mod orders;

pub use links::{
    CheckoutLink, CheckoutLinkCreate, CheckoutLinkView, CompleteCheckout, LinkStatus, complete,
    create, deactivate, get,
};
pub use orders::{LIST, Order, OrderView, list};

/// The stored items of item_shapes/billing.json read back (domain::item_shapes).
#[cfg(test)]
mod shapes {
    use crate::domain::item_shapes::{round_trip, texts_declared};

    #[test]
    fn checkout_links_and_orders_keep_their_shape() {
        round_trip::<crate::domain::billing::CheckoutLink>("CheckoutLink");
        round_trip::<crate::domain::billing::CheckoutLink>("CheckoutLinkCompleted");
        texts_declared::<crate::domain::billing::CheckoutLink>();
        round_trip::<crate::domain::billing::Order>("Order");
        texts_declared::<crate::domain::billing::Order>();
    }
}
