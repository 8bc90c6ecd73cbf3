//! Writes: one writer thread commits every request waiting for it in one
//! engine transaction (group commit), durable before any is answered. Each
//! request is all or nothing: its conditions are read first (after the
//! writes of the requests before it in the group), and only when all hold
//! are its writes applied. An engine failure fails the whole group, which
//! the engine then rolls back.
//!
//! Why one transaction a group: a durable commit syncs the file twice
//! whatever it holds, so a group of 50 creates costs about what one does.
//!
//! A purge ([`super::purge`]) runs here too, after the writes sent before
//! it: a write waits for it, and is then committed to the new file.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::mpsc as sync_mpsc;

use redb::{Database, ReadableTable, Table};
use serde_json::Value;
use shared::store::*;
use tokio::sync::oneshot;

use super::cache::Cache;
use super::codec::{from_bytes, index_key, item_key, to_bytes, write_units};
use super::purge::{self, Engine};
use super::txn::begin;
use super::{INDEXES, ITEMS, engine};

/// Requests committed together at most.
const MAX_GROUP: usize = 256;

pub(super) enum Msg {
    /// Requests committed in one group, in their order.
    Writes(Vec<Request>),
    /// Rewrite the file from its live items (when anything was committed
    /// since the last purge); then answer.
    Purge(oneshot::Sender<Result<(), StoreError>>),
    /// Finish what is queued, then stop.
    Close,
}

pub(super) struct Request {
    pub writes: Vec<Prepared>,
    pub reply: oneshot::Sender<Done>,
}

/// A request's answer: the write units, or why nothing was written; and its
/// writes, handed back so that they are freed on the thread that made them.
/// The writer is the one thread every commit waits for, and an allocator
/// frees another thread's memory dearer than its own (mimalloc: a tenth of
/// the writer's time for a batch of creates).
pub(super) struct Done {
    pub outcome: Result<f64, StoreError>,
    pub writes: Vec<Prepared>,
}

/// A write made ready on its caller's thread: all that does not depend on
/// what the store holds.
pub(super) struct Prepared {
    key: Key,
    engine_key: Vec<u8>,
    op: Op,
}

enum Op {
    Put {
        value: NewValue,
        condition: Option<Condition>,
    },
    Delete {
        condition: Option<Condition>,
    },
    Check {
        condition: Condition,
    },
    Add {
        attribute: &'static str,
        delta: i64,
    },
}

/// What an item becomes: its bytes, its entry in each index (by the index's
/// position; `None` where it has none), and its write units.
struct NewValue {
    bytes: Vec<u8>,
    entries: Vec<Option<Vec<u8>>>,
    units: f64,
}

impl NewValue {
    /// `item` (numbers as DynamoDB keeps them), stored under `key`.
    fn of(defs: &[Index], key: &Key, mut item: Item) -> Result<Self, StoreError> {
        item.values_mut().for_each(as_dynamodb_number);
        Self::encoded(defs, key, &item)
    }

    /// [`Self::of`] of an item borrowed: copied only when a number must
    /// change (a float with nothing after the point), which few hold.
    fn of_borrowed(defs: &[Index], key: &Key, item: &Item) -> Result<Self, StoreError> {
        if item.values().all(is_dynamodb_number) {
            Self::encoded(defs, key, item)
        } else {
            Self::of(defs, key, item.clone())
        }
    }

    fn encoded(defs: &[Index], key: &Key, item: &Item) -> Result<Self, StoreError> {
        let size = item_size(item);
        Ok(Self {
            bytes: to_bytes(item, size)?,
            entries: entries(defs, key, Some(item)),
            units: write_units(size),
        })
    }
}

/// The index entries of an item (or of none), by the index's position.
fn entries(defs: &[Index], key: &Key, item: Option<&Item>) -> Vec<Option<Vec<u8>>> {
    let of = |(position, def)| index_key(position, def, item?, key);
    defs.iter().enumerate().map(of).collect()
}

/// Makes a request's writes (checked by [`check_writes`]) ready, where
/// they are: the caller keeps them (a batch's operation commits its own
/// again when their shared transaction fails).
pub(super) fn prepare<'a>(
    defs: &[Index],
    writes: impl Iterator<Item = &'a Write>,
) -> Result<Vec<Prepared>, StoreError> {
    writes.map(|w| prepared(defs, w)).collect()
}

fn prepared(defs: &[Index], write: &Write) -> Result<Prepared, StoreError> {
    let (key, op) = match write {
        Write::Put { item, condition } => {
            let key =
                Key::of(item).ok_or_else(|| StoreError::Invalid("item without pk/sk".into()))?;
            let value = NewValue::of_borrowed(defs, &key, item)?;
            let condition = *condition;
            (key, Op::Put { value, condition })
        }
        Write::Delete { key, condition } => (
            key.clone(),
            Op::Delete {
                condition: *condition,
            },
        ),
        Write::Check { key, condition } => (
            key.clone(),
            Op::Check {
                condition: *condition,
            },
        ),
        Write::Add {
            key,
            attribute,
            delta,
        } => (
            key.clone(),
            Op::Add {
                attribute,
                delta: *delta,
            },
        ),
    };
    Ok(Prepared {
        engine_key: item_key(&key),
        key,
        op,
    })
}

