//! Measures the Lambda functions as Lambda runs them, side by side with a bare
//! reference function (`src/bin/reference.rs`: aws-config, one DynamoDB client
//! and one GetItem per call). Each function binary is started against a local
//! Runtime API (`runtime.rs`), fed API Gateway events, and timed:
//!
//! - init: process start to its first `next` poll (Lambda's Init Duration:
//!   runtime, logging, `SdkConfig`, client);
//! - first: the first invocation (connection set-up and credentials happen here);
//! - warm p50/p99: the following invocations;
//! - peak RSS: the process's VmHWM after the run.
//!
//! Rounds go over every function in turn (one cold start each), so a drift of
//! the machine touches them all alike. Every figure is also given as a ratio to
//! the reference's. `scripts/bench.sh` builds the release binaries, starts
//! DynamoDB Local, loads the demo records and writes the table into
//! `docs/bench-results.md`.

mod cpu;
mod delay;
mod phone;
mod runtime;

use std::path::PathBuf;
use std::time::Duration;

use clap::Parser;
use runtime::{Running, http_event};
use serde_json::{Value, json};

#[derive(Parser)]
struct Args {
    /// Where the release binaries are.
    #[arg(long, default_value = "target/release")]
    bin_dir: PathBuf,
    /// Cold starts per function (a new process each).
    #[arg(long, default_value_t = 10)]
    cold_starts: usize,
    /// Warm invocations after each cold start.
    #[arg(long, default_value_t = 100)]
    warm: usize,
    /// An admin token of workspace 1 (it issues the token the bench calls with).
    #[arg(long, env = "CRM_BOOTSTRAP_TOKEN")]
    admin_token: String,
    /// Only the rows whose function is named here (comma-separated).
    #[arg(long, value_delimiter = ',')]
    only: Vec<String>,
    /// Hold the store's traffic this long each way (`delay.rs`); 0: loopback.
    #[arg(long, default_value_t = 0)]
    store_delay_ms: u64,
    /// Skip the phone-identity table.
    #[arg(long)]
    no_phone: bool,
}

/// What one row measures.
struct Row {
    function: &'static str,
    /// The function, and what differs from its deployed set-up.
    label: String,
    /// `GET /path`, after `{name}` is replaced by a fixture's id.
    request: String,
    kind: &'static str,
    env: Vec<(String, String)>,
    event: String,
}

#[derive(Default)]
struct Samples {
    init: Vec<f64>,
    first: Vec<f64>,
    warm: Vec<f64>,
    /// The function's own CPU time (its threads', from `/proc`), per first
    /// call and per warm call: what of a call is the function's, not the
    /// store's nor the wire's.
    first_cpu: Vec<f64>,
    warm_cpu: Vec<f64>,
    peak_rss_kb: u64,
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn percentile(v: &[f64], p: f64) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    v[((v.len() as f64 - 1.0) * p).round() as usize]
}

/// Calls `function` once on a fresh process, for fixtures: the answer's JSON.
async fn once(args: &Args, function: &str, event: &str) -> Result<Value, String> {
    let mut f = Running::start(&args.bin_dir.join(function), &[]).await?;
    let (status, body, _) = f.call(event).await?;
    f.stop().await;
    let answer: Value = serde_json::from_str(&body).map_err(|e| e.to_string())?;
    let payload = answer["body"].as_str().unwrap_or_default();
    if !(200..300).contains(&status) {
        return Err(format!("{function}: {status} {payload}"));
    }
    serde_json::from_str(payload).map_err(|e| format!("{function}: {e}: {payload}"))
}

/// POSTs `body` to `path` of `function` with the admin token: the new id.
async fn create(args: &Args, function: &str, path: &str, body: Value) -> Result<String, String> {
    let event = http_event(
        "POST",
        path,
        Some(&args.admin_token),
        Some(&body.to_string()),
    );
    let created = once(args, function, &event).await?;
    created["id"]
        .as_str()
        .map(str::to_owned)
        .ok_or_else(|| format!("{function}: no id"))
}

