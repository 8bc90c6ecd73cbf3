//! The instruction gate's workload (`scripts/gate.sh`, run by `.ci/run`): one
//! kind of request, `--requests` times, through the Router of `crm serve` on
//! the in-memory store, in process. `scripts/gate.sh` runs it under
//! Valgrind's callgrind, collecting only inside [`measured`] on the request's
//! thread (setup and warm-up are not counted, nor is the store's writer
//! thread): instructions do not move with the machine's load, so a change
//! that makes a request dearer shows, run after run (two runs agree within
//! 0.1%).
//!
//!   bench-gate get --requests 20

use std::sync::Arc;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use clap::Parser;
use embedded_store::EmbeddedStore;
use http_body_util::BodyExt;
use shared::http::AppState;
use shared::keys;
use tower::ServiceExt;

/// As `crm serve` runs (cli/src/main.rs).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

const TOKEN: &str = "crm_bench_gate_token_0123456789";

#[derive(Parser)]
struct Args {
    /// What one request is: get, list, create or batch (100 creates of
    /// tags); contacts-batch (100 creates of contacts) for profiles.
    kind: String,
    /// Requests measured.
    #[arg(long, default_value_t = 20)]
    requests: u32,
}

struct App {
    router: axum::Router,
    token: String,
    tag: String,
}

async fn call(app: &App, method: &str, path: &str, body: String) -> StatusCode {
    let request = Request::builder()
        .method(method)
        .uri(path)
        .header("authorization", format!("Bearer {}", app.token))
        .header("content-type", "application/json")
        .body(Body::from(body))
        .expect("a request");
    let response = app
        .router
        .clone()
        .oneshot(request)
        .await
        .expect("infallible");
    let status = response.status();
    response.into_body().collect().await.expect("a body");
    status
}

/// One request of `kind`, the `i`-th.
async fn one(app: &App, kind: &str, i: u32) {
    let (method, path, body, expect) = match kind {
        "get" => ("GET", app.tag.clone(), String::new(), StatusCode::OK),
        "list" => (
            "GET",
            "/v3/tags?limit=20".to_owned(),
            String::new(),
            StatusCode::OK,
        ),
        "create" => (
            "POST",
            "/v3/tags".to_owned(),
            format!(r#"{{"name":"gate {kind} {i}"}}"#),
            StatusCode::CREATED,
        ),
        "batch" => {
            let operations: Vec<String> = (0..100)
                .map(|n| format!(r#"{{"op":"create","data":{{"name":"gate batch {i} {n}"}}}}"#))
                .collect();
            (
                "POST",
                "/v3/tags/batch".to_owned(),
                format!(r#"{{"operations":[{}]}}"#, operations.join(",")),
                StatusCode::OK,
            )
        }
        // Not gated: the workload of a profile of issue #45's batch goal
        // (contacts with phones, as `bench-batch` sends them).
        "contacts-batch" => {
            let operations: Vec<String> = (0..100)
                .map(|n| {
                    format!(
                        r#"{{"op":"create","data":{{"name":"Contact {i} {n}","phone":"+55 11 9{:08}"}}}}"#,
                        i * 100 + n
                    )
                })
                .collect();
            (
                "POST",
                "/v3/contacts/batch".to_owned(),
                format!(r#"{{"operations":[{}]}}"#, operations.join(",")),
                StatusCode::OK,
            )
        }
        other => panic!("no kind {other}: get, list, create, batch or contacts-batch"),
    };
    let status = call(app, method, &path, body).await;
    assert_eq!(status, expect, "{kind} {path}");
}

/// The app of `crm serve` (its limiter as deployed, with room for the
/// workload) on the in-memory store, 30 tags in it, each kind called once.
async fn setup() -> App {
    let store = Arc::new(EmbeddedStore::in_memory(keys::GSIS));
    shared::domain::workspaces::bootstrap(store.as_ref(), "gate", Some(TOKEN.into()))
        .await
        .expect("bootstrap");
    let room = shared::ratelimit::Policy {
        quota: 1_000_000,
        window_seconds: 1,
    };
    let limits = shared::ratelimit::Limits {
        token: room,
        workspace: room,
        writes: room,
    };
    let state = AppState::new(store).with_limiter(shared::ratelimit::Limiter::with(limits));
    let mut app = App {
        router: crm::app(state),
        token: TOKEN.to_owned(),
        tag: String::new(),
    };
    for i in 0..30 {
        one(&app, "create", 1000 + i).await;
    }
    app.tag = "/v3/tags/".to_owned();
    let first = app
        .router
        .clone()
        .oneshot(
            Request::get("/v3/tags?limit=1")
                .header("authorization", format!("Bearer {TOKEN}"))
                .body(Body::empty())
                .expect("a request"),
        )
        .await
        .expect("infallible");
    let bytes = first
        .into_body()
        .collect()
        .await
        .expect("a body")
        .to_bytes();
    let page: serde_json::Value = serde_json::from_slice(&bytes).expect("JSON");
    app.tag
        .push_str(page["data"][0]["id"].as_str().expect("a tag"));
    for kind in ["get", "list", "create", "batch", "contacts-batch"] {
        one(&app, kind, 9999).await;
    }
    app
}

/// What callgrind counts (`--toggle-collect=*measured*`): the requests alone.
#[inline(never)]
fn measured(runtime: &tokio::runtime::Runtime, app: &App, kind: &str, requests: u32) {
    runtime.block_on(async {
        for i in 0..requests {
            one(app, kind, i).await;
        }
    });
}

fn main() {
    let args = Args::parse();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let app = runtime.block_on(setup());
    measured(&runtime, &app, &args.kind, args.requests);
    // A per-request figure the script divides by.
    println!("{}", args.requests);
}
