//! `crm`: the operator tool of the CRM API.
//!
//! - `crm serve`: the whole API on the embedded store (what `cargo run` starts).
//! - `crm create-table`: the DynamoDB table and its indexes (DynamoDB Local or AWS).
//! - `crm bootstrap`: workspace 1 and an admin token in a DynamoDB table.

mod shaped;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use clap::{Args, Parser, Subcommand};
use embedded_store::EmbeddedStore;
use shared::config::Config;
use shared::domain::workspaces;
use shared::http::AppState;
use shared::keys;
use shared::store::SharedStore;

/// The allocator of `crm serve` (and of `bench-router`, which measures its
/// Router). A request makes many small allocations (headers, the JSON maps of
/// the items it reads) on two threads at once. Measured (docs/bench-results.md,
/// "The local API's hot path"): glibc's malloc and free were a quarter of the
/// in-process cost of a GET by id, and with mimalloc that GET costs 20% less,
/// for 0.3-1 MB more resident memory. The Lambda functions keep the system
/// allocator: a round trip, not the CPU, is their latency, and their memory is
/// measured against a bare function's.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Parser)]
#[command(name = "crm", version, about = "Operator tool of the CRM API")]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand)]
enum Command {
    /// Serve every route of the API locally (the default command).
    Serve(Serve),
    /// Create the DynamoDB table and its indexes (CRM_TABLE, CRM_DYNAMODB_ENDPOINT).
    CreateTable,
    /// Load records from a JSON-lines file into a workspace: organizations and
    /// their contacts, conversations, products, custom fields, business hours,
    /// sessions and campaigns (see docs/design.md#loading-records-crm-load).
    Load(Load),
    /// Rebuild a workspace's rollups (the daily counts behind dashboard
    /// snapshots) from its contacts, deals and sessions.
    Rollups(Rollups),
    /// Erase again, in a store restored from a backup, every person erased
    /// since the backup: the erasure ledger of the live store lists them (ids
    /// only). Run it after every restore (docs/design.md, "Erasure and export").
    Erasures(Erasures),
    /// Import a CSV or JSON-lines file of contacts, deals, tags or products
    /// into a running API (`crm serve`, or a deployment) as a bulk job, with
    /// a progress bar; failed rows go to `<file>.errors.csv`.
    Import(Import),
    /// Export every contact, deal, tag or product of a running API to a file.
    Export(Export),
    /// Print the OpenAPI 3.1 document of every route, generated from the groups
    /// (docs/openapi.json is this output; `GET /openapi.json` serves it).
    Openapi,
    /// Create workspace 1 and an admin token in the DynamoDB table, unless present.
    /// The token is CRM_BOOTSTRAP_TOKEN when set, otherwise random and printed once.
    Bootstrap {
        /// Name of the workspace.
        #[arg(long, default_value = "Default workspace")]
        name: String,
    },
}

/// The workspace and store an operator command works on.
#[derive(Args)]
struct Target {
    /// The workspace.
    #[arg(long, default_value_t = 1)]
    workspace: u64,
    /// The embedded store's folder (stop `crm serve` on it first).
    #[arg(long, default_value = ".crm-data", conflicts_with = "dynamodb")]
    data: PathBuf,
    /// Work on DynamoDB instead (CRM_TABLE, CRM_DYNAMODB_ENDPOINT).
    #[arg(long)]
    dynamodb: bool,
}

impl Target {
    async fn store(&self) -> Result<SharedStore, String> {
        if self.dynamodb {
            return Ok(Arc::new(Config::from_env().dynamo_store().await));
        }
        let store = EmbeddedStore::open(&self.data, keys::GSIS)
            .map_err(|e| format!("cannot open the store in {}: {e}", self.data.display()))?;
        Ok(Arc::new(store))
    }
}

#[derive(Args)]
struct Erasures {
    #[command(subcommand)]
    action: ErasuresAction,
}

#[derive(Subcommand)]
enum ErasuresAction {
    /// Apply the live store's ledger to the restored one (`--data` or
    /// `--dynamodb`: the restored store; `--ledger-data` or
    /// `--ledger-table`: the live one).
    Apply(ErasuresApply),
}

