//! The extractors: every bad input (body, query, path) becomes a 400 naming
//! the field, in the one error shape.

use axum::body::Bytes;
use axum::extract::{FromRequest, FromRequestParts, RawPathParams, Request};
use axum::http::{Method, StatusCode, header, request::Parts};
use serde::de::DeserializeOwned;
use validator::Validate;

use super::AppState;
use crate::auth::Caller;
use crate::error::{ApiError, parse_json, serde_problem, validation_error};

/// A JSON body, parsed strictly (unknown fields are refused) and validated.
pub struct Body<T>(pub T);

impl<T, S> FromRequest<S> for Body<T>
where
    T: DeserializeOwned + Validate,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, ApiError> {
        if let Some(content_type) = req.headers().get(header::CONTENT_TYPE) {
            let json = content_type
                .to_str()
                .ok()
                .and_then(|v| v.split(';').next())
                .map(|v| v.trim().to_ascii_lowercase())
                .is_some_and(|v| v == "application/json" || v.ends_with("+json"));
            if !json {
                return Err(ApiError::new(
                    StatusCode::UNSUPPORTED_MEDIA_TYPE,
                    "the body must be JSON (Content-Type: application/json)",
                ));
            }
        }
        let bytes = body_bytes(req, state).await?;
        if bytes.iter().all(u8::is_ascii_whitespace) {
            return Err(ApiError::bad_request("a JSON body is required"));
        }
        let value = parse_json::<T>(&bytes)?;
        value.validate().map_err(validation_error)?;
        Ok(Body(value))
    }
}

/// The bytes of a body, within [`super::BODY_LIMIT`] (413 past it).
async fn body_bytes<S: Send + Sync>(req: Request, state: &S) -> Result<Bytes, ApiError> {
    Bytes::from_request(req, state).await.map_err(|rejection| {
        if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
            super::body_too_large()
        } else {
            ApiError::bad_request(format!("could not read the body: {rejection}"))
        }
    })
}

/// A JSON body that may be left out (empty): `None`. Present, it is [`Body`].
pub struct MaybeBody<T>(pub Option<T>);

impl<T, S> FromRequest<S> for MaybeBody<T>
where
    T: DeserializeOwned + Validate,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, ApiError> {
        let empty = req
            .headers()
            .get(header::CONTENT_LENGTH)
            .is_some_and(|v| v.as_bytes() == b"0")
            || (req.headers().get(header::CONTENT_LENGTH).is_none()
                && req.headers().get(header::TRANSFER_ENCODING).is_none()
                && req.headers().get(header::CONTENT_TYPE).is_none());
        if empty {
            return Ok(MaybeBody(None));
        }
        let bytes = body_bytes(req, state).await?;
        if bytes.iter().all(u8::is_ascii_whitespace) {
            return Ok(MaybeBody(None));
        }
        let value = parse_json::<T>(&bytes)?;
        value.validate().map_err(validation_error)?;
        Ok(MaybeBody(Some(value)))
    }
}

/// Query parameters, parsed strictly (unknown parameters are refused) and validated.
pub struct Params<T>(pub T);

impl<T, S> FromRequestParts<S> for Params<T>
where
    T: DeserializeOwned + Validate,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, ApiError> {
        let query = parts.uri.query().unwrap_or("");
        let de = serde_urlencoded::Deserializer::new(form_urlencoded::parse(query.as_bytes()));
        let value: T = serde_path_to_error::deserialize(de).map_err(|e| {
            let path = e.path().to_string();
            let message = e.into_inner().to_string();
            let message =
                if message.contains("invalid digit") || message.contains("number too large") {
                    "must be a whole number".to_owned()
                } else if message.contains("provided string was not `true` or `false`") {
                    "must be true or false".to_owned()
                } else {
                    message
                };
            serde_problem(&path, &message)
        })?;
        value.validate().map_err(validation_error)?;
        Ok(Params(value))
    }
}

/// One named parameter of the matched route's path.
pub async fn path_param<S: Send + Sync>(
    parts: &mut Parts,
    state: &S,
    name: &str,
) -> Result<String, ApiError> {
    let params = RawPathParams::from_request_parts(parts, state)
        .await
        .map_err(|e| ApiError::bad_request(format!("bad path: {e}")))?;
    params
        .iter()
        .find(|(key, _)| *key == name)
        .map(|(_, value)| value.to_owned())
        .ok_or_else(|| ApiError::internal(format!("route without {{{name}}}")))
}

/// A named parameter of the path, parsed by its type: `InPath<DashboardId>`.
/// The type names the parameter and its schema, so the OpenAPI document
/// describes exactly what the handler parses.
pub trait PathParam {
    const NAME: &'static str;
    /// The answers a request with this parameter may get before its handler
    /// runs (the OpenAPI document's).
    const ERRORS: &'static [(u16, &'static str)] = &[(400, "A path parameter is malformed")];
    type Value;
    fn parse(raw: &str) -> Result<Self::Value, ApiError>;
    /// The JSON schema of the parameter.
    fn schema() -> serde_json::Value;
}

/// The parameter `P` of the matched path. Malformed is 400.
pub struct InPath<P: PathParam>(pub P::Value);

impl<S: Send + Sync, P: PathParam> FromRequestParts<S> for InPath<P> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        let raw = path_param(parts, state, P::NAME).await?;
        P::parse(&raw).map(InPath)
    }
}

