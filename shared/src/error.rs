//! The one error type of the API and its one JSON shape.
//!
//! Every failure of every function leaves through [`ApiError`], rendered as
//! `{ statusCode, error, message, details?, requestId }`. A 500 says nothing
//! internal to the client; the cause goes to the log with the request id.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use serde::de::DeserializeOwned;
use validator::{ValidationErrors, ValidationErrorsKind};

use crate::store::StoreError;

/// One problem with one input field.
#[derive(Debug, Clone, Serialize, PartialEq, Eq, schemars::JsonSchema)]
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
    /// The scopes that would have been accepted (a 403 for want of one).
    pub accepted_scopes: Option<String>,
}

pub type ApiResult<T> = Result<T, ApiError>;

impl ApiError {
    pub fn new(status: StatusCode, message: impl Into<String>) -> Self {
        Self {
            status,
            message: message.into(),
            details: Vec::new(),
            retry_after: None,
            accepted_scopes: None,
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
    /// Tells the client how many seconds to wait before retrying.
    pub fn retry_after(mut self, seconds: u32) -> Self {
        self.retry_after = Some(seconds);
        self
    }
    /// A bug. The cause is logged here; the client sees an opaque message.
    pub fn internal(cause: impl std::fmt::Display) -> Self {
        tracing::error!(request_id = %crate::context::current_request_id(), cause = %cause, "internal error");
        Self::new(StatusCode::INTERNAL_SERVER_ERROR, "internal error")
    }
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}", self.status.as_u16(), self.message)
    }
}

impl std::error::Error for ApiError {}

/// The answer to a write whose outcome the store could not learn.
pub const UNCERTAIN: &str = "the store did not confirm this write, so it may or may not have been applied; \
     a retry with the same Idempotency-Key is safe (without a key, read before you retry)";

impl From<StoreError> for ApiError {
    fn from(err: StoreError) -> Self {
        match err {
            StoreError::Unavailable(cause) => {
                tracing::warn!(cause = %cause, "store unavailable");
                ApiError::unavailable("the store is unavailable, retry later")
            }
            StoreError::Uncertain(cause) => {
                tracing::warn!(cause = %cause, "store write outcome unknown");
                ApiError::unavailable(UNCERTAIN)
            }
            StoreError::ItemTooLarge => ApiError::new(
                StatusCode::PAYLOAD_TOO_LARGE,
                "the record would exceed the 400 KB item limit",
            ),
            // A failed condition that reaches here was not expected by the domain code.
            StoreError::ConditionFailed { index } => {
                ApiError::internal(format!("unexpected condition failure at write {index}"))
            }
            // The gate's reason is an API error (a 401) already.
            StoreError::Refused(reason) => match reason.downcast::<ApiError>() {
                Ok(refusal) => *refusal,
                Err(other) => ApiError::unauthorized(other.to_string()),
            },
            other => ApiError::internal(other),
        }
    }
}

/// The one error shape of the API.
#[derive(Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "Error")]
pub(crate) struct ErrorBody<'a> {
    status_code: u16,
    error: &'a str,
    message: &'a str,
    /// One entry per field at fault (400 only).
    #[serde(default, skip_serializing_if = "<[_]>::is_empty")]
    details: &'a [FieldProblem],
    request_id: String,
}

impl ApiError {
    fn body(&self) -> ErrorBody<'_> {
        ErrorBody {
            status_code: self.status.as_u16(),
            error: self.status.canonical_reason().unwrap_or("Error"),
            message: &self.message,
            details: &self.details,
            request_id: crate::context::current_request_id(),
        }
    }

    /// The error shape as JSON (an item of a batch answers with it).
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::to_value(self.body()).unwrap_or_default()
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut response = (self.status, axum::Json(self.body())).into_response();
        if let Some(seconds) = self.retry_after {
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(seconds));
        }
        if let Some(scopes) = self
            .accepted_scopes
            .and_then(|s| HeaderValue::from_str(&s).ok())
        {
            response.headers_mut().insert("x-accepted-scopes", scopes);
        }
        // RFC 6750: a 401 says how to authenticate (MCP clients read it).
        if self.status == StatusCode::UNAUTHORIZED {
            response.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                HeaderValue::from_static("Bearer realm=\"crm\""),
            );
        }
        response
    }
}

/// Parses JSON, naming the field of the first problem.
pub fn parse_json<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, ApiError> {
    let value: serde_json::Value = serde_json::from_slice(bytes)
        .map_err(|e| ApiError::bad_request(format!("malformed JSON: {e}")))?;
    from_value(&value)
}

