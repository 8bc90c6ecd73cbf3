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
use crate::keys;
use crate::store::{Index, Item, PK, Query, SK, SharedStore, SkRange, Store, TYPE, Write};

/// The body of one queue message: which job to run. What the job works on is in
/// the table (the job's record), so a message is tiny whatever the job.
///
/// `kind` is absent only from messages queued before jobs had kinds (they were
/// all contact imports); the runner reads them as such.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, schemars::JsonSchema)]
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
    async fn send(&self, message: &JobMessage) -> Result<(), String> {
        self.send_after(message, Duration::ZERO).await
    }

    /// Sends `message` to be run no sooner than `delay` from now. SQS holds
    /// a message at most 15 minutes: a job that must wait longer reads its
    /// own due time when it runs and sends itself again (webhook retries).
    async fn send_after(&self, message: &JobMessage, delay: Duration) -> Result<(), String>;
}

pub type SharedQueue = Arc<dyn JobQueue>;

/// Runs one job message to its end (or fails, to be delivered again). `queue`
/// is the queue the message came from, for a job that sends a follow-up.
#[async_trait]
pub trait JobRunner: Send + Sync + 'static {
    async fn run(
        &self,
        store: &dyn Store,
        queue: &dyn JobQueue,
        message: &JobMessage,
    ) -> Result<(), String>;
}

/// In-process queue (`crm serve`, tests): the same at-least-once semantics as
/// SQS. A message is written to the store (`keys::LOCAL_JOBS`) before `send`
/// answers, and removed once its run succeeded; on start, every message left
/// there (a job accepted before a stop or a crash) is run again, at its due
/// time. A run that fails is retried with a growing pause; after
/// [`LOCAL_ATTEMPTS`] the message moves to `keys::LOCAL_DEAD_JOBS`, as SQS
/// moves it to its dead-letter queue.
#[derive(Clone)]
pub struct LocalQueue {
    tx: mpsc::UnboundedSender<Queued>,
    store: SharedStore,
}

/// A message the local runner holds: its stored id, when it is due.
type Queued = (String, JobMessage, Option<chrono::DateTime<chrono::Utc>>);

/// Runs of one message before the local queue gives up (SQS's `maxReceiveCount`).
pub const LOCAL_ATTEMPTS: u64 = 5;

impl LocalQueue {
    /// Starts the runner; the messages left from the last run are read first
    /// (one Query), so they are queued before anything new.
    pub async fn start(store: SharedStore, runner: Arc<dyn JobRunner>) -> Self {
        let (tx, mut rx) = mpsc::unbounded_channel::<Queued>();
        match left_over(store.as_ref()).await {
            Ok(messages) => {
                if !messages.is_empty() {
                    tracing::info!(
                        jobs = messages.len(),
                        "running the jobs left from the last run"
                    );
                }
                for m in messages {
                    let _ = tx.send(m);
                }
            }
            Err(e) => tracing::error!(error = %e, "could not read the jobs left from the last run"),
        }
        let queue = Self { tx, store };
        let running = queue.clone();
        tokio::spawn(async move {
            while let Some((id, message, due)) = rx.recv().await {
                let (queue, runner) = (running.clone(), runner.clone());
                tokio::spawn(async move {
                    if let Some(wait) = due.and_then(|due| (due - chrono::Utc::now()).to_std().ok())
                    {
                        tokio::time::sleep(wait).await;
                    }
                    queue.run(runner.as_ref(), &id, &message).await;
                });
            }
        });
        queue
    }

    /// Runs one message until it succeeds or has failed [`LOCAL_ATTEMPTS`] times.
    async fn run(&self, runner: &dyn JobRunner, id: &str, message: &JobMessage) {
        let store = self.store.as_ref();
        for attempt in 1..=LOCAL_ATTEMPTS {
            match runner.run(store, self, message).await {
                Ok(()) => {
                    let _ = store
                        .write(vec![Write::Delete {
                            key: keys::local_job(id),
                            condition: None,
                        }])
                        .await;
                    return;
                }
                Err(e) => {
                    tracing::warn!(job = %message.job_id, attempt, error = %e, "job run failed");
                    tokio::time::sleep(Duration::from_millis(200 * attempt)).await;
                }
            }
        }
        tracing::error!(job = %message.job_id, "job failed {LOCAL_ATTEMPTS} times; kept in {}", keys::LOCAL_DEAD_JOBS);
        if let Ok(item) = job_item(keys::LOCAL_DEAD_JOBS, id, message, None) {
            let _ = store
                .write(vec![
                    Write::Put {
                        item,
                        condition: None,
                    },
                    Write::Delete {
                        key: keys::local_job(id),
                        condition: None,
                    },
                ])
                .await;
        }
    }
}

/// The stored form of a local job message.
fn job_item(
    partition: &str,
    id: &str,
    message: &JobMessage,
    due: Option<chrono::DateTime<chrono::Utc>>,
) -> Result<Item, String> {
    let mut item = Item::new();
    item.insert(PK.into(), partition.into());
    item.insert(SK.into(), id.into());
    item.insert(TYPE.into(), "LocalJob".into());
    item.insert(
        "message".into(),
        serde_json::to_value(message).map_err(|e| e.to_string())?,
    );
    if let Some(due) = due {
        item.insert("due".into(), due.timestamp_millis().into());
    }
    Ok(item)
}

