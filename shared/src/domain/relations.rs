//! Records this API reads but does not create: organizations (linked to
//! contacts), conversations (with their last session) and catalog products. An operator loads them
//! with `crm load` (JSON lines, through [`load`]); the contact list filters on them
//! (`organizationId`, `segmentId`, `sessionCreatedAtFrom/To`) and shows them
//! (`withOrganization`).
//!
//! Every filter reads an index partition written with the record, never the
//! workspace's contacts: the contacts of an organization, and conversations by
//! the time of their last session (all, and per segment).

use std::collections::HashMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use validator::Validate;

use crate::auth::Caller;
use crate::domain::contacts::Contact;
use crate::error::{ApiError, ApiResult};
use crate::ids::{self, Timestamp};
use crate::keys;
use crate::page::{MAX_WINDOW, read_up_to};
use crate::record::{self, Mutation, Record, Stamps, Versioned};
use crate::store::{Index, Item, Key, PK, Query, SK, SkRange, Store, TYPE};

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Organization {
    pub id: u64,
    pub workspace_id: u64,
    pub name: String,
    pub active: bool,
    #[serde(flatten)]
    pub stamps: Stamps,
    pub version: u64,
}

impl Record for Organization {
    const TYPE: &'static str = "Organization";
    fn key(&self) -> Key {
        keys::organization(self.workspace_id, self.id)
    }
}

/// An organization as a contact listing shows it (`withOrganization=true`).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OrganizationView {
    pub id: String,
    pub name: String,
    pub active: bool,
    pub workspace_id: u64,
    #[serde(flatten)]
    pub stamps: Stamps,
}

impl From<Organization> for OrganizationView {
    fn from(o: Organization) -> Self {
        Self {
            id: o.id.to_string(),
            name: o.name,
            active: o.active,
            workspace_id: o.workspace_id,
            stamps: o.stamps,
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Validate)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct LastSession {
    #[validate(length(min = 1, max = 128))]
    pub id: String,
    #[serde(with = "ids::ts_format")]
    pub created_at: Timestamp,
    /// The segment (inbox) the session is in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[validate(length(min = 1, max = 128))]
    pub segment_id: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Conversation {
    pub id: u64,
    pub workspace_id: u64,
    pub contact_id: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_session: Option<LastSession>,
    #[serde(flatten)]
    pub stamps: Stamps,
    pub version: u64,
}

impl Record for Conversation {
    const TYPE: &'static str = "Conversation";
    fn key(&self) -> Key {
        keys::conversation(self.workspace_id, self.id)
    }
}

impl Conversation {
    /// Its index items: by last-session time, overall and in its segment.
    fn index_keys(&self) -> Vec<Key> {
        let Some(session) = &self.last_session else {
            return Vec::new();
        };
        let ws = self.workspace_id;
        let sk = keys::last_session_sort(
            &ids::format_ts(&session.created_at),
            self.contact_id,
            self.id,
        );
        let mut keys = vec![Key::new(keys::last_sessions(ws), sk.clone())];
        if let Some(segment) = &session.segment_id {
            keys.push(Key::new(keys::segment_sessions(ws, segment), sk));
        }
        keys
    }
}

fn index_item(key: Key, contact_id: u64) -> Item {
    let mut item = Item::new();
    item.insert(PK.into(), key.pk.into());
    item.insert(SK.into(), key.sk.into());
    item.insert(TYPE.into(), "RelationIndex".into());
    item.insert("contactId".into(), contact_id.into());
    item
}

// ------------------------------------------------------------------ loading

/// One line of a `crm load` file.
#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum LoadLine {
    /// `{"type":"organization","id":10,"name":"Acme","active":true}`
    Organization(OrganizationLine),
    /// `{"type":"contactOrganization","contactId":1,"organizationId":10,"main":true}`
    ContactOrganization(LinkLine),
    /// `{"type":"conversation","id":5,"contactId":1,"lastSession":{"id":"s1","createdAt":"...","segmentId":"inbox"}}`
    Conversation(ConversationLine),
    /// `{"type":"product","id":3,"name":"Plan","price":99.9,"description":"..."}`
    Product(crate::domain::products::ProductLine),
    /// `{"type":"customField","id":4,"name":"Plan","key":"plan","entity":"contact","fieldType":"text"}`
    CustomField(Box<crate::domain::custom_fields::CustomFieldLine>),
    /// `{"type":"businessHour","id":1,"name":"Office","timezone":"America/Sao_Paulo","intervals":[{"day":1,"start":"09:00","end":"18:00"}]}`
    BusinessHour(Box<crate::domain::business_hours::BusinessHourLine>),
}

#[derive(Debug, Deserialize, Validate)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct OrganizationLine {
    #[validate(range(min = 1, max = 9007199254740991u64))]
    pub id: u64,
    #[validate(length(min = 1, max = 128))]
    pub name: String,
    #[serde(default = "yes")]
    pub active: bool,
}

fn yes() -> bool {
    true
}

#[derive(Debug, Deserialize, Validate)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct LinkLine {
    pub contact_id: u64,
    pub organization_id: u64,
    /// The contact's main organization (the first linked one otherwise).
    #[serde(default)]
    pub main: bool,
}

