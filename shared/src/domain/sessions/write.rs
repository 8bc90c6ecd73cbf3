//! How sessions enter: `PUT /v3/reports/sessions/{id}` (the messaging side,
//! creating or replacing one session) and `session` lines of `crm load`. Both
//! go through [`put`]: one validation, one write path. A session whose
//! conversation names its contact also becomes that conversation's last
//! session when it is the newest, through the loader's own write path
//! (`relations::stage_last_session`), so the contact list's `segmentId` and
//! `sessionCreatedAtFrom/To` stay true to it.

use async_trait::async_trait;
use serde::Deserialize;
use validator::{Validate, ValidationErrors};

use super::metrics::measure;
use super::record::{Author, Session, SessionInput, TrailKind};
use crate::auth::Caller;
use crate::domain::relations::{LastSession, stage_last_session};
use crate::domain::rollups;
use crate::error::{ApiError, ApiResult};
use crate::ids;
use crate::keys;
use crate::keys::ConversationId;
use crate::load::{LineType, Loadable};
use crate::record::{self, CommitError, Mutation, Stamps, personal};
use crate::store::Store;

const WHAT: &str = "session";

/// A session id: 1 to 64 letters, digits, `-`, `_`, `.` or `:` (the messaging
/// side's own ids).
pub fn valid_id(id: &str) -> bool {
    (1..=64).contains(&id.len())
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b':'))
}

pub async fn get(store: &dyn Store, caller: &Caller, id: &str) -> ApiResult<Session> {
    if !valid_id(id) {
        return Err(ApiError::not_found(WHAT));
    }
    record::find(store, &keys::session(caller.workspace_id, id), false, WHAT).await
}

/// Creates or replaces session `id`; answers it and whether it is new. The
/// same body again changes nothing. Two writers of one session (a retry after
/// a timeout, two sessions of one new conversation) race on conditional
/// writes: the loser reads again and goes on.
pub async fn put(
    store: &dyn Store,
    caller: &Caller,
    id: &str,
    input: SessionInput,
) -> ApiResult<(Session, bool)> {
    if !valid_id(id) {
        return Err(ApiError::field(
            "id",
            "must be 1 to 64 letters, digits, - _ . or :",
        ));
    }
    for _ in 0..4 {
        match put_once(store, caller, id, input.clone()).await {
            Ok(done) => return Ok(done),
            Err(CommitError::IdTaken) => continue,
            Err(CommitError::Api(e)) if e.status == http::StatusCode::CONFLICT => continue,
            Err(CommitError::Api(e)) => return Err(e),
        }
    }
    Err(ApiError::conflict(
        "the session changed while this request ran; retry",
    ))
}

async fn put_once(
    store: &dyn Store,
    caller: &Caller,
    id: &str,
    mut input: SessionInput,
) -> Result<(Session, bool), CommitError> {
    let ws = caller.workspace_id;
    if let Some(phone) = &input.conversation.contact_phone {
        input.conversation.contact_phone = Some(
            crate::phone::canonical(phone)
                .map_err(|e| ApiError::field("conversation.contactPhone", e.to_string()))?,
        );
    }
    let created_at = input.created_at.0;
    let (times, metrics) = measure(created_at, &input.trails, input.tmp_reset_on_new_assignment)?;
    let count = |from: Author| {
        input
            .trails
            .iter()
            .filter(|t| t.kind == TrailKind::Message && t.from == Some(from))
            .count() as u32
    };
    let assigned_operator_messages = input
        .trails
        .iter()
        .filter(|t| {
            t.kind == TrailKind::Message
                && t.from == Some(Author::Operator)
                && t.operator_id.is_some()
                && t.operator_id == times.operator_id
        })
        .count() as u32;
    let (operators, bots, contacts) = (
        count(Author::Operator),
        count(Author::Bot),
        count(Author::Contact),
    );
    if let Some(contact_id) = input.conversation.contact_id {
        // A merged contact's id names its survivor.
        let contact = crate::domain::contacts::read(store, ws, contact_id, true).await?;
        input.conversation.contact_id = Some(contact.id);
    }
    let current: Option<Session> = record::get(store, &keys::session(ws, id), true).await?;
    let now = ids::now();
    let mut next = Session {
        id: id.to_owned(),
        legacy_id: input.legacy_id.clone(),
        workspace_id: ws,
        conversation: input.conversation.clone(),
        segment_id: input.segment_id.clone(),
        trails: input.trails.clone(),
        tags: input.tags.clone(),
        followers: input.followers.clone(),
        scheduled_messages: input.scheduled_messages.clone(),
        campaign_id: input.campaign_id.clone(),
        summary: input.summary.clone(),
        merged_from_customer_id: input.merged_from_customer_id.clone(),
        tmp_reset_on_new_assignment: input.tmp_reset_on_new_assignment,
        deals: input.deals.clone(),
        call: input.call.clone(),
        rating: input.rating,
        is_new_contact: input.is_new_contact,
        operator_messages_count: operators,
        assigned_operator_messages_count: assigned_operator_messages,
        bot_messages_count: bots,
        contact_messages_count: contacts,
        total_messages_count: operators + bots + contacts,
        times,
        metrics,
        stamps: Stamps {
            created_at,
            last_update_at: now.max(created_at),
            updated_at: Some(now.max(created_at)),
        },
        version: 1,
    };
    if let Some(stored) = &current {
        let mut same = next.clone();
        same.stamps = stored.stamps.clone();
        same.version = stored.version;
        if &same == stored && created_at == stored.stamps.created_at {
            return Ok((stored.clone(), false));
        }
        next.version = stored.version + 1;
        next.stamps.last_update_at =
            now.max(stored.stamps.last_update_at + chrono::Duration::milliseconds(1));
        next.stamps.updated_at = Some(next.stamps.last_update_at);
    }

    let mut m = Mutation::new(caller);
    match &current {
        None => m.create(&next)?,
        Some(stored) => m.replace(&next, stored.version)?,
    };
    stage_index(&mut m, current.as_ref(), &next)?;
    let before = current
        .as_ref()
        .map(rollups::of_session)
        .unwrap_or_default();
    rollups::stage(&mut m, ws, &before, &rollups::of_session(&next));
    if let Some(contact_id) = next.conversation.contact_id {
        let last = LastSession {
            id: next.id.clone(),
            created_at,
            segment_id: next.segment_id.clone(),
        };
        stage_last_session(
            store,
            &mut m,
            ws,
            ConversationId(next.conversation.id),
            contact_id,
            Some(last),
            true,
        )
        .await?;
    }
    m.commit(store, "session.put", WHAT, id).await?;
    Ok((next, current.is_none()))
}

