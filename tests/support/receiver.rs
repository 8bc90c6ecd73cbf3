//! A webhook receiver for the tests: an HTTP server on 127.0.0.1 that keeps
//! every request it gets and answers the status it is told (200 at first),
//! and checks deliveries with the Standard Webhooks reference library.

use std::sync::atomic::{AtomicBool, AtomicU16, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http::{HeaderMap, Response};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use serde_json::Value;

/// One request the receiver got, and what it answered.
#[derive(Debug, Clone)]
pub struct Received {
    pub headers: HeaderMap,
    pub body: String,
    pub answered: u16,
}

impl Received {
    pub fn id(&self) -> &str {
        self.headers
            .get("webhook-id")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
    }

    pub fn event(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or(Value::Null)
    }

    pub fn kind(&self) -> String {
        self.event()["type"].as_str().unwrap_or("").to_owned()
    }

    /// Whether `secret` verifies it, by the reference library.
    pub fn verifies_with(&self, secret: &str) -> bool {
        standardwebhooks::Webhook::new(secret)
            .and_then(|w| w.verify(self.body.as_bytes(), &self.headers))
            .is_ok()
    }
}

#[derive(Default)]
struct State {
    got: Mutex<Vec<Received>>,
    status: AtomicU16,
    retry_after: Mutex<Option<String>>,
    /// While set, requests are kept waiting for their answer.
    held: AtomicBool,
    /// Answers each request's body back (a receiver that echoes).
    echo: AtomicBool,
    released: tokio::sync::Notify,
    in_flight: AtomicUsize,
    most_in_flight: AtomicUsize,
}

pub struct Receiver {
    pub url: String,
    state: Arc<State>,
}

impl Receiver {
    /// Listening on a free port of 127.0.0.1 until the test's runtime ends.
    pub async fn start() -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("a port");
        let url = format!("http://{}/hooks/crm", listener.local_addr().unwrap());
        let state = Arc::new(State::default());
        state.status.store(200, Ordering::SeqCst);
        let serving = state.clone();
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let state = serving.clone();
                tokio::spawn(async move {
                    let service = service_fn(move |request: http::Request<Incoming>| {
                        let state = state.clone();
                        async move { Ok::<_, hyper::Error>(answer(&state, request).await) }
                    });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
            }
        });
        Self { url, state }
    }

    /// Answer `status` from now on (with `Retry-After: retry_after` when given).
    pub fn answer(&self, status: u16, retry_after: Option<&str>) {
        *self.state.retry_after.lock().unwrap() = retry_after.map(str::to_owned);
        self.state.status.store(status, Ordering::SeqCst);
    }

    /// Keeps every request waiting for its answer until [`Receiver::release`]:
    /// a slow endpoint.
    pub fn hold(&self) {
        self.state.held.store(true, Ordering::SeqCst);
    }

    /// Answers each request with its own body from now on.
    pub fn echo(&self) {
        self.state.echo.store(true, Ordering::SeqCst);
    }

    pub fn release(&self) {
        self.state.held.store(false, Ordering::SeqCst);
        self.state.released.notify_waiters();
    }

    /// The most requests it has had at once.
    pub fn most_at_once(&self) -> usize {
        self.state.most_in_flight.load(Ordering::SeqCst)
    }

    pub fn received(&self) -> Vec<Received> {
        self.state.got.lock().unwrap().clone()
    }

    /// The requests answered 2xx.
    pub fn accepted(&self) -> Vec<Received> {
        self.received()
            .into_iter()
            .filter(|r| (200..300).contains(&r.answered))
            .collect()
    }

    /// Waits (20 s at most) until `done` holds of what was received.
    pub async fn wait_for(&self, what: &str, done: impl Fn(&[Received]) -> bool) -> Vec<Received> {
        for _ in 0..2000 {
            let got = self.received();
            if done(&got) {
                return got;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let got: Vec<(String, u16)> = self
            .received()
            .iter()
            .map(|r| (r.kind(), r.answered))
            .collect();
        panic!("the receiver never got {what}; it got {got:?}");
    }
}

async fn answer(state: &State, request: http::Request<Incoming>) -> Response<Full<Bytes>> {
    let now = state.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
    state.most_in_flight.fetch_max(now, Ordering::SeqCst);
    while state.held.load(Ordering::SeqCst) {
        let released = state.released.notified();
        if !state.held.load(Ordering::SeqCst) {
            break;
        }
        released.await;
    }
    state.in_flight.fetch_sub(1, Ordering::SeqCst);
    let (parts, body) = request.into_parts();
    let body = body
        .collect()
        .await
        .map(|b| b.to_bytes())
        .unwrap_or_default();
    let status = state.status.load(Ordering::SeqCst);
    let received = String::from_utf8_lossy(&body).into_owned();
    let answer = if state.echo.load(Ordering::SeqCst) {
        received.clone()
    } else {
        format!("status {status}")
    };
    state.got.lock().unwrap().push(Received {
        headers: parts.headers,
        body: received,
        answered: status,
    });
    let mut response = Response::builder().status(status);
    if let Some(after) = state.retry_after.lock().unwrap().clone() {
        response = response.header("retry-after", after);
    }
    response.body(Full::new(Bytes::from(answer))).unwrap()
}
