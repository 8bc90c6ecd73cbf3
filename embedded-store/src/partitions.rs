//! The hot-key detector: while it runs, the embedded store can count the
//! writes each partition takes, of the table (by `pk`) and of each index (by
//! the index's partition attribute). DynamoDB serves about 1,000 write units a
//! second per partition; a partition that takes a share of all writes that
//! does not shrink as tenants are added caps the whole service.
//! tests/tests/scale.rs drives a multi-tenant load through it.

use std::collections::HashMap;
use std::sync::Mutex;

use shared::store::{Index, Write};

#[derive(Default)]
pub struct PartitionWrites(Mutex<HashMap<String, u64>>);

impl PartitionWrites {
    /// Counts one committed request: each write is one unit on its item's
    /// partition, and a put one more on each index partition it names.
    pub(super) fn record(&self, indexes: &[Index], writes: &[Write]) {
        let mut counts = self.0.lock().expect("partition counts");
        for write in writes {
            if let Some(key) = write.key() {
                *counts.entry(key.pk).or_default() += 1;
            }
            if let Write::Put { item, .. } = write {
                for index in indexes.iter().filter(|i| i.name.is_some()) {
                    if let Some(pk) = item.get(index.pk).and_then(|v| v.as_str()) {
                        let name = index.name.unwrap_or_default();
                        *counts.entry(format!("{name}:{pk}")).or_default() += 1;
                    }
                }
            }
        }
    }

    /// Every partition written, most written first.
    pub fn ranked(&self) -> Vec<(String, u64)> {
        let counts = self.0.lock().expect("partition counts");
        let mut ranked: Vec<_> = counts.iter().map(|(k, v)| (k.clone(), *v)).collect();
        ranked.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        ranked
    }

    /// Writes counted, over every partition.
    pub fn total(&self) -> u64 {
        self.0.lock().expect("partition counts").values().sum()
    }

    pub fn clear(&self) {
        self.0.lock().expect("partition counts").clear();
    }
}
