//! The store: a narrow trait at the level of table operations.
//!
//! Two backends implement it: [`dynamo::DynamoStore`] (production, and DynamoDB
//! Local in tests) and the embedded store of `crm serve` and the tests (the
//! `embedded-store` crate, which no Lambda function links).
//! Everything above it (entities, uniqueness, counters, pagination, audit) is
//! written once in terms of these operations. There is no scan: every read is a
//! get, a batch get or a key-range query.

pub mod dynamo;
mod size;

pub use size::{as_dynamodb_number, is_dynamodb_number, item_size};

use std::borrow::Cow;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use async_trait::async_trait;
use serde_json::Value;

/// A stored item: its attributes, key attributes included.
pub type Item = serde_json::Map<String, Value>;

/// Attribute names every item carries.
pub const PK: &str = "pk";
pub const SK: &str = "sk";
/// Optimistic-concurrency version of records that are updated.
pub const VERSION: &str = "version";
/// The entity type, for people reading the table (`_type`: no record field is
/// called that, while a custom field has a `type` of its own).
pub const TYPE: &str = "_type";

/// Items that expire carry their expiry here, in epoch seconds: DynamoDB's time
/// to live deletes them (within days), and reads refuse them from that second on.
pub const TTL: &str = "ttl";

/// DynamoDB's limits that the code relies on; the embedded store enforces them too.
pub const MAX_ITEM_BYTES: usize = 400 * 1024;
pub const MAX_TRANSACTION_ITEMS: usize = 100;
pub const MAX_BATCH_GET: usize = 100;
pub const MAX_PAGE_BYTES: usize = 1024 * 1024;

#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Key {
    pub pk: String,
    pub sk: String,
}

impl Key {
    pub fn new(pk: impl Into<String>, sk: impl Into<String>) -> Self {
        Self {
            pk: pk.into(),
            sk: sk.into(),
        }
    }

    /// The key of a stored item.
    pub fn of(item: &Item) -> Option<Self> {
        let (pk, sk) = Self::parts_of(item)?;
        Some(Self::new(pk, sk))
    }

    /// A new item at this key, of this `_type`: what secondary items,
    /// sentinels and marks start from.
    pub fn item(self, kind: &str) -> Item {
        let mut item = self.into_item();
        item.insert(TYPE.into(), kind.into());
        item
    }

    /// The key alone, as an item: where a table Query continues after it
    /// (`Query::start_after`), whether or not an item is stored there.
    pub fn start_after(&self) -> Item {
        self.clone().into_item()
    }

    fn into_item(self) -> Item {
        let mut item = Item::new();
        item.insert(PK.into(), self.pk.into());
        item.insert(SK.into(), self.sk.into());
        item
    }

    /// The key of a stored item, borrowed: `(pk, sk)`.
    pub fn parts_of(item: &Item) -> Option<(&str, &str)> {
        Some((item.get(PK)?.as_str()?, item.get(SK)?.as_str()?))
    }
}

/// The whole condition vocabulary. Small on purpose: the embedded store evaluates it
/// natively and the DynamoDB store renders it as a condition expression.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Condition {
    Exists,
    NotExists,
    /// The item exists and its `version` attribute equals this.
    VersionIs(u64),
}

#[derive(Debug, Clone)]
pub enum Write {
    Put {
        item: Item,
        condition: Option<Condition>,
    },
    Delete {
        key: Key,
        condition: Option<Condition>,
    },
    /// Fails the whole write unless the condition holds; writes nothing.
    Check { key: Key, condition: Condition },
    /// Atomic add to a number attribute, creating the item (and attribute) at 0 when missing.
    Add {
        key: Key,
        attribute: &'static str,
        delta: i64,
    },
}

impl Write {
    pub fn key(&self) -> Option<Key> {
        let (pk, sk) = self.key_parts()?;
        Some(Key::new(pk, sk))
    }

    /// The key of the item it writes, borrowed: `(pk, sk)`.
    pub fn key_parts(&self) -> Option<(&str, &str)> {
        match self {
            Write::Put { item, .. } => Key::parts_of(item),
            Write::Delete { key, .. } | Write::Check { key, .. } | Write::Add { key, .. } => {
                Some((&key.pk, &key.sk))
            }
        }
    }
}

/// A table index: the table itself or a global secondary index.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Index {
    /// `None` for the table.
    pub name: Option<&'static str>,
    pub pk: &'static str,
    pub sk: &'static str,
}

impl Index {
    pub const TABLE: Index = Index {
        name: None,
        pk: PK,
        sk: SK,
    };
}

/// Which sort keys of a partition a query reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SkRange {
    All,
    Prefix(String),
    /// Inclusive on both ends.
    Between(String, String),
    AtLeast(String),
    AtMost(String),
}

