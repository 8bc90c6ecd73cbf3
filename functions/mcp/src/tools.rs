//! The tools, chosen for agents: read and search contacts, deals, tags,
//! sessions and events; create, update and upsert contacts; create, update,
//! move, win and lose deals; create tags and tag deals. Each is one row of
//! [`TOOLS`]: its schemas come from the same types as the OpenAPI
//! document's, and it runs as a request of the API ([`Via`]).

use axum::http::Method;
use schemars::JsonSchema;
use schemars::generate::SchemaSettings;
use serde_json::{Map, Value, json};
use shared::ApiError;
use shared::auth::{Resource, Scope};
use shared::domain::contacts::{ContactInput, ContactQuery, ContactV3, UpsertKey};
use shared::domain::deals::{DealCreate, DealPatch, DealQuery, DealView};
use shared::domain::events::{EventPage, EventQuery};
use shared::domain::sessions::{Session, SessionList, SessionQuery};
use shared::domain::tags::{CreateTag, TagV3};
use shared::page::{ListPage, OffsetQuery};

use crate::protocol::RpcError;
use crate::relay::{Relayed, Reply};

/// One tool.
pub struct Tool {
    pub name: &'static str,
    pub title: &'static str,
    /// Written for a model: when to use it, what comes back.
    pub description: &'static str,
    /// The scope its route needs: a token without it does not see the tool.
    pub scope: Scope,
    /// `readOnlyHint`, `destructiveHint`, `idempotentHint`.
    pub hints: (bool, bool, bool),
    pub input: fn() -> Value,
    pub output: fn() -> Value,
    pub via: Via,
}

