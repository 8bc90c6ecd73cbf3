//! The bulk Lambda: the group's Router on DynamoDB, behind API Gateway.

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), lambda_http::Error> {
    let app = shared::lambda::app(bulk::group()).await;
    lambda_http::run(app).await
}
