//! The metric catalog and the `dashboardSnapshot` job: every widget's metric
//! over the snapshot's period, summed from the rollups (`domain::rollups`):
//! one Query per series, whatever the workspace's size. A widget that cannot be
//! computed records its error without failing the others. The job is
//! idempotent: a snapshot already `done` is left alone.

use serde_json::{Map, Value, json};
use validator::ValidationError;

use super::{Dashboard, Snapshot};
use crate::auth::Caller;
use crate::domain::rollups::{self, day};
use crate::error::{ApiError, ApiResult};
use crate::ids::{self, WorkspaceId};
use crate::keys;
use crate::keys::DashboardId;
use crate::record::{self, Mutation};
use crate::store::Store;

/// The kind of job message of a snapshot.
pub const KIND: &str = "dashboardSnapshot";

/// The metrics a widget can show: (name, what it is).
pub const METRICS: &[(&str, &str)] = &[
    ("contactsCreated", "contacts created"),
    ("newContacts", "contacts created with newContact"),
    ("dealsCreated", "deals created"),
    ("dealsCreatedValue", "value of the deals created"),
    ("dealsWon", "deals won (by won date)"),
    ("dealsWonValue", "value of the deals won"),
    ("dealsLost", "deals lost (by lost date)"),
    ("dealsLostValue", "value of the deals lost"),
    ("wonValueByPipeline", "value won per pipeline"),
    ("wonValueByOperator", "value won per operator"),
    ("conversionRate", "won / (won + lost), in percent"),
    ("sessionsStarted", "sessions opened"),
    ("sessionsFinished", "sessions finished"),
    ("avgTma", "average handling time (s) of the sessions opened"),
    ("avgTme", "average waiting time (s)"),
    ("avgTmp", "average first response time (s)"),
    ("campaignMessagesSent", "campaign messages sent"),
    ("campaignMessagesRead", "campaign messages read"),
    ("campaignMessagesAnswered", "campaign messages answered"),
];

pub fn known_metric(name: &str) -> Result<(), ValidationError> {
    if METRICS.iter().any(|(m, _)| *m == name) {
        Ok(())
    } else {
        Err(ValidationError::new("metric").with_message(
            format!(
                "must be one of {}",
                METRICS
                    .iter()
                    .map(|(m, _)| *m)
                    .collect::<Vec<_>>()
                    .join(", ")
            )
            .into(),
        ))
    }
}

/// The value of a metric over `[from, to]` (days).
async fn value(
    store: &dyn Store,
    ws: WorkspaceId,
    metric: &str,
    from: &str,
    to: &str,
) -> ApiResult<Value> {
    let total = |series: &'static str| async move {
        Ok::<i64, ApiError>(rollups::read(store, ws, series, from, to).await?.0)
    };
    let money = |cents: i64| json!(cents as f64 / 100.0);
    let average = |sum: i64, count: i64| {
        if count == 0 {
            Value::Null
        } else {
            json!(((sum as f64 / count as f64) / 1000.0 * 1000.0).round() / 1000.0)
        }
    };
    let by = |series: &'static str| async move {
        let (_, by) = rollups::read(store, ws, series, from, to).await?;
        Ok::<Value, ApiError>(Value::Object(
            by.into_iter().map(|(k, v)| (k, money(v))).collect(),
        ))
    };
    Ok(match metric {
        "contactsCreated" => json!(total("contacts.created").await?),
        "newContacts" => json!(total("contacts.new").await?),
        "dealsCreated" => json!(total("deals.created").await?),
        "dealsCreatedValue" => money(total("deals.createdValue").await?),
        "dealsWon" => json!(total("deals.won").await?),
        "dealsWonValue" => money(total("deals.wonValue").await?),
        "dealsLost" => json!(total("deals.lost").await?),
        "dealsLostValue" => money(total("deals.lostValue").await?),
        "wonValueByPipeline" => by("deals.wonValueByPipeline").await?,
        "wonValueByOperator" => by("deals.wonValueByOperator").await?,
        "conversionRate" => {
            let (won, lost) = (total("deals.won").await?, total("deals.lost").await?);
            if won + lost == 0 {
                Value::Null
            } else {
                json!(((won as f64 * 10000.0) / (won + lost) as f64).round() / 100.0)
            }
        }
        "sessionsStarted" => json!(total("sessions.started").await?),
        "sessionsFinished" => json!(total("sessions.finished").await?),
        "avgTma" => average(
            total("sessions.tmaMs").await?,
            total("sessions.tmaCount").await?,
        ),
        "avgTme" => average(
            total("sessions.tmeMs").await?,
            total("sessions.tmeCount").await?,
        ),
        "avgTmp" => average(
            total("sessions.tmpMs").await?,
            total("sessions.tmpCount").await?,
        ),
        "campaignMessagesSent" => json!(total("campaigns.sent").await?),
        "campaignMessagesRead" => json!(total("campaigns.read").await?),
        "campaignMessagesAnswered" => json!(total("campaigns.answered").await?),
        other => return Err(ApiError::bad_request(format!("unknown metric {other:?}"))),
    })
}

