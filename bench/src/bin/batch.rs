//! 10,000 contacts through `POST /v3/contacts/batch` (100 batches of 100)
//! against 10,000 single `POST /v3/contacts`, on `crm serve` (release), on
//! a folder and in memory, over the same connections. Prints markdown for
//! docs/bench-results.md.
//!
//!   bench-batch --crm target/release/crm

#[allow(dead_code)] // bench-local uses the rest
#[path = "../serving.rs"]
mod serving;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use clap::Parser;
use serving::{Conn, TOKEN, serve};

#[derive(Parser)]
struct Args {
    /// The `crm` binary to measure.
    #[arg(long, default_value = "target/release/crm")]
    crm: PathBuf,
    /// Contacts to create each way.
    #[arg(long, default_value_t = 10_000)]
    contacts: usize,
    /// Connections sending them.
    #[arg(long, default_value_t = 4)]
    connections: usize,
}

/// A contact of its own: a phone no other has.
fn contact(run: usize, n: usize) -> serde_json::Value {
    serde_json::json!({ "name": format!("Contact {n}"), "phone": format!("+55 11 9{run}{n:07}") })
}

/// Sends `requests` (path, body) over `connections`, each answered 2xx with
/// no failed item; answers the wall time.
async fn send(port: u16, connections: usize, requests: Vec<(&'static str, String)>) -> Duration {
    let mut lanes: Vec<Vec<(&'static str, String)>> = vec![Vec::new(); connections];
    for (i, request) in requests.into_iter().enumerate() {
        lanes[i % connections].push(request);
    }
    let started = Instant::now();
    let tasks: Vec<_> = lanes
        .into_iter()
        .map(|lane| {
            tokio::spawn(async move {
                let mut conn = Conn::open(port, TOKEN).await;
                for (path, body) in lane {
                    let (status, answer) = conn.call("POST", path, &body).await;
                    assert!(status == 200 || status == 201, "{status} {answer}");
                }
            })
        })
        .collect();
    for task in tasks {
        task.await.unwrap();
    }
    started.elapsed()
}

#[tokio::main]
async fn main() {
    let args = Args::parse();
    println!("| store | way | requests | wall time | contacts/s |");
    println!("|---|---|---|---|---|");
    let dir = std::env::temp_dir().join(format!("crm-bench-batch-{}", std::process::id()));
    let dir_arg = dir.to_string_lossy().into_owned();
    for (store, argv) in [
        ("on disk", ["--data", &dir_arg]),
        ("in memory", ["--in-memory", ""]),
    ] {
        let argv: Vec<&str> = argv.into_iter().filter(|a| !a.is_empty()).collect();
        let (server, _) = serve(&args.crm, &argv).await;
        let singles: Vec<_> = (0..args.contacts)
            .map(|n| ("/v3/contacts", contact(1, n).to_string()))
            .collect();
        let batches: Vec<_> = (0..args.contacts)
            .collect::<Vec<_>>()
            .chunks(100)
            .map(|chunk| {
                let operations: Vec<_> = chunk
                    .iter()
                    .map(|&n| serde_json::json!({ "op": "create", "data": contact(2, n) }))
                    .collect();
                (
                    "/v3/contacts/batch",
                    serde_json::json!({ "operations": operations }).to_string(),
                )
            })
            .collect();
        for (way, requests) in [("single creates", singles), ("batches of 100", batches)] {
            let count = requests.len();
            let took = send(server.port, args.connections, requests).await;
            println!(
                "| {store} | {way} | {count} | {:.2} s | {:.0} |",
                took.as_secs_f64(),
                args.contacts as f64 / took.as_secs_f64()
            );
        }
        server.stop().await;
    }
    let _ = std::fs::remove_dir_all(&dir);
}
