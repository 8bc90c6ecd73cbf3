//! Every key format of the table, and nothing else. A reader finds here how each
//! entity is stored and how each access pattern reads it.
//!
//! Tenant items have a partition key that starts with `W#<workspaceId>`, so no
//! query built from a caller's workspace can reach another workspace's items.
//! Numeric ids are zero-padded in sort keys so that key order is id order, which
//! is creation order (ids are time-ordered).
//!
//! | Entity            | Access pattern                         | Index | pk                    | sk                      |
//! |-------------------|----------------------------------------|-------|-----------------------|-------------------------|
//! | Workspace         | by id                                  | table | `W#<ws>`              | `WORKSPACE`             |
//! | Counter           | `totalCount` of a list (shard 0)       | table | `W#<ws>`              | `COUNT#<list>`          |
//! | Counter shard     | the same, shard 1..N-1 ([`counter_shards`]) | table | `W#<ws>#COUNT#<shard>` | `COUNT#<list>`    |
//! | Tag               | by id; list in creation order          | table | `W#<ws>#TAG`          | `<id:16>`               |
//! | Tag name          | uniqueness per workspace (sentinel)    | table | `W#<ws>#UNIQUE`       | `TAGNAME#<normalized>`  |
//! | API token         | by id; list in creation order          | table | `W#<ws>#TOKEN`        | `<ulid>`                |
//! | Token secret      | authenticate a bearer token            | table | `SECRET#<sha256 hex>` | `SECRET`                |
//! | Audit entry       | by id; list newest first               | table | `W#<ws>#AUDIT`        | `<ulid>`                |
//! | Audit entry       | every workspace, newest first (admin)  | gsi1  | `AUDIT#<shard 0..15>` (and `AUDIT`, from before) | `<ulid>` |
//! | Audit counter     | `totalCount` of the admin list (shard 0; 1..7 read only, from before) | table | `AUDIT` | `COUNT#<shard>` |
//! | Audit counter shard | the same, shard 1..15               | table | `AUDIT#COUNT#<shard>` | `COUNT#0`               |
//! | Contact           | by id; list or time window by creation | table | `W#<ws>#CONTACT`      | `<id:16>`               |
//! | Contact           | list by name                           | gsi1  | `W#<ws>#CONTACTNAME`  | `<folded name>#<id:16>` |
//! | New contact       | `newContact=true`, by creation         | table | `W#<ws>#NEWCONTACT`   | `<id:16>`               |
//! | Contact phone     | phone identity (unique per workspace)  | table | `W#<ws>#PHONE`        | `<E.164>`               |
//! | Contact e-mail    | exact e-mail, without case             | table | `W#<ws>#EMAIL`        | `<email>#<id:16>`       |
//! | Contact name word | search by a word's first letters       | table | `W#<ws>#NAMEWORD`     | `<word>#<id:16>`        |
//! | Organization      | by id                                  | table | `W#<ws>#ORG`          | `<id:16>`               |
//! | Organization link | the contacts of an organization        | table | `W#<ws>#ORG#<org>`    | `<contact:16>`          |
//! | Conversation      | by id                                  | table | `W#<ws>#CONVERSATION` | `<id:16>`               |
//! | Last session      | contacts by last-session time          | table | `W#<ws>#LASTSESSION`  | `<time>#<contact:16>#<conversation:16>` |
//! | Last session      | the same, in one segment               | table | `W#<ws>#SEGMENT#<seg>`| `<time>#<contact:16>#<conversation:16>` |
//! | Product           | by id; list in id order                | table | `W#<ws>#PRODUCT`      | `<id:16>`               |
//! | Custom field      | by id; list in id order                | table | `W#<ws>#CUSTOMFIELD`  | `<id:16>`               |
//! | Business hour     | by id; list in id order                | table | `W#<ws>#BUSINESSHOUR` | `<id:16>`               |
//! | Dashboard         | by id                                  | table | `W#<ws>#DASHBOARD`    | `<id:16>`               |
//! | Snapshot          | by id; a dashboard's, newest first     | table | `W#<ws>#SNAPSHOT#<dashboard>` | `<ulid>`        |
//! | Deal              | by id; list or window by creation      | table | `W#<ws>#DEAL`         | `<id:16>`               |
//! | Deal index        | by stage, status, operator, pipeline, contact, tag, product (with a digest) | table | `W#<ws>#DEAL#<KIND>#<value>` | `<id:16>` |
//! | Import job        | by id                                  | table | `W#<ws>#IMPORT`       | `<ulid>`                |
//! | Import chunk      | the contacts of a job, in order        | table | `W#<ws>#IMPORT#<job>` | `CHUNK#<n:4>`           |
//! | Welcome message   | by id (the outbox)                     | table | `W#<ws>#WELCOME`      | `<ulid>`                |
//! | Welcome sent      | the same message within the window     | table | `W#<ws>#WELCOMESENT`  | `<e164>#<content sha256>` |
//! | Checkout link     | by code                                | table | `W#<ws>#CHECKOUT`     | `<code>`                |
//! | Checkout code     | the workspace of a code (callback)     | table | `CHECKOUT#<code>`     | `CHECKOUT`              |
//! | Order             | by id; list newest first               | table | `W#<ws>#ORDER`        | `<id:16>`               |
//! | Churn reason      | the suggestion list (every workspace)  | table | `CHURNREASON`         | `<folded reason>`       |
//! | Redirect session  | by key, read once                      | table | `W#<ws>#REDIRECT`     | `<key>`                 |
//! | Session           | by id (`PUT`/`GET /v3/reports/sessions/{id}`) | table | `W#<ws>#SESSION` | `<id>`            |
//! | Session index     | by creation (all) or finish, and by operator, group, bot, channel, tag, campaign, conversation, phone (with a digest) | table | `W#<ws>#SESSIONS#<KIND>#<value>` | `<time>#<id>` |
//! | Campaign          | by id; list newest first               | table | `W#<ws>#CAMPAIGN`     | `<id:16>`               |
//! | Campaign index    | by status, channel, name word (with a digest) | table | `W#<ws>#CAMPAIGNS#<KIND>#<value>` | `<id:16>` or `<word>#<id:16>` |
//! | Campaign report   | a results report counted once (sentinel) | table | `W#<ws>#CAMPAIGNREPORT#<id>` | `<report id>` |
//! | Rollup            | a metric per day (and dimension), moved with the writes | table | `W#<ws>#ROLLUP#<series>` | `<day>` or `<day>#<dimension>` |
//! | Local job         | jobs the in-process queue has not run  | table | `LOCALQUEUE`          | `<ulid>`                |
//! | Local dead job    | jobs that failed every run (local)     | table | `LOCALQUEUE#DEAD`     | `<ulid>`                |
//!
//! Contact ids are time-ordered, so creation order is id order and a creation
//! window is an id range (`ids::id_range`): no creation-time index is needed.
//! The index items of a contact (phone, e-mail, words, new) are written in the
//! contact's own transaction, so they are never out of step with it.
//!
//! The token secret, the admin audit list, a checkout code and the churn-reason
//! suggestions are the only keys that do not start with a workspace: a bearer
//! token arrives before its workspace is known, a payment provider's callback
//! names only the code, and the operator's audit view and the suggestion list
//! span workspaces by design.

