//! The job worker: an SQS batch of job messages in, the ids of the messages
//! that failed out (`ReportBatchItemFailures`), so SQS retries only those and,
//! after `maxReceiveCount`, moves them to the dead-letter queue. Each message
//! goes to `shared::domain::jobs::run`, which dispatches on its kind; every job
//! is idempotent.

use aws_lambda_events::event::sqs::{BatchItemFailure, SqsBatchResponse, SqsEvent};
use shared::deploy::{BATCH, Files, Function, Queue, READ, Trigger, WRITE};
use shared::domain::jobs::Env;
use shared::queue::JobMessage;
use shared::store::Store;
use tracing::Instrument;

/// Its Lambda function as the stack declares it (`shared::deploy`).
pub fn function() -> Function {
    Function::new(
        "job-worker",
        "Runs background jobs such as contact imports and bulk imports and exports (SQS)",
    )
    .actions(&[READ, BATCH, WRITE])
    .index()
    .timeout(300)
    .trigger(Trigger::Jobs)
    .sends(Queue::Jobs)
    .files(Files::Work)
}

pub async fn handle(store: &dyn Store, env: Env<'_>, event: SqsEvent) -> SqsBatchResponse {
    let mut response = SqsBatchResponse::default();
    for record in event.records {
        let id = record.message_id.clone().unwrap_or_default();
        let span = tracing::info_span!("job message", message_id = %id);
        let outcome = async {
            let body = record.body.as_deref().unwrap_or_default();
            let message: JobMessage =
                serde_json::from_str(body).map_err(|e| format!("not a job message: {e}"))?;
            let done = shared::domain::jobs::run(store, env, &message)
                .await
                .map_err(|e| e.to_string())?;
            tracing::info!(job = %message.job_id, kind = done.kind, summary = %done.summary, "job done");
            Ok::<(), String>(())
        }
        .instrument(span)
        .await;
        if let Err(error) = outcome {
            tracing::warn!(message_id = %id, %error, "job message failed");
            let mut failure = BatchItemFailure::default();
            failure.item_identifier = id;
            response.batch_item_failures.push(failure);
        }
    }
    response
}

/// When a run must stop to leave the invocation time to checkpoint and send
/// itself again: `margin` before the Lambda's deadline (ms since the epoch).
pub fn stop_by(deadline_ms: u64, margin: std::time::Duration) -> std::time::Instant {
    let now_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64);
    let left = std::time::Duration::from_millis(deadline_ms.saturating_sub(now_ms));
    std::time::Instant::now() + left.saturating_sub(margin)
}
