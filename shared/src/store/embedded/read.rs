//! Reads: each of the published snapshot of the store, never blocked by the
//! writer.

use std::ops::Bound;
use std::sync::{Arc, PoisonError, RwLock};

use redb::{Database, ReadOnlyTable, ReadableDatabase};
use serde_json::Value;

use super::codec::{after_prefix, encode, escaped, from_bytes, item_key, successor};
use super::overlay::{self, Overlay, Val};
use super::{EmbeddedStore, INDEXES, ITEMS, engine};
use crate::store::*;

type ReadTbl = ReadOnlyTable<&'static [u8], &'static [u8]>;

/// The engine as of its last checkpoint, its tables open.
pub(super) struct Engine {
    items: ReadTbl,
    indexes: ReadTbl,
}

impl Engine {
    pub fn of(db: &Database) -> Result<Arc<Self>, StoreError> {
        let txn = db.begin_read().map_err(engine)?;
        Ok(Arc::new(Self {
            items: txn.open_table(ITEMS).map_err(engine)?,
            indexes: txn.open_table(INDEXES).map_err(engine)?,
        }))
    }
}

/// The store as of one group of writes: the engine as of the last checkpoint,
/// and the writes since ([`overlay`]): those the next checkpoint is writing
/// into the engine (`frozen`), and those after.
#[derive(Clone)]
pub(super) struct Snapshot {
    pub engine: Arc<Engine>,
    pub frozen: Overlay,
    pub overlay: Overlay,
}

impl Snapshot {
    pub fn of_engine(engine: Arc<Engine>) -> Self {
        Self {
            engine,
            frozen: Overlay::default(),
            overlay: Overlay::default(),
        }
    }

    /// The bytes of the item under an engine key.
    pub fn item_bytes(&self, key: &[u8]) -> Result<Option<Val<'_>>, StoreError> {
        let overlays = [&self.overlay.items, &self.frozen.items];
        overlay::lookup(overlays, &self.engine.items, key)
    }

    /// The item under an engine key.
    pub fn item(&self, key: &[u8]) -> Result<Option<Item>, StoreError> {
        self.item_bytes(key)?
            .map(|v| from_bytes(v.bytes()))
            .transpose()
    }
}

/// What readers read: the store as of the last group of writes that is
/// durable. The writer applies a group before its log record is synced, so
/// reading its latest state could show a write that a crash then loses; the
/// snapshot moves only once it cannot be lost, and before any of its writes
/// is answered.
pub(super) struct Published(RwLock<Arc<Snapshot>>);

impl Published {
    pub fn new(snapshot: Snapshot) -> Self {
        Self(RwLock::new(Arc::new(snapshot)))
    }

