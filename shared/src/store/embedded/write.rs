//! Writes: a request's conditions, then its writes, each item with its index
//! entries, applied to the overlay ([`super::overlay`]), and what the log is
//! to hold of them; and the checkpoint that moves the overlay into the
//! engine. The thread that runs them is [`super::writer`].

use redb::{Database, Durability};
use serde_json::Value;

use super::codec::{self, from_bytes, item_key, to_bytes, write_units};
use super::overlay::Overlay;
use super::read::{Engine, Snapshot};
use super::wal::{self, Batch};
use super::{EmbeddedStore, INDEXES, ITEMS, META, engine};
use crate::store::*;

/// The engine's record of its last checkpoint (see [`wal`]).
const CHECKPOINT: &str = "checkpoint";

/// The number of the engine's last checkpoint (0 before the first).
pub(super) fn last_checkpoint(db: &Database) -> Result<u64, StoreError> {
    use redb::ReadableDatabase;
    let txn = db.begin_read().map_err(engine)?;
    let meta = match txn.open_table(META) {
        Ok(meta) => meta,
        Err(redb::TableError::TableDoesNotExist(_)) => return Ok(0),
        Err(e) => return Err(engine(e)),
    };
    Ok(meta
        .get(CHECKPOINT)
        .map_err(engine)?
        .map_or(0, |v| v.value()))
}

/// Makes `txn` checkpoint `number`: durable, and recording its number.
fn mark_checkpoint(txn: &mut redb::WriteTransaction, number: u64) -> Result<(), StoreError> {
    txn.set_durability(Durability::Immediate).map_err(engine)?;
    let mut meta = txn.open_table(META).map_err(engine)?;
    meta.insert(CHECKPOINT, number).map_err(engine)?;
    Ok(())
}

/// Checkpoint `number`: the overlays' writes (oldest first) into the
/// engine, in one durable commit that records its number.
pub(super) fn checkpoint(
    db: &Database,
    overlays: &[&Overlay],
    number: u64,
) -> Result<(), StoreError> {
    let mut txn = db.begin_write().map_err(engine)?;
    mark_checkpoint(&mut txn, number)?;
    {
        let mut items = txn.open_table(ITEMS).map_err(engine)?;
        let mut indexes = txn.open_table(INDEXES).map_err(engine)?;
        // In key order: each write lands next to the last one.
        for overlay in overlays {
            let tables = [
                (&mut items, &overlay.items),
                (&mut indexes, &overlay.indexes),
            ];
            for (table, entries) in tables {
                for (key, value) in entries {
                    match value {
                        Some(bytes) => drop(table.insert(&key[..], &bytes[..]).map_err(engine)?),
                        None => drop(table.remove(&key[..]).map_err(engine)?),
                    }
                }
            }
        }
    }
    txn.commit().map_err(engine)
}

/// Applies the log's records (oldest first) in one commit that is
/// checkpoint `number`.
pub(super) fn replay(
    db: &Database,
    defs: &[Index],
    records: &[Vec<u8>],
    number: u64,
) -> Result<(), StoreError> {
    let mut state = Snapshot::of_engine(Engine::of(db)?);
    for record in records {
        let effects = wal::effects(record)
            .ok_or_else(|| StoreError::Other("an unreadable record in the store's log".into()))?;
        for (key, value) in effects {
            match value {
                Some(bytes) => {
                    let item = from_bytes(bytes)?;
                    put_bytes(&mut state, defs, key, bytes, &item)?
                }
                None => delete_bytes(&mut state, defs, key, &mut Batch::off())?,
            };
        }
    }
    checkpoint(db, &[&state.overlay], number)
}

