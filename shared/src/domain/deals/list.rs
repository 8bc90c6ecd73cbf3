//! `GET /v3/deals`: the query becomes [`Filters`] (pure, tested below); the
//! list reads the narrowest index partition the filters name, in the creation
//! window as an id range, keeps the digests that pass, sorts them, and loads
//! only the page. An unfiltered list is one Query plus the counter.

use std::collections::HashSet;

use chrono::Duration;

use super::LIST;
use super::index::Digest;
use super::query::{DealQuery, PeriodMetric, SortBy};
use super::record::{Deal, DealStatus};
use crate::auth::Caller;
use crate::error::{ApiError, ApiResult};
use crate::ids::WorkspaceId;
use crate::ids::{self, Timestamp};
use crate::keys;
use crate::keys::ContactId;
use crate::page::{ListPage, MAX_WINDOW, Paging, counted_merged_page, each_shard, read_up_to};
use crate::period::Window;
use crate::record;
use crate::store::{Index, Key, Query, SkRange, Store};

/// What a deal must be to be listed; an empty list means no constraint.
#[derive(Debug, Default, PartialEq)]
pub(super) struct Filters {
    operators: Vec<u64>,
    groups: Vec<u64>,
    tags: Vec<u64>,
    stages: Vec<String>,
    products: Vec<String>,
    status: Option<DealStatus>,
    pipeline: Option<String>,
    contact: Option<ContactId>,
    created: Window,
    won_lost: Window,
    updated: Window,
}

impl Filters {
    /// The filters of a query at `now`, with the caller's visibility: a user who
    /// is not an owner (and does not ignore restrictions) sees only their own
    /// deals. `None`: the query can match nothing (it asks for someone else's).
    pub(super) fn of(q: &DealQuery, now: Timestamp) -> ApiResult<Option<Filters>> {
        for (present, field) in [
            (q.role_id.is_some(), "roleId"),
            (q.is_owner.is_some(), "isOwner"),
            (q.user_id.is_some(), "userId"),
        ] {
            if !present {
                return Err(ApiError::field(field, "is required"));
            }
        }
        let sees_all = q.is_owner == Some(true) || q.ignore_restrictions == Some(true);
        let mut operators: Vec<u64> = q.operator_ids.clone();
        operators.extend(q.operator_id);
        if !sees_all {
            let user = q.user_id.unwrap_or_default();
            if !operators.is_empty() && !operators.contains(&user) {
                return Ok(None);
            }
            operators = vec![user];
        }
        let time = |t: Option<ids::ClientTime>| t.map(|t| t.0);
        let mut created = Window::between(
            "createdAtFrom",
            time(q.created_at_from),
            "createdAtTo",
            time(q.created_at_to),
        )?;
        let mut won_lost = Window::between(
            "wonLostAtFrom",
            time(q.won_lost_at_from),
            "wonLostAtTo",
            time(q.won_lost_at_to),
        )?;
        let mut updated = Window::default();
        if let Some(date) = q.date {
            created = created.meet(Window::of_date(now, date));
        }
        if let Some(period) = q.period {
            let period = Window::of_period(now, period, time(q.period_from), time(q.period_to))?;
            match q.period_metric.unwrap_or_default() {
                PeriodMetric::CreatedAt => created = created.meet(period),
                PeriodMetric::WonLostDate => won_lost = won_lost.meet(period),
                PeriodMetric::UpdatedAt => updated = updated.meet(period),
            }
        }
        let mut groups = q.group_ids.clone();
        groups.extend(q.group_id);
        let mut tags = q.tag_ids.clone();
        tags.extend(q.tag_id);
        Ok(Some(Filters {
            operators,
            groups,
            tags,
            stages: q.stage_id.clone(),
            products: q.product_ids.clone(),
            status: q.status,
            pipeline: q.pipeline_id.clone(),
            contact: q.contact_id.map(ContactId),
            created,
            won_lost,
            updated,
        }))
    }

    pub(super) fn is_empty(&self) -> bool {
        *self == Filters::default()
    }

    /// The partitions to read: the narrowest index the filters name (a contact
    /// has few deals; a status has many), else the whole list.
    pub(super) fn driving(&self, ws: WorkspaceId) -> Vec<String> {
        let by = |kind: &str, values: Vec<String>| {
            values
                .into_iter()
                .flat_map(|v| keys::deals_by(ws, kind, &v))
                .collect::<Vec<_>>()
        };
        let numbers = |ids: &[u64]| ids.iter().map(u64::to_string).collect();
        if let Some(contact) = self.contact {
            by("CONTACT", vec![contact.to_string()])
        } else if !self.products.is_empty() {
            by("PRODUCT", self.products.clone())
        } else if !self.stages.is_empty() {
            by("STAGE", self.stages.clone())
        } else if !self.tags.is_empty() {
            by("TAG", numbers(&self.tags))
        } else if !self.operators.is_empty() {
            by("OPERATOR", numbers(&self.operators))
        } else if let Some(status) = self.status {
            by("STATUS", vec![status.as_str().to_owned()])
        } else if let Some(pipeline) = &self.pipeline {
            by("PIPELINE", vec![pipeline.clone()])
        } else {
            keys::deal_partitions(ws)
        }
    }

