//! The API's own cost per request, without the network: the whole Router of
//! `crm serve` on the in-memory store, called in process on one thread (a
//! write also waits for the store's writer thread). What
//! `bench-local` measures through TCP mixes this with the kernel's and the
//! load generator's share of the same 2 cores; this is the part the code owns,
//! and it varies far less from run to run. Creates are also made 16 at a time
//! (as bench-local's 16 connections make them), in memory and on a folder,
//! and measured in CPU per create over the process's threads (the writer
//! thread's included): the figure to compare two builds of the store by.
//!
//!   bench-router --requests 200000

#[path = "../cpu.rs"]
mod cpu;

use std::sync::Arc;
use std::time::Instant;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use clap::Parser;
use embedded_store::EmbeddedStore;
use http_body_util::BodyExt;
use shared::http::AppState;
use shared::keys;
use tower::ServiceExt;

/// The allocator `crm serve` runs with (cli/src/main.rs), so that this
/// measures its Router as it runs there.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

const TOKEN: &str = "crm_bench_router_token_0123456789";

#[derive(Parser)]
struct Args {
    /// Requests per measured kind.
    #[arg(long, default_value_t = 200_000)]
    requests: u32,
    /// What to measure (for a profile of one kind).
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "hello,get,list,create,concurrent"
    )]
    kinds: Vec<String>,
}

async fn call(
    app: &axum::Router,
    method: &str,
    path: &str,
    token: &str,
    body: &str,
) -> (StatusCode, String) {
    let request = Request::builder()
        .method(method)
        .uri(path)
        .header("authorization", format!("Bearer {token}"))
        .header("content-type", "application/json")
        .body(Body::from(body.to_owned()))
        .expect("a request");
    let response = app.clone().oneshot(request).await.expect("infallible");
    let status = response.status();
    let bytes = response
        .into_body()
        .collect()
        .await
        .expect("a body")
        .to_bytes();
    (status, String::from_utf8_lossy(&bytes).into_owned())
}

fn field(body: &str, name: &str) -> String {
    let value: serde_json::Value = serde_json::from_str(body).expect("JSON");
    value[name].as_str().expect(name).to_owned()
}

/// Microseconds per request of `n` sequential calls.
async fn per_request(n: u32, mut one: impl AsyncFnMut(u32)) -> f64 {
    let started = Instant::now();
    for i in 0..n {
        one(i).await;
    }
    started.elapsed().as_secs_f64() * 1e6 / f64::from(n.max(1))
}

