//! The one error type of the API and its one JSON shape.
//!
//! Every failure of every function leaves through [`ApiError`], rendered as
//! `{ statusCode, error, message, details?, requestId }`. A 500 says nothing
//! internal to the client; the cause goes to the log with the request id.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;

use crate::store::StoreError;

/// One problem with one input field.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct FieldProblem {
    pub field: String,
    pub problem: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiError {
    pub status: StatusCode,
    pub message: String,
    pub details: Vec<FieldProblem>,
    /// Seconds a client should wait before retrying (429, 503).
    pub retry_after: Option<u32>,
}

pub type ApiResult<T> = Result<T, ApiError>;

impl ApiError {
    pub fn new(status: StatusCode, message: impl Into<String>) -> Self {
        Self {
            status,
            message: message.into(),
            details: Vec::new(),
            retry_after: None,
        }
    }

    /// 400 for one field, naming it in the message and in `details`.
    pub fn field(field: impl Into<String>, problem: impl Into<String>) -> Self {
        Self::fields(vec![FieldProblem {
            field: field.into(),
            problem: problem.into(),
        }])
    }

    /// 400 for several fields; the message names the first.
    pub fn fields(details: Vec<FieldProblem>) -> Self {
        let message = match details.first() {
            Some(first) if first.field.is_empty() => first.problem.clone(),
            Some(first) => format!("{}: {}", first.field, first.problem),
            None => "invalid request".to_owned(),
        };
        Self {
            details,
            ..Self::new(StatusCode::BAD_REQUEST, message)
        }
    }

    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, message)
    }
    pub fn unauthorized(message: impl Into<String>) -> Self {
        Self::new(StatusCode::UNAUTHORIZED, message)
    }
    pub fn forbidden(message: impl Into<String>) -> Self {
        Self::new(StatusCode::FORBIDDEN, message)
    }
    /// Unknown ids and ids of another workspace look the same: never confirm existence.
    pub fn not_found(what: &str) -> Self {
        Self::new(StatusCode::NOT_FOUND, format!("{what} not found"))
    }
    pub fn conflict(message: impl Into<String>) -> Self {
        Self::new(StatusCode::CONFLICT, message)
    }
    pub fn unavailable(message: impl Into<String>) -> Self {
        Self {
            retry_after: Some(1),
            ..Self::new(StatusCode::SERVICE_UNAVAILABLE, message)
        }
    }
    /// A bug. The cause is logged here; the client sees an opaque message.
    pub fn internal(cause: impl std::fmt::Display) -> Self {
        tracing::error!(request_id = %crate::http::current_request_id(), cause = %cause, "internal error");
        Self::new(StatusCode::INTERNAL_SERVER_ERROR, "internal error")
    }
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}", self.status.as_u16(), self.message)
    }
}

impl std::error::Error for ApiError {}

impl From<StoreError> for ApiError {
    fn from(err: StoreError) -> Self {
        match err {
            StoreError::Unavailable(cause) => {
                tracing::warn!(cause = %cause, "store unavailable");
                ApiError::unavailable("the store is unavailable, retry later")
            }
            StoreError::ItemTooLarge => ApiError::new(
                StatusCode::PAYLOAD_TOO_LARGE,
                "the record would exceed the 400 KB item limit",
            ),
            // A failed condition that reaches here was not expected by the domain code.
            StoreError::ConditionFailed { index } => {
                ApiError::internal(format!("unexpected condition failure at write {index}"))
            }
            other => ApiError::internal(other),
        }
    }
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ErrorBody<'a> {
    status_code: u16,
    error: &'a str,
    message: &'a str,
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    details: &'a [FieldProblem],
    request_id: String,
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = ErrorBody {
            status_code: self.status.as_u16(),
            error: self.status.canonical_reason().unwrap_or("Error"),
            message: &self.message,
            details: &self.details,
            request_id: crate::http::current_request_id(),
        };
        let mut response = (self.status, axum::Json(body)).into_response();
        if let Some(seconds) = self.retry_after {
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(seconds));
        }
        response
    }
}
