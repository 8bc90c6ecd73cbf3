//! The roots of trust of the SDK's HTTPS client.
//!
//! The SDK's default client reads and parses the platform's certificate store
//! at every cold start: on the bench machine (Debian) the CA bundle and each of
//! its certificates again as a file, 2.6 ms of a 6 ms init (docs/design.md,
//! "Build and cold start"). The functions speak only to AWS endpoints, whose
//! certificates chain to public roots, so by default they trust Mozilla's root
//! program compiled in (`webpki-root-certs`, the program the platforms'
//! `ca-certificates` packages start from) and read no file.
//!
//! Outside Lambda (the `crm` CLI on a workstation, where a corporate CA may be
//! installed in the system's store) the default stays the platform's store.
//! `CRM_TLS_ROOTS=platform` or `bundled` chooses either way; setting
//! `SSL_CERT_FILE` or `SSL_CERT_DIR` (which name a platform store) chooses the
//! platform's, which is what a private CA or a TLS-inspecting proxy needs.

use aws_smithy_http_client::tls::{self, TlsContext, TrustStore};
use aws_smithy_http_client::{Builder, ConnectorBuilder, proxy::ProxyConfig};
use aws_smithy_runtime_api::client::http::SharedHttpClient;
use base64::Engine;

/// Which certificates the SDK's HTTPS client trusts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum TrustRoots {
    /// Mozilla's root program, compiled in: no file read at start.
    Bundled,
    /// The platform's store, as the SDK loads it by default.
    #[default]
    Platform,
}

impl TrustRoots {
    /// From the environment (see the module's documentation): `Bundled` in a
    /// Lambda function (`AWS_LAMBDA_RUNTIME_API` is set), `Platform` elsewhere.
    pub fn from_env() -> Self {
        let var = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
        Self::from_vars(
            var("CRM_TLS_ROOTS").as_deref(),
            var("SSL_CERT_FILE").is_some() || var("SSL_CERT_DIR").is_some(),
            var("AWS_LAMBDA_RUNTIME_API").is_some(),
        )
    }

    fn from_vars(choice: Option<&str>, platform_named: bool, on_lambda: bool) -> Self {
        match choice {
            Some("platform") => Self::Platform,
            Some("bundled") => Self::Bundled,
            None if platform_named || !on_lambda => Self::Platform,
            None => Self::Bundled,
            Some(other) => {
                // Not fatal: the SDK's own default is always a safe choice.
                tracing::warn!(
                    value = other,
                    "CRM_TLS_ROOTS is `bundled` or `platform`; using `platform`"
                );
                Self::Platform
            }
        }
    }

    /// The HTTPS client for `aws_config`'s loader; `None`: the SDK's default.
    pub fn http_client(self) -> Option<SharedHttpClient> {
        match self {
            Self::Platform => None,
            Self::Bundled => Some(bundled_client()),
        }
    }
}

/// The SDK's default HTTPS client (rustls on aws-lc, its timeouts and sleep,
/// the `HTTPS_PROXY` family read from the environment), with Mozilla's roots
/// as its only trust store. Built as `aws-smithy-runtime` builds its default
/// (`default_https_client`), through the same `build_with_connector_fn`, which
/// runs when a client is validated and once per connector settings (twice or
/// so per cold start): the PEM text, about 0.1 ms to write, lives only while a
/// connector is built, where a captured copy would keep 220 KB for the
/// process's life.
fn bundled_client() -> SharedHttpClient {
    Builder::new().build_with_connector_fn(|settings, components| {
        let context = TlsContext::builder()
            .with_trust_store(TrustStore::empty().with_pem_certificate(mozilla_roots_pem()))
            .build()
            .expect("a TLS context of PEM certificates");
        let mut connector = ConnectorBuilder::default()
            .tls_provider(tls::Provider::Rustls(
                tls::rustls_provider::CryptoMode::AwsLc,
            ))
            .tls_context(context);
        connector.set_connector_settings(settings.cloned());
        if let Some(components) = components {
            connector.set_sleep_impl(components.sleep_impl());
        }
        connector.set_proxy_config(Some(ProxyConfig::from_env()));
        connector.build()
    })
}

/// Mozilla's roots as one PEM document: the only form the SDK's trust store takes.
fn mozilla_roots_pem() -> Vec<u8> {
    let roots = webpki_root_certs::TLS_SERVER_ROOT_CERTS;
    let mut pem = Vec::with_capacity(roots.iter().map(|c| c.len() * 4 / 3 + 64).sum());
    for cert in roots {
        pem.extend_from_slice(b"-----BEGIN CERTIFICATE-----\n");
        // One line of base64: the SDK's PEM reader does not need 64-column lines.
        let body = base64::engine::general_purpose::STANDARD.encode(cert);
        pem.extend_from_slice(body.as_bytes());
        pem.extend_from_slice(b"\n-----END CERTIFICATE-----\n");
    }
    pem
}

#[cfg(test)]
mod tests {
    use super::*;
    use rustls_pki_types::{CertificateDer, pem::PemObject};

    #[test]
    fn the_bundled_roots_are_every_mozilla_root_and_include_amazons() {
        let pem = mozilla_roots_pem();
        let parsed: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(&pem)
            .collect::<Result<_, _>>()
            .expect("valid PEM");
        assert_eq!(parsed, webpki_root_certs::TLS_SERVER_ROOT_CERTS);
        // DynamoDB's and SQS's certificates chain to Amazon Trust Services.
        let amazon = b"Amazon Root CA 1";
        assert!(
            parsed
                .iter()
                .any(|c| c.windows(amazon.len()).any(|w| w == amazon))
        );
    }

    #[test]
    fn every_bundled_root_is_one_rustls_takes() {
        // The SDK adds each root with `expect`: one it refused would panic at init.
        let mut store = rustls::RootCertStore::empty();
        for root in webpki_root_certs::TLS_SERVER_ROOT_CERTS {
            store.add(root.clone()).expect("a root rustls accepts");
        }
        assert_eq!(store.len(), webpki_root_certs::TLS_SERVER_ROOT_CERTS.len());
    }

    #[test]
    fn bundled_on_lambda_unless_the_platform_store_is_named() {
        use TrustRoots::{Bundled, Platform};
        // (CRM_TLS_ROOTS, SSL_CERT_FILE or SSL_CERT_DIR set, on Lambda) -> roots
        let cases = [
            (None, false, true, Bundled),
            (None, true, true, Platform),
            (None, false, false, Platform),
            (Some("platform"), false, true, Platform),
            (Some("bundled"), true, false, Bundled),
            (Some("webpki"), false, true, Platform),
        ];
        for (choice, named, on_lambda, roots) in cases {
            let chosen = TrustRoots::from_vars(choice, named, on_lambda);
            assert_eq!(chosen, roots, "{choice:?} {named} {on_lambda}");
        }
        assert_eq!(TrustRoots::default(), Platform);
        assert!(Platform.http_client().is_none());
        assert!(Bundled.http_client().is_some());
    }
}
