//! A tool's request, sent through the API's own routes with the caller's
//! token ([`AppState::relay`]): the guard, the scope, the rate limits, the
//! `Idempotency-Key` and the error shape are the HTTP API's, not copies.

use axum::body::{Body, to_bytes};
use axum::http::{HeaderMap, Method, Request, StatusCode, header};
use serde_json::Value;
use shared::ApiError;
use shared::auth::Scope;
use shared::http::AppState;
use tower::ServiceExt;

pub struct Relayed {
    state: AppState,
    authorization: String,
}

/// A relayed request's answer.
pub struct Reply {
    pub status: StatusCode,
    pub headers: HeaderMap,
    /// Its JSON (`null` when it had none).
    pub body: Value,
}

impl Relayed {
    pub fn new(state: AppState, authorization: String) -> Self {
        Self {
            state,
            authorization,
        }
    }

    /// Sends `method target` (a path and query) with `body` and, for a
    /// write, the caller's `key` as its `Idempotency-Key`.
    pub async fn send(
        &self,
        method: Method,
        target: &str,
        body: Option<Vec<u8>>,
        key: Option<&str>,
    ) -> Result<Reply, ApiError> {
        let mut request = Request::builder()
            .method(method)
            .uri(target)
            .header(header::AUTHORIZATION, &self.authorization);
        if body.is_some() {
            request = request.header(header::CONTENT_TYPE, "application/json");
        }
        if let Some(key) = key {
            request = request.header("idempotency-key", key);
        }
        // One request id for the envelope and what it relays: one trail in the logs.
        if let Some(id) = shared::context::request_id() {
            request = request.header("x-request-id", id);
        }
        let Ok(request) = request.body(body.map_or_else(Body::empty, Body::from)) else {
            return Ok(Reply::refusal(
                StatusCode::BAD_REQUEST,
                "the arguments do not make a request: an id or a value that is not text",
            ));
        };
        let response = match self.state.relay()?.oneshot(request).await {
            Ok(response) => response,
            Err(never) => match never {},
        };
        let (parts, body) = response.into_parts();
        // An answer too large for an agent (or a Lambda's 6 MB) is its
        // refusal, not a 500: it asks for less.
        let Ok(bytes) = to_bytes(body, MAX_ANSWER).await else {
            return Ok(Reply::refusal(
                StatusCode::PAYLOAD_TOO_LARGE,
                "the answer is larger than 2 MB: ask for fewer records (`limit`)",
            ));
        };
        let body = match bytes.is_empty() {
            true => Value::Null,
            false => match serde_json::from_slice(&bytes) {
                Ok(body) => body,
                Err(_) => {
                    return Ok(Reply::refusal(
                        StatusCode::BAD_GATEWAY,
                        "the route answered something other than JSON",
                    ));
                }
            },
        };
        Ok(Reply {
            status: parts.status,
            headers: parts.headers,
            body,
        })
    }

    /// The caller's scopes, read from its own token (`GET
    /// /v3/api-tokens/self`): a token that does not hold is this POST's 401.
    pub async fn scopes(&self) -> Result<Vec<Scope>, ApiError> {
        let reply = self
            .send(Method::GET, "/v3/api-tokens/self", None, None)
            .await?;
        if !reply.status.is_success() {
            return Err(reply.error());
        }
        Ok(reply.body["scopes"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|s| s.as_str()?.parse().ok())
            .collect())
    }
}

/// The largest answer a tool passes on (sent twice: as text and as
/// `structuredContent`).
const MAX_ANSWER: usize = 2 * 1024 * 1024;

impl Reply {
    /// A refusal of this relay's own, in the API's error shape.
    pub fn refusal(status: StatusCode, message: &str) -> Self {
        Self {
            status,
            headers: HeaderMap::new(),
            body: serde_json::json!({ "message": message }),
        }
    }

    /// The relayed error as this request's own.
    pub fn error(&self) -> ApiError {
        let message = self.body["message"]
            .as_str()
            .unwrap_or("the relayed request failed");
        let error = ApiError::new(self.status, message);
        match self.retry_after().and_then(|s| s.parse().ok()) {
            Some(seconds) => error.retry_after(seconds),
            None => error,
        }
    }

    /// `Retry-After`, when it says when to retry.
    pub fn retry_after(&self) -> Option<&str> {
        self.headers
            .get(header::RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
    }
}
