//! The embedded store: the table in memory, optionally kept in a folder.
//!
//! It keeps the DynamoDB semantics the code relies on, so that what passes here
//! passes on DynamoDB: conditional writes, all-or-nothing transactions of at most
//! 100 distinct items, the 400 KB item limit, sort keys in byte order, global
//! secondary indexes, `Limit` and the 1 MB page. It also reports the capacity
//! DynamoDB Local reports (4 KB read units, halved when eventually consistent;
//! 1 KB write units).
//!
//! Write units of transactions: DynamoDB Local does not report them per item (it
//! answered 6 WCU for a 6-item and for a 93-item transaction), so this store's
//! figure (1 per KB per item) is the one to read for writes; AWS doubles it.
//!
//! Persistence is a log: each committed write appends one JSON line of the items
//! it left behind. Opening replays the log and rewrites it compacted.

use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, BufWriter, Write as _};
use std::ops::Bound;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use async_trait::async_trait;
use serde_json::{Value, json};

mod log;

use crate::store::*;

type IndexKey = (String, String, String, String);

struct State {
    items: BTreeMap<Key, Item>,
    /// One map per secondary index: (index pk, index sk, pk, sk).
    indexes: Vec<BTreeMap<IndexKey, ()>>,
    log: Option<BufWriter<File>>,
    /// Held for the life of the store: one process per folder.
    _lock: Option<File>,
}

pub struct MemoryStore {
    state: Mutex<State>,
    index_defs: Vec<Index>,
    metrics: Metrics,
}

const LOG_FILE: &str = "crm-store.jsonl";

