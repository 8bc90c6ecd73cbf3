//! The domain functions behind the routes: each takes the store and the caller,
//! and does one operation of the spec. Handlers only parse and delegate.

pub mod audit;
pub mod batch;
pub mod billing;
pub mod bulk;
pub mod business_hours;
pub mod campaigns;
pub mod catalog;
pub mod churn;
pub mod contacts;
pub mod custom_fields;
pub mod dashboards;
pub mod deals;
pub mod events;
pub mod imports;
pub mod jobs;
pub mod maxima;
pub mod products;
pub mod redirects;
pub mod relations;
pub mod rollups;
pub mod sessions;
pub mod tags;
pub mod tokens;
pub mod utility;
pub mod webhooks;
pub mod welcome;
pub mod workspaces;

#[cfg(test)]
pub(crate) mod item_shapes;

use crate::auth::Caller;
use crate::error::ApiResult;
use crate::load::LineType;
use crate::store::Store;

/// Every line type `crm load` takes, each declared by its resource.
pub fn line_types() -> Vec<LineType> {
    [
        tags::line_types(),
        contacts::line_types(),
        deals::line_types(),
        relations::line_types(),
        products::line_types(),
        custom_fields::line_types(),
        business_hours::line_types(),
        sessions::line_types(),
        campaigns::line_types(),
    ]
    .concat()
}

/// Loads one line of a `crm load` file into the caller's workspace; answers its type.
pub async fn load_line(store: &dyn Store, caller: &Caller, text: &str) -> ApiResult<&'static str> {
    crate::load::load_line(&line_types(), store, caller, text).await
}
