//! The api-docs Lambda: the OpenAPI document and the reference page. It reads
//! no table, so it starts without the AWS SDK (and its zip holds none).

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), lambda_http::Error> {
    let app = shared::lambda::app_without_table(api_docs::group());
    lambda_http::run(app).await
}
