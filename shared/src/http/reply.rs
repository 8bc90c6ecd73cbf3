//! The success answers a handler returns, each describing itself in the
//! OpenAPI document (status, body schema, headers).

use aide::generate::GenContext;
use aide::openapi::{Operation, Response, StatusCode};
use aide::operation::OperationOutput;
use axum::Json;
use axum::http::{HeaderName, HeaderValue, header};
use axum::response::IntoResponse;
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::json;

use super::openapi::success;
use crate::error::ApiError;

/// Shorthand for handlers: a JSON body or an [`ApiError`].
pub type Reply<T> = Result<Json<T>, ApiError>;

/// 201 Created with a JSON body, and optionally one header about it.
pub struct Created<T> {
    body: T,
    header: Option<(HeaderName, HeaderValue)>,
}

/// 201 Created with a JSON body.
pub fn created<T>(body: T) -> Created<T> {
    Created { body, header: None }
}

impl<T> Created<T> {
    pub fn with_header(mut self, name: &'static str, value: &'static str) -> Self {
        self.header = Some((
            HeaderName::from_static(name),
            HeaderValue::from_static(value),
        ));
        self
    }
}

impl<T: Serialize> IntoResponse for Created<T> {
    fn into_response(self) -> axum::response::Response {
        let mut response = (axum::http::StatusCode::CREATED, Json(self.body)).into_response();
        if let Some((name, value)) = self.header {
            response.headers_mut().insert(name, value);
        }
        response
    }
}

impl<T: JsonSchema> OperationOutput for Created<T> {
    type Inner = T;
    fn inferred_responses(
        ctx: &mut GenContext,
        _: &mut Operation,
    ) -> Vec<(Option<StatusCode>, Response)> {
        vec![success::<T>(ctx, 201, "Created")]
    }
}

/// 201 when the request created the record, 200 when it replaced or found it.
pub struct Saved<T> {
    pub body: T,
    pub created: bool,
}

impl<T: Serialize> IntoResponse for Saved<T> {
    fn into_response(self) -> axum::response::Response {
        if self.created {
            created(self.body).into_response()
        } else {
            Json(self.body).into_response()
        }
    }
}

impl<T: JsonSchema> OperationOutput for Saved<T> {
    type Inner = T;
    fn inferred_responses(
        ctx: &mut GenContext,
        _: &mut Operation,
    ) -> Vec<(Option<StatusCode>, Response)> {
        vec![
            success::<T>(ctx, 201, "Created"),
            success::<T>(ctx, 200, "Already there: replaced, or unchanged"),
        ]
    }
}

/// An answer of many parts, each answered on its own (a batch): 200 when
/// every part succeeded, 207 Multi-Status when some did not.
pub struct MultiStatus<T> {
    pub body: T,
    pub some_failed: bool,
}

impl<T> MultiStatus<T> {
    /// `body`, with what says of it whether a part failed.
    pub fn of(body: T, some_failed: impl FnOnce(&T) -> bool) -> Self {
        let some_failed = some_failed(&body);
        Self { body, some_failed }
    }
}

impl<T: Serialize> IntoResponse for MultiStatus<T> {
    fn into_response(self) -> axum::response::Response {
        let status = match self.some_failed {
            true => axum::http::StatusCode::MULTI_STATUS,
            false => axum::http::StatusCode::OK,
        };
        (status, Json(self.body)).into_response()
    }
}

impl<T: JsonSchema> OperationOutput for MultiStatus<T> {
    type Inner = T;
    fn inferred_responses(
        ctx: &mut GenContext,
        _: &mut Operation,
    ) -> Vec<(Option<StatusCode>, Response)> {
        vec![
            success::<T>(ctx, 200, "Every operation succeeded"),
            success::<T>(
                ctx,
                207,
                "Some operations failed: each result has its status and error",
            ),
        ]
    }
}

/// 200 when the work is done; 202 while it goes on in the background, with
/// the `Location` to poll.
pub struct Progress<T> {
    pub body: T,
    /// `None` when done; else where its progress is read.
    pub running_at: Option<String>,
}

impl<T: Serialize> IntoResponse for Progress<T> {
    fn into_response(self) -> axum::response::Response {
        match self.running_at.and_then(|l| HeaderValue::from_str(&l).ok()) {
            None => Json(self.body).into_response(),
            Some(location) => {
                let mut response =
                    (axum::http::StatusCode::ACCEPTED, Json(self.body)).into_response();
                response.headers_mut().insert(header::LOCATION, location);
                response
            }
        }
    }
}

impl<T: JsonSchema> OperationOutput for Progress<T> {
    type Inner = T;
    fn inferred_responses(
        ctx: &mut GenContext,
        _: &mut Operation,
    ) -> Vec<(Option<StatusCode>, Response)> {
        vec![
            success::<T>(ctx, 200, "Done"),
            success::<T>(ctx, 202, "Running on in the background: poll `Location`"),
        ]
    }
}

/// A `/v1` page as a bare JSON array, with the next page (when there is one)
/// in a `Link: <path?limit=..&cursor=..>; rel="next"` header (RFC 8288).
pub struct Linked<T> {
    data: Vec<T>,
    link: Option<String>,
}

pub fn next_link<T>(path: &str, limit: u64, next_cursor: &str, data: Vec<T>) -> Linked<T> {
    let link = (!next_cursor.is_empty()).then(|| {
        let cursor: String = form_urlencoded::byte_serialize(next_cursor.as_bytes()).collect();
        format!("<{path}?limit={limit}&cursor={cursor}>; rel=\"next\"")
    });
    Linked { data, link }
}

impl<T: Serialize> IntoResponse for Linked<T> {
    fn into_response(self) -> axum::response::Response {
        let mut response = Json(self.data).into_response();
        if let Some(value) = self.link.and_then(|l| HeaderValue::from_str(&l).ok()) {
            response.headers_mut().insert(header::LINK, value);
        }
        response
    }
}

impl<T: JsonSchema> OperationOutput for Linked<T> {
    type Inner = Vec<T>;
    fn inferred_responses(
        ctx: &mut GenContext,
        _: &mut Operation,
    ) -> Vec<(Option<StatusCode>, Response)> {
        let (status, mut response) = success::<Vec<T>>(ctx, 200, "One page");
        response.headers.insert(
            "Link".to_owned(),
            serde_json::from_value(json!({
                "description": "The next page, when there is one: `<...>; rel=\"next\"`",
                "schema": { "type": "string" },
            }))
            .expect("a header"),
        );
        vec![(status, response)]
    }
}
