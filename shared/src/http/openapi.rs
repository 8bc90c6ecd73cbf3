//! The OpenAPI 3.1 document, generated from the routes the [`Group`]s serve.
//!
//! A route is added with its handler, and the handler's argument and return
//! types describe the operation (aide's `OperationInput`/`OperationOutput`,
//! schemas from schemars, which reads the same serde and validator attributes
//! that parse the input). So a route cannot be served without being described,
//! and a description cannot disagree with the types that do the parsing.
//! Nothing is generated until [`document`] is called: a Lambda's cold start
//! only stores one function pointer per route.

use aide::generate::{GenContext, in_context};
use aide::openapi::{
    MediaType, Operation, Parameter, ReferenceOr, RequestBody, Response, SchemaObject, StatusCode,
};
use aide::operation::{
    OperationInput, OperationOutput, ParamLocation, add_parameters, parameters_from_schema,
};
use schemars::JsonSchema;
use serde_json::{Value, json};

use super::Group;
use super::extract::{Body, Grouped, InPath, MaybeBody, Params, PathParam};
use crate::auth::{Caller, Need};
use crate::error::{ApiError, ErrorBody};
use crate::query::GroupedQuery;

/// Fills an operation from a handler's types.
pub(super) type Describe = fn(&mut GenContext, &mut Operation);

/// The [`Describe`] of a handler taking `I` and returning `O`.
pub(super) fn describe<I: OperationInput, O: OperationOutput>(
    ctx: &mut GenContext,
    operation: &mut Operation,
) {
    I::operation_input(ctx, operation);
    // Early answers of the extractors (401, 400...) are set first and win:
    // they are the ones a request meets before the handler runs.
    let mut all = I::inferred_early_responses(ctx, operation);
    all.extend(O::inferred_responses(ctx, operation));
    let responses = operation.responses.get_or_insert_with(Default::default);
    for (status, response) in all {
        match status {
            Some(status) => {
                responses
                    .responses
                    .entry(status)
                    .or_insert(ReferenceOr::Item(response));
            }
            None => {
                responses.default.get_or_insert(ReferenceOr::Item(response));
            }
        }
    }
}

/// The document of these groups, as JSON.
pub fn document(groups: &[Group]) -> Value {
    let mut paths = serde_json::Map::new();
    let mut schemas = serde_json::Map::new();
    let mut webhooks = serde_json::Map::new();
    in_context(|ctx| {
        for group in groups {
            for route in &group.routes {
                let mut operation = Operation {
                    operation_id: Some(route.operation_id.clone()),
                    tags: vec![group.name.to_owned()],
                    summary: route.summary.map(str::to_owned),
                    description: route.description.map(str::to_owned),
                    ..Default::default()
                };
                (route.describe)(ctx, &mut operation);
                // Any route can meet the middleware's answers (414, 413...).
                let responses = operation.responses.get_or_insert_with(Default::default);
                if responses.default.is_none() {
                    responses.default = Some(ReferenceOr::Item(error_response(
                        ctx,
                        "A request refused before the route: 414 target too long, 413 body too large",
                    )));
                }
                if route.method == axum::http::Method::POST && route.need != Some(Need::Relayed) {
                    idempotency_key(&mut operation);
                }
                if route.extension {
                    operation
                        .extensions
                        .insert("x-extension".into(), json!(true));
                }
                security(ctx, &mut operation, route.need);
                let item = paths
                    .entry(route.path.to_owned())
                    .or_insert_with(|| json!({}));
                let mut operation = serde_json::to_value(&operation).expect("an operation is JSON");
                let parameters = operation
                    .get_mut("parameters")
                    .and_then(Value::as_array_mut);
                for parameter in parameters.into_iter().flatten() {
                    strip_null(&mut parameter["schema"]);
                }
                super::clients::declare_headers(&mut operation, &route.method);
                item[route.method.as_str().to_ascii_lowercase()] = operation;
            }
        }
        let outgoing: Vec<&super::outgoing::Outgoing> =
            groups.iter().flat_map(|g| &g.outgoing).collect();
        webhooks = super::outgoing::section(ctx, &outgoing);
        for (name, mut schema) in ctx.schema.take_definitions(true) {
            drop_null_defaults(&mut schema);
            schemas.insert(name, schema);
        }
    });
    aide::generate::reset_context();
    let mut document = json!({
        "openapi": "3.1.0",
        "info": {
            "title": "CRM API",
            "version": env!("CARGO_PKG_VERSION"),
            "description": INTRODUCTION,
        },
        "paths": paths,
        "webhooks": webhooks,
        "components": {
            "schemas": schemas,
            "securitySchemes": {
                "bearer": {
                    "type": "http",
                    "scheme": "bearer",
                    "description": "An API token: `Authorization: Bearer crm_...`",
                },
            },
        },
    });
    super::links::add_links(&mut document);
    super::clients::apply(&mut document);
    document
}

