//! Writes: one item with its condition, or a transaction, each sent until
//! its outcome is known ([`super::attempts`]).

use std::collections::HashMap;

use aws_sdk_dynamodb::operation::delete_item::DeleteItemError;
use aws_sdk_dynamodb::operation::put_item::PutItemError;
use aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsError;
use aws_sdk_dynamodb::types::{
    AttributeValue, CancellationReason, ConditionCheck, Delete, Put, ReturnConsumedCapacity,
    ReturnValuesOnConditionCheckFailure, TransactWriteItem, Update,
};

use super::attempts::{Attempts, Failure, classify};
use super::{Attrs, DynamoStore, Rendered, invalid, non_empty};
use crate::store::*;

impl DynamoStore {
    /// A condition as the optional parts every request builder takes.
    pub(super) fn rendered(c: Option<Condition>) -> Rendered {
        match c {
            None => (None, None, None),
            Some(c) => {
                let (expr, values, names) = Self::condition(c);
                (Some(expr), non_empty(values), non_empty(names))
            }
        }
    }

    /// Renders a condition: (expression, values, names).
    fn condition(c: Condition) -> (String, Attrs, HashMap<String, String>) {
        match c {
            Condition::Exists => ("attribute_exists(pk)".into(), Attrs::new(), HashMap::new()),
            Condition::NotExists => (
                "attribute_not_exists(pk)".into(),
                Attrs::new(),
                HashMap::new(),
            ),
            Condition::VersionIs(v) => (
                "#version = :version".into(),
                HashMap::from([(":version".into(), AttributeValue::N(v.to_string()))]),
                HashMap::from([("#version".into(), VERSION.into())]),
            ),
        }
    }

    fn transact_item(&self, w: Write) -> Result<TransactWriteItem, StoreError> {
        let built = match w {
            Write::Put { item, condition } => {
                let (expr, values, names) = Self::rendered(condition);
                let put = Put::builder()
                    .table_name(&self.table)
                    .set_item(Some(Self::to_attrs(&item)?))
                    .set_condition_expression(expr)
                    .set_expression_attribute_values(values)
                    .set_expression_attribute_names(names);
                TransactWriteItem::builder().put(put.build().map_err(invalid)?)
            }
            Write::Delete { key, condition } => {
                let (expr, values, names) = Self::rendered(condition);
                let delete = Delete::builder()
                    .table_name(&self.table)
                    .set_key(Some(Self::key_attrs(&key)))
                    .set_condition_expression(expr)
                    .set_expression_attribute_values(values)
                    .set_expression_attribute_names(names);
                TransactWriteItem::builder().delete(delete.build().map_err(invalid)?)
            }
            Write::Check { key, condition } => {
                let (expr, values, names) = Self::rendered(Some(condition));
                let check = ConditionCheck::builder()
                    .table_name(&self.table)
                    .set_key(Some(Self::key_attrs(&key)))
                    .set_condition_expression(expr)
                    .set_expression_attribute_values(values)
                    .set_expression_attribute_names(names);
                TransactWriteItem::builder().condition_check(check.build().map_err(invalid)?)
            }
            Write::Add {
                key,
                attribute,
                delta,
            } => {
                let update = Update::builder()
                    .table_name(&self.table)
                    .set_key(Some(Self::key_attrs(&key)))
                    .update_expression("ADD #a :d")
                    .expression_attribute_names("#a", attribute)
                    .expression_attribute_values(":d", AttributeValue::N(delta.to_string()));
                TransactWriteItem::builder().update(update.build().map_err(invalid)?)
            }
        };
        Ok(built.build())
    }

    /// One write outside a transaction: half the cost of a one-item
    /// transaction. An `ADD` is not idempotent and a lone check needs a
    /// transaction: both go as one, with its token.
    pub(super) async fn write_one(&self, w: Write) -> Result<(), StoreError> {
        if matches!(w, Write::Add { .. } | Write::Check { .. }) {
            return self.transact(vec![w]).await;
        }
        let mut attempts = Attempts::new();
        loop {
            Metrics::count(&self.metrics.writes, 1);
            let failure = match self.send_one(&w).await {
                Ok(()) => return Ok(()),
                Err(One::ConditionFailed(found)) => {
                    // Sent again after an answer that never came: the failed
                    // condition may be the first attempt's own work. A put that
                    // finds its own item, or a delete that finds none, landed.
                    if attempts.resent() && landed(&w, found)? {
                        return Ok(());
                    }
                    return Err(StoreError::ConditionFailed { index: 0 });
                }
                Err(One::Failed(failure)) => failure,
            };
            attempts.after(failure).await?;
        }
    }

