//! Batches: up to [`MAX_OPERATIONS`] operations on one resource in one
//! request (`POST /v3/<resource>/batch`), each answered on its own, in input
//! order (docs/design.md, "Batches").
//!
//! Each operation is read, checked and applied alone, by the same domain
//! function as its single route: a bad or conflicting item gets its own
//! error in the API's error shape and never fails the others.
//!
//! Operations run side by side in waves, and a wave's commits are shared
//! ([`crate::record::sharing`]): packed into as few transactions as DynamoDB
//! allows, one durable commit on the embedded store, each operation still
//! all or nothing and answered on its own. A wave holds no two operations
//! that name one record or one unique value (an id, a phone, an e-mail, an
//! `externalId`, a tag's name: [`Claims`]), so two items naming one record
//! act in input order (the second, in a later wave, sees the first); two
//! that meet on a record no claim names (an upsert by phone and an update by
//! id of one contact) are told by the record's version: the wave's commits
//! go out in input order, so the earlier lands and the later runs again
//! after the wave, reading it; they too act in input order. A store failure stops the batch: the
//! operations of its wave answer 503 (their shared commit may or may not
//! have landed), those after it 503 "not applied", not tried.

use std::future::Future;
use std::marker::PhantomData;

use http::StatusCode;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use validator::Validate;

use crate::error::{ApiError, ApiResult, FieldProblem, from_value, validation_error};
use crate::ids;
use crate::record::changed_meanwhile;
use crate::record::marks::marked;
use crate::record::sharing::Sharing;
use crate::store::Store;

mod ops;

pub use ops::{
    ContactOp, DealData, DealOp, ProductOp, TagData, TagOp, contacts, deals, products, tags,
};

/// The most operations in one batch.
pub const MAX_OPERATIONS: usize = 100;

/// What an operation names that another must not touch in the same wave
/// (`id:7`, `phone:87654321`, `name:vip`); [`EVERYTHING`] for one that
/// must run alone. Read from the raw operation: a claim too many only
/// makes a wave shorter.
pub type Claims = fn(&Value) -> Vec<String>;

/// The claim of an operation that runs alone.
pub const EVERYTHING: &str = "*";

/// `{ "operations": [ ... ] }`, 1 to 100 of them. Each is kept as JSON here
/// and read on its own, so that one malformed item is answered alone.
#[derive(Debug, Deserialize, Validate, JsonSchema)]
#[serde(deny_unknown_fields, bound(deserialize = ""))]
#[schemars(bound = "K: JsonSchema, D: JsonSchema", rename = "BatchRequest_{D}")]
pub struct BatchRequest<K, D> {
    /// The operations, applied in this order.
    #[schemars(with = "Vec<Operation<K, D>>")]
    #[validate(length(min = 1, max = 100))]
    pub operations: Vec<Value>,
    #[serde(skip)]
    kind: PhantomData<(K, D)>,
    /// The rows of a bulk import these operations are ([`RowMarks`]).
    #[serde(skip)]
    #[schemars(skip)]
    marks: Option<RowMarks>,
}

/// Operations that are rows `first_row..` of bulk import `job_id`: each
/// commits with its row's mark (`record::marks`), so a resumed job applies
/// no row twice.
#[derive(Debug, Clone)]
pub struct RowMarks {
    pub workspace_id: crate::ids::WorkspaceId,
    pub job_id: String,
    pub first_row: u64,
}

impl<K, D> BatchRequest<K, D> {
    /// The operations of rows of a bulk import (no limit of 100: the
    /// import sizes its windows).
    pub fn marked(operations: Vec<Value>, marks: RowMarks) -> Self {
        Self {
            operations,
            kind: PhantomData,
            marks: Some(marks),
        }
    }
}

/// The mark of operation `index` of an import's batch.
fn mark_of(marks: &RowMarks, index: usize) -> crate::store::Key {
    crate::keys::bulk_import_row(
        marks.workspace_id,
        &marks.job_id,
        marks.first_row + index as u64,
    )
}

/// One operation: what to do (`op`), to which record (`id`, or found `by`
/// a key), with which fields (`data`, as the single route's body).
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, bound(deserialize = "K: Deserialize<'de>"))]
#[schemars(bound = "K: JsonSchema, D: JsonSchema", rename = "BatchOperation_{D}")]
pub struct Operation<K, D> {
    pub op: K,
    /// The record to update or delete.
    #[serde(default)]
    pub id: Option<RecordId>,
    /// What an upsert of contacts finds the contact by: `phone` (the
    /// default), `email` or `externalId`.
    #[serde(default)]
    pub by: Option<crate::domain::contacts::UpsertKey>,
    /// The record's fields, as the body of the operation's single route.
    #[serde(default)]
    #[schemars(with = "Option<D>")]
    pub data: Option<Value>,
    #[serde(skip)]
    #[schemars(skip)]
    fields: PhantomData<D>,
}

