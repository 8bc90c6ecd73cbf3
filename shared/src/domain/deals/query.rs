//! The query of `GET /v3/deals`: every parameter of the spec, in the flat,
//! nested and JSON-in-grouping forms ([`crate::query`]).

use serde::Deserialize;

use super::record::DealStatus;
use crate::error::ApiResult;
use crate::ids::ClientTime;
use crate::period::{DatePreset, Period};
use crate::query::{self, QuerySpec};

/// What `period` measures: the creation, the won/lost date or the last update.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum PeriodMetric {
    #[default]
    CreatedAt,
    WonLostDate,
    #[serde(alias = "lastUpdateAt")]
    UpdatedAt,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum SortBy {
    #[default]
    CreatedAt,
    #[serde(alias = "lastUpdateAt")]
    UpdatedAt,
    Value,
    Name,
    WonLostDate,
    Position,
}

/// The query of `GET /v3/deals`, after [`parse_query`] flattened it.
#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct DealQuery {
    /// Records per page (default 20).
    #[schemars(range(min = 1, max = 500), extend("default" = 20))]
    pub limit: Option<u64>,
    /// Records to skip; `offset + limit` is at most 10,000 (narrow with filters beyond).
    #[schemars(range(max = 9999), extend("default" = 0))]
    pub offset: Option<u64>,
    /// Required (the spec's), flat or inside a grouping.
    #[schemars(required)]
    pub role_id: Option<u64>,
    /// Required (the spec's), flat or inside a grouping.
    #[schemars(required)]
    pub is_owner: Option<bool>,
    /// Required (the spec's), flat or inside a grouping.
    #[schemars(required)]
    pub user_id: Option<u64>,
    #[serde(default)]
    pub stage_id: Vec<String>,
    pub sort_by: Option<SortBy>,
    pub sort: Option<String>,
    pub contact_id: Option<u64>,
    pub status: Option<DealStatus>,
    pub date: Option<DatePreset>,
    pub pipeline_id: Option<String>,
    pub operator_id: Option<u64>,
    pub group_id: Option<u64>,
    pub tag_id: Option<u64>,
    pub ignore_restrictions: Option<bool>,
    /// Accepted for compatibility; the spec does not say what it changes.
    pub include_operator_day: Option<bool>,
    #[serde(default)]
    pub operator_ids: Vec<u64>,
    #[serde(default)]
    pub group_ids: Vec<u64>,
    #[serde(default)]
    pub product_ids: Vec<String>,
    #[serde(default)]
    pub tag_ids: Vec<u64>,
    pub created_at_from: Option<ClientTime>,
    pub created_at_to: Option<ClientTime>,
    pub won_lost_at_from: Option<ClientTime>,
    pub won_lost_at_to: Option<ClientTime>,
    pub period: Option<Period>,
    pub period_metric: Option<PeriodMetric>,
    pub period_from: Option<ClientTime>,
    pub period_to: Option<ClientTime>,
}

/// The parameters that are not plain strings; the groupings of the spec.
const SPEC: QuerySpec = QuerySpec {
    lists: &["stageId", "operatorIds", "groupIds", "productIds", "tagIds"],
    numbers: &[
        "limit",
        "offset",
        "roleId",
        "userId",
        "contactId",
        "operatorId",
        "groupId",
        "tagId",
        "operatorIds",
        "groupIds",
        "tagIds",
    ],
    bools: &["isOwner", "ignoreRestrictions", "includeOperatorDay"],
    groups: &["filters", "conditions", "sortedBy", "meta"],
};

/// Parses the deal list's query in every form it comes (`status=won`,
/// `filters[status]=won`, `filters={"status":"won"}`, `sort[value]=asc`).
pub fn parse_query(raw: &str) -> ApiResult<DealQuery> {
    query::parse(raw, &SPEC)
}

impl query::GroupedQuery for DealQuery {
    const SPEC: query::QuerySpec = SPEC;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_form_of_a_filter_reads_the_same() {
        for raw in [
            "status=won&stageId=a&stageId=b",
            "filters[status]=won&filters[stageId][]=a&filters[stageId][]=b",
            "filters=%7B%22status%22%3A%22won%22%2C%22stageId%22%3A%5B%22a%22%2C%22b%22%5D%7D",
            "conditions[status]=won&stageId=a,b",
        ] {
            let q = parse_query(raw).unwrap();
            assert_eq!(q.status, Some(DealStatus::Won), "{raw}");
            assert_eq!(q.stage_id, ["a", "b"], "{raw}");
        }
    }

    #[test]
    fn times_are_parsed_at_the_boundary() {
        let q = parse_query("createdAtFrom=2026-01-01&periodTo=2026-02-01T10:00:00Z").unwrap();
        assert!(q.created_at_from.is_some() && q.period_to.is_some());
        let e = parse_query("wonLostAtTo=yesterday").unwrap_err();
        assert_eq!(e.details[0].field, "wonLostAtTo");
        assert_eq!(e.details[0].problem, crate::ids::BAD_TIME);
    }

    #[test]
    fn unknown_parameters_and_bad_enums_name_the_parameter() {
        assert_eq!(
            parse_query("colour=red").unwrap_err().details[0].field,
            "colour"
        );
        assert_eq!(
            parse_query("status=maybe").unwrap_err().details[0].field,
            "status"
        );
        assert_eq!(
            parse_query("period=fortnight").unwrap_err().details[0].field,
            "period"
        );
    }
}
