//! The DynamoDB store: the single table of the design (`pk`/`sk` plus the
//! secondary indexes of [`crate::keys::GSIS`]).
//!
//! Every call asks for `ReturnConsumedCapacity=TOTAL` and adds it to [`Metrics`],
//! so tests against DynamoDB Local assert what an endpoint costs, and the request
//! log shows it in production.

use std::collections::HashMap;
use std::time::Duration;

use async_trait::async_trait;
use aws_sdk_dynamodb::Client;
use aws_sdk_dynamodb::error::{DisplayErrorContext, ProvideErrorMetadata, SdkError};
use aws_sdk_dynamodb::types::{
    AttributeValue, ConsumedCapacity, KeysAndAttributes, ReturnConsumedCapacity,
};
use serde_dynamo::aws_sdk_dynamodb_1 as convert;

mod attempts;
mod table;
pub use table::{STREAM_VIEW, Stream};
mod write;

use crate::store::*;

type Attrs = HashMap<String, AttributeValue>;
/// (condition expression, expression values, expression names).
type Rendered = (
    Option<String>,
    Option<Attrs>,
    Option<HashMap<String, String>>,
);

pub struct DynamoStore {
    client: Client,
    /// The same client without the SDK's retries: writes make their own
    /// ([`attempts`]), so that every attempt of one write is sent alike.
    writer: Client,
    table: String,
    metrics: Metrics,
}

/// Unprocessed keys of a batch get are asked for again this often.
const BATCH_RETRIES: u32 = 10;

impl DynamoStore {
    pub fn new(client: Client, table: impl Into<String>) -> Self {
        let writer = client
            .config()
            .to_builder()
            .retry_config(aws_sdk_dynamodb::config::retry::RetryConfig::disabled())
            .build();
        Self {
            writer: Client::from_conf(writer),
            client,
            table: table.into(),
            metrics: Metrics::default(),
        }
    }

    pub fn client(&self) -> &Client {
        &self.client
    }

    pub fn table(&self) -> &str {
        &self.table
    }

    fn consumed(&self, capacity: Option<&ConsumedCapacity>, write: bool) {
        let units: f64 = capacity.and_then(|c| c.capacity_units()).unwrap_or(0.0);
        let counter = if write {
            &self.metrics.write_milli_units
        } else {
            &self.metrics.read_milli_units
        };
        Metrics::units(counter, units);
    }

    fn key_attrs(key: &Key) -> Attrs {
        HashMap::from([
            (PK.to_owned(), AttributeValue::S(key.pk.clone())),
            (SK.to_owned(), AttributeValue::S(key.sk.clone())),
        ])
    }

    fn to_attrs(item: &Item) -> Result<Attrs, StoreError> {
        convert::to_item(item).map_err(|e| StoreError::Invalid(format!("item to DynamoDB: {e}")))
    }

    fn from_attrs(attrs: Attrs) -> Result<Item, StoreError> {
        convert::from_item(attrs).map_err(|e| StoreError::Other(format!("item from DynamoDB: {e}")))
    }
}

fn non_empty<K, V>(map: HashMap<K, V>) -> Option<HashMap<K, V>> {
    (!map.is_empty()).then_some(map)
}

fn invalid(e: impl std::fmt::Display) -> StoreError {
    StoreError::Invalid(e.to_string())
}

fn backoff(attempt: u32) -> Duration {
    let base = 10u64 << attempt.min(6);
    Duration::from_millis(base / 2 + rand::random::<u64>() % base)
}

/// Classifies an SDK error: throttling and transport failures (after the SDK's own
/// retries) are "unavailable" (503); an oversized item is 413; the rest is a bug.
fn sdk_error<E, R>(err: SdkError<E, R>) -> StoreError
where
    E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
    R: std::fmt::Debug,
{
    let unavailable = matches!(
        err,
        SdkError::DispatchFailure(_) | SdkError::TimeoutError(_) | SdkError::ResponseError(_)
    ) || matches!(
        err.code(),
        Some(
            "ProvisionedThroughputExceededException"
                | "ThrottlingException"
                | "RequestLimitExceeded"
                | "InternalServerError"
                | "ServiceUnavailable"
        )
    );
    let message = format!("{}", DisplayErrorContext(&err));
    if unavailable {
        StoreError::Unavailable(message)
    } else if err.code() == Some("ValidationException") && message.contains("size") {
        StoreError::ItemTooLarge
    } else {
        StoreError::Other(message)
    }
}

#[async_trait]
impl Store for DynamoStore {
    async fn get(&self, key: &Key, consistent: bool) -> Result<Option<Item>, StoreError> {
        Metrics::count(&self.metrics.gets, 1);
        let out = self
            .client
            .get_item()
            .table_name(&self.table)
            .set_key(Some(Self::key_attrs(key)))
            .consistent_read(consistent)
            .return_consumed_capacity(ReturnConsumedCapacity::Total)
            .send()
            .await
            .map_err(sdk_error)?;
        self.consumed(out.consumed_capacity(), false);
        out.item.map(Self::from_attrs).transpose()
    }