#[derive(Args)]
struct ErasuresApply {
    /// The restored store's folder (stop `crm serve` on it first).
    #[arg(long, default_value = ".crm-data", conflicts_with = "dynamodb")]
    data: PathBuf,
    /// The restored store is the DynamoDB table CRM_TABLE (CRM_DYNAMODB_ENDPOINT).
    #[arg(long)]
    dynamodb: bool,
    /// The live DynamoDB table whose ledger lists the erasures (a point-in-
    /// time restore makes a new table; the live one keeps every erasure).
    #[arg(long, conflicts_with = "ledger_data")]
    ledger_table: Option<String>,
    /// The live folder whose ledger lists the erasures (a copy of a folder
    /// put back in place of another).
    #[arg(long)]
    ledger_data: Option<PathBuf>,
}

/// Where the API runs, and the token to call it with.
#[derive(Args)]
struct Remote {
    /// The API's address.
    #[arg(long, env = "CRM_URL", default_value = "http://127.0.0.1:3000")]
    url: String,
    /// A bearer token that writes (import) or reads (export) the object.
    #[arg(long, env = "CRM_TOKEN", hide_env_values = true)]
    token: String,
}

impl Remote {
    fn api(self) -> crm::remote::Api {
        crm::remote::Api {
            base: self.url,
            token: self.token,
        }
    }
}

#[derive(Args)]
struct Import {
    /// The CSV (a header row names the columns) or JSON-lines file.
    file: PathBuf,
    /// contacts, deals, tags or products.
    #[arg(long)]
    object: String,
    /// csv or jsonl (default: by the file's extension).
    #[arg(long)]
    format: Option<String>,
    /// create (the default), upsert (contacts, tags) or update (by an id column).
    #[arg(long)]
    mode: Option<String>,
    /// What a contacts upsert finds by: phone (the default), email or externalId.
    #[arg(long)]
    by: Option<String>,
    /// A column's field, as Column=field (`--map "E-mail=email" --map "Plan=customFields.plan"`).
    #[arg(long = "map")]
    map: Vec<String>,
    #[command(flatten)]
    remote: Remote,
}

#[derive(Args)]
struct Export {
    /// contacts, deals, tags or products.
    #[arg(long)]
    object: String,
    /// csv (the default) or jsonl.
    #[arg(long, default_value = "csv")]
    format: String,
    /// Where to write the file (default `<object>.<format>`).
    #[arg(long)]
    out: Option<PathBuf>,
    #[command(flatten)]
    remote: Remote,
}

#[derive(Args)]
struct Rollups {
    #[command(flatten)]
    target: Target,
}

#[derive(Args)]
struct Serve {
    #[arg(long, default_value = "127.0.0.1")]
    host: String,
    #[arg(long, default_value_t = 3000)]
    port: u16,
    /// Keep the embedded store in this folder (it survives restarts).
    #[arg(long, default_value = ".crm-data", conflicts_with_all = ["in_memory", "dynamodb"])]
    data: PathBuf,
    /// Keep the embedded store in memory only.
    #[arg(long)]
    in_memory: bool,
    /// Serve from DynamoDB instead (CRM_TABLE, CRM_DYNAMODB_ENDPOINT), e.g. DynamoDB Local.
    #[arg(long)]
    dynamodb: bool,
    /// Deliver webhooks to `http` and private addresses too (a receiver on
    /// 127.0.0.1 while developing). Never on a shared machine.
    #[arg(long)]
    webhooks_to_private: bool,
}

#[derive(Args)]
struct Load {
    /// The JSON-lines file (one record a line).
    file: PathBuf,
    #[command(flatten)]
    target: Target,
    /// Move every time of the file by one amount, so that its latest is now
    /// (demo data stays "recent" whenever it is loaded).
    #[arg(long)]
    shift_times: bool,
}

impl Default for Serve {
    fn default() -> Self {
        Self {
            host: "127.0.0.1".into(),
            port: 3000,
            data: ".crm-data".into(),
            in_memory: false,
            dynamodb: false,
            webhooks_to_private: false,
        }
    }
}

