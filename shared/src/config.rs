//! Configuration from the environment, read once per process.
//!
//! | Variable                 | Meaning                                                  |
//! |--------------------------|----------------------------------------------------------|
//! | `CRM_TABLE`              | DynamoDB table name (default `crm`)                       |
//! | `CRM_DYNAMODB_ENDPOINT`  | endpoint override, e.g. DynamoDB Local `http://127.0.0.1:8000` |
//! | `CRM_JOB_QUEUE_URL`      | the SQS queue of background jobs (`CRM_IMPORT_QUEUE_URL`, its first name, is read too) |
//! | `CRM_WEBHOOK_QUEUE_URL`  | the SQS queue of webhook deliveries (the webhooks, dispatcher and sender functions) |
//! | `CRM_WEBHOOK_*`          | how deliveries are made: `outbound::Settings`             |
//! | `CRM_SQS_ENDPOINT`       | SQS endpoint override, e.g. a local moto server           |
//! | `CRM_FILES_BUCKET`       | the S3 bucket of bulk import and export files (the bulk and job-worker functions) |
//! | `CRM_S3_ENDPOINT`        | S3 endpoint override, e.g. a local moto server (path-style addressing) |
//! | `CRM_CHECKOUT_BASE_URL`  | where checkout links point (default `https://checkout.example.com/c`) |
//! | `CRM_DYNAMODB_ATTEMPT_TIMEOUT_MS` | how long one DynamoDB call may take before it is sent again (default 2000) |
//! | `CRM_SHARDED_FROM`       | an RFC 3339 time from which the time-ordered families (audit entries) are spread over shards; unset: one partition each, as before. Once set, never moved nor unset (`keys::shards`) |
//! | `AWS_REGION`             | region (set by Lambda; default `us-east-1` with an endpoint override) |
//! | `CRM_TLS_ROOTS`          | `bundled` (Mozilla's roots compiled in; the default on Lambda) or `platform` (the system store; the default elsewhere, and chosen by `SSL_CERT_FILE`/`SSL_CERT_DIR`), see `tls.rs` |

use std::time::Duration;

use aws_config::{BehaviorVersion, Region, SdkConfig};
use aws_sdk_dynamodb::config::timeout::TimeoutConfig;

use crate::store::dynamo::DynamoStore;

#[derive(Debug, Clone, Default)]
pub struct Config {
    pub table: String,
    pub dynamodb_endpoint: Option<String>,
    pub job_queue_url: Option<String>,
    pub webhook_queue_url: Option<String>,
    pub sqs_endpoint: Option<String>,
    pub files_bucket: Option<String>,
    pub s3_endpoint: Option<String>,
    /// The certificates the SDK's HTTPS client trusts (`tls.rs`).
    pub tls_roots: crate::tls::TrustRoots,
    /// How long one DynamoDB call may take; `None`: [`ATTEMPT_TIMEOUT`].
    pub attempt_timeout: Option<Duration>,
}

/// One DynamoDB call past this is given up and sent again (a read by the
/// SDK, a write by the store, alike: `store::dynamo::attempts`). DynamoDB
/// answers in milliseconds; an answer this late is an answer lost.
pub const ATTEMPT_TIMEOUT: Duration = Duration::from_secs(2);

impl Config {
    pub fn from_env() -> Self {
        let var = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
        // Read now, so that a value that is no time stops the process at its
        // start rather than at its first key.
        crate::keys::sharded_from();
        Self {
            table: var("CRM_TABLE").unwrap_or_else(|| "crm".to_owned()),
            dynamodb_endpoint: var("CRM_DYNAMODB_ENDPOINT"),
            job_queue_url: var("CRM_JOB_QUEUE_URL").or_else(|| var("CRM_IMPORT_QUEUE_URL")),
            webhook_queue_url: var("CRM_WEBHOOK_QUEUE_URL"),
            sqs_endpoint: var("CRM_SQS_ENDPOINT"),
            files_bucket: var("CRM_FILES_BUCKET"),
            s3_endpoint: var("CRM_S3_ENDPOINT"),
            tls_roots: crate::tls::TrustRoots::from_env(),
            attempt_timeout: var("CRM_DYNAMODB_ATTEMPT_TIMEOUT_MS")
                .and_then(|ms| ms.parse().ok())
                .map(Duration::from_millis),
        }
    }