/// Creates what the reads read, through the functions themselves, and issues
/// the (workspace-scoped, current-format) token the bench calls with.
async fn fixtures(args: &Args) -> Result<(String, Vec<(&'static str, String)>), String> {
    let body = json!({ "name": "bench" }).to_string();
    let event = http_event(
        "POST",
        "/v3/api-tokens",
        Some(&args.admin_token),
        Some(&body),
    );
    let issued = once(args, "api-tokens", &event).await?;
    let token = issued["token"]
        .as_str()
        .ok_or("no token issued")?
        .to_owned();
    // Tag names are unique in a workspace, and the bench may run twice on a table.
    let name = format!("bench {}", shared::ids::new_ulid());
    let tag = create(args, "tags", "/v3/tags", json!({ "name": name })).await?;
    let contact = create(args, "contacts", "/v3/contacts", json!({ "name": "Bench" })).await?;
    let deal = create(args, "deals", "/v3/deals", json!({
        "name": "Plan", "value": 10, "status": "open", "contactId": contact.parse::<u64>().unwrap_or(1),
        "operatorId": 7, "groupId": 1, "pipelineId": "sales", "stageId": "lead", "origin": "site", "tagIds": []
    }))
    .await?;
    let dashboard = create(
        args,
        "dashboards",
        "/v3/dashboards",
        json!({ "name": "Bench", "layout": [] }),
    )
    .await?;
    let campaign = create(args, "campaigns", "/v3/campaigns", json!({
        "name": "Bench", "leadsCount": 10, "message": "Hi", "scheduledTo": "2030-01-01T00:00:00Z"
    }))
    .await?;
    Ok((
        token,
        vec![
            ("{tag}", tag),
            ("{contact}", contact),
            ("{deal}", deal),
            ("{dashboard}", dashboard),
            ("{campaign}", campaign),
        ],
    ))
}

const PLAN: &[(&str, &str, &str)] = &[
    ("reference", "GetItem of the tag", "by id"),
    ("tags", "GET /v3/tags/{tag}", "by id"),
    ("tags", "GET /v3/tags?limit=20", "list"),
    ("contacts", "GET /v3/contacts/{contact}", "by id"),
    ("contacts", "GET /v3/contacts?limit=20", "list"),
    ("deals", "GET /v3/deals/{deal}", "by id"),
    (
        "deals",
        "GET /v3/deals?roleId=1&isOwner=true&userId=7&limit=20",
        "list",
    ),
    ("products", "GET /v3/products/1", "by id"),
    ("custom-fields", "GET /v3/custom-fields/1", "by id"),
    ("business-hours", "GET /v3/business-hours/1", "by id"),
    ("dashboards", "GET /v3/dashboards/{dashboard}", "by id"),
    ("campaigns", "GET /v3/campaigns/{campaign}", "by id"),
    ("reports", "GET /v3/reports/sessions/demo-0000", "by id"),
    ("workspaces", "GET /v3/workspaces/info", "by id"),
    ("api-tokens", "GET /v3/api-tokens", "list"),
    ("audit", "GET /v3/audit?limit=20", "list"),
    ("utility", "GET /v3/time/utc", "token only"),
    ("api-docs", "GET /openapi.json", "no token"),
    ("job-worker", "SQS: a job that does not exist", "event"),
];

fn rows(args: &Args, token: &str, ids: &[(&str, String)]) -> Vec<Row> {
    let workspace = token
        .split('_')
        .nth(1)
        .and_then(|w| w.parse().ok())
        .unwrap_or(1);
    let tag_id = ids[0].1.parse().unwrap_or(0);
    let tag = shared::keys::tag(
        shared::ids::WorkspaceId(workspace),
        shared::keys::TagId(tag_id),
    );
    PLAN.iter()
        .filter(|(f, ..)| args.only.is_empty() || args.only.iter().any(|o| o == f))
        .map(|&(function, request, kind)| {
            let request = ids
                .iter()
                .fold(request.to_owned(), |r, (name, id)| r.replace(name, id));
            let (env, event) = match function {
                "reference" => (
                    vec![("BENCH_PK".into(), tag.pk.clone()), ("BENCH_SK".into(), tag.sk.clone())],
                    http_event("GET", "/", None, None),
                ),
                "job-worker" => (vec![], json!({ "Records": [{
                    "messageId": "bench", "receiptHandle": "bench", "eventSource": "aws:sqs",
                    "body": json!({ "workspaceId": workspace, "jobId": "bench-missing" }).to_string(),
                    "attributes": { "ApproximateReceiveCount": "1" }, "messageAttributes": {},
                    "eventSourceARN": "arn:aws:sqs:us-east-1:123456789012:bench", "awsRegion": "us-east-1"
                }]}).to_string()),
                _ => {
                    let target = request.trim_start_matches("GET ");
                    let auth = (kind != "no token").then_some(token);
                    (vec![], http_event("GET", target, auth, None))
                }
            };
            Row { function, label: function.to_owned(), request, kind, env, event }
        })
        .flat_map(|row| {
            if !(row.function == "tags" && row.kind == "by id") {
                return vec![row];
            }
            let target = row.request.trim_start_matches("GET ");
            // The same read with a token of the earlier kind, which names no
            // workspace and so is read before the tag: the round trip saved.
            let read_first = Row {
                label: "tags, token of the earlier kind".into(),
                env: vec![],
                request: row.request.clone(),
                event: http_event("GET", target, Some(&args.admin_token), None),
                ..row
            };
            // The warm-up read at init (off by default), measured.
            let warmed = Row {
                label: "tags, `CRM_WARM_UP=1`".into(),
                env: vec![("CRM_WARM_UP".into(), "1".into())],
                request: row.request.clone(),
                event: row.event.clone(),
                ..row
            };
            // The same read without the rate limiter: what its leases cost.
            let unlimited = Row {
                label: "tags, `CRM_RATE_LIMITS=off`".into(),
                env: vec![("CRM_RATE_LIMITS".into(), "off".into())],
                request: row.request.clone(),
                event: row.event.clone(),
                ..row
            };
            vec![row, read_first, warmed, unlimited]
        })
        .collect()
}

async fn cold_start(args: &Args, row: &Row, samples: &mut Samples) -> Result<(), String> {
    let mut f = Running::start(&args.bin_dir.join(row.function), &row.env).await?;
    samples.init.push(ms(f.init));
    let mut cpu = f.cpu_ns();
    for n in 0..=args.warm {
        let (status, body, took) = f.call(&row.event).await?;
        if !(200..300).contains(&status) {
            return Err(format!(
                "{} {}: status {status}: {body}",
                row.function, row.request
            ));
        }
        if n == 0 {
            samples.first.push(ms(took));
            let now = f.cpu_ns();
            samples.first_cpu.push(now.saturating_sub(cpu) as f64 / 1e6);
            cpu = now;
        } else {
            samples.warm.push(ms(took));
        }
    }
    let warm_ns = f.cpu_ns().saturating_sub(cpu) as f64;
    samples
        .warm_cpu
        .push(warm_ns / 1e6 / args.warm.max(1) as f64);
    samples.peak_rss_kb = samples.peak_rss_kb.max(f.peak_rss_kb());
    f.stop().await;
    Ok(())
}

#[tokio::main]
async fn main() {
    let args = Args::parse();
    if !args.no_phone {
        phone::table();
    }
    if args.cold_starts == 0 {
        return;
    }
    let (token, ids) = fixtures(&args).await.unwrap_or_else(|e| {
        eprintln!("fixtures: {e}");
        std::process::exit(1)
    });
    let mut rows = rows(&args, &token, &ids);
    if args.store_delay_ms > 0 {
        let endpoint = std::env::var("CRM_DYNAMODB_ENDPOINT").unwrap_or_default();
        let upstream = endpoint.trim_start_matches("http://").to_owned();
        let delay = Duration::from_millis(args.store_delay_ms);
        let proxy = delay::start(upstream, delay).await.unwrap_or_else(|e| {
            eprintln!("delay proxy: {e}");
            std::process::exit(1)
        });
        for row in &mut rows {
            row.env
                .push(("CRM_DYNAMODB_ENDPOINT".into(), format!("http://{proxy}")));
        }
    }
    let mut samples: Vec<Samples> = rows.iter().map(|_| Samples::default()).collect();
    for _ in 0..args.cold_starts {
        for (row, samples) in rows.iter().zip(&mut samples) {
            if let Err(e) = cold_start(&args, row, samples).await {
                eprintln!("{e}");
                std::process::exit(1);
            }
        }
    }
    let figures = |s: &Samples| {
        [
            percentile(&s.init, 0.5),
            percentile(&s.first, 0.5),
            percentile(&s.warm, 0.5),
            percentile(&s.warm, 0.99),
            s.peak_rss_kb as f64 / 1024.0,
            percentile(&s.first_cpu, 0.5),
            percentile(&s.warm_cpu, 0.5),
        ]
    };
    let floor = rows
        .iter()
        .position(|r| r.function == "reference")
        .map(|i| figures(&samples[i]));
    println!();
    println!(
        "| function | request | kind | init (median) | first call (median) | warm p50 | warm p99 | peak RSS | CPU, first call | CPU, warm call |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|");
    for (row, s) in rows.iter().zip(&samples) {
        let cells: Vec<String> = figures(s)
            .iter()
            .enumerate()
            .map(|(i, v)| {
                let unit = if i == 4 { "MB" } else { "ms" };
                match floor {
                    Some(f) if row.function != "reference" => {
                        format!("{v:.2} {unit} (**{:.2}**)", v / f[i])
                    }
                    _ => format!("{v:.2} {unit}"),
                }
            })
            .collect();
        println!(
            "| {} | `{}` | {} | {} |",
            row.label,
            row.request,
            row.kind,
            cells.join(" | ")
        );
    }
}