/// How a tool runs as a request of the API.
pub enum Via {
    /// `GET path`: `{id}` (a number) or `{key}` (text) from the `id`
    /// argument, the others as the query (lists as repeated names), after
    /// `defaults` filled in what was not given.
    Get {
        path: &'static str,
        defaults: fn(&mut Map<String, Value>),
    },
    /// `POST path` with the arguments as its body.
    Post(&'static str),
    /// One operation of the batch at `path` (a write keyed like any POST):
    /// `op` on the record `id` (or found `by`), the other arguments as its
    /// `data` with `set` added.
    Batch {
        path: &'static str,
        op: &'static str,
        set: &'static [(&'static str, &'static str)],
    },
    /// Reads the deal, then updates its `tagIds` with `add` and `remove`.
    TagDeal,
}

const KEY: &str = "idempotencyKey";

const READ: (bool, bool, bool) = (true, false, true);
const CREATE: (bool, bool, bool) = (false, false, false);
const UPDATE: (bool, bool, bool) = (false, true, true);

pub static TOOLS: &[Tool] = &[
    Tool {
        name: "search_contacts",
        title: "Search contacts",
        description: "Find contacts: `search` matches name, e-mail and phone (from 3 characters); `emailExact` one e-mail. Without filters, the newest first. Answers a page (`data`, `totalCount`); page on with `offset`. Use `get_contact` for one id.",
        scope: Scope::Read(Resource::Contacts),
        hints: READ,
        input: || schema::<ContactQuery>(),
        output: || schema::<ListPage<ContactV3>>(),
        via: Via::Get {
            path: "/v3/contacts",
            defaults: given,
        },
    },
    Tool {
        name: "get_contact",
        title: "Read a contact",
        description: "One contact by its numeric `id`, with its phones, e-mail, tags and custom fields.",
        scope: Scope::Read(Resource::Contacts),
        hints: READ,
        input: || {
            with_id(
                json!({ "type": "object", "properties": {} }),
                "integer",
                "The contact's id",
            )
        },
        output: || schema::<ContactV3>(),
        via: Via::Get {
            path: "/v3/contacts/{id}",
            defaults: given,
        },
    },
    Tool {
        name: "create_contact",
        title: "Create a contact",
        description: "Creates a contact. A phone or e-mail another contact has is refused (409): use `upsert_contact` to create or update by phone, e-mail or externalId. Pass an `idempotencyKey` and the same one when you retry: the contact is created once.",
        scope: Scope::Write(Resource::Contacts),
        hints: CREATE,
        input: || with_key(schema::<ContactInput>()),
        output: || schema::<ContactV3>(),
        via: Via::Post("/v3/contacts"),
    },
    Tool {
        name: "update_contact",
        title: "Update a contact",
        description: "Changes the given fields of the contact `id`; `null` clears one. Answers the contact as it is now. Pass an `idempotencyKey` when you retry.",
        scope: Scope::Write(Resource::Contacts),
        hints: UPDATE,
        input: || {
            with_key(with_id(
                schema::<ContactInput>(),
                "integer",
                "The contact's id",
            ))
        },
        output: || schema::<ContactV3>(),
        via: Via::Batch {
            path: "/v3/contacts/batch",
            op: "update",
            set: &[],
        },
    },
    Tool {
        name: "upsert_contact",
        title: "Create or update a contact",
        description: "Finds the contact `by` its `phone` (the default), `email` or `externalId` and updates it with the other fields, or creates it when there is none. Prefer it to `create_contact` when the contact may exist. Pass an `idempotencyKey` when you retry.",
        scope: Scope::Write(Resource::Contacts),
        hints: UPDATE,
        input: || {
            with_key(with_property(
                schema::<ContactInput>(),
                "by",
                schema_value::<UpsertKey>(
                    "What finds the contact: `phone` (the default), `email` or `externalId`",
                ),
                false,
            ))
        },
        output: || schema::<ContactV3>(),
        via: Via::Batch {
            path: "/v3/contacts/batch",
            op: "upsert",
            set: &[],
        },
    },
    Tool {
        name: "search_deals",
        title: "Search deals",
        description: "Find deals of the pipeline: by `stageId`, `status` (`open`, `won`, `lost`), `pipelineId`, `contactId`, `tagId`, dates. Every deal is seen unless you pass `userId` (with `roleId`, and `isOwner: true` for an owner, who sees all) to see what one user sees. Answers a page (`data`, `totalCount`); page on with `offset`.",
        scope: Scope::Read(Resource::Deals),
        hints: READ,
        input: || optional(schema::<DealQuery>(), &["roleId", "isOwner", "userId"]),
        output: || schema::<ListPage<DealView>>(),
        via: Via::Get {
            path: "/v3/deals",
            defaults: every_deal_unless_a_user,
        },
    },
    Tool {
        name: "get_deal",
        title: "Read a deal",
        description: "One deal by its numeric `id`: value, stage, status, contact, tags and products.",
        scope: Scope::Read(Resource::Deals),
        hints: READ,
        input: || {
            with_id(
                json!({ "type": "object", "properties": {} }),
                "integer",
                "The deal's id",
            )
        },
        output: || schema::<DealView>(),
        via: Via::Get {
            path: "/v3/deals/{id}",
            defaults: given,
        },
    },
    Tool {
        name: "create_deal",
        title: "Create a deal",
        description: "Creates a deal in a pipeline's stage, for a contact (`contactId`) or a new one (`contact`). Pass an `idempotencyKey` and the same one when you retry: the deal is created once.",
        scope: Scope::Write(Resource::Deals),
        hints: CREATE,
        input: || with_key(schema::<DealCreate>()),
        output: || schema::<DealView>(),
        via: Via::Post("/v3/deals"),
    },
    Tool {
        name: "update_deal",
        title: "Update a deal",
        description: "Changes the given fields of the deal `id` (name, value, stage, status, tags, products...). For the usual moves use `move_deal`, `win_deal` or `lose_deal`. Pass an `idempotencyKey` when you retry.",
        scope: Scope::Write(Resource::Deals),
        hints: UPDATE,
        input: || with_key(with_id(schema::<DealPatch>(), "integer", "The deal's id")),
        output: || schema::<DealView>(),
        via: Via::Batch {
            path: "/v3/deals/batch",
            op: "update",
            set: &[],
        },
    },
    Tool {
        name: "move_deal",
        title: "Move a deal to a stage",
        description: "Moves the deal `id` to `stageId` (and `pipelineId`, when the stage is another pipeline's). Pass an `idempotencyKey` when you retry.",
        scope: Scope::Write(Resource::Deals),
        hints: UPDATE,
        input: || {
            with_key(with_id(
                pick(
                    schema::<DealPatch>(),
                    &["stageId", "pipelineId"],
                    &["stageId"],
                ),
                "integer",
                "The deal's id",
            ))
        },
        output: || schema::<DealView>(),
        via: Via::Batch {
            path: "/v3/deals/batch",
            op: "update",
            set: &[],
        },
    },
    Tool {
        name: "win_deal",
        title: "Mark a deal won",
        description: "Marks the deal `id` won (at `wonLostDate`, or now). Pass an `idempotencyKey` when you retry.",
        scope: Scope::Write(Resource::Deals),
        hints: UPDATE,
        input: || {
            with_key(with_id(
                pick(schema::<DealPatch>(), &["wonLostDate"], &[]),
                "integer",
                "The deal's id",
            ))
        },
        output: || schema::<DealView>(),
        via: Via::Batch {
            path: "/v3/deals/batch",
            op: "update",
            set: &[("status", "won")],
        },
    },
    Tool {
        name: "lose_deal",
        title: "Mark a deal lost",
        description: "Marks the deal `id` lost, with the reasons (`lostReason`, a list) and a note (`lostReasonObs`). Pass an `idempotencyKey` when you retry.",
        scope: Scope::Write(Resource::Deals),
        hints: UPDATE,
        input: || {
            with_key(with_id(
                pick(
                    schema::<DealPatch>(),
                    &["lostReason", "lostReasonObs", "wonLostDate"],
                    &[],
                ),
                "integer",
                "The deal's id",
            ))
        },
        output: || schema::<DealView>(),
        via: Via::Batch {
            path: "/v3/deals/batch",
            op: "update",
            set: &[("status", "lost")],
        },
    },
    Tool {
        name: "tag_deal",
        title: "Tag a deal",
        description: "Adds the tags `add` to the deal `id` and removes the tags `remove` (tag ids: see `list_tags`, or make one with `create_tag`). Answers the deal.",
        scope: Scope::Write(Resource::Deals),
        hints: UPDATE, // `remove` takes tags off
        input: || {
            let ids = json!({ "type": "array", "items": { "type": "integer", "minimum": 0 }, "maxItems": 20 });
            let schema = json!({ "type": "object", "properties": {} });
            let schema = with_property(
                schema,
                "add",
                with_description(ids.clone(), "Tag ids to add"),
                false,
            );
            let schema = with_property(
                schema,
                "remove",
                with_description(ids, "Tag ids to remove"),
                false,
            );
            with_key(with_id(schema, "integer", "The deal's id"))
        },
        output: || schema::<DealView>(),
        via: Via::TagDeal,
    },
    Tool {
        name: "list_tags",
        title: "List tags",
        description: "The workspace's tags (id, name, color), oldest first; page with `offset`.",
        scope: Scope::Read(Resource::Tags),
        hints: READ,
        input: || schema::<OffsetQuery>(),
        output: || schema::<ListPage<TagV3>>(),
        via: Via::Get {
            path: "/v3/tags",
            defaults: given,
        },
    },
    Tool {
        name: "create_tag",
        title: "Create a tag",
        description: "Creates a tag; a name another tag has (without case) is refused (409): list the tags first. Pass an `idempotencyKey` and the same one when you retry.",
        scope: Scope::Write(Resource::Tags),
        hints: CREATE,
        input: || with_key(schema::<CreateTag>()),
        output: || schema::<TagV3>(),
        via: Via::Post("/v3/tags"),
    },
    Tool {
        name: "search_sessions",
        title: "Search conversation sessions",
        description: "The conversation sessions (chats with contacts) with their metrics: by `channels`, `tags`, `from`/`to`, state (`isFinished`, `waiting`...). Answers a page; page on with `offset`.",
        scope: Scope::Read(Resource::Reports),
        hints: READ,
        input: || schema::<SessionQuery>(),
        output: || schema::<SessionList>(),
        via: Via::Get {
            path: "/v3/reports/sessions",
            defaults: given,
        },
    },
    Tool {
        name: "get_session",
        title: "Read a session",
        description: "One conversation session by its `id` (a string).",
        scope: Scope::Read(Resource::Reports),
        hints: READ,
        input: || {
            with_id(
                json!({ "type": "object", "properties": {} }),
                "string",
                "The session's id",
            )
        },
        output: || schema::<Session>(),
        via: Via::Get {
            path: "/v3/reports/sessions/{key}",
            defaults: given,
        },
    },
    Tool {
        name: "list_events",
        title: "Read the event feed",
        description: "What changed, oldest first: `contact.created`, `deal.updated`... (`types`, comma-separated, `deal.*` for a family). Keep `nextCursor` and pass it as `after` to read on; `hasMore` false means come back later. Only the events your token's scopes may read.",
        scope: Scope::Read(Resource::Events),
        hints: READ,
        input: || schema::<EventQuery>(),
        output: || schema::<EventPage>(),
        via: Via::Get {
            path: "/v3/events",
            defaults: given,
        },
    },
];

/// The tools a token with `scopes` may call, as `tools/list` answers them.
pub fn listed(scopes: &[Scope]) -> Vec<Value> {
    TOOLS
        .iter()
        .filter(|tool| crate::allows(scopes, tool.scope))
        .map(describe)
        .collect()
}

/// A tool as `tools/list` describes it.
pub fn describe(tool: &Tool) -> Value {
    let (read_only, destructive, idempotent) = tool.hints;
    json!({
        "name": tool.name,
        "title": tool.title,
        "description": tool.description,
        "inputSchema": (tool.input)(),
        "outputSchema": (tool.output)(),
        "annotations": {
            "title": tool.title,
            "readOnlyHint": read_only,
            "destructiveHint": destructive,
            "idempotentHint": idempotent,
            "openWorldHint": false,
        },
    })
}

/// `tools/call`: a refused input, a refused scope or a failed request is a
/// tool result a model can act on (`isError`); only a token that does not
/// hold is the POST's own 401.
pub async fn call(
    relayed: &Relayed,
    params: &Map<String, Value>,
) -> Result<Result<Value, RpcError>, ApiError> {
    let Some(name) = params.get("name").and_then(Value::as_str) else {
        return Ok(Err(RpcError::invalid_params("`name`: the tool to call")));
    };
    let Some(tool) = TOOLS.iter().find(|t| t.name == name) else {
        return Ok(Err(RpcError::invalid_params(format!("no tool {name}"))));
    };
    let arguments = match params.get("arguments") {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(arguments)) => arguments.clone(),
        Some(_) => return Ok(Ok(refused("`arguments` must be an object"))),
    };
    let reply = match run(relayed, tool, arguments).await? {
        Ok(reply) => reply,
        Err(problem) => return Ok(Ok(refused(&problem))),
    };
    if reply.status == axum::http::StatusCode::UNAUTHORIZED {
        return Err(reply.error());
    }
    Ok(Ok(answer(&reply)))
}

