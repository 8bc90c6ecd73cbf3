//! Outbound campaigns (`/v3/campaigns`): the spec's list, and the extensions
//! through which campaigns are drafted, edited, moved through their lifecycle
//! and credited with the results the messaging side reports.
//!
//! - `record`: the stored campaign, its statuses and derived figures;
//! - `index`: the index items (status, channel, name words) and their digests;
//! - `write`: create and edit; `lifecycle`: the transitions; `results`: what
//!   the messaging side reports; `load`: `crm load`;
//! - `list`: the list and its filters.

mod index;
mod lifecycle;
mod list;
mod load;
mod record;
mod results;
mod write;

pub use lifecycle::{Action, transition};
pub use list::{CampaignQuery, list};
pub use load::{CampaignLine, line_types};
pub use record::{Campaign, CampaignFields, CampaignStatus, HealthCheckData, ResultCounts};
pub use results::{ResultsReport, report};
pub use write::{CampaignPatch, create, get, update};

/// The counter behind `totalCount`.
pub const LIST: &str = "CAMPAIGN";

/// A report id: 1 to 64 letters, digits, `- _ . :`.
pub fn valid_report_id(id: &str) -> bool {
    (1..=64).contains(&id.len())
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b':'))
}

/// The stored items of item_shapes/campaigns.json read back (domain::item_shapes).
#[cfg(test)]
mod shapes {
    use serde_json::Value;

    use super::Campaign;
    use crate::domain::item_shapes::{literal, round_trip, stored, texts_declared};

    #[test]
    fn campaigns_and_their_digests_keep_their_shape() {
        let campaign = round_trip::<Campaign>("Campaign");
        texts_declared::<Campaign>();
        let items: Vec<Value> = super::index::index_items(&campaign)
            .into_iter()
            .map(stored)
            .collect();
        assert!(
            items.contains(&stored(literal("CampaignIndex"))),
            "{items:?}"
        );
    }
}