#[tokio::main]
async fn main() {
    let cli = Cli::parse();
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    // Colours only for a person at a terminal; plain text in files and pipes.
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stdout());
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_target(false)
        .with_ansi(ansi)
        .compact()
        .init();
    let result = match cli.command.unwrap_or(Command::Serve(Serve::default())) {
        Command::Serve(args) => serve(args).await,
        Command::CreateTable => create_table().await,
        Command::Load(args) => load(args).await,
        Command::Rollups(args) => rollups(args).await,
        Command::Erasures(Erasures {
            action: ErasuresAction::Apply(args),
        }) => erasures_apply(args).await,
        Command::Import(args) => {
            let api = args.remote.api();
            let import = crm::transfer::ImportArgs {
                file: args.file,
                object: args.object,
                format: args.format,
                mode: args.mode,
                by: args.by,
                map: args.map,
            };
            crm::transfer::import(&api, import).await.map(|job| {
                println!(
                    "import {}: {} rows, {} created, {} updated, {} failed",
                    job["status"], job["rows"], job["created"], job["updated"], job["failed"]
                );
            })
        }
        Command::Export(args) => {
            let api = args.remote.api();
            let out = args
                .out
                .unwrap_or_else(|| PathBuf::from(format!("{}.{}", args.object, args.format)));
            crm::transfer::export(&api, &args.object, &args.format, &out)
                .await
                .map(|job| {
                    println!("export: {} records in {}", job["records"], out.display());
                })
        }
        Command::Openapi => {
            println!("{}", crm::openapi());
            Ok(())
        }
        Command::Bootstrap { name } => {
            bootstrap(Arc::new(Config::from_env().dynamo_store().await), &name)
                .await
                .map(|_| ())
        }
    };
    if let Err(message) = result {
        eprintln!("crm: {message}");
        std::process::exit(1);
    }
}

async fn serve(args: Serve) -> Result<(), String> {
    // Listened for before anything opens: a stop that comes while the server
    // is starting ends the start-up, and the store is closed cleanly (no repair
    // on the next start).
    let mut stop =
        Box::pin(stop_signal().map_err(|e| format!("cannot listen for Ctrl-C and SIGTERM: {e}"))?);
    let (listener, app) = tokio::select! {
        biased;
        () = &mut stop => return Ok(()),
        started = start_up(&args) => started?,
    };
    axum::serve(shaped::Listener(listener), app)
        .with_graceful_shutdown(stop)
        .await
        .map_err(|e| format!("server error: {e}"))
}

/// Opens the store, bootstraps workspace 1, binds the port and starts the
/// background jobs: everything before the first request.
async fn start_up(args: &Serve) -> Result<(tokio::net::TcpListener, axum::Router), String> {
    let store: SharedStore = if args.dynamodb {
        Arc::new(Config::from_env().dynamo_store().await)
    } else if args.in_memory {
        Arc::new(EmbeddedStore::in_memory(keys::GSIS))
    } else {
        let store = EmbeddedStore::open(&args.data, keys::GSIS)
            .map_err(|e| format!("cannot open the store in {}: {e}", args.data.display()))?;
        Arc::new(store)
    };
    let new_token = bootstrap(store.clone(), "Default workspace").await?;

    let addr: SocketAddr = format!("{}:{}", args.host, args.port)
        .parse()
        .map_err(|e| format!("bad address {}:{}: {e}", args.host, args.port))?;
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|e| format!("cannot listen on {addr}: {e}"))?;
    // The port bound, which `--port 0` leaves to the system (the tests' way
    // to a free port that nothing can take between its choice and the bind).
    let addr = listener.local_addr().map_err(|e| e.to_string())?;
    let where_ = if args.dynamodb {
        "DynamoDB".to_owned()
    } else if args.in_memory {
        "the in-memory store".to_owned()
    } else {
        format!("the store in {}", args.data.display())
    };
    if let Some(secret) = new_token {
        eprintln!(
            "Try: curl -H 'Authorization: Bearer {secret}' http://{addr}/v3/workspaces/info\n"
        );
    }
    tracing::info!("CRM API on http://{addr} ({where_}); Ctrl-C stops it");
    // Background jobs and webhook deliveries run in this process, behind the
    // same queue trait as SQS on AWS; the dispatcher follows the event log
    // where the table's stream feeds it on AWS.
    let mut webhooks = shared::outbound::Settings::from_env();
    webhooks.allow_private |= args.webhooks_to_private;
    // Bulk files in the data folder, behind URLs of this server.
    let folder = if args.in_memory || args.dynamodb {
        std::env::temp_dir().join(format!("crm-files-{}", std::process::id()))
    } else {
        args.data.join("files")
    };
    let base_url = std::env::var("CRM_PUBLIC_URL").unwrap_or_else(|_| format!("http://{addr}"));
    let files: shared::files::SharedFiles = Arc::new(
        shared::files::local::LocalFiles::open(&folder, base_url)
            .map_err(|e| format!("cannot open {}: {e}", folder.display()))?,
    );
    let runner = shared::domain::jobs::Jobs {
        webhooks: Arc::new(webhooks.clone()),
        files: Some(files.clone()),
        budgeted: Some(shared::ratelimit::Budgeted::paced(store.clone())),
    };
    let queue: shared::queue::SharedQueue =
        Arc::new(shared::queue::LocalQueue::start(store.clone(), Arc::new(runner)).await);
    tokio::spawn(shared::domain::webhooks::follow(
        store.clone(),
        queue.clone(),
        std::time::Duration::from_millis(100),
    ));
    let state = AppState::new(store)
        .with_queue(queue)
        .with_webhooks(webhooks)
        .with_files(files);
    Ok((listener, crm::app(state)))
}