/// Runs `tool` with `arguments`: the API's answer, or what is wrong with the arguments.
async fn run(
    relayed: &Relayed,
    tool: &Tool,
    mut arguments: Map<String, Value>,
) -> Result<Result<Reply, String>, ApiError> {
    let key = match arguments.remove(KEY) {
        None | Some(Value::Null) => None,
        Some(Value::String(key)) if shared::idempotency::valid_key(&key) => Some(key),
        Some(_) => {
            return Ok(Err(format!(
                "{KEY}: must be 1 to 255 printable ASCII characters"
            )));
        }
    };
    let key = key.as_deref();
    match &tool.via {
        Via::Get { path, defaults } => {
            arguments.retain(|_, value| !value.is_null()); // absent, as a query has it
            let path = match fill_id(path, &mut arguments) {
                Ok(path) => path,
                Err(problem) => return Ok(Err(problem)),
            };
            defaults(&mut arguments);
            let target = match query(&arguments) {
                Ok(query) if query.is_empty() => path,
                Ok(query) => format!("{path}?{query}"),
                Err(problem) => return Ok(Err(problem)),
            };
            Ok(Ok(relayed.send(Method::GET, &target, None, None).await?))
        }
        Via::Post(path) => Ok(Ok(relayed
            .send(
                Method::POST,
                path,
                Some(canonical(&Value::Object(arguments))),
                key,
            )
            .await?)),
        Via::Batch { path, op, set } => {
            let mut operation = Map::new();
            operation.insert("op".into(), json!(op));
            if let Some(id) = arguments.remove("id") {
                operation.insert("id".into(), id);
            }
            if let Some(by) = arguments.remove("by") {
                operation.insert("by".into(), by);
            }
            for (name, value) in *set {
                arguments.insert((*name).to_owned(), json!(value));
            }
            operation.insert("data".into(), Value::Object(arguments));
            let body = json!({ "operations": [operation] });
            let reply = relayed
                .send(Method::POST, path, Some(canonical(&body)), key)
                .await?;
            Ok(Ok(unwrap_batch(reply)))
        }
        Via::TagDeal => {
            let Some(id) = arguments.get("id").and_then(Value::as_u64) else {
                return Ok(Err("id: the deal's id, a number".into()));
            };
            let ids = |name: &str| -> Result<Vec<u64>, String> {
                match arguments.get(name) {
                    None | Some(Value::Null) => Ok(Vec::new()),
                    Some(Value::Array(items)) => items
                        .iter()
                        .map(|i| i.as_u64().ok_or(format!("{name}: tag ids, numbers")))
                        .collect(),
                    Some(_) => Err(format!("{name}: a list of tag ids")),
                }
            };
            let (add, remove) = match (ids("add"), ids("remove")) {
                (Ok(add), Ok(remove)) => (add, remove),
                (Err(problem), _) | (_, Err(problem)) => return Ok(Err(problem)),
            };
            let deal = relayed
                .send(Method::GET, &format!("/v3/deals/{id}"), None, None)
                .await?;
            if !deal.status.is_success() {
                return Ok(Ok(deal));
            }
            let mut tags: Vec<u64> = deal.body["tagIds"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_u64)
                .filter(|t| !remove.contains(t))
                .collect();
            for tag in add {
                if !tags.contains(&tag) {
                    tags.push(tag);
                }
            }
            let body =
                json!({ "operations": [{ "op": "update", "id": id, "data": { "tagIds": tags } }] });
            let reply = relayed
                .send(Method::POST, "/v3/deals/batch", Some(canonical(&body)), key)
                .await?;
            Ok(Ok(unwrap_batch(reply)))
        }
    }
}

