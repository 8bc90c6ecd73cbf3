//! The import worker: an SQS batch of import messages in, the ids of the
//! messages that failed out (`ReportBatchItemFailures`), so SQS retries only
//! those and, after `maxReceiveCount`, moves them to the dead-letter queue.
//! Each message runs `shared::domain::imports::process`, which is idempotent.

use aws_lambda_events::event::sqs::{BatchItemFailure, SqsBatchResponse, SqsEvent};
use shared::queue::ImportMessage;
use shared::store::Store;
use tracing::Instrument;

pub async fn handle(store: &dyn Store, event: SqsEvent) -> SqsBatchResponse {
    let mut response = SqsBatchResponse::default();
    for record in event.records {
        let id = record.message_id.clone().unwrap_or_default();
        let span = tracing::info_span!("import message", message_id = %id);
        let outcome = async {
            let body = record.body.as_deref().unwrap_or_default();
            let message: ImportMessage = serde_json::from_str(body).map_err(|e| format!("not an import message: {e}"))?;
            let job = shared::domain::imports::process(store, &message)
                .await
                .map_err(|e| e.to_string())?;
            tracing::info!(job = %job.id, created = job.created, ignored = job.ignored, "import done");
            Ok::<(), String>(())
        }
        .instrument(span)
        .await;
        if let Err(error) = outcome {
            tracing::warn!(message_id = %id, %error, "import message failed");
            let mut failure = BatchItemFailure::default();
            failure.item_identifier = id;
            response.batch_item_failures.push(failure);
        }
    }
    response
}
