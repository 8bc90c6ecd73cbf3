//! The background jobs of the service, by kind: the one place that knows them.
//! A job is a record in the table plus a [`JobMessage`] naming its kind; the
//! `job-worker` Lambda (SQS) and the local queue both hand each message to
//! [`run`]. Adding a job is one arm here and its `process` function.

use async_trait::async_trait;

use crate::domain::{bulk, contacts, dashboards, imports, webhooks};
use crate::error::ApiResult;
use crate::files::{Files, SharedFiles};
use crate::queue::{JobMessage, JobQueue, JobRunner};
use crate::store::Store;

/// What a job may use besides the store: the queue (to send itself again),
/// the files of bulk jobs, and the time it must stop by (a Lambda's).
#[derive(Clone, Copy, Default)]
pub struct Env<'a> {
    pub queue: Option<&'a dyn JobQueue>,
    pub files: Option<&'a dyn Files>,
    pub deadline: Option<std::time::Instant>,
}

/// What a job run did, for the worker's log line.
#[derive(Debug)]
pub struct Outcome {
    pub kind: &'static str,
    pub summary: String,
}

/// Runs one job message. An unknown kind is an error (the message goes back to
/// the queue and, after its retries, to the dead-letter queue for a person to see).
pub async fn run(store: &dyn Store, env: Env<'_>, message: &JobMessage) -> ApiResult<Outcome> {
    // Messages queued before jobs had kinds were all contact imports.
    let kind = message.kind.as_deref().unwrap_or(imports::KIND);
    let (ws, id) = (message.workspace_id, message.job_id.as_str());
    match kind {
        imports::KIND => {
            let job = imports::process(store, ws, id).await?;
            Ok(Outcome {
                kind: imports::KIND,
                summary: format!(
                    "created {}, ignored {}, failed {}",
                    job.created, job.ignored, job.failed
                ),
            })
        }
        dashboards::KIND => {
            let snapshot = dashboards::process(store, ws, id).await?;
            Ok(Outcome {
                kind: dashboards::KIND,
                summary: format!(
                    "snapshot {} of {} widgets",
                    snapshot.id,
                    snapshot.data.len().saturating_sub(1)
                ),
            })
        }
        contacts::erasing::KIND => {
            let contact = contacts::erasing::process(store, ws, id).await?;
            Ok(Outcome {
                kind: contacts::erasing::KIND,
                summary: format!("contact {} erased", contact.id),
            })
        }
        contacts::merging::KIND => {
            let job = contacts::merging::process(store, ws, id).await?;
            Ok(Outcome {
                kind: contacts::merging::KIND,
                summary: format!("merge {:?}, {} records moved", job.status, job.moved),
            })
        }
        bulk::import::KIND => {
            let run = bulk::import::Run {
                files: crate::files::configured(env.files)?,
                queue: env.queue,
                deadline: env.deadline,
            };
            let job = bulk::import::process(store, &run, ws, id).await?;
            Ok(Outcome {
                kind: bulk::import::KIND,
                summary: format!(
                    "{:?}: {} rows, created {}, updated {}, failed {}",
                    job.status, job.rows, job.created, job.updated, job.failed
                ),
            })
        }
        bulk::export::KIND => {
            let files = crate::files::configured(env.files)?;
            let job = bulk::export::process(store, files, ws, id).await?;
            Ok(Outcome {
                kind: bulk::export::KIND,
                summary: format!("{:?}: {} records", job.status, job.records),
            })
        }
        other => Err(crate::error::ApiError::bad_request(format!(
            "unknown job kind {other:?}"
        ))),
    }
}

/// The runner of the local queue (`crm serve`, tests), which carries both
/// the jobs of [`run`] and the webhook deliveries (on AWS, two queues).
pub struct Jobs {
    pub webhooks: std::sync::Arc<crate::outbound::Settings>,
    /// The files of bulk jobs (a folder locally).
    pub files: Option<SharedFiles>,
    /// The store jobs write through, paced by the workspace's write budget
    /// (`ratelimit::Budgeted::paced`); `None`: the queue's own, unbudgeted.
    /// Webhook deliveries write through the queue's: they follow events
    /// rather than make them.
    pub budgeted: Option<crate::store::SharedStore>,
}

impl Jobs {
    /// With the webhook settings of the environment, and no files.
    pub fn from_env() -> Self {
        Self {
            webhooks: std::sync::Arc::new(crate::outbound::Settings::from_env()),
            files: None,
            budgeted: None,
        }
    }
}

#[async_trait]
impl JobRunner for Jobs {
    async fn run(
        &self,
        store: &dyn Store,
        queue: &dyn JobQueue,
        message: &JobMessage,
    ) -> Result<(), String> {
        let outcome = if message.kind.as_deref() == Some(webhooks::KIND) {
            webhooks::deliver(store, queue, &self.webhooks, message).await
        } else {
            let env = Env {
                queue: Some(queue),
                files: self.files.as_deref(),
                deadline: None,
            };
            let store = self.budgeted.as_deref().unwrap_or(store);
            run(store, env, message).await.map(|_| ())
        };
        outcome.map_err(|e| e.to_string())
    }
}
