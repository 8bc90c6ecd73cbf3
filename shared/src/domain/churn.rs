//! Churn-reason suggestions (`/v3/workspaces/churn-reasons/suggestions`): the
//! reasons a workspace is offered when it leaves ("Too expensive", "Missing a
//! feature"). One list for the whole service, managed by operators: every token
//! reads it; adding and removing need the admin scope, since a change shows in
//! every workspace.
//!
//! Reasons are unique without regard to case, accents and spacing ("too
//! EXPENSIVE " is "Too expensive"); the first spelling stays. At most 200
//! characters each and 200 in the list; a request adds at most 50. The list is
//! one Query of one partition, bounded by its size.
//!
//! Each reason added is a record with its event (`churnReason.created`), so a
//! request's reasons are written [`PER_TRANSACTION`] to a transaction (one
//! transaction holds 100 items): in the order given, each transaction with its
//! audit entry. Should one fail, those before it stay added, and the same
//! request again adds the rest (a reason added twice is added once).

use serde::{Deserialize, Serialize};
use validator::Validate;

use crate::auth::Caller;
use crate::error::{ApiError, ApiResult};
use crate::keys;
use crate::page::{ListPage, read_up_to};
use crate::record::{self, CommitError, Mutation, Personal, Record, Stamps};
use crate::store::{Index, Key, Query, SkRange, Store};
use crate::validate::needs_one_of;

pub const MAX_REASONS: usize = 200;
pub const MAX_PER_REQUEST: usize = 50;
/// Reasons written in one transaction: each is two items (the record and its
/// event), beside the audit entry, its two counters and an Idempotency-Key's
/// record: 54 of the 100 items a transaction holds
/// (`tests/tests/maxima.rs` sends the most a request may add).
pub const PER_TRANSACTION: usize = 25;

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ChurnReason {
    /// As first written (trimmed, inner spacing collapsed).
    pub reason: String,
    /// The key: folded (lowercase, no accents) and spacing collapsed.
    pub folded: String,
    #[serde(flatten)]
    pub stamps: Stamps,
}

impl Record for ChurnReason {
    const EVENTS: Option<&'static str> = Some("churnReason");

    fn event_object(&self) -> serde_json::Value {
        crate::record::as_event_object(ChurnReasonView::from(self.clone()))
    }
    const TYPE: &'static str = "ChurnReason";
    /// A workspace's reason to leave.
    const PERSONAL: Personal = Personal::none(&["folded", "reason"]);
    fn key(&self) -> Key {
        keys::churn_reason(&self.folded)
    }
}

#[derive(Debug, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ChurnReasonView {
    pub reason: String,
    #[schemars(with = "crate::ids::Timestamp")]
    #[serde(with = "crate::ids::ts_format")]
    pub created_at: crate::ids::Timestamp,
}

impl From<ChurnReason> for ChurnReasonView {
    fn from(r: ChurnReason) -> Self {
        Self {
            reason: r.reason,
            created_at: r.stamps.created_at,
        }
    }
}

/// `POST`: one reason or many.
#[derive(Debug, Deserialize, Validate, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(transform = one_or_many)]
pub struct AddReasons {
    #[validate(
        length(min = 1, max = 200),
        custom(function = "crate::validate::not_blank")
    )]
    pub reason: Option<String>,
    #[validate(length(min = 1, max = 50))]
    pub reasons: Option<Vec<String>>,
}

/// What [`add`] checks, for the document.
fn one_or_many(schema: &mut schemars::Schema) {
    needs_one_of(schema, &["reason", "reasons"], false);
}

/// `DELETE`: the reason, in the query (`?reason=`) or the body.
#[derive(Debug, Default, Deserialize, Validate, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReasonParam {
    #[validate(length(min = 1, max = 200))]
    pub reason: Option<String>,
}

