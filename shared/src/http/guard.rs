//! The guard of every route: who the caller is and what its route needs of
//! it ([`Route::need`](super::Route::need)), then its rate limits.

use std::sync::{Arc, Mutex};

use axum::extract::{FromRequestParts, MatchedPath, Request};
use axum::http::request::Parts;
use axum::http::{HeaderName, HeaderValue, Method};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::{AppState, Served, idempotent};
use crate::auth::{Caller, Need, Scope};
use crate::error::ApiError;
use crate::ratelimit::{Admission, Limiter};
use crate::store::SharedStore;

/// Authenticates the request as its route needs ([`Route::need`]), before
/// anything else reads it: no token, or a token that does not hold, is
/// answered here (a read's token check goes out beside its reads, see
/// [`Caller::authenticate`]); a token without the scope is answered by
/// [`limited`], within its rate limits. The caller is left in the request's
/// extensions for the handler.
pub(super) async fn authenticate(state: &AppState, req: &mut Request) -> Result<Guarded, ApiError> {
    let Some(path) = req.extensions().get::<MatchedPath>() else {
        return Ok(Guarded::Public); // no route: the fallback's 404
    };
    let need = state
        .need_of(req.method(), path.as_str())
        .unwrap_or(Need::Scope(Scope::Admin)); // undeclared: closed
    match need {
        Need::Public => return Ok(Guarded::Public),
        Need::Relayed => return Ok(Guarded::Relayed),
        Need::Token | Need::Scope(_) => {}
    }
    let reads_only = matches!(*req.method(), Method::GET | Method::HEAD);
    let caller =
        Caller::authenticate_counted(req.headers(), reads_only, state.ungated.clone(), need)
            .await?;
    req.extensions_mut().insert(caller.clone());
    Ok(Guarded::Caller(caller))
}

/// What [`authenticate`] found a request to be.
pub(super) enum Guarded {
    /// A caller, checked as its route needs: served within its rate limits.
    Caller(Caller),
    /// A route that needs nothing (or no route).
    Public,
    /// A route whose requests are relayed through the guarded app
    /// ([`Need::Relayed`]): neither a token nor an `Idempotency-Key` of its own.
    Relayed,
}

/// Serves an authenticated request within its rate limits: a change takes
/// its place in the buckets before its handler runs (its token is checked
/// already), and a batch the rest of its operations once it has read them
/// ([`Meter::charge`]); a read, once its token holds (it does not wait for
/// that before its reads), so a token that does not hold takes nothing of a
/// workspace's bucket. A token that holds without the route's scope is
/// refused here (403), its handler never run, and counted like any other
/// request. Every answer to a token that holds says where it stands.
pub(super) async fn limited(
    served: Served,
    caller: Caller,
    mut req: Request,
    next: Next,
) -> Response {
    let meter = Meter(Some(Arc::new(Metered {
        limiter: served.state.limiter.clone(),
        store: served.state.ungated.clone(),
        caller: caller.clone(),
        admission: Mutex::default(),
    })));
    let reads_only = matches!(*req.method(), Method::GET | Method::HEAD);
    let mut response = if reads_only && !caller.is_checked() {
        // A read whose token check goes out beside its own reads, and so do
        // its buckets' (a read takes nothing: a token that does not hold
        // still takes nothing of its workspace's bucket).
        let (response, ahead) = tokio::join!(
            idempotent::idempotent(served, req, next),
            meter.read_ahead(1)
        );
        let scoped = caller.identity().await.map(|_| ());
        if scoped.is_err() && !caller.holds().await {
            return response; // refused by the token check in `around`
        }
        match (scoped, meter.charge_ahead(1, ahead).await) {
            (_, Err(refusal)) => refusal.into_response(),
            // Without the scope: the 403 (`around` answers it too, and keeps
            // the headers set below).
            (Err(refused), Ok(())) => refused.into_response(),
            (Ok(()), Ok(())) => response,
        }
    } else {
        // Its token read already: without the scope, refused before its handler runs.
        let scoped = caller.identity().await.map(|_| ());
        match (scoped, meter.charge(1).await) {
            (_, Err(refusal)) => refusal.into_response(),
            (Err(refused), Ok(())) => refused.into_response(),
            (Ok(()), Ok(())) => {
                if !reads_only {
                    req.extensions_mut().insert(meter.clone());
                }
                idempotent::idempotent(served, req, next).await
            }
        }
    };
    if let Some(metered) = &meter.0 {
        let mut admission = metered.admission.lock().unwrap_or_else(|e| e.into_inner());
        // A request that wrote says where the write budget stands too.
        if let Some(writes) = crate::context::note::<crate::ratelimit::Standing>() {
            admission.0.standings.push(writes);
        }
        rate_limit_headers(&admission.0, &mut response);
    }
    response
}

