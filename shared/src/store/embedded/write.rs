//! Writes: a request's conditions, then its writes, each item with its index
//! entries, applied to the overlay ([`super::overlay`]), and what the log is
//! to hold of them; and the checkpoint that moves the overlay into the
//! engine. The thread that runs them is [`super::writer`].

use redb::{Database, Durability};
use serde_json::Value;

use super::codec::from_bytes;
use super::overlay::{Bytes, Overlay};
use super::prepare::{self, NewValue, Op, Prepared, entries};
use super::read::{Engine, Snapshot};
use super::wal::{self, Batch};
use super::{INDEXES, ITEMS, META, engine};
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
    let unreadable = || StoreError::Other("an unreadable record in the store's log".into());
    for record in records {
        for (engine_key, value) in wal::effects(record).ok_or_else(unreadable)? {
            let old = state.item(engine_key)?;
            let item = value.map(from_bytes).transpose()?;
            // Nothing stored and nothing coming: nothing to do.
            let Some(key) = item.as_ref().or(old.as_ref()).and_then(Key::of) else {
                continue;
            };
            let new = item.zip(value);
            let new = new.map(|(item, bytes)| NewValue::encoded(defs, &key, &item, bytes));
            let before = old_entries(defs, &key, old.as_ref());
            set(
                &mut state.overlay,
                &Bytes::from(engine_key),
                new.as_ref(),
                before,
            );
        }
    }
    checkpoint(db, &[&state.overlay], number)
}

/// Checks every condition of a request, then applies its writes. The outer
/// error is the engine's (the whole group fails); the inner one is this
/// request's failed condition (it wrote nothing).
pub(super) fn apply(
    state: &mut Snapshot,
    defs: &[Index],
    writes: &[Prepared],
    log: &mut Batch,
) -> Result<Result<f64, StoreError>, StoreError> {
    // What each key holds: read once (no two writes of a request share a
    // key), decoded only where a version, a count or index entries need it.
    let mut olds = Vec::with_capacity(writes.len());
    for (index, w) in writes.iter().enumerate() {
        let stored = state.item_bytes(&w.engine_key)?;
        let exists = stored.is_some();
        let old = match stored {
            Some(v) if !matches!(w.op, Op::Check { .. }) => Some(from_bytes(v.bytes())?),
            Some(v) if matches!(w.op.condition(), Some(Condition::VersionIs(_))) => {
                Some(from_bytes(v.bytes())?)
            }
            _ => None,
        };
        let holds = match w.op.condition() {
            None => true,
            Some(Condition::Exists) => exists,
            Some(Condition::NotExists) => !exists,
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
        let before = old_entries(defs, &w.key, old.as_ref());
        units += match &w.op {
            Op::Put { value, .. } => {
                set(&mut state.overlay, &w.engine_key, Some(value), before);
                log.put(&w.engine_key, &value.bytes);
                value.units
            }
            Op::Delete { .. } => {
                set(&mut state.overlay, &w.engine_key, None, before);
                log.delete(&w.engine_key);
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
                set(&mut state.overlay, &w.engine_key, Some(&value), before);
                log.put(&w.engine_key, &value.bytes);
                value.units
            }
        };
    }
    Ok(Ok(units))
}

/// Applies one write without a condition at once (a migration's).
pub(super) fn write_one(
    state: &mut Snapshot,
    defs: &[Index],
    write: Write,
) -> Result<(), StoreError> {
    let write = prepare::one(defs, write)?;
    apply(state, defs, std::slice::from_ref(&write), &mut Batch::off())??;
    Ok(())
}

/// The index entries an item of `key` had, by the index's position.
fn old_entries(defs: &[Index], key: &Key, old: Option<&Item>) -> Vec<Option<Vec<u8>>> {
    match old {
        Some(_) => entries(defs, key, old).collect(),
        None => Vec::new(),
    }
}

/// Puts `new` under an engine key (or deletes what it holds), replacing the
/// index entries it had (`before`) by the new item's.
fn set(
    overlay: &mut Overlay,
    engine_key: &Bytes,
    new: Option<&NewValue>,
    before: Vec<Option<Vec<u8>>>,
) {
    overlay.set(false, engine_key.clone(), new.map(|v| v.bytes.clone()));
    let after = new.map_or(&[][..], |v| &v.entries[..]);
    let positions = before.len().max(after.len());
    let mut before = before.into_iter();
    for position in 0..positions {
        let old = before.next().flatten();
        let new = after.get(position).cloned().flatten();
        if old.as_deref() == new.as_deref() {
            continue;
        }
        if let Some(k) = old {
            overlay.set(true, Bytes::from(k), None);
        }
        if let Some(k) = new {
            overlay.set(true, k, Some(engine_key.clone()));
        }
    }
}
