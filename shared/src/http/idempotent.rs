//! The `Idempotency-Key` of every `POST` (see [`crate::idempotency`]): claims
//! the key before the handler, answers a retry with the stored response (or
//! by reading what the first request made) and `Idempotent-Replayed: true`,
//! and keeps the answer after the handler.

use std::collections::HashMap;

use axum::Router;
use axum::body::{Body, to_bytes};
use axum::extract::{FromRequestParts, MatchedPath, RawPathParams, Request};
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderName, HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use tower::ServiceExt;

use super::{BODY_LIMIT, ReadBackRoute, Served};
use crate::auth::Caller;
use crate::error::ApiError;
use crate::idempotency::{self, Begin, ReadBack, ReadBackRule, Sealer, Sender};

pub const IDEMPOTENCY_KEY: &str = "idempotency-key";
pub const REPLAYED: &str = "idempotent-replayed";

/// Response headers a replay repeats; the others (date, request id) are the
/// replay's own.
fn kept(name: &HeaderName) -> bool {
    name == header::CONTENT_TYPE
        || name == header::LOCATION
        || name == header::LINK
        || name.as_str().starts_with("x-") && name.as_str() != "x-request-id"
}

/// The app's routes without the middleware, and the read-back of each
/// create that has one: what answers a keyed retry by reading.
pub(super) struct Reader {
    routes: Router,
    read_backs: HashMap<&'static str, ReadBackRoute>,
}

