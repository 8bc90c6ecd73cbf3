//! The state every handler reaches ([`AppState`]): the store as handlers see
//! it, the queues, the files, the limiter, the clock, and the app that relayed
//! requests go through.

use std::collections::HashMap;
use std::sync::Arc;

use axum::Router;
use axum::http::Method;

use super::{Group, app};
use crate::auth::Need;
use crate::error::ApiError;
use crate::ids;
use crate::queue::{JobQueue, SharedQueue};
use crate::store::SharedStore;

/// What every handler can reach: one `Arc`, so that the clone every request
/// makes of it (axum's state, the middleware's) moves one reference count,
/// not eight (each an atomic both cores fight over: the drop of the eight was
/// 3% of `crm serve`'s CPU on a GET by id, `perf`).
#[derive(Clone)]
pub struct AppState(Arc<StateFields>);

impl std::ops::Deref for AppState {
    type Target = StateFields;
    fn deref(&self) -> &StateFields {
        &self.0
    }
}

/// Setting it up (the builders, `app`): made unique first, as it is then.
impl std::ops::DerefMut for AppState {
    fn deref_mut(&mut self) -> &mut StateFields {
        Arc::make_mut(&mut self.0)
    }
}

/// The fields of [`AppState`].
#[derive(Clone)]
pub struct StateFields {
    /// The store, gated by the request's token check ([`crate::auth::Gated`]).
    pub store: SharedStore,
    /// Where background jobs go; `None` where no queue is configured.
    pub queue: Option<SharedQueue>,
    /// The same store, ungated: for the token check itself.
    pub(crate) ungated: SharedStore,
    /// What `ids::now` reads in this app's requests.
    pub clock: Arc<dyn ids::Clock>,
    /// Where webhook deliveries go (retries, replays); `None` where none is
    /// configured. Locally the same queue as the jobs'.
    pub deliveries: Option<SharedQueue>,
    /// How deliveries are made (the addresses allowed, the timeout).
    pub webhooks: Arc<crate::outbound::Settings>,
    /// The rate limits every request passes ([`crate::ratelimit`]).
    pub limiter: Arc<crate::ratelimit::Limiter>,
    /// The files of bulk imports and exports; `None` where none are configured.
    pub files: Option<crate::files::SharedFiles>,
    /// What each route needs of its caller, by method and path ([`app`] fills it).
    pub(super) needs: Arc<HashMap<(Method, &'static str), Need>>,
    /// The app that [`Need::Relayed`] routes send their requests through.
    pub(super) relay: Option<Arc<Relay>>,
}

/// The guarded app of some groups, built on first use from the state that
/// holds it (without a relay of its own: no cycle of references).
pub struct Relay {
    groups: fn() -> Vec<Group>,
    app: std::sync::OnceLock<Router>,
}

impl AppState {
    pub fn new(store: SharedStore) -> Self {
        let limiter = Arc::new(crate::ratelimit::Limiter::from_env());
        Self(Arc::new(StateFields {
            store: handlers_store(&store, &limiter),
            queue: None,
            ungated: store,
            clock: Arc::new(ids::SystemClock),
            deliveries: None,
            webhooks: Arc::new(crate::outbound::Settings::from_env()),
            limiter,
            files: None,
            needs: Arc::default(),
            relay: None,
        }))
    }

    /// The store for background jobs beside this app (`crm serve`'s queue,
    /// the job worker): its writes paced by the workspace's write budget,
    /// never refused ([`crate::ratelimit::Budgeted`]).
    pub fn paced_store(&self) -> SharedStore {
        Arc::new(crate::ratelimit::Budgeted::new(
            self.ungated.clone(),
            self.limiter.clone(),
            crate::ratelimit::AtLimit::Pace,
        ))
    }

    /// Routes that relay ([`Need::Relayed`]) send their requests through
    /// the app of `groups` on this state: guarded, scoped, rate-limited and
    /// keyed exactly as they would be if the caller sent them.
    pub fn with_relay(mut self, groups: fn() -> Vec<Group>) -> Self {
        self.relay = Some(Arc::new(Relay {
            groups,
            app: std::sync::OnceLock::new(),
        }));
        self
    }

    /// The app relayed requests go through, or a 503 where none is set.
    pub fn relay(&self) -> Result<Router, ApiError> {
        let relay = self
            .relay
            .as_ref()
            .ok_or_else(|| ApiError::unavailable("this function relays to no routes"))?;
        Ok(relay
            .app
            .get_or_init(|| {
                let mut inner = self.clone();
                inner.relay = None;
                app(inner, (relay.groups)())
            })
            .clone())
    }

    /// What the route at `method path` (a route's path, `{id}` and all) needs.
    pub(super) fn need_of(&self, method: &Method, path: &str) -> Option<Need> {
        let method = if method == Method::HEAD {
            &Method::GET
        } else {
            method
        };
        self.needs.get(&(method.clone(), path)).copied()
    }

    /// The app's requests read `clock` ([`ids::now`]): a test's manual clock.
    pub fn with_clock(mut self, clock: Arc<dyn ids::Clock>) -> Self {
        self.clock = clock;
        self
    }

    /// `queue` for jobs and deliveries alike (`crm serve`, tests).
    pub fn with_queue(mut self, queue: SharedQueue) -> Self {
        self.queue = Some(queue.clone());
        self.deliveries = Some(queue);
        self
    }

    /// `files` for bulk imports and exports.
    pub fn with_files(mut self, files: crate::files::SharedFiles) -> Self {
        self.files = Some(files);
        self
    }

    /// The files of bulk jobs, or a 503 saying they are not configured.
    pub fn files(&self) -> Result<&dyn crate::files::Files, ApiError> {
        crate::files::configured(self.files.as_deref())
    }

    /// Rate limits other than the environment's (tests: off, or small).
    pub fn with_limiter(mut self, limiter: crate::ratelimit::Limiter) -> Self {
        self.limiter = Arc::new(limiter);
        self.store = handlers_store(&self.ungated, &self.limiter);
        self
    }

    pub fn with_webhooks(mut self, settings: crate::outbound::Settings) -> Self {
        self.webhooks = Arc::new(settings);
        self
    }

    /// The delivery queue, or a 503 saying it is not configured.
    pub fn deliveries(&self) -> Result<&dyn JobQueue, ApiError> {
        self.deliveries.as_deref().ok_or_else(|| {
            ApiError::unavailable(
                "webhook deliveries are not configured here (CRM_WEBHOOK_QUEUE_URL)",
            )
        })
    }

    /// The job queue, or a 503 saying it is not configured.
    pub fn jobs(&self) -> Result<&dyn JobQueue, ApiError> {
        self.queue.as_deref().ok_or_else(|| {
            ApiError::unavailable("background jobs are not configured here (CRM_JOB_QUEUE_URL)")
        })
    }
}

/// The store as handlers see it: gated by the request's token check, then
/// within the workspace's write budget (a write past it refused: a made-up
/// token takes nothing of the budget, and the budget's own bucket is
/// written beside both, ungated).
fn handlers_store(store: &SharedStore, limiter: &Arc<crate::ratelimit::Limiter>) -> SharedStore {
    let budgeted = crate::ratelimit::Budgeted::new(
        store.clone(),
        limiter.clone(),
        crate::ratelimit::AtLimit::Refuse,
    );
    Arc::new(crate::auth::Gated(Arc::new(budgeted)))
}
