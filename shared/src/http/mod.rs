//! The HTTP plumbing every function uses: the state, the route groups, the
//! extractors that turn every bad input into a 400 naming the field, and the
//! request context (request id, one log line per request).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Instant;

use axum::Router;
use axum::extract::{DefaultBodyLimit, MatchedPath, Request};
use axum::handler::Handler;
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{MethodFilter, MethodRouter};

mod extract;

pub use extract::{
    Body, MaybeBody, Params, PathId, PathKey, numeric_param, path_param, text_param,
};

pub use crate::context::current_request_id;
use crate::error::ApiError;
pub use crate::error::parse_json;
pub use crate::error::validation_error;
use crate::ids;
use crate::queue::{JobQueue, SharedQueue};
use crate::store::SharedStore;

/// Bodies larger than this are refused with 413 (the largest legitimate body, a
/// 500-contact import, is well under it).
pub const BODY_LIMIT: usize = 512 * 1024;

/// What every handler can reach.
#[derive(Clone)]
pub struct AppState {
    pub store: SharedStore,
    /// Where background jobs go; `None` where no queue is configured.
    pub queue: Option<SharedQueue>,
}

impl AppState {
    pub fn new(store: SharedStore) -> Self {
        Self { store, queue: None }
    }

    pub fn with_queue(mut self, queue: SharedQueue) -> Self {
        self.queue = Some(queue);
        self
    }

    /// The job queue, or a 503 saying it is not configured.
    pub fn jobs(&self) -> Result<&dyn JobQueue, ApiError> {
        self.queue.as_deref().ok_or_else(|| {
            ApiError::unavailable("background jobs are not configured here (CRM_JOB_QUEUE_URL)")
        })
    }
}

/// The id of the request being served: API Gateway's request id on AWS, the
/// caller's `x-request-id` when given, a new ULID otherwise.
#[derive(Debug, Clone)]
pub struct RequestId(pub String);

fn request_id_of(req: &Request) -> String {
    use lambda_http::request::RequestContext;
    if let Some(RequestContext::ApiGatewayV2(ctx)) = req.extensions().get::<RequestContext>()
        && let Some(id) = &ctx.request_id
    {
        return id.clone();
    }
    req.headers()
        .get("x-request-id")
        .and_then(|v| v.to_str().ok())
        .filter(|v| !v.is_empty() && v.len() <= 128)
        .map(str::to_owned)
        .unwrap_or_else(ids::new_ulid)
}

/// Gives the request its id and writes one log line for it. Never logs headers
/// (tokens) or bodies.
async fn request_context(mut req: Request, next: Next) -> Response {
    let started = Instant::now();
    let request_id = request_id_of(&req);
    let method = req.method().clone();
    let route = req
        .extensions()
        .get::<MatchedPath>()
        .map(|p| p.as_str().to_owned())
        .unwrap_or_else(|| "unmatched".to_owned());
    req.extensions_mut().insert(RequestId(request_id.clone()));
    let mut response = crate::context::scope(request_id.clone(), next.run(req)).await;
    let status = response.status().as_u16();
    let latency_ms = started.elapsed().as_secs_f64() * 1000.0;
    tracing::info!(request_id = %request_id, method = %method, route = %route, status, latency_ms, "request");
    if let Ok(value) = HeaderValue::from_str(&request_id) {
        response.headers_mut().insert("x-request-id", value);
    }
    response
}

/// The routes of one resource group: one Lambda function on AWS, one part of the
/// local app. It remembers its routes so tests can hold them against the template.
pub struct Group {
    pub name: &'static str,
    routes: Vec<(Method, &'static str)>,
    paths: BTreeMap<&'static str, MethodRouter<AppState>>,
}

impl Group {
    pub fn new(name: &'static str) -> Self {
        Self {
            name,
            routes: Vec::new(),
            paths: BTreeMap::new(),
        }
    }

    pub fn route<H, T>(mut self, method: Method, path: &'static str, handler: H) -> Self
    where
        H: Handler<T, AppState>,
        T: 'static,
    {
        let filter = MethodFilter::try_from(method.clone()).expect("a standard HTTP method");
        let router = self.paths.remove(path).unwrap_or_default();
        self.paths.insert(path, router.on(filter, handler));
        self.routes.push((method, path));
        self
    }

    pub fn get<H: Handler<T, AppState>, T: 'static>(self, path: &'static str, h: H) -> Self {
        self.route(Method::GET, path, h)
    }
    pub fn post<H: Handler<T, AppState>, T: 'static>(self, path: &'static str, h: H) -> Self {
        self.route(Method::POST, path, h)
    }
    pub fn put<H: Handler<T, AppState>, T: 'static>(self, path: &'static str, h: H) -> Self {
        self.route(Method::PUT, path, h)
    }
    pub fn patch<H: Handler<T, AppState>, T: 'static>(self, path: &'static str, h: H) -> Self {
        self.route(Method::PATCH, path, h)
    }
    pub fn delete<H: Handler<T, AppState>, T: 'static>(self, path: &'static str, h: H) -> Self {
        self.route(Method::DELETE, path, h)
    }

    pub fn routes(&self) -> &[(Method, &'static str)] {
        &self.routes
    }

    fn into_router(self) -> Router<AppState> {
        self.paths
            .into_iter()
            .fold(Router::new(), |router, (path, methods)| {
                router.route(path, methods)
            })
    }
}

