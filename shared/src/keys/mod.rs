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
//! | Event             | the feed, in the order events happened (after a cursor) | table | `W#<ws>#EVENT` | `<ulid>`           |
//! | Event             | one record's history, oldest first     | gsi1  | `W#<ws>#HISTORY#<resource>#<id>` | `<ulid>`     |
//! | Webhook           | by id; list in creation order          | table | `W#<ws>#WEBHOOK`      | `wh_<ulid>`             |
//! | Webhook           | every endpoint (the local dispatcher)  | gsi1  | `WEBHOOKS`            | `<ws>#wh_<ulid>`        |
//! | Webhook health    | failing since; delivery slots (leases) | table | `W#<ws>#WEBHOOK#<id>` | `HEALTH`, `SLOT#<n:2>`  |
//! | Delivery          | by id; an endpoint's, newest first     | table | `W#<ws>#DELIVERY#<webhook>` | `<ulid>`          |
//! | Dispatch cursor   | the events the local dispatcher has read | table | `W#<ws>`            | `DISPATCHED`            |
//! | Contact           | by id; list or time window by creation | table | `W#<ws>#CONTACT`      | `<id:16>`               |
//! | Contact           | list by name                           | gsi1  | `W#<ws>#CONTACTNAME`  | `<folded name>#<id:16>` |
//! | New contact       | `newContact=true`, by creation         | table | `W#<ws>#NEWCONTACT`   | `<id:16>`               |
//! | Contact phone     | phone identity (unique per workspace)  | table | `W#<ws>#PHONE`        | `<E.164>`               |
//! | Contact e-mail    | exact e-mail, without case             | table | `W#<ws>#EMAIL`        | `<email>#<id:16>`       |
//! | E-mail held       | the first contact to hold an e-mail (a later one marks it shared) | table | `W#<ws>#EMAILHELD` | `<email>` |
//! | Shared e-mail     | duplicates: e-mails of two contacts or more | table | `W#<ws>#DUPLICATE` | `email#<email>` |
//! | Contact external id | upsert by `externalId`, exact        | table | `W#<ws>#EXTERNALID`   | `<externalId>#<id:16>`  |
//! | Contact name word | search by a word's first letters       | table | `W#<ws>#NAMEWORD`     | `<word>#<id:16>`        |
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
//! | Product           | by id; list in id order                | table | `W#<ws>#PRODUCT`      | `<id:16>`               |
//! | Custom field      | by id; list in id order                | table | `W#<ws>#CUSTOMFIELD`  | `<id:16>`               |
//! | Business hour     | by id; list in id order                | table | `W#<ws>#BUSINESSHOUR` | `<id:16>`               |
//! | Dashboard         | by id                                  | table | `W#<ws>#DASHBOARD`    | `<id:16>`               |
//! | Snapshot          | by id; a dashboard's, newest first     | table | `W#<ws>#SNAPSHOT#<dashboard>` | `<ulid>`        |
//! | Deal              | by id; list or window by creation      | table | `W#<ws>#DEAL`         | `<id:16>`               |
//! | Deal index        | by stage, status, operator, pipeline, contact, tag, product (with a digest) | table | `W#<ws>#DEAL#<KIND>#<value>` | `<id:16>` |
//! | Import job        | by id                                  | table | `W#<ws>#IMPORT`       | `<ulid>`                |
//! | Import chunk      | the contacts of a job, until it is done | table | `W#<ws>#IMPORT#<job>` | `CHUNK#<n:4>`           |
//! | Bulk import       | by id                                  | table | `W#<ws>#BULKIMPORT`   | `<ulid>`                |
//! | Bulk import row   | a row's mark: its change landed (TTL)  | table | `W#<ws>#BULKIMPORT#<job>#ROW` | `ROW#<row:10>`  |
//! | Bulk import errors | a window's failed rows, by its first row (TTL) | table | `W#<ws>#BULKIMPORT#<job>#ERR` | `ROW#<row:10>` |
//! | Bulk export       | by id                                  | table | `W#<ws>#BULKEXPORT`   | `<ulid>`                |
//! | Welcome message   | by id (the outbox)                     | table | `W#<ws>#WELCOME`      | `<ulid>`                |
//! | Welcome message   | by recipient (an erasure finds them)   | gsi1  | `W#<ws>#WELCOMETO#<e164>` | `<ulid>`            |
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
//! | Warm-up           | never written: a cold start's first read ([`warm_up`]) | table | `WARMUP` | `WARMUP`      |
//!
//! Contact ids are time-ordered, so creation order is id order and a creation
//! window is an id range (`ids::id_range`): no creation-time index is needed.
//! The index items of a contact (phone, e-mail, words, new) are written in the
//! contact's own transaction, so they are never out of step with it.
//!
//! The token secret, the admin audit list, a checkout code and the churn-reason
//! suggestions are the only keys that do not start with a workspace (and the
//! gsi1 list of every webhook endpoint): a bearer
//! token arrives before its workspace is known, a payment provider's callback
//! names only the code, and the operator's audit view and the suggestion list
//! span workspaces by design.

