//! The event feed and the histories of records, read from the event log
//! (`crate::record::event`).
//!
//! - `GET /v3/events?after=<cursor>&types=deal.*,contact.created&limit=`:
//!   a workspace's events in the order they happened, each at least
//!   [`SETTLE`] old, so that following `nextCursor` never skips one. The
//!   log is kept over 8 shards (each record's events in its record's,
//!   `keys::event`); a page reads them all at once and merges them by
//!   cursor (`page::merged`): 8 Queries, 16 at most, reading about
//!   `limit + 16` events, at any workspace size; with `types`, the events of other types among them are stepped over (a
//!   page may then hold fewer than `limit`, and `hasMore` says to go on).
//! - An event carries its record, so it is shown only to a token that may
//!   read that record ([`read_scope`]: `contact.*` needs `contacts:read`,
//!   or what grants it). The feed steps over the others as it does other
//!   types; a `types` filter naming one is a 403 naming the scope. A
//!   webhook endpoint delivers by the same rule, with the scopes of the
//!   token that registered it (`crate::domain::webhooks::record::Owner`).
//! - `GET /v3/contacts/{id}/history` (and deals'): one record's events,
//!   oldest first, with the same cursor; not held back by [`SETTLE`].
//!
//! Events are kept 30 days; an expired one still in the table is not shown.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::auth::{self, Caller, Resource, Scope};
use crate::error::{ApiError, ApiResult};
use crate::ids;
use crate::keys;
use crate::page::merged_more;
use crate::record::event::{Event, SETTLE, StoredEvent};
use crate::record::{self, Record, from_item};
use crate::store::{Index, Item, Key, PK, Query, SK, SkRange, Store};

/// Every event type (docs/api-contract.md#events lists them with what makes
/// them), declared with its group's scope resource ([`Resource`]). A filter
/// that names another is refused: a typo would match nothing.
pub const TYPES: &[&str] = Resource::EVENT_TYPES;

/// Which scope group reads the records of each event resource (the part of
/// a type before the dot): an event carries its record, so reading it takes
/// that group's read scope (`contacts:read`, or its `:write`, `*:read`,
/// `*:write`, `admin`). Declared with the types ([`Resource`]).
pub const READ_BY: &[(&str, Resource)] = Resource::EVENTS_READ_BY;

/// [`READ_BY`] in words, for the feed's description: "`contact.*` and
/// `import.*` need `contacts:read`; `deal.*` needs `deals:read`; ...".
pub fn readers() -> String {
    let mut by_group: Vec<(Resource, Vec<String>)> = Vec::new();
    for (name, group) in READ_BY {
        let name = format!("`{name}.*`");
        match by_group.iter_mut().find(|(g, _)| g == group) {
            Some((_, names)) => names.push(name),
            None => by_group.push((*group, vec![name])),
        }
    }
    let clauses: Vec<String> = by_group
        .into_iter()
        .map(|(group, mut names)| {
            let last = names.pop().unwrap_or_default();
            let (names, verb) = match names.is_empty() {
                true => (last, "needs"),
                false => (format!("{} and {last}", names.join(", ")), "need"),
            };
            format!("{names} {verb} `{}`", Scope::Read(group))
        })
        .collect();
    clauses.join("; ")
}

/// The scope that reads events of `kind` (`contact.created`, `deal.*` or
/// the resource alone): `None` for a resource no table row names, which no
/// token reads (a type added without its row is shown to nobody, and a
/// test holds every type to a row).
pub fn read_scope(kind: &str) -> Option<Scope> {
    let resource = kind.split('.').next()?;
    READ_BY
        .iter()
        .find(|(name, _)| *name == resource)
        .map(|(_, group)| Scope::Read(*group))
}

/// What the OpenAPI document says of the webhook payload `kind`: which
/// scope the endpoint's owner needs for it to be sent.
pub fn sent_with(kind: &str) -> String {
    let Some(scope) = read_scope(kind) else {
        return "Sent to no endpoint.".to_owned();
    };
    let grants: Vec<String> = scope.granted_by().iter().map(ToString::to_string).collect();
    let ping = if kind == "webhook.ping" {
        " Sent by `POST /v3/webhooks/{id}/test` alone, never in the feed."
    } else {
        ""
    };
    format!(
        "Sent to an endpoint whose `types` name it (or its resource's `.*`, or `*`) while the token that registered it (its `owner`) stands and reads it: one of {}.{ping}",
        grants
            .iter()
            .map(|g| format!("`{g}`"))
            .collect::<Vec<_>>()
            .join(", ")
    )
}

