//! The store of `crm serve` and the tests: DynamoDB's semantics on redb, an
//! embedded, transactional database engine (a copy-on-write B-tree with
//! ordered byte keys, checksummed commits).
//!
//! It keeps the semantics the code relies on, so what passes here passes on
//! DynamoDB: conditional writes, all-or-nothing transactions of at most 100
//! distinct items, the 400 KB item limit, sort keys in byte order, global
//! secondary indexes, `Limit` and the 1 MB page. It reports the capacity
//! DynamoDB Local reports (4 KB read units, halved when eventually consistent;
//! 1 KB write units; this store counts a transaction's write units per item,
//! where DynamoDB Local does not).
//!
//! Layout: items by `(pk, sk)` in one engine table; every secondary index is
//! entries `(index no, index pk, index sk, pk, sk)` in a second one, moved
//! with its item ([`codec`] has the byte encoding).
//!
//! Writes go to one writer thread, which commits every request waiting for it
//! in one engine transaction (group commit), durable before any of them is
//! answered ([`write`]). Reads open a read transaction of their own: the
//! engine's snapshot as of the last commit, never blocked by the writer.
//! `in_memory` is the same engine on its in-memory backend: one code path.
//!
//! A folder of an earlier format is migrated once on open ([`migrate`]).
//!
//! After an erasure the store rewrites its file from its live items
//! ([`Store::purge`], [`purge`]): the engine never overwrites what it frees,
//! so the folder would otherwise keep the erased bytes.

mod cache;
mod codec;
mod migrate;
pub mod partitions;
mod purge;
mod read;
mod txn;
mod write;

use std::borrow::Cow;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc as sync_mpsc;

use async_trait::async_trait;
use redb::{Database, ReadableDatabase, TableDefinition};
use shared::store::*;
use tokio::sync::oneshot;

use partitions::PartitionWrites;
use purge::Engine;

pub use redb::StorageBackend;
pub use redb::backends::FileBackend;

/// Items by `(pk, sk)`: the item as JSON.
const ITEMS: TableDefinition<&[u8], &[u8]> = TableDefinition::new("items");
/// Index entries `(index no, index pk, index sk, pk, sk)`: the item's key.
const INDEXES: TableDefinition<&[u8], &[u8]> = TableDefinition::new("indexes");

/// The engine file in the folder.
pub const DATA_FILE: &str = "crm-store.redb";

/// The JSON-lines log of the store before it moved onto redb, migrated on open.
const LOG_FILE: &str = "crm-store.jsonl";
/// Memory the engine may use for its page cache, whatever the data's size.
const CACHE_BYTES: usize = 64 * 1024 * 1024;

pub struct EmbeddedStore {
    /// The engine, replaced whole by a purge.
    db: Engine,
    writer: Option<sync_mpsc::Sender<write::Msg>>,
    writer_thread: Option<std::thread::JoinHandle<()>>,
    index_defs: Arc<Vec<Index>>,
    /// Shared with the writer thread, which counts its commits.
    metrics: Arc<Metrics>,
    /// Items read by key, kept decoded; the writer forgets what it writes.
    cache: Arc<cache::Cache>,
    /// The hot-key detector, when asked for ([`EmbeddedStore::count_partitions`]).
    partitions: Option<Arc<PartitionWrites>>,
    /// Held for the life of the store: one process per folder.
    _lock: Option<File>,
    /// Whether opening had to repair the engine's file (read it whole).
    repaired: bool,
}

/// A repair callback that notes that a repair ran (and logs it).
fn noting(repaired: &Arc<AtomicBool>) -> impl Fn(&mut redb::RepairSession) + 'static {
    let repaired = repaired.clone();
    move |_| {
        if !repaired.swap(true, Ordering::Relaxed) {
            tracing::warn!(
                "repairing the store's file: its last commit did not keep the allocator state"
            );
        }
    }
}

fn writer_stopped() -> StoreError {
    StoreError::Unavailable("the embedded store's writer stopped".into())
}

/// The engine's failures: they are the store's being unavailable.
fn engine(e: impl Into<redb::Error>) -> StoreError {
    StoreError::Unavailable(format!("embedded store: {}", e.into()))
}

impl EmbeddedStore {
    /// A store that lives as long as the process.
    pub fn in_memory(indexes: &[Index]) -> Self {
        let db = Database::builder()
            .create_with_backend(redb::backends::InMemoryBackend::new())
            .expect("an in-memory engine");
        Self::start(db, indexes, None, false, None).expect("an in-memory store")
    }