/// The operation's security requirement names the scope it needs, and a
/// scoped operation may answer 403; a public one has none.
fn security(ctx: &mut GenContext, operation: &mut Operation, need: Option<Need>) {
    match need {
        Some(Need::Public) => operation.security = Vec::new(),
        Some(need) => {
            let scopes = need
                .scope()
                .map(|s| vec![s.to_string()])
                .unwrap_or_default();
            operation.security = vec![[("bearer".to_owned(), scopes)].into()];
            // The middleware's answers to every authenticated request.
            let responses = operation.responses.get_or_insert_with(Default::default);
            for (code, text) in [
                (401, "No token, or an unknown, revoked or expired one"),
                (
                    429,
                    "A rate limit reached (`Retry-After`; `RateLimit` and `RateLimit-Policy` say where the caller stands)",
                ),
            ] {
                if !responses.responses.contains_key(&StatusCode::Code(code)) {
                    let answer = error_response(ctx, text);
                    responses
                        .responses
                        .insert(StatusCode::Code(code), ReferenceOr::Item(answer));
                }
            }
            if let Some(scope) = need.scope() {
                let responses = operation.responses.get_or_insert_with(Default::default);
                let refusal = error_response(
                    ctx,
                    &format!(
                        "The token lacks `{scope}` (`X-Accepted-Scopes` lists the scopes that grant it)"
                    ),
                );
                responses
                    .responses
                    .insert(StatusCode::Code(403), ReferenceOr::Item(refusal));
            }
        }
        None => {}
    }
}

/// A parameter left out is absent, never `null`: `Option<T>` in a query or a
/// path is documented as `T`.
pub(super) fn strip_null(schema: &mut Value) {
    if let Some(types) = schema.get_mut("type").and_then(Value::as_array_mut) {
        types.retain(|t| t != "null");
        if types.len() == 1 {
            schema["type"] = types[0].clone();
        }
    }
    if let Some(any_of) = schema.get_mut("anyOf").and_then(Value::as_array_mut) {
        any_of.retain(|s| s.get("type").is_none_or(|t| t != "null"));
        if any_of.len() == 1 {
            let only = any_of[0].clone();
            schema.as_object_mut().map(|o| o.remove("anyOf"));
            if let (Some(object), Value::Object(only)) = (schema.as_object_mut(), only) {
                object.extend(only);
            }
        }
    }
}

/// `"default": null` says nothing a reader needs (absent is absent) and
/// contradicts a non-nullable type: dropped everywhere.
fn drop_null_defaults(schema: &mut Value) {
    match schema {
        Value::Object(object) => {
            if object.get("default") == Some(&Value::Null) {
                object.remove("default");
            }
            object.values_mut().for_each(drop_null_defaults);
        }
        Value::Array(items) => items.iter_mut().for_each(drop_null_defaults),
        _ => {}
    }
}