/// A request's place in its rate limits, shared with its handler.
#[derive(Clone, Default)]
pub struct Meter(Option<Arc<Metered>>);

struct Metered {
    limiter: Arc<Limiter>,
    store: SharedStore,
    caller: Caller,
    /// Where the request stands after its last charge, and what it took.
    admission: Mutex<(Admission, u32)>,
}

impl Meter {
    /// Takes `requests` more of the caller's buckets: a 429 when they do not
    /// have them, before the handler writes anything.
    pub async fn charge(&self, requests: usize) -> Result<(), ApiError> {
        self.charge_ahead(requests, None).await
    }

    /// Reads the buckets a charge of `requests` would lease
    /// ([`Limiter::read_ahead`]).
    async fn read_ahead(&self, requests: u32) -> Option<crate::ratelimit::Ahead> {
        let metered = self.0.as_ref()?;
        let caller = &metered.caller;
        metered
            .limiter
            .read_ahead(
                metered.store.as_ref(),
                caller.workspace_id,
                &caller.bucket,
                requests,
            )
            .await
    }

    /// [`Self::charge`], leasing from what [`Self::read_ahead`] read.
    async fn charge_ahead(
        &self,
        requests: usize,
        ahead: Option<crate::ratelimit::Ahead>,
    ) -> Result<(), ApiError> {
        let Some(metered) = &self.0 else {
            return Ok(());
        };
        if requests == 0 {
            return Ok(());
        }
        let caller = &metered.caller;
        let cost = u32::try_from(requests).unwrap_or(u32::MAX);
        let already = metered
            .admission
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .1;
        let admission = metered
            .limiter
            .admit_ahead(
                &metered.store,
                caller.workspace_id,
                &caller.bucket,
                (cost, already),
                ahead,
            )
            .await;
        let refusal = admission.refusal();
        let taken = match refusal {
            None => already.saturating_add(cost),
            Some(_) => already,
        };
        *metered.admission.lock().unwrap_or_else(|e| e.into_inner()) = (admission, taken);
        refusal.map_or(Ok(()), Err)
    }

    /// A batch of `operations`: the request counted one already.
    pub async fn charge_batch(&self, operations: usize) -> Result<(), ApiError> {
        self.charge(operations.saturating_sub(1)).await
    }
}

/// The handler's view of its request's meter (none outside the guard, as in
/// a test calling a handler directly: nothing to charge).
impl<S: Send + Sync> FromRequestParts<S> for Meter {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        Ok(parts.extensions.get::<Meter>().cloned().unwrap_or_default())
    }
}

impl aide::operation::OperationInput for Meter {}

/// The headers that say where a caller stands in its rate limits.
/// Names made once: a name given as text is checked and hashed again at each
/// use (two percent of a GET by id).
pub(super) const RATE_LIMIT_HEADERS: [HeaderName; 2] = [
    HeaderName::from_static("ratelimit-policy"),
    HeaderName::from_static("ratelimit"),
];

/// `RateLimit-Policy` and `RateLimit` on an answer.
fn rate_limit_headers(admission: &Admission, response: &mut Response) {
    if let Some((policy, limit)) = admission.headers()
        && let (Ok(policy), Ok(limit)) = (
            HeaderValue::from_str(&policy),
            HeaderValue::from_str(&limit),
        )
    {
        let [policy_name, limit_name] = RATE_LIMIT_HEADERS;
        response.headers_mut().insert(policy_name, policy);
        response.headers_mut().insert(limit_name, limit);
    }
}