/// The application of some groups: one group in a Lambda, all of them in `crm serve`.
pub fn app(state: AppState, groups: Vec<Group>) -> Router {
    groups
        .into_iter()
        .fold(Router::new(), |router, group| {
            router.merge(group.into_router())
        })
        .fallback(no_route)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(DefaultBodyLimit::max(BODY_LIMIT))
        .layer(middleware::from_fn(limits))
        .layer(middleware::from_fn(request_context))
        .with_state(state)
}

/// The longest request target (path and query) served; longer is a 414.
pub const MAX_URI: usize = 8 * 1024;
/// How much of an oversized body is read and thrown away before the 413, and
/// for how long: a client that writes its whole body before reading (most do)
/// then reads the answer instead of a reset connection.
const DRAIN_BYTES: usize = 8 * 1024 * 1024;
const DRAIN_TIME: std::time::Duration = std::time::Duration::from_secs(2);

/// Refuses an over-long request target (414) and a body declared larger than
/// [`BODY_LIMIT`] (413) in the error shape, before any handler; both pass
/// through the request log like every answer. (The HTTP server's own limit on
/// a request head, about 400 KB in hyper, is fifty times this one.)
async fn limits(req: Request, next: Next) -> Response {
    let target = req.uri().path_and_query().map_or(0, |pq| pq.as_str().len());
    if target > MAX_URI {
        return ApiError::new(
            StatusCode::URI_TOO_LONG,
            format!("the request target is longer than {} KB", MAX_URI / 1024),
        )
        .into_response();
    }
    let declared = req
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > BODY_LIMIT as u64) {
        drain(req.into_body()).await;
        return ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            format!("the body is larger than {} KB", BODY_LIMIT / 1024),
        )
        .into_response();
    }
    next.run(req).await
}

/// Reads and drops a body, within [`DRAIN_BYTES`] and [`DRAIN_TIME`].
async fn drain(body: axum::body::Body) {
    use http_body_util::BodyExt;
    let mut body = body;
    let _ = tokio::time::timeout(DRAIN_TIME, async {
        let mut read = 0;
        while let Some(Ok(frame)) = body.frame().await {
            read += frame.data_ref().map_or(0, |d| d.len());
            if read > DRAIN_BYTES {
                break;
            }
        }
    })
    .await;
}

async fn no_route(method: Method, uri: axum::http::Uri) -> ApiError {
    ApiError::new(
        StatusCode::NOT_FOUND,
        format!("no route for {method} {}", uri.path()),
    )
}

async fn method_not_allowed(method: Method, uri: axum::http::Uri) -> ApiError {
    ApiError::new(
        StatusCode::METHOD_NOT_ALLOWED,
        format!("{method} is not allowed on {}", uri.path()),
    )
}

/// 201 Created with a JSON body.
pub fn created<T: serde::Serialize>(body: T) -> Response {
    (StatusCode::CREATED, axum::Json(body)).into_response()
}

/// A `/v1` page as a bare JSON array, with the next page (when there is one) in
/// a `Link: <path?limit=..&cursor=..>; rel="next"` header (RFC 8288).
pub fn next_link<T: serde::Serialize>(
    path: &str,
    limit: u64,
    next_cursor: &str,
    data: T,
) -> Response {
    let mut response = axum::Json(data).into_response();
    if !next_cursor.is_empty() {
        let cursor: String = form_urlencoded::byte_serialize(next_cursor.as_bytes()).collect();
        let link = format!("<{path}?limit={limit}&cursor={cursor}>; rel=\"next\"");
        if let Ok(value) = HeaderValue::from_str(&link) {
            response.headers_mut().insert(header::LINK, value);
        }
    }
    response
}

/// Shorthand for handlers: a JSON body or an [`ApiError`].
pub type Reply<T> = Result<axum::Json<T>, ApiError>;

/// A store shared by every handler of a process.
pub fn shared(store: impl crate::store::Store) -> SharedStore {
    Arc::new(store)
}
