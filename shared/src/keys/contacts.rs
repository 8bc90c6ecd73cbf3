//! Contacts and what hangs on them: phone, e-mail and name-word index items,
//! organizations, conversations and last sessions.

use super::collection;
use crate::ids::{ContactId, ConversationId, OrganizationId, WorkspaceId, padded};
use crate::store::Key;

pub fn contact(workspace_id: WorkspaceId, contact_id: u64) -> Key {
    Key::new(contacts(workspace_id), padded(contact_id))
}

pub fn contacts(workspace_id: WorkspaceId) -> String {
    collection(workspace_id, "CONTACT")
}

/// gsi1 partition of contacts by name.
pub fn contacts_by_name(workspace_id: WorkspaceId) -> String {
    collection(workspace_id, "CONTACTNAME")
}

pub fn contact_name_sort(folded_name: &str, contact_id: u64) -> String {
    format!("{folded_name}#{}", padded(contact_id))
}

pub fn new_contacts(workspace_id: WorkspaceId) -> String {
    collection(workspace_id, "NEWCONTACT")
}

pub fn new_contact(workspace_id: WorkspaceId, contact_id: u64) -> Key {
    Key::new(new_contacts(workspace_id), padded(contact_id))
}

pub fn contact_phone(workspace_id: WorkspaceId, e164: &str) -> Key {
    Key::new(collection(workspace_id, "PHONE"), e164)
}

pub fn contact_emails(workspace_id: WorkspaceId) -> String {
    collection(workspace_id, "EMAIL")
}

/// Sort-key prefix of every contact with this (lowercased) e-mail.
pub fn contact_email_prefix(email: &str) -> String {
    format!("{email}#")
}

pub fn contact_email(workspace_id: WorkspaceId, email: &str, contact_id: u64) -> Key {
    Key::new(
        contact_emails(workspace_id),
        format!("{email}#{}", padded(contact_id)),
    )
}

/// The first contact to hold an e-mail leaves this sentinel; a later holder,
/// finding it, marks the e-mail shared ([`contact_shared_email`]).
pub fn contact_email_held(workspace_id: WorkspaceId, email: &str) -> Key {
    Key::new(collection(workspace_id, "EMAILHELD"), email)
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

pub fn contact_external_ids(workspace_id: WorkspaceId) -> String {
    collection(workspace_id, "EXTERNALID")
}

/// Sort-key prefix of every contact with this `externalId` (exact).
pub fn contact_external_id_prefix(external_id: &str) -> String {
    format!("{external_id}#")
}

pub fn contact_external_id(workspace_id: WorkspaceId, external_id: &str, contact_id: u64) -> Key {
    Key::new(
        contact_external_ids(workspace_id),
        format!("{external_id}#{}", padded(contact_id)),
    )
}

pub fn contact_words(workspace_id: WorkspaceId) -> String {
    collection(workspace_id, "NAMEWORD")
}

pub fn contact_word(workspace_id: WorkspaceId, word: &str, contact_id: u64) -> Key {
    Key::new(
        contact_words(workspace_id),
        format!("{word}#{}", padded(contact_id)),
    )
}

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
