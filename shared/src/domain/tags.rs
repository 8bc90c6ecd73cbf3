//! Tags: one stored record, served as the `/v3` Tag and the `/v1` public tag.
//!
//! The name is unique per workspace, compared without case, accents and
//! surrounding or repeated spaces ("VIP" and " vip " are the same tag, and so
//! are "Promoção" and "promocao"). A sentinel item keyed by the normalized name
//! is claimed in the same transaction as the tag, so of two concurrent creates
//! of one name exactly one succeeds and the other gets 409.

use crate::keys::TagId;
use crate::patch::Patch;
use serde::{Deserialize, Serialize};
use validator::Validate;

use crate::auth::Caller;
use crate::error::{ApiError, ApiResult};
use crate::ids::WorkspaceId;
use crate::keys;
use crate::load::{LineType, Loadable, WithId};
use crate::page::{
    CursorPage, CursorPaging, ListPage, Paging, counted_merged_page, cursor_records, each_shard,
};
use crate::record::{self, CommitError, Mutation, Personal, Record, Stamps, with_fresh_id};
use crate::store::{Key, SkRange, Store};

/// The counter behind `totalCount`.
pub const LIST: &str = "TAG";
/// The color of a tag created without one.
pub const DEFAULT_COLOR: &str = "#9E9E9E";

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Tag {
    pub id: TagId,
    pub workspace_id: WorkspaceId,
    pub name: String,
    pub color: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text_color: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub author_id: Option<u64>,
    /// The legacy `_id` a client may keep on the record.
    #[serde(default, rename = "_id", skip_serializing_if = "Option::is_none")]
    pub legacy_id: Option<String>,
    #[serde(flatten)]
    pub stamps: Stamps,
    pub version: u64,
}

crate::versioned!(Tag);

impl Record for Tag {
    const EVENTS: Option<&'static str> = Some("tag");

    fn event_object(&self) -> serde_json::Value {
        crate::record::as_event_object(TagV3::from(self.clone()))
    }
    const TYPE: &'static str = "Tag";
    const PERSONAL: Personal = Personal::none(&["_id", "color", "name", "textColor"]);
    fn key(&self) -> Key {
        keys::tag(self.workspace_id, self.id)
    }
}

/// The name as uniqueness sees it: trimmed, inner spaces collapsed,
/// lowercase, without accents ([`crate::text::fold`]).
pub fn normalize_name(name: &str) -> String {
    crate::text::fold(name)
}

/// The sentinel of `name` as tags named before accents were folded hold it
/// (trimmed, inner spaces collapsed, lowercase), when it is another than
/// today's: such a tag holds that one alone, so a new name checks that it is
/// free too, and a rename or a deletion frees it.
fn earlier_key(ws: WorkspaceId, name: &str) -> Option<Key> {
    let earlier = name
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .to_lowercase();
    (earlier != normalize_name(name)).then(|| keys::tag_name(ws, &earlier))
}

/// The tag that holds `name`: its sentinel's owner (today's, else the one a
/// tag named before accents were folded holds). One GetItem, two for a name
/// with accents that no tag holds.
async fn owner_of(store: &dyn Store, ws: WorkspaceId, name: &str) -> ApiResult<Option<TagId>> {
    let sentinels =
        std::iter::once(keys::tag_name(ws, &normalize_name(name))).chain(earlier_key(ws, name));
    for key in sentinels {
        let owner = store
            .get(&key, true)
            .await?
            .and_then(|sentinel| sentinel.get("owner")?.as_str()?.parse().ok().map(TagId));
        if owner.is_some() {
            return Ok(owner);
        }
    }
    Ok(None)
}

// ------------------------------------------------------------------ inputs

/// `POST /v3/tags`. Only `name` is required; `color` defaults to [`DEFAULT_COLOR`].
#[derive(Debug, Clone, Deserialize, Validate, schemars::JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct TagCreate {
    #[validate(length(min = 1, max = 128), custom(function = "not_blank"))]
    pub name: String,
    #[validate(length(min = 1, max = 128))]
    pub color: Option<String>,
    #[validate(length(max = 20))]
    pub text_color: Option<String>,
    pub author_id: Option<u64>,
    #[serde(rename = "_id")]
    #[validate(length(max = 128))]
    pub legacy_id: Option<String>,
}

