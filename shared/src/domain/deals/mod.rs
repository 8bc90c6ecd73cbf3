//! Deals: records of the sales pipeline, with honest derived fields.
//!
//! - Moving to `won` or `lost` stamps `wonLostDate`; back to `open` clears it.
//! - `lostReason` and `lostReasonObs` live on lost deals only: leaving `lost`
//!   clears them, and setting them on a deal that is not lost is a 400.
//! - A stage change stamps `lastStageChanged` and adds the time spent in the
//!   previous stage (milliseconds) to `timeInStage[<previous stageId>]`. Both are
//!   computed: a body that sets them is a 400.
//! - A deal's contact is a contact of the workspace (`contactId` or
//!   `contact.id`); the deal keeps a snapshot of it. Deal products are catalog
//!   products; `total` is computed when absent.
//!
//! Lists: each deal writes small index items (by stage, status, operator,
//! pipeline, contact, and each tag and product), each holding a digest of the
//! deal. A list reads the narrowest partition its filters name, in the creation
//! window as an id range, and filters the rest on the digests; then it reads the
//! page's deals. An unfiltered list is one Query and the counter.

//!
//! - `record`: the stored deal and its parts, and `DealView`, the spec's Deal;
//! - `index`: the index items and their digests; `input`: the create and
//!   PATCH bodies, and the reads they need; `rules`: the rules above, pure
//!   functions of the deal before, the deal after and the time; `write`:
//!   create, get, update;
//! - `query`: the list's parameters in every form; `list`: the list itself;
//! - `load`: the `deal` line of `crm load`.

mod index;
mod input;
mod list;
mod load;
mod query;
mod record;
mod rules;
mod write;

pub use index::Digest;
pub use input::{DealCreate, DealPatch};
pub use list::list;
pub use load::line_types;
pub use query::{DealQuery, PeriodMetric, SortBy, parse_query};
pub use record::DealView;
pub use record::{
    AuthorType, Deal, DealContact, DealContactInput, DealContext, DealConversation, DealFields,
    DealProduct, DealStatus, DiscountKind, DiscountType,
};
pub use write::{create, get, history, update};
pub(crate) use write::{erase_person, move_to_contact};

pub const LIST: &str = "DEAL";

/// The stored items of item_shapes/deals.json read back (domain::item_shapes).
#[cfg(test)]
mod shapes {
    use serde_json::Value;

    use super::Deal;
    use crate::domain::item_shapes::{literal, round_trip, stored, texts_declared};

    #[test]
    fn deals_and_their_digests_keep_their_shape() {
        let deal = round_trip::<Deal>("Deal");
        texts_declared::<Deal>();
        let items: Vec<Value> = deal.index_items().into_iter().map(stored).collect();
        assert!(
            items.contains(&stored(literal("DealIndex"))),
            "the deal index item (its digest) changed: {items:?}"
        );
    }
}
