//! A run of a delivery's message ([`super::delivery`] is the record).
//!
//! A delivery is a job of the delivery queue (`webhookDelivery`, its id
//! `<webhook>/<delivery>`). A run of it:
//! 1. reads the delivery; one already done is left; one not yet due is sent
//!    back to the queue for the rest of its wait (SQS holds a message 15
//!    minutes at most); one held by a sender (`sending`) is sent back until
//!    that sender's claim lapses, as a message that names the claim (see
//!    below); then it reads the endpoint, its health and its owner's token
//!    record (one BatchGetItem): a delivery whose endpoint's owner was
//!    revoked or expired is failed and the endpoint disabled, and one of a
//!    type its owner does not read is failed, nothing sent either way;
//! 2. takes one of the endpoint's delivery slots (at most
//!    `CRM_WEBHOOK_CONCURRENCY` deliveries to one endpoint at a time; none
//!    free: back to the queue in a second), and claims the delivery with a
//!    lease, conditional on its version, so two runs of one message never
//!    both send;
//! 3. signs and POSTs the event, records the attempt, and schedules the next
//!    one (the greater of the schedule's wait and a 429's or 503's
//!    `Retry-After`), or stops: 2xx, `410 Gone` (which disables the
//!    endpoint), the schedule run out, or every attempt failing for
//!    `CRM_WEBHOOK_DISABLE_AFTER` (which disables it too).
//!
//! Every retry of an event carries the same `webhook-id` (the event's id), so
//! a receiver drops what it already has.
//!
//! A sender killed during its attempt (a crash, `kill -9`, a Lambda timeout)
//! leaves the delivery `sending` under its claim. Whatever message finds it
//! so cannot tell a dead sender from a live one, so it comes back once the
//! claim lapses, naming it (`<webhook>/<delivery>/<lease>`): if that claim is
//! still there, its sender died and this run takes the delivery over; if it
//! ended, the run that ended it queued what follows, and this message is
//! done (so a duplicate message does not live on beside the delivery's own).
//!
//! Every write of a delivery is conditioned on the version read. An erasure
//! moves the version when it drops the answers kept on a delivery
//! (`contacts::erase`): a claim from an earlier read is made again on what
//! the erasure wrote, and an attempt that was under way records itself on
//! it without its answer (which may echo what was erased).

use std::time::Duration;

use super::attempt::{Outcome, attempt};
use super::delivery::{Delivery, DeliveryStatus, read, save};
use super::record::{Health, Webhook};
use super::{endpoints, slots};
use crate::error::{ApiError, ApiResult};
use crate::ids::{self, Timestamp, WorkspaceId};
use crate::keys;
use crate::outbound;
use crate::queue::{JobMessage, JobQueue};
use crate::record::{from_item, to_item};
use crate::store::{Item, Key, Store, Write};

/// A sender's lease on a delivery lasts the attempt's timeout and this.
const LEASE_MARGIN: Duration = Duration::from_secs(15);

/// A message that waits for a claim to lapse comes back this long after it.
const LAPSE_MARGIN: Duration = Duration::from_secs(1);

/// Writes of one run that may meet another's (a claim, an erasure) and are
/// made again on the delivery read again.
const TRIES: usize = 5;

/// The claim on a delivery as a run read it before one of its writes failed:
/// a claim that has changed since is another run's.
#[derive(Clone, Copy)]
struct Claimed {
    lease_until: Option<Timestamp>,
}