/// Whether a token holding `held` may read events of `kind`. `held` is
/// taken as a token's scopes are: none stored is `*:write`
/// ([`auth::grants`]).
pub fn readable(held: &[Scope], kind: &str) -> bool {
    read_scope(kind).is_some_and(|scope| auth::grants(held, scope))
}

/// Events per page, at most, and by default.
pub const MAX_LIMIT: u64 = 500;
pub const DEFAULT_LIMIT: u64 = 100;

/// `GET /v3/events`.
#[derive(Debug, Default, Deserialize, validator::Validate, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EventQuery {
    /// Go on after this cursor (a page's `nextCursor`); from the oldest event
    /// kept when absent.
    pub after: Option<String>,
    /// Only these types, comma-separated: `contact.created`, `deal.*`, `*`.
    pub types: Option<String>,
    /// Events read per page (1 to 500; default 100).
    #[schemars(range(min = 1, max = 500))]
    pub limit: Option<u64>,
}

/// `GET /v3/contacts/{id}/history` and the like.
#[derive(Debug, Default, Deserialize, validator::Validate, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HistoryQuery {
    /// Go on after this cursor (a page's `nextCursor`).
    pub after: Option<String>,
    /// Events per page (1 to 500; default 100).
    #[schemars(range(min = 1, max = 500))]
    pub limit: Option<u64>,
}

/// A page of events.
#[derive(Debug, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct EventPage {
    pub data: Vec<Event>,
    /// Where the next page starts (`after=`): the last event read, or the
    /// `after` given when none was. Keep it to resume later.
    pub next_cursor: Option<String>,
    /// Whether more events were there already; when false, come back later
    /// with `nextCursor`.
    pub has_more: bool,
}

/// Which event types a reader wants: `contact.created`, `deal.*`, `*`.
pub struct TypeFilter(Vec<String>);

impl TypeFilter {
    /// Patterns already checked (stored with a webhook).
    pub fn of(patterns: Vec<String>) -> Self {
        Self(patterns)
    }

    /// A comma-separated list (`types=` of the feed); `field` names it in a 400.
    pub fn parse(raw: Option<&str>, field: &str) -> ApiResult<Self> {
        let patterns: Vec<String> = raw
            .unwrap_or("*")
            .split(',')
            .map(str::trim)
            .filter(|p| !p.is_empty())
            .map(str::to_owned)
            .collect();
        Self::checked(patterns, field)
    }

    /// `patterns`, each a type, `resource.*` or `*`; 400 on `field` otherwise.
    pub fn checked(patterns: Vec<String>, field: &str) -> ApiResult<Self> {
        for pattern in &patterns {
            let known = pattern == "*"
                || TYPES.contains(&pattern.as_str())
                || pattern.strip_suffix(".*").is_some_and(|resource| {
                    TYPES.iter().any(|t| t.split('.').next() == Some(resource))
                });
            if !known {
                return Err(ApiError::field(
                    field,
                    format!(
                        "`{pattern}` is no event type: a type (`contact.created`), a resource's (`deal.*`) or `*`"
                    ),
                ));
            }
        }
        Ok(Self(patterns))
    }

    /// The first read scope its patterns need that `held` does not grant: a
    /// type or a resource's types (`contact.created`, `contact.*`) needs
    /// that resource's read scope; `*` needs none, since it means "every
    /// type the token may read".
    pub fn unreadable(&self, held: &[Scope]) -> Option<Scope> {
        self.0
            .iter()
            .filter(|pattern| pattern.as_str() != "*")
            .find(|pattern| !readable(held, pattern.as_str()))
            .map(|pattern| read_scope(pattern.as_str()).unwrap_or(Scope::Admin))
    }

    pub fn admits(&self, kind: &str) -> bool {
        self.0.is_empty()
            || self.0.iter().any(|p| {
                p == "*"
                    || p == kind
                    || p.strip_suffix(".*")
                        .is_some_and(|r| kind.split('.').next() == Some(r))
            })
    }
}

fn limit_of(limit: Option<u64>) -> ApiResult<usize> {
    let limit = limit.unwrap_or(DEFAULT_LIMIT);
    if !(1..=MAX_LIMIT).contains(&limit) {
        return Err(ApiError::field(
            "limit",
            format!("must be between 1 and {MAX_LIMIT}"),
        ));
    }
    Ok(limit as usize)
}

fn cursor_of(after: Option<String>) -> ApiResult<Option<String>> {
    match after {
        Some(cursor) if !ids::is_ulid(&cursor) => Err(ApiError::field(
            "after",
            "must be a cursor the feed gave (`nextCursor`)",
        )),
        other => Ok(other),
    }
}

