//! Every other resource: tags, products, deals, custom fields, business hours,
//! dashboards and snapshots, imports, welcome messages, billing, churn
//! reasons, redirects, sessions, campaigns, rollups and local jobs.
//!
//! | Entity            | Access pattern                         | Index | pk                    | sk                      |
//! |-------------------|----------------------------------------|-------|-----------------------|-------------------------|
//! | Tag               | by id; list in creation order (its shards merged) | table | `W#<ws>#TAG`, `W#<ws>#S<n>#TAG` ([`tag`]) | `<id:16>` |
//! | Tag name          | uniqueness per workspace (sentinel)    | table | `W#<ws>#UNIQUE`       | `TAGNAME#<normalized>`  |
//! | Product           | by id; list in id order (its shards merged) | table | `W#<ws>#PRODUCT`, `W#<ws>#S<n>#PRODUCT` ([`product`]) | `<id:16>` |
//! | Custom field      | by id; list in id order                | table | `W#<ws>#CUSTOMFIELD`  | `<id:16>`               |
//! | Business hour     | by id; list in id order                | table | `W#<ws>#BUSINESSHOUR` | `<id:16>`               |
//! | Dashboard         | by id                                  | table | `W#<ws>#DASHBOARD`    | `<id:16>`               |
//! | Snapshot          | by id; a dashboard's, newest first     | table | `W#<ws>#SNAPSHOT#<dashboard>` | `<ulid>`        |
//! | Deal              | by id; list or window by creation (its shards merged) | table | `W#<ws>#DEAL`, `W#<ws>#S<n>#DEAL` ([`deal`]) | `<id:16>` |
//! | Deal index        | by stage, status, operator, pipeline, contact, tag, product (with a digest); in the deal's shard, but a contact's | table | `W#<ws>#DEAL#<KIND>#<value>`, `W#<ws>#S<n>#DEAL#<KIND>#<value>` ([`deal_index`]) | `<id:16>` |
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
//! | Rollup shard      | the same, shard 1..7 once sharded (`keys::shards`), summed on read | table | `W#<ws>#S<n>#ROLLUP#<series>` | `<day>` or `<day>#<dimension>` |
//! | Local job         | jobs the in-process queue has not run  | table | `LOCALQUEUE`          | `<ulid>`                |
//! | Local dead job    | jobs that failed every run (local)     | table | `LOCALQUEUE#DEAD`     | `<ulid>`                |

use super::collection;
use super::shards::{by_id, id_shard, shard_partition, shard_partitions, sharded_from};
use crate::ids::{WorkspaceId, id_type, padded};
use crate::store::Key;

id_type!(
    /// A tag's id.
    #[schemars(inline)]
    TagId
);

/// Tags and products are importable, so their lists by id are kept over the
/// shards (`shards.rs`) as the contacts' are, each in the shard of its id.
pub fn tag(workspace_id: WorkspaceId, tag_id: TagId) -> Key {
    by_id(workspace_id, "TAG", tag_id.0)
}

/// Every shard of a workspace's tags, read together for a list.
pub fn tags(workspace_id: WorkspaceId) -> Vec<String> {
    shard_partitions(workspace_id, "TAG")
}

pub fn tag_name(workspace_id: WorkspaceId, normalized_name: &str) -> Key {
    Key::new(
        collection(workspace_id, "UNIQUE"),
        format!("TAGNAME#{normalized_name}"),
    )
}

id_type!(
    /// A catalog product's id.
    #[schemars(inline)]
    ProductId
);

pub fn product(workspace_id: WorkspaceId, product_id: ProductId) -> Key {
    by_id(workspace_id, "PRODUCT", product_id.0)
}

/// Every shard of a workspace's products, read together for a list.
pub fn products(workspace_id: WorkspaceId) -> Vec<String> {
    shard_partitions(workspace_id, "PRODUCT")
}

id_type!(
    /// A deal's id.
    #[schemars(inline)]
    DealId
);

/// Every deal create and edit writes its record and an index item in each
/// partition it is listed in, so the list and the indexes that all of a
/// workspace's deals may share (a stage, a status, a pipeline...) are kept
/// over the shards (`shards.rs`), each deal in the shard of its id. A
/// contact's index holds that contact's deals only: one partition.
const DEAL: &str = "DEAL";

pub fn deal(workspace_id: WorkspaceId, deal_id: DealId) -> Key {
    by_id(workspace_id, DEAL, deal_id.0)
}

/// Every shard of a workspace's deals, read together for a list.
pub fn deal_partitions(workspace_id: WorkspaceId) -> Vec<String> {
    shard_partitions(workspace_id, DEAL)
}

fn deal_shard(deal_id: DealId) -> u32 {
    id_shard(deal_id.0, sharded_from())
}

/// The partition of deal `deal_id`'s index item of one stage, status,
/// operator, pipeline, contact, tag or product.
pub fn deal_index(workspace_id: WorkspaceId, kind: &str, value: &str, deal_id: DealId) -> String {
    let shard = if kind == CONTACT_INDEX {
        0
    } else {
        deal_shard(deal_id)
    };
    shard_partition(workspace_id, &format!("{DEAL}#{kind}#{value}"), shard)
}

/// Every partition of the deals of one stage, status, operator, pipeline,
/// contact, tag or product: its shards (a contact's: its one partition).
pub fn deals_by(workspace_id: WorkspaceId, kind: &str, value: &str) -> Vec<String> {
    let family = format!("{DEAL}#{kind}#{value}");
    if kind == CONTACT_INDEX {
        vec![shard_partition(workspace_id, &family, 0)]
    } else {
        shard_partitions(workspace_id, &family)
    }
}

