//! Bounds on a request before any route reads it: the target's length and
//! the body's declared size.

use axum::extract::Request;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};

use super::{BODY_LIMIT, body_too_large};
use crate::error::ApiError;

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
pub(super) async fn limits(req: Request) -> Result<Request, Response> {
    let target = req.uri().path_and_query().map_or(0, |pq| pq.as_str().len());
    if target > MAX_URI {
        return Err(ApiError::new(
            StatusCode::URI_TOO_LONG,
            format!("the request target is longer than {} KB", MAX_URI / 1024),
        )
        .into_response());
    }
    let declared = req
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > BODY_LIMIT as u64) {
        drain(req.into_body()).await;
        return Err(body_too_large().into_response());
    }
    Ok(req)
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