/// The cursor of the newest moment the feed shows: events up to `at`, and
/// none after (the greatest ULID of that millisecond).
pub fn cursor_at(at: ids::Timestamp) -> String {
    let ms = at.timestamp_millis().max(0) as u64;
    ulid::Ulid::from_parts(ms, (1u128 << 80) - 1).to_string()
}

/// The Queries of the feed's page after `after`, up to `upto`: one per
/// shard of the log (`keys::event_partitions`), each starting after the
/// same cursor, since every shard is sorted by it.
fn log_shards(ws: ids::WorkspaceId, after: Option<&str>, upto: Option<String>) -> Vec<Query> {
    let range = match upto {
        Some(upto) => SkRange::AtMost(upto),
        None => SkRange::All,
    };
    keys::event_partitions(ws)
        .into_iter()
        .map(|partition| {
            let mut query = Query::new(Index::TABLE, partition.clone(), range.clone());
            query.start_after = after.map(|cursor| start_key(None, &Key::new(partition, cursor)));
            query
        })
        .collect()
}

/// The Query of record `id`'s history after `after` (gsi1). Its start key
/// names the event's own key too, which the record's shard gives.
fn history_query(ws: ids::WorkspaceId, resource: &str, id: &str, after: Option<&str>) -> Query {
    let partition = keys::history(ws, resource, id);
    let mut query = Query::new(keys::GSI1, partition.clone(), SkRange::All);
    query.start_after = after.map(|cursor| {
        let event = keys::event(ws, resource, id, cursor);
        start_key(Some((keys::GSI1, partition)), &event)
    });
    query
}

/// The start key of a Query that goes on after the event at `event`, in
/// the table or in an index partition.
fn start_key(index: Option<(Index, String)>, event: &Key) -> Item {
    let mut key = Item::new();
    if let Some((index, partition)) = index {
        key.insert(index.pk.into(), partition.into());
        key.insert(index.sk.into(), event.sk.clone().into());
    }
    key.insert(PK.into(), event.pk.clone().into());
    key.insert(SK.into(), event.sk.clone().into());
    key
}

/// One page of events of `queries` (the log's shards merged by cursor, or
/// one history), after `after`: every unexpired event read. `nextCursor`
/// is the last event read, whether or not a reader keeps it
/// ([`EventPage::keep`]), so stepping over events never makes a reader
/// skip or read again one it would keep.
async fn page(
    store: &dyn Store,
    queries: Vec<Query>,
    after: Option<String>,
    limit: usize,
) -> ApiResult<EventPage> {
    let (items, has_more) = merged_more(store, queries, limit).await?;
    let now = ids::now();
    let mut data = Vec::with_capacity(items.len());
    let mut last = after;
    for item in items {
        let stored: StoredEvent = from_item(item)?;
        last = Some(stored.event.cursor.clone());
        if !stored.expired(now) {
            data.push(stored.event);
        }
    }
    Ok(EventPage {
        data,
        next_cursor: last,
        has_more,
    })
}

impl EventPage {
    /// Leaves out the events `keep` refuses; `nextCursor` and `hasMore`
    /// stay as read (a page may then hold fewer than `limit`).
    fn keep(mut self, keep: impl Fn(&Event) -> bool) -> Self {
        self.data.retain(|event| keep(event));
        self
    }
}

/// The caller's workspace's events after `q.after`, settled ([`SETTLE`]),
/// of the types asked for and of the records the caller's token may read
/// ([`readable`]); a `types` filter naming records it may not read is a 403
/// naming the scope.
pub async fn feed(store: &dyn Store, caller: &Caller, q: EventQuery) -> ApiResult<EventPage> {
    let limit = limit_of(q.limit)?;
    let types = TypeFilter::parse(q.types.as_deref(), "types")?;
    let after = cursor_of(q.after)?;
    let upto = cursor_at(ids::now() - SETTLE);
    let reading = async {
        if after.as_deref().is_some_and(|a| a >= upto.as_str()) {
            // Nothing settled after it yet: come back later, from the same cursor.
            return Ok(EventPage {
                data: Vec::new(),
                next_cursor: after.clone(),
                has_more: false,
            });
        }
        let shards = log_shards(caller.workspace_id, after.as_deref(), Some(upto.clone()));
        page(store, shards, after.clone(), limit).await
    };
    // The page's Query goes out beside the token's read, as every read does.
    let (read, identity) = tokio::join!(reading, caller.identity());
    let held = &identity?.scopes;
    if let Some(needed) = types.unreadable(held) {
        return Err(auth::missing(needed));
    }
    Ok(read?.keep(|event| types.admits(&event.kind) && readable(held, &event.kind)))
}

