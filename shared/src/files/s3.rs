//! Files as objects of one S3 bucket: presigned URLs for the client's PUT and
//! GET, ranged GETs for the import's blocks, multipart uploads of 8 MB parts
//! for an export (constant memory, whatever its size).

use async_trait::async_trait;
use aws_sdk_s3::Client;
use aws_sdk_s3::presigning::PresigningConfig;
use aws_sdk_s3::primitives::ByteStream;
use aws_sdk_s3::types::{CompletedMultipartUpload, CompletedPart};

use super::{FileWriter, Files, FilesError, URL_TTL, valid_name};

/// An export's part: S3 takes parts of 5 MB and more (but the last).
const PART_BYTES: usize = 8 * 1024 * 1024;

pub struct S3Files {
    client: Client,
    bucket: String,
}

fn failed(e: impl std::fmt::Display) -> FilesError {
    FilesError(format!("S3: {e}"))
}

impl S3Files {
    /// The bucket `bucket`; `endpoint` a local stand-in (moto), addressed by path.
    pub fn new(sdk: &aws_config::SdkConfig, endpoint: Option<&str>, bucket: &str) -> Self {
        let mut builder = aws_sdk_s3::config::Builder::from(sdk);
        if let Some(endpoint) = endpoint {
            builder = builder.endpoint_url(endpoint).force_path_style(true);
        }
        Self {
            client: Client::from_conf(builder.build()),
            bucket: bucket.to_owned(),
        }
    }

    pub fn client(&self) -> &Client {
        &self.client
    }

    fn key(name: &str) -> Result<String, FilesError> {
        if !valid_name(name) {
            return Err(FilesError(format!("not a file name: {name:?}")));
        }
        Ok(format!("bulk/{name}"))
    }

    fn presigning() -> Result<PresigningConfig, FilesError> {
        PresigningConfig::expires_in(URL_TTL).map_err(failed)
    }
}

#[async_trait]
impl Files for S3Files {
    async fn upload_url(&self, name: &str) -> Result<String, FilesError> {
        let request = self
            .client
            .put_object()
            .bucket(&self.bucket)
            .key(Self::key(name)?)
            .presigned(Self::presigning()?)
            .await
            .map_err(failed)?;
        Ok(request.uri().to_owned())
    }

    async fn download_url(&self, name: &str, filename: &str) -> Result<String, FilesError> {
        let request = self
            .client
            .get_object()
            .bucket(&self.bucket)
            .key(Self::key(name)?)
            .response_content_disposition(format!("attachment; filename=\"{filename}\""))
            .presigned(Self::presigning()?)
            .await
            .map_err(failed)?;
        Ok(request.uri().to_owned())
    }

    async fn size(&self, name: &str) -> Result<Option<u64>, FilesError> {
        match self
            .client
            .head_object()
            .bucket(&self.bucket)
            .key(Self::key(name)?)
            .send()
            .await
        {
            Ok(head) => Ok(Some(head.content_length().unwrap_or(0).max(0) as u64)),
            Err(e) if e.as_service_error().is_some_and(|e| e.is_not_found()) => Ok(None),
            Err(e) => Err(failed(aws_sdk_s3::error::DisplayErrorContext(e))),
        }
    }

    async fn read(&self, name: &str, from: u64, len: usize) -> Result<Vec<u8>, FilesError> {
        if len == 0 {
            return Ok(Vec::new());
        }
        let answer = self
            .client
            .get_object()
            .bucket(&self.bucket)
            .key(Self::key(name)?)
            .range(format!("bytes={from}-{}", from + len as u64 - 1))
            .send()
            .await;
        match answer {
            Ok(object) => Ok(object
                .body
                .collect()
                .await
                .map_err(failed)?
                .into_bytes()
                .to_vec()),
            // A range past the end (416): nothing more to read.
            Err(e) if e.raw_response().is_some_and(|r| r.status().as_u16() == 416) => {
                Ok(Vec::new())
            }
            Err(e) => Err(failed(aws_sdk_s3::error::DisplayErrorContext(e))),
        }
    }

