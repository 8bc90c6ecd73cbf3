//! The local API on the embedded store (`crm serve`), measured as a user runs
//! it: start-up time and resident memory at 10k, 100k and 1M items (loaded
//! through the store, not the API, for speed), and the throughput of GET by id
//! and of creates on a folder (durable) against `--in-memory`, each at its
//! best of several levels of connections (its capacity) and level by level.
//! Prints markdown tables for docs/bench-results.md.
//!
//!   bench-local --crm target/release/crm --sizes 10000,100000,1000000

#[path = "../cpu.rs"]
mod cpu;
#[path = "../serving.rs"]
mod serving;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use clap::Parser;
use cpu::cpu_ns;
use embedded_store::EmbeddedStore;
use serde_json::json;
use serving::{Conn, Serving, TOKEN, free_port, serve, start};
use shared::keys;
use shared::store::{Item, Store, Write};

#[derive(Parser)]
struct Args {
    /// The `crm` binary to measure.
    #[arg(long, default_value = "target/release/crm")]
    crm: PathBuf,
    /// Store sizes (items) for start-up and memory.
    #[arg(long, value_delimiter = ',', default_value = "10000,100000,1000000")]
    sizes: Vec<usize>,
    /// Seconds of load per throughput run.
    #[arg(long, default_value_t = 5)]
    seconds: u64,
    /// Concurrent connections of the load, each level in turn. A server's
    /// throughput is its best level's: its capacity, once enough requests are
    /// in flight to cover its latency (a durable create waits for its group's
    /// synced write). The table by level shows how each gets there.
    #[arg(long, value_delimiter = ',', default_value = "16,64,256")]
    connections: Vec<usize>,
    /// Rounds of the throughput runs (disk, memory, hello-JSON in turn, so a
    /// slow spell of the machine falls on all three); medians are reported.
    #[arg(long, default_value_t = 5)]
    rounds: usize,
    /// Where to keep the folders (removed at the end).
    #[arg(long, default_value = "target/bench-local")]
    work: PathBuf,
    /// Serve the bare axum hello-JSON reference on this port (the bench starts
    /// itself with it, so the reference runs in a process of its own).
    #[arg(long, hide = true)]
    serve_hello: Option<u16>,
}

/// The floor of the local API: a bare axum server answering a small JSON
/// object, on the same runtime `crm serve` uses.
async fn serve_hello(port: u16) {
    let app = axum::Router::new().route(
        "/hello",
        axum::routing::get(|| async { axum::Json(json!({ "hello": "world", "id": "1" })) }),
    );
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port))
        .await
        .expect("bind");
    axum::serve(listener, app).await.expect("serve");
}

/// Fills a folder with `n` tag-shaped items of workspace 1, 100 per transaction.
async fn fill(dir: &Path, n: usize) -> Duration {
    let started = Instant::now();
    let store = Arc::new(EmbeddedStore::open(dir, keys::GSIS).expect("open"));
    let next = Arc::new(AtomicU64::new(0));
    let writers: Vec<_> = (0..8)
        .map(|_| {
            let (store, next) = (store.clone(), next.clone());
            tokio::spawn(async move {
                loop {
                    let start = next.fetch_add(100, Ordering::Relaxed) as usize;
                    if start >= n {
                        break;
                    }
                    let writes: Vec<Write> = (start..(start + 100).min(n))
                        .map(|i| {
                            // Where the API keeps tag `id` (its shard's partition).
                            let key = keys::tag(
                                shared::ids::WorkspaceId(1),
                                keys::TagId(1_000_000_000 + i as u64),
                            );
                            let Ok(serde_json::Value::Object(item)) = serde_json::to_value(json!({
                                "pk": key.pk,
                                "sk": key.sk,
                                "_type": "Tag",
                                "id": 1_000_000_000 + i as u64,
                                "workspaceId": 1,
                                "name": format!("bench tag {i}"),
                                "color": "#336699",
                                "createdAt": "2026-11-22T00:00:00.000Z",
                                "lastUpdateAt": "2026-11-22T00:00:00.000Z",
                                "version": 1,
                            })) else {
                                unreachable!()
                            };
                            Write::Put {
                                item: item as Item,
                                condition: None,
                            }
                        })
                        .collect();
                    store.write(writes).await.expect("write");
                }
            })
        })
        .collect();
    for w in writers {
        w.await.unwrap();
    }
    drop(store);
    started.elapsed()
}

/// Starts the hello-JSON reference (this binary, `--serve-hello`).
async fn hello() -> Serving {
    let port = free_port();
    let mut command = tokio::process::Command::new(std::env::current_exe().expect("exe"));
    command.args(["--serve-hello", &port.to_string()]);
    start(command, port).await.0
}

fn rss_mb(pid: u32) -> f64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find(|l| l.starts_with("VmRSS:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|kb| kb.parse::<f64>().ok())
        .unwrap_or(0.0)
        / 1024.0
}

/// What a load run measured.
#[derive(Clone, Copy)]
struct Rate {
    per_second: f64,
    /// The server's CPU time per request (all its threads), in microseconds:
    /// its own cost, apart from the load generator's.
    cpu_us: f64,
}

/// The median of some figures (the mean of the two middle ones when even).
fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    let n = values.len();
    match n {
        0 => f64::NAN,
        _ if n % 2 == 1 => values[n / 2],
        _ => (values[n / 2 - 1] + values[n / 2]) / 2.0,
    }
}