#[derive(Debug, Deserialize, Validate)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ConversationLine {
    #[validate(range(min = 1, max = 9007199254740991u64))]
    pub id: u64,
    pub contact_id: u64,
    #[validate(nested)]
    pub last_session: Option<LastSession>,
}

/// Parses and validates one line of a load file.
pub fn parse_line(text: &str) -> ApiResult<LoadLine> {
    let line: LoadLine = crate::http::parse_json(text.as_bytes())?;
    let checked = match &line {
        LoadLine::Organization(l) => l.validate(),
        LoadLine::ContactOrganization(l) => l.validate(),
        LoadLine::Conversation(l) => l.validate(),
        LoadLine::Product(l) => l.validate(),
        LoadLine::CustomField(l) => l.validate(),
        LoadLine::BusinessHour(l) => l.validate(),
    };
    checked.map_err(crate::http::validation_error)?;
    Ok(line)
}

/// Loads one record into the caller's workspace. Loading the same line again
/// changes nothing; a changed line replaces the record and its index items.
pub async fn load(store: &dyn Store, caller: &Caller, line: LoadLine) -> ApiResult<&'static str> {
    let ws = caller.workspace_id;
    match line {
        LoadLine::Organization(l) => {
            let current: Option<Organization> =
                record::get(store, &keys::organization(ws, l.id), true).await?;
            let mut org = current.clone().unwrap_or(Organization {
                id: l.id,
                workspace_id: ws,
                name: String::new(),
                active: true,
                stamps: Stamps::new(),
                version: 0,
            });
            org.name = l.name.trim().to_owned();
            org.active = l.active;
            if current.as_ref() == Some(&org) {
                return Ok("organization");
            }
            let mut m = Mutation::new(caller);
            save(&mut m, &mut org, current.as_ref())?;
            m.commit(
                store,
                "organization.load",
                "organization",
                &l.id.to_string(),
            )
            .await?;
            Ok("organization")
        }
        LoadLine::ContactOrganization(l) => {
            let mut contact: Contact =
                record::find(store, &keys::contact(ws, l.contact_id), true, "contact").await?;
            record::find::<Organization>(
                store,
                &keys::organization(ws, l.organization_id),
                true,
                "organization",
            )
            .await?;
            let before = contact.clone();
            if !contact.organization_ids.contains(&l.organization_id) {
                contact.organization_ids.push(l.organization_id);
            }
            if l.main || contact.main_organization_id.is_none() {
                contact.main_organization_id = Some(l.organization_id);
            }
            if contact == before {
                return Ok("contactOrganization");
            }
            contact.version += 1;
            let mut m = Mutation::new(caller);
            m.replace(&contact, before.version)?.put_item(index_item(
                keys::organization_contact(ws, l.organization_id, l.contact_id),
                l.contact_id,
            ));
            m.commit(
                store,
                "contactOrganization.load",
                "contact",
                &l.contact_id.to_string(),
            )
            .await?;
            Ok("contactOrganization")
        }
        LoadLine::Product(l) => {
            crate::domain::products::load(store, caller, l).await?;
            Ok("product")
        }
        LoadLine::CustomField(l) => {
            crate::domain::custom_fields::load(store, caller, *l).await?;
            Ok("customField")
        }
        LoadLine::BusinessHour(l) => {
            crate::domain::business_hours::load(store, caller, *l).await?;
            Ok("businessHour")
        }
        LoadLine::Conversation(l) => {
            record::find::<Contact>(store, &keys::contact(ws, l.contact_id), true, "contact")
                .await?;
            let current: Option<Conversation> =
                record::get(store, &keys::conversation(ws, l.id), true).await?;
            let mut conversation = current.clone().unwrap_or(Conversation {
                id: l.id,
                workspace_id: ws,
                contact_id: l.contact_id,
                last_session: None,
                stamps: Stamps::new(),
                version: 0,
            });
            conversation.contact_id = l.contact_id;
            conversation.last_session = l.last_session;
            if current.as_ref() == Some(&conversation) {
                return Ok("conversation");
            }
            let old_keys = current
                .as_ref()
                .map(Conversation::index_keys)
                .unwrap_or_default();
            let new_keys = conversation.index_keys();
            let mut m = Mutation::new(caller);
            for key in old_keys.iter().filter(|k| !new_keys.contains(k)) {
                m.remove(key.clone());
            }
            for key in new_keys.iter().filter(|k| !old_keys.contains(k)) {
                m.put_item(index_item(key.clone(), conversation.contact_id));
            }
            save(&mut m, &mut conversation, current.as_ref())?;
            m.commit(
                store,
                "conversation.load",
                "conversation",
                &l.id.to_string(),
            )
            .await?;
            Ok("conversation")
        }
    }
}