impl SkRange {
    pub fn contains(&self, sk: &str) -> bool {
        match self {
            SkRange::All => true,
            SkRange::Prefix(p) => sk.starts_with(p.as_str()),
            SkRange::Between(a, b) => a.as_str() <= sk && sk <= b.as_str(),
            SkRange::AtLeast(a) => a.as_str() <= sk,
            SkRange::AtMost(b) => sk <= b.as_str(),
        }
    }
}

#[derive(Debug, Clone)]
pub struct Query {
    pub index: Index,
    pub pk: String,
    pub range: SkRange,
    /// `false` reads the range from its greatest sort key down.
    pub forward: bool,
    /// Items to evaluate at most in this call (DynamoDB's `Limit`).
    pub limit: Option<usize>,
    /// Continue after this key (a previous page's `last_key`).
    pub start_after: Option<Item>,
    /// Return key attributes only (saves transfer when stepping over an offset).
    pub keys_only: bool,
}

impl Query {
    pub fn new(index: Index, pk: impl Into<String>, range: SkRange) -> Self {
        Self {
            index,
            pk: pk.into(),
            range,
            forward: true,
            limit: None,
            start_after: None,
            keys_only: false,
        }
    }

    pub fn backward(mut self) -> Self {
        self.forward = false;
        self
    }
}

#[derive(Debug, Clone, Default)]
pub struct Page {
    pub items: Vec<Item>,
    /// Present when the range may hold more items after this page.
    pub last_key: Option<Item>,
}

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The condition of the write at this position failed; nothing was written.
    #[error("condition failed on write {index}")]
    ConditionFailed { index: usize },
    #[error("item exceeds the 400 KB item limit")]
    ItemTooLarge,
    /// Throttled or unreachable after the retries; nothing was written.
    #[error("store unavailable: {0}")]
    Unavailable(String),
    /// The write was sent and its answer never came, after the retries: it
    /// may or may not have been applied. Sending it again is safe only where
    /// something recognises it (an `Idempotency-Key`).
    #[error("outcome unknown: {0}")]
    Uncertain(String),
    /// A request the store refuses (a bug in the caller).
    #[error("invalid store request: {0}")]
    Invalid(String),
    #[error("store error: {0}")]
    Other(String),
    /// Not served: a gate in front of the store refused the request (its
    /// token did not hold: `auth::Gated`), for the reason it carries.
    #[error("refused: {0}")]
    Refused(Box<dyn std::error::Error + Send + Sync>),
}

/// Operation counts and consumed capacity, for tests, benchmarks and logs.
#[derive(Debug, Default)]
pub struct Metrics {
    pub gets: AtomicU64,
    pub batch_gets: AtomicU64,
    pub queries: AtomicU64,
    pub writes: AtomicU64,
    pub transactions: AtomicU64,
    /// Durable commits: one per write on DynamoDB; on the embedded store one
    /// per group its writer commits together.
    pub commits: AtomicU64,
    /// Items a query evaluated (DynamoDB's ScannedCount).
    pub scanned: AtomicU64,
    /// Capacity units in thousandths (DynamoDB reports halves and fractions).
    pub read_milli_units: AtomicU64,
    pub write_milli_units: AtomicU64,
}

/// A copy of the metrics at one moment; subtract two to see what a request cost.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct MetricsSnapshot {
    pub gets: u64,
    pub batch_gets: u64,
    pub queries: u64,
    pub writes: u64,
    pub transactions: u64,
    pub commits: u64,
    pub scanned: u64,
    pub read_units: f64,
    pub write_units: f64,
}

impl Metrics {
    pub fn snapshot(&self) -> MetricsSnapshot {
        let l = |a: &AtomicU64| a.load(Ordering::Relaxed);
        MetricsSnapshot {
            gets: l(&self.gets),
            batch_gets: l(&self.batch_gets),
            queries: l(&self.queries),
            writes: l(&self.writes),
            transactions: l(&self.transactions),
            commits: l(&self.commits),
            scanned: l(&self.scanned),
            read_units: l(&self.read_milli_units) as f64 / 1000.0,
            write_units: l(&self.write_milli_units) as f64 / 1000.0,
        }
    }

    pub fn count(counter: &AtomicU64, n: u64) {
        counter.fetch_add(n, Ordering::Relaxed);
    }

    pub fn units(counter: &AtomicU64, units: f64) {
        counter.fetch_add((units * 1000.0).round() as u64, Ordering::Relaxed);
    }
}

