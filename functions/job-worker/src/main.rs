//! The job-worker Lambda: SQS events to the job runner, with partial
//! batch responses. The store, the queue and the files are built once per
//! cold start.

use aws_lambda_events::event::sqs::{SqsBatchResponse, SqsEvent};
use lambda_runtime::{Error, LambdaEvent, service_fn};
use shared::domain::jobs::Env;

/// Time left at the end of an invocation for a long job to checkpoint and
/// queue its next part.
const MARGIN: std::time::Duration = std::time::Duration::from_secs(15);

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Error> {
    shared::lambda::init_logs();
    let state = shared::lambda::state().await;
    // Jobs write within the workspace's write budget, paced at it.
    let store = state.paced_store();
    lambda_runtime::run(service_fn(move |event: LambdaEvent<SqsEvent>| {
        let (state, store) = (state.clone(), store.clone());
        async move {
            let env = Env {
                queue: state.queue.as_deref(),
                files: state.files.as_deref(),
                deadline: Some(job_worker::stop_by(event.context.deadline, MARGIN)),
            };
            Ok::<SqsBatchResponse, Error>(
                job_worker::handle(store.as_ref(), env, event.payload).await,
            )
        }
    }))
    .await
}
