//! Records as items, and the one way to change them.
//!
//! A [`Record`] states its key and index attributes; [`to_item`] and [`from_item`]
//! are the only conversions. A [`Mutation`] gathers the writes of one change (the
//! record, its uniqueness sentinels, its list counters) and commits them in one
//! transaction with the change's [`AuditEntry`]. A failed condition comes back as
//! the API error its write declared, so races have one winner and a clear answer.
//!
//! This layer sits on the store and the keys and names no resource: the audit
//! entry is its own, since every mutation writes one.

mod audit;
pub mod event;
pub mod guard;
pub mod marks;
mod mutation;
pub mod personal;
pub mod sharing;
mod write;

pub use audit::{AUDIT_LIST, AuditEntry};
pub use event::{Event, EventData, StoredEvent};
pub use mutation::{CommitError, Mutation, changed_meanwhile};
pub use personal::Personal;
pub use write::{retrying, upsert, with_fresh_id};

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::error::{ApiError, ApiResult};
use crate::ids::{self, Timestamp};
use crate::store::{Item, Key, PK, SK, Store, TYPE};

pub trait Record: Serialize + DeserializeOwned + Clone + Send + Sync + 'static {
    /// The entity type written to every item, for people reading the table.
    const TYPE: &'static str;

    fn key(&self) -> Key;

    /// Secondary-index attributes, when the record is reachable through an index.
    fn index_keys(&self) -> Vec<(&'static str, String)> {
        Vec::new()
    }

    /// The record's name in the event log (`contact`, `deal`...): `None`,
    /// the default, for records whose changes are no events (index items,
    /// sentinels, secrets, a job's chunks). See [`event`].
    const EVENTS: Option<&'static str> = None;

    /// Which of its stored text is a person's data, and which is not:
    /// what an erasure clears ([`personal`]).
    const PERSONAL: Personal;

    /// As its events show it: its view in the API.
    fn event_object(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }

    /// Its id as the API names it (the view's `id`).
    fn event_id(&self) -> String {
        self.event_id_in(&self.event_object())
    }

    /// [`Self::event_id`], read off its [`Self::event_object`] made already
    /// (making one is most of an event's cost).
    fn event_id_in(&self, object: &Value) -> String {
        match object.get("id") {
            Some(Value::String(id)) => id.clone(),
            Some(Value::Number(id)) => id.to_string(),
            _ => self.key().sk,
        }
    }

    /// The verb of a change into this state: from `before` (when read), a
    /// creation or not. `created` or `updated` unless the record says more
    /// (`deal.won`, `import.completed`).
    fn event_verb(&self, before: Option<&Self>, created: bool) -> &'static str {
        let _ = before;
        if created { "created" } else { "updated" }
    }

    /// Its version, for a receiver to order its events by.
    fn event_version(&self) -> Option<u64> {
        serde_json::to_value(self).ok()?.get("version")?.as_u64()
    }
}

pub fn to_item<R: Record>(record: &R) -> ApiResult<Item> {
    let value = serde_json::to_value(record).map_err(ApiError::internal)?;
    personal::check::<R>(&value)?;
    let Value::Object(mut item) = value else {
        return Err(ApiError::internal(format!(
            "{} is not a JSON object",
            R::TYPE
        )));
    };
    let key = record.key();
    item.insert(PK.into(), key.pk.into());
    item.insert(SK.into(), key.sk.into());
    item.insert(TYPE.into(), R::TYPE.into());
    for (name, value) in record.index_keys() {
        item.insert(name.into(), value.into());
    }
    Ok(item)
}

pub fn from_item<R: Record>(item: Item) -> ApiResult<R> {
    serde_json::from_value(Value::Object(item))
        .map_err(|e| ApiError::internal(format!("stored {} does not read back: {e}", R::TYPE)))
}

/// A record's view as its events show it ([`Record::event_object`]).
pub fn as_event_object(view: impl Serialize) -> Value {
    serde_json::to_value(view).unwrap_or(Value::Null)
}

/// One record by key: one GetItem.
pub async fn get<R: Record>(
    store: &dyn Store,
    key: &Key,
    consistent: bool,
) -> ApiResult<Option<R>> {
    store.get(key, consistent).await?.map(from_item).transpose()
}

/// One record by key that must exist: an unknown key (or another workspace's,
/// which is the same thing) is a 404 naming `what`.
pub async fn find<R: Record>(
    store: &dyn Store,
    key: &Key,
    consistent: bool,
    what: &str,
) -> ApiResult<R> {
    get(store, key, consistent)
        .await?
        .ok_or_else(|| ApiError::not_found(what))
}

