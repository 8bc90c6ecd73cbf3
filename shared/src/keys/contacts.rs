//! Contacts and what hangs on them: phone, e-mail and name-word index items,
//! organizations, conversations and last sessions.
//!
//! Contact ids are time-ordered, so creation order is id order and a creation
//! window is an id range (`ids::id_range`): no creation-time index is needed.
//! The index items of a contact (phone, e-mail, words, new) are written in the
//! contact's own transaction, so they are never out of step with it.
//!
//! Every new contact writes its index items, so at a tenant's full write
//! rate they are spread over the shards too (`shards.rs`): those keyed by
//! a value (phone, e-mail, external id) in the shard of the value, so that
//! a lookup by value reads one partition, in workspaces made since the
//! cutover (`keys::value_shard` says why not the older ones); the name
//! words in the shard of the contact's id, since a search by a word's
//! first letters cannot hash the word.
//!
//! | Entity            | Access pattern                         | Index | pk                    | sk                      |
//! |-------------------|----------------------------------------|-------|-----------------------|-------------------------|
//! | Contact           | by id; list or time window by creation (its shards merged) | table | `W#<ws>#CONTACT`, `W#<ws>#S<n>#CONTACT` ([`contact`]) | `<id:16>` |
//! | Contact           | list by name                           | gsi1  | `W#<ws>#CONTACTNAME`  | `<folded name>#<id:16>` |
//! | New contact       | `newContact=true`, by creation (its shards merged) | table | `W#<ws>#NEWCONTACT`, `W#<ws>#S<n>#NEWCONTACT` ([`new_contact`]) | `<id:16>` |
//! | Contact phone     | phone identity (unique per workspace)  | table | `W#<ws>#PHONE`, `W#<ws>#S<n>#PHONE` ([`contact_phone`]) | `<E.164>` |
//! | Contact e-mail    | exact e-mail, without case             | table | `W#<ws>#EMAIL`, `W#<ws>#S<n>#EMAIL` ([`contact_email`]) | `<email>#<id:16>` |
//! | E-mail held       | the first contact to hold an e-mail (a later one marks it shared) | table | `W#<ws>#EMAILHELD`, `W#<ws>#S<n>#EMAILHELD` | `<email>` |
//! | Shared e-mail     | duplicates: e-mails of two contacts or more | table | `W#<ws>#DUPLICATE` | `email#<email>` |
//! | Contact external id | upsert by `externalId`, exact        | table | `W#<ws>#EXTERNALID`, `W#<ws>#S<n>#EXTERNALID` | `<externalId>#<id:16>` |
//! | Contact name word | search by a word's first letters (its shards merged) | table | `W#<ws>#NAMEWORD`, `W#<ws>#S<n>#NAMEWORD` ([`contact_word`]) | `<word>#<id:16>` |
//! | Merged contact    | a merged id's survivor                 | table | `W#<ws>#MERGED`       | `<id:16>`               |
//! | Contact merge     | by id (the job of a merge)             | table | `W#<ws>#MERGE`        | `<ulid>`                |
//! | Contact merging   | a contact one merge job is merging away | table | `W#<ws>#MERGING`     | `<id:16>`               |
//! | Erased contact    | the erasure ledger: ids and a time only | table | `W#<ws>#ERASED`      | `<id:16>`               |
//! | Erased contact    | every workspace's ledger (`crm erasures apply`) | gsi1 | `ERASURES`     | `<at>#<ws>#<id:16>`     |
//! | Organization      | by id                                  | table | `W#<ws>#ORG`          | `<id:16>`               |
//! | Organization link | the contacts of an organization        | table | `W#<ws>#ORG#<org>`    | `<contact:16>`          |
//! | Conversation      | by id                                  | table | `W#<ws>#CONVERSATION` | `<id:16>`               |
//! | Conversation      | a contact's (a merge moves them)       | gsi1  | `W#<ws>#CONVERSATIONS#<contact>` | `<id:16>`    |
//! | Last session      | contacts by last-session time          | table | `W#<ws>#LASTSESSION`  | `<time>#<contact:16>#<conversation:16>` |
//! | Last session      | the same, in one segment               | table | `W#<ws>#SEGMENT#<seg>`| `<time>#<contact:16>#<conversation:16>` |

