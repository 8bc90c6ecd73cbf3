//! Webhooks: a workspace's events POSTed to the endpoints it registers,
//! signed per the Standard Webhooks specification, at least once, retried
//! for about three days, every attempt kept.
//!
//! - [`record`]: the endpoint (`/v3/webhooks`), its secrets and views;
//! - [`endpoints`]: create, read, change, delete, rotate the secret;
//! - [`dispatch`]: events to deliveries (from the table's stream on AWS,
//!   from the log locally);
//! - [`delivery`]: a delivery, its attempts and its versioned writes;
//! - `deliver`: a run of a delivery's message (an attempt each: `attempt`),
//!   at most a few at a time per endpoint (`slots`);
//! - [`log`]: the delivery log, a retry, a replay, a ping.
//!
//! The signing, the address checks and the POST itself know no resource:
//! they are `crate::outbound`.

mod attempt;
mod deliver;
pub mod delivery;
pub mod dispatch;
pub mod endpoints;
pub mod log;
pub mod record;
mod slots;

pub use deliver::deliver;
pub use delivery::{Attempt, Delivery, DeliveryStatus, KIND};
pub use dispatch::{dispatch, follow};
pub use log::{DeliveryPage, DeliveryQuery, DeliveryView, Replay, ReplayRequest};
pub use record::{
    CreatedWebhook, RotatedSecret, Webhook, WebhookCreate, WebhookPatch, WebhookView,
};
