//! The writes of one change, committed atomically with its audit entry.

use super::audit::{AUDIT_LIST, AuditEntry};
use super::event::Change;
use super::{CLAIMED_BY, COUNT, Record, Versioned, to_item};
use crate::auth::Caller;
use crate::error::{ApiError, ApiResult};
use crate::ids::WorkspaceId;
use crate::keys;
use crate::store::{Condition, Item, Key, Store, StoreError, Write};
use serde_json::Value;

const CHANGED_MEANWHILE: &str =
    "the record changed while this request ran; read it again and retry";

/// Whether `e` is the 409 of a record written by another request between
/// this one's read and its write: reading it again and retrying may pass.
pub fn changed_meanwhile(e: &ApiError) -> bool {
    e.status == http::StatusCode::CONFLICT && e.message == CHANGED_MEANWHILE
}

/// Which write of a mutation failed its condition, and what that means to the client.
enum OnFailure {
    /// A fresh id was taken already: the caller retries with a new one.
    IdTaken,
    Error(ApiError),
    /// A value held before ([`Mutation::share`]): the commit puts this item
    /// (the value's shared mark) instead and tries again.
    Shared(Item),
}

/// The writes of one change, committed atomically together with its audit
/// entry and the events of the records it changes ([`super::event`]).
pub struct Mutation<'a> {
    caller: &'a Caller,
    writes: Vec<(Write, Option<OnFailure>)>,
    /// The records created, changed or deleted: one event each at commit.
    changes: Vec<Change>,
    /// The positions of the sentinels of [`Mutation::claim`], whose claimant
    /// is written at commit (only those: a record may carry any attribute).
    claims: Vec<usize>,
    /// An erasure's writes: their events carry no earlier values.
    redact: bool,
    /// The counter shards this mutation moves ([`Mutation::pick`]).
    pick: u32,
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
            changes: Vec::new(),
            claims: Vec::new(),
            redact: false,
            pick: super::sharing::shard_pick(),
        }
    }

    /// The pick of counter shards (a list's, the audit's, a rollup's) for
    /// every move of this mutation: its batch wave's, or one at random.
    /// One pick per mutation, so that the moves of many records in one
    /// transaction (an import's window) add into one `ADD` per counter.
    pub fn pick(&self) -> u32 {
        self.pick
    }

    /// The writes of an erasure: their events say what the records are
    /// after it, never what they held (`data.previous` is left out).
    pub fn redacting(caller: &'a Caller) -> Self {
        Self {
            redact: true,
            ..Self::new(caller)
        }
    }

    /// [`Mutation::update`] of a record being erased: its event is
    /// `<resource>.erased`, with the record as it is after.
    pub fn erase<R: Versioned>(&mut self, current: &R, next: &mut R) -> ApiResult<bool> {
        let changed = self.update(current, next)?;
        if changed && let Some(change) = self.changes.last_mut() {
            change.verb = "erased";
            change.previous = None;
        }
        Ok(changed)
    }

    /// Puts a new record; its id must not be taken.
    pub fn create<R: Record>(&mut self, record: &R) -> ApiResult<&mut Self> {
        self.changes.extend(Change::of(None, record, true));
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
        self.changes.extend(Change::of(None, record, false));
        self.replace_quietly(record, version)
    }

    /// [`Mutation::replace`], its event left to the caller.
    fn replace_quietly<R: Record>(&mut self, record: &R, version: u64) -> ApiResult<&mut Self> {
        let item = to_item(record)?;
        self.writes.push((
            Write::Put {
                item,
                condition: Some(Condition::VersionIs(version)),
            },
            Some(OnFailure::Error(ApiError::conflict(CHANGED_MEANWHILE))),
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
        self.changes.extend(Change::of(Some(current), next, false));
        self.replace_quietly(next, current.version())?;
        Ok(true)
    }

    /// Deletes `record`, which must still exist (a concurrent delete makes
    /// this a 404), with its event.
    pub fn delete_record<R: Record>(&mut self, record: &R, what: &str) -> &mut Self {
        self.changes.extend(Change::deleted(record));
        self.delete(record.key(), what)
    }

    /// Deletes `record` as read (a concurrent change makes this a 409), with
    /// an event of `verb` whose object holds `extra` besides the record
    /// (`contact.merged`, with the survivor's id).
    pub fn retire<R: Versioned>(
        &mut self,
        record: &R,
        verb: &'static str,
        extra: (&str, Value),
    ) -> &mut Self {
        if let Some(mut change) = Change::deleted(record) {
            change.verb = verb;
            if let Some(object) = change.object.as_object_mut() {
                object.insert(extra.0.to_owned(), extra.1);
            }
            self.changes.push(change);
        }
        self.writes.push((
            Write::Delete {
                key: record.key(),
                condition: Some(Condition::VersionIs(record.version())),
            },
            Some(OnFailure::Error(ApiError::conflict(CHANGED_MEANWHILE))),
        ));
        self
    }

    /// Deletes a record that must still exist (a concurrent delete makes this
    /// a 404); no event (see [`Mutation::delete_record`]).
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
        let mut item = key.item("Unique");
        item.insert("owner".into(), owner.into());
        // Who claimed it (a token id, or `import:<job>`: a redelivered import
        // knows its own) is filled in at commit, once the token is known.
        item.insert(CLAIMED_BY.into(), Value::Null);
        self.claims.push(self.writes.len());
        self.writes.push((
            Write::Put {
                item,
                condition: Some(Condition::NotExists),
            },
            Some(OnFailure::Error(conflict)),
        ));
        self
    }

    /// Fails the change with `conflict` when an item is at `key` (a value
    /// held under an earlier rule of uniqueness); writes nothing there.
    pub fn absent(&mut self, key: Key, conflict: ApiError) -> &mut Self {
        self.writes.push((
            Write::Check {
                key,
                condition: Condition::NotExists,
            },
            Some(OnFailure::Error(conflict)),
        ));
        self
    }

    /// Holds a value that more than one record may hold (a contact's e-mail).
    /// The first holder puts `first`; a later one, finding it there, puts
    /// `shared` instead, so that a listing of the shared values reads only
    /// them. Costs one item; a value held already costs one more attempt.
    pub fn share(&mut self, first: Key, shared: Item) -> &mut Self {
        let shared_key = Key::of(&shared);
        let has = |writes: &[(Write, Option<OnFailure>)], key: &Key| {
            writes.iter().any(|(w, _)| w.key().as_ref() == Some(key))
        };
        if has(&self.writes, &first) {
            // A second holder in this very change (two rows of an import).
            if !shared_key.is_some_and(|k| has(&self.writes, &k)) {
                self.put_item(shared);
            }
            return self;
        }
        self.writes.push((
            Write::Put {
                item: first.item("Held"),
                condition: Some(Condition::NotExists),
            },
            Some(OnFailure::Shared(shared)),
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

    /// Moves a counter (a list's, a rollup's). Moves of one counter in one
    /// change add up into one write (a transaction names an item once).
    pub fn count(&mut self, key: Key, delta: i64) -> &mut Self {
        for (write, _) in &mut self.writes {
            if let Write::Add {
                key: k,
                attribute,
                delta: d,
            } = write
                && *k == key
                && *attribute == COUNT
            {
                *d += delta;
                return self;
            }
        }
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

    /// Moves a list's counter: the shard of the mutation's pick, the same
    /// for every operation of a batch's wave, so that their moves add up
    /// into one write (with a shard each, a transaction of 100 items held
    /// about 20 creates, not 24, and a batch of 100 took 5 or 6).
    pub fn count_list(&mut self, counter: &keys::Counter, delta: i64) -> &mut Self {
        self.count(counter.shard(self.pick), delta)
    }

    /// [`Self::count_list`] of `list`'s counter in `workspace_id`, building
    /// only the shard it moves (all of a counter's keys were a tenth of a
    /// batch's string formatting).
    pub fn count_in(&mut self, workspace_id: WorkspaceId, list: &str, delta: i64) -> &mut Self {
        self.count(keys::counter_shard(workspace_id, list, self.pick), delta)
    }

    /// Commits the change and its audit entry (`action` such as `tag.create`).
    pub async fn commit(
        mut self,
        store: &dyn Store,
        action: &str,
        resource: &str,
        resource_id: &str,
    ) -> Result<(), CommitError> {
        let token_id = self.caller.token_id().await?;
        for &at in &self.claims {
            if let Some((Write::Put { item, .. }, _)) = self.writes.get_mut(at) {
                item.insert(CLAIMED_BY.into(), token_id.into());
            }
        }
        let entry = AuditEntry::new(self.caller, token_id, action, resource, resource_id);
        let audit_item = to_item(&entry)?;
        self.writes.push((
            Write::Put {
                item: audit_item,
                condition: Some(Condition::NotExists),
            },
            None,
        ));
        // The mutation's pick for both audit counters: a wave's operations
        // then move one shard of each, and share one `ADD` per counter.
        let pick = self.pick;
        self.count(
            keys::counter_shard(self.caller.workspace_id, AUDIT_LIST, pick),
            1,
        );
        self.count(keys::audit_counter().shard(pick), 1);
        // A bulk import's row: its mark lands with the change or not at all;
        // first, so that a row run again fails on it before any other claim.
        let creates = self.changes.iter().any(|c| c.verb == "created");
        if let Some(mark) = super::marks::current(resource_id, creates) {
            self.writes.insert(
                0,
                (
                    Write::Put {
                        item: mark,
                        condition: Some(Condition::NotExists),
                    },
                    Some(OnFailure::Error(super::marks::conflict())),
                ),
            );
        }
        for mut change in std::mem::take(&mut self.changes) {
            if self.redact {
                change.previous = None;
            }
            let event = change.into_event(self.caller, token_id);
            self.writes.push((
                Write::Put {
                    item: to_item(&event)?,
                    condition: Some(Condition::NotExists),
                },
                None,
            ));
        }

        // A move that came to nothing is no write.
        self.writes
            .retain(|(w, _)| !matches!(w, Write::Add { delta: 0, .. }));
        // Within a batch, with the other operations' commits ([`super::sharing`]).
        if super::sharing::active() && self.writes.len() < crate::store::MAX_TRANSACTION_ITEMS {
            let (writes, failures): (Vec<_>, Vec<_>) =
                std::mem::take(&mut self.writes).into_iter().unzip();
            match super::sharing::offer(store, writes, resource_id).await {
                super::sharing::Outcome::Landed => {
                    super::marks::landed();
                    return Ok(());
                }
                super::sharing::Outcome::Failed(e) => return Err(CommitError::Api(e.into())),
                // Its transaction failed a condition: on its own now, with
                // its writes handed back as they were.
                super::sharing::Outcome::Alone(writes) => {
                    self.writes = writes.into_iter().zip(failures).collect();
                }
            }
        }
        // The request's guard (an Idempotency-Key's record) moves in this transaction.
        let guard = match super::guard::current(resource_id).transpose()? {
            Some(guarded) => {
                self.writes
                    .push((guarded.write, Some(OnFailure::Error(guarded.lost))));
                Some(guarded.pending)
            }
            None => None,
        };
        if self.writes.len() > crate::store::MAX_TRANSACTION_ITEMS {
            return Err(CommitError::Api(ApiError::bad_request(format!(
                "this change touches {} items, more than one transaction holds ({}); make it in two steps",
                self.writes.len(),
                crate::store::MAX_TRANSACTION_ITEMS
            ))));
        }
        loop {
            let (writes, failures): (Vec<_>, Vec<_>) =
                std::mem::take(&mut self.writes).into_iter().unzip();
            // A value held before makes the write fail as a whole; keep a copy
            // to try again with its shared mark.
            let again = failures
                .iter()
                .any(|f| matches!(f, Some(OnFailure::Shared(_))))
                .then(|| writes.clone());
            match store.write(writes).await {
                Ok(()) => {
                    if let Some(guard) = guard {
                        guard.landed();
                    }
                    super::marks::landed();
                    return Ok(());
                }
                Err(StoreError::ConditionFailed { index }) => {
                    let mut failures = failures;
                    // A value held before: its shared mark instead, and again.
                    let shared = match failures.get_mut(index) {
                        Some(slot @ Some(OnFailure::Shared(_))) => slot.take(),
                        _ => None,
                    };
                    if let (Some(writes), Some(OnFailure::Shared(mark))) = (again, shared) {
                        self.writes = writes.into_iter().zip(failures).collect();
                        self.writes.remove(index);
                        let key = Key::of(&mark);
                        if !self.writes.iter().any(|(w, _)| w.key() == key) {
                            self.writes.insert(
                                index,
                                (
                                    Write::Put {
                                        item: mark,
                                        condition: None,
                                    },
                                    None,
                                ),
                            );
                        }
                        continue;
                    }
                    if let Some(guard) = guard {
                        guard.failed();
                    }
                    return match failures.into_iter().nth(index).flatten() {
                        Some(OnFailure::IdTaken) => Err(CommitError::IdTaken),
                        Some(OnFailure::Error(e)) => Err(CommitError::Api(e)),
                        Some(OnFailure::Shared(_)) | None => {
                            Err(CommitError::Api(ApiError::internal(format!(
                                "condition of write {index} of {action} failed"
                            ))))
                        }
                    };
                }
                Err(e) => {
                    // An unknown outcome leaves the guard unsure; the request's end settles it.
                    if let (false, Some(guard)) = (matches!(e, StoreError::Uncertain(_)), guard) {
                        guard.failed();
                    }
                    return Err(CommitError::Api(e.into()));
                }
            }
        }
    }
}
