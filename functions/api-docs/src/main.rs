//! The api-docs Lambda: the OpenAPI document and the reference page.

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    let app = shared::lambda::app(api_docs::group()).await;
    lambda_http::run(app).await
}