    async fn batch_get(&self, keys: &[Key]) -> Result<Vec<Item>, StoreError> {
        if keys.len() > MAX_BATCH_GET {
            return Err(StoreError::Invalid(format!(
                "batch get of {} keys",
                keys.len()
            )));
        }
        let mut items = Vec::with_capacity(keys.len());
        let mut pending: Vec<Attrs> = keys.iter().map(Self::key_attrs).collect();
        let mut attempt = 0;
        while !pending.is_empty() {
            Metrics::count(&self.metrics.batch_gets, 1);
            let request = KeysAndAttributes::builder()
                .set_keys(Some(std::mem::take(&mut pending)))
                .build()
                .map_err(invalid)?;
            let out = self
                .client
                .batch_get_item()
                .request_items(&self.table, request)
                .return_consumed_capacity(ReturnConsumedCapacity::Total)
                .send()
                .await
                .map_err(sdk_error)?;
            for c in out.consumed_capacity() {
                self.consumed(Some(c), false);
            }
            let mut responses = out.responses.unwrap_or_default();
            for attrs in responses.remove(&self.table).unwrap_or_default() {
                items.push(Self::from_attrs(attrs)?);
            }
            // Unprocessed keys come back under load: retry them with backoff.
            if let Some(mut unprocessed) = out.unprocessed_keys
                && let Some(rest) = unprocessed.remove(&self.table)
            {
                pending = rest.keys;
                if !pending.is_empty() {
                    attempt += 1;
                    if attempt > BATCH_RETRIES {
                        return Err(StoreError::Unavailable(
                            "batch get kept unprocessed keys".into(),
                        ));
                    }
                    tokio::time::sleep(backoff(attempt)).await;
                }
            }
        }
        Ok(items)
    }

    async fn query(&self, query: &Query) -> Result<Page, StoreError> {
        // An empty range (a window that ends before it starts) holds nothing;
        // DynamoDB would refuse BETWEEN with the bounds reversed.
        if let SkRange::Between(low, high) = &query.range
            && low > high
        {
            return Ok(Page::default());
        }
        Metrics::count(&self.metrics.queries, 1);
        let mut names = HashMap::from([("#pk".to_owned(), query.index.pk.to_owned())]);
        let mut values = HashMap::from([(":pk".to_owned(), AttributeValue::S(query.pk.clone()))]);
        let mut condition = "#pk = :pk".to_owned();
        let mut range = |expr: &str, bounds: &[&String]| {
            names.insert("#sk".into(), query.index.sk.into());
            for (name, value) in [":a", ":b"].iter().zip(bounds) {
                values.insert((*name).into(), AttributeValue::S((*value).clone()));
            }
            condition.push_str(" AND ");
            condition.push_str(expr);
        };
        match &query.range {
            SkRange::All => {}
            SkRange::Prefix(p) => range("begins_with(#sk, :a)", &[p]),
            SkRange::Between(a, b) => range("#sk BETWEEN :a AND :b", &[a, b]),
            SkRange::AtLeast(a) => range("#sk >= :a", &[a]),
            SkRange::AtMost(b) => range("#sk <= :a", &[b]),
        }
        let mut req = self
            .client
            .query()
            .table_name(&self.table)
            .set_index_name(query.index.name.map(str::to_owned))
            .key_condition_expression(condition)
            .scan_index_forward(query.forward)
            .set_limit(query.limit.map(|l| l.min(i32::MAX as usize) as i32))
            .set_exclusive_start_key(query.start_after.as_ref().map(Self::to_attrs).transpose()?)
            .return_consumed_capacity(ReturnConsumedCapacity::Total);
        if query.keys_only {
            let mut projected = vec![("#kp", PK), ("#ks", SK)];
            if query.index.name.is_some() {
                projected.extend([("#ip", query.index.pk), ("#is", query.index.sk)]);
            }
            req = req.projection_expression(
                projected
                    .iter()
                    .map(|(n, _)| *n)
                    .collect::<Vec<_>>()
                    .join(", "),
            );
            for (placeholder, name) in projected {
                names.insert(placeholder.into(), name.into());
            }
        }
        let out = req
            .set_expression_attribute_names(Some(names))
            .set_expression_attribute_values(Some(values))
            .send()
            .await
            .map_err(sdk_error)?;
        self.consumed(out.consumed_capacity(), false);
        Metrics::count(&self.metrics.scanned, out.scanned_count().max(0) as u64);
        let items = out
            .items
            .unwrap_or_default()
            .into_iter()
            .map(Self::from_attrs)
            .collect::<Result<Vec<_>, _>>()?;
        let last_key = out.last_evaluated_key.map(Self::from_attrs).transpose()?;
        Ok(Page { items, last_key })
    }

    async fn write(&self, writes: Vec<Write>) -> Result<(), StoreError> {
        check_writes(writes.iter())?;
        Metrics::count(&self.metrics.commits, 1);
        if writes.len() == 1 {
            let w = writes.into_iter().next().expect("one write");
            self.write_one(w).await
        } else {
            self.transact(writes).await
        }
    }

    fn metrics(&self) -> &Metrics {
        &self.metrics
    }

    fn backend(&self) -> &'static str {
        "dynamodb"
    }
}
