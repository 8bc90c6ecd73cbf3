//! The steps of a merge: what is left to move, a record moved, and the last
//! step of each merged contact.

use serde_json::Value;

use super::super::LIST;
use super::super::NEW_LIST;
use super::super::record::Contact;
use super::super::write::{MERGED_INTO, read, stage_update};
use crate::auth::Caller;
use crate::domain::{deals, relations, sessions};
use crate::error::{ApiError, ApiResult};
use crate::ids::WorkspaceId;
use crate::keys;
use crate::keys::{ContactId, ConversationId, DealId};
use crate::page::read_up_to;
use crate::record::{self, Mutation};
use crate::store::{Index, Item, Query, SK, SkRange, Store};

/// Records read per index query of what is left to move.
const PAGE: usize = 25;

/// One record to move to the survivor.
pub(super) enum Step {
    Deal(DealId),
    Session(String),
    Conversation(u64),
}

impl Step {
    pub(super) async fn apply(
        &self,
        store: &dyn Store,
        caller: &Caller,
        survivor: &Contact,
    ) -> ApiResult<()> {
        match self {
            Step::Deal(id) => deals::move_to_contact(store, caller, *id, survivor).await,
            Step::Session(id) => sessions::move_to_contact(store, caller, id, survivor.id).await,
            Step::Conversation(id) => {
                relations::move_conversation(store, caller, ConversationId(*id), survivor.id).await
            }
        }
    }
}

/// What is left of a merged contact: itself (none when merged already) and
/// a page of the records still naming it; `complete` when the page is all.
/// Without `require_contact`, the records are listed even when the contact
/// is gone (what named it while it was absorbed).
pub(super) struct Left {
    pub contact: Option<Contact>,
    pub steps: Vec<Step>,
    pub complete: bool,
}

pub(super) async fn left_to_move(
    store: &dyn Store,
    ws: WorkspaceId,
    merged_id: u64,
    require_contact: bool,
) -> ApiResult<Left> {
    let contact = record::get::<Contact>(store, &keys::contact(ws, merged_id), true).await?;
    if require_contact && contact.is_none() {
        return Ok(Left {
            contact,
            steps: Vec::new(),
            complete: true,
        });
    }
    let page = |pk: String, index: Index| {
        let mut q = Query::new(index, pk, SkRange::All);
        q.keys_only = true;
        q.limit = Some(PAGE);
        q
    };
    let deals_left = page(keys::deals_of_contact(ws, merged_id), Index::TABLE);
    let conversations_left = page(keys::contact_conversations(ws, merged_id), keys::GSI1);
    let (deals_page, conversations_page) =
        tokio::try_join!(store.query(&deals_left), store.query(&conversations_left))?;
    let sk_of = |item: &Item| item.get(SK).and_then(Value::as_str).map(str::to_owned);
    let mut steps: Vec<Step> = deals_page
        .items
        .iter()
        .filter_map(|i| keys::trailing_id(&sk_of(i)?))
        .map(|id| Step::Deal(DealId(id)))
        .collect();
    let complete = deals_page.last_key.is_none() && conversations_page.last_key.is_none();
    // A conversation moves after all its sessions (which stay in its index,
    // moved or not), so that it is found again until they all moved.
    for conversation in conversations_page
        .items
        .iter()
        .filter_map(|i| keys::trailing_id(&sk_of(i)?))
    {
        let mut sessions = page(
            keys::sessions_by(ws, "CONVERSATION", &conversation.to_string()),
            Index::TABLE,
        );
        sessions.limit = None;
        steps.extend(
            read_up_to(store, sessions, usize::MAX)
                .await?
                .iter()
                .filter_map(sk_of)
                .filter_map(|sk| Some(Step::Session(sk.split_once('#')?.1.to_owned()))),
        );
        steps.push(Step::Conversation(conversation));
    }
    Ok(Left {
        contact,
        steps,
        complete,
    })
}