/// `POST /v1/tags`: the public create record.
#[derive(Debug, Deserialize, Validate, schemars::JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct TagCreateV1 {
    #[validate(length(min = 1, max = 128), custom(function = "not_blank"))]
    pub name: String,
    #[validate(length(min = 1, max = 128))]
    pub color: Option<String>,
    #[validate(length(max = 20))]
    pub text_color: Option<String>,
}

impl From<TagCreateV1> for TagCreate {
    fn from(v1: TagCreateV1) -> Self {
        Self {
            name: v1.name,
            color: v1.color,
            text_color: v1.text_color,
            author_id: None,
            legacy_id: None,
        }
    }
}

/// `PATCH /v3/tags/{id}`: every field optional. `null` clears the optional ones.
#[derive(Debug, Default, Deserialize, Validate, schemars::JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct TagPatch {
    #[schemars(with = "String")]
    #[serde(default, deserialize_with = "crate::validate::present")]
    #[validate(length(min = 1, max = 128), custom(function = "not_blank"))]
    pub name: Option<String>,
    #[schemars(with = "String")]
    #[serde(default, deserialize_with = "crate::validate::present")]
    #[validate(length(min = 1, max = 128))]
    pub color: Option<String>,
    #[serde(default)]
    #[validate(length(max = 20))]
    pub text_color: Patch<String>,
    #[serde(default)]
    pub author_id: Patch<u64>,
    #[serde(default, rename = "_id")]
    #[validate(length(max = 128))]
    pub legacy_id: Patch<String>,
}

/// `PATCH /v1/tags/{id}`: the public update record.
#[derive(Debug, Deserialize, Validate, schemars::JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct TagPatchV1 {
    #[schemars(with = "String")]
    #[serde(default, deserialize_with = "crate::validate::present")]
    #[validate(length(min = 1, max = 128), custom(function = "not_blank"))]
    pub name: Option<String>,
    #[schemars(with = "String")]
    #[serde(default, deserialize_with = "crate::validate::present")]
    #[validate(length(min = 1, max = 128))]
    pub color: Option<String>,
    #[serde(default)]
    #[validate(length(max = 20))]
    pub text_color: Patch<String>,
}

/// A create body applied to a tag that exists (an upsert by name, a loaded
/// line): it sets what it gives and keeps what it leaves out.
impl From<TagCreate> for TagPatch {
    fn from(create: TagCreate) -> Self {
        Self {
            name: Some(create.name),
            color: create.color,
            text_color: Patch::set_or_keep(create.text_color),
            author_id: Patch::set_or_keep(create.author_id),
            legacy_id: Patch::set_or_keep(create.legacy_id),
        }
    }
}

impl From<TagPatchV1> for TagPatch {
    fn from(v1: TagPatchV1) -> Self {
        Self {
            name: v1.name,
            color: v1.color,
            text_color: v1.text_color,
            ..Self::default()
        }
    }
}

fn not_blank(value: &str) -> Result<(), validator::ValidationError> {
    crate::validate::not_blank(value)
}

// ------------------------------------------------------------------ views

/// The `/v3` Tag.
#[derive(Debug, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TagV3 {
    pub id: String,
    #[serde(rename = "_id", skip_serializing_if = "Option::is_none")]
    pub legacy_id: Option<String>,
    pub name: String,
    pub color: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text_color: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub author_id: Option<u64>,
    pub workspace_id: WorkspaceId,
    #[serde(flatten)]
    pub stamps: Stamps,
}

impl From<Tag> for TagV3 {
    fn from(t: Tag) -> Self {
        Self {
            id: t.id.to_string(),
            legacy_id: t.legacy_id,
            name: t.name,
            color: t.color,
            text_color: t.text_color,
            author_id: t.author_id,
            workspace_id: t.workspace_id,
            stamps: t.stamps,
        }
    }
}

