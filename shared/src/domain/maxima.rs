//! Every documented per-request maximum, in one place: what it bounds, where,
//! the largest value a request may hold, and the test of the API suite that
//! sends a request at it, on the embedded store and on DynamoDB Local.
//!
//! A maximum that multiplies what one transaction writes (a record per item,
//! an index item per tag, an event per record) is the kind that moves past
//! DynamoDB's 100 items when a feature adds an item per record: the churn
//! reasons did, when events came. So a new maximum, or a new item written per
//! record, comes with its row here and a request at it in `tests/tests/`;
//! `tests/tests/maxima.rs` holds this table to docs/design.md ("Per-request
//! maxima") and to the tests it names.

use super::{batch, churn, contacts, events, imports, redirects, sessions, webhooks};

/// One documented maximum.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Maximum {
    /// What is bounded, as the docs' table names it.
    pub what: &'static str,
    /// The routes it bounds.
    pub routes: &'static str,
    /// The largest value a request may hold (one more is a 400, 409 or 413).
    pub max: u64,
    /// `<suite>::<test>` of `tests/tests`, which sends a request at `max`
    /// on both stores; or `untested: <why>`.
    pub test: &'static str,
}

const fn row(what: &'static str, routes: &'static str, max: u64, test: &'static str) -> Maximum {
    Maximum {
        what,
        routes,
        max,
        test,
    }
}

const DEALS: &str = "POST /v3/deals, PATCH /v3/deals/{id}, the deals batch";
const SESSIONS: &str = "PUT /v3/reports/sessions/{id}, `crm load`";
const REPORT: &str = "GET /v3/reports/sessions";
const BUSINESS_HOURS: &str = "`crm load` (`businessHour` lines)";

