//! Whose certificates the SDK's HTTPS client trusts (shared/src/tls.rs), checked
//! against an HTTPS stand-in for DynamoDB whose certificate a test CA signed
//! (`tests/fixtures/tls`, valid from 2020 to 2126).
//!
//! One test in its own binary: the platform store is read once per process,
//! from the `SSL_CERT_FILE` this test sets.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls_pki_types::{CertificateDer, PrivateKeyDer, pem::PemObject};
use shared::config::Config;
use shared::store::Store;
use shared::tls::TrustRoots;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_rustls::rustls;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/tls")
        .join(name)
}

/// Answers every request on `https://127.0.0.1:<port>` (an address the
/// certificate names) with an empty DynamoDB answer (`{}`: GetItem found nothing).
async fn https_stand_in() -> String {
    let certs = CertificateDer::pem_file_iter(fixture("localhost.pem"))
        .unwrap()
        .collect::<Result<Vec<_>, _>>()
        .unwrap();
    let key = PrivateKeyDer::from_pem_file(fixture("localhost.key")).unwrap();
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .unwrap();
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let acceptor = acceptor.clone();
            tokio::spawn(async move {
                // A refused handshake ends here: that is the point of half the test.
                let Ok(mut tls) = acceptor.accept(tcp).await else {
                    return;
                };
                let mut request = Vec::new();
                let mut buf = [0u8; 4096];
                // The SDK sends headers and a small JSON body; answer once the body is in.
                while let Ok(n) = tls.read(&mut buf).await {
                    if n == 0 {
                        return;
                    }
                    request.extend_from_slice(&buf[..n]);
                    if request_complete(&request) {
                        break;
                    }
                }
                let answer = "HTTP/1.1 200 OK\r\ncontent-type: application/x-amz-json-1.0\r\n\
                              content-length: 2\r\nconnection: close\r\n\r\n{}";
                let _ = tls.write_all(answer.as_bytes()).await;
                let _ = tls.shutdown().await;
            });
        }
    });
    format!("https://127.0.0.1:{port}")
}

fn request_complete(request: &[u8]) -> bool {
    let Some(end) = request.windows(4).position(|w| w == b"\r\n\r\n") else {
        return false;
    };
    let head = String::from_utf8_lossy(&request[..end]).to_ascii_lowercase();
    let length = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .and_then(|v| v.trim().parse::<usize>().ok())
        .unwrap_or(0);
    request.len() >= end + 4 + length
}

async fn get_item(roots: TrustRoots, endpoint: &str) -> Result<(), String> {
    let store = Config {
        table: "crm".into(),
        dynamodb_endpoint: Some(endpoint.to_owned()),
        tls_roots: roots,
        ..Default::default()
    }
    .dynamo_store()
    .await;
    store
        .get(&shared::keys::warm_up(), false)
        .await
        .map(|_| ())
        .map_err(|e| e.to_string())
}

#[tokio::test]
async fn the_bundled_roots_refuse_an_unknown_ca_and_ssl_cert_file_names_a_trusted_one() {
    // SAFETY: the only test of this binary, before any thread reads the environment.
    unsafe {
        std::env::set_var("SSL_CERT_FILE", fixture("ca.pem"));
        std::env::set_var("SSL_CERT_DIR", fixture("no-such-folder"));
        // Both clients honour a proxy from the environment; the stand-in is local.
        for proxy in ["HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy"] {
            std::env::remove_var(proxy);
        }
    }
    assert_eq!(TrustRoots::from_env(), TrustRoots::Platform);
    let endpoint = https_stand_in().await;

    // Mozilla's roots do not include the test CA: the handshake is refused.
    let refused = get_item(TrustRoots::Bundled, &endpoint).await.unwrap_err();
    assert!(refused.contains("UnknownIssuer"), "{refused}");

    // The platform store named by SSL_CERT_FILE holds it: the read goes through.
    get_item(TrustRoots::Platform, &endpoint).await.unwrap();
}
