//! `GET /v3/reports/sessions`: the query becomes [`Filters`] and a time
//! window; the list reads the narrowest index partition in the window's key
//! range, keeps the digests that pass, sums them (the summary), sorts them and
//! loads only the page. Its cost follows the period and the filters, never
//! the workspace's size.

use std::collections::HashSet;

use chrono::Duration;
use serde::{Deserialize, Serialize};

use super::index::{Digest, flag, partition};
use super::query::{PeriodMetric, SessionQuery, SortBy, TrailFilter};
use super::record::Session;
use crate::auth::Caller;
use crate::error::{ApiError, ApiResult};
use crate::ids::{self, Timestamp, WorkspaceId};
use crate::keys;
use crate::page::{ListPage, MAX_WINDOW, Paging, read_up_to};
use crate::period::Window;
use crate::record;
use crate::store::{Index, Key, Query, SkRange, Store};

/// Values a list parameter (`tags`, `assigned`, ...) takes at most: each is
/// one partition read.
pub const MAX_VALUES: usize = 20;

/// Without a period, the last 31 days.
pub const DEFAULT_DAYS: i64 = 31;
/// The longest period one request may read.
pub const MAX_SPAN_DAYS: i64 = 93;
/// `isConversationOnPeriod` also reads sessions opened this long before the
/// period (a session open longer than that is not seen as on the period).
pub const OPEN_SESSION_DAYS: i64 = 30;

/// The counts and averages of the filtered sessions (an extension).
#[derive(Debug, Default, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Summary {
    pub sessions: u64,
    pub finished: u64,
    /// Averages in seconds over the sessions that have the metric.
    pub avg_tma: Option<f64>,
    pub avg_tme: Option<f64>,
    pub avg_tmp: Option<f64>,
    pub avg_rating: Option<f64>,
}

#[derive(Debug, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionList {
    #[serde(flatten)]
    pub page: ListPage<Session>,
    pub summary: Summary,
    /// The window read (after defaults), and the time it measures.
    #[schemars(with = "crate::ids::Timestamp")]
    #[serde(with = "ids::ts_format")]
    pub from: Timestamp,
    #[schemars(with = "crate::ids::Timestamp")]
    #[serde(with = "ids::ts_format")]
    pub to: Timestamp,
    pub period_metric: PeriodMetric,
}

/// The filters of a query, each `None`/empty when not given.
#[derive(Debug, Default)]
pub(super) struct Filters {
    tags: Vec<u64>,
    channels: Vec<String>,
    groups: Vec<String>,
    assigned: Vec<String>,
    bots: Vec<String>,
    trails: Vec<TrailFilter>,
    campaign: Option<String>,
    conversation: Option<u64>,
    phone: Option<String>,
    /// (bit, wanted)
    flags: Vec<(u32, bool)>,
    metric: PeriodMetric,
    window: (i64, i64),
    on_period: bool,
}