    /// The creation window as an id range of a partition (ids are time-ordered).
    pub(super) fn id_range(&self, now: Timestamp) -> SkRange {
        if self.created.is_open() {
            return SkRange::All;
        }
        let at = |ms: Option<i64>| ms.and_then(chrono::DateTime::from_timestamp_millis);
        let from = at(self.created.from).unwrap_or_default();
        let to = at(self.created.to).unwrap_or_else(|| now + Duration::days(1));
        let (low, high) = ids::id_range(&from, &to);
        SkRange::Between(ids::padded(low), ids::padded(high))
    }

    /// Whether a deal (by its digest) passes every filter.
    pub(super) fn admits(&self, d: &Digest) -> bool {
        let any = |wanted: &[String], have: &[String]| {
            wanted.is_empty() || wanted.iter().any(|w| have.contains(w))
        };
        (self.operators.is_empty() || self.operators.contains(&d.operator_id))
            && (self.groups.is_empty() || self.groups.contains(&d.group_id))
            && (self.tags.is_empty() || self.tags.iter().any(|t| d.tag_ids.contains(t)))
            && (self.stages.is_empty() || self.stages.contains(&d.stage_id))
            && any(&self.products, &d.product_ids)
            && self.status.is_none_or(|s| d.status == s)
            && self.pipeline.as_ref().is_none_or(|p| &d.pipeline_id == p)
            && self.contact.is_none_or(|c| d.contact_id == c)
            && self
                .created
                .holds(Some(ids::id_time(d.id.0).timestamp_millis()))
            && self.won_lost.holds(d.won_lost_ms)
            && self.updated.holds(Some(d.updated_ms))
    }
}

/// `sort=asc|desc` (and the spellings clients use); descending by default.
fn descending(sort: Option<&str>) -> ApiResult<bool> {
    match sort.map(str::to_ascii_lowercase).as_deref() {
        None | Some("desc" | "descend" | "-1") => Ok(true),
        Some("asc" | "ascend" | "1") => Ok(false),
        Some(_) => Err(ApiError::field("sort", "must be asc or desc")),
    }
}

/// Sorts digests by the field asked, ties by id (creation).
fn sort_digests(digests: &mut [Digest], sort_by: SortBy, descending: bool) {
    match sort_by {
        SortBy::CreatedAt => digests.sort_by_key(|d| d.id),
        SortBy::UpdatedAt => digests.sort_by_key(|d| (d.updated_ms, d.id)),
        SortBy::Value => digests.sort_by(|a, b| a.value.total_cmp(&b.value).then(a.id.cmp(&b.id))),
        SortBy::Name => {
            digests.sort_by(|a, b| a.folded_name.cmp(&b.folded_name).then(a.id.cmp(&b.id)))
        }
        SortBy::WonLostDate => digests.sort_by_key(|d| (d.won_lost_ms, d.id)),
        SortBy::Position => digests.sort_by(|a, b| {
            a.position
                .unwrap_or(f64::MAX)
                .total_cmp(&b.position.unwrap_or(f64::MAX))
                .then(a.id.cmp(&b.id))
        }),
    }
    if descending {
        digests.reverse();
    }
}

