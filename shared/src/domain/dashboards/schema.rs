//! What the document says of a snapshot's open-ended maps (`status`,
//! `data`) and of a widget's metric, so that a generated client types them.
//! Stored, they stay maps: these types only describe them.

use std::borrow::Cow;
use std::collections::BTreeMap;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde_json::{Map, Value};

use super::compute::METRICS;

/// A metric of the catalog (`compute::METRICS`).
pub struct MetricName;

impl JsonSchema for MetricName {
    fn schema_name() -> Cow<'static, str> {
        "MetricName".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        let names: Vec<&str> = METRICS.iter().map(|(name, _)| *name).collect();
        let words: Vec<String> = METRICS
            .iter()
            .map(|(name, what)| format!("`{name}`: {what}"))
            .collect();
        json_schema!({
            "type": "string",
            "enum": names,
            "description": format!("A metric of the catalog: {}.", words.join("; ")),
        })
    }
}

/// Where a snapshot stands.
#[derive(JsonSchema)]
#[serde(rename_all = "lowercase")]
#[allow(dead_code)]
pub enum SnapshotState {
    Queued,
    Done,
    Failed,
}

/// A snapshot's `status`: its state, how many widgets failed once done, and
/// whatever the request that took it gave.
#[derive(JsonSchema)]
#[serde(rename_all = "camelCase")]
#[allow(dead_code)]
pub struct SnapshotStatus {
    state: SnapshotState,
    widgets_failed: Option<u64>,
    #[serde(flatten)]
    given: Map<String, Value>,
}

/// A snapshot's `data`: the dashboard's name, and each widget's entry under
/// the widget's `i`.
#[derive(JsonSchema)]
#[serde(rename_all = "camelCase")]
#[allow(dead_code)]
pub struct SnapshotData {
    dashboard_name: Option<String>,
    #[serde(flatten)]
    widgets: BTreeMap<String, WidgetEntry>,
}

/// One widget's metric over the snapshot's period, or why it has none.
#[derive(JsonSchema)]
#[serde(rename_all = "camelCase")]
#[allow(dead_code)]
pub struct WidgetEntry {
    metric: Option<MetricName>,
    value: Option<MetricValue>,
    error: Option<String>,
    #[schemars(with = "Option<crate::ids::Timestamp>")]
    computed_at: Option<String>,
    period: Option<EntryPeriod>,
}

/// The days a widget's figure covers, `YYYY-MM-DD`.
#[derive(JsonSchema)]
#[allow(dead_code)]
pub struct EntryPeriod {
    from: String,
    to: String,
}

/// A figure, or figures by key (per pipeline, per operator).
#[derive(JsonSchema)]
#[serde(untagged)]
#[allow(dead_code)]
pub enum MetricValue {
    Number(f64),
    ByKey(BTreeMap<String, f64>),
}
