//! One POST to a checked address: a connection to that address (TLS with
//! the URL's host name), HTTP/1.1, no redirect followed, at most
//! [`MAX_ANSWER`] bytes of the answer read, everything within the timeout.

use std::net::SocketAddr;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncWrite};

use super::target::Target;

/// What is kept of an answer's body.
pub const MAX_ANSWER: usize = 4096;

/// An endpoint's answer.
#[derive(Debug, Clone, PartialEq)]
pub struct Answer {
    pub status: u16,
    /// `Retry-After`, in seconds or as a date.
    pub retry_after: Option<Duration>,
    /// The first [`MAX_ANSWER`] bytes of the body, as text.
    pub body: String,
    pub latency: Duration,
}

/// A POST that got no answer: the reason, and how long it took.
#[derive(Debug, Clone, PartialEq)]
pub struct Failure {
    pub error: String,
    pub latency: Duration,
}

/// POSTs `body` with `headers` to `target` at `addr`, within `timeout`.
pub async fn post(
    target: &Target,
    addr: SocketAddr,
    headers: &[(&str, String)],
    body: String,
    timeout: Duration,
) -> Result<Answer, Failure> {
    let started = Instant::now();
    let exchange = async {
        let tcp = tokio::net::TcpStream::connect(addr)
            .await
            .map_err(|e| format!("cannot connect to {addr}: {e}"))?;
        let _ = tcp.set_nodelay(true);
        if target.tls {
            let name = rustls::pki_types::ServerName::try_from(target.host.clone())
                .map_err(|e| format!("{} is not a TLS server name: {e}", target.host))?;
            let tls = tokio_rustls::TlsConnector::from(tls_config()?)
                .connect(name, tcp)
                .await
                .map_err(|e| format!("TLS with {}: {e}", target.host))?;
            exchange(tls, target, headers, body).await
        } else {
            exchange(tcp, target, headers, body).await
        }
    };
    let outcome = tokio::time::timeout(timeout, exchange).await;
    let latency = started.elapsed();
    match outcome {
        Ok(Ok((status, retry_after, body))) => Ok(Answer {
            status,
            retry_after,
            body,
            latency,
        }),
        Ok(Err(error)) => Err(Failure { error, latency }),
        Err(_) => Err(Failure {
            error: format!("no answer within {} s", timeout.as_secs_f64()),
            latency,
        }),
    }
}

async fn exchange<S>(
    stream: S,
    target: &Target,
    headers: &[(&str, String)],
    body: String,
) -> Result<(u16, Option<Duration>, String), String>
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .map_err(|e| format!("HTTP with {}: {e}", target.host))?;
    // The connection is driven beside the request and ends with it.
    let driver = tokio::spawn(async move {
        let _ = connection.await;
    });
    let host = match target.url.port() {
        Some(port) => format!("{}:{port}", target.url.host_str().unwrap_or(&target.host)),
        None => target.url.host_str().unwrap_or(&target.host).to_owned(),
    };
    let path = match target.url.query() {
        Some(query) => format!("{}?{query}", target.url.path()),
        None => target.url.path().to_owned(),
    };
    let mut request = http::Request::post(path)
        .header(http::header::HOST, host)
        .header(http::header::CONTENT_TYPE, "application/json")
        .header(http::header::USER_AGENT, "crm-webhooks/1")
        .header(http::header::CONNECTION, "close");
    for (name, value) in headers {
        request = request.header(*name, value.as_str());
    }
    let request = request
        .body(Full::new(Bytes::from(body)))
        .map_err(|e| format!("cannot build the request: {e}"))?;
    let result = async {
        let answer = sender
            .send_request(request)
            .await
            .map_err(|e| format!("no answer from {}: {e}", target.host))?;
        let status = answer.status().as_u16();
        let retry_after = answer
            .headers()
            .get(http::header::RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(retry_after);
        let mut kept = Vec::new();
        let mut body = answer.into_body();
        while kept.len() < MAX_ANSWER {
            match body.frame().await {
                Some(Ok(frame)) => {
                    if let Some(data) = frame.data_ref() {
                        kept.extend_from_slice(&data[..data.len().min(MAX_ANSWER - kept.len())]);
                    }
                }
                // An answer cut short still has its status.
                Some(Err(_)) | None => break,
            }
        }
        Ok((
            status,
            retry_after,
            String::from_utf8_lossy(&kept).into_owned(),
        ))
    }
    .await;
    driver.abort();
    result
}

/// `Retry-After: 120` or `Retry-After: Wed, 21 Oct 2026 07:28:00 GMT`.
fn retry_after(value: &str) -> Option<Duration> {
    if let Ok(seconds) = value.trim().parse::<u64>() {
        return Some(Duration::from_secs(seconds));
    }
    let at = chrono::DateTime::parse_from_rfc2822(value.trim()).ok()?;
    let wait = at.timestamp() - chrono::Utc::now().timestamp();
    Some(Duration::from_secs(wait.max(0) as u64))
}

/// Mozilla's roots, compiled in, on the SDK's TLS stack: built once (the
/// webhook POSTs, and the `crm import`/`crm export` client).
pub fn tls_config() -> Result<Arc<rustls::ClientConfig>, String> {
    static CONFIG: OnceLock<Result<Arc<rustls::ClientConfig>, String>> = OnceLock::new();
    CONFIG
        .get_or_init(|| {
            let mut roots = rustls::RootCertStore::empty();
            for cert in webpki_root_certs::TLS_SERVER_ROOT_CERTS {
                let _ = roots.add(cert.clone());
            }
            let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
            rustls::ClientConfig::builder_with_provider(provider)
                .with_safe_default_protocol_versions()
                .map(|b| Arc::new(b.with_root_certificates(roots).with_no_client_auth()))
                .map_err(|e| format!("no TLS configuration: {e}"))
        })
        .clone()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_after_reads_seconds_and_dates() {
        assert_eq!(retry_after("120"), Some(Duration::from_secs(120)));
        assert_eq!(
            retry_after("Wed, 21 Oct 2015 07:28:00 GMT"),
            Some(Duration::ZERO)
        );
        assert_eq!(retry_after("soon"), None);
    }
}
