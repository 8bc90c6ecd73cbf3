//! The store's write transactions and tables, below the writer, the
//! migration and the purge, which all write.

use redb::{Database, Durability};
use shared::store::StoreError;

use super::{INDEXES, ITEMS, engine};

/// A write transaction as every one of this store's: durable when it
/// commits, and on disk keeping the engine's allocator state (redb's quick
/// repair), so that opening after a crash reads the commit slots rather
/// than the whole file: start-up stays constant with the data. Every commit
/// must: the open after a crash repairs in full unless the last commit kept
/// that state. (In memory there is nothing to repair.)
pub(super) fn begin(db: &Database, on_disk: bool) -> Result<redb::WriteTransaction, StoreError> {
    let mut txn = db.begin_write().map_err(engine)?;
    txn.set_durability(Durability::Immediate).map_err(engine)?;
    txn.set_quick_repair(on_disk);
    Ok(txn)
}

/// Every table exists from the start, so a read never meets a missing one.
pub(super) fn create_tables(db: &Database, on_disk: bool) -> Result<(), StoreError> {
    let txn = begin(db, on_disk)?;
    txn.open_table(ITEMS).map_err(engine)?;
    txn.open_table(INDEXES).map_err(engine)?;
    txn.commit().map_err(engine)
}
