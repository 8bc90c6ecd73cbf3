//! Files in a folder, behind URLs of the local server (`crm serve`, tests):
//! a stand-in for S3 with the same flow. A URL names one file and one method
//! and carries its expiry and an HMAC-SHA256 of the three under a secret kept
//! in the folder (so URLs outlive a restart): the URL alone authorizes, as a
//! presigned S3 URL does, and no bearer token goes to an upload.
//!
//! [`router`] serves them at `/files/{name}` beside the API, outside its
//! body limit (a file is up to [`super::MAX_IMPORT_BYTES`]).

use std::path::PathBuf;

use async_trait::async_trait;
use axum::Router;
use axum::body::Body;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Path, Query, Request, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use hmac::{Hmac, Mac};
use serde::Deserialize;
use sha2::Sha256;
use tokio::io::{AsyncReadExt, AsyncSeekExt, AsyncWriteExt};

use super::{FileWriter, Files, FilesError, MAX_IMPORT_BYTES, URL_TTL, valid_name};
use crate::error::ApiError;

pub struct LocalFiles {
    root: PathBuf,
    /// Where the server is reached (`http://127.0.0.1:3000`).
    base_url: String,
    secret: Vec<u8>,
}

impl LocalFiles {
    /// The files of folder `root` (made if missing), served at `base_url`.
    pub fn open(root: impl Into<PathBuf>, base_url: impl Into<String>) -> std::io::Result<Self> {
        let root = root.into();
        std::fs::create_dir_all(&root)?;
        remove_expired(&root);
        let secret_path = root.join(".secret");
        let secret = match std::fs::read(&secret_path) {
            Ok(secret) if secret.len() == 32 => secret,
            _ => {
                let secret: [u8; 32] = rand::random();
                std::fs::write(&secret_path, secret)?;
                secret.to_vec()
            }
        };
        Ok(Self {
            root,
            base_url: base_url.into().trim_end_matches('/').to_owned(),
            secret,
        })
    }

    fn path(&self, name: &str) -> Result<PathBuf, FilesError> {
        if !valid_name(name) {
            return Err(FilesError(format!("not a file name: {name:?}")));
        }
        Ok(self.root.join(name))
    }

    fn signature(&self, method: &str, name: &str, expires: i64) -> String {
        let mut mac = Hmac::<Sha256>::new_from_slice(&self.secret).expect("any key length");
        mac.update(format!("{method}\n{name}\n{expires}").as_bytes());
        hex::encode(mac.finalize().into_bytes())
    }

    fn url(&self, method: &str, name: &str) -> String {
        let expires = chrono::Utc::now().timestamp() + URL_TTL.as_secs() as i64;
        format!(
            "{}/files/{name}?expires={expires}&signature={}",
            self.base_url,
            self.signature(method, name, expires)
        )
    }

    /// Whether `signature` is this folder's for `method name expires`, unexpired.
    fn verify(&self, method: &str, name: &str, q: &Signed) -> bool {
        let expected = self.signature(method, name, q.expires);
        q.expires >= chrono::Utc::now().timestamp()
            && expected.len() == q.signature.len()
            && expected
                .bytes()
                .zip(q.signature.bytes())
                .fold(0u8, |acc, (a, b)| acc | (a ^ b))
                == 0
    }
}

/// Files are kept as long as on S3 (its lifecycle rule): a week.
const KEPT: std::time::Duration = std::time::Duration::from_secs(7 * 86_400);

