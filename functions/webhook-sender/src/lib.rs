//! The webhook sender: a batch of delivery messages in, each run side by
//! side (a slow endpoint holds no other delivery back), the ids of those
//! that failed out (`ReportBatchItemFailures`). An endpoint's failing
//! answer is no failure here: the delivery records it and queues its next
//! attempt itself. A message fails only when the table or the queue did,
//! and after five receipts it moves to the dead-letter queue.

use aws_lambda_events::event::sqs::{BatchItemFailure, SqsBatchResponse, SqsEvent, SqsMessage};
use shared::deploy::{BATCH, Function, Queue, READ, Trigger, WRITE};
use shared::outbound::Settings;
use shared::queue::{JobMessage, JobQueue};
use shared::store::Store;

/// Its Lambda function as the stack declares it (`shared::deploy`).
pub fn function() -> Function {
    Function::new(
        "webhook-sender",
        "Makes webhook deliveries and schedules their retries (SQS)",
    )
    .actions(&[READ, BATCH, WRITE])
    .sends(Queue::Deliveries)
    .timeout(30)
    .trigger(Trigger::Deliveries)
}

pub async fn handle(
    store: &dyn Store,
    queue: &dyn JobQueue,
    settings: &Settings,
    event: SqsEvent,
) -> SqsBatchResponse {
    let runs = event
        .records
        .iter()
        .map(|record| run(store, queue, settings, record));
    let mut response = SqsBatchResponse::default();
    for failed in futures_util::future::join_all(runs)
        .await
        .into_iter()
        .flatten()
    {
        let mut failure = BatchItemFailure::default();
        failure.item_identifier = failed;
        response.batch_item_failures.push(failure);
    }
    response
}

/// One message: `Some(its id)` when it failed.
async fn run(
    store: &dyn Store,
    queue: &dyn JobQueue,
    settings: &Settings,
    record: &SqsMessage,
) -> Option<String> {
    let id = record.message_id.clone().unwrap_or_default();
    let outcome = async {
        let body = record.body.as_deref().unwrap_or_default();
        let message: JobMessage =
            serde_json::from_str(body).map_err(|e| format!("not a delivery message: {e}"))?;
        shared::domain::webhooks::deliver(store, queue, settings, &message)
            .await
            .map_err(|e| e.to_string())
    }
    .await;
    match outcome {
        Ok(()) => None,
        Err(error) => {
            tracing::warn!(message_id = %id, %error, "delivery message failed");
            Some(id)
        }
    }
}