/// Creates a loaded record, or writes it over the one read when it changed.
fn save<R: Versioned>(m: &mut Mutation<'_>, record: &mut R, read: Option<&R>) -> ApiResult<()> {
    match read {
        None => {
            record.set_version(1);
            m.create(record)?;
        }
        Some(current) => {
            m.update(current, record)?;
        }
    }
    Ok(())
}

crate::versioned!(Organization, Conversation);

// ------------------------------------------------------------------ reading

/// The ids of the contacts linked to an organization, ascending; none when the
/// organization is unknown or not active.
pub async fn contacts_of_organization(
    store: &dyn Store,
    ws: u64,
    organization_id: u64,
) -> ApiResult<Vec<u64>> {
    let org: Option<Organization> =
        record::get(store, &keys::organization(ws, organization_id), false).await?;
    if !org.is_some_and(|o| o.active) {
        return Ok(Vec::new());
    }
    let query = Query {
        keys_only: true,
        ..Query::new(
            Index::TABLE,
            keys::organization_contacts(ws, organization_id),
            SkRange::All,
        )
    };
    let items = read_up_to(store, query, MAX_WINDOW as usize).await?;
    Ok(items
        .iter()
        .filter_map(|i| {
            i.get(SK)
                .and_then(Value::as_str)
                .and_then(|sk| sk.parse().ok())
        })
        .collect())
}

/// The ids of contacts having a conversation whose last session is in `segment`
/// (when given) and was created in `[from, to]` (each bound optional), ascending.
pub async fn contacts_by_last_session(
    store: &dyn Store,
    ws: u64,
    segment: Option<&str>,
    from: Option<Timestamp>,
    to: Option<Timestamp>,
) -> ApiResult<Vec<u64>> {
    let partition = match segment {
        Some(segment) => keys::segment_sessions(ws, segment),
        None => keys::last_sessions(ws),
    };
    // Sort keys are `<time>#<contact>#<conversation>`; `$` sorts after `#`, so
    // `<to>$` bounds every entry of that very millisecond.
    let low = from.map(|t| ids::format_ts(&t));
    let high = to.map(|t| format!("{}$", ids::format_ts(&t)));
    let range = match (low, high) {
        (Some(l), Some(h)) => SkRange::Between(l, h),
        (Some(l), None) => SkRange::AtLeast(l),
        (None, Some(h)) => SkRange::AtMost(h),
        (None, None) => SkRange::All,
    };
    let query = Query {
        keys_only: true,
        ..Query::new(Index::TABLE, partition, range)
    };
    let items = read_up_to(store, query, MAX_WINDOW as usize).await?;
    let mut ids: Vec<u64> = items
        .iter()
        .filter_map(|i| {
            i.get(SK)
                .and_then(Value::as_str)
                .and_then(keys::last_session_contact)
        })
        .collect();
    ids.sort_unstable();
    ids.dedup();
    Ok(ids)
}

/// The main organization and the number of organizations of each contact:
/// one BatchGetItem of the main organizations of the page.
pub async fn organizations_of(
    store: &dyn Store,
    contacts: &[Contact],
) -> ApiResult<HashMap<u64, OrganizationView>> {
    let Some(first) = contacts.first() else {
        return Ok(HashMap::new());
    };
    let ws = first.workspace_id;
    let mut wanted: Vec<u64> = contacts
        .iter()
        .filter_map(|c| c.main_organization_id)
        .collect();
    wanted.sort_unstable();
    wanted.dedup();
    let mut found = HashMap::new();
    for chunk in wanted.chunks(crate::store::MAX_BATCH_GET) {
        let keys: Vec<Key> = chunk.iter().map(|&id| keys::organization(ws, id)).collect();
        for item in store.batch_get(&keys).await? {
            let org: Organization = record::from_item(item)?;
            found.insert(org.id, OrganizationView::from(org));
        }
    }
    Ok(found)
}

/// `organizationId` of the contact list: a numeric organization id.
pub fn parse_organization_id(text: &str) -> ApiResult<u64> {
    text.trim()
        .parse()
        .map_err(|_| ApiError::field("organizationId", "must be the id of an organization"))
}
