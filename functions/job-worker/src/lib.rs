//! The job worker: an SQS batch of job messages in, the ids of the messages
//! that failed out (`ReportBatchItemFailures`), so SQS retries only those and,
//! after `maxReceiveCount`, moves them to the dead-letter queue. Each message
//! goes to `shared::domain::jobs::run`, which dispatches on its kind; every job
//! is idempotent.

use aws_lambda_events::event::sqs::{BatchItemFailure, SqsBatchResponse, SqsEvent};
use shared::queue::JobMessage;
use shared::store::Store;
use tracing::Instrument;

pub async fn handle(store: &dyn Store, event: SqsEvent) -> SqsBatchResponse {
    let mut response = SqsBatchResponse::default();
    for record in event.records {
        let id = record.message_id.clone().unwrap_or_default();
        let span = tracing::info_span!("job message", message_id = %id);
        let outcome = async {
            let body = record.body.as_deref().unwrap_or_default();
            let message: JobMessage =
                serde_json::from_str(body).map_err(|e| format!("not a job message: {e}"))?;
            let done = shared::domain::jobs::run(store, &message)
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
