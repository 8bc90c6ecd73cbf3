//! Files of bulk imports and exports: uploaded by a client, read by the job
//! in blocks from a byte offset (so a job resumes where it stopped), written
//! by an export in parts at constant memory, downloaded by the client.
//!
//! On AWS the files are objects of one S3 bucket (`CRM_FILES_BUCKET`,
//! feature `s3`): clients PUT and GET them with presigned URLs and the
//! functions never carry their bytes. Locally (`crm serve`, tests) they are
//! files of a folder, behind URLs of the server signed the same way
//! ([`local`]). Either way a URL is the only credential: it names one file,
//! one method, and expires.

pub mod local;
#[cfg(feature = "s3")]
pub mod s3;

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;

use crate::error::ApiError;

/// The largest file an import takes (S3 takes 5 GB in one PUT; a job of more
/// than this is better split, and a million contacts is ~100 MB).
pub const MAX_IMPORT_BYTES: u64 = 512 * 1024 * 1024;

/// How long an upload or download URL is good for.
pub const URL_TTL: Duration = Duration::from_secs(3600);

/// Why a file operation failed: the store of files is down or refused.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct FilesError(pub String);

impl From<FilesError> for ApiError {
    fn from(e: FilesError) -> Self {
        tracing::warn!(cause = %e, "file store failed");
        ApiError::unavailable("the file store is unavailable, retry later")
    }
}

#[async_trait]
pub trait Files: Send + Sync + 'static {
    /// A URL to `PUT` the bytes of `name` to, good for [`URL_TTL`].
    async fn upload_url(&self, name: &str) -> Result<String, FilesError>;
    /// A URL to `GET` `name` from, saved as `filename`, good for [`URL_TTL`].
    async fn download_url(&self, name: &str, filename: &str) -> Result<String, FilesError>;
    /// The size of `name`, `None` when nothing was uploaded there.
    async fn size(&self, name: &str) -> Result<Option<u64>, FilesError>;
    /// Up to `len` bytes of `name` from byte `from` (fewer at its end).
    async fn read(&self, name: &str, from: u64, len: usize) -> Result<Vec<u8>, FilesError>;
    /// A new file `name`, written in order and visible once finished.
    async fn create(&self, name: &str) -> Result<Box<dyn FileWriter>, FilesError>;
    /// Removes `name` (nothing when absent).
    async fn remove(&self, name: &str) -> Result<(), FilesError>;
    /// The folder behind local URLs, when the files are local.
    fn local(&self) -> Option<&local::LocalFiles> {
        None
    }
}

/// A file being written: bytes in order, then [`FileWriter::finish`].
#[async_trait]
pub trait FileWriter: Send {
    async fn write(&mut self, bytes: &[u8]) -> Result<(), FilesError>;
    /// Makes the file visible; returns its size.
    async fn finish(self: Box<Self>) -> Result<u64, FilesError>;
}

pub type SharedFiles = Arc<dyn Files>;

/// The files, or a 503 where none are configured.
pub fn configured(files: Option<&dyn Files>) -> Result<&dyn Files, ApiError> {
    files.ok_or_else(|| {
        ApiError::unavailable("bulk files are not configured here (CRM_FILES_BUCKET)")
    })
}

/// Whether `name` is a file name this module makes: letters, digits, `.`,
/// `-` and `_`, not starting with a dot (no path, no hidden file).
pub fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 200
        && !name.starts_with('.')
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'_'))
}
