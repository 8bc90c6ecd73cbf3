//! Dashboards and their snapshots.
//!
//! A dashboard is a named layout of widgets (`layout: [{ i, x, y, w, h }]`).
//! A widget names a metric of the catalog (`compute.rs`). A snapshot is the
//! computed state of the dashboard's metrics over a period: recorded `queued`,
//! computed in the background from the rollups (never from the workspace's
//! records), then `done` with `data`, `processedAt`, `processedTimeInMs` and
//! `totalTimeInMs`. Snapshots are listed newest first.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use validator::Validate;

use crate::auth::Caller;
use crate::error::{ApiError, ApiResult};
use crate::ids::{self, Timestamp, WorkspaceId};
use crate::keys;
use crate::keys::DashboardId;
use crate::page::{ListPage, Paging, counted_page};
use crate::queue::{JobMessage, JobQueue};
use crate::record::{self, Mutation, Personal, Record, Stamps, with_fresh_id};
use crate::store::{Index, Key, Query, SkRange, Store};

mod compute;
mod schema;

pub use compute::{KIND, METRICS, process};

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Validate, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Widget {
    #[validate(length(min = 1, max = 64))]
    pub i: String,
    /// Grid units (whole numbers, as grid layouts use).
    #[validate(range(max = 10000))]
    pub x: u32,
    #[validate(range(max = 10000))]
    pub y: u32,
    #[validate(range(max = 10000))]
    pub w: u32,
    #[validate(range(max = 10000))]
    pub h: u32,
    /// What the widget shows: a metric of the catalog (an extension; see
    /// `compute.rs`). A widget without one shows nothing in a snapshot.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[validate(custom(function = "compute::known_metric"))]
    #[schemars(with = "Option<schema::MetricName>")]
    pub metric: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Dashboard {
    pub id: DashboardId,
    pub workspace_id: WorkspaceId,
    #[serde(default, rename = "_id", skip_serializing_if = "Option::is_none")]
    pub legacy_id: Option<String>,
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(default)]
    pub layout: Vec<Widget>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub author_id: Option<Map<String, Value>>,
    #[serde(flatten)]
    pub stamps: Stamps,
    pub version: u64,
}

crate::versioned!(Dashboard);

impl Record for Dashboard {
    const EVENTS: Option<&'static str> = Some("dashboard");
    const TYPE: &'static str = "Dashboard";
    const PERSONAL: Personal =
        Personal::none(&["authorId", "_id", "description", "layout", "name"]);
    fn key(&self) -> Key {
        keys::dashboard(self.workspace_id, self.id)
    }
}

/// The spec's Dashboard.
#[derive(Debug, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DashboardView {
    pub id: String,
    #[serde(rename = "_id", skip_serializing_if = "Option::is_none")]
    pub legacy_id: Option<String>,
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    pub layout: Vec<Widget>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub author_id: Option<Map<String, Value>>,
    pub workspace_id: WorkspaceId,
    #[serde(flatten)]
    pub stamps: Stamps,
}

impl From<Dashboard> for DashboardView {
    fn from(d: Dashboard) -> Self {
        Self {
            id: d.id.to_string(),
            legacy_id: d.legacy_id,
            name: d.name,
            description: d.description,
            layout: d.layout,
            author_id: d.author_id,
            workspace_id: d.workspace_id,
            stamps: d.stamps,
        }
    }
}

/// `POST /v3/dashboards`: `name` is required; the rest is optional.
#[derive(Debug, Deserialize, Validate, schemars::JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct DashboardCreate {
    #[serde(default, rename = "_id")]
    #[validate(length(max = 128))]
    pub legacy_id: Option<String>,
    #[validate(
        length(min = 1, max = 128),
        custom(function = "crate::validate::not_blank")
    )]
    pub name: String,
    #[validate(length(max = 2000))]
    pub description: Option<String>,
    #[serde(default)]
    #[validate(length(max = 100), nested)]
    pub layout: Vec<Widget>,
    pub author_id: Option<Map<String, Value>>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Snapshot {
    pub id: String,
    pub workspace_id: WorkspaceId,
    pub dashboard_id: String,
    #[schemars(with = "schema::SnapshotData")]
    pub data: Map<String, Value>,
    pub author_id: u64,
    pub author_name: String,
    #[serde(default, rename = "_id", skip_serializing_if = "Option::is_none")]
    pub legacy_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[schemars(with = "Option<crate::ids::Timestamp>")]
    #[serde(
        default,
        with = "ids::ts_format::option",
        skip_serializing_if = "Option::is_none"
    )]
    pub processed_at: Option<Timestamp>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub processed_time_in_ms: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_time_in_ms: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<schema::SnapshotStatus>")]
    pub status: Option<Map<String, Value>>,
    /// The window its metrics cover (an extension).
    #[schemars(with = "Option<crate::ids::Timestamp>")]
    #[serde(
        default,
        with = "ids::ts_format::option",
        skip_serializing_if = "Option::is_none"
    )]
    pub period_from: Option<Timestamp>,
    #[schemars(with = "Option<crate::ids::Timestamp>")]
    #[serde(
        default,
        with = "ids::ts_format::option",
        skip_serializing_if = "Option::is_none"
    )]
    pub period_to: Option<Timestamp>,
    #[serde(flatten)]
    pub stamps: Stamps,
    /// 0 for snapshots taken before they were computed in the background.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub version: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

