//! The hot-key detector: while it runs, the embedded store can count the
//! writes each partition takes, of the table (by `pk`) and of each index (by
//! the index's partition attribute), and the write units each takes in each
//! second of the request's clock. DynamoDB serves at most 1,000 write units
//! a second per partition, whatever the table's capacity: a partition that
//! takes a share of all writes that does not shrink as tenants are added caps
//! the whole service, and one past 1,000 units a second is throttled.
//! tests/tests/scale.rs drives loads through it.

use std::collections::HashMap;
use std::sync::Mutex;

use shared::store::{Index, Write, item_size};

#[derive(Default)]
pub struct PartitionWrites(Mutex<Counts>);

#[derive(Default)]
struct Counts {
    /// Writes per partition.
    writes: HashMap<String, u64>,
    /// Write units per partition and second (Unix seconds).
    units: HashMap<(String, i64), u64>,
}

/// Write units of one item of `size` bytes, as DynamoDB counts them: one
/// per KB begun, twice in a transaction.
fn units(size: usize, transactional: bool) -> u64 {
    let kb = size.div_ceil(1024).max(1) as u64;
    if transactional { 2 * kb } else { kb }
}

impl PartitionWrites {
    /// Counts one committed request: each write is one write on its item's
    /// partition, and a put one more on each index partition it names. In
    /// units: a put its size's (on the table and on each index entry, whose
    /// projection is the whole item), a delete, check or add one; twice each
    /// on the table when the request is a transaction (an index entry is
    /// written once, outside it).
    pub(super) fn record(&self, indexes: &[Index], writes: &[Write], transactional: bool) {
        let second = shared::ids::now().timestamp();
        let mut counts = self.0.lock().expect("partition counts");
        let mut count = |partition: String, units: u64| {
            *counts.writes.entry(partition.clone()).or_default() += 1;
            *counts.units.entry((partition, second)).or_default() += units;
        };
        for write in writes {
            let size = match write {
                Write::Put { item, .. } => item_size(item),
                _ => 1,
            };
            if let Some(key) = write.key() {
                count(key.pk, units(size, transactional));
            }
            if let Write::Put { item, .. } = write {
                for index in indexes.iter().filter(|i| i.name.is_some()) {
                    if let Some(pk) = item.get(index.pk).and_then(|v| v.as_str()) {
                        let name = index.name.unwrap_or_default();
                        count(format!("{name}:{pk}"), units(size, false));
                    }
                }
            }
        }
    }

    /// Every partition written, most written first.
    pub fn ranked(&self) -> Vec<(String, u64)> {
        let counts = self.0.lock().expect("partition counts");
        let mut ranked: Vec<_> = counts.writes.iter().map(|(k, v)| (k.clone(), *v)).collect();
        ranked.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        ranked
    }

    /// Each partition's busiest second: `(partition, second, write units)`,
    /// the most units first.
    pub fn peaks(&self) -> Vec<(String, i64, u64)> {
        let counts = self.0.lock().expect("partition counts");
        let mut peaks: HashMap<&str, (i64, u64)> = HashMap::new();
        for ((partition, second), units) in &counts.units {
            let peak = peaks.entry(partition).or_insert((*second, 0));
            if *units > peak.1 || (*units == peak.1 && *second < peak.0) {
                *peak = (*second, *units);
            }
        }
        let mut peaks: Vec<_> = peaks
            .into_iter()
            .map(|(p, (second, units))| (p.to_owned(), second, units))
            .collect();
        peaks.sort_by(|a, b| b.2.cmp(&a.2).then_with(|| a.0.cmp(&b.0)));
        peaks
    }

    /// Writes counted, over every partition.
    pub fn total(&self) -> u64 {
        self.0
            .lock()
            .expect("partition counts")
            .writes
            .values()
            .sum()
    }

    pub fn clear(&self) {
        let mut counts = self.0.lock().expect("partition counts");
        counts.writes.clear();
        counts.units.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use shared::store::{Item, Key};

    fn put(pk: &str, gsi1pk: Option<&str>, bytes: usize) -> Write {
        let mut item = Item::new();
        item.insert("pk".into(), pk.into());
        item.insert("sk".into(), "1".into());
        if let Some(gsi1pk) = gsi1pk {
            item.insert("gsi1pk".into(), gsi1pk.into());
        }
        let used = item_size(&item) + "body".len();
        item.insert("body".into(), "x".repeat(bytes - used).into());
        Write::Put {
            item,
            condition: None,
        }
    }

    /// A 3 KB put in a transaction is 6 units on its partition and 3 on its
    /// index entry's; a check beside it 2; the same put alone 3.
    #[test]
    fn counts_units_by_the_kb_twice_in_a_transaction() {
        let gsi = [Index {
            name: Some("gsi1"),
            pk: "gsi1pk",
            sk: "gsi1sk",
        }];
        let detector = PartitionWrites::default();
        let check = Write::Check {
            key: Key::new("C", "1"),
            condition: shared::store::Condition::Exists,
        };
        detector.record(&gsi, &[put("A", Some("G"), 3 * 1024), check], true);
        detector.record(&gsi, &[put("B", None, 3 * 1024)], false);
        let peaks: HashMap<String, u64> = detector
            .peaks()
            .into_iter()
            .map(|(p, _, units)| (p, units))
            .collect();
        let expected = [("A", 6), ("gsi1:G", 3), ("C", 2), ("B", 3)];
        assert_eq!(peaks, expected.map(|(p, u)| (p.to_owned(), u)).into());
        assert_eq!(detector.total(), 4);
    }
}
