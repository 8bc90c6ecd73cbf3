//! The embedded store of `crm serve`: DynamoDB's semantics on an embedded,
//! transactional database engine ([redb]: a B-tree with ordered byte keys,
//! ACID, copy-on-write, checksummed commits).
//!
//! It keeps the semantics the code relies on, so what passes here passes on
//! DynamoDB: conditional writes, all-or-nothing transactions of at most 100
//! distinct items, the 400 KB item limit, sort keys in byte order, global
//! secondary indexes, `Limit` and the 1 MB page. It reports the capacity
//! DynamoDB Local reports (4 KB read units, halved when eventually consistent;
//! 1 KB write units). Write units of transactions: DynamoDB Local does not
//! report them per item (6 WCU for a 6-item and for a 93-item transaction
//! alike), so this store's figure (1 per KB per item) is the one to read for
//! writes; AWS bills a transaction twice.
//!
//! Layout: the table is one engine table, items by `(pk, sk)`; every secondary
//! index is entries `(index no, index pk, index sk, pk, sk)` in a second one,
//! moved with its item. Each `write` is all or nothing, and durable before it
//! is acknowledged when the store is in a folder: its effects are in the
//! folder's write-ahead log, synced ([`wal`]). Writes go through one writer
//! thread that applies what is waiting together (group commit: one synced
//! write of the log acknowledges many) to an in-memory overlay ([`overlay`]),
//! which checkpoints write into the engine in the background ([`writer`]).
//! Reads are published views (the engine as of a checkpoint, the overlay
//! since), never blocked by the writer.
//!
//! `--in-memory` is the same engine on its in-memory backend: one code path.
//! A folder of the earlier format (`crm-store.jsonl`) is migrated once on open.

#[cfg(test)]
mod checkpoint_tests;
mod checkpointer;
mod codec;
#[cfg(test)]
mod log_failure_tests;
mod migrate;
mod overlay;
pub mod partitions;
mod prepare;
mod publish;
mod read;
mod wal;
mod write;
mod writer;

use partitions::PartitionWrites;
use std::fs::File;
use std::path::Path;
use std::sync::Arc;
use std::sync::mpsc as sync_mpsc;
use std::time::Duration;

use async_trait::async_trait;
use redb::{Database, TableDefinition};
use tokio::sync::oneshot;

#[cfg(test)]
pub(crate) use codec::as_dynamodb_number;
pub use wal::WAL_FILES;

use crate::store::cache::RecordCache;
use crate::store::*;
use std::any::TypeId;

/// Items by `(pk, sk)`: the item as JSON.
const ITEMS: TableDefinition<&[u8], &[u8]> = TableDefinition::new("items");
/// Index entries `(index no, index pk, index sk, pk, sk)`: the item's key.
const INDEXES: TableDefinition<&[u8], &[u8]> = TableDefinition::new("indexes");
/// The store's own records (the number of the last checkpoint).
const META: TableDefinition<&str, u64> = TableDefinition::new("meta");

/// The engine file in the folder.
pub const DATA_FILE: &str = "crm-store.redb";
/// Memory the engine may use for its page cache, whatever the data's size.
const CACHE_BYTES: usize = 64 * 1024 * 1024;

pub struct EmbeddedStore {
    /// What readers read ([`read::Published`]).
    published: Arc<read::Published>,
    writer: Option<sync_mpsc::Sender<writer::Msg>>,
    writer_thread: Option<std::thread::JoinHandle<()>>,
    index_defs: Arc<Vec<Index>>,
    metrics: Arc<Metrics>,
    /// Decoded records, forgotten by the writer as it writes ([`cache`]).
    records: Arc<RecordCache>,
    /// The hot-key detector, when asked for ([`EmbeddedStore::count_partitions`]).
    partitions: Option<Arc<PartitionWrites>>,
    /// Held for the life of the store: one process per folder.
    _lock: Option<File>,
}

/// The engine's failures: they are the store's being unavailable.
fn engine(e: impl Into<redb::Error>) -> StoreError {
    StoreError::Unavailable(format!("embedded store: {}", e.into()))
}

/// Every table exists from the start, so a read never meets a missing one.
fn create_tables(db: &Database) -> Result<(), StoreError> {
    let txn = db.begin_write().map_err(engine)?;
    txn.open_table(ITEMS).map_err(engine)?;
    txn.open_table(INDEXES).map_err(engine)?;
    txn.open_table(META).map_err(engine)?;
    txn.commit().map_err(engine)
}

