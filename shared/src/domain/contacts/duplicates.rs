//! `GET /v3/contacts/duplicates`: contacts that share an e-mail.
//!
//! A phone is one identity per workspace (its sentinel; the ninth digit and
//! the country code are one canonical form), so two contacts never share a
//! phone: duplicates are people written twice with one e-mail. The first
//! contact to hold an e-mail leaves a sentinel; a later holder finds it and
//! marks the e-mail shared in the same transaction ([`Contact::hold_email`]).
//! A page reads the marks, then each marked e-mail's holders: its cost grows
//! with the duplicates, not with the workspace. A mark whose e-mail has one
//! holder left (after a merge, an erasure or an e-mail change) is skipped.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use futures_util::future::try_join_all;
use serde::Serialize;

use super::lookup::email_holders;
use super::record::Contact;
use super::view::ContactV3;
use crate::auth::Caller;
use crate::error::{ApiError, ApiResult};
use crate::keys;
use crate::page::{CursorPage, CursorPaging, cursor_page};
use crate::record::find_many;
use crate::store::{Index, Key, Query, SK, SkRange, Store};

/// The most holders a group shows (a shared mailbox may hold many more).
const MAX_GROUP: usize = 100;

/// What a group of duplicates shares.
#[derive(Debug, Clone, Copy, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum DuplicateBy {
    Email,
}

/// Contacts that share a value: every two of them are a pair of duplicates.
#[derive(Debug, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DuplicateGroup {
    pub by: DuplicateBy,
    /// The shared value (an e-mail, without case).
    pub value: String,
    /// The contacts, oldest first (the usual survivor of a merge); at most 100.
    pub contacts: Vec<ContactV3>,
}

/// One page of groups, in the order of their values. A page may hold fewer
/// groups than `limit` (a value no longer shared is skipped); `nextCursor`
/// is empty on the last page.
pub async fn duplicates(
    store: &dyn Store,
    caller: &Caller,
    paging: CursorPaging,
) -> ApiResult<CursorPage<DuplicateGroup>> {
    let ws = caller.workspace_id;
    let partition = keys::contact_duplicates(ws);
    let mut query = Query::new(Index::TABLE, partition.clone(), SkRange::All);
    if let Some(cursor) = &paging.cursor {
        let sk = URL_SAFE_NO_PAD
            .decode(cursor)
            .ok()
            .and_then(|b| String::from_utf8(b).ok())
            .filter(|sk| keys::shared_email_of(sk).is_some())
            .ok_or_else(|| {
                ApiError::field("cursor", "must be the nextCursor of the previous page")
            })?;
        query.start_after = Some(Key::new(partition, sk).start_after());
    }
    let (marks, more) = cursor_page(store, vec![query], paging.limit).await?;
    let emails: Vec<String> = marks
        .iter()
        .filter_map(|m| m.get(SK)?.as_str())
        .filter_map(|sk| keys::shared_email_of(sk).map(str::to_owned))
        .collect();
    let groups = try_join_all(emails.iter().map(|email| group(store, caller, email))).await?;
    let next_cursor = match marks.last().and_then(|m| m.get(SK)?.as_str()) {
        Some(sk) if more => URL_SAFE_NO_PAD.encode(sk),
        _ => String::new(),
    };
    Ok(CursorPage {
        data: groups.into_iter().flatten().collect(),
        next_cursor,
    })
}

/// The contacts holding `email`, when there are two or more.
async fn group(
    store: &dyn Store,
    caller: &Caller,
    email: &str,
) -> ApiResult<Option<DuplicateGroup>> {
    let ws = caller.workspace_id;
    let ids = email_holders(store, ws, email, MAX_GROUP).await?;
    if ids.len() < 2 {
        return Ok(None);
    }
    let wanted: Vec<_> = ids.iter().map(|&id| keys::contact(ws, id)).collect();
    let contacts: Vec<Contact> = find_many(store, &wanted).await?;
    if contacts.len() < 2 {
        return Ok(None);
    }
    Ok(Some(DuplicateGroup {
        by: DuplicateBy::Email,
        value: email.to_owned(),
        contacts: contacts.into_iter().map(ContactV3::from).collect(),
    }))
}