impl Filters {
    pub(super) fn of(
        q: &SessionQuery,
        now: Timestamp,
    ) -> ApiResult<(Filters, Timestamp, Timestamp)> {
        let metric = match (
            q.only_finished_at == Some(true),
            q.only_created_at == Some(true),
        ) {
            (true, true) => {
                return Err(ApiError::field(
                    "onlyFinishedAt",
                    "use onlyFinishedAt or onlyCreatedAt, not both",
                ));
            }
            (true, false) => PeriodMetric::FinishedAt,
            (false, true) => PeriodMetric::CreatedAt,
            (false, false) => q.period_metric.unwrap_or_default(),
        };
        for (name, values) in [
            ("channels", &q.channels),
            ("groups", &q.groups),
            ("assigned", &q.assigned),
            ("bots", &q.bots),
        ] {
            if values.len() > MAX_VALUES || values.iter().any(|v| v.is_empty() || v.len() > 64) {
                return Err(ApiError::field(
                    name,
                    format!("takes at most {MAX_VALUES} values of 1 to 64 characters"),
                ));
            }
        }
        if q.tags.len() > MAX_VALUES {
            return Err(ApiError::field(
                "tags",
                format!("takes at most {MAX_VALUES} values"),
            ));
        }
        for (name, value) in [
            ("campaignId", &q.campaign_id),
            ("contactPhone", &q.contact_phone),
        ] {
            if value
                .as_ref()
                .is_some_and(|v| v.is_empty() || v.len() > 100)
            {
                return Err(ApiError::field(name, "must be 1 to 100 characters"));
            }
        }
        let time = |t: Option<ids::ClientTime>| t.map(|t| t.0);
        let mut window = Window::between("from", time(q.from), "to", time(q.to))?;
        if let Some(period) = q.period {
            window = window.meet(Window::of_period(
                now,
                period,
                time(q.period_from),
                time(q.period_to),
            )?);
        }
        let at = |ms: i64| chrono::DateTime::from_timestamp_millis(ms).unwrap_or(now);
        let to = window.to.map_or(now, at);
        let from = window.from.map_or(to - Duration::days(DEFAULT_DAYS), at);
        if to < from {
            return Err(ApiError::field(
                "to",
                "the period is empty (to is before from)",
            ));
        }
        if to - from > Duration::days(MAX_SPAN_DAYS) {
            return Err(ApiError::field(
                "from",
                format!(
                    "a report reads at most {MAX_SPAN_DAYS} days at once; narrow from/to or the period"
                ),
            ));
        }
        let phone = q
            .contact_phone
            .as_deref()
            .map(|p| {
                crate::phone::canonical(p)
                    .map_err(|e| ApiError::field("contactPhone", e.to_string()))
            })
            .transpose()?;
        let bools = [
            (q.is_finished, flag::FINISHED),
            (q.waiting, flag::WAITING),
            (q.in_progress, flag::IN_PROGRESS),
            (q.pending, flag::PENDING),
            (q.has_rating, flag::RATED),
            (q.is_new_contact, flag::NEW_CONTACT),
            (q.answered_on_day, flag::ANSWERED_ON_DAY),
            (q.is_reopened, flag::REOPENED),
            (q.tma_exists, flag::TMA),
            (q.tme_exists, flag::TME),
            (q.tmp_exists, flag::TMP),
            (q.has_deal, flag::DEAL),
            (q.has_won_deal, flag::WON_DEAL),
            (q.change_assignment_to_trail, flag::TRANSFERRED),
        ];
        let filters = Filters {
            tags: q.tags.clone(),
            channels: q.channels.clone(),
            groups: q.groups.clone(),
            assigned: q.assigned.clone(),
            bots: q.bots.clone(),
            trails: q.trail_filters()?,
            campaign: q.campaign_id.clone(),
            conversation: q.conversation_id,
            phone,
            flags: bools
                .iter()
                .filter_map(|(v, bit)| v.map(|v| (*bit, v)))
                .collect(),
            metric,
            window: (from.timestamp_millis(), to.timestamp_millis()),
            on_period: q.is_conversation_on_period == Some(true),
        };
        Ok((filters, from, to))
    }

    /// The partitions to read and the key range of each: the narrowest index
    /// the filters name.
    pub(super) fn driving(&self, ws: WorkspaceId) -> (Vec<String>, SkRange) {
        let (from, to) = self.window;
        let ts = |ms: i64| {
            ids::format_ts(&chrono::DateTime::from_timestamp_millis(ms).unwrap_or_default())
        };
        let back = if self.on_period {
            OPEN_SESSION_DAYS * 86_400_000
        } else {
            0
        };
        // `$` sorts after `#`: every sort key of the last millisecond is in.
        let created = SkRange::Between(ts(from - back), format!("{}$", ts(to)));
        let by = |kind: &str, values: Vec<String>| {
            values
                .into_iter()
                .map(|v| partition(ws, kind, &v))
                .collect::<Vec<_>>()
        };
        if let Some(c) = self.conversation {
            return (by("CONVERSATION", vec![c.to_string()]), SkRange::All);
        }
        if let Some(p) = &self.phone {
            return (by("PHONE", vec![p.clone()]), SkRange::All);
        }
        if self.metric == PeriodMetric::FinishedAt && !self.on_period {
            let finished = SkRange::Between(ts(from), format!("{}$", ts(to)));
            return (vec![partition(ws, "FINISHED", "ALL")], finished);
        }
        let parts = if let Some(c) = &self.campaign {
            by("CAMPAIGN", vec![c.clone()])
        } else if !self.tags.is_empty() {
            by("TAG", self.tags.iter().map(u64::to_string).collect())
        } else if !self.assigned.is_empty() {
            by("OPERATOR", self.assigned.clone())
        } else if !self.bots.is_empty() {
            by("BOT", self.bots.clone())
        } else if !self.groups.is_empty() {
            by("GROUP", self.groups.clone())
        } else if !self.channels.is_empty() {
            by("CHANNEL", self.channels.clone())
        } else {
            vec![partition(ws, "CREATED", "ALL")]
        };
        (parts, created)
    }