/// The last step of a merged contact, in one transaction: its empty-in-the-
/// survivor fields, custom fields, organizations and phone go to the
/// survivor; its record and index items go; its id answers the survivor.
pub(super) async fn absorb(
    store: &dyn Store,
    caller: &Caller,
    merged_id: u64,
    survivor_id: u64,
) -> ApiResult<()> {
    let ws = caller.workspace_id;
    let Some(merged) = record::get::<Contact>(store, &keys::contact(ws, merged_id), true).await?
    else {
        return Ok(());
    };
    let survivor = read(store, ws, survivor_id, true).await?;
    if survivor.erased.is_some() || survivor.id == merged.id {
        // `run` stops the job on its next look.
        return Err(ApiError::conflict(
            "the contact merged into changed; the merge stops",
        ));
    }
    let mut next = survivor.clone();
    fill(&mut next, &merged);
    let mut m = Mutation::new(caller);
    m.retire(
        &merged,
        "merged",
        (MERGED_INTO, survivor.id.to_string().into()),
    );
    for key in merged.index_item_keys() {
        m.remove(key);
    }
    // Its phones stay identities, of the survivor: find-or-create and
    // upsert by them answer the survivor.
    for phone in merged.fields.phone.iter().chain(&merged.alias_phones) {
        let mut sentinel = keys::contact_phone(ws, phone).item("Unique");
        sentinel.insert("owner".into(), survivor.id.to_string().into());
        m.put_item(sentinel);
    }
    for &org in &merged.organization_ids {
        m.remove(keys::organization_contact(ws, org, ContactId(merged.id)));
        let link = keys::organization_contact(ws, org, ContactId(survivor.id));
        m.put_item(relations::index_item(link, survivor.id));
    }
    if m.update(&survivor, &mut next)? {
        stage_update(&mut m, &survivor, &next, false);
    }
    m.count_in(ws, LIST, -1);
    if merged.fields.new_contact {
        m.count_in(ws, NEW_LIST, -1);
    }
    let mut pointer = keys::merged_contact(ws, merged.id).item("MergedContact");
    pointer.insert(MERGED_INTO.into(), survivor.id.into());
    m.put_item(pointer);
    m.remove(keys::contact_merging(ws, merged.id));
    m.commit(store, "contact.merge", "contact", &merged.id.to_string())
        .await?;
    Ok(())
}

/// The survivor keeps what it has; what it lacks comes from the merged one.
fn fill(survivor: &mut Contact, merged: &Contact) {
    let (s, m) = (&mut survivor.fields, &merged.fields);
    for (mine, theirs) in [
        (&mut s.name, &m.name),
        (&mut s.email, &m.email),
        (&mut s.phone, &m.phone),
        (&mut s.location, &m.location),
        (&mut s.avatar, &m.avatar),
        (&mut s.notes, &m.notes),
        (&mut s.external_id, &m.external_id),
        (&mut s.origin, &m.origin),
        (&mut s.social_a_id, &m.social_a_id),
        (&mut s.social_b_id, &m.social_b_id),
        (&mut s.social_c_id, &m.social_c_id),
    ] {
        if mine.is_none() {
            mine.clone_from(theirs);
        }
    }
    for (key, value) in &m.custom_fields {
        s.custom_fields
            .entry(key.clone())
            .or_insert_with(|| value.clone());
    }
    if s.crm_data.is_none() {
        s.crm_data.clone_from(&m.crm_data);
    }
    if s.customer_custom_field.is_none() {
        s.customer_custom_field.clone_from(&m.customer_custom_field);
    }
    s.has_conversation |= m.has_conversation;
    for org in &merged.organization_ids {
        if !survivor.organization_ids.contains(org) {
            survivor.organization_ids.push(*org);
        }
    }
    if survivor.main_organization_id.is_none() {
        survivor.main_organization_id = merged.main_organization_id;
    }
    // What an erasure of the person must find again.
    survivor.merged_ids.push(merged.id);
    survivor.merged_ids.extend(&merged.merged_ids);
    let phones = merged.fields.phone.iter().chain(&merged.alias_phones);
    for phone in phones {
        if survivor.fields.phone.as_ref() != Some(phone) && !survivor.alias_phones.contains(phone) {
            survivor.alias_phones.push(phone.clone());
        }
    }
}
