//! Pages of a family kept over shards (`keys::shards`): the shards read
//! as if they were one range, in as few round trips as a page allows.

use super::read_more;
use crate::error::ApiResult;
use crate::store::{Index, Item, Query, SkRange, Store};

/// The first `want` items of several partitions sorted by the same key
/// (the shards of a family, `keys::shards`), read as if they were one
/// range in the queries' direction.
///
/// Round one reads [`first_ask`] items of each shard, at once: enough that
/// a second round is rare. The frontier is the earliest last key among the
/// shards that may hold more: every item up to it is known, in order. When
/// fewer than `want` are known, the next round reads the missing count from
/// each shard that may hold more; the shard that sets the next frontier
/// brings them all, so a second round always completes. A page costs at
/// most two Queries a shard (almost always one) and reads about
/// `shards × first_ask` items when the ids spread evenly (at worst, all in
/// one shard, `shards × (first_ask + want)`), whatever the size of the
/// family.
pub async fn merged(store: &dyn Store, shards: Vec<Query>, want: usize) -> ApiResult<Vec<Item>> {
    Ok(merged_more(store, shards, want).await?.0)
}

/// [`merged`], and whether the shards may hold more after the items read
/// (at a full page, as DynamoDB says, even when nothing follows).
pub async fn merged_more(
    store: &dyn Store,
    shards: Vec<Query>,
    want: usize,
) -> ApiResult<(Vec<Item>, bool)> {
    if shards.len() <= 1 {
        return match shards.into_iter().next() {
            Some(mut query) => read_more(store, &mut query, want).await,
            None => Ok((Vec::new(), false)),
        };
    }
    let forward = shards[0].forward;
    let sk = shards[0].index.sk;
    let key = |item: &Item| -> String {
        item.get(sk)
            .and_then(|v| v.as_str())
            .unwrap_or_default()
            .to_owned()
    };
    // `a` comes before `b` in the reading order.
    let before = |a: &str, b: &str| if forward { a < b } else { a > b };
    struct Shard {
        query: Query,
        items: Vec<Item>,
        more: bool,
    }
    let mut shards: Vec<Shard> = shards
        .into_iter()
        .map(|query| Shard {
            query,
            items: Vec::new(),
            more: true,
        })
        .collect();
    let mut ask = first_ask(want, shards.len());
    let frontier = loop {
        let reads = shards
            .iter_mut()
            .filter(|s| s.more)
            .map(|shard| async move {
                let (items, more) = read_more(store, &mut shard.query, ask).await?;
                shard.items.extend(items);
                shard.more = more;
                ApiResult::Ok(())
            });
        futures_util::future::try_join_all(reads).await?;
        let frontier = shards
            .iter()
            .filter(|s| s.more)
            .filter_map(|s| s.items.last().map(key))
            .reduce(|a, b| if before(&b, &a) { b } else { a });
        let Some(frontier) = frontier else { break None };
        let known = shards
            .iter()
            .flat_map(|s| &s.items)
            .filter(|item| !before(&frontier, &key(item)))
            .count();
        if known >= want {
            break Some(frontier);
        }
        ask = want - known;
    };
    let mut items: Vec<(String, Item)> = shards
        .into_iter()
        .flat_map(|s| s.items)
        .map(|item| (key(&item), item))
        .filter(|(k, _)| frontier.as_deref().is_none_or(|f| !before(f, k)))
        .collect();
    items.sort_by(|(a, _), (b, _)| if forward { a.cmp(b) } else { b.cmp(a) });
    let more = frontier.is_some() || items.len() > want;
    Ok((
        items.into_iter().take(want).map(|(_, item)| item).collect(),
        more,
    ))
}

