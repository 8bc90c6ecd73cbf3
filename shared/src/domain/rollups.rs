//! Rollups: the daily counts behind dashboard snapshots. Each is a counter item
//! per metric series and day (and dimension), moved by [`stage`] in the same
//! transaction as the write that changes it (a contact created, a deal won, a
//! session ingested, a campaign result), so it cannot drift from the records.
//! A snapshot sums a period's days: one Query per series and shard, whatever
//! the workspace's size. Days are UTC.
//!
//! Once the sharded layout is set (`keys::shards`), a series is spread over
//! 8 partitions: a mutation's moves go to the shard of its pick
//! (`Mutation::pick`: a batch wave's, so its moves still add up into one
//! `ADD`, or one at random), and a read sums them all. Today's item of `contacts.created` would otherwise take
//! every create of a tenant, and one item never takes more than 1,000 write
//! units a second, split or not.
//!
//! | Series | Counts, by day of |
//! |---|---|
//! | `contacts.created`, `contacts.new` | creation (new: `newContact` at creation) |
//! | `deals.created`, `deals.createdValue` | creation (value in cents) |
//! | `deals.won`, `deals.wonValue`, `deals.lost`, `deals.lostValue` | `wonLostDate` |
//! | `deals.wonValueByPipeline`, `deals.wonValueByOperator` | `wonLostDate`, per pipeline / operator |
//! | `sessions.started` | creation |
//! | `sessions.finished` | finish |
//! | `sessions.tmaMs`, `sessions.tmaCount` (and `tme`, `tmp`) | creation (sums in ms) |
//! | `campaigns.sent`, `campaigns.read`, `campaigns.answered` | the report |

use std::collections::BTreeMap;

use serde_json::Value;

use crate::domain::contacts::Contact;
use crate::domain::deals::{Deal, DealStatus};
use crate::domain::sessions::Session;
use crate::error::ApiResult;
use crate::ids::{Timestamp, WorkspaceId};
use crate::keys;
use crate::page::read_up_to;
use crate::record::{COUNT, Mutation};
use crate::store::{Index, Key, Query, SK, SkRange, Store};

/// Every series a record can move (campaign series come from reports only).
pub const RECORD_SERIES: &[&str] = &[
    "contacts.created",
    "contacts.new",
    "deals.created",
    "deals.createdValue",
    "deals.won",
    "deals.wonValue",
    "deals.lost",
    "deals.lostValue",
    "deals.wonValueByPipeline",
    "deals.wonValueByOperator",
    "sessions.started",
    "sessions.finished",
    "sessions.tmaMs",
    "sessions.tmaCount",
    "sessions.tmeMs",
    "sessions.tmeCount",
    "sessions.tmpMs",
    "sessions.tmpCount",
];

/// One series' move on one day (and dimension).
#[derive(Debug, Clone, PartialEq)]
pub struct Move {
    pub series: &'static str,
    pub dimension: Option<String>,
    pub day: String,
    pub delta: i64,
}

pub fn day(t: &Timestamp) -> String {
    t.format("%Y-%m-%d").to_string()
}

fn one(series: &'static str, t: &Timestamp, delta: i64) -> Move {
    Move {
        series,
        dimension: None,
        day: day(t),
        delta,
    }
}

fn cents(value: f64) -> i64 {
    (value * 100.0).round() as i64
}

pub fn of_contact(c: &Contact) -> Vec<Move> {
    let at = &c.stamps.created_at;
    let mut out = vec![one("contacts.created", at, 1)];
    if c.fields.new_contact {
        out.push(one("contacts.new", at, 1));
    }
    out
}

pub fn of_deal(d: &Deal) -> Vec<Move> {
    let f = &d.fields;
    let at = &d.stamps.created_at;
    let mut out = vec![
        one("deals.created", at, 1),
        one("deals.createdValue", at, cents(f.value)),
    ];
    if let Some(when) = &f.won_lost_date {
        match f.status {
            DealStatus::Won => {
                out.push(one("deals.won", when, 1));
                out.push(one("deals.wonValue", when, cents(f.value)));
                for (series, dimension) in [
                    ("deals.wonValueByPipeline", f.pipeline_id.clone()),
                    ("deals.wonValueByOperator", f.operator_id.to_string()),
                ] {
                    out.push(Move {
                        series,
                        dimension: Some(dimension),
                        day: day(when),
                        delta: cents(f.value),
                    });
                }
            }
            DealStatus::Lost => {
                out.push(one("deals.lost", when, 1));
                out.push(one("deals.lostValue", when, cents(f.value)));
            }
            DealStatus::Open => {}
        }
    }
    out
}

pub fn of_session(s: &Session) -> Vec<Move> {
    let at = &s.stamps.created_at;
    let mut out = vec![one("sessions.started", at, 1)];
    if let Some(f) = &s.times.finished_at {
        out.push(one("sessions.finished", f, 1));
    }
    for (sum, count, value) in [
        ("sessions.tmaMs", "sessions.tmaCount", s.metrics.tma),
        ("sessions.tmeMs", "sessions.tmeCount", s.metrics.tme),
        ("sessions.tmpMs", "sessions.tmpCount", s.metrics.tmp),
    ] {
        if let Some(seconds) = value {
            out.push(one(sum, at, (seconds * 1000.0).round() as i64));
            out.push(one(count, at, 1));
        }
    }
    out
}

pub fn of_campaign_report(at: &Timestamp, sent: u64, read: u64, answered: u64) -> Vec<Move> {
    vec![
        one("campaigns.sent", at, sent as i64),
        one("campaigns.read", at, read as i64),
        one("campaigns.answered", at, answered as i64),
    ]
}

/// The counter item of a move, in shard 0.
pub fn key(ws: WorkspaceId, m: &Move) -> Key {
    key_in(ws, m, 0)
}

