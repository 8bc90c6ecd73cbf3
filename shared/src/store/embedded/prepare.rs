//! A request's writes made ready on its caller's thread: all that does not
//! depend on what the store holds (engine keys, the new items' bytes and
//! index entries, their write units). The writer, one thread for every
//! request, is left only what does: conditions, counters, the index entries
//! an item leaves ([`super::write::apply`]).
//!
//! Why: the writer's share of a create was a third of the server's CPU, half
//! of it work any thread could do (a key read out of the item twice, the item
//! cloned, encoded, its bytes copied into the overlay, and freed on another
//! thread than the one that made it). Keys and bytes are made once, as the
//! shared buffers the overlay keeps, so applying a write moves them in.

use super::EmbeddedStore;
use super::codec::{self, item_key, to_bytes, write_units};
use super::overlay::Bytes;
use crate::store::*;

/// A write, ready for the writer.
pub(super) struct Prepared {
    pub key: Key,
    pub engine_key: Bytes,
    pub op: Op,
}

pub(super) enum Op {
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

impl Op {
    pub fn condition(&self) -> Option<Condition> {
        match self {
            Op::Put { condition, .. } | Op::Delete { condition } => *condition,
            Op::Check { condition } => Some(*condition),
            Op::Add { .. } => None,
        }
    }
}

/// What an item becomes: its bytes, its entry in each index (by the index's
/// position; `None` where it has none), and its write units.
pub(super) struct NewValue {
    pub bytes: Bytes,
    pub entries: Vec<Option<Bytes>>,
    pub units: f64,
}

impl NewValue {
    /// `item` (numbers as DynamoDB keeps them), stored under `key`.
    pub fn of(defs: &[Index], key: &Key, mut item: Item) -> Result<Self, StoreError> {
        item.values_mut().for_each(codec::as_dynamodb_number);
        let size = item_size(&item);
        let bytes = to_bytes(&item, size)?;
        Ok(Self::sized(defs, key, &item, &bytes, size))
    }

    /// `item`, whose bytes are `bytes` already (a record of the log).
    pub fn encoded(defs: &[Index], key: &Key, item: &Item, bytes: &[u8]) -> Self {
        Self::sized(defs, key, item, bytes, item_size(item))
    }

    fn sized(defs: &[Index], key: &Key, item: &Item, bytes: &[u8], size: usize) -> Self {
        Self {
            bytes: Bytes::from(bytes),
            entries: entries(defs, key, Some(item))
                .map(|e| e.map(Bytes::from))
                .collect(),
            units: write_units(size),
        }
    }
}

/// The index entries of an item (or of none), by the index's position.
pub(super) fn entries<'a>(
    defs: &'a [Index],
    key: &'a Key,
    item: Option<&'a Item>,
) -> impl Iterator<Item = Option<Vec<u8>>> + 'a {
    let of = move |(position, def)| EmbeddedStore::index_key(position, def, item?, key);
    defs.iter().enumerate().map(of)
}

/// Makes a request's writes (checked by [`check_writes`]) ready.
pub(super) fn prepare(defs: &[Index], writes: Vec<Write>) -> Result<Vec<Prepared>, StoreError> {
    writes.into_iter().map(|w| one(defs, w)).collect()
}

pub(super) fn one(defs: &[Index], write: Write) -> Result<Prepared, StoreError> {
    let (key, op) = match write {
        Write::Put { item, condition } => {
            let key =
                Key::of(&item).ok_or_else(|| StoreError::Invalid("item without pk/sk".into()))?;
            let value = NewValue::of(defs, &key, item)?;
            (key, Op::Put { value, condition })
        }
        Write::Delete { key, condition } => (key, Op::Delete { condition }),
        Write::Check { key, condition } => (key, Op::Check { condition }),
        Write::Add {
            key,
            attribute,
            delta,
        } => (key, Op::Add { attribute, delta }),
    };
    Ok(Prepared {
        engine_key: Bytes::from(item_key(&key)),
        key,
        op,
    })
}