/// Starts the writer thread. `dir`: the store's folder, where a purge
/// rewrites the file (none in memory or on a test's backend: a purge there
/// has no file to rewrite).
/// What the writer shares with the store's readers.
pub(super) struct Shared {
    /// It counts its commits there.
    pub metrics: Arc<Metrics>,
    /// It forgets there the keys each commit wrote.
    pub cache: Arc<Cache>,
}

pub(super) fn spawn(
    cell: Engine,
    defs: Arc<Vec<Index>>,
    on_disk: bool,
    dir: Option<PathBuf>,
    shared: Shared,
) -> (sync_mpsc::Sender<Msg>, std::thread::JoinHandle<()>) {
    let (tx, rx) = sync_mpsc::channel();
    let thread = std::thread::Builder::new()
        .name("embedded-store-writer".into())
        .spawn(move || run(&cell, &defs, on_disk, dir.as_deref(), &rx, &shared))
        .expect("the embedded store's writer thread");
    (tx, thread)
}

fn run(
    cell: &Engine,
    defs: &[Index],
    on_disk: bool,
    dir: Option<&Path>,
    rx: &sync_mpsc::Receiver<Msg>,
    shared: &Shared,
) {
    let mut closing = false;
    // Whether the file may hold bytes a purge would drop: what it held
    // before this process is not known.
    let mut written = true;
    while !closing {
        let mut group = Vec::new();
        let mut asked = None;
        // A message's requests stay together in one group, whatever its size.
        match rx.recv() {
            Ok(Msg::Writes(requests)) => group = requests,
            Ok(Msg::Purge(reply)) => asked = Some(reply),
            Ok(Msg::Close) | Err(_) => break,
        }
        // A purge ends the group: it follows the writes sent before it.
        while asked.is_none() && group.len() < MAX_GROUP {
            match rx.try_recv() {
                Ok(Msg::Writes(requests)) => group.extend(requests),
                Ok(Msg::Purge(reply)) => asked = Some(reply),
                Ok(Msg::Close) => {
                    closing = true;
                    break;
                }
                Err(_) => break,
            }
        }
        if !group.is_empty() {
            written = true;
            commit_group(&purge::current(cell), defs, on_disk, group, shared);
        }
        if let Some(reply) = asked {
            let outcome = match dir {
                Some(dir) if written => purge::rewrite(cell, dir),
                _ => Ok(()),
            };
            shared.cache.clear();
            if let Err(e) = &outcome {
                tracing::error!(error = %e, "the embedded store could not rewrite its file");
            } else {
                written = false;
            }
            let _ = reply.send(outcome);
        }
    }
}

/// Commits a group and answers each of its requests.
fn commit_group(
    db: &Database,
    defs: &[Index],
    on_disk: bool,
    group: Vec<Request>,
    shared: &Shared,
) {
    let (requests, replies): (Vec<_>, Vec<_>) =
        group.into_iter().map(|r| (r.writes, r.reply)).unzip();
    match commit(db, defs, on_disk, &requests) {
        Ok(outcomes) => {
            Metrics::count(&shared.metrics.commits, 1);
            // Before any is answered: a request that reads after its write
            // reads it from the engine.
            let written = requests.iter().flatten().map(|w| w.engine_key.as_slice());
            shared.cache.forget(written);
            for ((reply, outcome), writes) in replies.into_iter().zip(outcomes).zip(requests) {
                let _ = reply.send(Done { outcome, writes });
            }
        }
        Err(e) => {
            tracing::error!(error = %e, requests = replies.len(), "the embedded store could not commit");
            for (reply, writes) in replies.into_iter().zip(requests) {
                let outcome = Err(StoreError::Unavailable(e.to_string()));
                let _ = reply.send(Done { outcome, writes });
            }
        }
    }
}

/// Commits a group: each request's outcome, or the engine's failure.
fn commit(
    db: &Database,
    defs: &[Index],
    on_disk: bool,
    requests: &[Vec<Prepared>],
) -> Result<Vec<Result<f64, StoreError>>, StoreError> {
    let txn = begin(db, on_disk)?;
    let outcomes = {
        let mut tables = Tables {
            items: txn.open_table(ITEMS).map_err(engine)?,
            indexes: txn.open_table(INDEXES).map_err(engine)?,
        };
        requests
            .iter()
            .map(|writes| tables.apply(defs, writes))
            .collect::<Result<Vec<_>, _>>()?
    };
    txn.commit().map_err(engine)?;
    Ok(outcomes)
}