/// `GET /v3/deals`.
pub async fn list(store: &dyn Store, caller: &Caller, q: DealQuery) -> ApiResult<ListPage<Deal>> {
    let paging = Paging::parse(q.limit, q.offset)?;
    let ws = caller.workspace_id;
    let now = ids::now();
    let descending = descending(q.sort.as_deref())?;
    let sort_by = q.sort_by.unwrap_or_default();
    let Some(filters) = Filters::of(&q, now)? else {
        return Ok(ListPage {
            total_count: Some(0),
            data: Vec::new(),
        });
    };
    if filters.is_empty() && sort_by == SortBy::CreatedAt {
        // Ids are time-ordered: creation order is id order, in every shard.
        let shards = each_shard(keys::deal_partitions(ws), SkRange::All, !descending);
        return counted_merged_page(store, shards, paging, keys::counter(ws, LIST)).await;
    }

    let range = filters.id_range(now);
    let mut digests: Vec<Digest> = Vec::new();
    let mut seen = HashSet::new();
    // The driving partitions (an index's shards) a few at once, so that a
    // filter past the window stops after a round of reads, not after all.
    let driving = filters.driving(ws);
    for round in driving.chunks(keys::SHARDS as usize) {
        let reads = round.iter().map(|pk| {
            let query = Query::new(Index::TABLE, pk.clone(), range.clone());
            read_up_to(store, query, MAX_WINDOW as usize + 1)
        });
        let items = futures_util::future::try_join_all(reads).await?;
        for item in items.into_iter().flatten() {
            let digest = Digest::of_item(item)?;
            if seen.insert(digest.id) {
                digests.push(digest);
            }
        }
        if digests.len() > MAX_WINDOW as usize {
            return Err(ApiError::bad_request(
                "the filters match more than 10,000 deals; narrow them",
            ));
        }
    }
    digests.retain(|d| filters.admits(d));
    sort_digests(&mut digests, sort_by, descending);
    let total = digests.len() as u64;
    let page: Vec<Key> = digests
        .iter()
        .skip(paging.offset as usize)
        .take(paging.limit as usize)
        .map(|d| keys::deal(ws, d.id))
        .collect();
    Ok(ListPage {
        total_count: Some(total),
        data: record::find_many(store, &page).await?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::deals::parse_query;

    const W: WorkspaceId = WorkspaceId(1);
    const NOW: &str = "2026-03-01T00:30:00Z";

    fn filters(raw: &str) -> Option<Filters> {
        let now = ids::parse_ts(NOW).unwrap();
        Filters::of(&parse_query(raw).unwrap(), now).unwrap()
    }

    fn digest(id: u64, status: DealStatus, operator: u64, tags: &[u64]) -> Digest {
        Digest {
            id: crate::keys::DealId(id),
            status,
            operator_id: operator,
            group_id: 1,
            pipeline_id: "sales".into(),
            stage_id: "lead".into(),
            tag_ids: tags.to_vec(),
            product_ids: Vec::new(),
            contact_id: ContactId(9),
            value: 10.0,
            folded_name: "deal".into(),
            won_lost_ms: None,
            updated_ms: 0,
            position: None,
        }
    }

    #[test]
    fn an_owner_without_filters_reads_the_whole_list() {
        let f = filters("roleId=1&isOwner=true&userId=7").unwrap();
        assert!(f.is_empty());
        assert_eq!(f.driving(W), keys::deal_partitions(W));
    }

    #[test]
    fn a_user_who_is_not_an_owner_sees_only_their_deals() {
        let f = filters("roleId=1&isOwner=false&userId=7").unwrap();
        assert_eq!(f.driving(W), keys::deals_by(W, "OPERATOR", "7"));
        assert!(f.admits(&digest(1, DealStatus::Open, 7, &[])));
        assert!(!f.admits(&digest(2, DealStatus::Open, 8, &[])));
        // Asking for another operator's deals matches nothing.
        assert!(filters("roleId=1&isOwner=false&userId=7&operatorId=8").is_none());
    }

    #[test]
    fn the_narrowest_index_drives_the_read() {
        let base = "roleId=1&isOwner=true&userId=7";
        let drive = |extra: &str| filters(&format!("{base}&{extra}")).unwrap().driving(W);
        assert_eq!(
            drive("status=won&contactId=5"),
            [keys::deals_of_contact(W, 5)]
        );
        assert_eq!(
            drive("status=won&stageId=a,b"),
            [
                keys::deals_by(W, "STAGE", "a"),
                keys::deals_by(W, "STAGE", "b")
            ]
            .concat()
        );
        assert_eq!(drive("status=won&tagId=3"), keys::deals_by(W, "TAG", "3"));
        assert_eq!(drive("status=won"), keys::deals_by(W, "STATUS", "won"));
        assert_eq!(drive("pipelineId=p"), keys::deals_by(W, "PIPELINE", "p"));
    }

    #[test]
    fn every_filter_must_pass() {
        let f = filters("roleId=1&isOwner=true&userId=7&status=won&tagIds=3,4").unwrap();
        assert!(f.admits(&digest(1, DealStatus::Won, 7, &[4])));
        assert!(!f.admits(&digest(1, DealStatus::Lost, 7, &[4])));
        assert!(!f.admits(&digest(1, DealStatus::Won, 7, &[5])));
    }

    #[test]
    fn a_creation_window_is_an_id_range() {
        let f = filters("roleId=1&isOwner=true&userId=7&date=last_month").unwrap();
        let SkRange::Between(low, high) = f.id_range(ids::now()) else {
            panic!("a window makes a range");
        };
        let month_start = ids::parse_ts("2026-02-01").unwrap();
        let (first, _) = ids::id_range(&month_start, &month_start);
        assert_eq!(low, ids::padded(first));
        assert!(low < high);
        assert_eq!(
            filters("roleId=1&isOwner=true&userId=7")
                .unwrap()
                .id_range(ids::now()),
            SkRange::All
        );
    }

    #[test]
    fn sorting_breaks_ties_by_creation() {
        let mut ds = vec![
            digest(3, DealStatus::Open, 1, &[]),
            digest(1, DealStatus::Open, 1, &[]),
            digest(2, DealStatus::Open, 1, &[]),
        ];
        sort_digests(&mut ds, SortBy::Value, false);
        assert_eq!(ds.iter().map(|d| d.id.0).collect::<Vec<_>>(), [1, 2, 3]);
        sort_digests(&mut ds, SortBy::CreatedAt, true);
        assert_eq!(ds.iter().map(|d| d.id.0).collect::<Vec<_>>(), [3, 2, 1]);
        assert!(descending(None).unwrap());
        assert!(!descending(Some("ASC")).unwrap());
        assert!(descending(Some("sideways")).is_err());
    }
}