/// No defaults: the query as given.
fn given(_: &mut Map<String, Value>) {}

/// `GET /v3/deals` requires `roleId`, `isOwner` and `userId` (the spec's):
/// an agent that names no user sees every deal (as an owner); one that
/// names a user sees what that user sees.
fn every_deal_unless_a_user(arguments: &mut Map<String, Value>) {
    let named = ["roleId", "isOwner", "userId"]
        .iter()
        .any(|name| arguments.contains_key(*name));
    for (name, value) in [
        ("isOwner", json!(!named)),
        ("roleId", json!(0)),
        ("userId", json!(0)),
    ] {
        arguments.entry(name).or_insert(value);
    }
}

/// `path` with its `{id}` (a number) or `{key}` (text, one path segment)
/// filled from the `id` argument, taken out of them.
fn fill_id(path: &str, arguments: &mut Map<String, Value>) -> Result<String, String> {
    if path.contains("{id}") {
        return match arguments.remove("id") {
            Some(Value::Number(n)) if n.is_u64() => Ok(path.replace("{id}", &n.to_string())),
            _ => Err("id: the record's id, a number, is required".into()),
        };
    }
    if path.contains("{key}") {
        return match arguments.remove("id") {
            Some(Value::String(key)) if !key.is_empty() && key != "." && key != ".." => {
                Ok(path.replace("{key}", &segment(&key)))
            }
            _ => Err("id: the record's id, a string, is required".into()),
        };
    }
    Ok(path.to_owned())
}