/// Reads `T` from JSON strictly (see [`crate::strict`]), naming the field of
/// the first problem.
pub fn from_value<T: DeserializeOwned>(value: &serde_json::Value) -> Result<T, ApiError> {
    serde_path_to_error::deserialize(crate::strict::Strict(value)).map_err(|e| {
        let path = e.path().to_string();
        serde_problem(&path, &strip_position(&e.into_inner().to_string()))
    })
}

fn strip_position(message: &str) -> String {
    match message.find(" at line ") {
        Some(i) => message[..i].to_owned(),
        None => message.to_owned(),
    }
}

/// Turns a serde message into a field problem. Unknown and missing fields name
/// themselves in the message; other problems are at `path`.
pub(crate) fn serde_problem(path: &str, message: &str) -> ApiError {
    let named = |prefix: &str| {
        message
            .strip_prefix(prefix)
            .and_then(|rest| rest.split('`').next())
            .map(str::to_owned)
    };
    let join = |parent: &str, field: &str| {
        if parent == "." || parent.is_empty() {
            field.to_owned()
        } else {
            format!("{parent}.{field}")
        }
    };
    if let Some(field) = named("unknown field `") {
        // The path of an unknown field already ends with it.
        let field = if path.ends_with(&field) {
            path.to_owned()
        } else {
            join(path, &field)
        };
        return ApiError::field(field, "is not a known field");
    }
    if let Some(field) = named("missing field `") {
        return ApiError::field(join(path, &field), "is required");
    }
    // A check of our own names its field so: "field `id`: must be ...".
    if let Some((field, problem)) = message
        .strip_prefix("field `")
        .and_then(|rest| rest.split_once("`: "))
    {
        return ApiError::field(join(path, field), problem);
    }
    let field = if path == "." {
        String::new()
    } else {
        path.to_owned()
    };
    ApiError::field(field, message)
}

/// Turns validator's errors into field problems, in field order.
pub fn validation_error(errors: ValidationErrors) -> ApiError {
    let mut details = Vec::new();
    collect_problems("", &errors, &mut details);
    details.sort_by(|a, b| a.field.cmp(&b.field));
    ApiError::fields(details)
}

fn collect_problems(prefix: &str, errors: &ValidationErrors, out: &mut Vec<FieldProblem>) {
    for (field, kind) in errors.errors() {
        let field = json_name(field);
        let name = if prefix.is_empty() {
            field
        } else {
            format!("{prefix}.{field}")
        };
        match kind {
            ValidationErrorsKind::Field(list) => {
                for e in list {
                    out.push(FieldProblem {
                        field: name.clone(),
                        problem: describe(e),
                    });
                }
            }
            ValidationErrorsKind::Struct(inner) => collect_problems(&name, inner, out),
            ValidationErrorsKind::List(items) => {
                for (i, inner) in items {
                    collect_problems(&format!("{name}[{i}]"), inner, out);
                }
            }
        }
    }
}

/// The JSON name of a Rust field: bodies are camelCase, and `legacy_id` is `_id`.
fn json_name(field: &str) -> String {
    if field == "legacy_id" {
        return "_id".to_owned();
    }
    let mut out = String::with_capacity(field.len());
    let mut upper = false;
    for c in field.chars() {
        if c == '_' {
            upper = true;
        } else if upper {
            out.extend(c.to_uppercase());
            upper = false;
        } else {
            out.push(c);
        }
    }
    out
}

fn describe(e: &validator::ValidationError) -> String {
    if let Some(message) = &e.message {
        return message.to_string();
    }
    let param = |n: &str| e.params.get(n).map(|v| v.to_string());
    match e.code.as_ref() {
        "length" => {
            // A list's length is counted in items, a text's in characters.
            let unit = match e.params.get("value") {
                Some(serde_json::Value::Array(_)) => "items",
                _ => "characters",
            };
            match (param("min"), param("max")) {
                (Some(min), Some(max)) => format!("must be between {min} and {max} {unit}"),
                (Some(min), None) if min == "1" => "must not be empty".to_owned(),
                (Some(min), None) => format!("must be at least {min} {unit}"),
                (None, Some(max)) => format!("must be at most {max} {unit}"),
                _ => "has the wrong length".to_owned(),
            }
        }
        "range" => match (param("min"), param("max")) {
            (Some(min), Some(max)) => format!("must be between {min} and {max}"),
            (Some(min), None) => format!("must be at least {min}"),
            (None, Some(max)) => format!("must be at most {max}"),
            _ => "is out of range".to_owned(),
        },
        "email" => "must be an e-mail address".to_owned(),
        code => code.replace('_', " "),
    }
}