/// The messages not run yet, oldest first.
async fn left_over(store: &dyn Store) -> Result<Vec<Queued>, String> {
    let query = Query::new(Index::TABLE, keys::LOCAL_JOBS, SkRange::All);
    let items = crate::page::read_up_to(store, query, usize::MAX)
        .await
        .map_err(|e| e.message)?;
    Ok(items
        .into_iter()
        .filter_map(|item| {
            let id = item.get(SK)?.as_str()?.to_owned();
            let message = serde_json::from_value(item.get("message")?.clone()).ok()?;
            let due = item
                .get("due")
                .and_then(|due| due.as_i64())
                .and_then(chrono::DateTime::from_timestamp_millis);
            Some((id, message, due))
        })
        .collect())
}

#[async_trait]
impl JobQueue for LocalQueue {
    async fn send_after(&self, message: &JobMessage, delay: Duration) -> Result<(), String> {
        let id = crate::ids::new_ulid();
        let due = (!delay.is_zero())
            .then(|| chrono::Utc::now() + chrono::Duration::from_std(delay).unwrap_or_default());
        let item = job_item(keys::LOCAL_JOBS, &id, message, due)?;
        self.store
            .write(vec![Write::Put {
                item,
                condition: None,
            }])
            .await
            .map_err(|e| format!("the local job queue could not keep the job: {e}"))?;
        self.tx
            .send((id, message.clone(), due))
            .map_err(|_| "the local job runner stopped".to_owned())
    }
}

/// The longest an SQS message can be held back (15 minutes).
pub const MAX_SQS_DELAY: u64 = 900;

/// SQS's `DelaySeconds` for `delay`: whole seconds, rounded up, so that a
/// message never comes before the time it was sent for (a webhook retry is
/// made on its first receipt, not early and not after a second one), and at
/// most [`MAX_SQS_DELAY`] (a longer wait is chained by the job itself).
pub fn sqs_delay_seconds(delay: Duration) -> i32 {
    let whole = delay.as_secs() + u64::from(delay.subsec_nanos() > 0);
    whole.min(MAX_SQS_DELAY) as i32
}

/// SQS: one message per job.
#[cfg(feature = "sqs")]
pub struct SqsQueue {
    /// Built at the first send: most requests of a function never send, so
    /// its cold start and memory do not pay for an SQS client.
    client: std::sync::OnceLock<aws_sdk_sqs::Client>,
    sdk: aws_config::SdkConfig,
    endpoint: Option<String>,
    url: String,
}

#[cfg(feature = "sqs")]
impl SqsQueue {
    /// The queue at `url`, reached with `sdk` (and `endpoint`, a local SQS).
    pub fn new(
        sdk: &aws_config::SdkConfig,
        endpoint: Option<&str>,
        url: impl Into<String>,
    ) -> Self {
        Self {
            client: std::sync::OnceLock::new(),
            sdk: sdk.clone(),
            endpoint: endpoint.map(str::to_owned),
            url: url.into(),
        }
    }

    fn client(&self) -> &aws_sdk_sqs::Client {
        self.client.get_or_init(|| {
            let mut builder = aws_sdk_sqs::config::Builder::from(&self.sdk);
            if let Some(endpoint) = &self.endpoint {
                builder = builder.endpoint_url(endpoint);
            }
            aws_sdk_sqs::Client::from_conf(builder.build())
        })
    }
}

#[cfg(feature = "sqs")]
#[async_trait]
impl JobQueue for SqsQueue {
    async fn send_after(&self, message: &JobMessage, delay: Duration) -> Result<(), String> {
        let body = serde_json::to_string(message).map_err(|e| e.to_string())?;
        self.client()
            .send_message()
            .queue_url(&self.url)
            .message_body(body)
            .delay_seconds(sqs_delay_seconds(delay))
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
    fn an_sqs_delay_is_rounded_up_to_whole_seconds() {
        let ms = Duration::from_millis;
        assert_eq!(sqs_delay_seconds(Duration::ZERO), 0);
        assert_eq!(sqs_delay_seconds(ms(1)), 1);
        assert_eq!(sqs_delay_seconds(ms(1_800)), 2);
        assert_eq!(sqs_delay_seconds(ms(2_000)), 2);
        assert_eq!(sqs_delay_seconds(ms(2_001)), 3);
        assert_eq!(sqs_delay_seconds(Duration::from_nanos(5_000_000_001)), 6);
        assert_eq!(sqs_delay_seconds(ms(899_999)), 900);
        assert_eq!(sqs_delay_seconds(Duration::from_secs(86_400)), 900);
    }

    #[test]
    fn a_message_of_the_first_shape_still_reads() {
        let m: JobMessage = serde_json::from_str(r#"{"workspaceId":7,"jobId":"01J"}"#).unwrap();
        assert_eq!((m.kind, m.workspace_id), (None, WorkspaceId(7)));
    }
}
