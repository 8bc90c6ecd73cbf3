//! A local implementation of the Lambda Runtime API (`/2018-06-01/runtime/
//! invocation/next` and `/response`): a function binary is started against it,
//! as Lambda starts it, and fed events one at a time.

use std::collections::HashMap;
use std::path::Path;
use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path as UrlPath, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::IntoResponse;
use axum::routing::{get, post};
use tokio::sync::{Mutex, mpsc, oneshot};

#[derive(Default)]
struct Runtime {
    /// Events waiting for the function's next poll.
    events: Mutex<Option<mpsc::Receiver<(String, String)>>>,
    /// Waiting for a response, by request id.
    waiting: Mutex<HashMap<String, oneshot::Sender<(u16, String)>>>,
    /// Told when the function polls `next` (it is ready).
    polled: Mutex<Option<mpsc::Sender<()>>>,
}

async fn next(State(rt): State<Arc<Runtime>>) -> impl IntoResponse {
    // Only the first poll is waited for (it ends the init); never block on the rest.
    if let Some(tx) = rt.polled.lock().await.as_ref() {
        let _ = tx.try_send(());
    }
    let event = {
        let mut events = rt.events.lock().await;
        match events.as_mut() {
            Some(rx) => rx.recv().await,
            None => None,
        }
    };
    let Some((id, body)) = event else {
        // No more events: keep the function parked until it is killed.
        tokio::time::sleep(Duration::from_secs(3600)).await;
        return (StatusCode::NO_CONTENT, HeaderMap::new(), String::new());
    };
    let mut headers = HeaderMap::new();
    let deadline = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default()
        .as_millis()
        + 10_000;
    if let Ok(id) = HeaderValue::from_str(&id) {
        headers.insert("lambda-runtime-aws-request-id", id);
    }
    headers.insert(
        "lambda-runtime-deadline-ms",
        HeaderValue::from(deadline as u64),
    );
    headers.insert(
        "lambda-runtime-invoked-function-arn",
        HeaderValue::from_static("arn:aws:lambda:us-east-1:123456789012:function:bench"),
    );
    headers.insert(
        "lambda-runtime-trace-id",
        HeaderValue::from_static("Root=1-00000000-000000000000000000000000"),
    );
    (StatusCode::OK, headers, body)
}

/// API Gateway answers carry `statusCode`; an SQS batch answer has none (200).
async fn respond(
    State(rt): State<Arc<Runtime>>,
    UrlPath(id): UrlPath<String>,
    body: Bytes,
) -> StatusCode {
    let status = serde_json::from_slice::<serde_json::Value>(&body)
        .ok()
        .map(|v| v["statusCode"].as_u64().unwrap_or(200))
        .unwrap_or(0) as u16;
    if let Some(tx) = rt.waiting.lock().await.remove(&id) {
        let _ = tx.send((status, String::from_utf8_lossy(&body).into_owned()));
    }
    StatusCode::ACCEPTED
}

async fn error(
    State(rt): State<Arc<Runtime>>,
    UrlPath(id): UrlPath<String>,
    body: Bytes,
) -> StatusCode {
    if let Some(tx) = rt.waiting.lock().await.remove(&id) {
        let _ = tx.send((500, String::from_utf8_lossy(&body).into_owned()));
    }
    StatusCode::ACCEPTED
}

async fn init_error(body: Bytes) -> StatusCode {
    eprintln!("init error: {}", String::from_utf8_lossy(&body));
    StatusCode::ACCEPTED
}

/// A function process, started as Lambda starts one, between invocations.
pub struct Running {
    rt: Arc<Runtime>,
    events: mpsc::Sender<(String, String)>,
    child: tokio::process::Child,
    server: tokio::task::JoinHandle<()>,
    /// Process start to its first poll for an event (Lambda's Init Duration).
    pub init: Duration,
    calls: u64,
}

impl Running {
    /// Starts `binary` with `env` and waits for its first poll.
    pub async fn start(binary: &Path, env: &[(String, String)]) -> Result<Self, String> {
        let rt = Arc::new(Runtime::default());
        let (events, event_rx) = mpsc::channel(1);
        let (poll_tx, mut poll_rx) = mpsc::channel(16);
        *rt.events.lock().await = Some(event_rx);
        *rt.polled.lock().await = Some(poll_tx);
        let app = Router::new()
            .route("/2018-06-01/runtime/invocation/next", get(next))
            .route(
                "/2018-06-01/runtime/invocation/{id}/response",
                post(respond),
            )
            .route("/2018-06-01/runtime/invocation/{id}/error", post(error))
            .route("/2018-06-01/runtime/init/error", post(init_error))
            .with_state(rt.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .map_err(|e| e.to_string())?;
        let addr = listener.local_addr().map_err(|e| e.to_string())?;
        let server = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });

        let started = Instant::now();
        let child = tokio::process::Command::new(binary)
            .env("AWS_LAMBDA_RUNTIME_API", addr.to_string())
            .env("AWS_LAMBDA_FUNCTION_NAME", "bench")
            .env("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "256")
            .env("AWS_LAMBDA_FUNCTION_VERSION", "$LATEST")
            .env("AWS_LAMBDA_LOG_STREAM_NAME", "bench")
            .env("AWS_LAMBDA_LOG_GROUP_NAME", "bench")
            .env(
                "RUST_LOG",
                std::env::var("BENCH_FUNCTION_LOG").unwrap_or_else(|_| "warn".into()),
            )
            .envs(env.iter().map(|(k, v)| (k, v)))
            // Lambda sets neither; a machine that does (this bench's did) would
            // make every function read the platform's certificates (shared/src/tls.rs).
            .env_remove("SSL_CERT_FILE")
            .env_remove("SSL_CERT_DIR")
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| format!("{}: {e}", binary.display()))?;
        tokio::time::timeout(Duration::from_secs(10), poll_rx.recv())
            .await
            .map_err(|_| format!("{} never polled for an event", binary.display()))?;
        Ok(Self {
            rt,
            events,
            child,
            server,
            init: started.elapsed(),
            calls: 0,
        })
    }

    /// One invocation: the time from handing out the event to its response.
    pub async fn call(&mut self, event: &str) -> Result<(u16, String, Duration), String> {
        self.calls += 1;
        let id = format!("bench-{}", self.calls);
        let (tx, rx) = oneshot::channel();
        self.rt.waiting.lock().await.insert(id.clone(), tx);
        let sent = Instant::now();
        self.events
            .send((id, event.to_owned()))
            .await
            .map_err(|e| e.to_string())?;
        let (status, body) = tokio::time::timeout(Duration::from_secs(10), rx)
            .await
            .map_err(|_| "no response within 10 s".to_owned())?
            .map_err(|e| e.to_string())?;
        Ok((status, body, sent.elapsed()))
    }

    /// Nanoseconds the process has been on a CPU so far (`cpu.rs`).
    pub fn cpu_ns(&self) -> u64 {
        self.child.id().map_or(0, crate::cpu::cpu_ns)
    }

    /// The process's peak resident memory so far (VmHWM), in KB.
    pub fn peak_rss_kb(&self) -> u64 {
        let Some(pid) = self.child.id() else {
            return 0;
        };
        std::fs::read_to_string(format!("/proc/{pid}/status"))
            .ok()
            .and_then(|s| {
                s.lines()
                    .find(|l| l.starts_with("VmHWM:"))
                    .and_then(|l| l.split_whitespace().nth(1))
                    .and_then(|v| v.parse().ok())
            })
            .unwrap_or(0)
    }

    pub async fn stop(mut self) {
        let _ = self.child.kill().await;
        self.server.abort();
    }
}

/// An API Gateway HTTP API (payload 2.0) event, as the events in `events/` are.
pub fn http_event(method: &str, target: &str, token: Option<&str>, body: Option<&str>) -> String {
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    let params: serde_json::Map<String, serde_json::Value> = query
        .split('&')
        .filter(|p| !p.is_empty())
        .filter_map(|p| p.split_once('='))
        .map(|(k, v)| (k.to_owned(), v.into()))
        .collect();
    let mut headers = serde_json::json!({
        "accept": "application/json",
        "host": "abc123.execute-api.us-east-1.amazonaws.com",
        "x-forwarded-proto": "https",
    });
    if let Some(token) = token {
        headers["authorization"] = format!("Bearer {token}").into();
    }
    if body.is_some() {
        headers["content-type"] = "application/json".into();
    }
    let route_key = format!("{method} {path}");
    let mut event = serde_json::json!({
        "version": "2.0",
        "routeKey": route_key,
        "rawPath": path,
        "rawQueryString": query,
        "headers": headers,
        "requestContext": {
            "accountId": "123456789012",
            "apiId": "abc123",
            "domainName": "abc123.execute-api.us-east-1.amazonaws.com",
            "domainPrefix": "abc123",
            "http": { "method": method, "path": path, "protocol": "HTTP/1.1",
                      "sourceIp": "203.0.113.10", "userAgent": "bench" },
            "requestId": "bench",
            "routeKey": route_key,
            "stage": "$default",
            "time": "22/Nov/2026:01:48:21 +0000",
            "timeEpoch": 1795484901123u64
        },
        "isBase64Encoded": false
    });
    if !params.is_empty() {
        event["queryStringParameters"] = params.into();
    }
    if let Some(body) = body {
        event["body"] = body.into();
    }
    event.to_string()
}