/// The index of one contact's deals (what a merge moves, an erasure finds).
pub fn deals_of_contact(workspace_id: WorkspaceId, contact_id: u64) -> String {
    shard_partition(
        workspace_id,
        &format!("{DEAL}#{CONTACT_INDEX}#{contact_id}"),
        0,
    )
}

const CONTACT_INDEX: &str = "CONTACT";

id_type!(
    /// A custom field's id.
    #[schemars(inline)]
    CustomFieldId
);

pub fn custom_field(workspace_id: WorkspaceId, id: CustomFieldId) -> Key {
    Key::new(custom_fields(workspace_id), padded(id.0))
}

pub fn custom_fields(workspace_id: WorkspaceId) -> String {
    collection(workspace_id, "CUSTOMFIELD")
}

id_type!(
    /// A business-hours record's id.
    #[schemars(inline)]
    BusinessHourId
);

pub fn business_hour(workspace_id: WorkspaceId, id: BusinessHourId) -> Key {
    Key::new(business_hours(workspace_id), padded(id.0))
}

pub fn business_hours(workspace_id: WorkspaceId) -> String {
    collection(workspace_id, "BUSINESSHOUR")
}

id_type!(
    /// A dashboard's id.
    #[schemars(inline)]
    DashboardId as "dashboardId"
);

pub fn dashboard(workspace_id: WorkspaceId, id: DashboardId) -> Key {
    Key::new(collection(workspace_id, "DASHBOARD"), padded(id.0))
}

pub fn snapshots(workspace_id: WorkspaceId, dashboard_id: DashboardId) -> String {
    collection(workspace_id, &format!("SNAPSHOT#{dashboard_id}"))
}

pub fn snapshot(workspace_id: WorkspaceId, dashboard_id: DashboardId, snapshot_id: &str) -> Key {
    Key::new(snapshots(workspace_id, dashboard_id), snapshot_id)
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

/// A bulk import job (`/v3/imports/{id}`); the partition lists them, newest last.
pub fn bulk_import(workspace_id: WorkspaceId, job_id: &str) -> Key {
    Key::new(collection(workspace_id, "BULKIMPORT"), job_id)
}

/// The failed rows of a bulk import, one item a window, by its first row.
pub fn bulk_import_errors(workspace_id: WorkspaceId, job_id: &str) -> String {
    collection(workspace_id, &format!("BULKIMPORT#{job_id}#ERR"))
}

pub fn bulk_import_error(workspace_id: WorkspaceId, job_id: &str, first_row: u64) -> Key {
    Key::new(
        bulk_import_errors(workspace_id, job_id),
        format!("ROW#{first_row:010}"),
    )
}

/// The mark of a row of a bulk import whose change landed (`record::marks`).
pub fn bulk_import_row(workspace_id: WorkspaceId, job_id: &str, row: u64) -> Key {
    Key::new(
        collection(workspace_id, &format!("BULKIMPORT#{job_id}#ROW")),
        format!("ROW#{row:010}"),
    )
}

/// A bulk export job (`/v3/exports/{id}`).
pub fn bulk_export(workspace_id: WorkspaceId, job_id: &str) -> Key {
    Key::new(collection(workspace_id, "BULKEXPORT"), job_id)
}

pub fn welcome_message(ws: WorkspaceId, id: &str) -> Key {
    Key::new(welcome_messages(ws), id)
}

pub fn welcome_messages(ws: WorkspaceId) -> String {
    collection(ws, "WELCOME")
}

/// gsi1 partition of the messages sent to one phone.
pub fn welcome_messages_to(ws: WorkspaceId, e164: &str) -> String {
    collection(ws, &format!("WELCOMETO#{e164}"))
}

pub fn welcome_sent_of(ws: WorkspaceId) -> String {
    collection(ws, "WELCOMESENT")
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

id_type!(
    /// A campaign's id.
    #[schemars(inline)]
    CampaignId
);

pub fn campaign(ws: WorkspaceId, id: CampaignId) -> Key {
    Key::new(campaigns(ws), padded(id.0))
}

pub fn campaigns(ws: WorkspaceId) -> String {
    collection(ws, "CAMPAIGN")
}

/// The campaigns of one status, channel or name word.
pub fn campaigns_by(ws: WorkspaceId, kind: &str, value: &str) -> String {
    collection(ws, &format!("CAMPAIGNS#{kind}#{value}"))
}

/// A results report already counted (the messaging side's report id).
pub fn campaign_report(ws: WorkspaceId, campaign_id: CampaignId, report_id: &str) -> Key {
    Key::new(
        collection(ws, &format!("CAMPAIGNREPORT#{campaign_id}")),
        report_id,
    )
}

/// A metric's daily counts (`contacts.created`, `deals.wonValueByPipeline`, ...).
pub fn rollups(ws: WorkspaceId, series: &str) -> String {
    collection(ws, &format!("ROLLUP#{series}"))
}

/// Shard `shard` of a metric's daily counts: [`rollups`] for 0.
pub fn rollup_shard(ws: WorkspaceId, series: &str, shard: u32) -> String {
    super::shard_partition(ws, &format!("ROLLUP#{series}"), shard)
}

/// Shards a rollup series is spread over: [`super::SHARDS`] once the
/// sharded layout is set, else 1. A sum needs no cutover: every read sums
/// every shard, and shard 0 holds what was counted before.
pub fn rollup_shards() -> u32 {
    super::shards_in_use()
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
