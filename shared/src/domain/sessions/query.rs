//! The query of `GET /v3/reports/sessions`: every parameter of the spec, in the
//! flat, nested (`filters[x]`) and JSON-in-grouping forms, with the deal list's
//! parser ([`crate::query`]).

use serde::Deserialize;
use serde_json::Value;

use super::record::TrailKind;
use crate::error::{ApiError, ApiResult};
use crate::ids::ClientTime;
use crate::period::Period;
use crate::query::{self, QuerySpec};

/// Which time a period (or `from`/`to`) measures.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Deserialize, serde::Serialize, Default, schemars::JsonSchema,
)]
#[serde(rename_all = "camelCase")]
pub enum PeriodMetric {
    #[default]
    CreatedAt,
    FinishedAt,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum SortBy {
    #[default]
    CreatedAt,
    FinishedAt,
    Tma,
    Tme,
    Tmp,
    Rating,
}

/// One element of the `trails` filter: sessions having such a trail.
#[derive(Debug, Clone, Deserialize, PartialEq, schemars::JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct TrailFilter {
    #[serde(rename = "type")]
    pub kind: TrailKind,
    pub operator_id: Option<String>,
    pub group_id: Option<String>,
}

#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct SessionQuery {
    /// Records per page (default 20).
    #[schemars(range(min = 1, max = 500), extend("default" = 20))]
    pub limit: Option<u64>,
    /// Records to skip; `offset + limit` is at most 10,000 (narrow with filters beyond).
    #[schemars(range(max = 9999), extend("default" = 0))]
    pub offset: Option<u64>,
    pub sort_by: Option<SortBy>,
    pub sort: Option<String>,
    #[serde(default)]
    pub tags: Vec<u64>,
    #[serde(default)]
    pub channels: Vec<String>,
    #[serde(default)]
    pub groups: Vec<String>,
    #[serde(default)]
    pub assigned: Vec<String>,
    #[serde(default)]
    pub bots: Vec<String>,
    pub from: Option<ClientTime>,
    pub to: Option<ClientTime>,
    /// JSON: `[{"type":"transferred","groupId":"sales"}]` (or its elements
    /// inside `filters`).
    #[serde(default)]
    #[schemars(with = "Vec<String>")]
    pub trails: Vec<Value>,
    pub is_finished: Option<bool>,
    pub waiting: Option<bool>,
    pub in_progress: Option<bool>,
    pub pending: Option<bool>,
    pub has_rating: Option<bool>,
    pub is_new_contact: Option<bool>,
    pub only_finished_at: Option<bool>,
    pub only_created_at: Option<bool>,
    pub answered_on_day: Option<bool>,
    pub is_reopened: Option<bool>,
    pub tma_exists: Option<bool>,
    pub tme_exists: Option<bool>,
    pub tmp_exists: Option<bool>,
    pub has_deal: Option<bool>,
    pub is_conversation_on_period: Option<bool>,
    pub has_won_deal: Option<bool>,
    pub change_assignment_to_trail: Option<bool>,
    pub campaign_id: Option<String>,
    pub conversation_id: Option<u64>,
    pub contact_phone: Option<String>,
    pub period: Option<Period>,
    pub period_metric: Option<PeriodMetric>,
    pub period_from: Option<ClientTime>,
    pub period_to: Option<ClientTime>,
}

const SPEC: QuerySpec = QuerySpec {
    lists: &["tags", "channels", "groups", "assigned", "bots", "trails"],
    numbers: &["limit", "offset", "tags", "conversationId"],
    bools: &[
        "isFinished",
        "waiting",
        "inProgress",
        "pending",
        "hasRating",
        "isNewContact",
        "onlyFinishedAt",
        "onlyCreatedAt",
        "answeredOnDay",
        "isReopened",
        "tmaExists",
        "tmeExists",
        "tmpExists",
        "hasDeal",
        "isConversationOnPeriod",
        "hasWonDeal",
        "changeAssignmentToTrail",
    ],
    groups: &["filters"],
};

pub fn parse_query(raw: &str) -> ApiResult<SessionQuery> {
    query::parse(raw, &SPEC)
}

impl query::GroupedQuery for SessionQuery {
    const SPEC: query::QuerySpec = SPEC;
}

impl SessionQuery {
    /// The `trails` filter, from its JSON (a string in the flat form, objects
    /// inside `filters`).
    pub fn trail_filters(&self) -> ApiResult<Vec<TrailFilter>> {
        let mut out = Vec::new();
        for value in &self.trails {
            let value = match value {
                Value::String(text) => serde_json::from_str(text).map_err(|_| {
                    ApiError::field("trails", "must be JSON: [{\"type\":\"transferred\"}]")
                })?,
                other => other.clone(),
            };
            let items = match value {
                Value::Array(items) => items,
                single => vec![single],
            };
            for item in items {
                out.push(serde_json::from_value(item).map_err(|e| {
                    ApiError::field(
                        "trails",
                        format!("must be [{{type, operatorId?, groupId?}}]: {e}"),
                    )
                })?);
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_forms_of_a_filter_read_the_same() {
        for raw in [
            "isFinished=true&assigned=ana&assigned=rui",
            "filters[isFinished]=true&filters[assigned][]=ana&filters[assigned][]=rui",
            "filters=%7B%22isFinished%22%3Atrue%2C%22assigned%22%3A%5B%22ana%22%2C%22rui%22%5D%7D",
        ] {
            let q = parse_query(raw).unwrap();
            assert_eq!(q.is_finished, Some(true), "{raw}");
            assert_eq!(q.assigned, ["ana", "rui"], "{raw}");
        }
    }

    #[test]
    fn trails_come_as_json() {
        let q = parse_query("trails=%5B%7B%22type%22%3A%22transferred%22%7D%5D").unwrap();
        assert_eq!(q.trail_filters().unwrap()[0].kind, TrailKind::Transferred);
        let q = parse_query("filters=%7B%22trails%22%3A%5B%7B%22type%22%3A%22queued%22%2C%22groupId%22%3A%22s%22%7D%5D%7D").unwrap();
        let f = q.trail_filters().unwrap();
        assert_eq!(
            (f[0].kind, f[0].group_id.as_deref()),
            (TrailKind::Queued, Some("s"))
        );
        let q = parse_query("trails=nope").unwrap();
        assert_eq!(q.trail_filters().unwrap_err().details[0].field, "trails");
    }

    #[test]
    fn bad_values_name_their_parameter() {
        for (raw, field) in [
            ("isFinished=maybe", "isFinished"),
            ("tags=x", "tags"),
            ("period=fortnight", "period"),
            ("from=yesterday", "from"),
            ("colour=red", "colour"),
            ("sortBy=mood", "sortBy"),
        ] {
            assert_eq!(
                parse_query(raw).unwrap_err().details[0].field,
                field,
                "{raw}"
            );
        }
    }
}