/// The reason as kept: trimmed, inner spacing one space.
fn tidy(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The identity of a reason: without case, accents or spacing differences.
pub fn fold(text: &str) -> String {
    crate::text::fold(&tidy(text))
}

/// The whole list, in alphabetical order of the folded reasons.
pub async fn list(store: &dyn Store) -> ApiResult<ListPage<ChurnReasonView>> {
    let query = Query::new(Index::TABLE, keys::CHURN_REASONS, SkRange::All);
    let items = read_up_to(store, query, MAX_REASONS + MAX_PER_REQUEST).await?;
    let data: Vec<ChurnReasonView> = items
        .into_iter()
        .map(|i| record::from_item::<ChurnReason>(i).map(ChurnReasonView::from))
        .collect::<ApiResult<_>>()?;
    Ok(ListPage {
        total_count: Some(data.len() as u64),
        data,
    })
}

/// Adds the reasons that are not in the list yet; answers the whole list.
pub async fn add(
    store: &dyn Store,
    caller: &Caller,
    input: AddReasons,
) -> ApiResult<ListPage<ChurnReasonView>> {
    caller.require_admin().await?;
    let mut wanted: Vec<(String, String)> = Vec::new();
    let given = input
        .reason
        .into_iter()
        .chain(input.reasons.unwrap_or_default());
    for (i, text) in given.enumerate() {
        let reason = tidy(&text);
        if reason.is_empty() || reason.chars().count() > 200 {
            return Err(ApiError::field(
                format!("reasons[{i}]"),
                "must be between 1 and 200 characters",
            ));
        }
        let folded = fold(&reason);
        if folded.is_empty() {
            return Err(ApiError::field(
                format!("reasons[{i}]"),
                "must hold a visible character",
            ));
        }
        if !wanted.iter().any(|(_, f)| *f == folded) {
            wanted.push((reason, folded));
        }
    }
    if wanted.is_empty() {
        return Err(ApiError::field("reasons", "name at least one reason"));
    }
    if wanted.len() > MAX_PER_REQUEST {
        return Err(ApiError::field("reasons", "at most 50 reasons at once"));
    }
    // Twice at most: a concurrent request may add one of ours in between.
    for _ in 0..2 {
        let keys: Vec<Key> = wanted.iter().map(|(_, f)| keys::churn_reason(f)).collect();
        let present = store.batch_get(&keys).await?;
        let new: Vec<&(String, String)> = wanted
            .iter()
            .filter(|(_, f)| {
                !present
                    .iter()
                    .any(|i| i.get("folded").and_then(|v| v.as_str()) == Some(f.as_str()))
            })
            .collect();
        if new.is_empty() {
            return list(store).await;
        }
        let count = list(store).await?.data.len();
        if count + new.len() > MAX_REASONS {
            return Err(ApiError::conflict(format!(
                "the list holds {count} reasons; at most {MAX_REASONS}"
            )));
        }
        let mut taken = false;
        for part in new.chunks(PER_TRANSACTION) {
            let mut m = Mutation::new(caller);
            for (reason, folded) in part {
                m.create(&ChurnReason {
                    reason: reason.clone(),
                    folded: folded.clone(),
                    stamps: Stamps::new(),
                })?;
            }
            match m
                .commit(store, "churnReason.add", "churnReason", &part[0].1)
                .await
            {
                Ok(()) => {}
                // Added meanwhile by another request: look again at what is left.
                Err(CommitError::IdTaken) => {
                    taken = true;
                    break;
                }
                Err(CommitError::Api(e)) => return Err(e),
            }
        }
        if !taken {
            return list(store).await;
        }
    }
    Err(ApiError::conflict(
        "the list changed while this request ran; retry",
    ))
}

/// Removes one reason (named in any case or spacing); 404 when it is not listed.
pub async fn remove(
    store: &dyn Store,
    caller: &Caller,
    reason: Option<String>,
) -> ApiResult<ChurnReasonView> {
    caller.require_admin().await?;
    let Some(reason) = reason.filter(|r| !r.trim().is_empty()) else {
        return Err(ApiError::field(
            "reason",
            "is required (in the query or the body)",
        ));
    };
    let key = keys::churn_reason(&fold(&reason));
    let stored: ChurnReason = record::find(store, &key, true, "churn reason").await?;
    let mut m = Mutation::new(caller);
    m.delete_record(&stored, "churn reason");
    m.commit(store, "churnReason.remove", "churnReason", &stored.folded)
        .await?;
    Ok(stored.into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reasons_are_one_without_case_accents_or_spacing() {
        assert_eq!(fold("  Too   EXPENSIVE "), fold("too expensive"));
        assert_eq!(fold("Não uso mais"), fold("nao USO mais"));
        assert_ne!(fold("too expensive"), fold("too expensive!"));
        assert_eq!(tidy("  Too   expensive "), "Too expensive");
    }
}

/// The stored items of item_shapes/churn.json read back (domain::item_shapes).
#[cfg(test)]
mod shapes {
    use crate::domain::item_shapes::{round_trip, texts_declared};

    #[test]
    fn churn_reasons_keep_their_shape() {
        round_trip::<crate::domain::churn::ChurnReason>("ChurnReason");
        texts_declared::<crate::domain::churn::ChurnReason>();
    }
}
