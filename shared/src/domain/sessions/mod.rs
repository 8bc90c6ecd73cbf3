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

/// The stored items of item_shapes/sessions.json read back (domain::item_shapes).
#[cfg(test)]
mod shapes {
    use serde_json::Value;

    use super::Session;
    use crate::domain::item_shapes::{literal, round_trip, stored, texts_declared};

    #[test]
    fn sessions_and_their_digests_keep_their_shape() {
        let session = round_trip::<Session>("Session");
        texts_declared::<Session>();
        let items: Vec<Value> = session
            .index_items()
            .expect("index items")
            .into_iter()
            .map(stored)
            .collect();
        assert!(
            items.contains(&stored(literal("SessionIndex"))),
            "the session index item (its digest) changed: {items:?}"
        );
    }
}