use crate::ids::WorkspaceId;
use crate::ids::{ContactId, padded};
use crate::store::{Index, Key};

/// The one secondary index: overloaded keys, projection ALL.
pub const GSI1: Index = Index {
    name: Some("gsi1"),
    pk: "gsi1pk",
    sk: "gsi1sk",
};

/// Every secondary index of the table (the embedded store maintains the same ones).
pub const GSIS: &[Index] = &[GSI1];

/// Shards of the admin audit counter, which every mutation of the service
/// moves: each shard is its own partition and takes 1/16 of those writes.
pub const AUDIT_COUNTER_SHARDS: u32 = 16;

/// A `totalCount` kept over several items (shards), so that no one item takes
/// every create and delete of a busy list: a write moves one shard chosen at
/// random, a read sums them all in one BatchGetItem. Shard 0 is the item a
/// single counter always was, so a list counted before sharding needs no
/// migration; each other shard has a partition of its own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Counter {
    written: Vec<Key>,
    /// Shards of an earlier layout: read (their counts still stand), never moved.
    read_only: Vec<Key>,
}

impl Counter {
    /// Every item to read and sum.
    pub fn keys(&self) -> Vec<Key> {
        self.written
            .iter()
            .chain(&self.read_only)
            .cloned()
            .collect()
    }

