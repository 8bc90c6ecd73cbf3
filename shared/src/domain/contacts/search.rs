//! The `search` term of `GET /v3/contacts`.

use std::collections::HashSet;

use super::lookup::{email_ids, ids_of, load};
use super::record::Contact;
use super::write::by_phone;
use crate::auth::Caller;
use crate::error::{ApiError, ApiResult};
use crate::keys;
use crate::page::{MAX_WINDOW, Paging, each_shard, merged_more};
use crate::record;
use crate::store::{Key, Query, SK, SkRange, Store};
use crate::{phone, text};

/// `search`: an e-mail (exact), a phone in any format, an id, or the first
/// letters of words of the name (at least 3; case and accents ignored). Name
/// matches come in the order of the matched word.
pub(super) async fn search(
    store: &dyn Store,
    caller: &Caller,
    term: &str,
    keep: &(dyn Fn(&Contact) -> bool + Sync),
    paging: Paging,
) -> ApiResult<Vec<Contact>> {
    let ws = caller.workspace_id;
    let term = term.trim();
    let page = |mut found: Vec<Contact>| -> Vec<Contact> {
        found.retain(|c| keep(c));
        found
            .into_iter()
            .skip(paging.offset as usize)
            .take(paging.limit as usize)
            .collect()
    };

    if term.contains('@') {
        let ids = email_ids(store, ws, term).await?;
        return Ok(page(load(store, ws, &ids).await?));
    }
    if term
        .chars()
        .all(|c| c.is_ascii_digit() || "+-() ./".contains(c))
        && term.chars().any(|c| c.is_ascii_digit())
    {
        let mut found = Vec::new();
        if let Ok(e164) = phone::canonical(term)
            && let Some(contact) = by_phone(store, caller, &e164).await?
        {
            found.push(contact);
        }
        if let Ok(id) = term.parse::<u64>()
            && !found.iter().any(|c| c.id == id)
            && let Some(contact) =
                record::get::<Contact>(store, &keys::contact(ws, id), false).await?
        {
            found.push(contact);
        }
        return Ok(page(found));
    }

    let terms = text::search_words(term);
    let Some(driving) = terms.iter().max_by_key(|t| t.len()).cloned() else {
        return Err(ApiError::field(
            "search",
            "a name search needs a word of at least 3 letters",
        ));
    };
    // Read the index of the longest word over its shards, 100 at a time in
    // word order; the other words must prefix a word of the name.
    let wanted = (paging.offset + paging.limit) as usize;
    let mut matches = Vec::new();
    let mut seen = HashSet::new();
    let mut read = 0;
    let mut after: Option<String> = None;
    while matches.len() < wanted && read < MAX_WINDOW as usize {
        let shards = each_shard(
            keys::contact_words(ws),
            SkRange::Prefix(driving.clone()),
            true,
        )
        .into_iter()
        .map(|query| Query {
            keys_only: true,
            start_after: after
                .as_ref()
                .map(|sk| Key::new(query.pk.clone(), sk.clone()).start_after()),
            ..query
        })
        .collect();
        let (step, more) = merged_more(store, shards, 100).await?;
        read += step.len();
        let ids: Vec<u64> = ids_of(&step)
            .into_iter()
            .filter(|id| seen.insert(*id))
            .collect();
        for contact in load(store, ws, &ids).await? {
            let words = text::search_words(contact.fields.name.as_deref().unwrap_or(""));
            let all_match = terms
                .iter()
                .all(|t| words.iter().any(|w| w.starts_with(t.as_str())));
            if all_match && keep(&contact) {
                matches.push(contact);
            }
        }
        match step.last().and_then(|item| item.get(SK)?.as_str()) {
            Some(last) if more => after = Some(last.to_owned()),
            _ => break,
        }
    }
    Ok(matches
        .into_iter()
        .skip(paging.offset as usize)
        .take(paging.limit as usize)
        .collect())
}