/// A record's id, as a string of digits or a number.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecordId(pub u64);

impl<'de> Deserialize<'de> for RecordId {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        ids::id_string::deserialize(d).map(RecordId)
    }
}

impl serde::Serialize for RecordId {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(&self.0)
    }
}

impl JsonSchema for RecordId {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        ids::IdString::schema_name()
    }
    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        ids::IdString::json_schema(generator)
    }
}

impl<K, D> Operation<K, D> {
    /// The fields, read strictly and checked as `T` (the single route's body).
    pub fn data<T: DeserializeOwned + Validate>(&self) -> ApiResult<T> {
        let data = self
            .data
            .as_ref()
            .ok_or_else(|| ApiError::field("data", "is required"))?;
        let body: T = from_value(data).map_err(|e| named(e, "data"))?;
        body.validate()
            .map_err(|e| named(validation_error(e), "data"))?;
        Ok(body)
    }

    /// The record named: required by `update` and `delete`.
    pub fn id(&self) -> ApiResult<u64> {
        self.id
            .map(|RecordId(id)| id)
            .ok_or_else(|| ApiError::field("id", "is required to name the record"))
    }

    /// Refuses an `id`: only `update` and `delete` name a record.
    pub fn no_id(&self) -> ApiResult<&Self> {
        match self.id {
            Some(_) => Err(ApiError::field("id", "is only taken by update and delete")),
            None => Ok(self),
        }
    }

    /// Refuses `by`: only an upsert of contacts takes it.
    pub fn no_by(&self) -> ApiResult<&Self> {
        match self.by {
            Some(_) => Err(ApiError::field(
                "by",
                "is only taken by an upsert of contacts",
            )),
            None => Ok(self),
        }
    }

    /// Refuses `data`: a delete takes none.
    pub fn no_data(&self) -> ApiResult<&Self> {
        match self.data {
            Some(_) => Err(ApiError::field("data", "is not taken by delete")),
            None => Ok(self),
        }
    }
}

/// What an operation did.
pub struct Applied<V> {
    pub id: String,
    pub created: bool,
    pub data: V,
}

impl<V> Applied<V> {
    pub fn new(id: impl ToString, created: bool, data: V) -> Self {
        Self {
            id: id.to_string(),
            created,
            data,
        }
    }
}

/// The answer to one operation.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "BatchResult_{V}")]
pub struct ItemResult<V> {
    /// The operation's position in `operations`, from 0.
    pub index: usize,
    /// The status its single route would have answered: 201 created, 200
    /// changed, unchanged or deleted, or the error's.
    pub status: u16,
    /// The record's id (absent when the operation failed before naming one).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// Whether the operation created the record (an upsert tells which).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub created: Option<bool>,
    /// The record after the operation (a deleted one as it was), absent on
    /// failure.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub data: Option<V>,
    /// On failure: the API's error shape, as the single route answers it.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<crate::error::ErrorBody<'static>>")]
    pub error: Option<Value>,
}

/// A batch's answer: 200 when every operation succeeded, 207 otherwise.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "BatchAnswer_{V}")]
pub struct BatchAnswer<V> {
    /// One per operation, in input order.
    pub results: Vec<ItemResult<V>>,
    pub succeeded: usize,
    pub failed: usize,
}

impl<V> BatchAnswer<V> {
    /// Whether an operation failed (HTTP answers such a batch 207).
    pub fn some_failed(&self) -> bool {
        self.failed > 0
    }
}

