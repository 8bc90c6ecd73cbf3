//! A DynamoDB that fails the way DynamoDB does under load: an HTTP proxy in
//! front of DynamoDB Local that, for some requests, throttles, cancels a
//! transaction on a conflict, answers 500, drops the connection or answers
//! late, either before the request reaches DynamoDB Local (nothing written)
//! or after (written, and the answer lost or replaced).
//!
//! Faults come two ways. Scripted ([`FaultProxy::next`]): the next requests
//! of one operation meet the given faults, in order; a sticky fault
//! ([`FaultProxy::every_attempt_of_next`]) meets every resend of that same
//! request too (DynamoDB's store sends a write again byte for byte). Random
//! ([`FaultProxy::random`]): each request meets a fault with a probability,
//! drawn from a seeded generator, so a run's sequence of faults is the same
//! for one seed (which request meets which depends on timing when requests
//! run side by side).

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http::{Request, Response, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::{TokioExecutor, TokioIo};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::{Value, json};

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Fault {
    /// 400 `ThrottlingException`; nothing written.
    Throttle,
    /// A transaction cancelled on a `TransactionConflict` (other calls:
    /// throttled); nothing written.
    Conflict,
    /// 500 `InternalServerError`; nothing written.
    ErrorBefore,
    /// The connection closes with no answer; nothing written.
    DropBefore,
    /// Sent on to DynamoDB Local late (past the store's attempt timeout).
    SlowBefore,
    /// Written; the connection closes with no answer.
    DropAfter,
    /// Written; answered 500 `InternalServerError`.
    ErrorAfter,
    /// Written; a transaction answered `TransactionInProgressException`, as a
    /// resend is while the first attempt settles (other calls: 500).
    InProgressAfter,
    /// Written; answered late (past the store's attempt timeout).
    SlowAfter,
}

impl Fault {
    pub const ALL: [Fault; 9] = [
        Fault::Throttle,
        Fault::Conflict,
        Fault::ErrorBefore,
        Fault::DropBefore,
        Fault::SlowBefore,
        Fault::DropAfter,
        Fault::ErrorAfter,
        Fault::InProgressAfter,
        Fault::SlowAfter,
    ];
}

/// A request that meets a fault, by its operation (`TransactWriteItems`,
/// `PutItem`, ... or `*`).
struct Scripted {
    operation: &'static str,
    fault: Fault,
    sticky: bool,
}

struct Random {
    rng: StdRng,
    rate: f64,
}

#[derive(Default)]
struct Plan {
    scripted: VecDeque<Scripted>,
    /// Requests (by their canonical bytes) that meet a fault on every attempt.
    pinned: HashMap<Vec<u8>, Fault>,
    random: Option<Random>,
    /// Faults met, by operation and fault.
    met: BTreeMap<(String, Fault), u64>,
    /// Requests seen, by operation.
    seen: BTreeMap<String, u64>,
}

struct Inner {
    upstream: String,
    client: Client<HttpConnector, Full<Bytes>>,
    plan: Mutex<Plan>,
    /// How late a slow fault is (longer than the store's attempt timeout).
    slow: Duration,
}

pub struct FaultProxy {
    /// `http://127.0.0.1:<port>`: the endpoint to give the store.
    pub endpoint: String,
    inner: Arc<Inner>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for FaultProxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// The connection is closed without an answer.
#[derive(Debug)]
struct Dropped;

impl std::fmt::Display for Dropped {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("connection dropped by the fault proxy")
    }
}

impl std::error::Error for Dropped {}

impl FaultProxy {
    /// A proxy on a free loopback port in front of `upstream`; slow faults
    /// are `slow` late.
    pub async fn start(upstream: &str, slow: Duration) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("a loopback port for the fault proxy");
        let endpoint = format!("http://{}", listener.local_addr().unwrap());
        let inner = Arc::new(Inner {
            upstream: upstream.trim_end_matches('/').to_owned(),
            client: Client::builder(TokioExecutor::new()).build_http(),
            plan: Mutex::new(Plan::default()),
            slow,
        });
        let serving = inner.clone();
        let task = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let inner = serving.clone();
                tokio::spawn(async move {
                    let service = service_fn(move |req| handle(inner.clone(), req));
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
            }
        });
        Self {
            endpoint,
            inner,
            task,
        }
    }

    fn plan(&self) -> std::sync::MutexGuard<'_, Plan> {
        self.inner.plan.lock().unwrap()
    }

    /// The next requests of `operation` meet `faults`, one each, in order.
    pub fn next(&self, operation: &'static str, faults: &[Fault]) {
        let mut plan = self.plan();
        for &fault in faults {
            plan.scripted.push_back(Scripted {
                operation,
                fault,
                sticky: false,
            });
        }
    }

    /// The next request of `operation` meets `fault`, and so does every
    /// attempt to send it again.
    pub fn every_attempt_of_next(&self, operation: &'static str, fault: Fault) {
        self.plan().scripted.push_back(Scripted {
            operation,
            fault,
            sticky: true,
        });
    }

    /// From now on every request meets a fault with probability `rate`,
    /// drawn uniformly from [`Fault::ALL`] by a generator seeded with `seed`.
    pub fn random(&self, seed: u64, rate: f64) {
        self.plan().random = Some(Random {
            rng: StdRng::seed_from_u64(seed),
            rate,
        });
    }

    /// No more faults (scripted, pinned or random).
    pub fn calm(&self) {
        let mut plan = self.plan();
        plan.scripted.clear();
        plan.pinned.clear();
        plan.random = None;
    }

    /// How many requests met `fault` (any operation).
    pub fn met(&self, fault: Fault) -> u64 {
        let plan = self.plan();
        plan.met
            .iter()
            .filter(|((_, f), _)| *f == fault)
            .map(|(_, n)| n)
            .sum()
    }

    /// Every fault met, by operation: for a test's failure message.
    pub fn report(&self) -> String {
        format!("{:?}", self.plan().met)
    }

    /// How many requests of `operation` the proxy saw.
    pub fn seen(&self, operation: &str) -> u64 {
        self.plan().seen.get(operation).copied().unwrap_or(0)
    }
}