/// The positive whole number of path parameter `param`, or its 400: how
/// every numeric id of a path is read.
pub fn positive_id(raw: &str, param: &'static str) -> Result<u64, ApiError> {
    raw.parse::<u64>()
        .ok()
        .filter(|&id| id > 0)
        .ok_or_else(|| ApiError::field(param, "must be a positive whole number"))
}

/// Declares a [`PathParam`] that is a positive whole number (and, after its name, the
/// answers it may get early, when not only a 400).
#[macro_export]
macro_rules! numeric_path_param {
    ($(#[$doc:meta])* $name:ident, $param:literal) => {
        $crate::numeric_path_param!($(#[$doc])* $name, $param, &[(400, "A path parameter is malformed")]);
    };
    ($(#[$doc:meta])* $name:ident, $param:literal, $errors:expr) => {
        $(#[$doc])*
        pub struct $name;
        impl $crate::http::PathParam for $name {
            const NAME: &'static str = $param;
            const ERRORS: &'static [(u16, &'static str)] = $errors;
            type Value = u64;
            fn parse(raw: &str) -> Result<u64, $crate::ApiError> {
                $crate::http::positive_id(raw, $param)
            }
            fn schema() -> serde_json::Value {
                $crate::http::openapi::id_schema()
            }
        }
    };
}

/// Declares a [`PathParam`] that is free text (and, after its name, the
/// answers it may get early, when not only a 400).
#[macro_export]
macro_rules! text_path_param {
    ($(#[$doc:meta])* $name:ident, $param:literal) => {
        $crate::text_path_param!($(#[$doc])* $name, $param, &[(400, "A path parameter is malformed")]);
    };
    ($(#[$doc:meta])* $name:ident, $param:literal, $errors:expr) => {
        $(#[$doc])*
        pub struct $name;
        impl $crate::http::PathParam for $name {
            const NAME: &'static str = $param;
            const ERRORS: &'static [(u16, &'static str)] = $errors;
            type Value = String;
            fn parse(raw: &str) -> Result<String, $crate::ApiError> {
                Ok(raw.to_owned())
            }
            fn schema() -> serde_json::Value {
                serde_json::json!({ "type": "string", "minLength": 1 })
            }
        }
    };
}

/// A query string in the grouped forms of [`crate::query`] (`status=won`,
/// `filters[status]=won`, `filters={"status":"won"}`), parsed into `T`.
pub struct Grouped<T>(pub T);

impl<S: Send + Sync, T: crate::query::GroupedQuery> FromRequestParts<S> for Grouped<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, ApiError> {
        crate::query::parse(parts.uri.query().unwrap_or(""), &T::SPEC).map(Grouped)
    }
}

/// The caller, from the `Authorization` header: one token read (see
/// [`Caller::authenticate`]).
impl FromRequestParts<AppState> for Caller {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        // Authenticated already (by the Idempotency-Key middleware): no second read.
        if let Some(caller) = parts.extensions.get::<Caller>() {
            return Ok(caller.clone());
        }
        // Not authenticated by the middleware: a route that declared nothing
        // (a test refuses those) is open to admins alone.
        let reads_only = matches!(parts.method, Method::GET | Method::HEAD);
        let need = crate::auth::Need::Scope(crate::auth::Scope::Admin);
        Caller::authenticate(&parts.headers, reads_only, state.ungated.clone(), need).await
    }
}

/// What a handler hands to the domain: the app's state (its store, queue
/// and files) and the authenticated caller, in one extractor, so that a
/// handler reads `cx.store()` and `&cx.caller`.
#[derive(Clone)]
pub struct Ctx {
    pub state: AppState,
    pub caller: Caller,
}

impl Ctx {
    /// The request's store (gated by its token check).
    pub fn store(&self) -> &dyn crate::store::Store {
        self.state.store.as_ref()
    }
}

impl FromRequestParts<AppState> for Ctx {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        let caller = Caller::from_request_parts(parts, state).await?;
        Ok(Ctx {
            state: state.clone(),
            caller,
        })
    }
}

numeric_path_param!(
    /// The numeric `{id}` of a path ([`PathId`]).
    NumericId,
    "id",
    &[
        (400, "The id is not a positive whole number"),
        (404, "No such record in the caller's workspace"),
    ]
);

text_path_param!(
    /// The text `{id}` of a path ([`PathKey`]).
    TextId,
    "id",
    &[(404, "No such record in the caller's workspace")]
);

/// The numeric `{id}` of a path: `InPath(id): PathId`. A malformed id is
/// 400; a well-formed unknown one is 404.
pub type PathId = InPath<NumericId>;

/// The string `{id}` of a path (API tokens, audit entries, sessions,
/// snapshots): `InPath(id): PathKey`.
pub type PathKey = InPath<TextId>;

/// An id type's `{id}` (or the parameter its declaration names), as
/// [`NumericId`] reads it and typed: `InPath(id): InPath<DealId>`.
impl<Id: crate::ids::IdType> PathParam for Id {
    const NAME: &'static str = Id::PATH_PARAM;
    const ERRORS: &'static [(u16, &'static str)] = NumericId::ERRORS;
    type Value = Id;
    fn parse(raw: &str) -> Result<Id, ApiError> {
        positive_id(raw, Id::PATH_PARAM).map(Id::from)
    }
    fn schema() -> serde_json::Value {
        NumericId::schema()
    }
}
