//! Configuration from the environment, read once per process.
//!
//! | Variable                 | Meaning                                                  |
//! |--------------------------|----------------------------------------------------------|
//! | `CRM_TABLE`              | DynamoDB table name (default `crm`)                       |
//! | `CRM_DYNAMODB_ENDPOINT`  | endpoint override, e.g. DynamoDB Local `http://127.0.0.1:8000` |
//! | `AWS_REGION`             | region (set by Lambda; default `us-east-1` with an endpoint override) |

use aws_config::{BehaviorVersion, Region, SdkConfig};

use crate::store::dynamo::DynamoStore;

#[derive(Debug, Clone)]
pub struct Config {
    pub table: String,
    pub dynamodb_endpoint: Option<String>,
}

impl Config {
    pub fn from_env() -> Self {
        let var = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
        Self {
            table: var("CRM_TABLE").unwrap_or_else(|| "crm".to_owned()),
            dynamodb_endpoint: var("CRM_DYNAMODB_ENDPOINT"),
        }
    }

    /// One `SdkConfig` per process: credentials and region from the usual chain.
    pub async fn sdk_config(&self) -> SdkConfig {
        let mut loader = aws_config::defaults(BehaviorVersion::latest());
        if let Some(endpoint) = &self.dynamodb_endpoint {
            loader = loader.endpoint_url(endpoint);
            // DynamoDB Local accepts any credentials and region, but the SDK needs some.
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
        let client = aws_sdk_dynamodb::Client::new(&self.sdk_config().await);
        DynamoStore::new(client, &self.table)
    }
}
