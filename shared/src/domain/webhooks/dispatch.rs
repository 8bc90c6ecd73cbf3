//! From events to deliveries: each event, for each endpoint that wants it,
//! one delivery (keyed by the event's cursor, so that dispatching an event
//! twice makes one) and one queue message.
//!
//! Two hosts feed [`dispatch`]. On AWS, the table's stream: the dispatcher
//! function gets each event item as it is written. Locally (`crm serve`),
//! [`follow`] reads each workspace's log after a mark kept in the table:
//! it reads every event after the mark (those not yet settled too, so a
//! delivery starts within a tick of its commit), remembers what it has
//! dispatched, and moves the mark to where no event can still appear
//! before it. Killed at any moment, the next start reads from the mark and
//! dispatches again what may have been missed; a delivery that exists
//! already is sent again only when it has had no attempt (its message may be
//! what was lost).

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use super::delivery::{self, Delivery, DeliveryStatus};
use super::endpoints;
use super::record::Webhook;
use crate::domain::events::{cursor_at, log_page};
use crate::error::ApiResult;
use crate::ids::{self, WorkspaceId};
use crate::keys;
use crate::page::read_up_to;
use crate::queue::{JobQueue, SharedQueue};
use crate::record::{Event, event::SETTLE, from_item};
use crate::store::{Item, PK, Query, SK, SharedStore, SkRange, Store, TYPE, Write};

/// Deliveries made side by side by one dispatch.
const AT_ONCE: usize = 16;

/// The deliveries of `events` of workspace `ws`; how many were queued.
pub async fn dispatch(
    store: &dyn Store,
    queue: &dyn JobQueue,
    ws: WorkspaceId,
    events: &[Event],
) -> ApiResult<usize> {
    if events.is_empty() {
        return Ok(0);
    }
    let webhooks: Vec<Webhook> = endpoints::of_workspace(store, ws)
        .await?
        .into_iter()
        .filter(|w| w.enabled)
        .collect();
    let pairs: Vec<(&Webhook, &Event)> = events
        .iter()
        .flat_map(|e| webhooks.iter().filter(|w| w.wants(e)).map(move |w| (w, e)))
        .collect();
    let mut queued = 0;
    for some in pairs.chunks(AT_ONCE) {
        let started = some
            .iter()
            .map(|&(webhook, event)| start(store, queue, webhook, event));
        for result in futures_util::future::join_all(started).await {
            queued += usize::from(result?);
        }
    }
    Ok(queued)
}

/// The delivery of `event` to `webhook`, made and queued; `false`: it was
/// there already, and had been attempted.
async fn start(
    store: &dyn Store,
    queue: &dyn JobQueue,
    webhook: &Webhook,
    event: &Event,
) -> ApiResult<bool> {
    let mut d = Delivery::of(webhook, event, event.cursor.clone());
    if !delivery::save(store, &mut d, None).await? {
        match delivery::read(store, webhook.workspace_id, &webhook.id, &d.id).await? {
            Some(there) if there.status == DeliveryStatus::Pending && there.attempt_count == 0 => {
                d = there;
            }
            _ => return Ok(false),
        }
    }
    queue.send(&d.message()).await.map_err(|e| {
        crate::error::ApiError::unavailable(format!("the delivery queue refused a delivery: {e}"))
    })?;
    Ok(true)
}

/// How long an event may take to appear in the log after its cursor was
/// drawn: a transaction's attempts on DynamoDB ([`SETTLE`]); on the embedded
/// store, a commit, which takes milliseconds.
pub fn settle_for(store: &dyn Store) -> Duration {
    match store.backend() {
        "dynamodb" => SETTLE.to_std().unwrap_or(Duration::from_secs(15)),
        _ => Duration::from_secs(2),
    }
}

/// Follows every workspace with an enabled endpoint, every `every`, for
/// ever (`crm serve`): the local stand-in for the table's stream.
pub async fn follow(store: SharedStore, queue: SharedQueue, every: Duration) {
    let mut follower = Follower {
        settle: settle_for(store.as_ref()),
        followed: BTreeMap::new(),
    };
    loop {
        if let Err(e) = follower.tick(store.as_ref(), queue.as_ref()).await {
            tracing::warn!(error = %e, "the webhook dispatcher could not read the events; trying again");
        }
        tokio::time::sleep(every).await;
    }
}