/// Records by key, in the order of `keys`; missing ones are left out. One
/// BatchGetItem per 100 keys: the way every list loads its page after reading
/// ids from an index.
pub async fn find_many<R: Record>(store: &dyn Store, keys: &[Key]) -> ApiResult<Vec<R>> {
    let mut found = std::collections::HashMap::with_capacity(keys.len());
    for chunk in keys.chunks(crate::store::MAX_BATCH_GET) {
        for item in store.batch_get(chunk).await? {
            if let Some(key) = Key::of(&item) {
                found.insert(key, item);
            }
        }
    }
    keys.iter()
        .filter_map(|key| found.remove(key))
        .map(from_item)
        .collect()
}

/// The value of a list's counter (its `totalCount`): one GetItem, or one
/// BatchGetItem of its shards. A shard may be below zero (a delete moves
/// another shard than its create did); the sum is not.
pub async fn count(store: &dyn Store, counter: &crate::keys::Counter) -> ApiResult<u64> {
    let keys = counter.keys();
    let items = match keys.as_slice() {
        [one] => store.get(one, false).await?.into_iter().collect(),
        many => store.batch_get(many).await?,
    };
    let sum: i64 = items
        .iter()
        .filter_map(|i| i.get(COUNT).and_then(Value::as_i64))
        .sum();
    Ok(sum.max(0) as u64)
}

/// The attribute of a counter item.
pub const COUNT: &str = "n";

/// The attribute of a uniqueness sentinel naming who claimed it.
pub const CLAIMED_BY: &str = "claimedBy";

/// A record updated in place: it has timestamps and a version to move.
pub trait Versioned: Record + PartialEq {
    fn version(&self) -> u64;
    fn set_version(&mut self, version: u64);
    fn stamps_mut(&mut self) -> &mut Stamps;
}

/// Implements [`Versioned`] for records with `stamps` and `version` fields.
#[macro_export]
macro_rules! versioned {
    ($($record:ty),* $(,)?) => {$(
        impl $crate::record::Versioned for $record {
            fn version(&self) -> u64 {
                self.version
            }
            fn set_version(&mut self, version: u64) {
                self.version = version;
            }
            fn stamps_mut(&mut self) -> &mut $crate::record::Stamps {
                &mut self.stamps
            }
        }
    )*};
}

/// The timestamps every `/v3` record carries.
#[derive(Debug, Clone, Serialize, serde::Deserialize, PartialEq, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Stamps {
    #[schemars(with = "crate::ids::Timestamp")]
    #[serde(with = "ids::ts_format")]
    pub created_at: Timestamp,
    #[schemars(with = "crate::ids::Timestamp")]
    #[serde(with = "ids::ts_format")]
    pub last_update_at: Timestamp,
    #[schemars(with = "Option<crate::ids::Timestamp>")]
    #[serde(
        default,
        with = "ids::ts_format::option",
        skip_serializing_if = "Option::is_none"
    )]
    pub updated_at: Option<Timestamp>,
}

impl Stamps {
    pub fn new() -> Self {
        let now = ids::now();
        Self {
            created_at: now,
            last_update_at: now,
            updated_at: Some(now),
        }
    }

    /// A record loaded under an id of its own (`crm load`) was made when its
    /// id says: ids are time-ordered, and creation windows are id ranges.
    pub fn of_id(id: u64) -> Self {
        let at = ids::id_time(id);
        Self {
            created_at: at,
            last_update_at: at,
            updated_at: Some(at),
        }
    }

    /// `lastUpdateAt` and `updatedAt` move on every update; `createdAt` never does.
    pub fn touch(&mut self) {
        let now = ids::now().max(self.last_update_at + chrono::Duration::milliseconds(1));
        self.last_update_at = now;
        self.updated_at = Some(now);
    }
}

impl Default for Stamps {
    fn default() -> Self {
        Self::new()
    }
}

/// Numbers as DynamoDB gives them back: a whole `f64` leaves as an integer
/// (`40`, not `40.0`), so an answer computed in memory reads like the record
/// read from the store. `#[serde(serialize_with = "record::number")]`.
pub fn number<S: serde::Serializer>(value: &f64, s: S) -> Result<S::Ok, S::Error> {
    if value.fract() == 0.0 && value.abs() < 9e15 {
        s.serialize_i64(*value as i64)
    } else {
        s.serialize_f64(*value)
    }
}

/// [`number`] for an optional value.
pub fn optional_number<S: serde::Serializer>(value: &Option<f64>, s: S) -> Result<S::Ok, S::Error> {
    match value {
        Some(v) => number(v, s),
        None => s.serialize_none(),
    }
}

/// Before attempt `attempt` (from 0) of a read-and-write that lost a race: a
/// jittered pause that grows (none before the first), so that writers of
/// one record take turns instead of colliding again (at most 1.3 s in all
/// over 12 attempts).
pub async fn pause_before(attempt: u32) {
    if attempt > 0 {
        let most = 5u64 << attempt.min(5);
        let pause = std::time::Duration::from_millis(rand::random_range(1..=most));
        tokio::time::sleep(pause).await;
    }
}
