//! Purging: the store's file rewritten from its live items, so that no byte
//! of what was deleted or overwritten stays in the folder.
//!
//! The engine (redb) is copy-on-write: a write puts the new version of a
//! page elsewhere and frees the old one, which keeps its bytes until a later
//! write happens to reuse it; compaction moves pages whole (with the slack
//! an in-place delete leaves in them) and only cuts the free space at the
//! file's end. Nothing in the engine zeroes a freed page. So a purge copies
//! every live entry of both tables into a new file
//! (`crm-store.redb.purging`), makes it durable, renames it over the
//! engine's file and syncs the folder; then the store reads and writes the
//! new file. The old one, unlinked, is gone with its last reader.
//!
//! It runs on the writer thread, between two groups: writes wait for it
//! (they are queued, not refused), reads go on from the old file, which holds
//! the same items until the swap. A crash before the rename leaves the old
//! file as it was and the partial file beside it: the next open removes the
//! partial file and purges again, first of all writes. After the rename the
//! new file is the store.

use std::fs::File;
use std::path::Path;
use std::sync::{Arc, PoisonError, RwLock};

use redb::{Database, ReadableDatabase, ReadableTable};
use shared::store::StoreError;

use super::txn::begin;
use super::{CACHE_BYTES, DATA_FILE, INDEXES, ITEMS, LOG_FILE, engine};

/// The file a purge writes, renamed over [`DATA_FILE`] once durable.
pub const PURGING: &str = "crm-store.redb.purging";

/// The engine in use: every read and write takes the current one; a purge
/// replaces it.
pub(super) type Engine = Arc<RwLock<Arc<Database>>>;

pub(super) fn engine_of(db: Database) -> Engine {
    Arc::new(RwLock::new(Arc::new(db)))
}

/// The engine as of now.
pub(super) fn current(cell: &Engine) -> Arc<Database> {
    cell.read().unwrap_or_else(PoisonError::into_inner).clone()
}

fn io(what: &str, e: std::io::Error) -> StoreError {
    StoreError::Unavailable(format!("embedded store: {what}: {e}"))
}

fn remove_if_there(path: &Path) -> std::io::Result<bool> {
    match std::fs::remove_file(path) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(e),
    }
}

/// Whether a purge was stopped on the way (its partial file is there),
/// which is then removed: the caller purges again.
pub(super) fn interrupted(dir: &Path) -> std::io::Result<bool> {
    let stopped = remove_if_there(&dir.join(PURGING))?;
    if stopped {
        File::open(dir)?.sync_all()?;
        tracing::warn!("a purge of the store was stopped on the way; it runs again");
    }
    Ok(stopped)
}

/// Rewrites the store's file in `dir` from the live items of the engine in
/// `cell`, and puts the new file's engine there. Runs on the writer thread,
/// which commits nothing meanwhile.
pub(super) fn rewrite(cell: &Engine, dir: &Path) -> Result<(), StoreError> {
    let started = std::time::Instant::now();
    let partial = dir.join(PURGING);
    remove_if_there(&partial).map_err(|e| io("removing a partial purge", e))?;
    let copied = copy(&current(cell), &partial);
    let new = match copied {
        Ok(new) => new,
        Err(e) => {
            let _ = remove_if_there(&partial);
            return Err(e);
        }
    };
    if let Err(e) = std::fs::rename(&partial, dir.join(DATA_FILE)) {
        drop(new);
        let _ = remove_if_there(&partial);
        return Err(io("renaming the purged file", e));
    }
    // From here the folder names the new file: the store uses it at once.
    let old = std::mem::replace(
        &mut *cell.write().unwrap_or_else(PoisonError::into_inner),
        Arc::new(new),
    );
    // The first format's log, kept aside by its migration, holds every
    // write it had: it cannot be kept by a store that forgets.
    let log = remove_if_there(&dir.join(format!("{LOG_FILE}.migrated")))
        .map_err(|e| io("removing the migrated log", e))?;
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| io("syncing the folder", e))?;
    // The old engine closes with its last reader (here, most often), on its
    // unlinked file.
    drop(old);
    tracing::info!(
        millis = started.elapsed().as_millis() as u64,
        migrated_log_removed = log,
        "rewrote the store's file from its live items"
    );
    Ok(())
}

/// Every entry of both tables of `from`, as of its last commit, in a new
/// engine file at `path`, committed durably.
fn copy(from: &Database, path: &Path) -> Result<Database, StoreError> {
    let new = Database::builder()
        .set_cache_size(CACHE_BYTES)
        .create(path)
        .map_err(engine)?;
    let snapshot = from.begin_read().map_err(engine)?;
    // As every commit of the store: durable, keeping the allocator state.
    let txn = begin(&new, true)?;
    for table in [ITEMS, INDEXES] {
        let source = snapshot.open_table(table).map_err(engine)?;
        let mut target = txn.open_table(table).map_err(engine)?;
        for entry in source.iter().map_err(engine)? {
            let (key, value) = entry.map_err(engine)?;
            target.insert(key.value(), value.value()).map_err(engine)?;
        }
    }
    txn.commit().map_err(engine)?;
    Ok(new)
}
