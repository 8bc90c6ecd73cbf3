//! What the API POSTs to others (webhook deliveries), for the document's
//! OpenAPI 3.1 `webhooks` section: one entry per event type, each with the
//! payload's schema and the Standard Webhooks headers a receiver verifies.

use aide::generate::GenContext;
use schemars::JsonSchema;
use serde_json::{Value, json};

/// Payloads a group delivers: their names (event types) and schema.
pub struct Outgoing {
    pub names: &'static [&'static str],
    pub summary: &'static str,
    /// Said of each name in its entry's `description` (`Group::noting`).
    pub note: Option<fn(&str) -> String>,
    pub(super) schema: fn(&mut GenContext) -> schemars::Schema,
}

impl Outgoing {
    pub fn of<T: JsonSchema>(names: &'static [&'static str], summary: &'static str) -> Self {
        Self {
            names,
            summary,
            note: None,
            schema: |ctx| ctx.schema.subschema_for::<T>(),
        }
    }
}

/// The `webhooks` entries of `outgoing`.
pub(super) fn section(
    ctx: &mut GenContext,
    outgoing: &[&Outgoing],
) -> serde_json::Map<String, Value> {
    let header = |name: &str, description: &str| json!({ "name": name, "in": "header", "required": true, "description": description, "schema": { "type": "string" } });
    let mut section = serde_json::Map::new();
    for out in outgoing {
        let schema = serde_json::to_value((out.schema)(ctx)).unwrap_or(Value::Null);
        for name in out.names {
            let mut entry = json!({ "post": {
                "operationId": format!("webhook.{name}"),
                "summary": format!("{} ({name})", out.summary),
                "parameters": [
                    header("webhook-id", "The event's id: the same on every retry; drop what you already have."),
                    header("webhook-timestamp", "When this attempt was signed, in epoch seconds: refuse one far from now."),
                    header("webhook-signature", "`v1,` and the base64 HMAC-SHA256 of `<webhook-id>.<webhook-timestamp>.<body>` keyed by the secret's bytes; during a rotation, one per secret, space-separated."),
                ],
                "requestBody": { "required": true, "content": { "application/json": { "schema": schema } } },
                "responses": {
                    "2XX": { "description": "Received: the delivery ends." },
                    "410": { "description": "Gone: the endpoint is disabled, no event is sent again." },
                    "default": { "description": "Anything else, or no answer within 15 s: the event is sent again (5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 14 h, 20 h, 24 h; a 429's or 503's Retry-After is honoured)." },
                },
            }});
            if let Some(note) = out.note {
                entry["post"]["description"] = json!(note(name));
            }
            section.insert((*name).to_owned(), entry);
        }
    }
    section
}