/// Computes snapshot `job_id` (`<dashboardId>.<snapshotId>`) of workspace `ws`.
pub async fn process(store: &dyn Store, ws: WorkspaceId, job_id: &str) -> ApiResult<Snapshot> {
    let started = std::time::Instant::now();
    let Some((dashboard_id, snapshot_id)) = job_id
        .split_once('.')
        .and_then(|(d, s)| Some((DashboardId(d.parse::<u64>().ok()?), s)))
    else {
        return Err(ApiError::bad_request(format!(
            "not a snapshot job: {job_id:?}"
        )));
    };
    let key = keys::snapshot(ws, dashboard_id, snapshot_id);
    let current: Snapshot = record::find(store, &key, true, "snapshot").await?;
    let state = current
        .status
        .as_ref()
        .and_then(|s| s.get("state"))
        .and_then(Value::as_str);
    if state != Some("queued") {
        return Ok(current);
    }
    let dashboard: Option<Dashboard> =
        record::get(store, &keys::dashboard(ws, dashboard_id), true).await?;
    let (from_t, to_t) = (
        current.period_from.unwrap_or(chrono::DateTime::UNIX_EPOCH),
        current.period_to.unwrap_or_else(ids::now),
    );
    let (from, to) = (day(&from_t), day(&to_t));
    let mut next = current.clone();
    let mut failed = 0;
    for widget in dashboard.map(|d| d.layout).unwrap_or_default() {
        let mut entry = Map::new();
        entry.insert("computedAt".into(), ids::format_ts(&ids::now()).into());
        entry.insert("period".into(), json!({ "from": from, "to": to }));
        match &widget.metric {
            None => {
                entry.insert("error".into(), "the widget names no metric".into());
                failed += 1;
            }
            Some(metric) => {
                entry.insert("metric".into(), metric.clone().into());
                match value(store, ws, metric, &from, &to).await {
                    Ok(v) => {
                        entry.insert("value".into(), v);
                    }
                    // The store failing is not the widget's: the job runs again.
                    Err(e) if e.status.is_server_error() => return Err(e),
                    Err(e) => {
                        entry.insert("error".into(), e.message.into());
                        failed += 1;
                    }
                }
            }
        }
        next.data.insert(widget.i.clone(), Value::Object(entry));
    }
    let now = ids::now();
    let mut status = next.status.clone().unwrap_or_default();
    status.insert("state".into(), "done".into());
    status.insert("widgetsFailed".into(), failed.into());
    next.status = Some(status);
    next.processed_at = Some(now);
    next.processed_time_in_ms = Some((started.elapsed().as_secs_f64() * 1e6).round() / 1000.0);
    next.total_time_in_ms =
        Some((now - current.stamps.created_at).num_milliseconds().max(0) as f64);
    let caller = Caller::system(ws, "snapshot-job");
    let mut m = Mutation::new(&caller);
    if !m.update(&current, &mut next)? {
        return Ok(current);
    }
    match m
        .commit(store, "snapshot.compute", "snapshot", snapshot_id)
        .await
    {
        Ok(()) => Ok(next),
        // A concurrent run (SQS delivers at least once) computed it first.
        Err(record::CommitError::Api(e)) if e.status == http::StatusCode::CONFLICT => {
            record::find(store, &key, true, "snapshot").await
        }
        Err(e) => Err(e.into()),
    }
}