/// Moves session `id` to contact `to` (a merge): its conversation's
/// `contactId`, nothing else (no index item holds it). A session of that
/// contact already is left.
pub(crate) async fn move_to_contact(
    store: &dyn Store,
    caller: &Caller,
    id: &str,
    to: u64,
) -> ApiResult<()> {
    let key = keys::session(caller.workspace_id, id);
    let Some(current) = record::get::<Session>(store, &key, true).await? else {
        return Ok(());
    };
    if current.conversation.contact_id == Some(to) {
        return Ok(());
    }
    let mut next = current.clone();
    next.conversation.contact_id = Some(to);
    let mut m = Mutation::new(caller);
    if m.update(&current, &mut next)? {
        m.commit(store, "session.merge", WHAT, id).await?;
    }
    Ok(())
}

/// Erases the person of session `id` (an erasure of them): its declared
/// personal data (the contact's phone, a call) and, in its summary, each
/// text that `theirs` says is the person's; the record and its index items,
/// whose digest and phone partition hold the phone. Its event carries no
/// earlier values.
pub(crate) async fn erase_person(
    store: &dyn Store,
    caller: &Caller,
    id: &str,
    theirs: &(dyn Fn(&str) -> bool + Sync),
) -> ApiResult<()> {
    let key = keys::session(caller.workspace_id, id);
    let Some(current) = record::get::<Session>(store, &key, true).await? else {
        return Ok(());
    };
    let mut next = personal::erased(&current, theirs)?;
    if next == current {
        return Ok(());
    }
    let mut m = Mutation::redacting(caller);
    m.update(&current, &mut next)?;
    stage_index(&mut m, Some(&current), &next)?;
    m.commit(store, "session.erase", WHAT, id).await?;
    Ok(())
}

/// The index items of a session written as `next` over `stored`: the ones
/// it left go; every one it has is written again (each carries the digest).
fn stage_index(m: &mut Mutation<'_>, stored: Option<&Session>, next: &Session) -> ApiResult<()> {
    let new_keys = next.index_keys()?;
    if let Some(stored) = stored {
        for old in stored
            .index_keys()?
            .into_iter()
            .filter(|k| !new_keys.contains(k))
        {
            m.remove(old);
        }
    }
    for item in next.index_items()? {
        m.put_item(item);
    }
    Ok(())
}

/// A `session` line of `crm load`: the PUT body with its `id`.
#[derive(Debug)]
pub struct SessionLine {
    pub id: String,
    pub input: SessionInput,
}

impl<'de> Deserialize<'de> for SessionLine {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        let mut map = serde_json::Map::deserialize(d)?;
        let id = match map.remove("id") {
            Some(serde_json::Value::String(id)) => id,
            _ => return Err(D::Error::custom("missing field `id` (a string)")),
        };
        let input =
            SessionInput::deserialize(serde_json::Value::Object(map)).map_err(D::Error::custom)?;
        Ok(SessionLine { id, input })
    }
}

impl Validate for SessionLine {
    fn validate(&self) -> Result<(), ValidationErrors> {
        self.input.validate()
    }
}

#[async_trait]
impl Loadable for SessionLine {
    const TYPE: &'static str = "session";

    async fn load(self, store: &dyn Store, caller: &Caller) -> ApiResult<()> {
        put(store, caller, &self.id, self.input).await.map(|_| ())
    }
}

/// The `crm load` lines of sessions: `session`.
pub fn line_types() -> Vec<LineType> {
    vec![LineType::of::<SessionLine>()]
}