impl std::ops::Sub for MetricsSnapshot {
    type Output = MetricsSnapshot;
    fn sub(self, before: MetricsSnapshot) -> MetricsSnapshot {
        MetricsSnapshot {
            gets: self.gets - before.gets,
            batch_gets: self.batch_gets - before.batch_gets,
            queries: self.queries - before.queries,
            writes: self.writes - before.writes,
            transactions: self.transactions - before.transactions,
            commits: self.commits - before.commits,
            scanned: self.scanned - before.scanned,
            read_units: self.read_units - before.read_units,
            write_units: self.write_units - before.write_units,
        }
    }
}

impl MetricsSnapshot {
    /// Read calls of any kind.
    pub fn reads(&self) -> u64 {
        self.gets + self.batch_gets + self.queries
    }
}

#[async_trait]
pub trait Store: Send + Sync + 'static {
    /// One item by key. `consistent` asks for a strongly consistent read (twice the cost).
    async fn get(&self, key: &Key, consistent: bool) -> Result<Option<Item>, StoreError>;

    /// Up to [`MAX_BATCH_GET`] items by key, in no particular order; missing keys are skipped.
    async fn batch_get(&self, keys: &[Key]) -> Result<Vec<Item>, StoreError>;

    /// One page of a key range of the table or an index.
    async fn query(&self, query: &Query) -> Result<Page, StoreError>;

    /// All writes or none. One write is a single-item call; several are a transaction
    /// (at most [`MAX_TRANSACTION_ITEMS`], each on a different item).
    async fn write(&self, writes: Vec<Write>) -> Result<(), StoreError>;

    /// Several transactions, each all or nothing and answered on its own,
    /// applied in their order (a later one sees what an earlier one wrote):
    /// a batch's shared commits (`record::sharing`). Borrowed: the writes
    /// stay the operations', which commit them again alone when their
    /// transaction fails. One after the other here (DynamoDB, a copy each);
    /// the embedded store commits them in one durable commit, encoding them
    /// where they are.
    async fn write_all(&self, transactions: &[Vec<Cow<'_, Write>>]) -> Vec<Result<(), StoreError>> {
        let mut results = Vec::with_capacity(transactions.len());
        for writes in transactions {
            results.push(self.write(owned(writes)).await);
        }
        results
    }

    /// Makes what the writes before this one deleted or overwrote unreadable
    /// from the store's own files: an erasure's last step. The embedded store
    /// rewrites its file from its live items (its engine frees pages without
    /// overwriting them). DynamoDB: nothing to do here; what its backups and
    /// stream keep, and for how long, is in docs/design.md.
    async fn purge(&self) -> Result<(), StoreError> {
        Ok(())
    }

    fn metrics(&self) -> &Metrics;

    /// Which backend this is (`dynamodb` or `embedded`), for diagnostics.
    fn backend(&self) -> &'static str;
}

pub type SharedStore = Arc<dyn Store>;

/// A transaction of [`Store::write_all`], as owned writes.
pub fn owned(writes: &[Cow<'_, Write>]) -> Vec<Write> {
    writes.iter().map(|w| w.as_ref().clone()).collect()
}

/// Checks every backend applies before a transaction: DynamoDB refuses these too.
pub fn check_writes<'a>(
    writes: impl ExactSizeIterator<Item = &'a Write>,
) -> Result<(), StoreError> {
    if writes.len() == 0 {
        return Err(StoreError::Invalid("no writes".into()));
    }
    if writes.len() > MAX_TRANSACTION_ITEMS {
        return Err(StoreError::Invalid(format!(
            "{} writes in one transaction (at most {MAX_TRANSACTION_ITEMS})",
            writes.len()
        )));
    }
    // Borrowed, not cloned: this runs on every write.
    let mut keys = Vec::with_capacity(writes.len());
    for w in writes {
        let (pk, sk) = w
            .key_parts()
            .ok_or_else(|| StoreError::Invalid("item without pk/sk".into()))?;
        // DynamoDB refuses empty and oversized keys; so does every backend here.
        if pk.is_empty() || sk.is_empty() || pk.len() > 2048 || sk.len() > 1024 {
            return Err(StoreError::Invalid(format!(
                "a key DynamoDB refuses: {:?}",
                Key::new(pk, sk)
            )));
        }
        if let Write::Put { item, .. } = w
            && item_size(item) > MAX_ITEM_BYTES
        {
            return Err(StoreError::ItemTooLarge);
        }
        keys.push((pk, sk));
    }
    keys.sort_unstable();
    if let Some(pair) = keys.windows(2).find(|pair| pair[0] == pair[1]) {
        return Err(StoreError::Invalid(format!(
            "two writes on one item in a transaction: {:?}",
            Key::new(pair[0].0, pair[0].1)
        )));
    }
    Ok(())
}
