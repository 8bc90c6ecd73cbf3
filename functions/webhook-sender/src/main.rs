//! The webhook-sender Lambda: delivery-queue batches to `handle`. The store,
//! the queue (for the retries) and the settings are built once per cold start.

use aws_lambda_events::event::sqs::{SqsBatchResponse, SqsEvent};
use lambda_runtime::{Error, LambdaEvent, service_fn};

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Error> {
    let (state, queue) = shared::lambda::delivering().await?;
    let (store, settings) = (state.store.clone(), state.webhooks.clone());
    lambda_runtime::run(service_fn(move |event: LambdaEvent<SqsEvent>| {
        let (store, queue, settings) = (store.clone(), queue.clone(), settings.clone());
        async move {
            Ok::<SqsBatchResponse, Error>(
                webhook_sender::handle(store.as_ref(), queue.as_ref(), &settings, event.payload)
                    .await,
            )
        }
    }))
    .await
}