crate::versioned!(Snapshot);

impl Record for Snapshot {
    const EVENTS: Option<&'static str> = Some("snapshot");
    const TYPE: &'static str = "Snapshot";
    /// Counts; its author is an operator, not a contact.
    const PERSONAL: Personal = Personal::none(&[
        "_id",
        "error",
        "authorName",
        "dashboardId",
        "data",
        "id",
        "name",
        "periodFrom",
        "periodTo",
        "processedAt",
        "status",
    ]);
    fn key(&self) -> Key {
        let dashboard = DashboardId(self.dashboard_id.parse().unwrap_or_default());
        keys::snapshot(self.workspace_id, dashboard, &self.id)
    }
}

/// `POST /v3/dashboards/{dashboardId}/snapshots`: `authorId` and `authorName`
/// are required; `dashboardId` in the body, if given, must be the path's.
#[derive(Debug, Deserialize, Validate, schemars::JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct SnapshotCreate {
    #[validate(length(max = 128))]
    pub dashboard_name: Option<String>,
    pub author_id: u64,
    #[validate(length(min = 1, max = 128))]
    pub author_name: String,
    #[serde(default, rename = "_id")]
    #[validate(length(max = 128))]
    pub legacy_id: Option<String>,
    #[validate(length(max = 32))]
    pub dashboard_id: Option<String>,
    #[validate(length(max = 128))]
    pub name: Option<String>,
    #[validate(range(min = 0.0, max = 1e9))]
    pub total_time_in_ms: Option<f64>,
    #[validate(length(max = 2000))]
    pub error: Option<String>,
    pub status: Option<Map<String, Value>>,
    /// The window of the metrics (an extension): a preset of the deal list's
    /// `period`, `month` (the last month, rolling) by default; `custom` takes
    /// `periodFrom` and `periodTo`.
    pub period: Option<crate::period::Period>,
    pub period_from: Option<ids::ClientTime>,
    pub period_to: Option<ids::ClientTime>,
}

pub const LIST: &str = "DASHBOARD";

pub async fn create(
    store: &dyn Store,
    caller: &Caller,
    input: DashboardCreate,
) -> ApiResult<Dashboard> {
    let ws = caller.workspace_id;
    with_fresh_id(|id| {
        let dashboard = Dashboard {
            id: DashboardId(id),
            workspace_id: ws,
            legacy_id: input.legacy_id.clone(),
            name: input.name.trim().to_owned(),
            description: input.description.clone(),
            layout: input.layout.clone(),
            author_id: input.author_id.clone(),
            stamps: Stamps::new(),
            version: 1,
        };
        async move {
            let mut m = Mutation::new(caller);
            m.create(&dashboard)?.count_in(ws, LIST, 1);
            m.commit(store, "dashboard.create", "dashboard", &id.to_string())
                .await?;
            Ok(dashboard)
        }
    })
    .await
}

pub async fn get(store: &dyn Store, caller: &Caller, id: DashboardId) -> ApiResult<Dashboard> {
    record::find(
        store,
        &keys::dashboard(caller.workspace_id, id),
        false,
        "dashboard",
    )
    .await
}

