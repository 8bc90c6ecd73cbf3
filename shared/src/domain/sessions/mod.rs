//! Session reports: one service episode of a conversation, from its opening
//! (or reopening) to its finish, with the metrics support teams read
//! (`tme` waiting, `tmp` first response, `tma` handling, in seconds).
//!
//! - `record`: the stored session and its body; `metrics`: [`measure`], the
//!   metrics from the trails (see docs/design.md for the rules and a worked
//!   example);
//! - `index`: the index items and their digests;
//! - `write`: `PUT` and `crm load` (one path); `query` and `list`: the report.

mod index;
mod list;
mod metrics;
mod query;
mod record;
mod write;

pub use index::Digest;
pub use list::{DEFAULT_DAYS, MAX_SPAN_DAYS, SessionList, Summary, list};
pub use metrics::measure;
pub use query::{PeriodMetric, SessionQuery, SortBy, TrailFilter, parse_query};
pub use record::{
    Author, Metrics, Session, SessionConversation, SessionDeals, SessionInput, SessionTimes, Trail,
    TrailKind,
};
pub use write::{SessionLine, get, line_types, put, valid_id};
pub(crate) use write::{erase_person, move_to_contact};
