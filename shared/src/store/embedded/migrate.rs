//! The folder of the earlier embedded store was a JSON-lines log
//! (`crm-store.jsonl`: one line per committed write, `{"put":[items],
//! "delete":[[pk, sk]]}`). Opening such a folder replays the log once into a
//! new engine file beside it, and only then renames the file into place and
//! the log aside (`crm-store.jsonl.migrated`), so a crash during the migration
//! leaves the log as it was, and the next start migrates again.

use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::Path;

use redb::Database;
use serde_json::Value;

use super::read::{Engine, Snapshot};
use super::write::{checkpoint, write_one};
use super::{DATA_FILE, INDEXES, ITEMS, engine};
use crate::store::{Index, Key, StoreError, Write};

pub const LOG_FILE: &str = "crm-store.jsonl";
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

/// Replays the log into a new engine file; answers the lines read.
fn replay(log: &Path, into: &Path, defs: &[Index]) -> Result<usize, StoreError> {
    let db = Database::create(into).map_err(engine)?;
    let mut lines = BufReader::new(File::open(log).map_err(|e| StoreError::Other(e.to_string()))?)
        .lines()
        .enumerate()
        .peekable();
    // Both tables exist from the start (a view of the engine opens them).
    let txn = db.begin_write().map_err(engine)?;
    txn.open_table(ITEMS).map_err(engine)?;
    txn.open_table(INDEXES).map_err(engine)?;
    txn.commit().map_err(engine)?;
    let mut count = 0;
    while lines.peek().is_some() {
        let mut state = Snapshot::of_engine(Engine::of(&db)?);
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
                if let Some(item) = item.as_object() {
                    let put = Write::Put {
                        item: item.clone(),
                        condition: None,
                    };
                    write_one(&mut state, defs, put)?;
                }
            }
            for key in entry["delete"].as_array().into_iter().flatten() {
                if let (Some(pk), Some(sk)) = (key[0].as_str(), key[1].as_str()) {
                    let key = Key::new(pk, sk);
                    write_one(
                        &mut state,
                        defs,
                        Write::Delete {
                            key,
                            condition: None,
                        },
                    )?;
                }
            }
        }
        // Numbered 0, as an engine file with no checkpoint yet reads.
        checkpoint(&db, &[&state.overlay], 0)?;
    }
    Ok(count)
}