    /// A store kept in `dir`, created when missing. One process at a time: a
    /// second one (a `crm load` beside a running `crm serve`) is refused.
    /// Opening reads the engine's header; its time does not grow with the
    /// data, after a crash too (every commit keeps what a repair would
    /// otherwise rebuild by reading the whole file).
    pub fn open(dir: &Path, indexes: &[Index]) -> std::io::Result<Self> {
        std::fs::create_dir_all(dir)?;
        let lock = File::create(dir.join("crm-store.lock"))?;
        if lock.try_lock().is_err() {
            return Err(std::io::Error::other(format!(
                "{} is in use by another process (a running `crm serve`?)",
                dir.display()
            )));
        }
        migrate::from_json_lines(dir, indexes)?;
        // A purge stopped on the way is done again, as the first write.
        let owed = purge::interrupted(dir)?;
        let repaired = Arc::new(AtomicBool::new(false));
        let db = Database::builder()
            .set_cache_size(CACHE_BYTES)
            .set_repair_callback(noting(&repaired))
            .create(dir.join(DATA_FILE))
            .map_err(std::io::Error::other)?;
        migrate::from_log(dir, &db, indexes)?;
        let mut store = Self::start(db, indexes, Some(lock), true, Some(dir.to_owned()))
            .map_err(|e| std::io::Error::other(e.to_string()))?;
        store.repaired = repaired.load(Ordering::Relaxed);
        if owed {
            // Not waited for: opening stays constant with the data.
            let _ = store.ask_purge();
        }
        Ok(store)
    }

    /// A store on `backend` (a file, or a test's backend that fails on cue),
    /// committing as a store in a folder does.
    pub fn on_backend(backend: impl StorageBackend, indexes: &[Index]) -> Result<Self, StoreError> {
        let repaired = Arc::new(AtomicBool::new(false));
        let db = Database::builder()
            .set_repair_callback(noting(&repaired))
            .create_with_backend(backend)
            .map_err(engine)?;
        let mut store = Self::start(db, indexes, None, true, None)?;
        store.repaired = repaired.load(Ordering::Relaxed);
        Ok(store)
    }

    /// Whether opening had to repair the engine's file: read it whole, as
    /// after a crash whose last commit did not keep the allocator state.
    pub fn repaired_on_open(&self) -> bool {
        self.repaired
    }

