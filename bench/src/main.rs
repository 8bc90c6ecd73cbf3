//! Measures the Lambda functions as Lambda runs them: each function binary is
//! started against this program's implementation of the Lambda Runtime API
//! (`/2018-06-01/runtime/invocation/next` and `/response`), fed an API Gateway
//! event, and timed.
//!
//! - init: process start to its first `next` poll (what Lambda reports as Init
//!   Duration: runtime, logging, `SdkConfig`, client);
//! - first: the first invocation, sent to `next` until the response is posted
//!   (connection set-up and credential resolution happen here);
//! - warm p50/p99: the following invocations;
//! - peak RSS: the process's VmHWM after the run.
//!
//! `scripts/bench.sh` builds the release binaries, starts DynamoDB Local and
//! writes the table this prints into `docs/bench-results.md`.

use std::collections::HashMap;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::IntoResponse;
use axum::routing::{get, post};
use clap::Parser;
use tokio::sync::{Mutex, mpsc, oneshot};

#[derive(Parser)]
struct Args {
    /// `name=binary=event.json`, repeated: a function binary and the event it gets.
    #[arg(long = "function", required = true)]
    functions: Vec<String>,
    /// Cold starts per function (a new process each).
    #[arg(long, default_value_t = 10)]
    cold_starts: usize,
    /// Warm invocations after each cold start.
    #[arg(long, default_value_t = 100)]
    warm: usize,
    /// Replaces `crm_REPLACE_WITH_YOUR_TOKEN` in the events.
    #[arg(long, env = "CRM_BOOTSTRAP_TOKEN")]
    token: String,
}

/// Phone identity: the Brazilian fast path, and the `phonenumber` crate's first
/// parse (which loads its metadata) and later ones. Run in this fresh process.
fn phone_table() {
    let time = |f: &dyn Fn()| {
        let started = Instant::now();
        f();
        started.elapsed()
    };
    let n = 100_000;
    let fast = time(&|| {
        for i in 0..n {
            let _ = shared::phone::canonical(&format!("(11) 9{:04}-{:04}", i % 10_000, i % 7_919));
        }
    });
    let first = time(&|| {
        let _ = shared::phone::canonical("+44 20 7946 0958");
    });
    let later = time(&|| {
        for _ in 0..1_000 {
            let _ = shared::phone::canonical("+1 (415) 555-2671");
        }
    });
    println!();
    println!("| phone identity | time |");
    println!("|---|---|");
    println!(
        "| Brazilian fast path, per phone (mean of {n}) | {:.2} µs |",
        fast.as_secs_f64() * 1e6 / n as f64
    );
    println!(
        "| first international phone (phonenumber loads its metadata) | {:.1} ms |",
        ms(first)
    );
    println!(
        "| later international phones, per phone (mean of 1,000) | {:.1} µs |",
        later.as_secs_f64() * 1e6 / 1_000.0
    );
}

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
        .unwrap()
        .as_millis()
        + 10_000;
    headers.insert(
        "lambda-runtime-aws-request-id",
        HeaderValue::from_str(&id).unwrap(),
    );
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

async fn respond(
    State(rt): State<Arc<Runtime>>,
    Path(id): Path<String>,
    body: Bytes,
) -> StatusCode {
    let status = serde_json::from_slice::<serde_json::Value>(&body)
        .ok()
        .and_then(|v| v["statusCode"].as_u64())
        .unwrap_or(0) as u16;
    if let Some(tx) = rt.waiting.lock().await.remove(&id) {
        let _ = tx.send((status, String::from_utf8_lossy(&body).into_owned()));
    }
    StatusCode::ACCEPTED
}

async fn error(State(rt): State<Arc<Runtime>>, Path(id): Path<String>, body: Bytes) -> StatusCode {
    if let Some(tx) = rt.waiting.lock().await.remove(&id) {
        let _ = tx.send((500, String::from_utf8_lossy(&body).into_owned()));
    }
    StatusCode::ACCEPTED
}

async fn init_error(body: Bytes) -> StatusCode {
    eprintln!("init error: {}", String::from_utf8_lossy(&body));
    StatusCode::ACCEPTED
}

