//! The import queue: `POST /v3/contacts/import` records a job and sends its id
//! here; the import worker creates the contacts. On AWS it is SQS (feature
//! `sqs`) and the `import-worker` Lambda; locally (`crm serve`, tests) the same
//! worker code runs in-process behind the same trait.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use tokio::sync::mpsc;

use crate::store::SharedStore;

/// The body of one queue message: which job to run. The contacts themselves are
/// in the table (the job's chunks), so a message is tiny whatever the batch.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct ImportMessage {
    pub workspace_id: u64,
    pub job_id: String,
}

#[async_trait]
pub trait ImportQueue: Send + Sync + 'static {
    async fn send(&self, message: &ImportMessage) -> Result<(), String>;
}

pub type SharedQueue = Arc<dyn ImportQueue>;

/// In-process queue: a task that runs the worker on each message, retrying a
/// failed run (as SQS would redeliver) a few times.
pub struct LocalQueue {
    tx: mpsc::UnboundedSender<ImportMessage>,
}

impl LocalQueue {
    pub fn start(store: SharedStore) -> Self {
        let (tx, mut rx) = mpsc::unbounded_channel::<ImportMessage>();
        tokio::spawn(async move {
            while let Some(message) = rx.recv().await {
                let store = store.clone();
                tokio::spawn(async move {
                    for attempt in 1..=5u64 {
                        match crate::domain::imports::process(store.as_ref(), &message).await {
                            Ok(_) => break,
                            Err(e) => {
                                tracing::warn!(job = %message.job_id, attempt, error = %e, "import run failed");
                                tokio::time::sleep(Duration::from_millis(200 * attempt)).await;
                            }
                        }
                    }
                });
            }
        });
        Self { tx }
    }
}

#[async_trait]
impl ImportQueue for LocalQueue {
    async fn send(&self, message: &ImportMessage) -> Result<(), String> {
        self.tx
            .send(message.clone())
            .map_err(|_| "the local import worker stopped".to_owned())
    }
}

/// SQS: one message per job.
#[cfg(feature = "sqs")]
pub struct SqsQueue {
    client: aws_sdk_sqs::Client,
    url: String,
}

#[cfg(feature = "sqs")]
impl SqsQueue {
    pub fn new(client: aws_sdk_sqs::Client, url: impl Into<String>) -> Self {
        Self {
            client,
            url: url.into(),
        }
    }
}

#[cfg(feature = "sqs")]
#[async_trait]
impl ImportQueue for SqsQueue {
    async fn send(&self, message: &ImportMessage) -> Result<(), String> {
        let body = serde_json::to_string(message).map_err(|e| e.to_string())?;
        self.client
            .send_message()
            .queue_url(&self.url)
            .message_body(body)
            .send()
            .await
            .map(|_| ())
            .map_err(|e| aws_sdk_sqs::error::DisplayErrorContext(&e).to_string())
    }
}