use super::shards::{
    by_id, by_value, id_shard, shard_partition, shard_partitions, sharded_from, value_partition,
};
use super::{collection, concat};
use crate::ids::{WorkspaceId, id_type, padded};
use crate::store::Key;

id_type!(
    /// A contact's id.
    // Typed where it sits beside another entity's id (an organization link, a
    // deal's contact), so the two cannot be swapped.
    #[schemars(inline)]
    ContactId
);

/// Every contact create and edit writes its record, so the list by id is
/// kept over the shards (`shards.rs`), each contact in the shard of its id.
const CONTACT: &str = "CONTACT";

pub fn contact(workspace_id: WorkspaceId, contact_id: u64) -> Key {
    by_id(workspace_id, CONTACT, contact_id)
}

/// Every shard of a workspace's contacts, read together for a list.
pub fn contact_partitions(workspace_id: WorkspaceId) -> Vec<String> {
    shard_partitions(workspace_id, CONTACT)
}

/// gsi1 partition of contacts by name.
pub fn contacts_by_name(workspace_id: WorkspaceId) -> String {
    collection(workspace_id, "CONTACTNAME")
}

pub fn contact_name_sort(folded_name: &str, contact_id: u64) -> String {
    concat(&[folded_name, "#", &padded(contact_id)])
}

/// Every shard of a workspace's new contacts (in the contact's shard, as
/// the list by id), read together for a list.
pub fn new_contacts(workspace_id: WorkspaceId) -> Vec<String> {
    shard_partitions(workspace_id, NEW_CONTACT)
}

pub fn new_contact(workspace_id: WorkspaceId, contact_id: u64) -> Key {
    by_id(workspace_id, NEW_CONTACT, contact_id)
}

const NEW_CONTACT: &str = "NEWCONTACT";

const PHONE: &str = "PHONE";
const EMAIL: &str = "EMAIL";
const EMAIL_HELD: &str = "EMAILHELD";
const EXTERNAL_ID: &str = "EXTERNALID";
const NAME_WORD: &str = "NAMEWORD";

/// A phone's sentinel, in the phone's shard (`keys::value_partition`).
pub fn contact_phone(workspace_id: WorkspaceId, e164: &str) -> Key {
    by_value(workspace_id, PHONE, e164, e164.to_owned())
}

/// The partition of the e-mail items of this (lowercased) e-mail.
pub fn contact_emails(workspace_id: WorkspaceId, email: &str) -> String {
    value_partition(workspace_id, EMAIL, email)
}

/// Sort-key prefix of every contact with this (lowercased) e-mail.
pub fn contact_email_prefix(email: &str) -> String {
    format!("{email}#")
}

pub fn contact_email(workspace_id: WorkspaceId, email: &str, contact_id: u64) -> Key {
    let sk = format!("{email}#{}", padded(contact_id));
    by_value(workspace_id, EMAIL, email, sk)
}

/// The first contact to hold an e-mail leaves this sentinel; a later holder,
/// finding it, marks the e-mail shared ([`contact_shared_email`]).
pub fn contact_email_held(workspace_id: WorkspaceId, email: &str) -> Key {
    by_value(workspace_id, EMAIL_HELD, email, email.to_owned())
}

/// Values held by more than one contact: where duplicates are found.
pub fn contact_duplicates(workspace_id: WorkspaceId) -> String {
    collection(workspace_id, "DUPLICATE")
}

pub fn contact_shared_email(workspace_id: WorkspaceId, email: &str) -> Key {
    Key::new(contact_duplicates(workspace_id), format!("email#{email}"))
}

/// The e-mail of a [`contact_shared_email`] sort key.
pub fn shared_email_of(sk: &str) -> Option<&str> {
    sk.strip_prefix("email#")
}

/// The partition of the items of this `externalId`.
pub fn contact_external_ids(workspace_id: WorkspaceId, external_id: &str) -> String {
    value_partition(workspace_id, EXTERNAL_ID, external_id)
}

/// Sort-key prefix of every contact with this `externalId` (exact).
pub fn contact_external_id_prefix(external_id: &str) -> String {
    format!("{external_id}#")
}