/// Removes the files older than [`KEPT`] (they may hold people's data, which
/// an erasure does not reach into).
fn remove_expired(root: &std::path::Path) {
    let Ok(entries) = std::fs::read_dir(root) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let old = entry
            .metadata()
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.elapsed().ok())
            .is_some_and(|age| age > KEPT);
        if old && name.to_str().is_some_and(|n| n != ".secret") {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

#[async_trait]
impl Files for LocalFiles {
    async fn upload_url(&self, name: &str) -> Result<String, FilesError> {
        self.path(name)?;
        Ok(self.url("PUT", name))
    }

    async fn download_url(&self, name: &str, _filename: &str) -> Result<String, FilesError> {
        self.path(name)?;
        Ok(self.url("GET", name))
    }

    async fn size(&self, name: &str) -> Result<Option<u64>, FilesError> {
        match tokio::fs::metadata(self.path(name)?).await {
            Ok(m) => Ok(Some(m.len())),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(FilesError(e.to_string())),
        }
    }

    async fn read(&self, name: &str, from: u64, len: usize) -> Result<Vec<u8>, FilesError> {
        let io = |e: std::io::Error| FilesError(e.to_string());
        let mut file = tokio::fs::File::open(self.path(name)?).await.map_err(io)?;
        file.seek(std::io::SeekFrom::Start(from))
            .await
            .map_err(io)?;
        let mut bytes = Vec::with_capacity(len);
        file.take(len as u64)
            .read_to_end(&mut bytes)
            .await
            .map_err(io)?;
        Ok(bytes)
    }

    async fn create(&self, name: &str) -> Result<Box<dyn FileWriter>, FilesError> {
        let path = self.path(name)?;
        let partial = self.root.join(format!(".{name}.part"));
        let file = tokio::fs::File::create(&partial)
            .await
            .map_err(|e| FilesError(e.to_string()))?;
        Ok(Box::new(LocalWriter {
            file: tokio::io::BufWriter::with_capacity(256 * 1024, file),
            partial,
            path,
            size: 0,
        }))
    }

    async fn remove(&self, name: &str) -> Result<(), FilesError> {
        match tokio::fs::remove_file(self.path(name)?).await {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(FilesError(e.to_string())),
            _ => Ok(()),
        }
    }

    fn local(&self) -> Option<&LocalFiles> {
        Some(self)
    }
}

/// Written beside the file and renamed over it once finished: a reader never
/// sees half of it.
struct LocalWriter {
    file: tokio::io::BufWriter<tokio::fs::File>,
    partial: PathBuf,
    path: PathBuf,
    size: u64,
}

#[async_trait]
impl FileWriter for LocalWriter {
    async fn write(&mut self, bytes: &[u8]) -> Result<(), FilesError> {
        self.size += bytes.len() as u64;
        self.file
            .write_all(bytes)
            .await
            .map_err(|e| FilesError(e.to_string()))
    }

    async fn finish(mut self: Box<Self>) -> Result<u64, FilesError> {
        let io = |e: std::io::Error| FilesError(e.to_string());
        self.file.flush().await.map_err(io)?;
        self.file.get_ref().sync_all().await.map_err(io)?;
        tokio::fs::rename(&self.partial, &self.path)
            .await
            .map_err(io)?;
        Ok(self.size)
    }
}

#[derive(Deserialize)]
struct Signed {
    expires: i64,
    signature: String,
}

/// `PUT` and `GET /files/{name}` of presigned local URLs.
pub fn router(files: std::sync::Arc<dyn Files>) -> Router {
    Router::new()
        .route("/files/{name}", axum::routing::put(put).get(get))
        .with_state(files)
}

fn refused() -> Response {
    ApiError::forbidden("this file URL is not valid or has expired").into_response()
}

async fn put(
    State(files): State<std::sync::Arc<dyn Files>>,
    Path(name): Path<String>,
    q: Result<Query<Signed>, QueryRejection>,
    request: Request,
) -> Response {
    // A URL without its expiry or signature is refused as a changed one is.
    let (Some(local), Ok(Query(q))) = (files.local(), q) else {
        return refused();
    };
    if !valid_name(&name) || !local.verify("PUT", &name, &q) {
        return refused();
    }
    match receive(&*files, &name, request.into_body()).await {
        Ok(()) => StatusCode::OK.into_response(),
        Err(e) => e.into_response(),
    }
}

async fn receive(files: &dyn Files, name: &str, body: Body) -> Result<(), ApiError> {
    use http_body_util::BodyExt;
    let mut writer = files.create(name).await?;
    let mut body = body;
    let mut size = 0u64;
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|e| ApiError::bad_request(format!("the upload broke: {e}")))?;
        if let Some(data) = frame.data_ref() {
            size += data.len() as u64;
            if size > MAX_IMPORT_BYTES {
                return Err(ApiError::new(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    format!("a file is at most {} MB", MAX_IMPORT_BYTES >> 20),
                ));
            }
            writer.write(data).await?;
        }
    }
    writer.finish().await?;
    Ok(())
}

async fn get(
    State(files): State<std::sync::Arc<dyn Files>>,
    Path(name): Path<String>,
    q: Result<Query<Signed>, QueryRejection>,
) -> Response {
    let (Some(local), Ok(Query(q))) = (files.local(), q) else {
        return refused();
    };
    if !valid_name(&name) || !local.verify("GET", &name, &q) {
        return refused();
    }
    let Ok(file) = tokio::fs::File::open(local.root.join(&name)).await else {
        return ApiError::not_found("file").into_response();
    };
    let kind = if name.ends_with(".csv") {
        "text/csv; charset=utf-8"
    } else {
        "application/x-ndjson"
    };
    let stream = tokio_util_stream(file);
    (
        [
            (header::CONTENT_TYPE, kind.to_owned()),
            (
                header::CONTENT_DISPOSITION,
                format!("attachment; filename=\"{name}\""),
            ),
        ],
        Body::from_stream(stream),
    )
        .into_response()
}

/// The file as a stream of 64 KB chunks (constant memory for any size).
fn tokio_util_stream(
    file: tokio::fs::File,
) -> impl futures_util::Stream<Item = std::io::Result<Vec<u8>>> {
    futures_util::stream::unfold(file, |mut file| async move {
        let mut chunk = vec![0u8; 64 * 1024];
        match file.read(&mut chunk).await {
            Ok(0) => None,
            Ok(n) => {
                chunk.truncate(n);
                Some((Ok(chunk), file))
            }
            Err(e) => Some((Err(e), file)),
        }
    })
}