/// A page of workspace `ws`'s log after `after`, up to `upto` (a cursor),
/// unsettled events included: for the dispatchers, which keep their own
/// settled mark.
pub async fn log_page(
    store: &dyn Store,
    ws: ids::WorkspaceId,
    after: Option<String>,
    upto: Option<String>,
    limit: usize,
) -> ApiResult<EventPage> {
    let shards = log_shards(ws, after.as_deref(), upto);
    page(store, shards, after, limit).await
}

/// The events of the record of type `R` at `key`, oldest first. The record
/// is read first (one GetItem), so that another workspace's, or none, is a
/// 404 as its GET is (`what` names it there).
pub async fn history<R: Record>(
    store: &dyn Store,
    caller: &Caller,
    key: &Key,
    what: &str,
    q: HistoryQuery,
) -> ApiResult<EventPage> {
    let record: R = record::find(store, key, false, what).await?;
    let resource =
        R::EVENTS.ok_or_else(|| ApiError::internal(format!("{} has no events", R::TYPE)))?;
    history_of(store, caller, resource, &record.event_id(), q).await
}

/// The events of record `id` of `resource`, whose existence the caller
/// checked (a merged contact's history stays readable under its id). Its
/// route needs the record's read scope (`contacts:read` for a contact's),
/// as the record's GET does; the events are held to it again here.
pub async fn history_of(
    store: &dyn Store,
    caller: &Caller,
    resource: &str,
    id: &str,
    q: HistoryQuery,
) -> ApiResult<EventPage> {
    let limit = limit_of(q.limit)?;
    let after = cursor_of(q.after)?;
    let ws = caller.workspace_id;
    let query = history_query(ws, resource, id, after.as_deref());
    let read = page(store, vec![query], after, limit);
    let (read, identity) = tokio::join!(read, caller.identity());
    let held = &identity?.scopes;
    if let Some(needed) = read_scope(resource).filter(|scope| !auth::grants(held, *scope)) {
        return Err(auth::missing(needed));
    }
    read
}

/// What a reader that follows the feed from the start holds: each record's
/// last state, by `(resource, id)`; a deleted one is gone. For tests and
/// for a receiver to copy.
pub fn replay(events: &[Event]) -> std::collections::BTreeMap<(String, String), Value> {
    let mut state = std::collections::BTreeMap::new();
    for event in events {
        let key = (event.resource.clone(), event.resource_id.clone());
        // A merged contact is gone as a deleted one is (its id answers the survivor).
        if event.kind.ends_with(".deleted") || event.kind == "contact.merged" {
            state.remove(&key);
        } else {
            state.insert(key, event.data.object.clone());
        }
    }
    state
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_event_resource_has_its_read_scope() {
        for kind in TYPES {
            assert!(read_scope(kind).is_some(), "{kind} has no row in READ_BY");
        }
        for (i, (resource, _)) in READ_BY.iter().enumerate() {
            assert!(
                TYPES.iter().any(|t| t.split('.').next() == Some(*resource)),
                "{resource} makes no event"
            );
            assert!(
                !READ_BY[..i].iter().any(|(r, _)| r == resource),
                "{resource} is read by two groups"
            );
        }
        let unique: std::collections::BTreeSet<_> = TYPES.iter().collect();
        assert_eq!(unique.len(), TYPES.len(), "a type declared twice");
    }

    #[test]
    fn an_event_is_read_with_its_records_scope() {
        let contacts = [
            Scope::Read(Resource::Contacts),
            Scope::Read(Resource::Events),
        ];
        assert!(readable(&contacts, "contact.created"));
        assert!(readable(&contacts, "import.completed"));
        assert!(!readable(&contacts, "deal.won"));
        assert!(!readable(
            &[Scope::Read(Resource::Events)],
            "contact.created"
        ));
        assert!(readable(&[Scope::Write(Resource::Deals)], "deal.won"));
        assert!(readable(&[Scope::ReadAll], "apiToken.created"));
        assert!(
            readable(&[], "contact.created"),
            "none stored acts as *:write"
        );
        assert!(!readable(&[Scope::EraseContacts], "contact.erased"));
        assert!(!readable(&[Scope::Admin], "nothing.created"));
        let filter = TypeFilter::checked(
            vec!["contact.*".into(), "deal.won".into(), "*".into()],
            "types",
        )
        .unwrap();
        assert_eq!(
            filter.unreadable(&contacts),
            Some(Scope::Read(Resource::Deals))
        );
        assert_eq!(filter.unreadable(&[Scope::ReadAll]), None);
        assert_eq!(
            TypeFilter::parse(None, "types")
                .unwrap()
                .unreadable(&[Scope::Read(Resource::Events)]),
            None
        );
    }
}