impl EmbeddedStore {
    /// A store that lives as long as the process.
    pub fn in_memory(indexes: &[Index]) -> Self {
        let db = Database::builder()
            .create_with_backend(redb::backends::InMemoryBackend::new())
            .expect("an in-memory database");
        let every = writer::CHECKPOINT_EVERY;
        Self::start(db, indexes, None, None, every).expect("an in-memory store")
    }

    /// A store kept in `dir`, created when missing. One process at a time: a
    /// second one (a `crm load` beside a running `crm serve`) is refused.
    /// Opening reads nothing but the engine's header and the log: its time does
    /// not grow with the data. After a crash, the engine first checks its last
    /// commit, and the log's records since the last checkpoint (at most a
    /// second of writes, or 4 MB) are applied again.
    pub fn open(dir: &Path, indexes: &[Index]) -> std::io::Result<Self> {
        Self::open_checkpointing(dir, indexes, writer::CHECKPOINT_EVERY)
    }

    /// [`EmbeddedStore::open`], with checkpoints at least `every` while writes
    /// come (tests set it long, to find writes in the log).
    pub fn open_checkpointing(
        dir: &Path,
        indexes: &[Index],
        every: Duration,
    ) -> std::io::Result<Self> {
        std::fs::create_dir_all(dir)?;
        let lock = File::create(dir.join("crm-store.lock"))?;
        if lock.try_lock().is_err() {
            return Err(std::io::Error::other(format!(
                "{} is in use by another process (a running `crm serve`?)",
                dir.display()
            )));
        }
        migrate::from_json_lines(dir, indexes)?;
        let db = Database::builder()
            .set_cache_size(CACHE_BYTES)
            .create(dir.join(DATA_FILE))
            .map_err(std::io::Error::other)?;
        // Every open is a checkpoint, with the log's records that the engine
        // lacks (those of its last checkpoint's epoch and after): the log
        // then starts over in an epoch of its own, past any record a torn or
        // failed append left in its files.
        create_tables(&db).map_err(std::io::Error::other)?;
        let last = write::last_checkpoint(&db).map_err(std::io::Error::other)?;
        let wal::Opened { mut wal, epochs } = wal::Wal::open(dir, last)?;
        let newest = epochs.iter().map(|(epoch, _)| *epoch).max().unwrap_or(0);
        let replayed: Vec<Vec<u8>> = epochs
            .into_iter()
            .filter(|(epoch, _)| *epoch >= last)
            .flat_map(|(_, records)| records)
            .collect();
        let checkpoints = last.max(newest) + 1;
        write::replay(&db, indexes, &replayed, checkpoints).map_err(std::io::Error::other)?;
        if !replayed.is_empty() {
            tracing::info!(
                records = replayed.len(),
                "replayed the store's log (the last run did not close cleanly)"
            );
        }
        wal.start_over(checkpoints)?;
        Self::start(db, indexes, Some(lock), Some((wal, checkpoints)), every)
            .map_err(|e| std::io::Error::other(e.to_string()))
    }

    fn start(
        db: Database,
        indexes: &[Index],
        lock: Option<File>,
        wal: Option<(wal::Wal, u64)>,
        checkpoint_every: Duration,
    ) -> Result<Self, StoreError> {
        create_tables(&db)?;
        let state = read::Snapshot::of_engine(read::Engine::of(&db)?);
        let published = Arc::new(read::Published::new(state.clone()));
        let db = Arc::new(db);
        let index_defs = Arc::new(indexes.to_vec());
        let records = Arc::new(RecordCache::default());
        let (wal, checkpoints) = wal.unzip();
        let (writer, writer_thread) = writer::spawn(writer::Config {
            db,
            defs: index_defs.clone(),
            records: records.clone(),
            published: published.clone(),
            state,
            wal,
            checkpoints: checkpoints.unwrap_or(0),
            checkpoint_every,
        });
        Ok(Self {
            published,
            writer: Some(writer),
            writer_thread: Some(writer_thread),
            index_defs,
            metrics: Arc::new(Metrics::default()),
            records,
            partitions: None,
            _lock: lock,
        })
    }

    /// Counts the writes of every partition from now on (see [`partitions`]).
    pub fn count_partitions(mut self) -> Self {
        self.partitions = Some(Arc::new(PartitionWrites::default()));
        self
    }

    /// The counts, when [`EmbeddedStore::count_partitions`] was asked for.
    pub fn partition_writes(&self) -> Option<Arc<PartitionWrites>> {
        self.partitions.clone()
    }

    /// The engine's key of a secondary-index entry of `item`, if it has one.
    /// The entry of `item` (of `key`) in the index at `position`, if it has one.
    fn index_key(position: usize, def: &Index, item: &Item, key: &Key) -> Option<Vec<u8>> {
        let ipk = item.get(def.pk)?.as_str()?;
        let isk = item.get(def.sk)?.as_str()?;
        let mut out = vec![position as u8];
        out.extend(codec::encode(&[ipk, isk, &key.pk, &key.sk]));
        Some(out)
    }
}

