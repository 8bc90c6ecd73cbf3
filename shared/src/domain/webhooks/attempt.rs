//! One attempt of a delivery: its body read, signed, POSTed to the
//! endpoint's address (checked at each attempt), and what came of it.

use std::time::Duration;

use super::delivery::{Attempt, Delivery, DeliveryStatus};
use super::record::Webhook;
use crate::error::ApiResult;
use crate::ids::{self, Timestamp};
use crate::keys;
use crate::outbound::{self, post, sign, target};
use crate::record::{self, StoredEvent};
use crate::store::Store;

/// What an attempt came to.
pub(super) enum Outcome {
    /// A POST was made, or refused before it (an address, no connection).
    Tried(Attempt, Option<post::Answer>),
    /// There is nothing to send: the event expired.
    Gone(String),
}

impl Outcome {
    /// Leaves out the answer's body, which is then not kept: an erasure came
    /// while the attempt was under way, and the answer may echo what it erased.
    pub(super) fn forget_answer(&mut self) {
        if let Outcome::Tried(attempt, _) = self {
            attempt.response = None;
        }
    }
}

/// The body of `delivery`: its event as the feed shows it, or a ping's.
async fn body_of(store: &dyn Store, delivery: &Delivery) -> ApiResult<Option<String>> {
    if let Some(payload) = &delivery.payload {
        return Ok(Some(payload.clone()));
    }
    let Some(cursor) = &delivery.event_cursor else {
        return Ok(None);
    };
    // Strongly consistent: an attempt claimed after an erasure scrubbed the
    // event sends the scrubbed event, never a copy read from before it.
    let key = keys::event_in(delivery.workspace_id, delivery.event_shard, cursor);
    let stored: Option<StoredEvent> = record::get(store, &key, true).await?;
    Ok(stored
        .filter(|e| !e.expired(ids::now()))
        .map(|e| serde_json::to_string(&e.event).unwrap_or_default()))
}

/// One signed POST of `delivery` to `webhook`.
pub(super) async fn attempt(
    store: &dyn Store,
    settings: &outbound::Settings,
    webhook: &Webhook,
    delivery: &Delivery,
) -> Outcome {
    let at = ids::now();
    let number = delivery.attempt_count + 1;
    let failed = |error: String, latency: Duration| {
        Outcome::Tried(
            Attempt {
                number,
                at,
                status_code: None,
                error: Some(error),
                latency_ms: latency.as_millis() as u64,
                response: None,
            },
            None,
        )
    };
    let body = match body_of(store, delivery).await {
        Ok(Some(body)) => body,
        Ok(None) => return Outcome::Gone("the event expired (events are kept 30 days)".into()),
        Err(e) => {
            return failed(
                format!("the event could not be read: {}", e.message),
                Duration::ZERO,
            );
        }
    };
    send(settings, webhook, delivery, body, at, number)
        .await
        .unwrap_or_else(|(e, l)| failed(e, l))
}

/// Signs and POSTs `body`: the attempt, or why none was made and how long that took.
async fn send(
    settings: &outbound::Settings,
    webhook: &Webhook,
    delivery: &Delivery,
    body: String,
    at: Timestamp,
    number: u32,
) -> Result<Outcome, (String, Duration)> {
    let started = std::time::Instant::now();
    let refused = |e: String| (e, started.elapsed());
    let target = target::parse(&webhook.url, settings.allow_private).map_err(refused)?;
    let addr = target::resolve(&target, settings.allow_private)
        .await
        .map_err(refused)?;
    // The receiver checks the timestamp against its own clock: the real one.
    let timestamp = chrono::Utc::now().timestamp();
    let signature = sign::signature(
        &webhook.signing_secrets(ids::now()),
        &delivery.event_id,
        timestamp,
        &body,
    );
    let headers = [
        ("webhook-id", delivery.event_id.clone()),
        ("webhook-timestamp", timestamp.to_string()),
        ("webhook-signature", signature),
    ];
    match post::post(&target, addr, &headers, body, settings.timeout).await {
        Ok(answer) => Ok(Outcome::Tried(
            Attempt {
                number,
                at,
                status_code: Some(answer.status),
                error: None,
                latency_ms: answer.latency.as_millis() as u64,
                response: Some(answer.body.clone()).filter(|b| !b.is_empty()),
            },
            Some(answer),
        )),
        Err(failure) => Err((failure.error, failure.latency)),
    }
}

/// Sends `delivery` once, now, with no retry (a ping): the delivery as it ended.
pub(super) async fn send_once(
    settings: &outbound::Settings,
    webhook: &Webhook,
    mut delivery: Delivery,
) -> Delivery {
    let at = ids::now();
    let body = delivery.payload.clone().unwrap_or_default();
    let outcome = send(settings, webhook, &delivery, body, at, 1).await;
    let attempt = match outcome {
        Ok(Outcome::Tried(attempt, _)) => attempt,
        Ok(Outcome::Gone(reason)) | Err((reason, _)) => Attempt {
            number: 1,
            at,
            status_code: None,
            error: Some(reason),
            latency_ms: 0,
            response: None,
        },
    };
    let ok = attempt.status_code.is_some_and(|s| (200..300).contains(&s));
    delivery.record(attempt);
    if ok {
        delivery.stop(DeliveryStatus::Succeeded, None);
    } else {
        delivery.stop(DeliveryStatus::Failed, Some("a ping is not retried".into()));
    }
    delivery
}
