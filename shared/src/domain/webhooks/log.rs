//! What an integrator does with deliveries: read them, retry one, replay
//! the events since a time, send a ping. A replay and a ping send only
//! what the endpoint's owner reads, and nothing once its token is revoked
//! or expired (409: re-register the endpoint).

use serde::{Deserialize, Serialize};

use super::delivery::{self, Attempt, Delivery, DeliveryStatus, ID_PREFIX};
use super::endpoints;
use crate::auth::Caller;
use crate::domain::events::{self, log_page};
use crate::error::{ApiError, ApiResult};
use crate::ids::{self, ClientTime, Timestamp};
use crate::keys;
use crate::outbound;
use crate::page::merged_more;
use crate::queue::JobQueue;
use crate::record::{Event, EventData, from_item};
use crate::store::{Index, Item, PK, Query, SK, SkRange, Store};

/// A delivery as the API shows it.
#[derive(Debug, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DeliveryView {
    /// `dlv_` and a ULID.
    pub id: String,
    pub webhook_id: String,
    /// The `webhook-id` header of every attempt: the event's id.
    pub event_id: String,
    pub event_type: String,
    pub status: DeliveryStatus,
    /// The latest attempts (up to 20), oldest first.
    pub attempts: Vec<Attempt>,
    /// Attempts made in all.
    pub attempt_count: u32,
    #[schemars(with = "Option<crate::ids::Timestamp>")]
    #[serde(
        with = "ids::ts_format::option",
        skip_serializing_if = "Option::is_none"
    )]
    pub next_attempt_at: Option<Timestamp>,
    /// Why it stopped, when it failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    #[schemars(with = "crate::ids::Timestamp")]
    #[serde(with = "ids::ts_format")]
    pub created_at: Timestamp,
}

impl From<Delivery> for DeliveryView {
    fn from(d: Delivery) -> Self {
        Self {
            id: format!("{ID_PREFIX}{}", d.id),
            webhook_id: d.webhook_id,
            event_id: d.event_id,
            event_type: d.event_type,
            status: d.status,
            attempts: d.attempts,
            attempt_count: d.attempt_count,
            next_attempt_at: d.next_attempt_at,
            reason: d.reason,
            created_at: d.created_at,
        }
    }
}

/// `GET /v3/webhooks/{id}/deliveries`.
#[derive(Debug, Default, Deserialize, validator::Validate, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DeliveryQuery {
    /// Go on after this delivery (a page's `nextCursor`).
    pub after: Option<String>,
    /// Deliveries per page (1 to 100; default 20).
    #[schemars(range(min = 1, max = 100))]
    pub limit: Option<u64>,
}

/// A page of deliveries, newest first.
#[derive(Debug, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DeliveryPage {
    pub data: Vec<DeliveryView>,
    /// `after=` of the next page; absent on the last.
    pub next_cursor: Option<String>,
}

fn delivery_key(id: &str) -> ApiResult<&str> {
    id.strip_prefix(ID_PREFIX)
        .filter(|ulid| ids::is_ulid(ulid))
        .ok_or_else(|| ApiError::not_found("delivery"))
}

/// An endpoint's deliveries, newest first: its shards merged by id (one
/// Query a shard, two at most).
pub async fn deliveries(
    store: &dyn Store,
    caller: &Caller,
    webhook_id: &str,
    q: DeliveryQuery,
) -> ApiResult<DeliveryPage> {
    let webhook = endpoints::find(store, caller, webhook_id, false).await?;
    let limit = q.limit.unwrap_or(20);
    if !(1..=100).contains(&limit) {
        return Err(ApiError::field("limit", "must be between 1 and 100"));
    }
    let after = match &q.after {
        Some(after) => Some(
            delivery_key(after)
                .map_err(|_| ApiError::field("after", "must be a delivery id of this list"))?,
        ),
        None => None,
    };
    let shards = keys::deliveries(caller.workspace_id, &webhook.id)
        .into_iter()
        .map(|partition| {
            let mut query = Query::new(Index::TABLE, partition.clone(), SkRange::All).backward();
            query.start_after = after.map(|sk| {
                Item::from_iter([
                    (PK.to_owned(), partition.into()),
                    (SK.to_owned(), sk.into()),
                ])
            });
            query
        })
        .collect();
    let (items, more) = merged_more(store, shards, limit as usize).await?;
    let data: Vec<DeliveryView> = items
        .into_iter()
        .map(|item| from_item::<Delivery>(item).map(DeliveryView::from))
        .collect::<ApiResult<_>>()?;
    let next_cursor = data.last().filter(|_| more).map(|d| d.id.clone());
    Ok(DeliveryPage { data, next_cursor })
}

