//! The writes since the last checkpoint, in memory: what the engine's file
//! does not hold yet.
//!
//! The writer applies a request to the overlay, not to the engine: a few
//! inserts into an in-memory B-tree instead of an engine transaction whose
//! commit writes its pages. A checkpoint writes the whole overlay into the
//! engine in one durable commit, in key order, each key once however often it
//! was written (a list's counter moves with every create), and the overlay
//! starts empty again. Until then the log ([`super::wal`]) is what makes its
//! writes durable.
//!
//! It is a persistent map ([`imbl::OrdMap`]): a copy shares every node with
//! its original, and a write copies only the nodes on its path. So each group
//! of writes hands readers a view of its own, in O(1), while the writer goes
//! on ([`super::read::Published`]).

use std::cmp::Ordering;
use std::iter::Peekable;
use std::ops::Bound;
use std::sync::Arc;

use imbl::OrdMap;
use redb::{AccessGuard, ReadOnlyTable};

use super::engine;
use crate::store::StoreError;

pub(super) type Bytes = Arc<[u8]>;
type Map = OrdMap<Bytes, Option<Bytes>>;
type EngineTable = ReadOnlyTable<&'static [u8], &'static [u8]>;

/// Engine keys and what they now hold: bytes, or `None` once deleted (which
/// hides what the engine holds under the key).
#[derive(Clone, Default)]
pub(super) struct Overlay {
    /// Items by their engine key.
    pub items: Map,
    /// Secondary-index entries: their item's engine key.
    pub indexes: Map,
    /// Bytes written into it, keys and values (what a checkpoint is due at).
    pub bytes: u64,
}

impl Overlay {
    pub fn set(&mut self, index: bool, key: Bytes, value: Option<Bytes>) {
        self.bytes += (key.len() + value.as_ref().map_or(0, |v| v.len())) as u64;
        let entries = if index {
            &mut self.indexes
        } else {
            &mut self.items
        };
        entries.insert(key, value);
    }
}

/// Bytes read from the engine, or from the overlay.
pub(super) enum Val<'a> {
    Engine(AccessGuard<'a, &'static [u8]>),
    Mem(&'a [u8]),
}

impl Val<'_> {
    pub fn bytes(&self) -> &[u8] {
        match self {
            Val::Engine(guard) => guard.value(),
            Val::Mem(bytes) => bytes,
        }
    }
}

/// What `key` holds: the overlays' say first (newest first), then the engine's.
pub(super) fn lookup<'a>(
    overlays: [&'a Map; 2],
    table: &'a EngineTable,
    key: &[u8],
) -> Result<Option<Val<'a>>, StoreError> {
    for overlay in overlays {
        if let Some(value) = overlay.get(key) {
            return Ok(value.as_deref().map(Val::Mem));
        }
    }
    Ok(table.get(key).map_err(engine)?.map(Val::Engine))
}

type Entry<'a> = Result<(Val<'a>, Val<'a>), StoreError>;
type Entries<'a> = Box<dyn Iterator<Item = Entry<'a>> + 'a>;

/// The entries of a key range, in order (or in reverse), of the overlays
/// (newest first) over the engine's: the ranges merged, a key in several
/// taken from the newest, a deleted one skipped.
pub(super) fn range<'a>(
    overlays: [&'a Map; 2],
    table: &'a EngineTable,
    lower: Bound<&[u8]>,
    upper: Bound<&[u8]>,
    forward: bool,
) -> Result<Entries<'a>, StoreError> {
    let from_engine = table.range::<&[u8]>((lower, upper)).map_err(engine)?;
    let from_engine = from_engine.map(|entry| match entry {
        Ok((k, v)) => Ok((Val::Engine(k), Val::Engine(v))),
        Err(e) => Err(engine(e)),
    });
    let mut merged: Entries<'a> = if forward {
        Box::new(from_engine)
    } else {
        Box::new(from_engine.rev())
    };
    for overlay in overlays.into_iter().rev() {
        let from_memory = overlay.range::<_, [u8]>((lower, upper));
        let newer: Box<dyn Iterator<Item = _>> = if forward {
            Box::new(from_memory)
        } else {
            Box::new(from_memory.rev())
        };
        merged = Box::new(Merged {
            older: merged.peekable(),
            newer: newer.peekable(),
            forward,
        });
    }
    Ok(merged)
}

/// Two sorted ranges merged, the newer's entry winning a key in both.
struct Merged<O: Iterator, N: Iterator> {
    older: Peekable<O>,
    newer: Peekable<N>,
    forward: bool,
}

impl<'a, O, N> Iterator for Merged<O, N>
where
    O: Iterator<Item = Entry<'a>>,
    N: Iterator<Item = (&'a Bytes, &'a Option<Bytes>)>,
{
    type Item = Entry<'a>;

    fn next(&mut self) -> Option<Entry<'a>> {
        loop {
            // Which comes first: the older side's next key or the newer's.
            let first = match (self.older.peek(), self.newer.peek()) {
                (None, None) => return None,
                (Some(Err(_)), _) | (Some(_), None) => Ordering::Less,
                (None, Some(_)) => Ordering::Greater,
                (Some(Ok((key, _))), Some((newer, _))) => {
                    let order = key.bytes().cmp(newer);
                    if self.forward { order } else { order.reverse() }
                }
            };
            match first {
                Ordering::Less => return self.older.next(),
                // The newer side holds the key's newer value.
                Ordering::Equal => drop(self.older.next()),
                Ordering::Greater => {}
            }
            if let (key, Some(value)) = self.newer.next()? {
                return Some(Ok((Val::Mem(key), Val::Mem(value))));
            }
        }
    }
}