/// The table: requests that write, then requests that read, then sizes.
pub const MAXIMA: &[Maximum] = &[
    // Requests that write: each item may be a record, its event, its index items.
    row(
        "operations of a batch",
        "POST /v3/{contacts,tags,deals,products}/batch",
        batch::MAX_OPERATIONS as u64,
        "maxima::batches_at_their_maximum",
    ),
    row(
        "contacts of an import",
        "POST /v3/contacts/import",
        imports::MAX_BATCH as u64,
        "imports::imports_a_batch_of_500_in_the_background",
    ),
    row(
        "churn reasons a request adds",
        "POST /v3/workspaces/churn-reasons/suggestions",
        churn::MAX_PER_REQUEST as u64,
        "maxima::churn_reasons_at_their_maximum",
    ),
    row(
        "churn reasons in the list",
        "POST /v3/workspaces/churn-reasons/suggestions",
        churn::MAX_REASONS as u64,
        "maxima::churn_reasons_at_their_maximum",
    ),
    row(
        "contacts merged at once",
        "POST /v3/contacts/{id}/merge",
        10,
        "maxima::a_merge_at_its_maximum",
    ),
    row(
        "phones of a find-or-create",
        "POST /v3/contacts/find-or-create",
        10,
        "maxima::find_or_create_at_its_maximum",
    ),
    row("tags of a deal", DEALS, 20, "maxima::a_deal_at_its_maximum"),
    row(
        "products of a deal",
        DEALS,
        20,
        "maxima::a_deal_at_its_maximum",
    ),
    row(
        "lost reasons of a deal",
        DEALS,
        20,
        "maxima::a_deal_at_its_maximum",
    ),
    row(
        "trails of a session",
        SESSIONS,
        500,
        "maxima::a_session_at_its_maximum",
    ),
    row(
        "groups a session goes through",
        SESSIONS,
        5,
        "maxima::a_session_at_its_maximum",
    ),
    row(
        "bots a session goes through",
        SESSIONS,
        5,
        "maxima::a_session_at_its_maximum",
    ),
    row(
        "tags of a session",
        SESSIONS,
        20,
        "maxima::a_session_at_its_maximum",
    ),
    row(
        "followers of a session",
        SESSIONS,
        50,
        "maxima::a_session_at_its_maximum",
    ),
    row(
        "scheduled messages of a session",
        SESSIONS,
        50,
        "maxima::a_session_at_its_maximum",
    ),
    row(
        "deals of a session (`deals.ids`)",
        SESSIONS,
        20,
        "maxima::a_session_at_its_maximum",
    ),
    row(
        "widgets of a dashboard",
        "POST /v3/dashboards",
        100,
        "maxima::a_dashboard_at_its_maximum",
    ),
    row(
        "event types of a webhook endpoint",
        "POST /v3/webhooks, PATCH /v3/webhooks/{id}",
        50,
        "maxima::webhooks_at_their_maximum",
    ),
    row(
        "webhook endpoints of a workspace",
        "POST /v3/webhooks",
        webhooks::record::MAX_PER_WORKSPACE as u64,
        "maxima::webhooks_at_their_maximum",
    ),
    row(
        "events a replay reads",
        "POST /v3/webhooks/{id}/replay",
        webhooks::log::REPLAY_PAGE as u64,
        "maxima::a_replay_at_its_maximum",
    ),
    row(
        "asset URLs of a campaign",
        "POST /v3/campaigns, PATCH /v3/campaigns/{id}",
        10,
        "maxima::a_campaign_at_its_maximum",
    ),
    row(
        "opening intervals of a business hour",
        BUSINESS_HOURS,
        70,
        "maxima::business_hours_at_their_maximum",
    ),
    row(
        "holidays of a business hour",
        BUSINESS_HOURS,
        366,
        "maxima::business_hours_at_their_maximum",
    ),
    // Requests that read.
    row(
        "records of a /v3 page (`limit`)",
        "GET /v3 lists",
        crate::page::Paging::MAX_LIMIT,
        "maxima::pages_at_their_maximum",
    ),
    row(
        "`offset + limit` of a /v3 list",
        "GET /v3 lists",
        crate::page::MAX_WINDOW,
        "maxima::pages_at_their_maximum",
    ),
    row(
        "records of a /v1 page (`limit`)",
        "GET /v1 lists",
        crate::page::CursorPaging::MAX_LIMIT,
        "maxima::pages_at_their_maximum",
    ),
    row(
        "events of a feed or history page (`limit`)",
        "GET /v3/events, GET /v3/{contacts,deals}/{id}/history",
        events::MAX_LIMIT,
        "maxima::pages_at_their_maximum",
    ),
    row(
        "groups of a duplicates page (`limit`)",
        "GET /v3/contacts/duplicates",
        100,
        "maxima::pages_at_their_maximum",
    ),
    row(
        "hours of a creation window",
        "GET /v3/contacts/all",
        contacts::MAX_WINDOW_HOURS as u64,
        "contacts::lists_a_creation_window",
    ),
    row(
        "deliveries of a log page (`limit`)",
        "GET /v3/webhooks/{id}/deliveries",
        100,
        "maxima::a_replay_at_its_maximum",
    ),
    row(
        "values of a report's list filter",
        REPORT,
        20,
        "maxima::a_session_at_its_maximum",
    ),
    row(
        "days of a report's window",
        REPORT,
        sessions::MAX_SPAN_DAYS as u64,
        "maxima::a_session_at_its_maximum",
    ),
    row(
        "deals a deal list's filters match",
        "GET /v3/deals",
        10_000,
        "untested: needs 10,000 deals on each store",
    ),
    row(
        "sessions a report's narrowest partition matches",
        REPORT,
        10_000,
        "untested: needs 10,000 sessions on each store",
    ),
    row(
        "contacts of a filter set sorted by name",
        "GET /v3/contacts",
        10_000,
        "untested: needs 10,000 linked contacts on each store",
    ),
    // Sizes.
    row(
        "bytes of a request body",
        "every route with a body",
        512 * 1024,
        "maxima::sizes_at_their_maximum",
    ),
    row(
        "bytes of a request target",
        "every route",
        8 * 1024,
        "maxima::sizes_at_their_maximum",
    ),
    row(
        "characters of an `Idempotency-Key`",
        "every POST",
        crate::idempotency::MAX_KEY_LEN as u64,
        "idempotency::a_malformed_key_is_400",
    ),
    row(
        "bytes of a redirect session's payload (JSON)",
        "POST /v3/redirect-session",
        redirects::MAX_PAYLOAD_BYTES as u64,
        "maxima::sizes_at_their_maximum",
    ),
    row(
        "bytes of a welcome message's variables (JSON)",
        "POST /v3/workspaces/send-welcome-message",
        4096,
        "maxima::sizes_at_their_maximum",
    ),
];

/// The maximum named `what` (a test reads its value from here).
pub fn of(what: &str) -> u64 {
    match MAXIMA.iter().find(|m| m.what == what) {
        Some(m) => m.max,
        None => panic!("no maximum named {what:?}"),
    }
}
