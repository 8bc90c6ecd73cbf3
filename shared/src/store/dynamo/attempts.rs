//! How one write is sent until its outcome is known.
//!
//! Writes go through a client whose SDK retries are off, so this loop sees
//! every attempt: it knows when a write was sent again after an answer that
//! never came, and it sends every attempt of one write the same way (a
//! transaction with one `ClientRequestToken`). What each failure means:
//!
//! | failure | written? | next |
//! |---|---|---|
//! | throttling, a transaction conflict, a refused connection | no | send again after a backoff |
//! | a dropped connection, a timeout, a 5xx, a transaction still settling | maybe | send again, the same write |
//! | a failed condition | no (but see [`Attempts::resent`]) | answer it |
//! | anything else (a validation error) | no | answer it |
//!
//! Within [`BUDGET`] and [`MAX_ATTEMPTS`]; past them a write that may have
//! landed is [`StoreError::Uncertain`], one that cannot have is
//! [`StoreError::Unavailable`].

use std::time::{Duration, Instant};

use aws_sdk_dynamodb::config::http::HttpResponse;
use aws_sdk_dynamodb::error::{ProvideErrorMetadata, SdkError};

use super::{backoff, sdk_error};
use crate::store::StoreError;

/// Attempts of one write at most.
pub(super) const MAX_ATTEMPTS: u32 = 10;
/// No attempt starts later than this after the first. DynamoDB finishes a
/// transaction whose client went away within seconds, and answers a resend
/// with its token `TransactionInProgressException` until then (AWS advises
/// resending for at least 5 s); the functions' timeout is 10 s.
pub(super) const BUDGET: Duration = Duration::from_secs(6);

/// What one failed attempt says about the write.
pub(super) enum Failure {
    /// Refused before anything was written.
    NotApplied(String),
    /// It may have been written: its answer was lost, or came as a 5xx.
    MaybeApplied(String),
    /// A transaction sent before with this token is still settling.
    InProgress,
    /// No attempt can change this answer.
    Final(StoreError),
}

/// The attempts of one write so far.
pub(super) struct Attempts {
    started: Instant,
    made: u32,
    maybe_applied: bool,
}

impl Attempts {
    pub(super) fn new() -> Self {
        Self {
            started: Instant::now(),
            made: 0,
            maybe_applied: false,
        }
    }

    /// Whether an earlier attempt may have been written: a condition that
    /// fails now may be failing on that attempt's own work.
    pub(super) fn resent(&self) -> bool {
        self.maybe_applied
    }

    /// After a failed attempt: waits before the next one, or answers the
    /// write's final error.
    pub(super) async fn after(&mut self, failure: Failure) -> Result<(), StoreError> {
        self.made += 1;
        let (cause, wait) = match failure {
            Failure::Final(e) => return Err(e),
            Failure::NotApplied(cause) => (cause, backoff(self.made)),
            Failure::MaybeApplied(cause) => {
                self.maybe_applied = true;
                (cause, backoff(self.made))
            }
            Failure::InProgress => {
                self.maybe_applied = true;
                // Settling takes longer than a conflict: 250 ms, 500 ms, then 1 s.
                let floor = Duration::from_millis(250 << (self.made - 1).min(2));
                (
                    "a transaction with this token is in progress".into(),
                    floor.max(backoff(self.made)),
                )
            }
        };
        if self.made >= MAX_ATTEMPTS || self.started.elapsed() + wait > BUDGET {
            let tried = format!(
                "{cause} ({} attempts in {} ms)",
                self.made,
                self.started.elapsed().as_millis()
            );
            return Err(if self.maybe_applied {
                StoreError::Uncertain(tried)
            } else {
                StoreError::Unavailable(tried)
            });
        }
        tracing::debug!(attempt = self.made, cause = %cause, "store write sent again");
        tokio::time::sleep(wait).await;
        Ok(())
    }
}

/// Throttling of any kind: the request was refused before it was applied.
const THROTTLED: &[&str] = &[
    "ProvisionedThroughputExceededException",
    "ThrottlingException",
    "RequestLimitExceeded",
];

/// Sorts a failed write call (other than a failed condition, which its caller reads first).
pub(super) fn classify<E>(err: SdkError<E, HttpResponse>) -> Failure
where
    E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
{
    let cause = || format!("{}", aws_sdk_dynamodb::error::DisplayErrorContext(&err));
    match &err {
        SdkError::ServiceError(service) => {
            let code = err.code();
            if code.is_some_and(|c| THROTTLED.contains(&c)) {
                Failure::NotApplied(cause())
            } else if code == Some("TransactionInProgressException") {
                Failure::InProgress
            } else if service.raw().status().is_server_error() {
                // InternalServerError: "the operation may or may not have succeeded".
                Failure::MaybeApplied(cause())
            } else {
                Failure::Final(sdk_error(err))
            }
        }
        SdkError::DispatchFailure(dispatch)
            if dispatch.as_connector_error().is_some_and(refused) =>
        {
            Failure::NotApplied(cause())
        }
        SdkError::DispatchFailure(_) | SdkError::TimeoutError(_) | SdkError::ResponseError(_) => {
            Failure::MaybeApplied(cause())
        }
        _ => Failure::Final(sdk_error(err)),
    }
}

/// A connection that was refused never carried the request.
fn refused(error: &aws_sdk_dynamodb::error::ConnectorError) -> bool {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(e) = source {
        if let Some(io) = e.downcast_ref::<std::io::Error>()
            && io.kind() == std::io::ErrorKind::ConnectionRefused
        {
            return true;
        }
        source = e.source();
    }
    false
}