impl EmbeddedStore {
    /// A GetItem as DynamoDB counts it, whether or not the engine was read.
    fn count_get(&self, size: usize, consistent: bool) {
        Metrics::count(&self.metrics.gets, 1);
        Metrics::units(
            &self.metrics.read_milli_units,
            codec::read_units(size, consistent),
        );
    }

    /// The decoded records it keeps ([`cache`]), for tests.
    pub fn records(&self) -> &RecordCache {
        &self.records
    }
}

/// Closing waits for the writer to finish what it was given, so the engine is
/// shut down cleanly (no check of its last commit on the next open) and the
/// folder can be opened again at once.
impl Drop for EmbeddedStore {
    fn drop(&mut self) {
        if let Some(writer) = self.writer.take() {
            let _ = writer.send(writer::Msg::Close);
        }
        if let Some(thread) = self.writer_thread.take() {
            let _ = thread.join();
        }
    }
}

#[async_trait]
impl Store for EmbeddedStore {
    async fn get(&self, key: &Key, consistent: bool) -> Result<Option<Item>, StoreError> {
        let item = read::get(&self.published.current(), key)?;
        self.count_get(item.as_ref().map_or(0, item_size), consistent);
        Ok(item)
    }

    async fn get_decoded(
        &self,
        key: &Key,
        consistent: bool,
        type_id: TypeId,
        decode: Decode<'_>,
    ) -> Result<Option<Decoded>, StoreError> {
        if let Some((record, size)) = self.records.get(key, type_id) {
            self.count_get(size, consistent);
            return Ok(Some(record));
        }
        let ticket = self.records.ticket();
        let Some(item) = read::get(&self.published.current(), key)? else {
            self.count_get(0, consistent);
            return Ok(None);
        };
        let size = item_size(&item);
        self.count_get(size, consistent);
        let record = decode(item)?;
        self.records
            .keep(ticket, key, type_id, record.clone(), size);
        Ok(Some(record))
    }

    async fn batch_get(&self, keys: &[Key]) -> Result<Vec<Item>, StoreError> {
        if keys.len() > MAX_BATCH_GET {
            return Err(StoreError::Invalid(format!(
                "batch get of {} keys",
                keys.len()
            )));
        }
        // DynamoDB refuses a batch that names one key twice.
        if keys.iter().collect::<std::collections::HashSet<_>>().len() != keys.len() {
            return Err(StoreError::Invalid("batch get with duplicate keys".into()));
        }
        let items = read::batch_get(&self.published.current(), keys)?;
        Metrics::count(&self.metrics.batch_gets, 1);
        let units: f64 = items
            .iter()
            .map(|i| codec::read_units(item_size(i), false))
            .sum();
        Metrics::units(&self.metrics.read_milli_units, units);
        Ok(items)
    }

    async fn query(&self, query: &Query) -> Result<Page, StoreError> {
        let (page, bytes) = read::query(&self.published.current(), &self.index_defs, query)?;
        Metrics::count(&self.metrics.queries, 1);
        Metrics::count(&self.metrics.scanned, page.items.len() as u64);
        Metrics::units(
            &self.metrics.read_milli_units,
            codec::read_units(bytes, false),
        );
        Ok(page)
    }

    async fn write(&self, writes: Vec<Write>) -> Result<(), StoreError> {
        check_writes(&writes)?;
        let transactional = writes.len() > 1;
        let counted = self
            .partitions
            .as_ref()
            .map(|p| (p.clone(), writes.clone()));
        let writes = prepare::prepare(&self.index_defs, writes)?;
        let (reply, answer) = oneshot::channel();
        self.writer
            .as_ref()
            .ok_or_else(|| StoreError::Unavailable("the embedded store is closed".into()))?
            .send(writer::Msg::Write(writer::Request { writes, reply }))
            .map_err(|_| StoreError::Unavailable("the embedded store's writer stopped".into()))?;
        let units = answer
            .await
            .map_err(|_| StoreError::Unavailable("the embedded store's writer stopped".into()))??;
        if transactional {
            Metrics::count(&self.metrics.transactions, 1);
        } else {
            Metrics::count(&self.metrics.writes, 1);
        }
        Metrics::units(&self.metrics.write_milli_units, units);
        if let Some((partitions, writes)) = counted {
            partitions.record(&self.index_defs, &writes);
        }
        Ok(())
    }

    fn metrics(&self) -> &Metrics {
        &self.metrics
    }

    fn backend(&self) -> &'static str {
        "embedded"
    }
}