/// `text` as one path segment: every byte but the unreserved percent-encoded.
fn segment(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || b"-._~".contains(&byte) {
            out.push(char::from(byte));
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

/// The arguments as a query: lists as repeated names.
fn query(arguments: &Map<String, Value>) -> Result<String, String> {
    let mut pairs: Vec<(String, String)> = Vec::new();
    for (name, value) in arguments {
        let mut push = |value: &Value| -> Result<(), String> {
            let text = match value {
                Value::String(s) => s.clone(),
                Value::Number(n) => n.to_string(),
                Value::Bool(b) => b.to_string(),
                Value::Null => return Ok(()),
                _ => return Err(format!("{name}: must be a string, a number or a boolean")),
            };
            pairs.push((name.clone(), text));
            Ok(())
        };
        match value {
            Value::Array(items) => items.iter().try_for_each(&mut push)?,
            other => push(other)?,
        }
    }
    serde_urlencoded::to_string(&pairs).map_err(|e| e.to_string())
}

/// One byte string for one JSON value: a retry with the same key sends the
/// same bytes (the key's record compares them). `serde_json` keeps object
/// keys sorted, so its compact text is canonical.
fn canonical(value: &Value) -> Vec<u8> {
    serde_json::to_vec(value).unwrap_or_default()
}

/// A batch of one answered as that one operation's own request would be.
fn unwrap_batch(mut reply: Reply) -> Reply {
    if !reply.status.is_success() {
        return reply;
    }
    let Some(result) = reply
        .body
        .get_mut("results")
        .and_then(|results| results.get_mut(0))
        .map(Value::take)
    else {
        return reply;
    };
    let status = result["status"]
        .as_u64()
        .and_then(|s| u16::try_from(s).ok())
        .and_then(|s| axum::http::StatusCode::from_u16(s).ok())
        .unwrap_or(reply.status);
    reply.body = if status.is_success() {
        result["data"].clone()
    } else {
        let mut error = result["error"].clone();
        if let Some(message) = error["message"].as_str() {
            let plain = message
                .replace("operations[0].data.", "")
                .replace("operations[0].", "");
            error["message"] = json!(plain);
        }
        // The fields as the tool's arguments name them.
        if let Some(details) = error["details"].as_array_mut() {
            for detail in details {
                if let Some(field) = detail["field"].as_str() {
                    let plain = field
                        .trim_start_matches("operations[0].")
                        .trim_start_matches("data.")
                        .to_owned();
                    detail["field"] = json!(plain);
                }
            }
        }
        error
    };
    reply.status = status;
    reply
}

/// A tool result: the record or page, or the error a model can act on.
fn answer(reply: &Reply) -> Value {
    if reply.status.is_success() {
        let text = serde_json::to_string(&reply.body).unwrap_or_default();
        let mut content = vec![json!({ "type": "text", "text": text })];
        if reply.headers.get("idempotent-replayed").is_some() {
            content.push(json!({ "type": "text", "text": "(a retry: this is the first call's answer; nothing was done again)" }));
        }
        return json!({ "content": content, "structuredContent": reply.body, "isError": false });
    }
    let mut lines = vec![format!(
        "{} {}: {}",
        reply.status.as_u16(),
        reply.status.canonical_reason().unwrap_or("Error"),
        reply.body["message"]
            .as_str()
            .unwrap_or("the request failed")
    )];
    for detail in reply.body["details"].as_array().into_iter().flatten() {
        let line = format!(
            "{}: {}",
            detail["field"].as_str().unwrap_or("?"),
            detail["problem"].as_str().unwrap_or("?")
        );
        if !lines[0].ends_with(&line) {
            lines.push(line);
        }
    }
    if let Some(seconds) = reply.retry_after() {
        lines.push(format!(
            "Retry after {seconds} s, with the same idempotencyKey."
        ));
    }
    refused(&lines.join("\n"))
}

fn refused(text: &str) -> Value {
    json!({ "content": [{ "type": "text", "text": text }], "isError": true })
}

/// `T`'s JSON Schema (2020-12, its definitions under `$defs`), as the
/// OpenAPI document has it.
fn schema<T: JsonSchema>() -> Value {
    let mut schema = raw_schema::<T>();
    if let Some(object) = schema.as_object_mut() {
        object.entry("type").or_insert(json!("object"));
    }
    schema
}

fn raw_schema<T: JsonSchema>() -> Value {
    let generator = SchemaSettings::draft2020_12().into_generator();
    let mut schema =
        serde_json::to_value(generator.into_root_schema_for::<T>()).unwrap_or_default();
    if let Some(object) = schema.as_object_mut() {
        object.remove("$schema");
        object.remove("title");
    }
    schema
}

/// A small type's schema (one without definitions) as one property's.
fn schema_value<T: JsonSchema>(description: &str) -> Value {
    let mut value = raw_schema::<T>();
    value["description"] = json!(description);
    value
}

fn with_description(mut schema: Value, description: &str) -> Value {
    schema["description"] = json!(description);
    schema
}

/// `schema` with one more property, `required` or not.
fn with_property(mut schema: Value, name: &str, property: Value, required: bool) -> Value {
    schema["properties"][name] = property;
    if required {
        match schema["required"].as_array_mut() {
            Some(names) => names.push(json!(name)),
            None => schema["required"] = json!([name]),
        }
    }
    schema
}

fn with_id(schema: Value, kind: &str, description: &str) -> Value {
    let id = match kind {
        "integer" => json!({ "type": "integer", "minimum": 1, "description": description }),
        _ => json!({ "type": "string", "minLength": 1, "description": description }),
    };
    with_property(schema, "id", id, true)
}

fn with_key(schema: Value) -> Value {
    let key = json!({
        "type": "string", "minLength": 1, "maxLength": 255,
        "description": "Your own key for this write (any 1 to 255 printable ASCII characters): send the same one when you retry and the write happens once; a new write needs a new key.",
    });
    with_property(schema, KEY, key, false)
}

/// `schema` with only `names` among its properties, `required` of them required.
fn pick(mut schema: Value, names: &[&str], required: &[&str]) -> Value {
    if let Some(properties) = schema["properties"].as_object_mut() {
        properties.retain(|name, _| names.contains(&name.as_str()));
    }
    schema["required"] = json!(required);
    schema
}

/// `schema` with `names` no longer required.
fn optional(mut schema: Value, names: &[&str]) -> Value {
    if let Some(required) = schema["required"].as_array_mut() {
        required.retain(|r| !r.as_str().is_some_and(|r| names.contains(&r)));
    }
    schema
}
