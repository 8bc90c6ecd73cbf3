//! The domain functions behind the routes: each takes the store and the caller,
//! and does one operation of the spec. Handlers only parse and delegate.

pub mod audit;
pub mod business_hours;
pub mod catalog;
pub mod contacts;
pub mod custom_fields;
pub mod dashboards;
pub mod deals;
pub mod imports;
pub mod products;
pub mod relations;
pub mod tags;
pub mod tokens;
pub mod utility;
pub mod workspaces;
