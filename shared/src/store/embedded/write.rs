//! Writes: one writer thread, group commit. Each request is one `Store::write`
//! (a single write or a transaction). The writer takes every request that is
//! waiting, checks and applies each inside one engine transaction (a request
//! whose condition fails applies nothing and answers its failure), commits
//! once, and then answers them all. With a folder the commit is durable
//! (fsynced) before any answer leaves: one fsync acknowledges many writes.

use std::sync::Arc;
use std::sync::mpsc as sync_mpsc;

use redb::{Database, Durability, ReadableTable, Table};
use serde_json::Value;
use tokio::sync::oneshot;

use super::codec::{self, from_bytes, item_key, to_bytes, write_units};
use super::{EmbeddedStore, INDEXES, ITEMS, engine};
use crate::store::cache::RecordCache;
use crate::store::*;

/// Requests one commit takes at most.
const MAX_GROUP: usize = 256;

pub(super) struct Request {
    pub writes: Vec<Write>,
    /// The write units, or why nothing was written.
    pub reply: oneshot::Sender<Result<f64, StoreError>>,
}

type Tbl<'t> = Table<'t, &'static [u8], &'static [u8]>;

pub(super) fn spawn(
    db: Arc<Database>,
    index_defs: Arc<Vec<Index>>,
    records: Arc<RecordCache>,
) -> (sync_mpsc::Sender<Request>, std::thread::JoinHandle<()>) {
    let (tx, rx) = sync_mpsc::channel::<Request>();
    let thread = std::thread::Builder::new()
        .name("crm-store-writer".into())
        .spawn(move || {
            // Ends when the store (the last sender) is dropped.
            while let Ok(first) = rx.recv() {
                let mut group = vec![first];
                while group.len() < MAX_GROUP {
                    match rx.try_recv() {
                        Ok(next) => group.push(next),
                        Err(_) => break,
                    }
                }
                commit(&db, &index_defs, &records, group);
            }
        })
        .expect("the store's writer thread");
    (tx, thread)
}

fn commit(db: &Database, defs: &[Index], records: &RecordCache, group: Vec<Request>) {
    let keys: Vec<Key> = group
        .iter()
        .flat_map(|r| &r.writes)
        .filter_map(Write::key)
        .collect();
    let outcome = (|| {
        let mut txn = db.begin_write().map_err(engine)?;
        // Immediate in memory too: its sync costs nothing there, and only a
        // durable commit lets the engine reuse the pages earlier ones freed.
        txn.set_durability(Durability::Immediate).map_err(engine)?;
        let mut answers = Vec::with_capacity(group.len());
        {
            let mut items = txn.open_table(ITEMS).map_err(engine)?;
            let mut indexes = txn.open_table(INDEXES).map_err(engine)?;
            for request in &group {
                answers.push(apply(&mut items, &mut indexes, defs, &request.writes)?);
            }
        }
        // Decoded records of these keys are forgotten around the commit, and
        // before any answer: a request that follows one sees what it wrote.
        records.around(&keys, || txn.commit()).map_err(engine)?;
        Ok::<_, StoreError>(answers)
    })();
    match outcome {
        Ok(answers) => {
            for (request, answer) in group.into_iter().zip(answers) {
                let _ = request.reply.send(answer);
            }
        }
        // The engine failed: nothing of the group was committed.
        Err(e) => {
            let message = e.to_string();
            for request in group {
                let _ = request
                    .reply
                    .send(Err(StoreError::Unavailable(message.clone())));
            }
        }
    }
}

fn read(items: &Tbl<'_>, key: &Key) -> Result<Option<Item>, StoreError> {
    let found = items.get(item_key(key).as_slice()).map_err(engine)?;
    found.map(|v| from_bytes(v.value())).transpose()
}

fn holds(items: &Tbl<'_>, key: &Key, condition: Condition) -> Result<bool, StoreError> {
    let item = read(items, key)?;
    Ok(match condition {
        Condition::Exists => item.is_some(),
        Condition::NotExists => item.is_none(),
        Condition::VersionIs(v) => {
            item.and_then(|i| i.get(VERSION).and_then(Value::as_u64)) == Some(v)
        }
    })
}

