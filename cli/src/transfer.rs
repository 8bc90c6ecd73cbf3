//! `crm import` and `crm export`: a file into or out of a running API
//! (`crm serve` or a deployment), through its bulk jobs, with progress bars.

use std::path::{Path, PathBuf};
use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};
use serde_json::{Map, Value, json};

use crate::remote::{self, Api};

/// What `crm import` sends.
pub struct ImportArgs {
    pub file: PathBuf,
    pub object: String,
    pub format: Option<String>,
    pub mode: Option<String>,
    pub by: Option<String>,
    /// `Column=field` pairs.
    pub map: Vec<String>,
}

fn bar(len: u64, template: &str) -> ProgressBar {
    let bar = ProgressBar::new(len);
    bar.set_style(
        ProgressStyle::with_template(template)
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> "),
    );
    bar
}

const BYTES: &str = "{msg:>10} [{bar:40}] {bytes}/{total_bytes} ({bytes_per_sec}, {eta})";

/// Makes the job, uploads the file, starts it and follows it to its end;
/// failed rows are saved beside the file (`<file>.errors.csv`).
pub async fn import(api: &Api, args: ImportArgs) -> Result<Value, String> {
    let format = match args.format {
        Some(f) => f,
        None if has_extension(&args.file, &["jsonl", "ndjson"]) => "jsonl".to_owned(),
        None => "csv".to_owned(),
    };
    let mut body = json!({ "object": args.object, "format": format });
    if let Some(mode) = args.mode {
        body["mode"] = json!(mode);
    }
    if let Some(by) = args.by {
        body["by"] = json!(by);
    }
    if !args.map.is_empty() {
        let mut mapping = Map::new();
        for pair in &args.map {
            let (column, field) = pair
                .split_once('=')
                .ok_or_else(|| format!("--map {pair}: write Column=field"))?;
            mapping.insert(column.to_owned(), json!(field));
        }
        body["mapping"] = Value::Object(mapping);
    }
    let job = api
        .json(http::Method::POST, "/v3/imports", Some(&body))
        .await?;
    let id = job["id"].as_str().ok_or("the job has no id")?.to_owned();
    let url = job["uploadUrl"]
        .as_str()
        .ok_or("the job has no upload URL")?;
    let size = std::fs::metadata(&args.file)
        .map_err(|e| format!("{}: {e}", args.file.display()))?
        .len();

    let upload = bar(size, BYTES);
    upload.set_message("upload");
    let progress = upload.clone();
    remote::upload(url, &args.file, move |n| progress.inc(n)).await?;
    upload.finish();

    let path = format!("/v3/imports/{id}");
    api.json(
        http::Method::POST,
        &format!("{path}/start"),
        Some(&json!({})),
    )
    .await?;
    let rows = bar(
        size,
        "{msg:>10} [{bar:40}] {bytes}/{total_bytes} {prefix} ({eta})",
    );
    rows.set_message("import");
    let done = loop {
        let job = api.json(http::Method::GET, &path, None).await?;
        rows.set_position(job["bytesRead"].as_u64().unwrap_or(0));
        rows.set_prefix(format!(
            "rows {} created {} updated {} failed {} ({}/s)",
            job["rows"],
            job["created"],
            job["updated"],
            job["failed"],
            job["rowsPerSecond"].as_f64().unwrap_or(0.0)
        ));
        if ["done", "failed", "canceled"].contains(&job["status"].as_str().unwrap_or_default()) {
            break job;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    };
    rows.finish();
    if done["failed"].as_u64().unwrap_or(0) > 0 {
        let errors = errors_path(&args.file);
        save_errors(api, &path, &errors).await?;
        eprintln!("failed rows and their reasons: {}", errors.display());
    }
    Ok(done)
}

fn has_extension(path: &Path, any: &[&str]) -> bool {
    path.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| any.iter().any(|a| e.eq_ignore_ascii_case(a)))
}

fn errors_path(file: &Path) -> PathBuf {
    let mut name = file.as_os_str().to_owned();
    name.push(".errors.csv");
    PathBuf::from(name)
}

/// Every page of `GET .../errors`, as one CSV.
async fn save_errors(api: &Api, path: &str, to: &Path) -> Result<(), String> {
    let mut text = String::new();
    let mut after: Option<u64> = None;
    loop {
        let page_path = match after {
            Some(row) => format!("{path}/errors?after={row}"),
            None => format!("{path}/errors"),
        };
        let (page, next) = api.text(&page_path).await?;
        let page = if text.is_empty() {
            page.as_str()
        } else {
            page.split_once('\n').map_or("", |(_, rest)| rest)
        };
        text.push_str(page);
        match next {
            Some(row) => after = Some(row),
            None => break,
        }
    }
    std::fs::write(to, text).map_err(|e| format!("{}: {e}", to.display()))
}

/// Makes an export job, follows it, and downloads its file to `out`.
pub async fn export(api: &Api, object: &str, format: &str, out: &Path) -> Result<Value, String> {
    let body = json!({ "object": object, "format": format });
    let job = api
        .json(http::Method::POST, "/v3/exports", Some(&body))
        .await?;
    let path = format!(
        "/v3/exports/{}",
        job["id"].as_str().ok_or("the job has no id")?
    );
    let spinner = ProgressBar::new_spinner();
    spinner.set_message("export");
    let done = loop {
        let job = api.json(http::Method::GET, &path, None).await?;
        spinner.set_message(format!("export: {} records", job["records"]));
        spinner.tick();
        if ["done", "failed", "canceled"].contains(&job["status"].as_str().unwrap_or_default()) {
            break job;
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
    };
    spinner.finish();
    let url = done["downloadUrl"]
        .as_str()
        .ok_or_else(|| format!("the export ended {}: {}", done["status"], done["error"]))?;
    let download = bar(done["bytes"].as_u64().unwrap_or(0), BYTES);
    download.set_message("download");
    let progress = download.clone();
    remote::download(url, out, move |n| progress.inc(n)).await?;
    download.finish();
    Ok(done)
}
