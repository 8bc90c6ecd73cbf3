//! Folders of the earlier formats, migrated once on open.
//!
//! - **A JSON-lines log** (`crm-store.jsonl`: one line per committed write,
//!   `{"put":[items], "delete":[[pk, sk]]}`), the first format. It is
//!   replayed into a new engine file beside it, which is renamed into place
//!   only then, and the log set aside (`crm-store.jsonl.migrated`): a crash
//!   during the migration leaves the log as it was, and the next start
//!   migrates again.
//! - **An engine file with a write-ahead log** (`crm-store.wal`,
//!   `crm-store-2.wal`), the second: the store kept its latest writes in the
//!   log and moved them into the engine file at checkpoints. The log's
//!   records the engine file lacks (after a crash; none after a clean stop)
//!   are applied in one commit ([`log`]), and then the log's files are
//!   removed.

mod log;

use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::Path;

use redb::Database;
use serde_json::Value;
use shared::store::{Index, Item, Key, StoreError};

use super::codec::item_key;
use super::txn::{begin, create_tables};
use super::write::Tables;
use super::{DATA_FILE, INDEXES, ITEMS, LOG_FILE, engine};

const LINES_PER_COMMIT: usize = 10_000;

pub(super) fn from_json_lines(dir: &Path, indexes: &[Index]) -> std::io::Result<()> {
    let log = dir.join(LOG_FILE);
    if !log.exists() {
        return Ok(());
    }
    let data = dir.join(DATA_FILE);
    if !data.exists() {
        let partial = dir.join(format!("{DATA_FILE}.migrating"));
        let _ = std::fs::remove_file(&partial);
        let lines =
            replay(&log, &partial, indexes).map_err(|e| std::io::Error::other(e.to_string()))?;
        std::fs::rename(&partial, &data)?;
        File::open(dir)?.sync_all()?;
        tracing::info!(lines, from = %log.display(), "migrated the embedded store to its database engine");
    }
    std::fs::rename(&log, dir.join(format!("{LOG_FILE}.migrated")))?;
    File::open(dir)?.sync_all()?;
    Ok(())
}

/// Replays the JSON lines into a new engine file; answers the lines read.
fn replay(log: &Path, into: &Path, defs: &[Index]) -> Result<usize, StoreError> {
    let db = Database::create(into).map_err(engine)?;
    create_tables(&db, true)?;
    let file = File::open(log).map_err(|e| StoreError::Other(e.to_string()))?;
    let mut lines = BufReader::new(file).lines().enumerate().peekable();
    let mut count = 0;
    while lines.peek().is_some() {
        let txn = begin(&db, true)?;
        {
            let mut tables = Tables {
                items: txn.open_table(ITEMS).map_err(engine)?,
                indexes: txn.open_table(INDEXES).map_err(engine)?,
            };
            for (n, line) in lines.by_ref().take(LINES_PER_COMMIT) {
                let line = line.map_err(|e| StoreError::Other(e.to_string()))?;
                count += 1;
                if line.trim().is_empty() {
                    continue;
                }
                // A torn last line (a crash mid-append) loses only that write.
                let Ok(entry) = serde_json::from_str::<Value>(&line) else {
                    tracing::warn!(
                        line = n + 1,
                        "skipping an unreadable line of {}",
                        log.display()
                    );
                    continue;
                };
                for item in entry["put"].as_array().into_iter().flatten() {
                    if let Some(item) = item.as_object()
                        && let Some(key) = Key::of(item)
                    {
                        tables.overwrite(defs, &item_key(&key), Some(item.clone()))?;
                    }
                }
                for key in entry["delete"].as_array().into_iter().flatten() {
                    if let (Some(pk), Some(sk)) = (key[0].as_str(), key[1].as_str()) {
                        tables.overwrite(defs, &item_key(&Key::new(pk, sk)), None)?;
                    }
                }
            }
        }
        txn.commit().map_err(engine)?;
    }
    Ok(count)
}

/// Applies what the write-ahead log of the second format holds beyond the
/// engine file, then removes the log's files.
pub(super) fn from_log(dir: &Path, db: &Database, defs: &[Index]) -> std::io::Result<()> {
    let files = log::FILES.map(|name| dir.join(name));
    if !files.iter().any(|f| f.exists()) {
        return Ok(());
    }
    let failed = |e: StoreError| std::io::Error::other(e.to_string());
    create_tables(db, true).map_err(failed)?;
    let records = log::unapplied(dir, log::last_checkpoint(db).map_err(failed)?)?;
    if !records.is_empty() {
        let txn = begin(db, true).map_err(failed)?;
        {
            let mut tables = Tables {
                items: txn.open_table(ITEMS).map_err(engine).map_err(failed)?,
                indexes: txn.open_table(INDEXES).map_err(engine).map_err(failed)?,
            };
            for record in &records {
                let unreadable =
                    || failed(StoreError::Other("an unreadable record in the log".into()));
                for (engine_key, bytes) in log::effects(record).ok_or_else(unreadable)? {
                    let item: Option<Item> = bytes
                        .map(super::codec::from_bytes)
                        .transpose()
                        .map_err(failed)?;
                    tables.overwrite(defs, engine_key, item).map_err(failed)?;
                }
            }
        }
        txn.commit().map_err(engine).map_err(failed)?;
        tracing::info!(
            records = records.len(),
            "applied the earlier format's log to the store"
        );
    }
    for file in files {
        if file.exists() {
            std::fs::remove_file(file)?;
        }
    }
    File::open(dir)?.sync_all()?;
    Ok(())
}