    pub(super) fn admits(&self, d: &Digest) -> bool {
        let (from, to) = self.window;
        let in_window = if self.on_period {
            d.created_ms <= to && d.finished_ms.is_none_or(|f| f >= from)
        } else {
            let t = match self.metric {
                PeriodMetric::CreatedAt => Some(d.created_ms),
                PeriodMetric::FinishedAt => d.finished_ms,
            };
            t.is_some_and(|t| from <= t && t <= to)
        };
        let any = |wanted: &[String], have: &[String]| {
            wanted.is_empty() || wanted.iter().any(|w| have.contains(w))
        };
        in_window
            && (self.tags.is_empty() || self.tags.iter().any(|t| d.tag_ids.contains(t)))
            && (self.channels.is_empty()
                || d.channel_id
                    .as_ref()
                    .is_some_and(|c| self.channels.contains(c)))
            && any(&self.groups, &d.group_ids)
            && (self.assigned.is_empty()
                || d.operator_id
                    .as_ref()
                    .is_some_and(|o| self.assigned.contains(o)))
            && any(&self.bots, &d.bot_ids)
            && self
                .campaign
                .as_ref()
                .is_none_or(|c| d.campaign_id.as_ref() == Some(c))
            && self.conversation.is_none_or(|c| d.conversation_id == c)
            && self
                .phone
                .as_ref()
                .is_none_or(|p| d.contact_phone.as_ref() == Some(p))
            && self
                .flags
                .iter()
                .all(|(bit, wanted)| (d.flags & bit != 0) == *wanted)
            && self.trails.iter().all(|f| {
                d.trails.iter().any(|(kind, op, group)| {
                    *kind == f.kind
                        && f.operator_id
                            .as_ref()
                            .is_none_or(|o| op.as_ref() == Some(o))
                        && f.group_id
                            .as_ref()
                            .is_none_or(|g| group.as_ref() == Some(g))
                })
            })
    }
}

fn summary(digests: &[Digest]) -> Summary {
    let avg = |values: Vec<f64>| {
        (!values.is_empty())
            .then(|| (values.iter().sum::<f64>() / values.len() as f64 * 1000.0).round() / 1000.0)
    };
    Summary {
        sessions: digests.len() as u64,
        finished: digests
            .iter()
            .filter(|d| d.flags & flag::FINISHED != 0)
            .count() as u64,
        avg_tma: avg(digests.iter().filter_map(|d| d.tma).collect()),
        avg_tme: avg(digests.iter().filter_map(|d| d.tme).collect()),
        avg_tmp: avg(digests.iter().filter_map(|d| d.tmp).collect()),
        avg_rating: avg(digests
            .iter()
            .filter_map(|d| d.rating.map(f64::from))
            .collect()),
    }
}

fn sort(digests: &mut [Digest], by: SortBy, descending: bool) {
    let key = |d: &Digest| -> f64 {
        match by {
            SortBy::CreatedAt => d.created_ms as f64,
            SortBy::FinishedAt => d.finished_ms.map_or(f64::MIN, |f| f as f64),
            SortBy::Tma => d.tma.unwrap_or(f64::MIN),
            SortBy::Tme => d.tme.unwrap_or(f64::MIN),
            SortBy::Tmp => d.tmp.unwrap_or(f64::MIN),
            SortBy::Rating => d.rating.map_or(f64::MIN, f64::from),
        }
    };
    digests.sort_by(|a, b| {
        key(a)
            .total_cmp(&key(b))
            .then(a.created_ms.cmp(&b.created_ms))
            .then(a.id.cmp(&b.id))
    });
    if descending {
        digests.reverse();
    }
}

pub async fn list(store: &dyn Store, caller: &Caller, q: SessionQuery) -> ApiResult<SessionList> {
    let paging = Paging::parse(q.limit, q.offset)?;
    let descending = match q.sort.as_deref().map(str::to_ascii_lowercase).as_deref() {
        None | Some("desc" | "descend" | "-1") => true,
        Some("asc" | "ascend" | "1") => false,
        Some(_) => return Err(ApiError::field("sort", "must be asc or desc")),
    };
    let ws = caller.workspace_id;
    let (filters, from, to) = Filters::of(&q, ids::now())?;
    let (partitions, range) = filters.driving(ws);
    let mut digests = Vec::new();
    let mut seen = HashSet::new();
    for pk in partitions {
        let items = read_up_to(
            store,
            Query::new(Index::TABLE, pk, range.clone()),
            MAX_WINDOW as usize + 1,
        )
        .await?;
        for item in &items {
            let d = Digest::of_item(item)?;
            if seen.insert(d.id.clone()) && filters.admits(&d) {
                digests.push(d);
            }
        }
        if items.len() > MAX_WINDOW as usize || digests.len() > MAX_WINDOW as usize {
            return Err(ApiError::bad_request(
                "the period and filters match more than 10,000 sessions; narrow them",
            ));
        }
    }
    let summary = summary(&digests);
    sort(&mut digests, q.sort_by.unwrap_or_default(), descending);
    let keys: Vec<Key> = digests
        .iter()
        .skip(paging.offset as usize)
        .take(paging.limit as usize)
        .map(|d| keys::session(ws, &d.id))
        .collect();
    Ok(SessionList {
        page: ListPage {
            total_count: Some(digests.len() as u64),
            data: record::find_many(store, &keys).await?,
        },
        summary,
        from,
        to,
        period_metric: filters.metric,
    })
}
