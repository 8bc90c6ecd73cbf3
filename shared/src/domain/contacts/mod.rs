//! Contacts: one stored record, served as the `/v3` Contact and the `/v1` Contact.
//!
//! A contact's phone is its identity: stored in canonical E.164 form
//! ([`crate::phone`]) and claimed through a sentinel item, so a workspace never
//! has two contacts for one phone (create answers 409; find-or-create answers
//! the existing contact). Its e-mail, the words of its name and its `newContact`
//! flag are index items written in the contact's own transaction, so searches
//! and filters read only what they return.
//!
//! - `record`: the stored contact and its index items;
//! - `view`: the `/v3` and `/v1` shapes, and the `/v3` listing with organizations;
//! - `input`: the bodies and how they change a contact;
//! - `write`: create, update, find-or-create, by phone;
//! - `list`: `GET /v3/contacts` and its filters; `search`: the `search` term;
//! - `window`: `GET /v3/contacts/all`; `v1`: `GET /v1/contacts`;
//! - `erase`: erasure of a person's data, and its export;
//! - `duplicates`: contacts that share an e-mail;
//! - `merge`: a merge of contacts into one, step by step, resumable;
//! - `upsert`: found by phone, e-mail or `externalId`, else created;
//! - `load`: the `contact` line of `crm load`.

mod duplicates;
mod erase;
mod input;
mod list;
mod load;
mod lookup;
mod merge;
mod record;
mod search;
mod upsert;
mod v1;
mod view;
mod window;
mod write;

pub use duplicates::{DuplicateBy, DuplicateGroup, duplicates};
pub use erase::{ContactExport, INLINE_RECORDS, Reapplied, erase, export, reapply};
pub use input::{ContactPatch, ContactPatchV1};
pub use merge::{INLINE_MOVES, MergeJob, MergeRequest, MergeStatus, MergeView};
pub mod erasing {
    //! The job side of an erasure (`crate::domain::jobs`).
    pub use super::erase::{KIND, process, request};
}
pub mod merging {
    //! The job side of a merge (`crate::domain::jobs`).
    pub use super::merge::{KIND, get, process, start};
}
pub use list::{ContactQuery, SortField, SortOrder, list};
pub use load::line_types;
pub use record::{Contact, ContactFields, CrmData, Erased, Referrals};
pub use upsert::{UpsertKey, upsert};
pub use v1::{V1Query, list_v1};
pub use view::{ContactListItem, ContactV1, ContactV3, list_items};
pub use window::{MAX_WINDOW_HOURS, WindowQuery, list_window};
pub use write::{Creation, by_phone, create, find_or_create, get, history, read, update};
pub(crate) use write::{add_contact, index_item_count};

/// Counters behind `totalCount`.
pub const LIST: &str = "CONTACT";
pub const NEW_LIST: &str = "NEWCONTACT";

/// The stored items of item_shapes/contacts.json read back (domain::item_shapes).
#[cfg(test)]
mod shapes {
    use serde_json::Value;

    use super::{Contact, MergeJob};
    use crate::domain::item_shapes::{literal, round_trip, stored, texts_declared};

    #[test]
    fn contacts_and_their_index_items_keep_their_shape() {
        let contact = round_trip::<Contact>("Contact");
        texts_declared::<Contact>();
        let items: Vec<Value> = contact
            .index_item_keys()
            .into_iter()
            .map(|key| stored(contact.index_item(key)))
            .collect();
        assert!(
            items.contains(&stored(literal("ContactIndex"))),
            "the contact index item changed: {items:?}"
        );
    }

    #[test]
    fn merges_keep_their_shape() {
        round_trip::<MergeJob>("ContactMerge");
    }
}
