//! Upsert: the contact found by its phone identity, e-mail or `externalId`
//! is updated, otherwise created (a contacts batch's `upsert`).

use serde::Deserialize;

use super::input::{ContactPatch, canonical_phone};
use super::lookup::ids_by_value;
use super::record::Contact;
use super::write::{Creation, by_phone, create, update, update_read};
use crate::auth::Caller;
use crate::error::{ApiError, ApiResult};
use crate::keys;
use crate::patch::Patch;
use crate::record;
use crate::store::Store;

/// What an upsert finds the contact by.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, serde::Serialize, schemars::JsonSchema,
)]
#[serde(rename_all = "camelCase")]
pub enum UpsertKey {
    /// The phone identity: any format of one number (the ninth digit and the
    /// country code as find-or-create reads them).
    #[default]
    Phone,
    /// The e-mail, without case.
    Email,
    /// `externalId`, exactly.
    ExternalId,
}

/// The contact that `by` finds for `input` is updated with it; with none, the
/// input is created. Concurrent upserts of one phone make one contact: the
/// loser of the phone's sentinel finds the winner's contact and updates it.
/// A phone merged into a contact finds its survivor, whose own phone stays.
/// By e-mail or `externalId`, which are not unique, two contacts found are a
/// 409 naming both.
pub async fn upsert(
    store: &dyn Store,
    caller: &Caller,
    by: UpsertKey,
    input: ContactPatch,
) -> ApiResult<(Contact, bool)> {
    let given = |field: &str, value: &Patch<String>| match value {
        Patch::Set(v) if !v.trim().is_empty() => Ok(v.trim().to_owned()),
        _ => Err(ApiError::field(
            field,
            format!("is required to upsert by {field}"),
        )),
    };
    let key = match by {
        UpsertKey::Phone => canonical_phone("phone", &given("phone", &input.phone)?)?,
        UpsertKey::Email => given("email", &input.email)?.to_lowercase(),
        UpsertKey::ExternalId => given("externalId", &input.external_id)?,
    };
    // A lost race (the phone taken, or the found contact changed, in between)
    // is settled by looking again.
    let mut last = None;
    for attempt in 0..12u32 {
        record::pause_before(attempt).await;
        let attempt = match find(store, caller, by, &key).await? {
            Some(Found::Read(contact)) => {
                let mut input = input.clone();
                // A phone merged into the contact is one of its identities
                // (`aliasPhones`): found by it, the contact keeps its own phone
                // (taking the alias as its phone would claim a sentinel it holds).
                if by == UpsertKey::Phone && contact.alias_phones.contains(&key) {
                    input.phone = Patch::Keep;
                }
                update_read(store, caller, *contact, input)
                    .await
                    .map(|c| (c, false))
            }
            Some(Found::Id(id)) => update(store, caller, id, input.clone())
                .await
                .map(|c| (c, false)),
            None => create(store, caller, input.clone(), Creation::Api)
                .await
                .map(|c| (c, true)),
        };
        match attempt {
            Err(e) if record::changed_meanwhile(&e) || lost_phone(&e, by) => last = Some(e),
            done => return done,
        }
    }
    Err(last.unwrap_or_else(|| ApiError::conflict("the contact kept changing; retry")))
}

/// A create by phone refused because the phone was just taken.
fn lost_phone(e: &ApiError, by: UpsertKey) -> bool {
    by == UpsertKey::Phone && e.status == http::StatusCode::CONFLICT
}

/// The contact an upsert found: read already (by phone, through its
/// sentinel), or only its id (from an index).
enum Found {
    Read(Box<Contact>),
    Id(u64),
}

/// The one contact `by` finds, if any.
async fn find(
    store: &dyn Store,
    caller: &Caller,
    by: UpsertKey,
    key: &str,
) -> ApiResult<Option<Found>> {
    let ws = caller.workspace_id;
    let (partition, prefix) = match by {
        UpsertKey::Phone => {
            return Ok(by_phone(store, caller, key)
                .await?
                .map(|c| Found::Read(Box::new(c))));
        }
        UpsertKey::Email => (
            keys::contact_emails(ws, key),
            keys::contact_email_prefix(key),
        ),
        UpsertKey::ExternalId => (
            keys::contact_external_ids(ws, key),
            keys::contact_external_id_prefix(key),
        ),
    };
    match ids_by_value(store, partition, prefix, 2).await?.as_slice() {
        [] => Ok(None),
        [id] => Ok(Some(Found::Id(*id))),
        [a, b, ..] => Err(ApiError::conflict(format!(
            "more than one contact has this {}: {a} and {b}; update one by id",
            match by {
                UpsertKey::Email => "email",
                _ => "externalId",
            }
        ))),
    }
}