/// The `/v1` public tag: what an integration needs, without internal fields.
#[derive(Debug, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TagV1 {
    pub id: String,
    pub name: String,
    pub color: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text_color: Option<String>,
    pub created_at: String,
    pub updated_at: String,
}

impl From<Tag> for TagV1 {
    fn from(t: Tag) -> Self {
        Self {
            id: t.id.to_string(),
            name: t.name,
            color: t.color,
            text_color: t.text_color,
            created_at: crate::ids::format_ts(&t.stamps.created_at),
            updated_at: crate::ids::format_ts(&t.stamps.last_update_at),
        }
    }
}

// ------------------------------------------------------------------ operations

fn name_taken(name: &str) -> ApiError {
    ApiError::conflict(format!(
        "a tag named \"{name}\" already exists in this workspace"
    ))
}

pub async fn create(store: &dyn Store, caller: &Caller, input: TagCreate) -> ApiResult<Tag> {
    with_fresh_id(|id| insert(store, caller, TagId(id), &input, Stamps::new())).await
}

/// The tag of this name (without case or accents) is updated with the
/// input, or the input is created; two at once make one tag (the loser of
/// the name's sentinel finds the winner's). `true`: created.
pub async fn upsert(
    store: &dyn Store,
    caller: &Caller,
    input: TagCreate,
) -> ApiResult<(Tag, bool)> {
    for attempt in 0..12 {
        record::pause_before(attempt).await;
        let owner = owner_of(store, caller.workspace_id, &input.name).await?;
        let attempt = match owner {
            Some(id) => {
                let patch = TagPatch::from(input.clone());
                update(store, caller, id, patch).await.map(|t| (t, false))
            }
            None => with_fresh_id(|id| insert(store, caller, TagId(id), &input, Stamps::new()))
                .await
                .map(|t| (t, true)),
        };
        match attempt {
            // The name taken, or the tag changed or deleted, in between: look again.
            Err(e)
                if e.status == http::StatusCode::CONFLICT
                    || e.status == http::StatusCode::NOT_FOUND =>
            {
                continue;
            }
            done => return done,
        }
    }
    Err(ApiError::conflict("the tag kept changing; retry"))
}

/// Creates the tag `id`, its name's claim and its count, in one transaction.
async fn insert(
    store: &dyn Store,
    caller: &Caller,
    id: TagId,
    input: &TagCreate,
    stamps: Stamps,
) -> Result<Tag, CommitError> {
    let tag = Tag {
        id,
        workspace_id: caller.workspace_id,
        name: input.name.trim().to_owned(),
        color: input
            .color
            .clone()
            .unwrap_or_else(|| DEFAULT_COLOR.to_owned()),
        text_color: input.text_color.clone(),
        author_id: input.author_id,
        legacy_id: input.legacy_id.clone(),
        stamps,
        version: 1,
    };
    let mut m = Mutation::new(caller);
    m.create(&tag)?
        .claim(
            keys::tag_name(caller.workspace_id, &normalize_name(&tag.name)),
            &tag.id.to_string(),
            name_taken(&tag.name),
        )
        .count_in(caller.workspace_id, LIST, 1);
    if let Some(earlier) = earlier_key(caller.workspace_id, &tag.name) {
        m.absent(earlier, name_taken(&tag.name));
    }
    m.commit(store, "tag.create", "tag", &tag.id.to_string())
        .await?;
    Ok(tag)
}

/// A `tag` line of `crm load`: `id` and the create body. Loaded again, the tag
/// takes the fields the line names (no write when it has them already).
#[async_trait::async_trait]
impl Loadable for WithId<TagCreate> {
    const TYPE: &'static str = "tag";

    async fn load(self, store: &dyn Store, caller: &Caller) -> ApiResult<()> {
        let key = keys::tag(caller.workspace_id, TagId(self.id));
        self.create_or_update(
            store,
            &key,
            |id, line, stamps| async move { insert(store, caller, TagId(id), &line, stamps).await },
            |id, line| update(store, caller, TagId(id), line.into()),
        )
        .await
    }
}

/// The `crm load` lines of tags: `tag`.
pub fn line_types() -> Vec<LineType> {
    vec![LineType::of::<WithId<TagCreate>>()]
}