/// What round one of [`merged_more`] reads of each of `shards` shards for a
/// page of `want`: their mean share `m = want / shards` and three standard
/// deviations more, `m + 3√m + 2`. A page needs a second round (a second
/// round trip) only when one shard holds more than that of the first
/// `want` items, which for ids spread at random (a binomial share) is at
/// most 0.5% of pages over 8 shards at every size (0.07% for a page of 20,
/// 10 a shard; 0.3% at 500, 89 a shard), and 2% over the admin view's 17.
/// The old `m + 2` (5 a shard at 20) sent a second round to most pages of
/// a family holding a few pages (docs/decisions/0037). The items added are
/// small against a Query's first 4 KB, which costs the same read unit
/// however few it holds.
fn first_ask(want: usize, shards: usize) -> usize {
    let mean = want as f64 / shards.max(1) as f64;
    (mean + 3.0 * mean.sqrt()).ceil() as usize + 2
}

/// A Query of each of a family's shards (`keys::shards`) over one `range`
/// of the table, in one direction: what [`merged_page`] and
/// [`cursor_page`] read together.
pub fn each_shard(partitions: Vec<String>, range: SkRange, forward: bool) -> Vec<Query> {
    partitions
        .into_iter()
        .map(|pk| Query {
            forward,
            ..Query::new(Index::TABLE, pk, range.clone())
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A page's first round over shards reads what a shard holds of the
    /// page in all but 0.5% of pages over 8 shards, 2% over 17 (ids spread
    /// at random: each of the first `want` items in a shard with chance
    /// 1 / shards), at every page size the API allows; bounded by the
    /// shards' sum of binomial tails.
    #[test]
    fn a_first_round_almost_always_completes_the_page() {
        fn second_round(want: usize, shards: usize) -> f64 {
            let k = first_ask(want, shards);
            let (n, p) = (want as f64, 1.0 / shards as f64);
            // ln P(X = i), from i = 0 up, in logs (0.875^10,000 underflows).
            let mut ln = n * (1.0 - p).ln();
            let mut tail = 0.0;
            for i in 0..=want {
                if i >= k {
                    tail += ln.exp();
                }
                ln += (n - i as f64).ln() - (i as f64 + 1.0).ln() + (p / (1.0 - p)).ln();
            }
            shards as f64 * tail
        }
        for want in [2, 6, 11, 21, 26, 51, 101, 501, 5_001, 10_000] {
            for (shards, most) in [(8, 0.005), (17, 0.02)] {
                let p = second_round(want, shards);
                assert!(p < most, "{want} over {shards} shards: {p}");
            }
        }
        assert_eq!(first_ask(20, 8), 10);
        assert_eq!(first_ask(0, 8), 2);
    }

    /// Shards in memory: each partition's sort keys, read as DynamoDB reads
    /// them (a `last_key` at a full page, even when nothing follows).
    #[derive(Default)]
    struct Shards {
        partitions: std::collections::HashMap<String, Vec<String>>,
        queries: std::sync::atomic::AtomicUsize,
        metrics: crate::store::Metrics,
    }

    #[async_trait::async_trait]
    impl Store for Shards {
        async fn get(
            &self,
            _: &crate::store::Key,
            _: bool,
        ) -> Result<Option<Item>, crate::store::StoreError> {
            unreachable!("a merge only queries")
        }
        async fn batch_get(
            &self,
            _: &[crate::store::Key],
        ) -> Result<Vec<Item>, crate::store::StoreError> {
            unreachable!("a merge only queries")
        }
        async fn write(&self, _: Vec<crate::store::Write>) -> Result<(), crate::store::StoreError> {
            unreachable!("a merge only queries")
        }
        async fn query(
            &self,
            query: &Query,
        ) -> Result<crate::store::Page, crate::store::StoreError> {
            self.queries
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let mut sks = self.partitions.get(&query.pk).cloned().unwrap_or_default();
            if !query.forward {
                sks.reverse();
            }
            let after = query
                .start_after
                .as_ref()
                .and_then(|k| k.get(crate::store::SK)?.as_str());
            let rest = sks.into_iter().filter(|sk| match after {
                None => true,
                Some(after) if query.forward => sk.as_str() > after,
                Some(after) => sk.as_str() < after,
            });
            let limit = query.limit.unwrap_or(usize::MAX);
            let items: Vec<Item> = rest
                .take(limit)
                .map(|sk| {
                    let mut item = Item::new();
                    item.insert(crate::store::PK.into(), query.pk.clone().into());
                    item.insert(crate::store::SK.into(), sk.into());
                    item
                })
                .collect();
            let last_key = (items.len() == limit)
                .then(|| items.last().cloned())
                .flatten();
            Ok(crate::store::Page { items, last_key })
        }
        fn metrics(&self) -> &crate::store::Metrics {
            &self.metrics
        }
        fn backend(&self) -> &'static str {
            "shards in memory"
        }
    }

    fn shards_of(sks: impl IntoIterator<Item = (usize, String)>) -> Shards {
        let mut store = Shards::default();
        for n in 0..8 {
            store.partitions.insert(format!("S{n}"), Vec::new());
        }
        for (shard, sk) in sks {
            store
                .partitions
                .get_mut(&format!("S{shard}"))
                .unwrap()
                .push(sk);
        }
        for sks in store.partitions.values_mut() {
            sks.sort();
        }
        store
    }

    async fn merge(store: &Shards, want: usize, forward: bool) -> (Vec<String>, bool, usize) {
        let shards = each_shard(
            (0..8).map(|n| format!("S{n}")).collect(),
            SkRange::All,
            forward,
        );
        let before = store.queries.load(std::sync::atomic::Ordering::Relaxed);
        let (items, more) = merged_more(store, shards, want).await.unwrap();
        let sks = items
            .iter()
            .map(|i| i[crate::store::SK].as_str().unwrap().to_owned())
            .collect();
        (
            sks,
            more,
            store.queries.load(std::sync::atomic::Ordering::Relaxed) - before,
        )
    }

    /// A merge is the first `want` of all shards in order, whatever their
    /// spread: against a sorted union, over many spreads (a fixed sequence),
    /// sizes, pages and both directions.
    #[tokio::test]
    async fn a_merge_reads_the_shards_as_one_range() {
        let mut seed = 0x9e37_79b9_7f4a_7c15_u64;
        let mut next = move |n: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % n.max(1)
        };
        for _ in 0..300 {
            let size = next(120) as usize;
            // Skewed at times: most items in one shard.
            let skew = next(3) == 0;
            let sks: Vec<(usize, String)> = (0..size)
                .map(|i| {
                    let shard = if skew && next(4) != 0 {
                        3
                    } else {
                        next(8) as usize
                    };
                    (shard, format!("{i:05}"))
                })
                .collect();
            let store = shards_of(sks.clone());
            let want = 1 + next(60) as usize;
            for forward in [true, false] {
                let mut all: Vec<String> = sks.iter().map(|(_, sk)| sk.clone()).collect();
                all.sort();
                if !forward {
                    all.reverse();
                }
                let (got, more, queries) = merge(&store, want, forward).await;
                let expected: Vec<String> = all.iter().take(want).cloned().collect();
                assert_eq!(
                    got, expected,
                    "{size} items, want {want}, skewed {skew}, forward {forward}"
                );
                if all.len() > want {
                    assert!(more, "more after {want} of {size}");
                }
                assert!(queries <= 16, "two rounds at most: {queries}");
            }
        }
    }

    /// Ids spread evenly: one round (a Query a shard). All in one shard: the
    /// second round reads only that shard, and completes the page.
    #[tokio::test]
    async fn a_merge_needs_a_second_round_only_for_a_skewed_spread() {
        let even = shards_of((0..400).map(|i| (i % 8, format!("{i:05}"))));
        let (got, more, queries) = merge(&even, 20, false).await;
        assert_eq!((got.len(), more, queries), (20, true, 8));
        assert_eq!(got[0], "00399");

        let skewed = shards_of((0..400).map(|i| (usize::from(i % 50 != 0) * 5, format!("{i:05}"))));
        let (got, more, queries) = merge(&skewed, 20, false).await;
        assert_eq!(
            (got.len(), more, queries),
            (20, true, 9),
            "shard 5 read again"
        );
        assert_eq!(got.last().unwrap(), "00380");
    }
}
