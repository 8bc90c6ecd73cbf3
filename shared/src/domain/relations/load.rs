//! The lines of `crm load` for organizations, contact links and conversations.

use async_trait::async_trait;
use serde::Deserialize;
use validator::Validate;

use super::{LastSession, Organization, index_item, save, stage_last_session};
use crate::auth::Caller;
use crate::error::ApiResult;
use crate::keys;
use crate::keys::{ContactId, ConversationId, OrganizationId};
use crate::load::{LineType, Loadable};
use crate::record::{self, Mutation, Stamps};
use crate::store::Store;

/// `organization`, `contactOrganization` and `conversation` lines:
/// `{"type":"organization","id":10,"name":"Acme","active":true}`,
/// `{"type":"contactOrganization","contactId":1,"organizationId":10,"main":true}`,
/// `{"type":"conversation","id":5,"contactId":1,"lastSession":{"id":"s1","createdAt":"...","segmentId":"inbox"}}`.
pub fn line_types() -> Vec<LineType> {
    vec![
        LineType::of::<OrganizationLine>(),
        LineType::of::<LinkLine>(),
        LineType::of::<ConversationLine>(),
    ]
}

#[derive(Debug, Deserialize, Validate, schemars::JsonSchema)]
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

#[derive(Debug, Deserialize, Validate, schemars::JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct LinkLine {
    pub contact_id: u64,
    pub organization_id: u64,
    /// The contact's main organization (the first linked one otherwise).
    #[serde(default)]
    pub main: bool,
}

#[derive(Debug, Deserialize, Validate, schemars::JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ConversationLine {
    #[validate(range(min = 1, max = 9007199254740991u64))]
    pub id: u64,
    pub contact_id: u64,
    #[validate(nested)]
    pub last_session: Option<LastSession>,
}

#[async_trait]
impl Loadable for OrganizationLine {
    const TYPE: &'static str = "organization";

    async fn load(self, store: &dyn Store, caller: &Caller) -> ApiResult<()> {
        let (ws, l) = (caller.workspace_id, self);

        let current: Option<Organization> =
            record::get(store, &keys::organization(ws, OrganizationId(l.id)), true).await?;
        let mut org = current.clone().unwrap_or(Organization {
            id: OrganizationId(l.id),
            workspace_id: ws,
            name: String::new(),
            active: true,
            stamps: Stamps::new(),
            version: 0,
        });
        org.name = l.name.trim().to_owned();
        org.active = l.active;
        if current.as_ref() == Some(&org) {
            return Ok(());
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
        Ok(())
    }
}

#[async_trait]
impl Loadable for LinkLine {
    const TYPE: &'static str = "contactOrganization";

    async fn load(self, store: &dyn Store, caller: &Caller) -> ApiResult<()> {
        let (ws, l) = (caller.workspace_id, self);

        // A contact merged since: the link is its survivor's.
        let mut contact = crate::domain::contacts::read(store, ws, l.contact_id, true).await?;
        record::find::<Organization>(
            store,
            &keys::organization(ws, OrganizationId(l.organization_id)),
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
            return Ok(());
        }
        contact.version += 1;
        let mut m = Mutation::new(caller);
        m.replace(&contact, before.version)?.put_item(index_item(
            keys::organization_contact(ws, l.organization_id, ContactId(contact.id)),
            contact.id,
        ));
        m.commit(
            store,
            "contactOrganization.load",
            "contact",
            &contact.id.to_string(),
        )
        .await?;
        Ok(())
    }
}

#[async_trait]
impl Loadable for ConversationLine {
    const TYPE: &'static str = "conversation";

    async fn load(self, store: &dyn Store, caller: &Caller) -> ApiResult<()> {
        let (ws, l) = (caller.workspace_id, self);

        // A contact merged since: the conversation is its survivor's.
        let contact = crate::domain::contacts::read(store, ws, l.contact_id, true).await?;
        let mut m = Mutation::new(caller);
        let changed = stage_last_session(
            store,
            &mut m,
            ws,
            ConversationId(l.id),
            contact.id,
            l.last_session,
            false,
        )
        .await?;
        if !changed {
            return Ok(());
        }
        m.commit(
            store,
            "conversation.load",
            "conversation",
            &l.id.to_string(),
        )
        .await?;
        Ok(())
    }
}