impl Plan {
    /// The fault this request meets, if any.
    fn pick(&mut self, operation: &str, bytes: &[u8]) -> Option<Fault> {
        *self.seen.entry(operation.to_owned()).or_default() += 1;
        // Its JSON with sorted keys: an item's attributes come in any order.
        let bytes = &serde_json::from_slice::<Value>(bytes)
            .map(|v| v.to_string().into_bytes())
            .unwrap_or_else(|_| bytes.to_vec());
        let fault = if let Some(&pinned) = self.pinned.get(bytes) {
            Some(pinned)
        } else if let Some(at) = self
            .scripted
            .iter()
            .position(|s| s.operation == operation || s.operation == "*")
        {
            let s = self.scripted.remove(at).expect("a scripted fault");
            if s.sticky {
                self.pinned.insert(bytes.to_vec(), s.fault);
            }
            Some(s.fault)
        } else if let Some(random) = &mut self.random {
            random
                .rng
                .random_bool(random.rate)
                .then(|| Fault::ALL[random.rng.random_range(0..Fault::ALL.len())])
        } else {
            None
        };
        if let Some(fault) = fault {
            *self.met.entry((operation.to_owned(), fault)).or_default() += 1;
        }
        fault
    }
}

type Answer = Result<Response<Full<Bytes>>, Dropped>;

async fn handle(inner: Arc<Inner>, req: Request<Incoming>) -> Answer {
    let (parts, body) = req.into_parts();
    let bytes = body.collect().await.map_err(|_| Dropped)?.to_bytes();
    let operation = parts
        .headers
        .get("x-amz-target")
        .and_then(|v| v.to_str().ok())
        .and_then(|t| t.rsplit('.').next())
        .unwrap_or("?")
        .to_owned();
    let fault = inner.plan.lock().unwrap().pick(&operation, &bytes);
    let transaction = operation == "TransactWriteItems";
    match fault {
        Some(Fault::Throttle) => return Ok(throttled()),
        Some(Fault::Conflict) if transaction => return Ok(conflict(&bytes)),
        Some(Fault::Conflict) => return Ok(throttled()),
        Some(Fault::ErrorBefore) => return Ok(server_error()),
        Some(Fault::DropBefore) => return Err(Dropped),
        Some(Fault::SlowBefore) => tokio::time::sleep(inner.slow).await,
        _ => {}
    }
    let mut upstream = Request::builder().method(parts.method).uri(format!(
        "{}{}",
        inner.upstream,
        parts.uri.path()
    ));
    for (name, value) in &parts.headers {
        upstream = upstream.header(name, value);
    }
    let answer = inner
        .client
        .request(upstream.body(Full::new(bytes)).expect("a request"))
        .await
        .map_err(|_| Dropped)?;
    let (parts, body) = answer.into_parts();
    let body = body.collect().await.map_err(|_| Dropped)?.to_bytes();
    match fault {
        Some(Fault::DropAfter) => Err(Dropped),
        Some(Fault::ErrorAfter) => Ok(server_error()),
        Some(Fault::InProgressAfter) if transaction => Ok(dynamodb_error(
            StatusCode::BAD_REQUEST,
            "TransactionInProgressException",
            json!({}),
        )),
        Some(Fault::InProgressAfter) => Ok(server_error()),
        Some(Fault::SlowAfter) => {
            tokio::time::sleep(inner.slow).await;
            Ok(Response::from_parts(parts, Full::new(body)))
        }
        _ => Ok(Response::from_parts(parts, Full::new(body))),
    }
}

/// An error as DynamoDB answers it (the JSON 1.0 protocol).
fn dynamodb_error(status: StatusCode, kind: &str, mut extra: Value) -> Response<Full<Bytes>> {
    extra["__type"] = json!(format!("com.amazonaws.dynamodb.v20120810#{kind}"));
    extra["message"] = json!(format!("{kind} (fault proxy)"));
    Response::builder()
        .status(status)
        .header("content-type", "application/x-amz-json-1.0")
        .header("x-amzn-requestid", shared::ids::new_ulid())
        .body(Full::new(Bytes::from(extra.to_string())))
        .expect("an error answer")
}

fn throttled() -> Response<Full<Bytes>> {
    dynamodb_error(StatusCode::BAD_REQUEST, "ThrottlingException", json!({}))
}

fn server_error() -> Response<Full<Bytes>> {
    dynamodb_error(
        StatusCode::INTERNAL_SERVER_ERROR,
        "InternalServerError",
        json!({}),
    )
}

/// A transaction cancelled because another one holds its first item.
fn conflict(request: &[u8]) -> Response<Full<Bytes>> {
    let items = serde_json::from_slice::<Value>(request)
        .ok()
        .and_then(|v| v["TransactItems"].as_array().map(Vec::len))
        .unwrap_or(1);
    let mut reasons = vec![json!({ "Code": "None" }); items];
    reasons[0] =
        json!({ "Code": "TransactionConflict", "Message": "Transaction is ongoing for the item" });
    dynamodb_error(
        StatusCode::BAD_REQUEST,
        "TransactionCanceledException",
        json!({ "CancellationReasons": reasons }),
    )
}
