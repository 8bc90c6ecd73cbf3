//! The guard of every route: who the caller is and what its route needs of
//! it ([`Route::need`](super::Route::need)), then its rate limits.

use axum::extract::{MatchedPath, Request};
use axum::http::{HeaderValue, Method};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::{AppState, Served, idempotent};
use crate::auth::{Caller, Need, Scope};
use crate::error::ApiError;

/// Authenticates the request as its route needs ([`Route::need`]), before
/// anything else reads it: no token, a token that does not hold, or one
/// without the scope is answered here (a read's token check goes out beside
/// its reads, see [`Caller::authenticate`]). The caller is left in the
/// request's extensions for the handler.
pub(super) async fn authenticate(
    state: &AppState,
    req: &mut Request,
) -> Result<Option<Caller>, ApiError> {
    let Some(path) = req.extensions().get::<MatchedPath>() else {
        return Ok(None); // no route: the fallback's 404
    };
    let need = state
        .need_of(req.method(), path.as_str())
        .unwrap_or(Need::Scope(Scope::Admin)); // undeclared: closed
    if need == Need::Public {
        return Ok(None);
    }
    let reads_only = matches!(*req.method(), Method::GET | Method::HEAD);
    let caller =
        Caller::authenticate(req.headers(), reads_only, state.ungated.clone(), need).await?;
    req.extensions_mut().insert(caller.clone());
    Ok(Some(caller))
}

/// Serves an authenticated request within its rate limits: a change takes
/// its place in the buckets before its handler runs (its token is checked
/// already); a read, once its token holds (it does not wait for that
/// before its reads), so a token that does not hold takes nothing of a
/// workspace's bucket. Every answer says where the caller stands.
pub(super) async fn limited(served: Served, caller: Caller, req: Request, next: Next) -> Response {
    let limiter = served.state.limiter.clone();
    let store = served.state.ungated.clone();
    let admit = || limiter.admit(store.as_ref(), caller.workspace_id, &caller.bucket);
    let reads_only = matches!(*req.method(), Method::GET | Method::HEAD);
    let (admission, mut response) = if reads_only {
        let response = idempotent::idempotent(served, req, next).await;
        if caller.identity().await.is_err() {
            return response; // refused by the token check in `around`
        }
        let admission = admit().await;
        match admission.refusal() {
            Some(refusal) => (admission, refusal.into_response()),
            None => (admission, response),
        }
    } else {
        let admission = admit().await;
        match admission.refusal() {
            Some(refusal) => (admission, refusal.into_response()),
            None => (admission, idempotent::idempotent(served, req, next).await),
        }
    };
    rate_limit_headers(&admission, &mut response);
    response
}

/// `RateLimit-Policy` and `RateLimit` on an answer.
fn rate_limit_headers(admission: &crate::ratelimit::Admission, response: &mut Response) {
    if let Some((policy, limit)) = admission.headers()
        && let (Ok(policy), Ok(limit)) = (
            HeaderValue::from_str(&policy),
            HeaderValue::from_str(&limit),
        )
    {
        response.headers_mut().insert("ratelimit-policy", policy);
        response.headers_mut().insert("ratelimit", limit);
    }
}