/// One tag by id: one GetItem (eventually consistent, 0.5 RCU).
pub async fn get(store: &dyn Store, caller: &Caller, id: TagId) -> ApiResult<Tag> {
    find(store, caller, id, false).await
}

async fn find(store: &dyn Store, caller: &Caller, id: TagId, consistent: bool) -> ApiResult<Tag> {
    record::find(
        store,
        &keys::tag(caller.workspace_id, id),
        consistent,
        "tag",
    )
    .await
}

pub async fn update(
    store: &dyn Store,
    caller: &Caller,
    id: TagId,
    patch: TagPatch,
) -> ApiResult<Tag> {
    let current = find(store, caller, id, true).await?;
    let mut tag = current.clone();
    if let Some(name) = patch.name {
        tag.name = name.trim().to_owned();
    }
    if let Some(color) = patch.color {
        tag.color = color;
    }
    patch.text_color.apply(&mut tag.text_color);
    patch.author_id.apply(&mut tag.author_id);
    patch.legacy_id.apply(&mut tag.legacy_id);
    let mut m = Mutation::new(caller);
    if !m.update(&current, &mut tag)? {
        return Ok(current); // nothing changed: no write, no audit entry
    }
    let ws = caller.workspace_id;
    let (old_key, new_key) = (normalize_name(&current.name), normalize_name(&tag.name));
    if old_key != new_key {
        m.remove(keys::tag_name(ws, &old_key)).claim(
            keys::tag_name(ws, &new_key),
            &tag.id.to_string(),
            name_taken(&tag.name),
        );
        if let Some(earlier) = earlier_key(ws, &current.name) {
            m.remove(earlier);
        }
        if let Some(earlier) = earlier_key(ws, &tag.name) {
            m.absent(earlier, name_taken(&tag.name));
        }
    }
    m.commit(store, "tag.update", "tag", &id.to_string())
        .await?;
    Ok(tag)
}

pub async fn delete(store: &dyn Store, caller: &Caller, id: TagId) -> ApiResult<Tag> {
    let tag = find(store, caller, id, true).await?;
    let mut m = Mutation::new(caller);
    m.delete_record(&tag, "tag")
        .remove(keys::tag_name(
            caller.workspace_id,
            &normalize_name(&tag.name),
        ))
        .count_in(caller.workspace_id, LIST, -1);
    if let Some(earlier) = earlier_key(caller.workspace_id, &tag.name) {
        m.remove(earlier);
    }
    m.commit(store, "tag.delete", "tag", &id.to_string())
        .await?;
    Ok(tag)
}

/// A `/v3` page in creation order: one Query for the page (one a shard,
/// merged by id, once sharded), one GetItem for the count.
pub async fn list(store: &dyn Store, caller: &Caller, paging: Paging) -> ApiResult<ListPage<Tag>> {
    let shards = each_shard(keys::tags(caller.workspace_id), SkRange::All, true);
    counted_merged_page(
        store,
        shards,
        paging,
        keys::counter(caller.workspace_id, LIST),
    )
    .await
}

/// A `/v1` page in creation order after the cursor (a tag id).
pub async fn list_after(
    store: &dyn Store,
    caller: &Caller,
    paging: CursorPaging,
) -> ApiResult<CursorPage<Tag>> {
    // Every shard is sorted by id: each goes on after the same one.
    let range = match paging.numeric_cursor()? {
        Some(after) => SkRange::AtLeast(crate::ids::padded(after.saturating_add(1))),
        None => SkRange::All,
    };
    let shards = each_shard(keys::tags(caller.workspace_id), range, true);
    cursor_records(store, shards, paging.limit, |r: &Tag| r.id.to_string()).await
}

/// The stored items of item_shapes/tags.json read back (domain::item_shapes).
#[cfg(test)]
mod shapes {
    use crate::domain::item_shapes::{round_trip, texts_declared};

    #[test]
    fn tags_keep_their_shape() {
        round_trip::<crate::domain::tags::Tag>("Tag");
        texts_declared::<crate::domain::tags::Tag>();
    }
}
