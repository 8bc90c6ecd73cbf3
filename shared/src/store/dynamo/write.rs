//! Writes: one item with its condition, or a transaction, with conflicts retried.

use std::collections::HashMap;

use aws_sdk_dynamodb::error::ProvideErrorMetadata;
use aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsError;
use aws_sdk_dynamodb::types::{
    AttributeValue, ConditionCheck, Delete, Put, ReturnConsumedCapacity, TransactWriteItem, Update,
};

use super::{
    Attrs, CONFLICT_RETRIES, DynamoStore, Rendered, backoff, invalid, non_empty, sdk_error,
};
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

    /// One write outside a transaction: half the cost of a one-item transaction.
    pub(super) async fn write_one(&self, w: Write) -> Result<(), StoreError> {
        Metrics::count(&self.metrics.writes, 1);
        let failed =
            |e: &dyn ProvideErrorMetadata| e.code() == Some("ConditionalCheckFailedException");
        match w {
            Write::Put { item, condition } => {
                let (expr, values, names) = Self::rendered(condition);
                let sent = self
                    .client
                    .put_item()
                    .table_name(&self.table)
                    .set_item(Some(Self::to_attrs(&item)?))
                    .set_condition_expression(expr)
                    .set_expression_attribute_values(values)
                    .set_expression_attribute_names(names)
                    .return_consumed_capacity(ReturnConsumedCapacity::Total)
                    .send()
                    .await;
                match sent {
                    Ok(out) => {
                        self.consumed(out.consumed_capacity(), true);
                        Ok(())
                    }
                    Err(e) if failed(&e) => Err(StoreError::ConditionFailed { index: 0 }),
                    Err(e) => Err(sdk_error(e)),
                }
            }
            Write::Delete { key, condition } => {
                let (expr, values, names) = Self::rendered(condition);
                let sent = self
                    .client
                    .delete_item()
                    .table_name(&self.table)
                    .set_key(Some(Self::key_attrs(&key)))
                    .set_condition_expression(expr)
                    .set_expression_attribute_values(values)
                    .set_expression_attribute_names(names)
                    .return_consumed_capacity(ReturnConsumedCapacity::Total)
                    .send()
                    .await;
                match sent {
                    Ok(out) => {
                        self.consumed(out.consumed_capacity(), true);
                        Ok(())
                    }
                    Err(e) if failed(&e) => Err(StoreError::ConditionFailed { index: 0 }),
                    Err(e) => Err(sdk_error(e)),
                }
            }
            Write::Add {
                key,
                attribute,
                delta,
            } => {
                let out = self
                    .client
                    .update_item()
                    .table_name(&self.table)
                    .set_key(Some(Self::key_attrs(&key)))
                    .update_expression("ADD #a :d")
                    .expression_attribute_names("#a", attribute)
                    .expression_attribute_values(":d", AttributeValue::N(delta.to_string()))
                    .return_consumed_capacity(ReturnConsumedCapacity::Total)
                    .send()
                    .await
                    .map_err(sdk_error)?;
                self.consumed(out.consumed_capacity(), true);
                Ok(())
            }
            check @ Write::Check { .. } => self.transact(vec![check]).await,
        }
    }

    pub(super) async fn transact(&self, writes: Vec<Write>) -> Result<(), StoreError> {
        let items = writes
            .into_iter()
            .map(|w| self.transact_item(w))
            .collect::<Result<Vec<_>, _>>()?;
        let mut attempt = 0;
        loop {
            Metrics::count(&self.metrics.transactions, 1);
            let result = self
                .client
                .transact_write_items()
                .set_transact_items(Some(items.clone()))
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
            if let Some(TransactWriteItemsError::TransactionCanceledException(cancel)) =
                err.as_service_error()
            {
                let reasons = cancel.cancellation_reasons();
                if let Some(index) = reasons
                    .iter()
                    .position(|r| r.code() == Some("ConditionalCheckFailed"))
                {
                    return Err(StoreError::ConditionFailed { index });
                }
                let conflict = reasons
                    .iter()
                    .any(|r| matches!(r.code(), Some("TransactionConflict" | "ThrottlingError")));
                if conflict && attempt < CONFLICT_RETRIES {
                    attempt += 1;
                    tokio::time::sleep(backoff(attempt)).await;
                    continue;
                }
                if conflict {
                    return Err(StoreError::Unavailable(
                        "transaction conflicts persisted".into(),
                    ));
                }
            }
            if err.code() == Some("TransactionInProgressException") && attempt < CONFLICT_RETRIES {
                attempt += 1;
                tokio::time::sleep(backoff(attempt)).await;
                continue;
            }
            return Err(sdk_error(err));
        }
    }
}