/// Applies each operation of `request` with `apply`, in waves of operations
/// whose [`Claims`] do not meet, answering each in input order.
pub async fn run<K, D, V, F, Fut>(
    store: &dyn Store,
    request: BatchRequest<K, D>,
    claims: Claims,
    mut apply: F,
) -> BatchAnswer<V>
where
    K: DeserializeOwned,
    F: FnMut(Operation<K, D>) -> Fut,
    Fut: Future<Output = ApiResult<Applied<V>>>,
{
    let operations = &request.operations;
    let marks = request.marks.as_ref();
    let mut answer = BatchAnswer {
        results: Vec::with_capacity(operations.len()),
        succeeded: 0,
        failed: 0,
    };
    // The store failing (a 5xx) stops the batch: the operations after it
    // are not tried, so an outage is not met a hundred times over.
    let mut failed_at = None;
    let mut start = 0;
    while start < operations.len() {
        let end = wave_end(operations, start, claims);
        let mut outcomes: Vec<ApiResult<Applied<V>>> = match failed_at {
            Some(at) => (start..end)
                .map(|_| {
                    Err(ApiError::unavailable(format!(
                        "not applied: operation {at} met a store failure first; send this one again"
                    )))
                })
                .collect(),
            None => {
                let sharing = Sharing::new(end - start);
                let wave = operations[start..end]
                    .iter()
                    .enumerate()
                    .map(|(order, raw)| {
                        // Boxed where it is made: a domain operation's
                        // future is tens of KB, and every layer that awaits
                        // it (the wave, the sharing scope, a mark) would
                        // otherwise copy it (a third of a batch's
                        // instructions were those copies).
                        let applied = match from_value::<Operation<K, D>>(raw) {
                            Err(e) => Err(e),
                            Ok(op) => Ok(Box::pin(apply(op))),
                        };
                        let sharing = &sharing;
                        async move {
                            match applied {
                                Err(e) => sharing.run(store, order, async { Err(e) }).await,
                                // A domain function names the body's fields: they are in `data`.
                                // An import's row commits with its mark.
                                Ok(running) => match marks {
                                    None => sharing.run(store, order, running).await,
                                    Some(m) => {
                                        let marked = marked(mark_of(m, start + order), running);
                                        sharing.run(store, order, marked).await
                                    }
                                }
                                .map_err(|e| named(e, "data")),
                            }
                        }
                    });
                futures_util::future::join_all(wave).await
            }
        };
        // Two operations of the wave that met on a record no claim named (an
        // upsert by phone and an update by id of one contact): the one that
        // lost runs again, alone, once the wave is done, reading what the
        // other wrote.
        if end - start > 1 {
            for (offset, outcome) in outcomes.iter_mut().enumerate() {
                if !matches!(outcome, Err(e) if changed_meanwhile(e)) {
                    continue;
                }
                if let Ok(op) = from_value::<Operation<K, D>>(&operations[start + offset]) {
                    let again = match marks {
                        None => apply(op).await,
                        Some(m) => Box::pin(marked(mark_of(m, start + offset), apply(op))).await,
                    };
                    *outcome = again.map_err(|e| named(e, "data"));
                }
            }
        }
        for (offset, outcome) in outcomes.into_iter().enumerate() {
            let index = start + offset;
            if let Err(e) = &outcome
                && e.status.is_server_error()
            {
                failed_at.get_or_insert(index);
            }
            answer
                .results
                .push(result(index, &operations[index], outcome));
            match answer.results.last().map(|r| r.error.is_none()) {
                Some(true) => answer.succeeded += 1,
                _ => answer.failed += 1,
            }
        }
        start = end;
    }
    answer
}

/// Where the wave that starts at `start` ends: before the first operation
/// that claims what an earlier one of it claims (or one that must run
/// alone).
fn wave_end(operations: &[Value], start: usize, claims: Claims) -> usize {
    let mut claimed: std::collections::HashSet<String> = std::collections::HashSet::new();
    let mut end = start;
    while end < operations.len() {
        let names = claims(&operations[end]);
        let alone = names.iter().any(|n| n == EVERYTHING);
        if end > start && (alone || names.iter().any(|n| claimed.contains(n))) {
            break;
        }
        end += 1;
        if alone {
            break;
        }
        claimed.extend(names);
    }
    end
}

/// The answer to operation `index` (`raw` as sent).
fn result<V>(index: usize, raw: &Value, outcome: ApiResult<Applied<V>>) -> ItemResult<V> {
    match outcome {
        Ok(done) => ItemResult {
            index,
            status: if done.created { 201 } else { 200 },
            id: Some(done.id),
            created: Some(done.created),
            data: Some(done.data),
            error: None,
        },
        Err(e) => {
            let e = named(e, &format!("operations[{index}]"));
            ItemResult {
                index,
                status: e.status.as_u16(),
                id: raw.get("id").and_then(|id| match id {
                    Value::String(s) => Some(s.clone()),
                    Value::Number(n) => Some(n.to_string()),
                    _ => None,
                }),
                created: None,
                data: None,
                error: Some(e.to_json()),
            }
        }
    }
}

/// A 400's fields named from `at` (`data` + `email` = `data.email`), but
/// those named from the operation already (`id`, `data.email`).
fn named(e: ApiError, at: &str) -> ApiError {
    if e.status != StatusCode::BAD_REQUEST || e.details.is_empty() {
        return e;
    }
    let rooted = |field: &str| {
        ["op", "id", "by", "data"].iter().any(|member| {
            field == *member
                || field
                    .strip_prefix(member)
                    .is_some_and(|rest| rest.starts_with(['.', '[']))
        })
    };
    let under = |field: &str| match field {
        "" => at.to_owned(),
        f if at == "data" && rooted(f) => f.to_owned(),
        f => format!("{at}.{f}"),
    };
    ApiError::fields(
        e.details
            .into_iter()
            .map(|d| FieldProblem {
                field: under(&d.field),
                problem: d.problem,
            })
            .collect(),
    )
}