    pub fn current(&self) -> Arc<Snapshot> {
        self.0
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Shows readers `snapshot`; answers the one it replaces, for the caller
    /// to drop once nothing waits on it: its end (its engine read
    /// transaction, the overlay's nodes no later view shares) comes after
    /// the lock is released, so readers never wait on it, and after the
    /// group's answers ([`super::publish::publish`]).
    #[must_use = "the replaced view: drop it once the group is answered"]
    pub fn publish(&self, snapshot: Snapshot) -> Arc<Snapshot> {
        let mut current = self.0.write().unwrap_or_else(PoisonError::into_inner);
        std::mem::replace(&mut *current, Arc::new(snapshot))
    }
}

pub(super) fn get(snapshot: &Snapshot, key: &Key) -> Result<Option<Item>, StoreError> {
    snapshot.item(&item_key(key))
}

pub(super) fn batch_get(snapshot: &Snapshot, keys: &[Key]) -> Result<Vec<Item>, StoreError> {
    let mut out = Vec::with_capacity(keys.len());
    for key in keys {
        if let Some(item) = snapshot.item(&item_key(key))? {
            out.push(item);
        }
    }
    Ok(out)
}

/// The key attributes of an item as a page's `last_key` or a keys-only item.
fn key_attributes(index: &Index, item: &Item) -> Item {
    let mut names = vec![PK, SK];
    if index.name.is_some() {
        names.extend([index.pk, index.sk]);
    }
    names
        .into_iter()
        .filter_map(|n| item.get(n).map(|v| (n.to_owned(), v.clone())))
        .collect()
}

/// Whether a sort key outside the range is short of it (step over it) rather
/// than past it (the query ends): sort keys come in order.
fn short_of_range(range: &SkRange, sk: &str, forward: bool) -> bool {
    match range {
        SkRange::Prefix(p) => {
            if forward {
                sk < p.as_str()
            } else {
                sk > p.as_str()
            }
        }
        SkRange::Between(a, b) => {
            if forward {
                sk < a.as_str()
            } else {
                sk > b.as_str()
            }
        }
        SkRange::AtLeast(a) => forward && sk < a.as_str(),
        SkRange::AtMost(b) => !forward && sk > b.as_str(),
        SkRange::All => false,
    }
}

/// One page of a key range, and the bytes it read (for the capacity).
pub(super) fn query(
    snapshot: &Snapshot,
    index_defs: &[Index],
    query: &Query,
) -> Result<(Page, usize), StoreError> {
    let bad_start = || StoreError::Invalid("bad start key".into());

    // The partition as an engine key range, from the start point on.
    let (index, prefix, start) = match query.index.name {
        None => {
            let start = match &query.start_after {
                Some(s) => Some(item_key(&Key::of(s).ok_or_else(bad_start)?)),
                None => None,
            };
            (false, encode(&[&query.pk]), start)
        }
        Some(name) => {
            let position = index_defs
                .iter()
                .position(|d| d.name == Some(name))
                .ok_or_else(|| StoreError::Invalid(format!("no index {name}")))?;
            let mut prefix = vec![position as u8];
            prefix.extend(encode(&[&query.pk]));
            let start = match &query.start_after {
                Some(s) => {
                    let key = Key::of(s).ok_or_else(bad_start)?;
                    let entry = EmbeddedStore::index_key(position, &query.index, s, &key);
                    Some(entry.ok_or_else(bad_start)?)
                }
                None => None,
            };
            (true, prefix, start)
        }
    };
    // The sort-key range as engine bounds, so the read starts and stops where
    // the range does (the loop below still checks each key).
    let end = after_prefix(&prefix);
    let with = |tail: Vec<u8>| [prefix.as_slice(), tail.as_slice()].concat();
    let low: Vec<u8> = match &query.range {
        SkRange::Prefix(a) | SkRange::Between(a, _) | SkRange::AtLeast(a) => with(escaped(a)),
        SkRange::All | SkRange::AtMost(_) => prefix.clone(),
    };
    let high: Vec<u8> = match &query.range {
        // Past every key whose sort key is `b` (and whatever follows it).
        SkRange::Between(_, b) | SkRange::AtMost(b) => with([escaped(b), vec![0, 2]].concat()),
        SkRange::Prefix(p) => successor(&with(escaped(p))).unwrap_or_else(|| end.clone()),
        SkRange::All | SkRange::AtLeast(_) => end.clone(),
    };
    let high = high.min(end.clone());
    let (lower, upper) = match (&start, query.forward) {
        (Some(s), true) => (
            Bound::Excluded(s.as_slice().max(low.as_slice())),
            Bound::Excluded(high.as_slice()),
        ),
        (Some(s), false) => (
            Bound::Included(low.as_slice()),
            Bound::Excluded(s.as_slice().min(high.as_slice())),
        ),
        (None, _) => (
            Bound::Included(low.as_slice()),
            Bound::Excluded(high.as_slice()),
        ),
    };
    if lower_after_upper(&lower, &upper) {
        return Ok((Page::default(), 0));
    }
    let (s, f) = (&snapshot.overlay, &snapshot.frozen);
    let (engine_table, overlays) = match index {
        false => (&snapshot.engine.items, [&s.items, &f.items]),
        true => (&snapshot.engine.indexes, [&s.indexes, &f.indexes]),
    };
    let entries = overlay::range(overlays, engine_table, lower, upper, query.forward)?;

    let limit = query.limit.unwrap_or(usize::MAX);
    let mut page = Page::default();
    let mut bytes = 0;
    for entry in entries {
        if limit == 0 {
            break;
        }
        let (_, value) = entry?;
        let item = match query.index.name {
            None => from_bytes(value.bytes())?,
            // An index entry holds its item's key.
            Some(_) => match snapshot.item(value.bytes())? {
                Some(item) => item,
                None => continue,
            },
        };
        let sk = item
            .get(query.index.sk)
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned();
        if !query.range.contains(&sk) {
            if short_of_range(&query.range, &sk, query.forward) {
                continue;
            }
            break;
        }
        bytes += item_size(&item);
        let last = key_attributes(&query.index, &item);
        page.items
            .push(if query.keys_only { last.clone() } else { item });
        // Like DynamoDB: a page ends at `Limit` items or past 1 MB, and then says
        // where it stopped even when nothing follows.
        if page.items.len() == limit || bytes >= MAX_PAGE_BYTES {
            page.last_key = Some(last);
            break;
        }
    }
    Ok((page, bytes))
}

/// An empty range (redb wants lower <= upper).
fn lower_after_upper(lower: &Bound<&[u8]>, upper: &Bound<&[u8]>) -> bool {
    let l = match lower {
        Bound::Included(l) | Bound::Excluded(l) => *l,
        Bound::Unbounded => return false,
    };
    let u = match upper {
        Bound::Included(u) | Bound::Excluded(u) => *u,
        Bound::Unbounded => return false,
    };
    l > u || (l == u && !matches!((lower, upper), (Bound::Included(_), Bound::Included(_))))
}