/// The tables of a write transaction.
pub(super) struct Tables<'txn> {
    pub items: Table<'txn, &'static [u8], &'static [u8]>,
    pub indexes: Table<'txn, &'static [u8], &'static [u8]>,
}

impl Tables<'_> {
    fn item(&self, engine_key: &[u8]) -> Result<Option<Item>, StoreError> {
        match self.items.get(engine_key).map_err(engine)? {
            Some(value) => from_bytes(value.value()).map(Some),
            None => Ok(None),
        }
    }

    /// Checks every condition of a request, then applies its writes. The
    /// outer error is the engine's (the whole group fails); the inner one is
    /// this request's failed condition (it wrote nothing).
    fn apply(
        &mut self,
        defs: &[Index],
        writes: &[Prepared],
    ) -> Result<Result<f64, StoreError>, StoreError> {
        let mut olds = Vec::with_capacity(writes.len());
        for (index, w) in writes.iter().enumerate() {
            let old = self.item(&w.engine_key)?;
            let holds = match w.op.condition() {
                None => true,
                Some(Condition::Exists) => old.is_some(),
                Some(Condition::NotExists) => old.is_none(),
                Some(Condition::VersionIs(v)) => {
                    old.as_ref()
                        .and_then(|i| i.get(VERSION))
                        .and_then(Value::as_u64)
                        == Some(v)
                }
            };
            if !holds {
                return Ok(Err(StoreError::ConditionFailed { index }));
            }
            olds.push(old);
        }
        let mut units = 0.0;
        for (w, old) in writes.iter().zip(olds) {
            let before = match &old {
                Some(_) => entries(defs, &w.key, old.as_ref()),
                None => Vec::new(),
            };
            units += match &w.op {
                Op::Put { value, .. } => {
                    self.set(&w.engine_key, Some(value), before)?;
                    value.units
                }
                Op::Delete { .. } => {
                    self.set(&w.engine_key, None, before)?;
                    1.0
                }
                Op::Check { .. } => 1.0,
                Op::Add { attribute, delta } => {
                    let mut item = old.unwrap_or_else(|| {
                        let mut i = Item::new();
                        i.insert(PK.into(), w.key.pk.clone().into());
                        i.insert(SK.into(), w.key.sk.clone().into());
                        i
                    });
                    let current = item.get(*attribute).and_then(Value::as_i64).unwrap_or(0);
                    item.insert((*attribute).into(), current.saturating_add(*delta).into());
                    let value = NewValue::of(defs, &w.key, item)?;
                    self.set(&w.engine_key, Some(&value), before)?;
                    value.units
                }
            };
        }
        Ok(Ok(units))
    }

    /// Puts `new` under an engine key (or deletes what it holds), replacing
    /// the index entries it had (`before`) by the new item's.
    fn set(
        &mut self,
        engine_key: &[u8],
        new: Option<&NewValue>,
        before: Vec<Option<Vec<u8>>>,
    ) -> Result<(), StoreError> {
        match new {
            Some(value) => drop(
                self.items
                    .insert(engine_key, value.bytes.as_slice())
                    .map_err(engine)?,
            ),
            None => drop(self.items.remove(engine_key).map_err(engine)?),
        }
        let after = new.map_or(&[][..], |v| &v.entries[..]);
        let positions = before.len().max(after.len());
        let mut before = before.into_iter();
        for position in 0..positions {
            let old = before.next().flatten();
            let new = after.get(position).cloned().flatten();
            if old == new {
                continue;
            }
            if let Some(k) = old {
                self.indexes.remove(k.as_slice()).map_err(engine)?;
            }
            if let Some(k) = new {
                self.indexes
                    .insert(k.as_slice(), engine_key)
                    .map_err(engine)?;
            }
        }
        Ok(())
    }

    /// Writes an item's state as it is (`None`: deleted), with its index
    /// entries, whatever was there: a migration's replay.
    pub fn overwrite(
        &mut self,
        defs: &[Index],
        engine_key: &[u8],
        item: Option<Item>,
    ) -> Result<(), StoreError> {
        let old = self.item(engine_key)?;
        let Some(key) = item.as_ref().or(old.as_ref()).and_then(Key::of) else {
            return Ok(());
        };
        let before = match &old {
            Some(_) => entries(defs, &key, old.as_ref()),
            None => Vec::new(),
        };
        let new = item.map(|i| NewValue::of(defs, &key, i)).transpose()?;
        self.set(engine_key, new.as_ref(), before)
    }
}

impl Op {
    fn condition(&self) -> Option<Condition> {
        match self {
            Op::Put { condition, .. } | Op::Delete { condition } => *condition,
            Op::Check { condition } => Some(*condition),
            Op::Add { .. } => None,
        }
    }
}