    /// `dir`: the folder whose file a purge rewrites (a store on a
    /// backend has none: it commits as on disk, and a purge leaves it).
    fn start(
        db: Database,
        indexes: &[Index],
        lock: Option<File>,
        on_disk: bool,
        dir: Option<PathBuf>,
    ) -> Result<Self, StoreError> {
        txn::create_tables(&db, on_disk)?;
        let db = purge::engine_of(db);
        let index_defs = Arc::new(indexes.to_vec());
        let metrics = Arc::new(Metrics::default());
        let cache = Arc::new(cache::Cache::default());
        let (writer, writer_thread) = write::spawn(
            db.clone(),
            index_defs.clone(),
            on_disk,
            dir,
            write::Shared {
                metrics: metrics.clone(),
                cache: cache.clone(),
            },
        );
        Ok(Self {
            db,
            writer: Some(writer),
            writer_thread: Some(writer_thread),
            index_defs,
            metrics,
            cache,
            partitions: None,
            _lock: lock,
            repaired: false,
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

    /// Every item of the store, read once: for tests and operators, never
    /// for a request (a request reads what it answers).
    pub fn every_item(&self) -> Result<Vec<Item>, StoreError> {
        use redb::ReadableTable;
        let snapshot = self.snapshot(false)?;
        let mut items = Vec::new();
        for entry in snapshot.items.iter().map_err(engine)? {
            let (_, value) = entry.map_err(engine)?;
            items.push(codec::from_bytes(value.value())?);
        }
        Ok(items)
    }

    /// Sends the writer a purge; the receiver of its outcome.
    fn ask_purge(&self) -> Result<oneshot::Receiver<Result<(), StoreError>>, StoreError> {
        let (reply, answer) = oneshot::channel();
        self.writer
            .as_ref()
            .ok_or_else(writer_stopped)?
            .send(write::Msg::Purge(reply))
            .map_err(|_| writer_stopped())?;
        Ok(answer)
    }

    /// The engine's tables as of its last commit; the indexes' only when
    /// `indexes` (a query of an index).
    fn snapshot(&self, indexes: bool) -> Result<read::Snapshot, StoreError> {
        let current = purge::current(&self.db);
        let txn = current.begin_read().map_err(engine)?;
        Ok(read::Snapshot {
            items: txn.open_table(ITEMS).map_err(engine)?,
            indexes: match indexes {
                true => Some(txn.open_table(INDEXES).map_err(engine)?),
                false => None,
            },
            _engine: current,
        })
    }

    /// Items by key: kept decoded ([`cache`]), read from the engine otherwise.
    fn items_by_key(&self, keys: &[&Key]) -> Result<Vec<Option<Item>>, StoreError> {
        let mut found = Vec::with_capacity(keys.len());
        let mut missing = Vec::new();
        for (at, key) in keys.iter().enumerate() {
            let engine_key = codec::item_key(key);
            match self.cache.get(&engine_key) {
                Some(item) => found.push(Some(item)),
                None => {
                    found.push(None);
                    missing.push((at, engine_key));
                }
            }
        }
        if missing.is_empty() {
            return Ok(found);
        }
        let seen = self.cache.seq();
        let snapshot = self.snapshot(false)?;
        for (at, engine_key) in missing {
            let item = snapshot.item(&engine_key)?;
            if let Some(item) = &item {
                self.cache.keep(&engine_key, item, seen);
            }
            found[at] = item;
        }
        Ok(found)
    }
}

/// Closing waits for the writer to finish what it was given, so the engine
/// is shut down cleanly and the folder can be opened again at once.
impl Drop for EmbeddedStore {
    fn drop(&mut self) {
        if let Some(writer) = self.writer.take() {
            let _ = writer.send(write::Msg::Close);
        }
        if let Some(thread) = self.writer_thread.take() {
            let _ = thread.join();
        }
    }
}

#[async_trait]
impl Store for EmbeddedStore {
    async fn get(&self, key: &Key, consistent: bool) -> Result<Option<Item>, StoreError> {
        let item = self.items_by_key(&[key])?.pop().flatten();
        Metrics::count(&self.metrics.gets, 1);
        let size = item.as_ref().map_or(0, item_size);
        Metrics::units(
            &self.metrics.read_milli_units,
            codec::read_units(size, consistent),
        );
        Ok(item)
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
        let keys: Vec<&Key> = keys.iter().collect();
        let items: Vec<Item> = self.items_by_key(&keys)?.into_iter().flatten().collect();
        Metrics::count(&self.metrics.batch_gets, 1);
        let units: f64 = items
            .iter()
            .map(|i| codec::read_units(item_size(i), false))
            .sum();
        Metrics::units(&self.metrics.read_milli_units, units);
        Ok(items)
    }

    async fn query(&self, query: &Query) -> Result<Page, StoreError> {
        let snapshot = self.snapshot(query.index.name.is_some())?;
        let (page, bytes) = snapshot.query(&self.index_defs, query)?;
        Metrics::count(&self.metrics.queries, 1);
        Metrics::count(&self.metrics.scanned, page.items.len() as u64);
        Metrics::units(
            &self.metrics.read_milli_units,
            codec::read_units(bytes, false),
        );
        Ok(page)
    }

    async fn write(&self, writes: Vec<Write>) -> Result<(), StoreError> {
        self.write_all(&[writes.iter().map(Cow::Borrowed).collect()])
            .await
            .pop()
            .unwrap_or_else(|| Err(StoreError::Other("no answer".into())))
    }

    /// The transactions go to the writer together: one group, one durable
    /// commit, each all or nothing and applied in their order.
    async fn write_all(&self, transactions: &[Vec<Cow<'_, Write>>]) -> Vec<Result<(), StoreError>> {
        let stopped = || StoreError::Unavailable("the embedded store's writer stopped".into());
        let mut requests = Vec::with_capacity(transactions.len());
        let mut answers = Vec::with_capacity(transactions.len());
        for writes in transactions {
            let prepared = check_writes(writes.iter().map(AsRef::as_ref)).and_then(|()| {
                let counted = self.partitions.as_ref().map(|_| owned(writes));
                let transactional = writes.len() > 1;
                Ok((
                    write::prepare(&self.index_defs, writes.iter().map(AsRef::as_ref))?,
                    counted,
                    transactional,
                ))
            });
            match prepared {
                Ok((writes, counted, transactional)) => {
                    let (reply, answer) = oneshot::channel();
                    requests.push(write::Request { writes, reply });
                    answers.push(Ok((answer, counted, transactional)));
                }
                Err(e) => answers.push(Err(e)),
            }
        }
        let sent = !requests.is_empty()
            && self
                .writer
                .as_ref()
                .is_some_and(|writer| writer.send(write::Msg::Writes(requests)).is_ok());
        let mut results = Vec::with_capacity(answers.len());
        for answer in answers {
            let result = match answer {
                Err(e) => Err(e),
                Ok(_) if !sent => Err(stopped()),
                Ok((answer, counted, transactional)) => match answer.await.map(|done| {
                    drop(done.writes); // here, on the thread that made them
                    done.outcome
                }) {
                    Err(_) => Err(stopped()),
                    Ok(Err(e)) => Err(e),
                    Ok(Ok(units)) => {
                        let counter = if transactional {
                            &self.metrics.transactions
                        } else {
                            &self.metrics.writes
                        };
                        Metrics::count(counter, 1);
                        Metrics::units(&self.metrics.write_milli_units, units);
                        if let (Some(partitions), Some(writes)) = (&self.partitions, counted) {
                            partitions.record(&self.index_defs, &writes, transactional);
                        }
                        Ok(())
                    }
                },
            };
            results.push(result);
        }
        results
    }

    /// Rewrites the file from its live items, after every write sent before
    /// (none to do in memory, or when nothing was written since the last).
    async fn purge(&self) -> Result<(), StoreError> {
        self.ask_purge()?.await.map_err(|_| writer_stopped())?
    }

    fn metrics(&self) -> &Metrics {
        &self.metrics
    }

    fn backend(&self) -> &'static str {
        "embedded"
    }
}
