//! A small HTTP/1.1 client for the commands that talk to a running API
//! (`crm import`, `crm export`): one connection per request, TLS on the
//! stack the SDK links already (`shared::outbound::post::tls_config`).
//! File bodies stream from disk and to disk: memory stays flat.

use std::path::Path;

use http_body_util::{BodyExt, Full, StreamBody, combinators::BoxBody};
use hyper::body::{Bytes, Frame, Incoming};
use hyper_util::rt::TokioIo;
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

type Body = BoxBody<Bytes, std::io::Error>;

/// The API at `base` (`http://127.0.0.1:3000`), with a bearer token.
pub struct Api {
    pub base: String,
    pub token: String,
}

impl Api {
    /// A request to the API with the token: the status, the headers and the body.
    async fn call(
        &self,
        method: http::Method,
        path: &str,
        body: Option<&Value>,
    ) -> Result<(u16, http::HeaderMap, Bytes), String> {
        let url = format!("{}{path}", self.base.trim_end_matches('/'));
        let mut headers = vec![("authorization".to_owned(), format!("Bearer {}", self.token))];
        let body = match body {
            Some(json) => {
                headers.push(("content-type".to_owned(), "application/json".to_owned()));
                full(json.to_string().into_bytes())
            }
            None => full(Vec::new()),
        };
        let (parts, body) = send(method, &url, &headers, body).await?.into_parts();
        let bytes = body
            .collect()
            .await
            .map_err(|e| format!("the answer broke off: {e}"))?
            .to_bytes();
        if parts.status.as_u16() >= 400 {
            let json: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
            let message = json["message"].as_str().map_or_else(
                || String::from_utf8_lossy(&bytes).into_owned(),
                str::to_owned,
            );
            return Err(format!("{}: {message}", parts.status.as_u16()));
        }
        Ok((parts.status.as_u16(), parts.headers, bytes))
    }

    /// A JSON request; a 4xx or 5xx is the error's message.
    pub async fn json(
        &self,
        method: http::Method,
        path: &str,
        body: Option<&Value>,
    ) -> Result<Value, String> {
        let (_, _, bytes) = self.call(method, path, body).await?;
        serde_json::from_slice(&bytes).map_err(|e| format!("not JSON: {e}"))
    }

    /// A GET of text (CSV), and the `after` of its `Link: rel="next"`.
    pub async fn text(&self, path: &str) -> Result<(String, Option<u64>), String> {
        let (_, headers, bytes) = self.call(http::Method::GET, path, None).await?;
        let next = headers
            .get(http::header::LINK)
            .and_then(|v| v.to_str().ok())
            .and_then(|link| link.split("after=").nth(1))
            .and_then(|rest| rest.split('>').next())
            .and_then(|n| n.parse().ok());
        Ok((String::from_utf8_lossy(&bytes).into_owned(), next))
    }
}

fn full(bytes: Vec<u8>) -> Body {
    Full::new(Bytes::from(bytes))
        .map_err(|never| match never {})
        .boxed()
}

/// PUTs the file at `path` to `url` (a presigned or signed upload URL),
/// calling `sent` with each chunk's size.
pub async fn upload(
    url: &str,
    path: &Path,
    sent: impl Fn(u64) + Send + Sync + 'static,
) -> Result<(), String> {
    let file = tokio::fs::File::open(path)
        .await
        .map_err(|e| format!("cannot open {}: {e}", path.display()))?;
    let size = file.metadata().await.map_err(|e| e.to_string())?.len();
    let sent = std::sync::Arc::new(sent);
    let chunks = futures_util::stream::unfold(file, move |mut file| {
        let sent = sent.clone();
        async move {
            let mut chunk = vec![0u8; 256 * 1024];
            match file.read(&mut chunk).await {
                Ok(0) => None,
                Ok(n) => {
                    chunk.truncate(n);
                    sent(n as u64);
                    Some((Ok(Frame::data(Bytes::from(chunk))), file))
                }
                Err(e) => Some((Err(e), file)),
            }
        }
    });
    // A presigned S3 PUT takes a length, not a chunked body.
    let headers = [("content-length".to_owned(), size.to_string())];
    let answer = send(
        http::Method::PUT,
        url,
        &headers,
        BodyExt::boxed(StreamBody::new(chunks)),
    )
    .await?;
    let status = answer.status().as_u16();
    if status >= 300 {
        let bytes = answer
            .into_body()
            .collect()
            .await
            .map(|b| b.to_bytes())
            .unwrap_or_default();
        return Err(format!(
            "the upload was refused ({status}): {}",
            String::from_utf8_lossy(&bytes)
        ));
    }
    Ok(())
}

/// GETs `url` into the file at `path`, calling `received` with each chunk's size.
pub async fn download(url: &str, path: &Path, received: impl Fn(u64)) -> Result<u64, String> {
    let answer = send(http::Method::GET, url, &[], full(Vec::new())).await?;
    let status = answer.status().as_u16();
    if status >= 300 {
        return Err(format!("the download was refused ({status})"));
    }
    let mut out = tokio::fs::File::create(path)
        .await
        .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    let mut body = answer.into_body();
    let mut size = 0;
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|e| format!("the download broke off: {e}"))?;
        if let Some(data) = frame.data_ref() {
            out.write_all(data).await.map_err(|e| e.to_string())?;
            size += data.len() as u64;
            received(data.len() as u64);
        }
    }
    out.flush().await.map_err(|e| e.to_string())?;
    Ok(size)
}

/// One request on its own connection.
async fn send(
    method: http::Method,
    url: &str,
    headers: &[(String, String)],
    body: Body,
) -> Result<http::Response<Incoming>, String> {
    let parsed = url::Url::parse(url).map_err(|e| format!("not a URL: {url}: {e}"))?;
    let host = parsed
        .host_str()
        .ok_or_else(|| format!("no host in {url}"))?
        .to_owned();
    let tls = parsed.scheme() == "https";
    let port = parsed
        .port_or_known_default()
        .unwrap_or(if tls { 443 } else { 80 });
    let tcp = tokio::net::TcpStream::connect((host.as_str(), port))
        .await
        .map_err(|e| format!("cannot connect to {host}:{port}: {e}"))?;
    let _ = tcp.set_nodelay(true);
    let authority = match parsed.port() {
        Some(port) => format!("{host}:{port}"),
        None => host.clone(),
    };
    let target = match parsed.query() {
        Some(query) => format!("{}?{query}", parsed.path()),
        None => parsed.path().to_owned(),
    };
    let mut request = http::Request::builder()
        .method(method)
        .uri(target)
        .header(http::header::HOST, authority)
        .header(http::header::USER_AGENT, "crm-cli/1");
    for (name, value) in headers {
        request = request.header(name.as_str(), value.as_str());
    }
    let request = request.body(body).map_err(|e| e.to_string())?;
    if tls {
        let name =
            rustls::pki_types::ServerName::try_from(host.clone()).map_err(|e| e.to_string())?;
        let stream = tokio_rustls::TlsConnector::from(shared::outbound::post::tls_config()?)
            .connect(name, tcp)
            .await
            .map_err(|e| format!("TLS with {host}: {e}"))?;
        exchange(stream, request).await
    } else {
        exchange(tcp, request).await
    }
}

async fn exchange<S>(
    stream: S,
    request: http::Request<Body>,
) -> Result<http::Response<Incoming>, String>
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .map_err(|e| format!("HTTP: {e}"))?;
    tokio::spawn(async move {
        let _ = connection.await;
    });
    sender
        .send_request(request)
        .await
        .map_err(|e| format!("no answer: {e}"))
}