    async fn create(&self, name: &str) -> Result<Box<dyn FileWriter>, FilesError> {
        Ok(Box::new(S3Writer {
            client: self.client.clone(),
            bucket: self.bucket.clone(),
            key: Self::key(name)?,
            buffer: Vec::with_capacity(PART_BYTES),
            upload_id: None,
            parts: Vec::new(),
            size: 0,
        }))
    }

    async fn remove(&self, name: &str) -> Result<(), FilesError> {
        self.client
            .delete_object()
            .bucket(&self.bucket)
            .key(Self::key(name)?)
            .send()
            .await
            .map_err(|e| failed(aws_sdk_s3::error::DisplayErrorContext(e)))?;
        Ok(())
    }
}

/// One PUT for a file under a part; a multipart upload past it.
struct S3Writer {
    client: Client,
    bucket: String,
    key: String,
    buffer: Vec<u8>,
    upload_id: Option<String>,
    parts: Vec<CompletedPart>,
    size: u64,
}

impl S3Writer {
    async fn send_part(&mut self) -> Result<(), FilesError> {
        let upload_id = match &self.upload_id {
            Some(id) => id.clone(),
            None => {
                let started = self
                    .client
                    .create_multipart_upload()
                    .bucket(&self.bucket)
                    .key(&self.key)
                    .send()
                    .await
                    .map_err(|e| failed(aws_sdk_s3::error::DisplayErrorContext(e)))?;
                let id = started
                    .upload_id()
                    .ok_or_else(|| failed("no upload id"))?
                    .to_owned();
                self.upload_id = Some(id.clone());
                id
            }
        };
        let number = self.parts.len() as i32 + 1;
        let body = std::mem::replace(&mut self.buffer, Vec::with_capacity(PART_BYTES));
        let sent = self
            .client
            .upload_part()
            .bucket(&self.bucket)
            .key(&self.key)
            .upload_id(upload_id)
            .part_number(number)
            .body(ByteStream::from(body))
            .send()
            .await
            .map_err(|e| failed(aws_sdk_s3::error::DisplayErrorContext(e)))?;
        self.parts.push(
            CompletedPart::builder()
                .set_e_tag(sent.e_tag().map(str::to_owned))
                .part_number(number)
                .build(),
        );
        Ok(())
    }
}

#[async_trait]
impl FileWriter for S3Writer {
    async fn write(&mut self, bytes: &[u8]) -> Result<(), FilesError> {
        self.size += bytes.len() as u64;
        self.buffer.extend_from_slice(bytes);
        if self.buffer.len() >= PART_BYTES {
            self.send_part().await?;
        }
        Ok(())
    }

    async fn finish(mut self: Box<Self>) -> Result<u64, FilesError> {
        if self.upload_id.is_none() {
            let body = std::mem::take(&mut self.buffer);
            self.client
                .put_object()
                .bucket(&self.bucket)
                .key(&self.key)
                .body(ByteStream::from(body))
                .send()
                .await
                .map_err(|e| failed(aws_sdk_s3::error::DisplayErrorContext(e)))?;
            return Ok(self.size);
        }
        if !self.buffer.is_empty() {
            self.send_part().await?;
        }
        let parts = std::mem::take(&mut self.parts);
        self.client
            .complete_multipart_upload()
            .bucket(&self.bucket)
            .key(&self.key)
            .upload_id(self.upload_id.clone().unwrap_or_default())
            .multipart_upload(
                CompletedMultipartUpload::builder()
                    .set_parts(Some(parts))
                    .build(),
            )
            .send()
            .await
            .map_err(|e| failed(aws_sdk_s3::error::DisplayErrorContext(e)))?;
        Ok(self.size)
    }
}