/// Every `POST` takes an `Idempotency-Key` (see `crate::idempotency`).
fn idempotency_key(operation: &mut Operation) {
    let parameter: Parameter = serde_json::from_value(json!({
        "in": "header",
        "name": "Idempotency-Key",
        "required": false,
        "description": "Any 1 to 255 printable ASCII characters, new for each new request. \
            A retry with the same key and body answers the first response again with \
            `Idempotent-Replayed: true` (for 24 hours); the same key with another body or \
            path is 422; while the first request runs, 409.",
        "schema": { "type": "string", "minLength": 1, "maxLength": 255, "pattern": "^[!-~]([ -~]*[!-~])?$" },
    }))
    .expect("a header parameter");
    operation.parameters.push(ReferenceOr::Item(parameter));
}

const INTRODUCTION: &str = "The customer-conversation and sales-pipeline API, `/v1` and \
`/v3`. Every request carries `Authorization: Bearer <token>`; every error has one shape \
(`Error`). Operations marked `x-extension` are not in the original API specification. \
A `POST` takes an `Idempotency-Key` header: a retry with the same key answers the first \
response with `Idempotent-Replayed: true`.";

/// `{"application/json": {"schema": ...}}`.
fn json_content(schema: schemars::Schema) -> aide::openapi::Content {
    let media = MediaType {
        schema: Some(SchemaObject {
            json_schema: schema,
            example: None,
            external_docs: None,
        }),
        ..Default::default()
    };
    [("application/json".to_owned(), media)].into()
}

fn json_response(description: &str, schema: schemars::Schema) -> Response {
    Response {
        description: description.to_owned(),
        content: json_content(schema),
        ..Default::default()
    }
}

fn error_response(ctx: &mut GenContext, description: &str) -> Response {
    json_response(description, ctx.schema.subschema_for::<ErrorBody>())
}

fn errors(ctx: &mut GenContext, list: &[(u16, &str)]) -> Vec<(Option<StatusCode>, Response)> {
    list.iter()
        .map(|&(code, description)| {
            (
                Some(StatusCode::Code(code)),
                error_response(ctx, description),
            )
        })
        .collect()
}

/// A JSON success response with the schema of `T`.
pub(crate) fn success<T: JsonSchema>(
    ctx: &mut GenContext,
    code: u16,
    description: &str,
) -> (Option<StatusCode>, Response) {
    let schema = ctx.schema.subschema_for::<T>();
    (
        Some(StatusCode::Code(code)),
        json_response(description, schema),
    )
}

// ------------------------------------------------------------------ inputs

/// The answers an extractor gives before the handler runs.
macro_rules! early_errors {
    ($list:expr) => {
        fn inferred_early_responses(
            ctx: &mut GenContext,
            _: &mut Operation,
        ) -> Vec<(Option<StatusCode>, Response)> {
            errors(ctx, $list)
        }
    };
}

impl OperationInput for Caller {
    fn operation_input(_: &mut GenContext, operation: &mut Operation) {
        operation.security = vec![[("bearer".to_owned(), Vec::new())].into()];
    }
    early_errors!(&[(401, "No token, or an unknown, revoked or expired one")]);
}

/// The caller's part of the document: the state is no input.
impl OperationInput for super::Ctx {
    fn operation_input(ctx: &mut GenContext, operation: &mut Operation) {
        Caller::operation_input(ctx, operation);
    }

    fn inferred_early_responses(
        ctx: &mut GenContext,
        operation: &mut Operation,
    ) -> Vec<(Option<StatusCode>, Response)> {
        Caller::inferred_early_responses(ctx, operation)
    }
}

fn body<T: JsonSchema>(ctx: &mut GenContext, operation: &mut Operation, required: bool) {
    let schema = ctx.schema.subschema_for::<T>();
    operation.request_body = Some(ReferenceOr::Item(RequestBody {
        content: json_content(schema),
        required,
        ..Default::default()
    }));
}

const BODY_ERRORS: &[(u16, &str)] = &[
    (
        400,
        "The body is not JSON, or a field is missing, unknown or invalid (named in `details`)",
    ),
    (413, "The body is larger than 512 KB"),
    (415, "The body is not `application/json`"),
];

