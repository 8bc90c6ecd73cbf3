//! The wire of MCP's Streamable HTTP transport, stateless: one JSON-RPC
//! message per POST, answered as `application/json` (or 202 for a
//! notification). Every refusal of the HTTP request itself is the API's
//! error shape; what the message asks that cannot be done is a JSON-RPC error.

use std::sync::LazyLock;

use aide::generate::GenContext;
use aide::openapi::{Operation, Response as DocResponse, StatusCode as DocStatus};
use aide::operation::{OperationInput, OperationOutput};
use axum::Json;
use axum::body::Bytes;
use axum::extract::{FromRequest, Request};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use shared::ApiError;
use shared::http::AppState;

/// A JSON-RPC 2.0 request (with an `id`) or notification (without).
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct JsonRpcRequest {
    /// Exactly `"2.0"`.
    pub jsonrpc: String,
    /// A string or an integer; absent in a notification (never `null`).
    #[serde(default, deserialize_with = "present")]
    #[schemars(with = "Option<RpcId>")]
    pub id: Option<Value>,
    /// `initialize`, `ping`, `tools/list`, `tools/call`, `notifications/...`.
    pub method: String,
    #[serde(default)]
    pub params: Option<Map<String, Value>>,
}

/// A member that is there, `null` included (`null` is not "absent": an id
/// of `null` is refused, not taken for a notification).
fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(d).map(Some)
}

/// A request's id, as JSON-RPC allows it here.
#[derive(schemars::JsonSchema)]
#[serde(untagged)]
#[allow(dead_code)] // the document's shape of `id`
enum RpcId {
    Text(String),
    Number(i64),
}

/// A JSON-RPC 2.0 response: `result` or `error`.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct JsonRpcResponse {
    pub jsonrpc: &'static str,
    #[schemars(with = "RpcId")]
    pub id: Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub result: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<RpcError>,
}

impl JsonRpcResponse {
    pub fn new(id: Value, answer: Result<Value, RpcError>) -> Self {
        let (result, error) = match answer {
            Ok(result) => (Some(result), None),
            Err(error) => (None, Some(error)),
        };
        Self {
            jsonrpc: "2.0",
            id,
            result,
            error,
        }
    }
}

/// A JSON-RPC error: what the message asked cannot be done.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct RpcError {
    pub code: i32,
    pub message: String,
}

impl RpcError {
    pub fn method_not_found(method: &str) -> Self {
        Self {
            code: -32601,
            message: format!("no method {method}"),
        }
    }

    pub fn invalid_params(message: impl Into<String>) -> Self {
        Self {
            code: -32602,
            message: message.into(),
        }
    }
}

/// The checked POST: its message and the `Authorization` its tool calls carry.
pub struct Envelope {
    pub message: JsonRpcRequest,
    pub authorization: String,
}

/// The `Origin`s accepted (`CRM_MCP_ALLOWED_ORIGINS`, comma-separated; none
/// by default): a page elsewhere must not drive a local server with the
/// user's token (the transport's DNS-rebinding rule). There is no CORS: a
/// listed origin serves same-origin pages; clients that are not browsers
/// send no `Origin`.
static ORIGINS: LazyLock<Vec<String>> = LazyLock::new(|| {
    std::env::var("CRM_MCP_ALLOWED_ORIGINS")
        .unwrap_or_default()
        .split(',')
        .map(|o| o.trim().to_owned())
        .filter(|o| !o.is_empty())
        .collect()
});