pub fn contact_external_id(workspace_id: WorkspaceId, external_id: &str, contact_id: u64) -> Key {
    let sk = format!("{external_id}#{}", padded(contact_id));
    by_value(workspace_id, EXTERNAL_ID, external_id, sk)
}

/// Every shard of a workspace's name words, read together by a search.
pub fn contact_words(workspace_id: WorkspaceId) -> Vec<String> {
    shard_partitions(workspace_id, NAME_WORD)
}

/// A word of a contact's name, in the shard of the contact's id.
pub fn contact_word(workspace_id: WorkspaceId, word: &str, contact_id: u64) -> Key {
    let shard = id_shard(contact_id, sharded_from());
    Key::new(
        shard_partition(workspace_id, NAME_WORD, shard),
        concat(&[word, "#", &padded(contact_id)]),
    )
}

id_type!(
    /// An organization's id.
    #[schemars(inline)]
    OrganizationId
);

pub fn organization(workspace_id: WorkspaceId, organization_id: OrganizationId) -> Key {
    Key::new(collection(workspace_id, "ORG"), padded(organization_id.0))
}

pub fn organization_contacts(workspace_id: WorkspaceId, organization_id: u64) -> String {
    collection(workspace_id, &format!("ORG#{organization_id}"))
}

pub fn organization_contact(
    workspace_id: WorkspaceId,
    organization_id: u64,
    ContactId(contact_id): ContactId,
) -> Key {
    Key::new(
        organization_contacts(workspace_id, organization_id),
        padded(contact_id),
    )
}

id_type!(
    /// A conversation's id.
    #[schemars(inline)]
    ConversationId
);

pub fn conversation(workspace_id: WorkspaceId, conversation_id: ConversationId) -> Key {
    Key::new(
        collection(workspace_id, "CONVERSATION"),
        padded(conversation_id.0),
    )
}

/// gsi1 partition of a contact's conversations (a merge moves them).
pub fn contact_conversations(workspace_id: WorkspaceId, contact_id: u64) -> String {
    collection(workspace_id, &format!("CONVERSATIONS#{contact_id}"))
}

/// What a merged contact's id answers: the contact it was merged into.
pub fn merged_contact(workspace_id: WorkspaceId, contact_id: u64) -> Key {
    Key::new(collection(workspace_id, "MERGED"), padded(contact_id))
}

/// A contact a merge job is merging away (one job at a time).
pub fn contact_merging(workspace_id: WorkspaceId, contact_id: u64) -> Key {
    Key::new(collection(workspace_id, "MERGING"), padded(contact_id))
}

pub fn contact_merge(workspace_id: WorkspaceId, job_id: &str) -> Key {
    Key::new(collection(workspace_id, "MERGE"), job_id)
}

pub fn last_sessions(workspace_id: WorkspaceId) -> String {
    collection(workspace_id, "LASTSESSION")
}

pub fn segment_sessions(workspace_id: WorkspaceId, segment_id: &str) -> String {
    collection(workspace_id, &format!("SEGMENT#{segment_id}"))
}

/// `<time>#<contact:16>#<conversation:16>`: by time, then contact.
pub fn last_session_sort(
    time: &str,
    ContactId(contact_id): ContactId,
    conversation_id: u64,
) -> String {
    format!("{time}#{}#{}", padded(contact_id), padded(conversation_id))
}

/// The contact id of a last-session sort key.
pub fn last_session_contact(sk: &str) -> Option<u64> {
    let mut parts = sk.rsplit('#');
    parts.next()?;
    parts.next()?.parse().ok()
}

/// The erasure ledger's entry of a contact (ids and a time only): what
/// `crm erasures apply` erases again in a table restored from a backup, and
/// what a kept answer naming the contact is checked against before replay.
pub fn erased_contact(workspace_id: WorkspaceId, contact_id: u64) -> Key {
    Key::new(collection(workspace_id, "ERASED"), padded(contact_id))
}

/// gsi1 partition of every workspace's ledger entries, oldest first (one
/// Query reads the whole ledger: erasures are rare).
pub const ERASURES: &str = "ERASURES";

/// An entry's sort key in [`ERASURES`]: when, which workspace, which contact.
pub fn erasure_in_ledger(at: &str, workspace_id: WorkspaceId, contact_id: u64) -> String {
    format!("{at}#{workspace_id}#{}", padded(contact_id))
}