/// One run of a delivery's message (see the module's documentation).
pub async fn deliver(
    store: &dyn Store,
    queue: &dyn JobQueue,
    settings: &outbound::Settings,
    message: &JobMessage,
) -> ApiResult<()> {
    let ws = message.workspace_id;
    let named = || ApiError::bad_request("a delivery message names `<webhook>/<delivery>`");
    let (webhook_id, rest) = message.job_id.split_once('/').ok_or_else(named)?;
    // `<delivery>/<lease>`: a run that waited for the claim ending then.
    let (id, awaited) = match rest.split_once('/') {
        Some((id, lease)) => (id, Some(lease.parse::<i64>().map_err(|_| named())?)),
        None => (rest, None),
    };
    let mut raced: Option<Claimed> = None;
    let mut tries = 0;
    let (webhook, health, mut delivery, slot) = loop {
        tries += 1;
        if tries > TRIES {
            return Err(ApiError::unavailable(
                "the delivery kept changing; its message runs again",
            ));
        }
        let Some(mut delivery) = read(store, ws, webhook_id, id).await? else {
            return Ok(()); // expired, or its endpoint deleted
        };
        let now = ids::now();
        let lease = delivery.lease_until;
        match delivery.status {
            DeliveryStatus::Succeeded | DeliveryStatus::Failed => return Ok(()),
            // Claimed by another run as this one tried: that run sends it,
            // and its own message stays until it is done.
            DeliveryStatus::Sending if raced.is_some_and(|before| before.lease_until != lease) => {
                return Ok(());
            }
            DeliveryStatus::Sending => {
                if let Some(until) = lease.filter(|until| *until > now) {
                    // Held by a sender, alive or killed: come back when its
                    // claim lapses.
                    let wait = (until - now).to_std().unwrap_or_default() + LAPSE_MARGIN;
                    return requeue(queue, &delivery.message_awaiting(until), wait).await;
                }
                if awaited.is_some_and(|a| lease.map(|l| l.timestamp_millis()) != Some(a)) {
                    return Ok(()); // a later claim than the one awaited: its run holds it
                }
                // The claim lapsed with no outcome: its sender died. Taken over.
            }
            // The claim awaited ended; the run that ended it queued what follows.
            DeliveryStatus::Pending if awaited.is_some() => return Ok(()),
            DeliveryStatus::Pending => {}
        }
        // An SQS delay is whole seconds, rounded up: a message does not come
        // before its due time, and one that does waits for the rest.
        if let Some(wait) = delivery
            .next_attempt_at
            .and_then(|at| (at - now).to_std().ok())
            .filter(|wait| !wait.is_zero())
        {
            return requeue(queue, message, wait).await;
        }
        let (webhook, health, owner_token) =
            endpoint_and_health(store, ws, webhook_id, delivery.owner.as_deref()).await?;
        let read_version = delivery.version;
        let Some(webhook) = webhook.filter(|w| w.enabled) else {
            delivery.stop(
                DeliveryStatus::Failed,
                Some("the endpoint is disabled or deleted; replay to send again".into()),
            );
            if save(store, &mut delivery, Some(read_version)).await? {
                return Ok(());
            }
            raced = Some(Claimed { lease_until: lease });
            continue; // written meanwhile: read it again
        };
        // The endpoint sends only what its owner's token may read, while it
        // stands: its token revoked or expired, the endpoint is disabled too.
        let lapsed = match &webhook.owner {
            // Registered anew since the delivery was made: read the owner it has now.
            Some(owner) if delivery.owner.as_deref() != Some(owner.token_id.as_str()) => {
                endpoints::lapsed(store, &webhook).await?
            }
            Some(_) if owner_token.is_none() => Some(webhook.owner_gone()),
            _ => webhook.lapsed(now),
        };
        let refused = match lapsed {
            Some(reason) => Some((reason, true)),
            None if !webhook.reads(&delivery.event_type) => Some((
                format!(
                    "the token the endpoint reads with does not read `{}` events",
                    delivery.event_type
                ),
                false,
            )),
            None => None,
        };
        if let Some((reason, disable)) = refused {
            // The endpoint first: whoever reads the delivery failed for its
            // owner's lapse finds the endpoint disabled already.
            if disable {
                endpoints::disable(store, &webhook, reason.clone()).await?;
            }
            delivery.stop(DeliveryStatus::Failed, Some(reason));
            if save(store, &mut delivery, Some(read_version)).await? {
                return Ok(());
            }
            raced = Some(Claimed { lease_until: lease });
            continue; // written meanwhile: read it again
        }
        let Some(slot) = slots::take(store, &webhook, settings).await? else {
            let wait = Duration::from_millis(rand::random_range(500..1500));
            return requeue(queue, message, wait).await;
        };
        delivery.status = DeliveryStatus::Sending;
        delivery.lease_until = Some(
            now + chrono::Duration::from_std(settings.timeout + LEASE_MARGIN).unwrap_or_default(),
        );
        if save(store, &mut delivery, Some(read_version)).await? {
            break (webhook, health, delivery, slot);
        }
        slots::free(store, slot).await;
        // Another run claimed it, or an erasure scrubbed it: read it again.
        raced = Some(Claimed { lease_until: lease });
    };
    let claim = delivery.lease_until;
    let mut outcome = attempt(store, settings, &webhook, &delivery).await;
    slots::free(store, slot).await;

    let mut version = delivery.version;
    let mut tries = 0;
    let (retry_in, mut disable) = loop {
        let concluded = conclude(&mut delivery, &outcome, settings);
        if save(store, &mut delivery, Some(version)).await? {
            break concluded;
        }
        tries += 1;
        // Written under this run's claim. Its lease ran out and another run
        // took it over: theirs now. Or an erasure dropped the answers kept on
        // it: this attempt is recorded on what the erasure wrote, without its
        // answer, which may echo what was erased.
        let Some(fresh) = read(store, ws, webhook_id, id)
            .await?
            .filter(|d| d.status == DeliveryStatus::Sending && d.lease_until == claim)
        else {
            return Ok(());
        };
        if tries >= TRIES {
            // Still under this claim: the message runs again and, once the
            // claim lapses, the delivery is sent again.
            return Err(ApiError::unavailable(
                "the delivery kept changing under its attempt",
            ));
        }
        outcome.forget_answer();
        version = fresh.version;
        delivery = fresh;
    };
    if let Some(wait) = retry_in {
        requeue(queue, &delivery.message(), wait).await?;
    }
    if let Outcome::Tried(attempt, _) = &outcome {
        let answered = attempt.status_code.is_some_and(|s| (200..300).contains(&s));
        disable = disable.or(health_after(store, &webhook, health, answered, settings).await?);
    }
    if let Some(reason) = disable {
        endpoints::disable(store, &webhook, reason).await?;
    }
    Ok(())
}