/// Checks every condition of a request, then applies its writes. The outer
/// error is the engine's (the whole group fails); the inner one is this
/// request's failed condition (it wrote nothing).
fn apply(
    items: &mut Tbl<'_>,
    indexes: &mut Tbl<'_>,
    defs: &[Index],
    writes: &[Write],
) -> Result<Result<f64, StoreError>, StoreError> {
    for (index, w) in writes.iter().enumerate() {
        let ok = match w {
            Write::Put { item, condition } => match (condition, Key::of(item)) {
                (None, _) => true,
                (Some(c), Some(k)) => holds(items, &k, *c)?,
                (Some(_), None) => false,
            },
            Write::Delete { key, condition } => match condition {
                None => true,
                Some(c) => holds(items, key, *c)?,
            },
            Write::Check { key, condition } => holds(items, key, *condition)?,
            Write::Add { .. } => true,
        };
        if !ok {
            return Ok(Err(StoreError::ConditionFailed { index }));
        }
    }
    let mut units = 0.0;
    for w in writes {
        units += match w {
            Write::Put { item, .. } => put(items, indexes, defs, item.clone())?,
            Write::Delete { key, .. } => {
                delete(items, indexes, defs, key)?;
                1.0
            }
            Write::Check { .. } => 1.0,
            Write::Add {
                key,
                attribute,
                delta,
            } => {
                let mut item = read(items, key)?.unwrap_or_else(|| {
                    let mut i = Item::new();
                    i.insert(PK.into(), key.pk.clone().into());
                    i.insert(SK.into(), key.sk.clone().into());
                    i
                });
                let current = item.get(*attribute).and_then(Value::as_i64).unwrap_or(0);
                item.insert((*attribute).into(), current.saturating_add(*delta).into());
                put(items, indexes, defs, item)?
            }
        };
    }
    Ok(Ok(units))
}

/// Puts an item over any item of its key, moving its index entries; answers
/// its write units.
pub(super) fn put(
    items: &mut Tbl<'_>,
    indexes: &mut Tbl<'_>,
    defs: &[Index],
    mut item: Item,
) -> Result<f64, StoreError> {
    let Some(key) = Key::of(&item) else {
        return Err(StoreError::Invalid("item without pk/sk".into()));
    };
    item.values_mut().for_each(codec::as_dynamodb_number);
    let engine_key = item_key(&key);
    let bytes = to_bytes(&item)?;
    let old = items
        .insert(engine_key.as_slice(), bytes.as_slice())
        .map_err(engine)?
        .map(|v| from_bytes(v.value()))
        .transpose()?;
    move_entries(indexes, defs, old.as_ref(), Some(&item), &engine_key)?;
    Ok(write_units(item_size(&item)))
}

pub(super) fn delete(
    items: &mut Tbl<'_>,
    indexes: &mut Tbl<'_>,
    defs: &[Index],
    key: &Key,
) -> Result<(), StoreError> {
    let engine_key = item_key(key);
    let old = items
        .remove(engine_key.as_slice())
        .map_err(engine)?
        .map(|v| from_bytes(v.value()))
        .transpose()?;
    move_entries(indexes, defs, old.as_ref(), None, &engine_key)
}

/// Replaces the index entries of `old` by those of `new`.
fn move_entries(
    indexes: &mut Tbl<'_>,
    defs: &[Index],
    old: Option<&Item>,
    new: Option<&Item>,
    engine_key: &[u8],
) -> Result<(), StoreError> {
    for (position, def) in defs.iter().enumerate() {
        let before = old.and_then(|i| EmbeddedStore::index_key(position, def, i));
        let after = new.and_then(|i| EmbeddedStore::index_key(position, def, i));
        if before == after {
            continue;
        }
        if let Some(k) = before {
            indexes.remove(k.as_slice()).map_err(engine)?;
        }
        if let Some(k) = after {
            indexes.insert(k.as_slice(), engine_key).map_err(engine)?;
        }
    }
    Ok(())
}
