//! Exactly once for the rows of a bulk import. An operation run for a row
//! ([`marked`]) puts the row's mark, on the condition that it is absent, in
//! the same transaction as its change: the row's change lands with its mark
//! or not at all. A job that resumes before its last checkpoint runs some
//! rows again; those whose change landed fail on their mark
//! ([`already_applied`]) and are counted from it, never doubled.
//!
//! The mark applies to every commit of the scope until one lands (a commit
//! retried with a fresh id carries it again); marks expire with the job's
//! files ([`MARK_TTL_DAYS`]).

use std::sync::atomic::{AtomicBool, Ordering};

use serde_json::{Map, Value, json};

use crate::error::ApiError;
use crate::store::{Item, Key, PK, SK, TTL, TYPE};

/// Marks outlive the job's files (7 days) by a day.
pub const MARK_TTL_DAYS: i64 = 8;

const ALREADY: &str = "this row was applied by an earlier run of its import";

/// Whether `e` is the failure of a row whose change landed before.
pub fn already_applied(e: &ApiError) -> bool {
    e.status == http::StatusCode::CONFLICT && e.message == ALREADY
}

/// [`already_applied`] of an error's JSON body (a batch's result).
pub fn already_applied_body(body: &Value) -> bool {
    body["statusCode"] == 409 && body["message"] == ALREADY
}

pub(super) fn conflict() -> ApiError {
    ApiError::conflict(ALREADY)
}

struct Mark {
    key: Key,
    landed: AtomicBool,
}

tokio::task_local! {
    static MARK: Mark;
}

/// Runs `f` (one row's operation) with its commits marked by `key`.
pub async fn marked<F: Future>(key: Key, f: F) -> F::Output {
    MARK.scope(
        Mark {
            key,
            landed: AtomicBool::new(false),
        },
        f,
    )
    .await
}

/// The mark's item for the commit of `resource_id`, while none landed.
pub(super) fn current(resource_id: &str, created: bool) -> Option<Item> {
    MARK.try_with(|mark| {
        if mark.landed.load(Ordering::Relaxed) {
            return None;
        }
        let ttl = chrono::Utc::now().timestamp() + MARK_TTL_DAYS * 86_400;
        let mut item = Map::new();
        item.insert(PK.into(), Value::String(mark.key.pk.clone()));
        item.insert(SK.into(), Value::String(mark.key.sk.clone()));
        item.insert(TYPE.into(), json!("ImportRow"));
        item.insert("resourceId".into(), json!(resource_id));
        item.insert("created".into(), json!(created));
        item.insert(TTL.into(), json!(ttl));
        Some(item)
    })
    .ok()
    .flatten()
}

/// The scope's change landed: its later commits are its own.
pub(super) fn landed() {
    let _ = MARK.try_with(|mark| mark.landed.store(true, Ordering::Relaxed));
}

/// What a row's mark says: the record it made or changed, and whether it made it.
pub fn read(item: &Item) -> Option<(String, bool)> {
    Some((
        item.get("resourceId")?.as_str()?.to_owned(),
        item.get("created")?.as_bool()?,
    ))
}