/// Records `outcome` on `delivery` (the attempt, and the next one or the
/// end): how long until the next attempt, and why to disable the endpoint.
fn conclude(
    delivery: &mut Delivery,
    outcome: &Outcome,
    settings: &outbound::Settings,
) -> (Option<Duration>, Option<String>) {
    let number = delivery.attempt_count + 1;
    let mut disable = None;
    let mut retry_in = None;
    match outcome {
        Outcome::Gone(reason) => delivery.stop(DeliveryStatus::Failed, Some(reason.clone())),
        Outcome::Tried(attempt, answer) => {
            delivery.record(attempt.clone());
            let status = attempt.status_code.unwrap_or(0);
            if (200..300).contains(&status) {
                delivery.stop(DeliveryStatus::Succeeded, None);
            } else if status == 410 {
                let reason = "the endpoint answered 410 Gone".to_owned();
                delivery.stop(DeliveryStatus::Failed, Some(reason.clone()));
                disable = Some(reason);
            } else {
                let asked = answer
                    .as_ref()
                    .filter(|a| a.status == 429 || a.status == 503)
                    .and_then(|a| a.retry_after);
                match settings.wait_before(number + 1) {
                    Some(wait) => {
                        let wait = asked.map_or(wait, |asked| asked.max(wait));
                        delivery.status = DeliveryStatus::Pending;
                        delivery.lease_until = None;
                        // Counted from the answer, not from this run's start.
                        delivery.next_attempt_at =
                            Some(ids::now() + chrono::Duration::from_std(wait).unwrap_or_default());
                        retry_in = Some(wait);
                    }
                    None => delivery.stop(
                        DeliveryStatus::Failed,
                        Some(format!(
                            "every one of {} attempts failed",
                            settings.attempts()
                        )),
                    ),
                }
            }
        }
    }
    (retry_in, disable)
}

async fn requeue(queue: &dyn JobQueue, message: &JobMessage, wait: Duration) -> ApiResult<()> {
    queue
        .send_after(message, wait)
        .await
        .map_err(|e| ApiError::unavailable(format!("the delivery queue refused a message: {e}")))
}

/// The endpoint, its health and the record of the token `owner` (the
/// endpoint's owner when the delivery was made), in one round trip.
async fn endpoint_and_health(
    store: &dyn Store,
    ws: WorkspaceId,
    webhook_id: &str,
    owner: Option<&str>,
) -> ApiResult<(Option<Webhook>, Option<Health>, Option<Item>)> {
    let (endpoint, health) = (
        keys::webhook(ws, webhook_id),
        keys::webhook_health(ws, webhook_id),
    );
    let token = owner.map(|id| keys::token(ws, id));
    let mut wanted = vec![endpoint.clone(), health.clone()];
    wanted.extend(token.clone());
    let items = store.batch_get(&wanted).await?;
    let (mut webhook, mut state, mut owner_token) = (None, None, None);
    for item in items {
        let key = Key::of(&item);
        if key.as_ref() == Some(&endpoint) {
            webhook = Some(from_item(item)?);
        } else if key.as_ref() == Some(&health) {
            state = Some(from_item(item)?);
        } else if key.is_some() && key == token {
            owner_token = Some(item);
        }
    }
    Ok((webhook, state, owner_token))
}

/// Moves the endpoint's health after an attempt; `Some(reason)`: disable it.
async fn health_after(
    store: &dyn Store,
    webhook: &Webhook,
    health: Option<Health>,
    answered: bool,
    settings: &outbound::Settings,
) -> ApiResult<Option<String>> {
    let now = ids::now();
    let key = keys::webhook_health(webhook.workspace_id, &webhook.id);
    let write = match (answered, health) {
        (true, Some(_)) => Write::Delete {
            key,
            condition: None,
        },
        (true, None) => return Ok(None),
        (false, None) => {
            let health = Health {
                workspace_id: webhook.workspace_id,
                webhook_id: webhook.id.clone(),
                failing_since: now,
            };
            Write::Put {
                item: to_item(&health)?,
                condition: None,
            }
        }
        (false, Some(health)) => {
            let failing = (now - health.failing_since).to_std().unwrap_or_default();
            if failing >= settings.disable_after {
                let days = failing.as_secs_f64() / 86_400.0;
                return Ok(Some(format!(
                    "every attempt failed for {days:.1} days (since {})",
                    ids::format_ts(&health.failing_since)
                )));
            }
            return Ok(None);
        }
    };
    store.write(vec![write]).await?;
    Ok(None)
}
