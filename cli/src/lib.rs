//! The whole API as one application: every resource group on one Router, the way
//! `crm serve` runs it locally and the tests drive it.

use shared::http::{self, AppState, Group};

/// Every resource group of the API. A new group is one more line here.
pub fn groups() -> Vec<Group> {
    vec![
        tags::group(),
        contacts::group(),
        deals::group(),
        products::group(),
        custom_fields::group(),
        business_hours::group(),
        dashboards::group(),
        utility::group(),
        api_tokens::group(),
        workspaces::group(),
        audit::group(),
    ]
}

/// Every route of every group on one Router.
pub fn app(state: AppState) -> axum::Router {
    http::app(state, groups())
}