/// Takes a snapshot of a dashboard of the caller's workspace: recorded as
/// `queued` and answered at once; the `dashboardSnapshot` job computes every
/// widget's metric over the period (`compute.rs`) and writes `data`.
pub async fn snapshot(
    store: &dyn Store,
    queue: &dyn JobQueue,
    caller: &Caller,
    dashboard_id: DashboardId,
    input: SnapshotCreate,
) -> ApiResult<Snapshot> {
    if input
        .dashboard_id
        .as_deref()
        .is_some_and(|d| d != dashboard_id.to_string())
    {
        return Err(ApiError::field(
            "dashboardId",
            "must be the dashboard of the path",
        ));
    }
    let now = ids::now();
    let window = crate::period::Window::of_period(
        now,
        input.period.unwrap_or(crate::period::Period::Month),
        input.period_from.map(|t| t.0),
        input.period_to.map(|t| t.0),
    )?;
    let at = |ms: Option<i64>| ms.and_then(chrono::DateTime::from_timestamp_millis);
    let dashboard: Dashboard = record::find(
        store,
        &keys::dashboard(caller.workspace_id, dashboard_id),
        true,
        "dashboard",
    )
    .await?;
    let mut status = input.status.unwrap_or_default();
    status.insert("state".into(), "queued".into());
    let mut data = Map::new();
    data.insert(
        "dashboardName".into(),
        input
            .dashboard_name
            .clone()
            .unwrap_or_else(|| dashboard.name.clone())
            .into(),
    );
    let snapshot = Snapshot {
        id: ids::new_ulid(),
        workspace_id: caller.workspace_id,
        dashboard_id: dashboard_id.to_string(),
        data,
        author_id: input.author_id,
        author_name: input.author_name.trim().to_owned(),
        legacy_id: input.legacy_id,
        name: input.name,
        processed_at: None,
        processed_time_in_ms: None,
        total_time_in_ms: input.total_time_in_ms,
        error: input.error,
        status: Some(status),
        period_from: at(window.from).or(Some(chrono::DateTime::UNIX_EPOCH)),
        period_to: at(window.to).or(Some(now)),
        stamps: Stamps::new(),
        version: 1,
    };
    let mut m = Mutation::new(caller);
    m.create(&snapshot)?.count_list(
        &keys::snapshot_counter(caller.workspace_id, dashboard_id),
        1,
    );
    m.commit(store, "snapshot.create", "snapshot", &snapshot.id)
        .await?;
    let message = JobMessage::new(
        compute::KIND,
        caller.workspace_id,
        format!("{dashboard_id}.{}", snapshot.id),
    );
    if let Err(e) = queue.send(&message).await {
        tracing::error!(snapshot = %snapshot.id, error = %e, "could not queue a snapshot");
        // Not left `queued` for ever: it says it failed.
        let mut failed = snapshot.clone();
        if let Some(status) = failed.status.as_mut() {
            status.insert("state".into(), "failed".into());
        }
        failed.error = Some("the snapshot could not be queued; take it again".into());
        let mut m = Mutation::new(caller);
        if m.update(&snapshot, &mut failed).is_ok() {
            let _ = m
                .commit(store, "snapshot.fail", "snapshot", &snapshot.id)
                .await;
        }
        return Err(ApiError::unavailable(
            "the snapshot was recorded but could not be queued; take it again",
        ));
    }
    Ok(snapshot)
}

/// The snapshots of a dashboard, newest first. An unknown dashboard is a 404.
pub async fn snapshots(
    store: &dyn Store,
    caller: &Caller,
    dashboard_id: DashboardId,
    paging: Paging,
) -> ApiResult<ListPage<Snapshot>> {
    let ws = caller.workspace_id;
    get(store, caller, dashboard_id).await?;
    let query = Query::new(
        Index::TABLE,
        keys::snapshots(ws, dashboard_id),
        SkRange::All,
    )
    .backward();
    counted_page(
        store,
        query,
        paging,
        keys::snapshot_counter(ws, dashboard_id),
    )
    .await
}

pub async fn get_snapshot(
    store: &dyn Store,
    caller: &Caller,
    dashboard_id: DashboardId,
    id: &str,
) -> ApiResult<Snapshot> {
    if !ids::is_ulid(id) {
        return Err(ApiError::not_found("snapshot"));
    }
    record::find(
        store,
        &keys::snapshot(caller.workspace_id, dashboard_id, id),
        false,
        "snapshot",
    )
    .await
}

/// The stored items of item_shapes/dashboards.json read back (domain::item_shapes).
#[cfg(test)]
mod shapes {
    use crate::domain::item_shapes::{round_trip, texts_declared};

    #[test]
    fn dashboards_and_snapshots_keep_their_shape() {
        round_trip::<crate::domain::dashboards::Dashboard>("Dashboard");
        texts_declared::<crate::domain::dashboards::Dashboard>();
        round_trip::<crate::domain::dashboards::Snapshot>("Snapshot");
        round_trip::<crate::domain::dashboards::Snapshot>("SnapshotComputed");
        texts_declared::<crate::domain::dashboards::Snapshot>();
    }
}
