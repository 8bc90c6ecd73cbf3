//! The job queue: anything slow or retried is a job, a record in the table (its
//! status, counts, errors) plus a small message naming its kind and id. On AWS
//! the queue is SQS (feature `sqs`) and the `job-worker` Lambda; locally
//! (`crm serve`, tests) the same runner runs in-process behind the same trait.
//! Delivery is at least once everywhere, so every job is idempotent.
//!
//! This module knows no kind of job: the runner that dispatches on the kind is
//! `crate::domain::jobs`, handed to the local queue by the host.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use tokio::sync::mpsc;

use crate::ids::WorkspaceId;
use crate::store::{SharedStore, Store};

/// The body of one queue message: which job to run. What the job works on is in
/// the table (the job's record), so a message is tiny whatever the job.
///
/// `kind` is absent only from messages queued before jobs had kinds (they were
/// all contact imports); the runner reads them as such.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct JobMessage {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    pub workspace_id: WorkspaceId,
    pub job_id: String,
}

impl JobMessage {
    pub fn new(
        kind: &str,
        workspace_id: impl Into<WorkspaceId>,
        job_id: impl Into<String>,
    ) -> Self {
        Self {
            kind: Some(kind.to_owned()),
            workspace_id: workspace_id.into(),
            job_id: job_id.into(),
        }
    }
}

#[async_trait]
pub trait JobQueue: Send + Sync + 'static {
    async fn send(&self, message: &JobMessage) -> Result<(), String>;
}

pub type SharedQueue = Arc<dyn JobQueue>;

/// Runs one job message to its end (or fails, to be delivered again).
#[async_trait]
pub trait JobRunner: Send + Sync + 'static {
    async fn run(&self, store: &dyn Store, message: &JobMessage) -> Result<(), String>;
}

/// In-process queue: a task that runs each message, retrying a failed run (as
/// SQS would redeliver) a few times with a growing pause.
pub struct LocalQueue {
    tx: mpsc::UnboundedSender<JobMessage>,
}

/// Runs of one message before the local queue gives up (SQS's `maxReceiveCount`).
pub const LOCAL_ATTEMPTS: u64 = 5;

impl LocalQueue {
    pub fn start(store: SharedStore, runner: Arc<dyn JobRunner>) -> Self {
        let (tx, mut rx) = mpsc::unbounded_channel::<JobMessage>();
        tokio::spawn(async move {
            while let Some(message) = rx.recv().await {
                let (store, runner) = (store.clone(), runner.clone());
                tokio::spawn(async move {
                    for attempt in 1..=LOCAL_ATTEMPTS {
                        match runner.run(store.as_ref(), &message).await {
                            Ok(()) => break,
                            Err(e) => {
                                tracing::warn!(job = %message.job_id, attempt, error = %e, "job run failed");
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
impl JobQueue for LocalQueue {
    async fn send(&self, message: &JobMessage) -> Result<(), String> {
        self.tx
            .send(message.clone())
            .map_err(|_| "the local job runner stopped".to_owned())
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
impl JobQueue for SqsQueue {
    async fn send(&self, message: &JobMessage) -> Result<(), String> {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_message_names_its_kind() {
        let m = JobMessage::new("contactImport", WorkspaceId(7), "01J");
        assert_eq!(
            serde_json::to_value(&m).unwrap(),
            serde_json::json!({ "kind": "contactImport", "workspaceId": 7, "jobId": "01J" })
        );
    }

    #[test]
    fn a_message_of_the_first_shape_still_reads() {
        let m: JobMessage = serde_json::from_str(r#"{"workspaceId":7,"jobId":"01J"}"#).unwrap();
        assert_eq!((m.kind, m.workspace_id), (None, WorkspaceId(7)));
    }
}