impl<T: JsonSchema> OperationInput for Body<T> {
    fn operation_input(ctx: &mut GenContext, operation: &mut Operation) {
        body::<T>(ctx, operation, true);
    }
    early_errors!(BODY_ERRORS);
}

impl<T: JsonSchema> OperationInput for MaybeBody<T> {
    fn operation_input(ctx: &mut GenContext, operation: &mut Operation) {
        body::<T>(ctx, operation, false);
    }
    early_errors!(BODY_ERRORS);
}

impl<T: JsonSchema> OperationInput for Params<T> {
    fn operation_input(ctx: &mut GenContext, operation: &mut Operation) {
        let schema = ctx.schema.subschema_for::<T>();
        let params = parameters_from_schema(ctx, schema, ParamLocation::Query);
        add_parameters(ctx, operation, params);
    }
    early_errors!(&[(400, "A query parameter is unknown or invalid")]);
}

fn path_parameter(operation: &mut Operation, name: &str, schema: Value) {
    let parameter: Parameter = serde_json::from_value(json!({
        "in": "path", "name": name, "required": true, "schema": schema,
    }))
    .expect("a path parameter");
    operation.parameters.push(ReferenceOr::Item(parameter));
}

/// The schema of a numeric id in a path.
pub fn id_schema() -> Value {
    json!({ "type": "integer", "format": "int64", "minimum": 1, "maximum": 9007199254740991_u64 })
}

// ------------------------------------------------------------------ outputs

impl OperationOutput for ApiError {
    type Inner = ();
    fn inferred_responses(
        ctx: &mut GenContext,
        _: &mut Operation,
    ) -> Vec<(Option<StatusCode>, Response)> {
        vec![(
            None,
            error_response(
                ctx,
                "Any other failure: 403 not allowed, 404 not found, 409 conflict, \
                 422 idempotency key reused, 429 or 503 retry later (`Retry-After`)",
            ),
        )]
    }
}

impl<T: JsonSchema + GroupedQuery> OperationInput for Grouped<T> {
    fn operation_input(ctx: &mut GenContext, operation: &mut Operation) {
        let schema = ctx.schema.subschema_for::<T>();
        let params = parameters_from_schema(ctx, schema.clone(), ParamLocation::Query);
        add_parameters(ctx, operation, params);
        for group in T::SPEC.groups {
            let parameter: Parameter = serde_json::from_value(json!({
                "in": "query",
                "name": group,
                "style": "deepObject",
                "explode": true,
                // Any of the parameters, none required: the spec does not say
                // which sit in which grouping.
                "schema": { "type": "object", "additionalProperties": true },
                "description": format!(
                    "The same parameters grouped: `{group}[status]=won`, \
                     `{group}[stageId][]=a`, or as JSON: `{group}={{\"status\":\"won\"}}`. \
                     `sort[field]=asc` is `sortBy=field&sort=asc`."
                ),
            }))
            .expect("a query parameter");
            operation.parameters.push(ReferenceOr::Item(parameter));
        }
    }
    early_errors!(&[(400, "A query parameter is unknown or invalid")]);
}

impl<P: PathParam> OperationInput for InPath<P> {
    fn operation_input(_: &mut GenContext, operation: &mut Operation) {
        path_parameter(operation, P::NAME, P::schema());
    }
    early_errors!(P::ERRORS);
}

/// Every `{name}` of a route's path must be described by one of its
/// extractors; the document test fails on one that is not.
pub fn undescribed_path_parameters(path: &str, operation: &Value) -> Vec<String> {
    path.split('/')
        .filter_map(|s| s.strip_prefix('{')?.strip_suffix('}'))
        .filter(|name| {
            !operation["parameters"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|p| p["in"] == "path" && p["name"].as_str() == Some(name))
        })
        .map(str::to_owned)
        .collect()
}
