//! Reads: each in a read transaction of its own, the engine's snapshot as of
//! the last commit.

use std::ops::Bound;

use redb::ReadOnlyTable;
use serde_json::Value;
use shared::store::*;

use super::codec::{after_prefix, encode, escaped, from_bytes, index_key, item_key, successor};
use super::engine;

type Table = ReadOnlyTable<&'static [u8], &'static [u8]>;
/// Engine bounds, lower and upper.
type Range = (Bound<Vec<u8>>, Bound<Vec<u8>>);

/// The engine's tables, as of one commit.
pub(super) struct Snapshot {
    pub items: Table,
    /// Opened for a query of an index only: a read by key needs none.
    pub indexes: Option<Table>,
    /// The engine it reads, held open while it does: a purge swaps the
    /// engine, and a dropped engine fails the reads of its snapshots.
    pub _engine: std::sync::Arc<redb::Database>,
}

impl Snapshot {
    /// The item under an engine key ([`item_key`]).
    pub fn item(&self, key: &[u8]) -> Result<Option<Item>, StoreError> {
        match self.items.get(key).map_err(engine)? {
            Some(value) => from_bytes(value.value()).map(Some),
            None => Ok(None),
        }
    }

    /// One page of a key range, and the bytes it read (for the capacity).
    pub fn query(&self, index_defs: &[Index], query: &Query) -> Result<(Page, usize), StoreError> {
        let bad_start = || StoreError::Invalid("bad start key".into());

        // The partition as an engine key range, from the start point on.
        let (table, prefix, start) = match query.index.name {
            None => {
                let start = match &query.start_after {
                    Some(s) => Some(item_key(&Key::of(s).ok_or_else(bad_start)?)),
                    None => None,
                };
                (&self.items, encode(&[&query.pk]), start)
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
                        let entry = index_key(position, &query.index, s, &key);
                        Some(entry.ok_or_else(bad_start)?)
                    }
                    None => None,
                };
                let indexes = self
                    .indexes
                    .as_ref()
                    .ok_or_else(|| StoreError::Other("a snapshot without its indexes".into()))?;
                (indexes, prefix, start)
            }
        };
        let Some((lower, upper)) = bounds(&prefix, &query.range, start.as_deref(), query.forward)
        else {
            return Ok((Page::default(), 0));
        };
        let range = table
            .range::<&[u8]>((
                lower.as_ref().map(Vec::as_slice),
                upper.as_ref().map(Vec::as_slice),
            ))
            .map_err(engine)?;
        let entries: Box<dyn Iterator<Item = _>> = if query.forward {
            Box::new(range)
        } else {
            Box::new(range.rev())
        };

        let limit = query.limit.unwrap_or(usize::MAX);
        let mut page = Page::default();
        let mut bytes = 0;
        for entry in entries {
            if limit == 0 {
                break;
            }
            let (_, value) = entry.map_err(engine)?;
            let item = match query.index.name {
                None => from_bytes(value.value())?,
                // An index entry holds its item's key.
                Some(_) => match self.item(value.value())? {
                    Some(item) => item,
                    None => continue,
                },
            };
            let sk = item
                .get(query.index.sk)
                .and_then(Value::as_str)
                .unwrap_or("");
            if !query.range.contains(sk) {
                if short_of_range(&query.range, sk, query.forward) {
                    continue;
                }
                break;
            }
            bytes += item_size(&item);
            let last = key_attributes(&query.index, &item);
            page.items
                .push(if query.keys_only { last.clone() } else { item });
            // Like DynamoDB: a page ends at `Limit` items or past 1 MB, and then
            // says where it stopped even when nothing follows.
            if page.items.len() == limit || bytes >= MAX_PAGE_BYTES {
                page.last_key = Some(last);
                break;
            }
        }
        Ok((page, bytes))
    }
}

/// The engine bounds of a sort-key range in the partition `prefix`, after
/// `start` (in the query's direction), so the read starts and stops where the
/// range does (the caller still checks each key); `None` when empty.
fn bounds(prefix: &[u8], range: &SkRange, start: Option<&[u8]>, forward: bool) -> Option<Range> {
    let end = after_prefix(prefix);
    let with = |tail: Vec<u8>| [prefix, tail.as_slice()].concat();
    let low: Vec<u8> = match range {
        SkRange::Prefix(a) | SkRange::Between(a, _) | SkRange::AtLeast(a) => with(escaped(a)),
        SkRange::All | SkRange::AtMost(_) => prefix.to_vec(),
    };
    let high: Vec<u8> = match range {
        // Past every key whose sort key is `b` (and whatever follows it).
        SkRange::Between(_, b) | SkRange::AtMost(b) => with([escaped(b), vec![0, 2]].concat()),
        SkRange::Prefix(p) => successor(&with(escaped(p))).unwrap_or_else(|| end.clone()),
        SkRange::All | SkRange::AtLeast(_) => end.clone(),
    };
    let high = high.min(end);
    let (lower, upper) = match (start, forward) {
        (Some(s), true) => (
            Bound::Excluded(s.max(low.as_slice()).to_vec()),
            Bound::Excluded(high),
        ),
        (Some(s), false) => (
            Bound::Included(low.clone()),
            Bound::Excluded(s.min(high.as_slice()).to_vec()),
        ),
        (None, _) => (Bound::Included(low), Bound::Excluded(high)),
    };
    // redb wants lower <= upper.
    let (Bound::Included(l) | Bound::Excluded(l)) = &lower else {
        return Some((lower, upper));
    };
    let (Bound::Included(u) | Bound::Excluded(u)) = &upper else {
        return Some((lower, upper));
    };
    let empty =
        l > u || (l == u && !matches!((&lower, &upper), (Bound::Included(_), Bound::Included(_))));
    (!empty).then_some((lower, upper))
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
