//! Records as items, and the one way to change them.
//!
//! A [`Record`] states its key and index attributes; [`to_item`] and [`from_item`]
//! are the only conversions. A [`Mutation`] gathers the writes of one change (the
//! record, its uniqueness sentinels, its list counters) and commits them in one
//! transaction with the change's audit entry. A failed condition comes back as the
//! API error its write declared, so races have one winner and a clear answer.

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::auth::Caller;
use crate::error::{ApiError, ApiResult};
use crate::ids::{self, Timestamp};
use crate::keys;
use crate::store::{Condition, Item, Key, PK, SK, Store, StoreError, TYPE, Write};

pub trait Record: Serialize + DeserializeOwned {
    /// The entity type written to every item, for people reading the table.
    const TYPE: &'static str;

    fn key(&self) -> Key;

    /// Secondary-index attributes, when the record is reachable through an index.
    fn index_keys(&self) -> Vec<(&'static str, String)> {
        Vec::new()
    }
}

pub fn to_item<R: Record>(record: &R) -> ApiResult<Item> {
    let Value::Object(mut item) = serde_json::to_value(record).map_err(ApiError::internal)? else {
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

/// Loads a record an operator brings in (`crm load`). `build` makes the record
/// from the stored one, if any, so that `createdAt` stays. A new record is
/// created (moving its list's counter, when it has one); a changed one is
/// written over the stored one; an unchanged one writes nothing.
pub async fn upsert<R: Versioned + Clone>(
    store: &dyn Store,
    caller: &Caller,
    key: &Key,
    build: impl FnOnce(Option<R>) -> R,
    counter: Option<Key>,
    action: &str,
) -> ApiResult<R> {
    let current: Option<R> = get(store, key, true).await?;
    let mut next = build(current.clone());
    let mut m = Mutation::new(caller);
    match &current {
        Some(stored) => {
            if !m.update(stored, &mut next)? {
                return Ok(next);
            }
        }
        None => {
            next.set_version(1);
            m.create(&next)?;
            if let Some(counter) = counter {
                m.count(counter, 1);
            }
        }
    }
    let resource = R::TYPE.to_owned();
    m.commit(store, action, &resource, &key.sk).await?;
    Ok(next)
}

/// The value of a list's counter (its `totalCount`): one GetItem.
pub async fn count(store: &dyn Store, key: &Key) -> ApiResult<u64> {
    let item = store.get(key, false).await?;
    Ok(item
        .and_then(|i| i.get(COUNT).and_then(Value::as_i64))
        .unwrap_or(0)
        .max(0) as u64)
}

/// The attribute of a counter item.
pub const COUNT: &str = "n";

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

/// Which write of a mutation failed its condition, and what that means to the client.
enum OnFailure {
    /// A fresh id was taken already: the caller retries with a new one.
    IdTaken,
    Error(ApiError),
}

/// The writes of one change, committed atomically together with its audit entry.
pub struct Mutation<'a> {
    caller: &'a Caller,
    writes: Vec<(Write, Option<OnFailure>)>,
}

/// How a mutation can fail before being turned into an API error.
pub enum CommitError {
    IdTaken,
    Api(ApiError),
}

impl From<ApiError> for CommitError {
    fn from(e: ApiError) -> Self {
        CommitError::Api(e)
    }
}

impl<'a> Mutation<'a> {
    pub fn new(caller: &'a Caller) -> Self {
        Self {
            caller,
            writes: Vec::new(),
        }
    }

    /// Puts a new record; its id must not be taken.
    pub fn create<R: Record>(&mut self, record: &R) -> ApiResult<&mut Self> {
        let item = to_item(record)?;
        self.writes.push((
            Write::Put {
                item,
                condition: Some(Condition::NotExists),
            },
            Some(OnFailure::IdTaken),
        ));
        Ok(self)
    }

    /// Replaces a record read at `version`; a concurrent change in between is a 409.
    pub fn replace<R: Record>(&mut self, record: &R, version: u64) -> ApiResult<&mut Self> {
        let item = to_item(record)?;
        self.writes.push((
            Write::Put {
                item,
                condition: Some(Condition::VersionIs(version)),
            },
            Some(OnFailure::Error(ApiError::conflict(
                "the record changed while this request ran; read it again and retry",
            ))),
        ));
        Ok(self)
    }

    /// Writes `next` over `current` (as read) when they differ: moves the
    /// timestamps and the version, on the condition that nobody wrote the record
    /// in between (409 otherwise). `false`: nothing changed, nothing to write.
    pub fn update<R: Versioned>(&mut self, current: &R, next: &mut R) -> ApiResult<bool> {
        if next == current {
            return Ok(false);
        }
        next.stamps_mut().touch();
        next.set_version(current.version() + 1);
        self.replace(next, current.version())?;
        Ok(true)
    }

    /// Deletes a record that must still exist (a concurrent delete makes this a 404).
    pub fn delete(&mut self, key: Key, what: &str) -> &mut Self {
        self.writes.push((
            Write::Delete {
                key,
                condition: Some(Condition::Exists),
            },
            Some(OnFailure::Error(ApiError::not_found(what))),
        ));
        self
    }

    /// Deletes an item whether or not it exists (a sentinel, a secondary item).
    pub fn remove(&mut self, key: Key) -> &mut Self {
        self.writes.push((
            Write::Delete {
                key,
                condition: None,
            },
            None,
        ));
        self
    }

    /// Claims a unique value through a sentinel item; `conflict` answers a taken value.
    pub fn claim(&mut self, key: Key, owner: &str, conflict: ApiError) -> &mut Self {
        let mut item = Item::new();
        item.insert(PK.into(), key.pk.into());
        item.insert(SK.into(), key.sk.into());
        item.insert(TYPE.into(), "Unique".into());
        item.insert("owner".into(), owner.into());
        // Who claimed it: a token id, or `import:<job>` (a redelivered import knows its own).
        item.insert("claimedBy".into(), self.caller.token_id.clone().into());
        self.writes.push((
            Write::Put {
                item,
                condition: Some(Condition::NotExists),
            },
            Some(OnFailure::Error(conflict)),
        ));
        self
    }

    /// Puts a secondary item of the change as it is (no condition).
    pub fn put_item(&mut self, item: Item) -> &mut Self {
        self.writes.push((
            Write::Put {
                item,
                condition: None,
            },
            None,
        ));
        self
    }

    /// Moves a list's counter.
    pub fn count(&mut self, key: Key, delta: i64) -> &mut Self {
        self.writes.push((
            Write::Add {
                key,
                attribute: COUNT,
                delta,
            },
            None,
        ));
        self
    }

    /// Commits the change and its audit entry (`action` such as `tag.create`).
    pub async fn commit(
        mut self,
        store: &dyn Store,
        action: &str,
        resource: &str,
        resource_id: &str,
    ) -> Result<(), CommitError> {
        let entry =
            crate::domain::audit::AuditEntry::new(self.caller, action, resource, resource_id);
        let audit_item = to_item(&entry)?;
        self.writes.push((
            Write::Put {
                item: audit_item,
                condition: Some(Condition::NotExists),
            },
            None,
        ));
        self.count(
            keys::counter(self.caller.workspace_id, crate::domain::audit::LIST),
            1,
        );
        let shard = rand::random::<u32>() % keys::AUDIT_COUNTER_SHARDS;
        self.count(keys::audit_counter_shard(shard), 1);

        let (writes, failures): (Vec<_>, Vec<_>) = self.writes.into_iter().unzip();
        match store.write(writes).await {
            Ok(()) => Ok(()),
            Err(StoreError::ConditionFailed { index }) => {
                match failures.into_iter().nth(index).flatten() {
                    Some(OnFailure::IdTaken) => Err(CommitError::IdTaken),
                    Some(OnFailure::Error(e)) => Err(CommitError::Api(e)),
                    None => Err(CommitError::Api(ApiError::internal(format!(
                        "condition of write {index} of {action} failed"
                    )))),
                }
            }
            Err(e) => Err(CommitError::Api(e.into())),
        }
    }
}

/// Runs `attempt` with fresh ids until one is free (a clash needs two processes in
/// one millisecond drawing the same 12 bits; three clashes in a row is a bug).
pub async fn with_fresh_id<T, F, Fut>(mut attempt: F) -> ApiResult<T>
where
    F: FnMut(u64) -> Fut,
    Fut: std::future::Future<Output = Result<T, CommitError>>,
{
    for _ in 0..3 {
        match attempt(ids::new_id()).await {
            Ok(value) => return Ok(value),
            Err(CommitError::IdTaken) => continue,
            Err(CommitError::Api(e)) => return Err(e),
        }
    }
    Err(ApiError::internal("three id clashes in a row"))
}

impl From<CommitError> for ApiError {
    fn from(e: CommitError) -> Self {
        match e {
            CommitError::IdTaken => ApiError::internal("id clash on a record that is not new"),
            CommitError::Api(e) => e,
        }
    }
}

/// The timestamps every `/v3` record carries.
#[derive(Debug, Clone, Serialize, serde::Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Stamps {
    #[serde(with = "ids::ts_format")]
    pub created_at: Timestamp,
    #[serde(with = "ids::ts_format")]
    pub last_update_at: Timestamp,
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