/// Creates `n` tags, `tasks` at a time; answers the process's CPU
/// microseconds per create (all its threads) and the wall time per create.
async fn concurrent_creates(app: &axum::Router, token: &str, tasks: u32, n: u32) -> (f64, f64) {
    let pid = std::process::id();
    let (started, cpu_before) = (Instant::now(), cpu::cpu_ns(pid));
    let mut set = tokio::task::JoinSet::new();
    for t in 0..tasks {
        let (app, token) = (app.clone(), token.to_owned());
        set.spawn(async move {
            for i in 0..n / tasks {
                let body = format!(r#"{{"name":"concurrent {t} {i}"}}"#);
                let (status, answer) = call(&app, "POST", "/v3/tags", &token, &body).await;
                assert_eq!(status, StatusCode::CREATED, "{answer}");
            }
        });
    }
    set.join_all().await;
    let made = f64::from(n / tasks * tasks);
    let cpu = cpu::cpu_ns(pid).saturating_sub(cpu_before) as f64 / 1000.0;
    (cpu / made, started.elapsed().as_secs_f64() * 1e6 / made)
}

/// The Router of `crm serve` on `store`, a token for it, and a tag's path;
/// and the same Router with rate limits off (what the limiter costs).
async fn serve(store: EmbeddedStore) -> (axum::Router, String, String, axum::Router) {
    let store = Arc::new(store);
    shared::domain::workspaces::bootstrap(store.as_ref(), "bench", Some(TOKEN.into()))
        .await
        .expect("bootstrap");
    // The limiter as deployed, with room for the bench's rate.
    let room = shared::ratelimit::Policy {
        quota: 1_000_000,
        window_seconds: 1,
    };
    let limits = shared::ratelimit::Limits {
        token: room,
        workspace: room,
        writes: room,
    };
    let unlimited =
        crm::app(AppState::new(store.clone()).with_limiter(shared::ratelimit::Limiter::off()));
    let app = crm::app(AppState::new(store).with_limiter(shared::ratelimit::Limiter::with(limits)));
    let (_, body) = call(&app, "POST", "/v3/api-tokens", TOKEN, r#"{"name":"bench"}"#).await;
    let token = field(&body, "token");
    let (_, body) = call(&app, "POST", "/v3/tags", &token, r#"{"name":"read me"}"#).await;
    let path = format!("/v3/tags/{}", field(&body, "id"));
    (app, token, path, unlimited)
}

fn main() {
    let args = Args::parse();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    runtime.block_on(async {
        let (app, token, path, unlimited) = serve(EmbeddedStore::in_memory(keys::GSIS)).await;

        // Warm the allocator and the engine's cache first.
        for _ in 0..1000 {
            call(&app, "GET", &path, &token, "").await;
        }
        let wanted = |kind: &str| args.kinds.iter().any(|k| k == kind);
        let n = |kind: &str, n: u32| if wanted(kind) { n } else { 0 };
        // The floor: what the same calls cost a bare axum Router (bench-local's
        // hello-JSON), harness included.
        let bare = axum::Router::new().route(
            "/hello",
            axum::routing::get(|| async {
                axum::Json(serde_json::json!({ "hello": "world", "id": "1" }))
            }),
        );
        let hello = per_request(n("hello", args.requests), async |_| {
            let (status, _) = call(&bare, "GET", "/hello", &token, "").await;
            assert_eq!(status, StatusCode::OK);
        })
        .await;
        let get = per_request(n("get", args.requests), async |_| {
            let (status, _) = call(&app, "GET", &path, &token, "").await;
            assert_eq!(status, StatusCode::OK);
        })
        .await;
        let get_unlimited = per_request(n("get", args.requests), async |_| {
            let (status, _) = call(&unlimited, "GET", &path, &token, "").await;
            assert_eq!(status, StatusCode::OK);
        })
        .await;
        let list = per_request(n("list", args.requests / 10), async |_| {
            let (status, _) = call(&app, "GET", "/v3/tags?limit=20", &token, "").await;
            assert_eq!(status, StatusCode::OK);
        })
        .await;
        let create = per_request(n("create", args.requests / 10), async |i| {
            let body = format!(r#"{{"name":"router {i}"}}"#);
            let (status, answer) = call(&app, "POST", "/v3/tags", &token, &body).await;
            assert_eq!(status, StatusCode::CREATED, "{answer}");
        })
        .await;
        println!("| in process, one thread, `--in-memory` | µs per request |");
        println!("|---|---|");
        let rows = [
            ("hello", "bare axum hello-JSON (`GET /hello`)", hello),
            ("get", "GET /v3/tags/{id}", get),
            ("get", "GET /v3/tags/{id}, rate limits off", get_unlimited),
            ("list", "GET /v3/tags?limit=20", list),
            // Wall time: it includes the store's writer thread and the two
            // hand-offs to it and back.
            (
                "create",
                "POST /v3/tags (with the store's writer thread)",
                create,
            ),
        ];
        for (kind, name, micros) in rows {
            if wanted(kind) {
                println!("| {name} | {micros:.1} |");
            }
        }
        if wanted("concurrent") {
            let n = args.requests / 4;
            let memory = concurrent_creates(&app, &token, 16, n).await;
            let folder = std::env::temp_dir().join(format!("crm-bench-router-{}", std::process::id()));
            let store = EmbeddedStore::open(&folder, keys::GSIS).expect("a store folder");
            let (on_disk, token, _, _) = serve(store).await;
            let durable = concurrent_creates(&on_disk, &token, 16, n).await;
            drop(on_disk);
            let _ = std::fs::remove_dir_all(&folder);
            println!();
            println!("| POST /v3/tags, 16 at a time, in process | CPU per create (all threads) | wall time per create |");
            println!("|---|---|---|");
            for (name, (cpu, wall)) in [("`--in-memory`", memory), ("`--data` (durable)", durable)] {
                println!("| {name} | {cpu:.1} µs | {wall:.1} µs |");
            }
        }
    });
}
