//! The shared crate of the CRM API: configuration, errors, authentication,
//! records and their keys, the store and its two backends, pagination, and the
//! HTTP plumbing every function uses. See `docs/design.md` for the whole picture.

pub mod auth;
pub mod config;
pub mod context;
pub mod deploy;
pub mod domain;
pub mod error;
pub mod files;
pub mod http;
pub mod idempotency;
pub mod ids;
pub mod keys;
pub mod lambda;
pub mod load;
pub mod outbound;
pub mod page;
pub mod patch;
pub mod period;
pub mod phone;
pub mod query;
pub mod queue;
pub mod ratelimit;
pub mod record;
pub mod store;
pub mod strict;
pub mod text;
pub mod tls;
pub mod validate;

pub use error::{ApiError, ApiResult};
