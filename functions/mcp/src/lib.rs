//! The MCP group: `POST /mcp`, the Model Context Protocol over Streamable
//! HTTP, stateless (each request stands alone, answered as JSON; `GET`
//! answers 405). Its tools ([`tools`]) are relayed through the API's own
//! routes ([`AppState::relay`]): each call is one request of the caller's,
//! checked, scoped, rate-limited and keyed (`idempotencyKey`) exactly as the
//! HTTP API checks it. docs/decisions/0031-mcp-over-the-same-routes.md says why.

mod call;
mod protocol;
mod relay;
mod schema;
pub mod tools;

use axum::extract::State;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use shared::ApiError;
use shared::auth::{Need, Scope};
use shared::deploy::{BATCH, READ, WRITE};
use shared::http::{AppState, Group};

pub use protocol::{Answer, Envelope, JsonRpcRequest, JsonRpcResponse};
use relay::Relayed;

/// The protocol revisions served, newest first (the handshake era: no
/// sessions, JSON answers).
pub const VERSIONS: [&str; 3] = ["2025-11-25", "2025-06-18", "2025-03-26"];

pub fn group() -> Group {
    Group::new("mcp")
        // Each tool call is relayed through the routes of the groups linked
        // into it, so it needs what they need. 12 s: a keyed call stopped at
        // the idempotency deadline (10 s) is still answered.
        .deployed("POST /mcp: tools for AI agents over the contacts, deals, tags, reports and events routes", |f| f.actions(&[READ, BATCH, WRITE]).index().timeout(12))
        .post("/mcp", serve)
        .summary("MCP (Streamable HTTP, stateless): tools for AI agents over this API")
        .describe(DESCRIPTION)
        .extension()
        .needs(Need::Relayed)
        .get("/mcp", no_stream)
        .summary("No event stream here: 405 (the endpoint is stateless)")
        .extension()
        .needs(Need::Public)
}

/// The groups the tools relay to, in the MCP function's own Lambda (in
/// `crm serve`, every group).
pub fn tool_groups() -> Vec<Group> {
    vec![
        contacts::group(),
        deals::group(),
        tags::group(),
        reports::group(),
        events::group(),
        api_tokens::group(),
    ]
}

const DESCRIPTION: &str = "A JSON-RPC 2.0 message of the Model Context Protocol \
(revisions 2025-11-25, 2025-06-18, 2025-03-26): `initialize`, `ping`, `tools/list`, \
`tools/call` and notifications (202). Each tool call is one request of this API, made \
with the caller's token: the tools a token's scopes do not allow are not listed, and a \
call of one is refused naming the scope; write tools take an `idempotencyKey`, kept as an \
`Idempotency-Key`. A refused input is a tool result (`isError`) naming the field.";

const INSTRUCTIONS: &str = "Tools over a CRM: contacts, deals (a sales pipeline), tags, \
conversation sessions and the event feed. Ids are numbers (sessions': strings). Search \
before you create: `upsert_contact` finds a contact by phone, e-mail or externalId. Lists \
page with `limit` and `offset` (events with `after` = the last `nextCursor`). Pass an \
`idempotencyKey` of your own to every write, and the same one when you retry it: the \
write then happens once.";

async fn no_stream() -> Response {
    let mut response = ApiError::new(
        StatusCode::METHOD_NOT_ALLOWED,
        "this MCP endpoint is stateless: no event stream; POST JSON-RPC messages to /mcp",
    )
    .into_response();
    response
        .headers_mut()
        .insert(header::ALLOW, HeaderValue::from_static("POST"));
    response
}

/// One message: a notification is accepted (202), a request answered.
async fn serve(State(state): State<AppState>, envelope: Envelope) -> Result<Answer, ApiError> {
    let relayed = Relayed::new(state, envelope.authorization.clone());
    let message = envelope.message;
    // Every message but a tool call (whose own request checks it) checks
    // the token: one that does not hold is this POST's 401.
    let scopes = match message.method.as_str() {
        "tools/call" => None,
        _ => Some(relayed.scopes().await?),
    };
    let Some(id) = message.id else {
        return Ok(Answer::Accepted);
    };
    let params = message.params.unwrap_or_default();
    let answer = match message.method.as_str() {
        "initialize" => {
            let asked = params.get("protocolVersion").and_then(Value::as_str);
            let version = asked
                .filter(|v| VERSIONS.contains(v))
                .unwrap_or(VERSIONS[0]);
            Ok(json!({
                "protocolVersion": version,
                "capabilities": { "tools": { "listChanged": false } },
                "serverInfo": { "name": "crm", "title": "CRM API", "version": env!("CARGO_PKG_VERSION") },
                "instructions": INSTRUCTIONS,
            }))
        }
        "ping" => Ok(json!({})),
        "tools/list" => Ok(json!({ "tools": tools::listed(&scopes.unwrap_or_default()) })),
        "tools/call" => call::call(&relayed, &params).await?,
        other => Err(protocol::RpcError::method_not_found(other)),
    };
    Ok(Answer::Message(JsonRpcResponse::new(id, answer)))
}

/// Whether `held` lets a token call a tool that needs `scope`.
fn allows(held: &[Scope], scope: Scope) -> bool {
    shared::auth::grants(held, scope)
}
