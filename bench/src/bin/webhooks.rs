//! Webhooks from `crm serve` (release, on a folder) to a receiver on
//! loopback: the time from a create's request to its event's POST arriving
//! (p50, p99), at a steady pace and in a burst, and how many events a second
//! reach the receiver. Prints markdown for docs/bench-results.md.
//!
//!   bench-webhooks --crm target/release/crm

#[allow(dead_code)] // bench-local uses the rest
#[path = "../serving.rs"]
mod serving;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use clap::Parser;
use serving::{Conn, TOKEN, serve_with};

#[derive(Parser)]
struct Args {
    /// The `crm` binary to measure.
    #[arg(long, default_value = "target/release/crm")]
    crm: PathBuf,
    /// Creates at a steady pace, one at a time.
    #[arg(long, default_value_t = 300)]
    paced: usize,
    /// Their pace, per second.
    #[arg(long, default_value_t = 30)]
    rate: u64,
    /// Creates in the burst.
    #[arg(long, default_value_t = 3000)]
    burst: usize,
    /// Connections making the burst.
    #[arg(long, default_value_t = 16)]
    connections: usize,
}

/// When each tag's event first reached the receiver, by tag id.
type Received = Arc<Mutex<HashMap<String, Instant>>>;

async fn receiver() -> (String, Received) {
    let received: Received = Arc::default();
    let got = received.clone();
    let app = axum::Router::new().route(
        "/hooks",
        axum::routing::post(move |body: axum::body::Bytes| {
            let got = got.clone();
            async move {
                let now = Instant::now();
                let event: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
                if let Some(id) = event["data"]["object"]["id"].as_str() {
                    got.lock().unwrap().entry(id.to_owned()).or_insert(now);
                }
                axum::http::StatusCode::NO_CONTENT
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/hooks", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    (url, received)
}

/// Creates a tag; answers its id and when its request was sent.
async fn create(conn: &mut Conn, name: &str) -> (String, Instant) {
    let sent = Instant::now();
    let (status, body) = conn
        .call("POST", "/v3/tags", &format!(r#"{{"name":"{name}"}}"#))
        .await;
    assert_eq!(status, 201, "{body}");
    let answer: serde_json::Value = serde_json::from_str(&body).unwrap();
    (answer["id"].as_str().unwrap().to_owned(), sent)
}

/// Waits until every id has arrived; answers each one's latency in ms, and
/// the last arrival.
async fn arrivals(received: &Received, sent: &[(String, Instant)]) -> (Vec<f64>, Instant) {
    let deadline = Instant::now() + Duration::from_secs(300);
    loop {
        {
            let got = received.lock().unwrap();
            if sent.iter().all(|(id, _)| got.contains_key(id)) {
                let latencies = sent
                    .iter()
                    .map(|(id, at)| (got[id] - *at).as_secs_f64() * 1000.0)
                    .collect();
                let last = sent.iter().map(|(id, _)| got[id]).max().unwrap();
                return (latencies, last);
            }
        }
        assert!(Instant::now() < deadline, "events did not arrive");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

fn percentile(values: &[f64], p: f64) -> f64 {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

struct Run {
    paced: Vec<f64>,
    burst: Vec<f64>,
    creates_per_s: f64,
    delivered_per_s: f64,
}

async fn run(args: &Args, concurrency: u32) -> Run {
    let dir = std::env::temp_dir().join(format!(
        "bench-webhooks-{}-{concurrency}",
        std::process::id()
    ));
    let data = dir.to_str().unwrap().to_owned();
    let concurrency = concurrency.to_string();
    let (server, _) = serve_with(
        &args.crm,
        &["--data", &data, "--webhooks-to-private"],
        &[("CRM_WEBHOOK_CONCURRENCY", &concurrency)],
    )
    .await;
    let (url, received) = receiver().await;
    let mut conn = Conn::open(server.port, TOKEN).await;
    let hook = format!(r#"{{"url":"{url}","types":["tag.created"]}}"#);
    let (status, body) = conn.call("POST", "/v3/webhooks", &hook).await;
    assert_eq!(status, 201, "{body}");

    let mut paced = Vec::new();
    let tick = Duration::from_micros(1_000_000 / args.rate);
    let start = Instant::now();
    for i in 0..args.paced {
        tokio::time::sleep_until((start + tick * i as u32).into()).await;
        paced.push(create(&mut conn, &format!("paced {i}")).await);
    }
    let (paced, _) = arrivals(&received, &paced).await;

    let each = args.burst / args.connections;
    let start = Instant::now();
    let makers: Vec<_> = (0..args.connections)
        .map(|c| {
            let port = server.port;
            tokio::spawn(async move {
                let mut conn = Conn::open(port, TOKEN).await;
                let mut made = Vec::with_capacity(each);
                for i in 0..each {
                    made.push(create(&mut conn, &format!("burst {c}-{i}")).await);
                }
                made
            })
        })
        .collect();
    let mut burst = Vec::new();
    for maker in makers {
        burst.extend(maker.await.unwrap());
    }
    let created = start.elapsed();
    let (latencies, last) = arrivals(&received, &burst).await;
    server.stop().await;
    let _ = std::fs::remove_dir_all(dir);
    Run {
        paced,
        burst: latencies,
        creates_per_s: burst.len() as f64 / created.as_secs_f64(),
        delivered_per_s: burst.len() as f64 / (last - start).as_secs_f64(),
    }
}

#[tokio::main]
async fn main() {
    let args = Args::parse();
    println!(
        "| deliveries to the endpoint at a time | steady ({}/s): p50 | p99 | burst of {} ({} connections): creates/s | events delivered/s | p50 | p99 |",
        args.rate, args.burst, args.connections
    );
    println!("|---|---|---|---|---|---|---|");
    for concurrency in [4, 16] {
        let r = run(&args, concurrency).await;
        println!(
            "| {concurrency}{} | {:.0} ms | {:.0} ms | {:.0} | {:.0} | {:.0} ms | {:.0} ms |",
            if concurrency == 4 {
                " (the default)"
            } else {
                ""
            },
            percentile(&r.paced, 0.5),
            percentile(&r.paced, 0.99),
            r.creates_per_s,
            r.delivered_per_s,
            percentile(&r.burst, 0.5),
            percentile(&r.burst, 0.99),
        );
    }
}
