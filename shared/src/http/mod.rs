//! The HTTP plumbing every function uses: the state, the route groups, the
//! extractors that turn every bad input into a 400 naming the field, and the
//! request context (request id, one log line per request).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Instant;

use aide::operation::{OperationHandler, OperationInput, OperationOutput};
use axum::Router;
use axum::extract::{DefaultBodyLimit, MatchedPath, Request, State};
use axum::handler::Handler;
use axum::http::{HeaderName, HeaderValue, Method, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{MethodFilter, MethodRouter};

mod bounds;
mod clients;
mod create;
mod extract;
mod guard;
mod idempotent;
mod links;
pub mod openapi;
pub mod outgoing;
mod reply;
mod state;

pub use bounds::MAX_URI;
pub use create::Create;
pub use extract::{
    Body, Ctx, Grouped, InPath, MaybeBody, NumericId, Params, PathId, PathKey, PathParam, TextId,
    path_param, positive_id,
};
pub use guard::Meter;

pub use state::{AppState, Relay, StateFields};

pub use reply::{Created, Linked, MultiStatus, Progress, Reply, Saved, created, next_link};

use crate::auth::{Need, Resource, Scope};
pub use crate::context::current_request_id;
use crate::error::ApiError;
pub use crate::error::parse_json;
pub use crate::error::validation_error;
use crate::ids;
use crate::store::SharedStore;

/// Bodies larger than this are refused with 413 (the largest legitimate body, a
/// 500-contact import, is well under it).
pub const BODY_LIMIT: usize = 512 * 1024;

/// 413: a body over [`BODY_LIMIT`].
pub fn body_too_large() -> ApiError {
    ApiError::new(
        StatusCode::PAYLOAD_TOO_LARGE,
        format!("the body is larger than {} KB", BODY_LIMIT / 1024),
    )
}

/// Made once (a name given as text is checked and hashed at each use).
const X_REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");

/// The id of the request being served: API Gateway's request id on AWS, the
/// caller's `x-request-id` when given, a new ULID otherwise.
fn request_id_of(req: &Request) -> String {
    use lambda_http::request::RequestContext;
    if let Some(RequestContext::ApiGatewayV2(ctx)) = req.extensions().get::<RequestContext>()
        && let Some(id) = &ctx.request_id
    {
        return id.clone();
    }
    req.headers()
        .get(&X_REQUEST_ID)
        .and_then(|v| v.to_str().ok())
        .filter(|v| !v.is_empty() && v.len() <= 128)
        .map(str::to_owned)
        .unwrap_or_else(ids::new_ulid)
}

/// What the middleware around every route holds.
#[derive(Clone)]
struct Served {
    state: AppState,
    /// The routes, for answering a keyed retry by reading.
    reads: Arc<idempotent::Reader>,
}

/// Around every route: gives the request its id, applies the [`bounds`] and
/// the `Idempotency-Key` ([`idempotent`]), holds the answer until the token
/// holds, and writes one log line. Never logs headers (tokens) or bodies.
async fn around(State(served): State<Served>, req: Request, next: Next) -> Response {
    let started = Instant::now();
    let request_id = request_id_of(&req);
    let method = req.method().clone();
    let route = req.extensions().get::<MatchedPath>().cloned();
    let clock = served.state.clock.clone();
    // Boxed: the request's future is large (the guard, the key's claim, the
    // handler), and each scope below moves what it wraps; a pointer moves
    // for nothing where the future cost a 7,000-instruction copy each time
    // (callgrind: memcpy was 16% of a GET by id in process).
    let serve = Box::pin(async {
        let response = match bounds::limits(req).await {
            Ok(mut req) => match guard::authenticate(&served.state, &mut req).await {
                Ok(guard::Guarded::Caller(caller)) => {
                    guard::limited(served, caller, req, next).await
                }
                Ok(guard::Guarded::Public) => idempotent::idempotent(served, req, next).await,
                Ok(guard::Guarded::Relayed) => next.run(req).await,
                Err(refused) => refused.into_response(),
            },
            Err(refused) => refused,
        };
        // Nothing leaves before the token holds, even from a handler that read nothing.
        match crate::context::gate::<crate::auth::TokenCheck>() {
            Some(check) => match check.verdict().await {
                Ok(_) => response,
                Err(refusal) => {
                    // A 403 says where the token stands, as `guard::limited` found it.
                    let mut refused = refusal.into_response();
                    for name in guard::RATE_LIMIT_HEADERS {
                        if let Some(value) = response.headers().get(&name) {
                            refused.headers_mut().insert(name, value.clone());
                        }
                    }
                    refused
                }
            },
            None => response,
        }
    });
    let mut response =
        crate::context::scope(request_id.clone(), ids::with_clock(clock, serve)).await;
    let status = response.status().as_u16();
    let latency_ms = started.elapsed().as_secs_f64() * 1000.0;
    tracing::info!(request_id = %request_id, method = %method, route = %route.as_ref().map_or("unmatched", MatchedPath::as_str), status, latency_ms, "request");
    if let Ok(value) = HeaderValue::from_str(&request_id) {
        response.headers_mut().insert(X_REQUEST_ID, value);
    }
    response
}

/// One route of a group, and what describes it in the OpenAPI document.
pub struct Route {
    pub method: Method,
    pub path: &'static str,
    /// The handler's path (`tags::list_v1`), unique in the service.
    pub operation_id: String,
    pub summary: Option<&'static str>,
    /// What the summary leaves out: for a route whose answer depends on
    /// more than the scope it needs (the event feed, the webhooks), which
    /// scopes decide what it answers.
    pub description: Option<&'static str>,
    /// Not in the original API specification.
    pub extension: bool,
    /// What its caller needs: from the group's resource and the method
    /// (`GET`: `<resource>:read`, others `<resource>:write`), or declared
    /// with [`Group::needs`]. `None`: undeclared, which a test refuses.
    pub need: Option<Need>,
    /// Where a keyed retry reads this create's answer again when the first
    /// answer was not kept ([`crate::idempotency`]).
    pub read_back: Option<ReadBackRoute>,
    describe: openapi::Describe,
}

/// A create's answer, read again: `GET path` (`{id}`: the id of the record
/// it made; other parameters: the create's own), answered with `status`
/// and `header`, as the create answered.
#[derive(Debug, Clone, Copy)]
pub struct ReadBackRoute {
    pub path: &'static str,
    pub status: u16,
    pub header: Option<(&'static str, &'static str)>,
}

/// `group.get(path, handler)` and its siblings: [`Group::route`] with a method.
macro_rules! method_shorthands {
    ($($name:ident $method:ident),*) => {$(
        pub fn $name<H, T, I, O>(self, path: &'static str, handler: H) -> Self
        where
            H: Handler<T, AppState> + OperationHandler<I, O>,
            T: 'static,
            I: OperationInput,
            O: OperationOutput,
        {
            self.route(Method::$method, path, handler)
        }
    )*};
}

/// The routes of one resource group: one Lambda function on AWS, one part of the
/// local app. It remembers its routes so that tests can hold them against the
/// template and the OpenAPI document can be generated from them.
pub struct Group {
    pub name: &'static str,
    /// The resource whose scopes its routes need ([`Group::scoped`]).
    resource: Option<Resource>,
    routes: Vec<Route>,
    paths: BTreeMap<&'static str, MethodRouter<AppState>>,
    /// What it POSTs to others (webhooks), for the document.
    outgoing: Vec<outgoing::Outgoing>,
    /// Its Lambda function ([`Group::deployed`]).
    function: Option<crate::deploy::Function>,
}

impl Group {
    pub fn new(name: &'static str) -> Self {
        Self {
            name,
            resource: None,
            routes: Vec::new(),
            paths: BTreeMap::new(),
            outgoing: Vec::new(),
            function: None,
        }
    }

    /// Its Lambda function: what the deployed stack says of it and what it
    /// may do on AWS (`crate::deploy`; infra/functions.json is made of these).
    pub fn deployed(
        mut self,
        description: &'static str,
        function: impl FnOnce(crate::deploy::Function) -> crate::deploy::Function,
    ) -> Self {
        self.function = Some(function(crate::deploy::Function::new(
            self.name,
            description,
        )));
        self
    }

    /// Its Lambda function, as [`Group::deployed`] declared it.
    pub fn function(&self) -> Option<&crate::deploy::Function> {
        self.function.as_ref()
    }

    /// Its routes need `resource`'s scopes: `<resource>:read` to `GET`,
    /// `<resource>:write` for any other method. Call before adding routes.
    pub fn scoped(mut self, resource: Resource) -> Self {
        self.resource = Some(resource);
        self
    }

    /// The route added last needs `need` instead of its group's scope.
    pub fn needs(mut self, need: Need) -> Self {
        if let Some(route) = self.routes.last_mut() {
            route.need = Some(need);
        }
        self
    }

    /// The group POSTs payloads of type `T` named `names` to others: they are
    /// the document's `webhooks`.
    pub fn delivers<T: schemars::JsonSchema>(
        mut self,
        names: &'static [&'static str],
        summary: &'static str,
    ) -> Self {
        self.outgoing
            .push(outgoing::Outgoing::of::<T>(names, summary));
        self
    }

    /// Serves `handler` at `method path`. Its argument and return types must
    /// describe themselves (see [`openapi`]), so no route goes undocumented.
    pub fn route<H, T, I, O>(mut self, method: Method, path: &'static str, handler: H) -> Self
    where
        H: Handler<T, AppState> + OperationHandler<I, O>,
        T: 'static,
        I: OperationInput,
        O: OperationOutput,
    {
        let filter = MethodFilter::try_from(method.clone()).expect("a standard HTTP method");
        let router = self.paths.remove(path).unwrap_or_default();
        self.paths.insert(path, router.on(filter, handler));
        let need = self.resource.map(|resource| {
            Need::Scope(if method == Method::GET {
                Scope::Read(resource)
            } else {
                Scope::Write(resource)
            })
        });
        self.routes.push(Route {
            need,
            method,
            path,
            operation_id: std::any::type_name::<H>().replace("::", "."),
            summary: None,
            description: None,
            extension: false,
            read_back: None,
            describe: openapi::describe::<I, O>,
        });
        self
    }

    method_shorthands!(get GET, post POST, put PUT, patch PATCH, delete DELETE);

    /// The one-line summary of the route added last.
    pub fn summary(mut self, text: &'static str) -> Self {
        if let Some(route) = self.routes.last_mut() {
            route.summary = Some(text);
        }
        self
    }

    /// The description of the route added last (the document's
    /// `description`: what the summary leaves out).
    pub fn describe(mut self, text: &'static str) -> Self {
        if let Some(route) = self.routes.last_mut() {
            route.description = Some(text);
        }
        self
    }

    /// Describes each payload of the [`Group::delivers`] added last: `note`
    /// of its name (for webhooks: which scope an endpoint's token needs to
    /// be sent it).
    pub fn noting(mut self, note: fn(&str) -> String) -> Self {
        if let Some(outgoing) = self.outgoing.last_mut() {
            outgoing.note = Some(note);
        }
        self
    }

    /// Marks the route added last as an extension of the original API.
    pub fn extension(mut self) -> Self {
        if let Some(route) = self.routes.last_mut() {
            route.extension = true;
        }
        self
    }

    /// The route added last answers 201 with the record it made, which
    /// `GET path` reads (`{id}`: its id): a keyed retry whose first answer
    /// was not kept is answered from there.
    pub fn reads_back(self, path: &'static str) -> Self {
        self.read_back(ReadBackRoute {
            path,
            status: 201,
            header: None,
        })
    }

    /// [`Group::reads_back`] for a create that marks its answer with a header.
    pub fn read_back(mut self, read_back: ReadBackRoute) -> Self {
        if let Some(route) = self.routes.last_mut() {
            route.read_back = Some(read_back);
        }
        self
    }

    pub fn routes(&self) -> &[Route] {
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
pub fn app(mut state: AppState, groups: Vec<Group>) -> Router {
    state.needs = Arc::new(
        groups
            .iter()
            .flat_map(|g| g.routes())
            .filter_map(|r| Some(((r.method.clone(), r.path), r.need?)))
            .collect(),
    );
    let read_backs: Vec<(&'static str, ReadBackRoute)> = groups
        .iter()
        .flat_map(|g| g.routes())
        .filter_map(|r| Some((r.path, r.read_back?)))
        .collect();
    let routes = groups.into_iter().fold(Router::new(), |router, group| {
        router.merge(group.into_router())
    });
    let served = Served {
        reads: Arc::new(idempotent::Reader::new(
            routes.clone().with_state(state.clone()),
            read_backs,
        )),
        state: state.clone(),
    };
    routes
        .fallback(no_route)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(DefaultBodyLimit::max(BODY_LIMIT))
        // One middleware, not one per concern: each layer costs every request
        // a clone of the routes' service and a boxed future.
        .layer(middleware::from_fn_with_state(served, around))
        .with_state(state)
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

/// A store shared by every handler of a process.
pub fn shared(store: impl crate::store::Store) -> SharedStore {
    Arc::new(store)
}
