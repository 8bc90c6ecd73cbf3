//! The time of a request: the system's clock, or the one its app was given
//! (a test's [`ManualClock`]).

use std::sync::Mutex;

use chrono::{DateTime, Utc};

use super::Timestamp;

/// The time now, by the clock of the app serving the request ([`Clock`]),
/// to the millisecond: what is stored and shown, so a value read back
/// equals the one written.
pub fn now() -> Timestamp {
    let now = CLOCK
        .try_with(|clock| clock.now())
        .unwrap_or_else(|_| Utc::now());
    DateTime::from_timestamp_millis(now.timestamp_millis()).unwrap_or(now)
}

/// Where [`now`] comes from: the system's clock, unless an app is given
/// another (`AppState::with_clock`: a test's [`ManualClock`]), which every
/// request it serves reads. Ids ([`new_id`], [`new_ulid`]) keep the system's
/// clock: they are unique across the whole process.
pub trait Clock: Send + Sync + 'static {
    fn now(&self) -> Timestamp;
}

/// The system's clock.
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Timestamp {
        Utc::now()
    }
}

/// A clock that stands still until it is moved: tests move time instead of
/// waiting for it.
pub struct ManualClock(Mutex<Timestamp>);

impl ManualClock {
    /// Standing at the system's time now.
    pub fn starting_now() -> Self {
        Self(Mutex::new(Utc::now()))
    }

    pub fn advance(&self, by: chrono::Duration) {
        *self.0.lock().unwrap_or_else(|e| e.into_inner()) += by;
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Timestamp {
        *self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

tokio::task_local! {
    static CLOCK: std::sync::Arc<dyn Clock>;
}

/// The clock [`now`] reads here: a request's, for a task it spawns.
pub fn clock() -> std::sync::Arc<dyn Clock> {
    CLOCK
        .try_with(std::sync::Arc::clone)
        .unwrap_or_else(|_| std::sync::Arc::new(SystemClock))
}

/// Runs `f` (a request) with `clock` as its [`now`].
pub async fn with_clock<F: std::future::Future>(
    clock: std::sync::Arc<dyn Clock>,
    f: F,
) -> F::Output {
    CLOCK.scope(clock, f).await
}