impl Reader {
    pub(super) fn new(routes: Router, read_backs: Vec<(&'static str, ReadBackRoute)>) -> Self {
        Self {
            routes,
            read_backs: read_backs.into_iter().collect(),
        }
    }

    /// The read-back of the route this request matched, its own path
    /// parameters filled in.
    async fn rule(&self, parts: &mut Parts) -> Option<ReadBackRule> {
        let route = parts.extensions.get::<MatchedPath>()?.as_str();
        let declared = self.read_backs.get(route)?;
        let mut path = declared.path.to_owned();
        if let Ok(params) = RawPathParams::from_request_parts(parts, &()).await {
            for (name, value) in &params {
                path = path.replace(&format!("{{{name}}}"), value);
            }
        }
        Some(ReadBackRule {
            path,
            status: declared.status,
            headers: declared
                .header
                .iter()
                .map(|(name, value)| ((*name).to_owned(), (*value).to_owned()))
                .collect(),
        })
    }

    /// The first request's answer, read again for `caller`: the `GET` of
    /// what it made, with the status and header the first answer had.
    async fn answer(&self, caller: Caller, read_back: ReadBack) -> Response {
        let mut request = Request::get(&read_back.path)
            .body(Body::empty())
            .expect("a GET of a path the API wrote");
        request.extensions_mut().insert(caller);
        let response = match self.routes.clone().oneshot(request).await {
            Ok(response) => response,
            Err(never) => match never {},
        };
        // A failure to read (the store unavailable) is answered as it is:
        // the client retries. A record gone since is the first answer lost.
        if response.status().is_server_error() {
            return response;
        }
        if !response.status().is_success() {
            return ApiError::conflict(format!(
                "this request was applied and made {}, which cannot be read now ({}); \
                 a new request needs a new Idempotency-Key",
                read_back.path,
                response.status()
            ))
            .into_response();
        }
        let (mut parts, body) = response.into_parts();
        parts.status = StatusCode::from_u16(read_back.status).unwrap_or(StatusCode::OK);
        let mut response = Response::from_parts(parts, body);
        set_headers(response.headers_mut(), &read_back.headers);
        response
            .headers_mut()
            .insert(REPLAYED, HeaderValue::from_static("true"));
        response
    }
}

pub(super) async fn idempotent(served: Served, req: Request, next: Next) -> Response {
    if req.method() != Method::POST || !req.headers().contains_key(IDEMPOTENCY_KEY) {
        return next.run(req).await;
    }
    match run(served, req, next).await {
        Ok(response) | Err(response) => response,
    }
}

async fn run(served: Served, req: Request, next: Next) -> Result<Response, Response> {
    let state = &served.state;
    let key = req
        .headers()
        .get(IDEMPOTENCY_KEY)
        .and_then(|v| v.to_str().ok())
        .filter(|k| idempotency::valid_key(k))
        .map(str::to_owned)
        .ok_or_else(|| {
            ApiError::field(
                "Idempotency-Key",
                "must be 1 to 255 printable ASCII characters",
            )
            .into_response()
        })?;
    let (mut parts, body) = req.into_parts();
    // The caller is known before the body is read; the handler reuses it.
    let caller = Caller::from_request_parts(&mut parts, state)
        .await
        .map_err(IntoResponse::into_response)?;
    let bytes = to_bytes(body, BODY_LIMIT)
        .await
        .map_err(|_| super::body_too_large().into_response())?;
    let route = format!("POST {}", parts.uri.path());
    let rule = served.reads.rule(&mut parts).await;
    // The key is the token's own, and its answer sealed for it.
    let sender = Sender {
        workspace_id: caller.workspace_id,
        token_id: caller
            .token_id()
            .await
            .map_err(IntoResponse::into_response)?
            .to_owned(),
        sealer: Sealer::of_token(
            crate::auth::bearer(&parts.headers).map_err(IntoResponse::into_response)?,
        ),
    };
    let begun = idempotency::begin(state.store.as_ref(), sender, &key, &route, &bytes, rule)
        .await
        .map_err(IntoResponse::into_response)?;
    let claim = match begun {
        Begin::Replay {
            status,
            headers,
            body,
        } => return Ok(replay(status, &headers, body)),
        Begin::ReadBack(read_back) => return Ok(served.reads.answer(caller, read_back).await),
        Begin::Run(claim) => claim,
    };
    parts.extensions.insert(caller);
    let req = Request::from_parts(parts, Body::from(bytes));
    // Stopped at the deadline, a request's claim settles before its lease ends.
    let running = idempotency::scope(claim.clone(), next.run(req));
    let response = tokio::time::timeout(idempotency::DEADLINE, running)
        .await
        .unwrap_or_else(|_| idempotency::stopped().into_response());

    let (parts, body) = response.into_parts();
    let status = parts.status.as_u16();
    let headers = stored_headers(&parts.headers);
    // An answer too large to keep is answered in full and not kept; a retry
    // then learns that it was applied. An answer that cannot be read (a
    // failing stream) is a 500 and keeps nothing either.
    let bytes = match to_bytes(body, usize::MAX).await {
        Ok(bytes) => bytes,
        Err(e) => {
            idempotency::finish(state.ungated.as_ref(), &claim, 500, Vec::new(), None).await;
            return Err(ApiError::internal(e).into_response());
        }
    };
    let text = String::from_utf8(bytes.to_vec())
        .ok()
        .filter(|t| t.len() <= MAX_KEPT_BODY);
    // Ungated (its token held before the claim was taken) and unbudgeted:
    // a claim given back after a write refused by the write budget must not
    // be refused too, or its retry would wait for the claim's lease.
    idempotency::finish(state.ungated.as_ref(), &claim, status, headers, text).await;
    Ok(Response::from_parts(parts, Body::from(bytes)))
}

/// The largest answer kept for replay: sealed in base64 (4/3 of it) with its
/// marks, it stays well within DynamoDB's 400 KB item.
const MAX_KEPT_BODY: usize = 192 * 1024;

fn stored_headers(headers: &HeaderMap) -> Vec<(String, String)> {
    headers
        .iter()
        .filter(|(name, _)| kept(name))
        .filter_map(|(name, value)| Some((name.to_string(), value.to_str().ok()?.to_owned())))
        .collect()
}

fn replay(status: u16, headers: &[(String, String)], body: String) -> Response {
    let status = StatusCode::from_u16(status).unwrap_or(StatusCode::OK);
    let mut response = (status, body).into_response();
    set_headers(response.headers_mut(), headers);
    response
        .headers_mut()
        .insert(REPLAYED, HeaderValue::from_static("true"));
    response
}

fn set_headers(map: &mut HeaderMap, headers: &[(String, String)]) {
    for (name, value) in headers {
        if let (Ok(name), Ok(value)) = (
            HeaderName::from_bytes(name.as_bytes()),
            HeaderValue::from_str(value),
        ) {
            map.insert(name, value);
        }
    }
}