fn holds(state: &Snapshot, key: &Key, condition: Condition) -> Result<bool, StoreError> {
    let item = state.item(&item_key(key))?;
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
pub(super) fn apply(
    state: &mut Snapshot,
    defs: &[Index],
    writes: &[Write],
    log: &mut Batch,
) -> Result<Result<f64, StoreError>, StoreError> {
    for (index, w) in writes.iter().enumerate() {
        let ok = match w {
            Write::Put { item, condition } => match (condition, Key::of(item)) {
                (None, _) => true,
                (Some(c), Some(k)) => holds(state, &k, *c)?,
                (Some(_), None) => false,
            },
            Write::Delete { key, condition } => match condition {
                None => true,
                Some(c) => holds(state, key, *c)?,
            },
            Write::Check { key, condition } => holds(state, key, *condition)?,
            Write::Add { .. } => true,
        };
        if !ok {
            return Ok(Err(StoreError::ConditionFailed { index }));
        }
    }
    let mut units = 0.0;
    for w in writes {
        units += match w {
            Write::Put { item, .. } => put(state, defs, item.clone(), log)?,
            Write::Delete { key, .. } => {
                delete(state, defs, key, log)?;
                1.0
            }
            Write::Check { .. } => 1.0,
            Write::Add {
                key,
                attribute,
                delta,
            } => {
                let mut item = state.item(&item_key(key))?.unwrap_or_else(|| {
                    let mut i = Item::new();
                    i.insert(PK.into(), key.pk.clone().into());
                    i.insert(SK.into(), key.sk.clone().into());
                    i
                });
                let current = item.get(*attribute).and_then(Value::as_i64).unwrap_or(0);
                item.insert((*attribute).into(), current.saturating_add(*delta).into());
                put(state, defs, item, log)?
            }
        };
    }
    Ok(Ok(units))
}

/// Puts an item over any item of its key, moving its index entries; answers
/// its write units.
pub(super) fn put(
    state: &mut Snapshot,
    defs: &[Index],
    mut item: Item,
    log: &mut Batch,
) -> Result<f64, StoreError> {
    let Some(key) = Key::of(&item) else {
        return Err(StoreError::Invalid("item without pk/sk".into()));
    };
    item.values_mut().for_each(codec::as_dynamodb_number);
    let engine_key = item_key(&key);
    let bytes = to_bytes(&item)?;
    put_bytes(state, defs, &engine_key, &bytes, &item)?;
    log.put(&engine_key, &bytes);
    Ok(write_units(item_size(&item)))
}

/// Puts `item`, encoded as `bytes`, under its engine key.
fn put_bytes(
    state: &mut Snapshot,
    defs: &[Index],
    engine_key: &[u8],
    bytes: &[u8],
    item: &Item,
) -> Result<(), StoreError> {
    let old = state.item(engine_key)?;
    state.overlay.set(false, engine_key, Some(bytes));
    move_entries(
        &mut state.overlay,
        defs,
        old.as_ref(),
        Some(item),
        engine_key,
    );
    Ok(())
}

pub(super) fn delete(
    state: &mut Snapshot,
    defs: &[Index],
    key: &Key,
    log: &mut Batch,
) -> Result<(), StoreError> {
    delete_bytes(state, defs, &item_key(key), log)
}

fn delete_bytes(
    state: &mut Snapshot,
    defs: &[Index],
    engine_key: &[u8],
    log: &mut Batch,
) -> Result<(), StoreError> {
    let old = state.item(engine_key)?;
    state.overlay.set(false, engine_key, None);
    log.delete(engine_key);
    move_entries(&mut state.overlay, defs, old.as_ref(), None, engine_key);
    Ok(())
}

/// Replaces the index entries of `old` by those of `new`.
fn move_entries(
    overlay: &mut Overlay,
    defs: &[Index],
    old: Option<&Item>,
    new: Option<&Item>,
    engine_key: &[u8],
) {
    for (position, def) in defs.iter().enumerate() {
        let before = old.and_then(|i| EmbeddedStore::index_key(position, def, i));
        let after = new.and_then(|i| EmbeddedStore::index_key(position, def, i));
        if before == after {
            continue;
        }
        if let Some(k) = before {
            overlay.set(true, &k, None);
        }
        if let Some(k) = after {
            overlay.set(true, &k, Some(engine_key));
        }
    }
}
