//! The webhook dispatcher: the table's stream, filtered to new event items,
//! in; for each event and each endpoint that wants it, one delivery and one
//! message on the delivery queue (`shared::domain::webhooks::dispatch`).
//!
//! A batch's events are dispatched workspace by workspace (one read of a
//! workspace's endpoints each). When a workspace fails, the batch answers
//! the earliest sequence number of its events as failed: Lambda sends the
//! stream again from there, and what was dispatched already is not
//! dispatched twice (a delivery is keyed by its event).

use shared::deploy::{Function, Queue, READ, Trigger};
use std::collections::BTreeMap;

use aws_lambda_events::event::dynamodb::Event as StreamEvent;
use aws_lambda_events::event::streams::{DynamoDbBatchItemFailure, DynamoDbEventResponse};
use shared::ids::WorkspaceId;
use shared::queue::JobQueue;
use shared::record::{Event, StoredEvent};
use shared::store::Store;

/// Its Lambda function as the stack declares it (`shared::deploy`).
pub fn function() -> Function {
    Function::new(
        "webhook-dispatcher",
        "Queues one webhook delivery per new event and matching endpoint (table stream)",
    )
    .actions(&[READ, &["dynamodb:PutItem"]])
    .sends(Queue::Deliveries)
    .timeout(60)
    .trigger(Trigger::Stream)
}

pub async fn handle(
    store: &dyn Store,
    queue: &dyn JobQueue,
    batch: StreamEvent,
) -> DynamoDbEventResponse {
    let mut by_workspace: BTreeMap<WorkspaceId, Vec<(String, Event)>> = BTreeMap::new();
    for record in batch.records {
        let sequence = record.change.sequence_number.clone().unwrap_or_default();
        match serde_dynamo::from_item::<_, StoredEvent>(record.change.new_image) {
            Ok(stored) => by_workspace
                .entry(stored.event.workspace_id)
                .or_default()
                .push((sequence, stored.event)),
            // The filter lets only event items through: anything else is
            // logged and passed over, never retried for ever.
            Err(e) => tracing::error!(sequence, error = %e, "a stream record that is no event"),
        }
    }
    let mut failed: Option<String> = None;
    for (ws, records) in by_workspace {
        let events: Vec<Event> = records.iter().map(|(_, e)| e.clone()).collect();
        match shared::domain::webhooks::dispatch(store, queue, ws, &events).await {
            Ok(queued) => {
                tracing::info!(workspace = %ws, events = events.len(), queued, "dispatched")
            }
            Err(e) => {
                tracing::warn!(workspace = %ws, error = %e, "dispatch failed; the stream sends it again");
                let first = records.iter().map(|(s, _)| s.clone()).min();
                failed = match (failed, first) {
                    (Some(a), Some(b)) => Some(a.min(b)),
                    (a, b) => a.or(b),
                };
            }
        }
    }
    let mut response = DynamoDbEventResponse::default();
    if let Some(sequence) = failed {
        let mut failure = DynamoDbBatchItemFailure::default();
        failure.item_identifier = Some(sequence);
        response.batch_item_failures.push(failure);
    }
    response
}
