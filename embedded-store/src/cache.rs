//! Items read by key, kept decoded: every request reads its token's secret
//! item and most read a record by key, and decoding an item from its stored
//! JSON (with the snapshot and the engine's lookup) was a third of a GET by
//! id in process (callgrind). A write forgets the keys it wrote.
//!
//! Never stale: the writer, after each commit, moves [`Cache::seq`] and then
//! forgets the keys it wrote, under the lock a reader takes to keep an item;
//! a reader keeps what it read only when `seq` has not moved since before it
//! opened its snapshot. So an item read from a snapshot older than a commit
//! is either kept before that commit's keys are forgotten (and so forgotten)
//! or not kept at all.

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use shared::store::Item;

/// Items kept at most; past it the cache starts again (reads by key are of a
/// few hot items: tokens, a record being worked on).
const MAX_ITEMS: usize = 4096;

#[derive(Default)]
pub(super) struct Cache {
    seq: AtomicU64,
    items: Mutex<HashMap<Vec<u8>, Item>>,
}

impl Cache {
    /// Where the writes stand: read before a snapshot is opened.
    pub fn seq(&self) -> u64 {
        self.seq.load(Ordering::Acquire)
    }

    /// The item under `key`, if kept.
    pub fn get(&self, key: &[u8]) -> Option<Item> {
        self.items
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(key)
            .cloned()
    }

    /// Keeps `item`, read from a snapshot opened when the writes stood at
    /// `seen`, unless a commit came since.
    pub fn keep(&self, key: &[u8], item: &Item, seen: u64) {
        let mut items = self.items.lock().unwrap_or_else(|e| e.into_inner());
        if self.seq.load(Ordering::Acquire) != seen {
            return;
        }
        if items.len() >= MAX_ITEMS {
            items.clear();
        }
        items.insert(key.to_vec(), item.clone());
    }

    /// After a commit: the keys it wrote are read again from the engine.
    pub fn forget<'a>(&self, keys: impl Iterator<Item = &'a [u8]>) {
        self.seq.fetch_add(1, Ordering::AcqRel);
        let mut items = self.items.lock().unwrap_or_else(|e| e.into_inner());
        for key in keys {
            items.remove(key);
        }
    }

    /// Everything forgotten (a purge: the file is another).
    pub fn clear(&self) {
        self.seq.fetch_add(1, Ordering::AcqRel);
        self.items.lock().unwrap_or_else(|e| e.into_inner()).clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(v: u64) -> Item {
        let mut item = Item::new();
        item.insert("v".into(), v.into());
        item
    }

    #[test]
    fn a_read_from_before_a_commit_is_not_kept() {
        let cache = Cache::default();
        let seen = cache.seq();
        cache.keep(b"k", &item(1), seen);
        assert_eq!(cache.get(b"k"), Some(item(1)));
        // A commit of k; a reader whose snapshot was older keeps nothing.
        let old_reader = cache.seq();
        cache.forget([&b"k"[..]].into_iter());
        assert_eq!(cache.get(b"k"), None);
        cache.keep(b"k", &item(1), old_reader);
        assert_eq!(cache.get(b"k"), None);
        let fresh = cache.seq();
        cache.keep(b"k", &item(2), fresh);
        assert_eq!(cache.get(b"k"), Some(item(2)));
    }
}