/// Ctrl-C or SIGTERM (Ctrl-C on Windows), whichever comes first. The handlers
/// are installed when this is called, not when the future is first polled:
/// before, a SIGTERM in the moment between the listener's bind and the
/// server's start took the default action and killed the process, leaving the
/// engine to repair its file.
#[cfg(unix)]
fn stop_signal() -> std::io::Result<impl std::future::Future<Output = ()>> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut interrupt = signal(SignalKind::interrupt())?;
    let mut terminate = signal(SignalKind::terminate())?;
    Ok(async move {
        tokio::select! { _ = interrupt.recv() => {}, _ = terminate.recv() => {} }
    })
}

#[cfg(windows)]
fn stop_signal() -> std::io::Result<impl std::future::Future<Output = ()>> {
    let mut ctrl_c = tokio::signal::windows::ctrl_c()?;
    Ok(async move {
        ctrl_c.recv().await;
    })
}

/// Returns the secret of a new random admin token, if one was issued.
async fn bootstrap(store: SharedStore, name: &str) -> Result<Option<String>, String> {
    let token = std::env::var("CRM_BOOTSTRAP_TOKEN")
        .ok()
        .filter(|t| !t.is_empty());
    let given = token.is_some();
    let outcome = workspaces::bootstrap(store.as_ref(), name, token)
        .await
        .map_err(|e| format!("bootstrap failed: {}", e.message))?;
    if outcome.created_workspace {
        eprintln!("Created workspace {}.", workspaces::FIRST_WORKSPACE);
    }
    match &outcome.new_token {
        Some(_) if given => eprintln!("CRM_BOOTSTRAP_TOKEN is now an admin token of workspace 1."),
        Some(secret) => {
            eprintln!("Admin token of workspace 1 (shown once, keep it):\n\n    {secret}\n")
        }
        None if given => eprintln!("CRM_BOOTSTRAP_TOKEN is an admin token of workspace 1."),
        None => eprintln!(
            "Workspace 1 exists: use the admin token printed when it was created, \
             or set CRM_BOOTSTRAP_TOKEN=crm_<at least 16 characters> to add one."
        ),
    }
    Ok(outcome.new_token.filter(|_| !given))
}

async fn create_table() -> Result<(), String> {
    let config = Config::from_env();
    let store = config.dynamo_store().await;
    store
        .create_table(keys::GSIS, shared::store::dynamo::Stream::Declared)
        .await
        .map_err(|e| format!("creating table {}: {e}", config.table))?;
    eprintln!("Table {} is ready.", config.table);
    Ok(())
}

