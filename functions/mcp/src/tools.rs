//! The tools, chosen for agents: read and search contacts, deals, tags,
//! sessions and events; create, update and upsert contacts; create, update,
//! move, win and lose deals; create tags and tag deals. Each is one row of
//! [`TOOLS`]: its schemas come from the same types as the OpenAPI
//! document's ([`crate::schema`]), and it runs as a request of the API
//! ([`Via`], [`crate::call`]).

use serde_json::{Map, Value, json};
use shared::auth::{Resource, Scope};
use shared::domain::contacts::{ContactPatch, ContactQuery, ContactV3, UpsertKey};
use shared::domain::deals::{DealCreate, DealPatch, DealQuery, DealView};
use shared::domain::events::{EventPage, EventQuery};
use shared::domain::sessions::{Session, SessionList, SessionQuery};
use shared::domain::tags::{TagCreate, TagV3};
use shared::http::Create;
use shared::page::{ListPage, OffsetQuery};

use crate::schema::{
    optional, pick, schema, schema_value, with_description, with_id, with_key, with_property,
};

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
        input: || with_key(schema::<Create<ContactPatch>>()),
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
                schema::<ContactPatch>(),
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
                schema::<ContactPatch>(),
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
        input: || with_key(schema::<TagCreate>()),
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