struct Follower {
    settle: Duration,
    followed: BTreeMap<WorkspaceId, Followed>,
}

/// Where a workspace's log has been read to.
struct Followed {
    /// Every event up to here is dispatched (kept in the table).
    mark: String,
    /// When the mark was last written.
    kept_at: std::time::Instant,
    /// Events after the mark already dispatched.
    seen: BTreeSet<String>,
}

impl Follower {
    async fn tick(&mut self, store: &dyn Store, queue: &dyn JobQueue) -> ApiResult<()> {
        for (ws, earliest) in followed_workspaces(store).await? {
            let followed = match self.followed.entry(ws) {
                std::collections::btree_map::Entry::Occupied(at) => at.into_mut(),
                std::collections::btree_map::Entry::Vacant(at) => {
                    let kept = store.get(&keys::dispatched(ws), true).await?;
                    let mark = kept
                        .and_then(|item| item.get("cursor")?.as_str().map(str::to_owned))
                        .unwrap_or_else(|| cursor_at(earliest - chrono::Duration::milliseconds(1)));
                    at.insert(Followed {
                        mark,
                        kept_at: std::time::Instant::now(),
                        seen: BTreeSet::new(),
                    })
                }
            };
            read_on(store, queue, ws, followed, self.settle).await?;
        }
        Ok(())
    }
}

/// The workspaces with an enabled endpoint, and their oldest endpoint's
/// creation (where following starts the first time): one Query.
async fn followed_workspaces(
    store: &dyn Store,
) -> ApiResult<BTreeMap<WorkspaceId, ids::Timestamp>> {
    let query = Query::new(keys::GSI1, keys::ALL_WEBHOOKS, SkRange::All);
    let mut workspaces = BTreeMap::new();
    for item in read_up_to(store, query, 100_000).await? {
        let webhook: Webhook = from_item(item)?;
        if webhook.enabled {
            let earliest = workspaces
                .entry(webhook.workspace_id)
                .or_insert(webhook.stamps.created_at);
            *earliest = (*earliest).min(webhook.stamps.created_at);
        }
    }
    Ok(workspaces)
}

/// Dispatches the events of `ws` after its mark not seen yet, and moves the mark.
async fn read_on(
    store: &dyn Store,
    queue: &dyn JobQueue,
    ws: WorkspaceId,
    followed: &mut Followed,
    settle: Duration,
) -> ApiResult<()> {
    let settled = cursor_at(ids::now() - chrono::Duration::from_std(settle).unwrap_or_default());
    let mut after = followed.mark.clone();
    loop {
        let page = log_page(store, ws, Some(after.clone()), None, 500).await?;
        let new: Vec<Event> = page
            .data
            .into_iter()
            .filter(|e| !followed.seen.contains(&e.cursor))
            .collect();
        dispatch(store, queue, ws, &new).await?;
        followed.seen.extend(new.into_iter().map(|e| e.cursor));
        match page.next_cursor {
            Some(next) if page.has_more => after = next,
            _ => break,
        }
    }
    // Every event up to `settled` is read and dispatched, and no other can
    // appear before it any more.
    if settled > followed.mark {
        followed.mark = settled;
        followed.seen = followed.seen.split_off(&followed.mark);
        if followed.kept_at.elapsed() >= Duration::from_secs(1) {
            keep_mark(store, ws, &followed.mark).await?;
            followed.kept_at = std::time::Instant::now();
        }
    }
    Ok(())
}

async fn keep_mark(store: &dyn Store, ws: WorkspaceId, mark: &str) -> ApiResult<()> {
    let key = keys::dispatched(ws);
    let mut item = Item::new();
    item.insert(PK.into(), key.pk.into());
    item.insert(SK.into(), key.sk.into());
    item.insert(TYPE.into(), "DispatchMark".into());
    item.insert("cursor".into(), mark.into());
    store
        .write(vec![Write::Put {
            item,
            condition: None,
        }])
        .await?;
    Ok(())
}
