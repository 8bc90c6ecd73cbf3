//! The floor every function is measured against: a bare `lambda_http` function
//! that builds aws-config and one DynamoDB client at init and answers each call
//! with one GetItem (`BENCH_PK`/`BENCH_SK` of `CRM_TABLE`) as JSON. No router, no
//! token check, no logging set-up: what any Rust function reading DynamoDB pays.

use aws_config::BehaviorVersion;
use aws_sdk_dynamodb::types::AttributeValue;
use lambda_http::{Body, Error, Request, Response, service_fn};

#[tokio::main]
async fn main() -> Result<(), Error> {
    let env = |name: &str| std::env::var(name).map_err(|_| format!("{name} is not set"));
    let sdk = aws_config::defaults(BehaviorVersion::latest()).load().await;
    let mut config = aws_sdk_dynamodb::config::Builder::from(&sdk);
    if let Ok(endpoint) = env("CRM_DYNAMODB_ENDPOINT") {
        config = config.endpoint_url(endpoint);
    }
    let client = aws_sdk_dynamodb::Client::from_conf(config.build());
    let (table, pk, sk) = (env("CRM_TABLE")?, env("BENCH_PK")?, env("BENCH_SK")?);
    lambda_http::run(service_fn(|_: Request| async {
        let item = client
            .get_item()
            .table_name(&table)
            .key("pk", AttributeValue::S(pk.clone()))
            .key("sk", AttributeValue::S(sk.clone()))
            .send()
            .await?
            .item
            .ok_or("no such item")?;
        let json: serde_json::Value = serde_dynamo::from_item(item)?;
        Ok::<_, Error>(
            Response::builder()
                .header("content-type", "application/json")
                .body(Body::from(json.to_string()))?,
        )
    }))
    .await
}