impl MemoryStore {
    /// A store that lives as long as the process.
    pub fn in_memory(indexes: &[Index]) -> Self {
        Self {
            state: Mutex::new(State {
                items: BTreeMap::new(),
                indexes: vec![BTreeMap::new(); indexes.len()],
                log: None,
                _lock: None,
            }),
            index_defs: indexes.to_vec(),
            metrics: Metrics::default(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn index_key(def: &Index, item: &Item) -> Option<IndexKey> {
        let ipk = item.get(def.pk)?.as_str()?;
        let isk = item.get(def.sk)?.as_str()?;
        let key = Key::of(item)?;
        Some((ipk.to_owned(), isk.to_owned(), key.pk, key.sk))
    }

    fn put_item(&self, state: &mut State, mut item: Item) {
        let Some(key) = Key::of(&item) else { return };
        item.values_mut().for_each(as_dynamodb_number);
        self.delete_item(state, &key);
        for (def, index) in self.index_defs.iter().zip(state.indexes.iter_mut()) {
            if let Some(ik) = Self::index_key(def, &item) {
                index.insert(ik, ());
            }
        }
        state.items.insert(key, item);
    }

    fn delete_item(&self, state: &mut State, key: &Key) {
        if let Some(old) = state.items.remove(key) {
            for (def, index) in self.index_defs.iter().zip(state.indexes.iter_mut()) {
                if let Some(ik) = Self::index_key(def, &old) {
                    index.remove(&ik);
                }
            }
        }
    }

    fn holds(state: &State, key: &Key, condition: Condition) -> bool {
        let item = state.items.get(key);
        match condition {
            Condition::Exists => item.is_some(),
            Condition::NotExists => item.is_none(),
            Condition::VersionIs(v) => {
                item.and_then(|i| i.get(VERSION)).and_then(Value::as_u64) == Some(v)
            }
        }
    }

    fn key_attributes(&self, index: &Index, item: &Item) -> Item {
        let mut names = vec![PK, SK];
        if index.name.is_some() {
            names.extend([index.pk, index.sk]);
        }
        names
            .into_iter()
            .filter_map(|n| item.get(n).map(|v| (n.to_owned(), v.clone())))
            .collect()
    }
}

/// DynamoDB keeps numbers as decimals: `1.0` reads back as `1`. So does this store.
pub(crate) fn as_dynamodb_number(value: &mut Value) {
    match value {
        Value::Number(n) => {
            if let Some(f) = n.as_f64()
                && n.is_f64()
                && f.fract() == 0.0
                && f.abs() < 9.007_199_254_740_992e15
            {
                *value = Value::from(f as i64);
            }
        }
        Value::Array(values) => values.iter_mut().for_each(as_dynamodb_number),
        Value::Object(map) => map.values_mut().for_each(as_dynamodb_number),
        _ => {}
    }
}

/// Capacity units as DynamoDB counts them.
fn read_units(bytes: usize, consistent: bool) -> f64 {
    let units = bytes.div_ceil(4096).max(1) as f64;
    if consistent { units } else { units / 2.0 }
}

fn write_units(bytes: usize) -> f64 {
    bytes.div_ceil(1024).max(1) as f64
}

fn upper(pk: &str) -> String {
    // The least string greater than every string that starts with `pk`'s partition.
    format!("{pk}\u{0}")
}

#[async_trait]
impl Store for MemoryStore {
    async fn get(&self, key: &Key, consistent: bool) -> Result<Option<Item>, StoreError> {
        let state = self.lock();
        let item = state.items.get(key).cloned();
        Metrics::count(&self.metrics.gets, 1);
        let size = item.as_ref().map(item_size).unwrap_or(0);
        Metrics::units(&self.metrics.read_milli_units, read_units(size, consistent));
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
        let state = self.lock();
        Metrics::count(&self.metrics.batch_gets, 1);
        let items: Vec<Item> = keys
            .iter()
            .filter_map(|k| state.items.get(k).cloned())
            .collect();
        let units: f64 = items.iter().map(|i| read_units(item_size(i), false)).sum();
        Metrics::units(&self.metrics.read_milli_units, units);
        Ok(items)
    }

    async fn query(&self, query: &Query) -> Result<Page, StoreError> {
        let state = self.lock();
        Metrics::count(&self.metrics.queries, 1);
        let limit = query.limit.unwrap_or(usize::MAX);

        // The keys of the partition in index order, from the start point on.
        let keys: Box<dyn Iterator<Item = Key> + '_> = match query.index.name {
            None => {
                let lower = match &query.start_after {
                    Some(start) if query.forward => Bound::Excluded(
                        Key::of(start)
                            .ok_or_else(|| StoreError::Invalid("bad start key".into()))?,
                    ),
                    _ => Bound::Included(Key::new(query.pk.clone(), "")),
                };
                let upper_bound = match &query.start_after {
                    Some(start) if !query.forward => Bound::Excluded(
                        Key::of(start)
                            .ok_or_else(|| StoreError::Invalid("bad start key".into()))?,
                    ),
                    _ => Bound::Excluded(Key::new(upper(&query.pk), "")),
                };
                let range = state
                    .items
                    .range((lower, upper_bound))
                    .map(|(k, _)| k.clone());
                if query.forward {
                    Box::new(range)
                } else {
                    Box::new(range.rev())
                }
            }
            Some(name) => {
                let position = self
                    .index_defs
                    .iter()
                    .position(|d| d.name == Some(name))
                    .ok_or_else(|| StoreError::Invalid(format!("no index {name}")))?;
                let start = match &query.start_after {
                    Some(start) => Some(
                        Self::index_key(&query.index, start)
                            .ok_or_else(|| StoreError::Invalid("bad start key".into()))?,
                    ),
                    None => None,
                };
                let empty = String::new;
                let lower = match &start {
                    Some(s) if query.forward => Bound::Excluded(s.clone()),
                    _ => Bound::Included((query.pk.clone(), empty(), empty(), empty())),
                };
                let upper_bound = match &start {
                    Some(s) if !query.forward => Bound::Excluded(s.clone()),
                    _ => Bound::Excluded((upper(&query.pk), empty(), empty(), empty())),
                };
                let range = state.indexes[position]
                    .range((lower, upper_bound))
                    .map(|((_, _, pk, sk), _)| Key::new(pk.clone(), sk.clone()));
                if query.forward {
                    Box::new(range)
                } else {
                    Box::new(range.rev())
                }
            }
        };

        let mut page = Page::default();
        let mut bytes = 0;
        for key in keys {
            if limit == 0 {
                break;
            }
            let Some(item) = state.items.get(&key) else {
                continue;
            };
            let sk = item
                .get(query.index.sk)
                .and_then(Value::as_str)
                .unwrap_or("");
            if !query.range.contains(sk) {
                // Sort keys are ordered: an item short of the range is stepped over,
                // one past it ends the query.
                let short_of_range = match &query.range {
                    SkRange::Prefix(p) => {
                        if query.forward {
                            sk < p.as_str()
                        } else {
                            sk > p.as_str()
                        }
                    }
                    SkRange::Between(a, b) => {
                        if query.forward {
                            sk < a.as_str()
                        } else {
                            sk > b.as_str()
                        }
                    }
                    SkRange::AtLeast(a) => query.forward && sk < a.as_str(),
                    SkRange::AtMost(b) => !query.forward && sk > b.as_str(),
                    SkRange::All => false,
                };
                if short_of_range {
                    continue;
                }
                break;
            }
            bytes += item_size(item);
            page.items.push(if query.keys_only {
                self.key_attributes(&query.index, item)
            } else {
                item.clone()
            });
            // Like DynamoDB: a page ends at `Limit` items or past 1 MB, and then says
            // where it stopped even when nothing follows.
            if page.items.len() == limit || bytes >= MAX_PAGE_BYTES {
                page.last_key = Some(self.key_attributes(&query.index, item));
                break;
            }
        }
        Metrics::count(&self.metrics.scanned, page.items.len() as u64);
        Metrics::units(&self.metrics.read_milli_units, read_units(bytes, false));
        Ok(page)
    }

    async fn write(&self, writes: Vec<Write>) -> Result<(), StoreError> {
        check_writes(&writes)?;
        let mut state = self.lock();
        for (index, w) in writes.iter().enumerate() {
            let ok = match w {
                Write::Put { item, condition } => condition
                    .is_none_or(|c| Key::of(item).is_some_and(|k| Self::holds(&state, &k, c))),
                Write::Delete { key, condition } => {
                    condition.is_none_or(|c| Self::holds(&state, key, c))
                }
                Write::Check { key, condition } => Self::holds(&state, key, *condition),
                Write::Add { .. } => true,
            };
            if !ok {
                return Err(StoreError::ConditionFailed { index });
            }
        }

        let transactional = writes.len() > 1;
        let mut units = 0.0;
        let mut puts = Vec::new();
        let mut deletes = Vec::new();
        for w in writes {
            match w {
                Write::Put { item, .. } => {
                    units += write_units(item_size(&item));
                    puts.push(item.clone());
                    self.put_item(&mut state, item);
                }
                Write::Delete { key, .. } => {
                    units += 1.0;
                    deletes.push(json!([key.pk, key.sk]));
                    self.delete_item(&mut state, &key);
                }
                Write::Check { .. } => units += 1.0,
                Write::Add {
                    key,
                    attribute,
                    delta,
                } => {
                    let mut item = state.items.get(&key).cloned().unwrap_or_else(|| {
                        let mut i = Item::new();
                        i.insert(PK.into(), key.pk.clone().into());
                        i.insert(SK.into(), key.sk.clone().into());
                        i
                    });
                    let current = item.get(attribute).and_then(Value::as_i64).unwrap_or(0);
                    item.insert(attribute.into(), (current + delta).into());
                    units += write_units(item_size(&item));
                    puts.push(item.clone());
                    self.put_item(&mut state, item);
                }
            }
        }
        if transactional {
            // One unit per KB of each item, as for a single write. AWS bills a
            // transactional write twice; docs/design.md gives both figures.
            Metrics::count(&self.metrics.transactions, 1);
        } else {
            Metrics::count(&self.metrics.writes, 1);
        }
        Metrics::units(&self.metrics.write_milli_units, units);

        if let Some(log) = state.log.as_mut() {
            let line = json!({ "put": puts, "delete": deletes });
            let written = serde_json::to_writer(&mut *log, &line)
                .map_err(std::io::Error::from)
                .and_then(|()| log.write_all(b"\n"))
                .and_then(|()| log.flush());
            if let Err(e) = written {
                return Err(StoreError::Unavailable(format!(
                    "writing the store log: {e}"
                )));
            }
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
