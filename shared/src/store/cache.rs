//! Decoded records kept in process, for a store that can keep them exact.
//!
//! Only the embedded store keeps one: its process owns the engine file and
//! every write goes through its writer thread, so the writer can forget what
//! it changes before it acknowledges the write, and nothing goes stale. (A
//! DynamoDB table is written by many processes; a copy there could only be
//! kept for a time, and a revoked token must fail on its very next request.)
//!
//! What a hit saves is what a GET by id spends most on: the engine's read
//! transaction, parsing the stored JSON into a map and the map into a record.
//! It is counted as the read it stands for, so the figures the store reports
//! (calls, read units) are the ones DynamoDB would.
//!
//! Exactness: a reader takes a [`Ticket`] (the generation) before it opens
//! its snapshot, and its record is kept only if the generation has not moved
//! since and no commit is under way. The writer ([`RecordCache::around`])
//! forgets the keys it writes and moves the generation on both before it
//! publishes a commit to readers (so no reader is answered an older record
//! once the commit shows) and after (so no read of an older snapshot is
//! kept), then answers.

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use super::Key;

/// A decoded record, of the type its [`TypeId`] names.
pub type Decoded = Arc<dyn Any + Send + Sync>;

/// Turns a stored item into the record a caller reads it as.
pub type Decode<'a> = &'a (dyn Fn(super::Item) -> Result<Decoded, super::StoreError> + Send + Sync);

/// Item bytes (as DynamoDB counts them) kept at most; past it the cache starts
/// over. Decoded records take two to three times their item size.
const MAX_BYTES: usize = 4 * 1024 * 1024;

#[derive(Default)]
pub struct RecordCache {
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    generation: u64,
    /// A commit is under way: nothing read now is kept.
    committing: bool,
    hits: u64,
    bytes: usize,
    /// One key may be read as more than one type (rarely): one entry each.
    entries: HashMap<Key, Vec<Entry>, foldhash::fast::RandomState>,
}

struct Entry {
    type_id: TypeId,
    record: Decoded,
    /// The item's size, for the read units a hit counts.
    size: usize,
}

/// The generation a reader saw before its snapshot.
#[derive(Clone, Copy)]
pub struct Ticket(u64);

impl RecordCache {
    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        // Every step leaves the map whole: a panic elsewhere cannot tear it.
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The record of `key` as `type_id`, and its item's size.
    pub fn get(&self, key: &Key, type_id: TypeId) -> Option<(Decoded, usize)> {
        let mut inner = self.lock();
        let entry = inner
            .entries
            .get(key)?
            .iter()
            .find(|e| e.type_id == type_id)?;
        let found = (entry.record.clone(), entry.size);
        inner.hits += 1;
        Some(found)
    }

    /// Taken before a read's snapshot; see [`RecordCache::keep`].
    pub fn ticket(&self) -> Ticket {
        Ticket(self.lock().generation)
    }

    /// Keeps what a read found, unless a write was committed after its ticket
    /// (its snapshot may be older than that write).
    pub fn keep(&self, ticket: Ticket, key: &Key, type_id: TypeId, record: Decoded, size: usize) {
        let mut inner = self.lock();
        if inner.generation != ticket.0 || inner.committing {
            return;
        }
        if inner.bytes + size > MAX_BYTES {
            inner.entries.clear();
            inner.bytes = 0;
        }
        let entries = inner.entries.entry(key.clone()).or_default();
        if entries.iter().any(|e| e.type_id == type_id) {
            return;
        }
        entries.push(Entry {
            type_id,
            record,
            size,
        });
        inner.bytes += size;
    }

    /// Runs the writer's publication of `keys`; see the module's documentation.
    pub fn around<T>(&self, keys: &[Key], commit: impl FnOnce() -> T) -> T {
        /// Forgets again when the commit ends, even by a panic, so that
        /// `committing` never stays set and the cache never stops keeping.
        struct After<'a>(&'a RecordCache, &'a [Key]);
        impl Drop for After<'_> {
            fn drop(&mut self) {
                self.0.forget(self.1, false);
            }
        }
        self.forget(keys, true);
        let _after = After(self, keys);
        commit()
    }

    fn forget(&self, keys: &[Key], committing: bool) {
        let mut inner = self.lock();
        inner.generation += 1;
        inner.committing = committing;
        for key in keys {
            if let Some(gone) = inner.entries.remove(key) {
                inner.bytes -= gone.iter().map(|e| e.size).sum::<usize>();
            }
        }
    }

    /// Reads answered from the cache so far, for tests.
    pub fn hits(&self) -> u64 {
        self.lock().hits
    }

    /// Records kept, for tests.
    pub fn len(&self) -> usize {
        self.lock().entries.values().map(Vec::len).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(text: &str) -> Decoded {
        Arc::new(text.to_owned())
    }

    fn text(found: Option<(Decoded, usize)>) -> Option<String> {
        found.map(|(r, _)| r.downcast_ref::<String>().expect("a String").clone())
    }

    #[test]
    fn a_write_after_the_ticket_keeps_the_read_out() {
        let cache = RecordCache::default();
        let key = Key::new("W#1#TAG#a", "A");
        let string = TypeId::of::<String>();
        let before = cache.ticket();
        cache.around(&[Key::new("elsewhere", "A")], || ());
        cache.keep(before, &key, string, record("old"), 10);
        assert!(cache.is_empty(), "a read older than a commit is not kept");

        cache.keep(cache.ticket(), &key, string, record("new"), 10);
        assert_eq!(text(cache.get(&key, string)).as_deref(), Some("new"));
        assert_eq!(cache.get(&key, TypeId::of::<u8>()).map(|(_, s)| s), None);

        cache.around(std::slice::from_ref(&key), || {
            assert_eq!(
                text(cache.get(&key, string)),
                None,
                "forgotten before the commit shows"
            );
            cache.keep(cache.ticket(), &key, string, record("during"), 10);
            assert!(cache.is_empty(), "nothing read during a commit is kept");
        });
        cache.keep(cache.ticket(), &key, string, record("after"), 10);
        assert_eq!(text(cache.get(&key, string)).as_deref(), Some("after"));
    }

    #[test]
    fn it_starts_over_past_its_size() {
        let cache = RecordCache::default();
        let string = TypeId::of::<String>();
        for i in 0..5 {
            let key = Key::new(format!("k{i}"), "s");
            cache.keep(cache.ticket(), &key, string, record("x"), MAX_BYTES / 4);
        }
        assert_eq!(cache.len(), 1, "the fifth record found the cache full");
        cache.around(&[Key::new("k4", "s")], || ());
        assert!(cache.is_empty());
    }
}