    /// One `SdkConfig` per process: credentials and region from the usual chain.
    /// Endpoint overrides apply per client (DynamoDB Local and a local SQS differ).
    pub async fn sdk_config(&self) -> SdkConfig {
        let mut loader = aws_config::defaults(BehaviorVersion::latest());
        if let Some(client) = self.tls_roots.http_client() {
            loader = loader.http_client(client);
        }
        if self.dynamodb_endpoint.is_some()
            || self.sqs_endpoint.is_some()
            || self.s3_endpoint.is_some()
        {
            // Local stand-ins accept any credentials and region, but the SDK needs some.
            if std::env::var("AWS_REGION").is_err() && std::env::var("AWS_DEFAULT_REGION").is_err()
            {
                loader = loader.region(Region::new("us-east-1"));
            }
            if std::env::var("AWS_ACCESS_KEY_ID").is_err() {
                loader = loader.credentials_provider(aws_sdk_dynamodb::config::Credentials::new(
                    "local",
                    "local",
                    None,
                    None,
                    "crm-local",
                ));
            }
        }
        loader.load().await
    }

    pub async fn dynamo_store(&self) -> DynamoStore {
        self.dynamo_store_with(&self.sdk_config().await)
    }

    pub fn dynamo_store_with(&self, sdk: &SdkConfig) -> DynamoStore {
        // The connect timeout and the rest stay as the SDK configures them.
        let timeouts = sdk
            .timeout_config()
            .cloned()
            .unwrap_or_else(|| TimeoutConfig::builder().build())
            .to_builder()
            .operation_attempt_timeout(self.attempt_timeout.unwrap_or(ATTEMPT_TIMEOUT))
            .build();
        let mut builder = aws_sdk_dynamodb::config::Builder::from(sdk).timeout_config(timeouts);
        if let Some(endpoint) = &self.dynamodb_endpoint {
            builder = builder.endpoint_url(endpoint);
        }
        DynamoStore::new(
            aws_sdk_dynamodb::Client::from_conf(builder.build()),
            &self.table,
        )
    }

    /// The SQS job queue, when `CRM_JOB_QUEUE_URL` names one.
    #[cfg(feature = "sqs")]
    pub fn job_queue_with(&self, sdk: &SdkConfig) -> Option<crate::queue::SqsQueue> {
        let url = self.job_queue_url.as_ref()?;
        Some(crate::queue::SqsQueue::new(
            sdk,
            self.sqs_endpoint.as_deref(),
            url,
        ))
    }

    /// The S3 bucket of bulk files, when `CRM_FILES_BUCKET` names one.
    #[cfg(feature = "s3")]
    pub fn files_with(&self, sdk: &SdkConfig) -> Option<crate::files::s3::S3Files> {
        let bucket = self.files_bucket.as_ref()?;
        Some(crate::files::s3::S3Files::new(
            sdk,
            self.s3_endpoint.as_deref(),
            bucket,
        ))
    }

    #[cfg(feature = "sqs")]
    pub fn webhook_queue_with(&self, sdk: &SdkConfig) -> Option<crate::queue::SqsQueue> {
        let url = self.webhook_queue_url.as_ref()?;
        Some(crate::queue::SqsQueue::new(
            sdk,
            self.sqs_endpoint.as_deref(),
            url,
        ))
    }
}

/// The address checkout links start with: `CRM_CHECKOUT_BASE_URL`, read once.
pub fn checkout_base_url() -> &'static str {
    static URL: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    URL.get_or_init(|| {
        std::env::var("CRM_CHECKOUT_BASE_URL")
            .ok()
            .filter(|v| !v.is_empty())
            .map(|v| v.trim_end_matches('/').to_owned())
            .unwrap_or_else(|| "https://checkout.example.com/c".to_owned())
    })
}