    /// The shard a write moves: one at random.
    pub fn any_shard(&self) -> Key {
        let shard = rand::random::<u32>() as usize % self.written.len();
        self.written[shard].clone()
    }
}

/// Shards of a list's counter. Lists that one tenant may write hundreds of
/// times a second (an import, a sync) get 4, and so does the audit list, which
/// every mutation of its workspace moves; lists written by people (tags,
/// campaigns, tokens...) keep one item, and one read. Each shard read costs
/// half a read unit: docs/design.md#scale has the arithmetic.
pub fn counter_shards(list: &str) -> u32 {
    match list {
        "AUDIT" | "CONTACT" | "NEWCONTACT" | "DEAL" => 4,
        _ => 1,
    }
}

fn ws(workspace_id: WorkspaceId) -> String {
    format!("W#{workspace_id}")
}

pub fn workspace(workspace_id: WorkspaceId) -> Key {
    Key::new(ws(workspace_id), "WORKSPACE")
}

/// The counter behind a list's `totalCount`.
pub fn counter(workspace_id: WorkspaceId, list: &str) -> Counter {
    let sk = format!("COUNT#{list}");
    let written = (0..counter_shards(list))
        .map(|shard| match shard {
            0 => Key::new(ws(workspace_id), sk.clone()),
            n => Key::new(format!("{}#COUNT#{n}", ws(workspace_id)), sk.clone()),
        })
        .collect();
    Counter {
        written,
        read_only: Vec::new(),
    }
}

/// The partition that holds one kind of record of a workspace.
pub fn collection(workspace_id: WorkspaceId, kind: &str) -> String {
    format!("{}#{kind}", ws(workspace_id))
}

pub fn tag(workspace_id: WorkspaceId, tag_id: u64) -> Key {
    Key::new(collection(workspace_id, "TAG"), padded(tag_id))
}

pub fn tags(workspace_id: WorkspaceId) -> String {
    collection(workspace_id, "TAG")
}

pub fn tag_name(workspace_id: WorkspaceId, normalized_name: &str) -> Key {
    Key::new(
        collection(workspace_id, "UNIQUE"),
        format!("TAGNAME#{normalized_name}"),
    )
}

pub fn token(workspace_id: WorkspaceId, token_id: &str) -> Key {
    Key::new(collection(workspace_id, "TOKEN"), token_id)
}

pub fn tokens(workspace_id: WorkspaceId) -> String {
    collection(workspace_id, "TOKEN")
}

pub fn token_secret(sha256_hex: &str) -> Key {
    Key::new(format!("SECRET#{sha256_hex}"), "SECRET")
}

pub fn audit_entry(workspace_id: WorkspaceId, entry_id: &str) -> Key {
    Key::new(collection(workspace_id, "AUDIT"), entry_id)
}

pub fn audit_entries(workspace_id: WorkspaceId) -> String {
    collection(workspace_id, "AUDIT")
}

/// The admin view's first gsi1 partition (every audit entry written before
/// [`audit_index_shard`]), and the table partition of the admin counter.
pub const ALL_AUDIT: &str = "AUDIT";

/// Shards of the admin view's index: an entry's shard comes from its id, so
/// each of the 16 partitions takes 1/16 of the service's mutations.
pub const AUDIT_INDEX_SHARDS: u32 = 16;

/// The gsi1 partition of an audit entry in the admin view.
pub fn audit_index_shard(entry_id: &str) -> String {
    // The last characters of a ULID are random.
    let shard = entry_id.bytes().rev().take(4).map(u32::from).sum::<u32>() % AUDIT_INDEX_SHARDS;
    format!("{ALL_AUDIT}#{shard}")
}

/// Every gsi1 partition of the admin view, the one from before sharding included.
pub fn audit_index_partitions() -> Vec<String> {
    (0..AUDIT_INDEX_SHARDS)
        .map(|shard| format!("{ALL_AUDIT}#{shard}"))
        .chain([ALL_AUDIT.to_owned()])
        .collect()
}

/// The counter of every workspace's audit entries (the admin list).
pub fn audit_counter() -> Counter {
    let written = (0..AUDIT_COUNTER_SHARDS)
        .map(|shard| match shard {
            0 => Key::new(ALL_AUDIT, "COUNT#0"),
            n => Key::new(format!("{ALL_AUDIT}#COUNT#{n}"), "COUNT#0"),
        })
        .collect();
    // Shards 1..7 of the first layout shared the `AUDIT` partition.
    let read_only = (1..8)
        .map(|n| Key::new(ALL_AUDIT, format!("COUNT#{n}")))
        .collect();
    Counter { written, read_only }
}

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

