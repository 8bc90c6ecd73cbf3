//! The `Idempotency-Key` of every `POST` (see [`crate::idempotency`]): claims
//! the key before the handler, answers a retry with the stored response and
//! `Idempotent-Replayed: true`, and keeps the answer after the handler.

use axum::body::{Body, to_bytes};
use axum::extract::{FromRequestParts, Request};
use axum::http::{HeaderMap, HeaderName, HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::{AppState, BODY_LIMIT};
use crate::auth::Caller;
use crate::error::ApiError;
use crate::idempotency::{self, Begin};

pub const IDEMPOTENCY_KEY: &str = "idempotency-key";
pub const REPLAYED: &str = "idempotent-replayed";

/// Response headers a replay repeats; the others (date, request id) are the
/// replay's own.
fn kept(name: &HeaderName) -> bool {
    name == header::CONTENT_TYPE
        || name == header::LOCATION
        || name == header::LINK
        || name.as_str().starts_with("x-") && name.as_str() != "x-request-id"
}

pub(super) async fn idempotent(state: AppState, req: Request, next: Next) -> Response {
    if req.method() != Method::POST || !req.headers().contains_key(IDEMPOTENCY_KEY) {
        return next.run(req).await;
    }
    match run(state, req, next).await {
        Ok(response) | Err(response) => response,
    }
}

async fn run(state: AppState, req: Request, next: Next) -> Result<Response, Response> {
    let key = req
        .headers()
        .get(IDEMPOTENCY_KEY)
        .and_then(|v| v.to_str().ok())
        .filter(|k| idempotency::valid_key(k))
        .map(str::to_owned)
        .ok_or_else(|| {
            ApiError::field(
                "Idempotency-Key",
                "must be 1 to 255 printable ASCII characters",
            )
            .into_response()
        })?;
    let (mut parts, body) = req.into_parts();
    // The caller is known before the body is read; the handler reuses it.
    let caller = Caller::from_request_parts(&mut parts, &state)
        .await
        .map_err(IntoResponse::into_response)?;
    let bytes = to_bytes(body, BODY_LIMIT)
        .await
        .map_err(|_| ApiError::body_too_large().into_response())?;
    let route = format!("POST {}", parts.uri.path());
    let begun = idempotency::begin(
        state.store.as_ref(),
        caller.workspace_id,
        &key,
        &route,
        &bytes,
    )
    .await
    .map_err(IntoResponse::into_response)?;
    let claim = match begun {
        Begin::Replay {
            status,
            headers,
            body,
        } => return Ok(replay(status, &headers, body)),
        Begin::Run(claim) => claim,
    };
    parts.extensions.insert(caller);
    let req = Request::from_parts(parts, Body::from(bytes));
    let response = idempotency::scope(claim.clone(), next.run(req)).await;

    let (parts, body) = response.into_parts();
    let status = parts.status.as_u16();
    let headers = stored_headers(&parts.headers);
    // An answer too large to keep is answered in full and not kept; a retry
    // then learns that it was applied. An answer that cannot be read (a
    // failing stream) is a 500 and keeps nothing either.
    let bytes = match to_bytes(body, usize::MAX).await {
        Ok(bytes) => bytes,
        Err(e) => {
            idempotency::finish(state.store.as_ref(), &claim, 500, Vec::new(), None).await;
            return Err(ApiError::internal(e).into_response());
        }
    };
    let text = String::from_utf8(bytes.to_vec())
        .ok()
        .filter(|t| t.len() <= MAX_KEPT_BODY);
    idempotency::finish(state.store.as_ref(), &claim, status, headers, text).await;
    Ok(Response::from_parts(parts, Body::from(bytes)))
}

/// The largest answer kept for replay (DynamoDB items hold 400 KB).
const MAX_KEPT_BODY: usize = 256 * 1024;

fn stored_headers(headers: &HeaderMap) -> Vec<(String, String)> {
    headers
        .iter()
        .filter(|(name, _)| kept(name))
        .filter_map(|(name, value)| Some((name.to_string(), value.to_str().ok()?.to_owned())))
        .collect()
}

fn replay(status: u16, headers: &[(String, String)], body: String) -> Response {
    let status = StatusCode::from_u16(status).unwrap_or(StatusCode::OK);
    let mut response = (status, body).into_response();
    let map = response.headers_mut();
    for (name, value) in headers {
        if let (Ok(name), Ok(value)) = (
            HeaderName::from_bytes(name.as_bytes()),
            HeaderValue::from_str(value),
        ) {
            map.insert(name, value);
        }
    }
    map.insert(REPLAYED, HeaderValue::from_static("true"));
    response
}