mod contacts;
mod counters;
mod identity;
mod limits;
mod records;
mod webhooks;

pub use contacts::*;
pub use counters::*;
pub use identity::*;
pub use limits::*;
pub use records::*;
pub use webhooks::*;

use crate::ids::WorkspaceId;
use crate::store::{Index, Key};

/// The one secondary index: overloaded keys, projection ALL.
pub const GSI1: Index = Index {
    name: Some("gsi1"),
    pk: "gsi1pk",
    sk: "gsi1sk",
};

/// Every secondary index of the table (the embedded store maintains the same ones).
pub const GSIS: &[Index] = &[GSI1];

/// Never written: a function's cold start reads it to open its connection
/// (`lambda::app`), so the first request does not pay for that.
pub fn warm_up() -> Key {
    Key::new("WARMUP", "WARMUP")
}

fn ws(workspace_id: WorkspaceId) -> String {
    format!("W#{workspace_id}")
}

pub fn workspace(workspace_id: WorkspaceId) -> Key {
    Key::new(ws(workspace_id), "WORKSPACE")
}

/// The workspace a tenant item belongs to, read from its partition key
/// (`W#<ws>` or `W#<ws>#...`); `None` for the few keys that name no
/// workspace (a token secret, the churn-reason list...).
pub fn workspace_of(key: &Key) -> Option<WorkspaceId> {
    let rest = key.pk.strip_prefix("W#")?;
    let digits = rest.split('#').next()?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok().map(WorkspaceId)
}

/// The partition that holds one kind of record of a workspace.
pub fn collection(workspace_id: WorkspaceId, kind: &str) -> String {
    // Built in place: every read by id builds one (`format!` twice was 3% of it).
    let mut key = ws(workspace_id);
    key.reserve(kind.len() + 1);
    key.push('#');
    key.push_str(kind);
    key
}

/// The contact id at the end of an index item's sort key (`...#<id:16>` or `<id:16>`).
pub fn trailing_id(sk: &str) -> Option<u64> {
    sk.rsplit('#').next()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::TagId;

    #[test]
    fn tenant_keys_start_with_the_workspace() {
        let shards = counter(WorkspaceId(7), "CONTACT").keys();
        assert_eq!(shards.len(), 4);
        for key in shards.into_iter().chain([
            workspace(WorkspaceId(7)),
            tag(WorkspaceId(7), TagId(42)),
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
    fn a_tenant_key_names_its_workspace() {
        assert_eq!(
            workspace_of(&workspace(WorkspaceId(7))),
            Some(WorkspaceId(7))
        );
        assert_eq!(
            workspace_of(&tag(WorkspaceId(70), TagId(1))),
            Some(WorkspaceId(70))
        );
        assert_eq!(
            workspace_of(&token(WorkspaceId(12), "01J")),
            Some(WorkspaceId(12))
        );
        assert_eq!(workspace_of(&token_secret("abc")), None);
        assert_eq!(workspace_of(&Key::new("CHURNREASON", "x")), None);
        assert_eq!(workspace_of(&Key::new("W#", "x")), None);
        assert_eq!(workspace_of(&Key::new("W#x1#TAG", "x")), None);
    }

    #[test]
    fn tag_keys_sort_in_id_order() {
        assert!(tag(WorkspaceId(1), TagId(9)).sk < tag(WorkspaceId(1), TagId(10)).sk);
        assert_eq!(tag(WorkspaceId(1), TagId(42)).sk, "0000000000000042");
    }
}