/// The counter item of a move in shard `shard`.
fn key_in(ws: WorkspaceId, m: &Move, shard: u32) -> Key {
    let sk = match &m.dimension {
        Some(d) => format!("{}#{d}", m.day),
        None => m.day.clone(),
    };
    Key::new(keys::rollup_shard(ws, m.series, shard), sk)
}

/// The net moves from the record as it was (`before`) to as it is (`after`),
/// one per counter item of shard 0, zeros left out.
pub fn net(ws: WorkspaceId, before: &[Move], after: &[Move]) -> BTreeMap<Key, i64> {
    net_in(ws, 0, before, after)
}

fn net_in(ws: WorkspaceId, shard: u32, before: &[Move], after: &[Move]) -> BTreeMap<Key, i64> {
    let mut moves = BTreeMap::new();
    for (m, sign) in before
        .iter()
        .map(|m| (m, -1))
        .chain(after.iter().map(|m| (m, 1)))
    {
        let total = moves.entry(key_in(ws, m, shard)).or_insert(0i64);
        *total = total.saturating_add(sign * m.delta);
    }
    moves.retain(|_, d| *d != 0);
    moves
}

/// Adds the counter moves of a change to its mutation, all in one shard:
/// a change's before and after net out in one item, whatever the layout.
pub fn stage(m: &mut Mutation<'_>, ws: WorkspaceId, before: &[Move], after: &[Move]) {
    let shard = m.pick() % keys::rollup_shards();
    for (key, delta) in net_in(ws, shard, before, after) {
        m.count(key, delta);
    }
}

/// A series over `[from, to]` (days, inclusive): the total, and the totals per
/// dimension when the series has them. One Query per shard, in parallel;
/// each item of a shard may be negative (a deal won in one shard and
/// reopened in another), only the sums mean anything.
pub async fn read(
    store: &dyn Store,
    ws: WorkspaceId,
    series: &str,
    from: &str,
    to: &str,
) -> ApiResult<(i64, BTreeMap<String, i64>)> {
    let reads = (0..keys::rollup_shards()).map(|shard| {
        let query = Query::new(
            Index::TABLE,
            keys::rollup_shard(ws, series, shard),
            SkRange::Between(from.to_owned(), format!("{to}$")),
        );
        read_up_to(store, query, usize::MAX)
    });
    let shards = futures_util::future::try_join_all(reads).await?;
    let mut total = 0;
    let mut by = BTreeMap::new();
    for item in shards.into_iter().flatten() {
        let n = item.get(COUNT).and_then(Value::as_i64).unwrap_or(0);
        total += n;
        if let Some((_, dimension)) = item
            .get(SK)
            .and_then(Value::as_str)
            .and_then(|sk| sk.split_once('#'))
        {
            *by.entry(dimension.to_owned()).or_insert(0) += n;
        }
    }
    Ok((total, by))
}

/// Rebuilds a workspace's rollups from its records (contacts, deals and
/// sessions; campaign results keep no per-day history, so their series are
/// left as they are): for data loaded before rollups existed, or to check
/// them. Every counter item of those series is written: shard 0's with the
/// recount (0 where the records count nothing), the other shards' with 0.
/// Run it while nothing writes to the workspace: a write between its reads
/// and its writes would be overwritten.
/// `progress` hears how many records were read. Answers the number of
/// counter items written.
pub async fn rebuild(
    store: &dyn Store,
    ws: WorkspaceId,
    progress: &(dyn Fn(u64) + Sync),
) -> ApiResult<usize> {
    use crate::domain::sessions::Digest;
    let mut moves = Vec::new();
    let all = |pk: String| Query::new(Index::TABLE, pk, SkRange::All);
    for partition in keys::contact_partitions(ws) {
        for item in read_up_to(store, all(partition), usize::MAX).await? {
            moves.extend(of_contact(&crate::record::from_item::<Contact>(item)?));
            progress(1);
        }
    }
    for partition in keys::deal_partitions(ws) {
        for item in read_up_to(store, all(partition), usize::MAX).await? {
            moves.extend(of_deal(&crate::record::from_item::<Deal>(item)?));
            progress(1);
        }
    }
    let index = read_up_to(
        store,
        all(keys::sessions_by(ws, "CREATED", "ALL")),
        usize::MAX,
    )
    .await?;
    let ids: Vec<Key> = index
        .iter()
        .filter_map(|i| i.get("d").cloned())
        .filter_map(|d| serde_json::from_value::<Digest>(d).ok())
        .map(|d| keys::session(ws, &d.id))
        .collect();
    for session in crate::record::find_many::<Session>(store, &ids).await? {
        moves.extend(of_session(&session));
        progress(1);
    }
    let mut counts = net(ws, &[], &moves);
    // Items the recount does not name (a day that came to nothing, or any
    // item of shards 1..7) go to 0.
    for series in RECORD_SERIES {
        for shard in 0..keys::rollup_shards() {
            let pk = keys::rollup_shard(ws, series, shard);
            for item in read_up_to(store, all(pk), usize::MAX).await? {
                if let Some(key) = Key::of(&item) {
                    counts.entry(key).or_insert(0);
                }
            }
        }
    }
    let written = counts.len();
    let puts: Vec<crate::store::Write> = counts
        .into_iter()
        .map(|(key, n)| {
            let mut item = crate::store::Item::new();
            item.insert(crate::store::PK.into(), key.pk.into());
            item.insert(SK.into(), key.sk.into());
            item.insert(COUNT.into(), n.into());
            crate::store::Write::Put {
                item,
                condition: None,
            }
        })
        .collect();
    for chunk in puts.chunks(25) {
        store.write(chunk.to_vec()).await?;
    }
    Ok(written)
}