/// Sends a delivery again now, whatever became of it (a new attempt with
/// the same `webhook-id`); 409 while an attempt is under way.
pub async fn retry(
    store: &dyn Store,
    queue: &dyn JobQueue,
    caller: &Caller,
    webhook_id: &str,
    delivery_id: &str,
) -> ApiResult<DeliveryView> {
    let webhook = endpoints::find(store, caller, webhook_id, true).await?;
    let sk = delivery_key(delivery_id)?;
    let mut d = delivery::read(store, caller.workspace_id, &webhook.id, sk)
        .await?
        .ok_or_else(|| ApiError::not_found("delivery"))?;
    if !webhook.enabled {
        return Err(ApiError::conflict(
            "the endpoint is disabled; enable it first",
        ));
    }
    if d.status == DeliveryStatus::Sending && d.lease_until.is_some_and(|u| u > ids::now()) {
        return Err(ApiError::conflict(
            "an attempt of this delivery is under way",
        ));
    }
    let version = d.version;
    d.status = DeliveryStatus::Pending;
    d.next_attempt_at = None;
    d.lease_until = None;
    d.reason = None;
    if !delivery::save(store, &mut d, Some(version)).await? {
        return Err(ApiError::conflict(
            "the delivery changed; read it again and retry",
        ));
    }
    enqueue(queue, &d).await?;
    Ok(d.into())
}

async fn enqueue(queue: &dyn JobQueue, d: &Delivery) -> ApiResult<()> {
    queue
        .send(&d.message())
        .await
        .map_err(|e| ApiError::unavailable(format!("the delivery queue refused the delivery: {e}")))
}

/// `POST /v3/webhooks/{id}/replay`.
#[derive(Debug, Deserialize, validator::Validate, schemars::JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ReplayRequest {
    /// Deliver again every event of the endpoint's types since this time
    /// (events are kept 30 days).
    pub since: ClientTime,
    /// Go on after this cursor (an answer's `nextCursor`, when `hasMore`).
    pub after: Option<String>,
}

/// What a replay queued.
#[derive(Debug, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Replay {
    /// Deliveries queued, one per matching event.
    pub queued: u64,
    /// More events remain: post again with `after` = `nextCursor`.
    pub has_more: bool,
    pub next_cursor: Option<String>,
}

/// Events read per replay request, at most.
pub const REPLAY_PAGE: usize = 500;

/// New deliveries of the endpoint's events since `since` (up to
/// [`REPLAY_PAGE`] events read per call), each with its event's `webhook-id`:
/// those of its types that its owner's token reads, stepped over otherwise
/// (the page may queue fewer; `hasMore` says to go on).
pub async fn replay(
    store: &dyn Store,
    queue: &dyn JobQueue,
    caller: &Caller,
    webhook_id: &str,
    request: ReplayRequest,
) -> ApiResult<Replay> {
    let webhook = endpoints::find(store, caller, webhook_id, true).await?;
    if !webhook.enabled {
        return Err(ApiError::conflict(
            "the endpoint is disabled; enable it first",
        ));
    }
    if let Some(reason) = endpoints::lapsed(store, &webhook).await? {
        return Err(ApiError::conflict(format!(
            "the endpoint sends nothing: {reason}"
        )));
    }
    let after = match request.after {
        Some(cursor) if ids::is_ulid(&cursor) => cursor,
        Some(_) => return Err(ApiError::field("after", "must be a replay's `nextCursor`")),
        None => events::cursor_at(request.since.0 - chrono::Duration::milliseconds(1)),
    };
    let page = log_page(store, caller.workspace_id, Some(after), None, REPLAY_PAGE).await?;
    // Since the time asked, even before the endpoint existed.
    let mut ever = webhook.clone();
    ever.stamps.created_at = Timestamp::MIN_UTC;
    let mut queued = 0;
    for event in page.data.iter().filter(|e| ever.wants(e)) {
        let mut d = Delivery::of(&webhook, event, ids::new_ulid());
        if delivery::save(store, &mut d, None).await? {
            enqueue(queue, &d).await?;
            queued += 1;
        }
    }
    Ok(Replay {
        queued,
        has_more: page.has_more,
        next_cursor: page.has_more.then_some(page.next_cursor).flatten(),
    })
}

/// Sends a `webhook.ping` event to the endpoint now, once, and answers how
/// it went (the delivery, kept in the log).
pub async fn ping(
    store: &dyn Store,
    caller: &Caller,
    settings: &outbound::Settings,
    webhook_id: &str,
) -> ApiResult<DeliveryView> {
    let webhook = endpoints::find(store, caller, webhook_id, true).await?;
    if let Some(reason) = endpoints::lapsed(store, &webhook).await? {
        return Err(ApiError::conflict(format!(
            "the endpoint sends nothing: {reason}"
        )));
    }
    if !webhook.reads("webhook.ping") {
        return Err(ApiError::conflict(
            "the token the endpoint reads with does not read `webhook` events (`webhooks:read`)",
        ));
    }
    let cursor = ids::new_ulid();
    let event = Event {
        id: format!("{}{cursor}", crate::record::event::ID_PREFIX),
        kind: "webhook.ping".into(),
        workspace_id: caller.workspace_id,
        occurred_at: ids::now(),
        cursor: cursor.clone(),
        resource: "webhook".into(),
        resource_id: webhook.id.clone(),
        version: Some(webhook.version),
        data: EventData {
            object: crate::record::Record::event_object(&webhook),
            previous: None,
        },
        token_id: caller.token_id().await?.to_owned(),
        request_id: caller.request_id.clone(),
    };
    let mut d = Delivery::of(&webhook, &event, cursor);
    d.event_cursor = None;
    d.payload = Some(serde_json::to_string(&event).map_err(ApiError::internal)?);
    let mut d = super::attempt::send_once(settings, &webhook, d).await;
    delivery::save(store, &mut d, None).await?;
    Ok(d.into())
}