async fn load(args: Load) -> Result<(), String> {
    let mut text =
        std::fs::read_to_string(&args.file).map_err(|e| format!("{}: {e}", args.file.display()))?;
    if args.shift_times {
        text = crm::shift_times(&text, shared::ids::now());
    }
    let store = args.target.store().await?;
    let workspace = shared::ids::WorkspaceId::from(args.target.workspace);
    let exists = shared::record::get::<workspaces::Workspace>(
        store.as_ref(),
        &keys::workspace(workspace),
        true,
    )
    .await
    .map_err(|e| e.message)?
    .is_some();
    match exists {
        true => {}
        // Into a new folder, workspace 1 comes first, as `crm serve` makes it:
        // the demo data loads in one command on a fresh clone. Not on
        // DynamoDB, where `crm bootstrap` is the deliberate step.
        false if workspace == workspaces::FIRST_WORKSPACE && !args.target.dynamodb => {
            eprintln!(
                "No workspace 1 in {}: creating it, as crm serve does.",
                args.target.data.display()
            );
            bootstrap(store.clone(), "Default workspace").await?;
        }
        false => return Err(format!("workspace {workspace} does not exist")),
    }
    let caller = shared::auth::Caller::system(args.target.workspace, "load");

    let lines: Vec<(usize, &str)> = text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .collect();
    let progress = indicatif::ProgressBar::new(lines.len() as u64);
    let mut loaded: std::collections::BTreeMap<&str, u64> = Default::default();
    let mut errors = 0;
    for (n, line) in lines {
        let outcome = shared::domain::load_line(store.as_ref(), &caller, line).await;
        match outcome {
            Ok(kind) => *loaded.entry(kind).or_default() += 1,
            Err(e) => {
                errors += 1;
                progress.suspend(|| eprintln!("line {}: {}", n + 1, e.message));
            }
        }
        progress.inc(1);
    }
    progress.finish_and_clear();
    let summary: Vec<String> = loaded
        .iter()
        .map(|(kind, n)| format!("{n} {kind}"))
        .collect();
    eprintln!(
        "Loaded into workspace {}: {}.",
        args.target.workspace,
        if summary.is_empty() {
            "nothing".to_owned()
        } else {
            summary.join(", ")
        }
    );
    if errors > 0 {
        return Err(format!("{errors} line(s) refused"));
    }
    Ok(())
}

async fn erasures_apply(args: ErasuresApply) -> Result<(), String> {
    let open = |dir: &PathBuf| -> Result<SharedStore, String> {
        EmbeddedStore::open(dir, keys::GSIS)
            .map(|s| Arc::new(s) as SharedStore)
            .map_err(|e| format!("cannot open the store in {}: {e}", dir.display()))
    };
    let target: SharedStore = if args.dynamodb {
        Arc::new(Config::from_env().dynamo_store().await)
    } else {
        open(&args.data)?
    };
    let ledger: SharedStore = match (&args.ledger_table, &args.ledger_data) {
        (Some(table), _) => Arc::new(
            Config {
                table: table.clone(),
                ..Config::from_env()
            }
            .dynamo_store()
            .await,
        ),
        (None, Some(dir)) => open(dir)?,
        (None, None) => {
            return Err(
                "name the live store whose ledger lists the erasures: --ledger-table or --ledger-data"
                    .into(),
            );
        }
    };
    let done = shared::domain::contacts::reapply(ledger.as_ref(), target.as_ref())
        .await
        .map_err(|e| e.message)?;
    eprintln!(
        "The ledger lists {} erasures: {} erased again, {} erased already, {} not in this store.",
        done.entries, done.erased, done.already, done.absent
    );
    Ok(())
}

async fn rollups(args: Rollups) -> Result<(), String> {
    let store = args.target.store().await?;
    let progress = indicatif::ProgressBar::new_spinner();
    progress.set_message("records read");
    let written =
        shared::domain::rollups::rebuild(store.as_ref(), args.target.workspace.into(), &|n| {
            progress.inc(n)
        })
        .await
        .map_err(|e| e.message)?;
    progress.finish_and_clear();
    eprintln!(
        "Rebuilt the rollups of workspace {} from {} records: {written} daily counts.",
        args.target.workspace,
        progress.position()
    );
    Ok(())
}