struct Sample {
    init: Duration,
    first: Duration,
    warm: Vec<Duration>,
    peak_rss_kb: u64,
}

fn peak_rss_kb(pid: u32) -> u64 {
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

async fn one_cold_start(binary: &PathBuf, event: &str, warm: usize) -> Result<Sample, String> {
    let rt = Arc::new(Runtime::default());
    let (event_tx, event_rx) = mpsc::channel(1);
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
    let server = tokio::spawn(async move { axum::serve(listener, app).await });

    let started = Instant::now();
    let mut child = tokio::process::Command::new(binary)
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
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| format!("{}: {e}", binary.display()))?;
    let pid = child.id().unwrap_or(0);
    tokio::time::timeout(Duration::from_secs(10), poll_rx.recv())
        .await
        .map_err(|_| "the function never polled for an event".to_owned())?;
    let init = started.elapsed();

    let mut latencies = Vec::with_capacity(warm + 1);
    for n in 0..=warm {
        let id = format!("bench-{n}");
        let (tx, rx) = oneshot::channel();
        rt.waiting.lock().await.insert(id.clone(), tx);
        let sent = Instant::now();
        event_tx
            .send((id, event.to_owned()))
            .await
            .map_err(|e| e.to_string())?;
        let (status, body) = tokio::time::timeout(Duration::from_secs(10), rx)
            .await
            .map_err(|_| "no response within 10 s".to_owned())?
            .map_err(|e| e.to_string())?;
        latencies.push(sent.elapsed());
        if !(200..300).contains(&status) {
            return Err(format!("status {status}: {body}"));
        }
    }
    let peak_rss_kb = peak_rss_kb(pid);
    let _ = child.kill().await;
    server.abort();
    let first = latencies.remove(0);
    Ok(Sample {
        init,
        first,
        warm: latencies,
        peak_rss_kb,
    })
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn percentile(mut v: Vec<f64>, p: f64) -> f64 {
    v.sort_by(f64::total_cmp);
    let i = ((v.len() as f64 - 1.0) * p).round() as usize;
    v[i]
}

#[tokio::main]
async fn main() {
    let args = Args::parse();
    phone_table();
    if args.cold_starts == 0 {
        return;
    }
    println!();
    println!(
        "| function | event | binary | init (median) | first invoke (median) | warm p50 | warm p99 | peak RSS |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    for spec in &args.functions {
        let parts: Vec<&str> = spec.splitn(3, '=').collect();
        let [name, binary, event_file] = parts[..] else {
            eprintln!("--function takes name=binary=event.json, got {spec}");
            std::process::exit(2);
        };
        let binary = PathBuf::from(binary);
        let event = std::fs::read_to_string(event_file)
            .unwrap_or_else(|e| panic!("{event_file}: {e}"))
            .replace("crm_REPLACE_WITH_YOUR_TOKEN", &args.token);
        let size_mb = std::fs::metadata(&binary)
            .map(|m| m.len() as f64 / 1e6)
            .unwrap_or(0.0);
        let mut samples = Vec::new();
        for _ in 0..args.cold_starts {
            match one_cold_start(&binary, &event, args.warm).await {
                Ok(s) => samples.push(s),
                Err(e) => {
                    eprintln!("{name}: {e}");
                    std::process::exit(1);
                }
            }
        }
        let warm: Vec<f64> = samples
            .iter()
            .flat_map(|s| s.warm.iter().copied().map(ms))
            .collect();
        let event_name = std::path::Path::new(event_file)
            .file_name()
            .unwrap()
            .to_string_lossy();
        println!(
            "| {name} | {event_name} | {size_mb:.1} MB | {:.1} ms | {:.1} ms | {:.2} ms | {:.2} ms | {:.1} MB |",
            median(samples.iter().map(|s| ms(s.init)).collect()),
            median(samples.iter().map(|s| ms(s.first)).collect()),
            percentile(warm.clone(), 0.5),
            percentile(warm, 0.99),
            samples.iter().map(|s| s.peak_rss_kb).max().unwrap_or(0) as f64 / 1024.0,
        );
    }
}
