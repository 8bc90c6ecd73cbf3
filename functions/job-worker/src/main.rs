//! The job-worker Lambda: SQS events to the job runner, with partial
//! batch responses. The store and its client are built once per cold start.

use aws_lambda_events::event::sqs::{SqsBatchResponse, SqsEvent};
use lambda_runtime::{Error, LambdaEvent, service_fn};

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Error> {
    shared::lambda::init_logs();
    let state = shared::lambda::state().await;
    let store = state.store.clone();
    lambda_runtime::run(service_fn(move |event: LambdaEvent<SqsEvent>| {
        let store = store.clone();
        async move {
            Ok::<SqsBatchResponse, Error>(job_worker::handle(store.as_ref(), event.payload).await)
        }
    }))
    .await
}