fn checked(headers: &HeaderMap) -> Result<String, ApiError> {
    if let Some(origin) = headers.get(header::ORIGIN) {
        let allowed = origin
            .to_str()
            .is_ok_and(|o| ORIGINS.iter().any(|a| a == o));
        if !allowed {
            return Err(ApiError::new(
                StatusCode::FORBIDDEN,
                "this Origin may not call /mcp (CRM_MCP_ALLOWED_ORIGINS)",
            ));
        }
    }
    let token = shared::auth::bearer(headers)?;
    let json = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.trim_start().starts_with("application/json"));
    if !json {
        return Err(ApiError::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "send the message as Content-Type: application/json",
        ));
    }
    if let Some(accept) = headers.get(header::ACCEPT).and_then(|v| v.to_str().ok()) {
        let takes_json = accept.split(',').any(|part| {
            let media = part.split(';').next().unwrap_or("").trim();
            matches!(media, "application/json" | "application/*" | "*/*")
        });
        if !takes_json {
            return Err(ApiError::new(
                StatusCode::NOT_ACCEPTABLE,
                "this endpoint answers application/json: accept it",
            ));
        }
    }
    if let Some(version) = headers.get("mcp-protocol-version") {
        let known = version.to_str().is_ok_and(|v| crate::VERSIONS.contains(&v));
        if !known {
            return Err(ApiError::field(
                "MCP-Protocol-Version",
                format!("must be one of {}", crate::VERSIONS.join(", ")),
            ));
        }
    }
    Ok(format!("Bearer {}", token.trim()))
}

impl FromRequest<AppState> for Envelope {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &AppState) -> Result<Self, ApiError> {
        let authorization = checked(req.headers())?;
        let bytes = Bytes::from_request(req, state)
            .await
            .map_err(|_| shared::http::body_too_large())?;
        let value: Value = serde_json::from_slice(&bytes)
            .map_err(|e| ApiError::bad_request(format!("malformed JSON: {e}")))?;
        if value.is_array() {
            return Err(ApiError::bad_request(
                "one JSON-RPC message per request: batches are not accepted",
            ));
        }
        let message: JsonRpcRequest = shared::error::from_value(&value)?;
        if message.jsonrpc != "2.0" {
            return Err(ApiError::field("jsonrpc", "must be \"2.0\""));
        }
        if let Some(id) = &message.id
            && !(id.is_string() || id.is_i64() || id.is_u64())
        {
            return Err(ApiError::field("id", "must be a string or an integer"));
        }
        Ok(Self {
            message,
            authorization,
        })
    }
}

impl OperationInput for Envelope {
    fn operation_input(ctx: &mut GenContext, operation: &mut Operation) {
        <shared::http::Body<JsonRpcRequest> as OperationInput>::operation_input(ctx, operation);
    }
}

/// What a POST is answered: a message, or 202 for a notification.
pub enum Answer {
    Message(JsonRpcResponse),
    Accepted,
}

impl IntoResponse for Answer {
    fn into_response(self) -> Response {
        match self {
            Answer::Message(message) => Json(message).into_response(),
            Answer::Accepted => StatusCode::ACCEPTED.into_response(),
        }
    }
}

impl OperationOutput for Answer {
    type Inner = JsonRpcResponse;

    fn inferred_responses(
        ctx: &mut GenContext,
        operation: &mut Operation,
    ) -> Vec<(Option<DocStatus>, DocResponse)> {
        let mut responses =
            <Json<JsonRpcResponse> as OperationOutput>::inferred_responses(ctx, operation);
        responses.push((
            Some(DocStatus::Code(202)),
            DocResponse {
                description: "A notification, accepted".into(),
                ..Default::default()
            },
        ));
        for (code, text) in [
            (403, "An `Origin` not allowed (`CRM_MCP_ALLOWED_ORIGINS`)"),
            (406, "An `Accept` without `application/json`"),
            (415, "A body that is not `application/json`"),
        ] {
            let schema = json!({ "$ref": "#/components/schemas/Error" });
            let media: aide::openapi::MediaType =
                serde_json::from_value(json!({ "schema": schema })).expect("a media type");
            responses.push((
                Some(DocStatus::Code(code)),
                DocResponse {
                    description: text.into(),
                    content: [("application/json".to_owned(), media)].into(),
                    ..Default::default()
                },
            ));
        }
        responses
    }
}