    /// One attempt of a put or a delete. A failed condition comes with the
    /// item as it stands (`ALL_OLD`, at no cost).
    async fn send_one(&self, w: &Write) -> Result<(), One> {
        let all_old = ReturnValuesOnConditionCheckFailure::AllOld;
        match w {
            Write::Put { item, condition } => {
                let (expr, values, names) = Self::rendered(*condition);
                self.writer
                    .put_item()
                    .table_name(&self.table)
                    .set_item(Some(Self::to_attrs(item).map_err(One::fatal)?))
                    .set_condition_expression(expr)
                    .set_expression_attribute_values(values)
                    .set_expression_attribute_names(names)
                    .return_values_on_condition_check_failure(all_old)
                    .return_consumed_capacity(ReturnConsumedCapacity::Total)
                    .send()
                    .await
                    .map(|out| self.consumed(out.consumed_capacity(), true))
                    .map_err(|e| match e.as_service_error() {
                        Some(PutItemError::ConditionalCheckFailedException(failed)) => {
                            One::ConditionFailed(failed.item().cloned())
                        }
                        _ => One::Failed(classify(e)),
                    })
            }
            Write::Delete { key, condition } => {
                let (expr, values, names) = Self::rendered(*condition);
                self.writer
                    .delete_item()
                    .table_name(&self.table)
                    .set_key(Some(Self::key_attrs(key)))
                    .set_condition_expression(expr)
                    .set_expression_attribute_values(values)
                    .set_expression_attribute_names(names)
                    .return_values_on_condition_check_failure(all_old)
                    .return_consumed_capacity(ReturnConsumedCapacity::Total)
                    .send()
                    .await
                    .map(|out| self.consumed(out.consumed_capacity(), true))
                    .map_err(|e| match e.as_service_error() {
                        Some(DeleteItemError::ConditionalCheckFailedException(failed)) => {
                            One::ConditionFailed(failed.item().cloned())
                        }
                        _ => One::Failed(classify(e)),
                    })
            }
            // `write_one` sends these as transactions.
            Write::Add { .. } | Write::Check { .. } => Err(One::fatal(StoreError::Invalid(
                "an ADD or a check sent as a single write".into(),
            ))),
        }
    }

    /// A transaction, every attempt under one `ClientRequestToken`: DynamoDB
    /// answers a resend of a transaction that landed (within 10 minutes) as
    /// done, without applying it again, so a lost answer never becomes a
    /// second effect. A failed condition is final for the same reason: had an
    /// earlier attempt landed, this one would have been answered as done.
    pub(super) async fn transact(&self, writes: Vec<Write>) -> Result<(), StoreError> {
        let items = writes
            .into_iter()
            .map(|w| self.transact_item(w))
            .collect::<Result<Vec<_>, _>>()?;
        let token = crate::ids::new_ulid();
        let mut attempts = Attempts::new();
        loop {
            Metrics::count(&self.metrics.transactions, 1);
            let result = self
                .writer
                .transact_write_items()
                .set_transact_items(Some(items.clone()))
                .client_request_token(&token)
                .return_consumed_capacity(ReturnConsumedCapacity::Total)
                .send()
                .await;
            let err = match result {
                Ok(out) => {
                    for c in out.consumed_capacity() {
                        self.consumed(Some(c), true);
                    }
                    return Ok(());
                }
                Err(e) => e,
            };
            let failure = match err.as_service_error() {
                Some(TransactWriteItemsError::TransactionCanceledException(cancel)) => {
                    cancelled(cancel.cancellation_reasons(), err.to_string())?
                }
                _ => classify(err),
            };
            attempts.after(failure).await?;
        }
    }
}

/// A failed single write: its condition (with the item as it stands), or another failure.
enum One {
    ConditionFailed(Option<Attrs>),
    Failed(Failure),
}

impl One {
    fn fatal(e: StoreError) -> One {
        One::Failed(Failure::Final(e))
    }
}

/// Whether a write whose condition failed on a resend finds its own work.
fn landed(w: &Write, found: Option<Attrs>) -> Result<bool, StoreError> {
    Ok(match (w, found) {
        // Compared as read back: DynamoDB writes numbers in a canonical form.
        (Write::Put { item, .. }, Some(found)) => {
            DynamoStore::from_attrs(found)?
                == DynamoStore::from_attrs(DynamoStore::to_attrs(item)?)?
        }
        (Write::Delete { .. }, None) => true,
        _ => false,
    })
}

/// A cancelled transaction: its failed condition (final), or a conflict or
/// throttling (nothing written: send again), or a refusal no retry changes.
fn cancelled(reasons: &[CancellationReason], message: String) -> Result<Failure, StoreError> {
    if let Some(index) = reasons
        .iter()
        .position(|r| r.code() == Some("ConditionalCheckFailed"))
    {
        return Err(StoreError::ConditionFailed { index });
    }
    let retried = |r: &CancellationReason| {
        matches!(
            r.code(),
            Some("TransactionConflict" | "ThrottlingError" | "ProvisionedThroughputExceeded")
        )
    };
    if reasons.iter().any(retried) {
        Ok(Failure::NotApplied(message))
    } else {
        Ok(Failure::Final(StoreError::Other(message)))
    }
}
