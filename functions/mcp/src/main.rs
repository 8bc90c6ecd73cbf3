//! The MCP Lambda: `POST /mcp` on DynamoDB, its tools relayed through the
//! routes of the groups they use (linked into this binary).

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), lambda_http::Error> {
    let app = shared::lambda::relaying_app(mcp::group(), mcp::tool_groups).await;
    lambda_http::run(app).await
}