pub fn contact_words(workspace_id: WorkspaceId) -> String {
    collection(workspace_id, "NAMEWORD")
}

pub fn contact_word(workspace_id: WorkspaceId, word: &str, contact_id: u64) -> Key {
    Key::new(
        contact_words(workspace_id),
        format!("{word}#{}", padded(contact_id)),
    )
}

pub fn organization(workspace_id: WorkspaceId, organization_id: u64) -> Key {
    Key::new(collection(workspace_id, "ORG"), padded(organization_id))
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

pub fn conversation(workspace_id: WorkspaceId, conversation_id: u64) -> Key {
    Key::new(
        collection(workspace_id, "CONVERSATION"),
        padded(conversation_id),
    )
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

pub fn product(workspace_id: WorkspaceId, product_id: u64) -> Key {
    Key::new(products(workspace_id), padded(product_id))
}

pub fn products(workspace_id: WorkspaceId) -> String {
    collection(workspace_id, "PRODUCT")
}

pub fn deal(workspace_id: WorkspaceId, deal_id: u64) -> Key {
    Key::new(deals(workspace_id), padded(deal_id))
}

pub fn deals(workspace_id: WorkspaceId) -> String {
    collection(workspace_id, "DEAL")
}

/// The deals of one stage, status, operator, pipeline, contact, tag or product.
pub fn deals_by(workspace_id: WorkspaceId, kind: &str, value: &str) -> String {
    collection(workspace_id, &format!("DEAL#{kind}#{value}"))
}

pub fn custom_field(workspace_id: WorkspaceId, id: u64) -> Key {
    Key::new(custom_fields(workspace_id), padded(id))
}

pub fn custom_fields(workspace_id: WorkspaceId) -> String {
    collection(workspace_id, "CUSTOMFIELD")
}

pub fn business_hour(workspace_id: WorkspaceId, id: u64) -> Key {
    Key::new(business_hours(workspace_id), padded(id))
}

pub fn business_hours(workspace_id: WorkspaceId) -> String {
    collection(workspace_id, "BUSINESSHOUR")
}

pub fn dashboard(workspace_id: WorkspaceId, id: u64) -> Key {
    Key::new(collection(workspace_id, "DASHBOARD"), padded(id))
}

pub fn snapshots(workspace_id: WorkspaceId, dashboard_id: u64) -> String {
    collection(workspace_id, &format!("SNAPSHOT#{dashboard_id}"))
}

pub fn snapshot(workspace_id: WorkspaceId, dashboard_id: u64, snapshot_id: &str) -> Key {
    Key::new(snapshots(workspace_id, dashboard_id), snapshot_id)
}

/// The counter of one dashboard's snapshots.
pub fn snapshot_counter(workspace_id: WorkspaceId, dashboard_id: u64) -> Counter {
    counter(workspace_id, &format!("SNAPSHOT#{dashboard_id}"))
}

pub fn import_job(workspace_id: WorkspaceId, job_id: &str) -> Key {
    Key::new(collection(workspace_id, "IMPORT"), job_id)
}

pub fn import_chunks(workspace_id: WorkspaceId, job_id: &str) -> String {
    collection(workspace_id, &format!("IMPORT#{job_id}"))
}

pub fn import_chunk(workspace_id: WorkspaceId, job_id: &str, n: usize) -> Key {
    Key::new(import_chunks(workspace_id, job_id), format!("CHUNK#{n:04}"))
}

pub fn welcome_message(ws: WorkspaceId, id: &str) -> Key {
    Key::new(collection(ws, "WELCOME"), id)
}

/// The sentinel of one message (recipient and content) sent recently.
pub fn welcome_sent(ws: WorkspaceId, e164: &str, content_sha256: &str) -> Key {
    Key::new(
        collection(ws, "WELCOMESENT"),
        format!("{e164}#{content_sha256}"),
    )
}

pub fn checkout_link(ws: WorkspaceId, code: &str) -> Key {
    Key::new(collection(ws, "CHECKOUT"), code)
}

/// The workspace of a checkout code, for the payment provider's callback.
pub fn checkout_code(code: &str) -> Key {
    Key::new(format!("CHECKOUT#{code}"), "CHECKOUT")
}

pub fn order(ws: WorkspaceId, id: u64) -> Key {
    Key::new(orders(ws), padded(id))
}

pub fn orders(ws: WorkspaceId) -> String {
    collection(ws, "ORDER")
}

/// The partition of the churn-reason suggestions (one list for every workspace).
pub const CHURN_REASONS: &str = "CHURNREASON";

pub fn churn_reason(folded: &str) -> Key {
    Key::new(CHURN_REASONS, folded)
}

/// The record of one `Idempotency-Key` (its SHA-256) of a workspace.
pub fn idempotency(ws: WorkspaceId, key_sha256: &str) -> Key {
    Key::new(collection(ws, "IDEMPOTENCY"), key_sha256)
}

pub fn redirect_session(ws: WorkspaceId, key: &str) -> Key {
    Key::new(collection(ws, "REDIRECT"), key)
}

pub fn session(ws: WorkspaceId, id: &str) -> Key {
    Key::new(collection(ws, "SESSION"), id)
}

/// The sessions of one kind and value (`CREATED#ALL`, `OPERATOR#ana`, ...).
pub fn sessions_by(ws: WorkspaceId, kind: &str, value: &str) -> String {
    collection(ws, &format!("SESSIONS#{kind}#{value}"))
}

pub fn campaign(ws: WorkspaceId, id: u64) -> Key {
    Key::new(campaigns(ws), padded(id))
}

pub fn campaigns(ws: WorkspaceId) -> String {
    collection(ws, "CAMPAIGN")
}

/// The campaigns of one status, channel or name word.
pub fn campaigns_by(ws: WorkspaceId, kind: &str, value: &str) -> String {
    collection(ws, &format!("CAMPAIGNS#{kind}#{value}"))
}

/// A results report already counted (the messaging side's report id).
pub fn campaign_report(ws: WorkspaceId, campaign_id: u64, report_id: &str) -> Key {
    Key::new(
        collection(ws, &format!("CAMPAIGNREPORT#{campaign_id}")),
        report_id,
    )
}

/// A metric's daily counts (`contacts.created`, `deals.wonValueByPipeline`, ...).
pub fn rollups(ws: WorkspaceId, series: &str) -> String {
    collection(ws, &format!("ROLLUP#{series}"))
}

/// The partition of the in-process job queue (`crm serve`): a job message
/// stays here until it ran, so a job accepted before a crash runs after the
/// restart. SQS keeps them on AWS; nothing writes here there.
pub const LOCAL_JOBS: &str = "LOCALQUEUE";
/// Local job messages that failed every run, kept for a person to look at.
pub const LOCAL_DEAD_JOBS: &str = "LOCALQUEUE#DEAD";

pub fn local_job(id: &str) -> Key {
    Key::new(LOCAL_JOBS, id)
}

/// The contact id at the end of an index item's sort key (`...#<id:16>` or `<id:16>`).
pub fn trailing_id(sk: &str) -> Option<u64> {
    sk.rsplit('#').next()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tenant_keys_start_with_the_workspace() {
        let shards = counter(WorkspaceId(7), "CONTACT").keys();
        assert_eq!(shards.len(), 4);
        for key in shards.into_iter().chain([
            workspace(WorkspaceId(7)),
            tag(WorkspaceId(7), 42),
            tag_name(WorkspaceId(7), "vip"),
            token(WorkspaceId(7), "01J"),
            audit_entry(WorkspaceId(7), "01J"),
        ]) {
            assert!(key.pk == "W#7" || key.pk.starts_with("W#7#"), "{key:?}");
        }
        // W#7 must not be a prefix of W#70's partitions in a way a query could confuse:
        // queries are on whole partition keys, and the separator ends the number.
        assert_ne!(tags(WorkspaceId(7)), tags(WorkspaceId(70)));
        assert!(!tags(WorkspaceId(70)).starts_with(&format!("{}#", ws(WorkspaceId(7)))));
    }

    #[test]
    fn tag_keys_sort_in_id_order() {
        assert!(tag(WorkspaceId(1), 9).sk < tag(WorkspaceId(1), 10).sk);
        assert_eq!(tag(WorkspaceId(1), 42).sk, "0000000000000042");
    }
}
