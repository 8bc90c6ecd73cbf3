//! The webhook-dispatcher Lambda: stream batches to `handle`. The store and
//! the delivery queue are built once per cold start.

use aws_lambda_events::event::dynamodb::Event;
use aws_lambda_events::event::streams::DynamoDbEventResponse;
use lambda_runtime::{Error, LambdaEvent, service_fn};

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Error> {
    let (state, queue) = shared::lambda::delivering().await?;
    let store = state.store.clone();
    lambda_runtime::run(service_fn(move |event: LambdaEvent<Event>| {
        let (store, queue) = (store.clone(), queue.clone());
        async move {
            Ok::<DynamoDbEventResponse, Error>(
                webhook_dispatcher::handle(store.as_ref(), queue.as_ref(), event.payload).await,
            )
        }
    }))
    .await
}
