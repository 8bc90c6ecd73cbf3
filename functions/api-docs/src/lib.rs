//! The api-docs group: `GET /openapi.json` (the OpenAPI 3.1 document of every
//! route, generated from the groups by `crm openapi` into docs/openapi.json and
//! kept in step by tests/openapi.rs) and `GET /docs`, a Swagger UI page whose
//! files are in the binary. No token: the contract is public.

use std::sync::LazyLock;

use aide::generate::GenContext;
use aide::openapi::{MediaType, Operation, Response as DocResponse, StatusCode as DocStatus};
use aide::operation::OperationOutput;
use axum::Router;
use axum::body::Body;
use axum::http::{Request, StatusCode, header};
use axum::response::{Html, IntoResponse, Response};
use shared::ApiError;
use shared::auth::Need;
use shared::http::{Group, InPath};
use tower::ServiceExt;

/// The one success response of a type, for the document.
macro_rules! described {
    ($type:ty, $description:literal, [$($media:literal),+], $schema:tt) => {
        impl OperationOutput for $type {
            type Inner = ();
            fn inferred_responses(
                _: &mut GenContext,
                _: &mut Operation,
            ) -> Vec<(Option<DocStatus>, DocResponse)> {
                vec![ok($description, &[$($media),+], serde_json::json!($schema))]
            }
        }
    };
}

/// The document, as generated from the groups (see the module).
pub const DOCUMENT: &str = include_str!("../../../docs/openapi.json");

pub fn group() -> Group {
    Group::new("api-docs")
        .deployed("/openapi.json, /docs", |f| f)
        .get("/openapi.json", document)
        .summary("The OpenAPI 3.1 document of this API")
        .extension()
        .needs(Need::Public)
        .get("/docs", page)
        .summary("The API reference page (Swagger UI)")
        .extension()
        .needs(Need::Public)
        .get("/docs/{asset}", asset)
        .summary("A file of the reference page")
        .extension()
        .needs(Need::Public)
}

async fn document() -> JsonText {
    JsonText(DOCUMENT)
}

async fn page() -> Html<&'static str> {
    Html(PAGE)
}

const PAGE: &str = r##"<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <title>CRM API reference</title>
  <link rel="stylesheet" href="/docs/swagger-ui.css">
</head>
<body>
  <div id="reference"></div>
  <script src="/docs/swagger-ui-bundle.js"></script>
  <script>
    window.ui = SwaggerUIBundle({
      url: "/openapi.json",
      dom_id: "#reference",
      deepLinking: true,
      docExpansion: "list",
      tryItOutEnabled: false,
      persistAuthorization: true,
    });
  </script>
</body>
</html>
"##;

/// Swagger UI's files, served by the crate that embeds them.
static FILES: LazyLock<Router> = LazyLock::new(|| {
    swagger_ui_dist::generate_routes(swagger_ui_dist::ApiDefinition {
        uri_prefix: "/docs",
        api_definition: swagger_ui_dist::OpenApiSource::Uri("/openapi.json"),
        title: Some("CRM API reference"),
    })
});

shared::text_path_param!(
    /// `{asset}`: a file of the page.
    AssetName,
    "asset"
);

async fn asset(InPath(name): InPath<AssetName>) -> Result<Asset, ApiError> {
    let not_found = || ApiError::not_found("file");
    if !ASSETS.contains(&name.as_str()) {
        return Err(not_found());
    }
    let request = Request::get(format!("/docs/{name}"))
        .body(Body::empty())
        .map_err(|_| not_found())?;
    let response = FILES
        .clone()
        .oneshot(request)
        .await
        .map_err(|_| not_found())?;
    if response.status() != StatusCode::OK {
        return Err(not_found());
    }
    Ok(Asset(response))
}

const ASSETS: &[&str] = &[
    "swagger-ui.css",
    "swagger-ui-bundle.js",
    "swagger-ui.css.map",
    "swagger-ui-bundle.js.map",
    "oauth2-redirect.html",
    "oauth2-redirect.js",
];

/// A JSON document already serialized.
struct JsonText(&'static str);

impl IntoResponse for JsonText {
    fn into_response(self) -> Response {
        ([(header::CONTENT_TYPE, "application/json")], self.0).into_response()
    }
}

described!(
    JsonText,
    "The OpenAPI document",
    ["application/json"],
    { "type": "object" }
);

/// A file of the page, as the embedding crate answers it.
struct Asset(Response);

impl IntoResponse for Asset {
    fn into_response(self) -> Response {
        self.0
    }
}

described!(
    Asset,
    "The file (JavaScript, CSS, a source map or HTML)",
    ["text/javascript", "text/css", "application/json", "text/html"],
    { "type": "string" }
);

fn ok(
    description: &str,
    media: &[&str],
    schema: serde_json::Value,
) -> (Option<DocStatus>, DocResponse) {
    let media_type: MediaType =
        serde_json::from_value(serde_json::json!({ "schema": schema })).expect("a media type");
    (
        Some(DocStatus::Code(200)),
        DocResponse {
            description: description.to_owned(),
            content: media
                .iter()
                .map(|m| ((*m).to_owned(), media_type.clone()))
                .collect(),
            ..Default::default()
        },
    )
}