impl Rate {
    /// The run of the most requests per second: a server's capacity.
    fn best(runs: &[Rate]) -> Rate {
        let faster = |a: &&Rate, b: &&Rate| a.per_second.total_cmp(&b.per_second);
        *runs.iter().max_by(faster).expect("a load level")
    }

    /// The median of each figure over runs.
    fn median(runs: &[Rate]) -> Rate {
        Rate {
            per_second: median(runs.iter().map(|r| r.per_second).collect()),
            cpu_us: median(runs.iter().map(|r| r.cpu_us).collect()),
        }
    }
}

/// Requests per second of `path` (GET) or of creates (POST) over `seconds`.
async fn load(
    server: &Serving,
    token: &str,
    connections: usize,
    seconds: u64,
    create: bool,
    get_path: &str,
) -> Rate {
    // Tag names are unique in a workspace: each run's creates have their own.
    static RUNS: AtomicU64 = AtomicU64::new(0);
    let run = RUNS.fetch_add(1, Ordering::Relaxed);
    let (port, pid) = (server.port, server.child.id().unwrap_or(0));
    let done = Arc::new(AtomicU64::new(0));
    let (started, cpu_before) = (Instant::now(), cpu_ns(pid));
    let deadline = started + Duration::from_secs(seconds);
    let tasks: Vec<_> = (0..connections)
        .map(|c| {
            let (done, path, token) = (done.clone(), get_path.to_owned(), token.to_owned());
            tokio::spawn(async move {
                let mut conn = Conn::open(port, &token).await;
                let mut i = 0u64;
                while Instant::now() < deadline {
                    let (status, body) = if create {
                        let name = format!(r#"{{"name":"load {run} {c} {i}"}}"#);
                        conn.call("POST", "/v3/tags", &name).await
                    } else {
                        conn.call("GET", &path, "").await
                    };
                    assert!(status == 200 || status == 201, "{status} {body}");
                    done.fetch_add(1, Ordering::Relaxed);
                    i += 1;
                }
            })
        })
        .collect();
    for t in tasks {
        t.await.unwrap();
    }
    let (elapsed, cpu) = (started.elapsed(), cpu_ns(pid).saturating_sub(cpu_before));
    let requests = done.load(Ordering::Relaxed) as f64;
    Rate {
        per_second: requests / elapsed.as_secs_f64(),
        cpu_us: cpu as f64 / 1000.0 / requests,
    }
}

/// A string field of a JSON answer.
fn field(body: &str, name: &str) -> String {
    let answer: serde_json::Value = serde_json::from_str(body).expect("a JSON answer");
    answer[name].as_str().expect(name).to_owned()
}

/// GET by id, then creates, at each level of connections: one server, its
/// runs by level.
/// Durable GET's and create's shares of hello-JSON (throughput, then CPU per
/// request), in percent: the median over rounds of each round's ratio, from
/// figures of the same round.
fn shares(runs: &[Vec<Rate>; 5]) -> [f64; 4] {
    let [get, create, _, _, floor] = runs;
    let share = |of: &[Rate], cpu: bool| {
        let ratios = of.iter().zip(floor).map(|(r, f)| match cpu {
            false => r.per_second / f.per_second,
            true => f.cpu_us / r.cpu_us,
        });
        100.0 * median(ratios.collect())
    };
    [
        share(get, false),
        share(get, true),
        share(create, false),
        share(create, true),
    ]
}

async fn throughput(args: &Args, serve_args: &[&str]) -> (Vec<Rate>, Vec<Rate>) {
    let (server, _) = serve(&args.crm, serve_args).await;
    let mut conn = Conn::open(server.port, TOKEN).await;
    // Calls carry a token the API issued (`crm_1_...`), as integrators' do.
    let (_, body) = conn
        .call("POST", "/v3/api-tokens", r#"{"name":"bench"}"#)
        .await;
    let token = field(&body, "token");
    let (_, body) = conn.call("POST", "/v3/tags", r#"{"name":"read me"}"#).await;
    let path = format!("/v3/tags/{}", field(&body, "id"));
    let (mut get, mut create) = (Vec::new(), Vec::new());
    for &c in &args.connections {
        get.push(load(&server, &token, c, args.seconds, false, &path).await);
    }
    for &c in &args.connections {
        create.push(load(&server, &token, c, args.seconds, true, "").await);
    }
    server.stop().await;
    (get, create)
}

/// Hello-JSON at each level of connections.
async fn floor(args: &Args) -> Vec<Rate> {
    let server = hello().await;
    let mut runs = Vec::new();
    for &c in &args.connections {
        runs.push(load(&server, TOKEN, c, args.seconds, false, "/hello").await);
    }
    server.stop().await;
    runs
}

#[tokio::main]
async fn main() {
    let args = Args::parse();
    if let Some(port) = args.serve_hello {
        return serve_hello(port).await;
    }
    let _ = std::fs::remove_dir_all(&args.work);
    std::fs::create_dir_all(&args.work).unwrap();

    println!(
        "| items in `--data` | load time (through the store) | start-up to listening | resident memory after a GET | start-up after a crash (SIGKILL) | folder size |"
    );
    println!("|---|---|---|---|---|---|");
    // `--sizes 0`: throughput only.
    for &n in args.sizes.iter().filter(|&&n| n > 0) {
        let dir = args.work.join(format!("data-{n}"));
        let filled = fill(&dir, n).await;
        // The first start bootstraps workspace 1; the measured one is the next.
        let (server, _) = serve(&args.crm, &["--data", dir.to_str().unwrap()]).await;
        server.stop().await;
        let (server, startup) = serve(&args.crm, &["--data", dir.to_str().unwrap()]).await;
        let mut conn = Conn::open(server.port, TOKEN).await;
        let (status, _) = conn.call("GET", "/v3/tags?limit=20", "").await;
        assert_eq!(status, 200);
        let rss = rss_mb(server.child.id().unwrap());
        server.crash().await;
        // After a crash the engine checks its last commit first (redb's repair).
        let (server, after_crash) = serve(&args.crm, &["--data", dir.to_str().unwrap()]).await;
        server.stop().await;
        let size: u64 = std::fs::read_dir(&dir)
            .unwrap()
            .flatten()
            .filter_map(|e| e.metadata().ok())
            .map(|m| m.len())
            .sum();
        println!(
            "| {n} | {:.1} s | {:.1} ms | {rss:.1} MB | {:.0} ms | {:.0} MB |",
            filled.as_secs_f64(),
            startup.as_secs_f64() * 1000.0,
            after_crash.as_secs_f64() * 1000.0,
            size as f64 / 1e6
        );
    }

    println!();
    // Throughput is shared with the load generator on the same cores; the
    // server's CPU per request is its cost alone.
    println!(
        "| `crm serve` | GET /v3/tags/{{id}} | server CPU per GET | POST /v3/tags | server CPU per POST |"
    );
    println!("|---|---|---|---|---|");
    let row = |name: &str, get: &Rate, create: Option<&Rate>| {
        let (rate, cpu) = create.map_or((String::new(), String::new()), |c| {
            (
                format!("{:.0} req/s", c.per_second),
                format!("{:.1} µs", c.cpu_us),
            )
        });
        println!(
            "| {name} | {:.0} req/s | {:.1} µs | {rate} | {cpu} |",
            get.per_second, get.cpu_us
        );
    };
    // By kind (disk GET, disk create, memory GET, memory create, hello) the
    // runs of each round: at each level, and the best level's.
    let levels = args.connections.len();
    let mut by_level: Vec<[Vec<Rate>; 5]> = vec![Default::default(); levels];
    let mut runs: [Vec<Rate>; 5] = Default::default();
    for round in 0..args.rounds.max(1) {
        let folder = args.work.join(format!("throughput-{round}"));
        let (get, create) = throughput(&args, &["--data", folder.to_str().unwrap()]).await;
        let (get_mem, create_mem) = throughput(&args, &["--in-memory"]).await;
        let kinds = [get, create, get_mem, create_mem, floor(&args).await];
        for (level, all) in by_level.iter_mut().enumerate() {
            for (runs, kind) in all.iter_mut().zip(&kinds) {
                runs.push(kind[level]);
            }
        }
        for (runs, kind) in runs.iter_mut().zip(&kinds) {
            runs.push(Rate::best(kind));
        }
    }
    let [get, create, get_mem, create_mem, floor] = runs.clone().map(|r| Rate::median(&r));
    row("`--data` (durable: group commit)", &get, Some(&create));
    row("`--in-memory`", &get_mem, Some(&create_mem));
    row("bare axum hello-JSON (`GET /hello`)", &floor, None);
    let [get_share, get_cpu_share, create_share, create_cpu_share] = shares(&runs);
    println!(
        "| `--data` as a share of hello-JSON | {get_share:.0}% | {get_cpu_share:.0}% | {create_share:.0}% | {create_cpu_share:.0}% |"
    );

    println!();
    println!(
        "| connections | GET /v3/tags/{{id}}, `--data` | POST /v3/tags, `--data` | POST /v3/tags, `--in-memory` | hello-JSON | GET, share of hello | POST, share of hello |"
    );
    println!("|---|---|---|---|---|---|---|");
    for (connections, runs) in args.connections.iter().zip(&by_level) {
        let [get, create, _, create_mem, floor] = runs.clone().map(|r| Rate::median(&r));
        let [get_share, _, create_share, _] = shares(runs);
        println!(
            "| {connections} | {:.0} req/s | {:.0} req/s | {:.0} req/s | {:.0} req/s | {get_share:.0}% | {create_share:.0}% |",
            get.per_second, create.per_second, create_mem.per_second, floor.per_second
        );
    }
    let _ = std::fs::remove_dir_all(&args.work);
}
