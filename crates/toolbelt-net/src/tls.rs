//! The TLS client configuration every HTTP client of toolbelt shares.
//!
//! [`client_config`] builds a rustls [`ClientConfig`](rustls::ClientConfig) with
//! the ring crypto provider, rustls' safe default protocol versions (TLS 1.2 and
//! 1.3), the web's roots (webpki-roots, never the system store, so that a
//! machine's local additions change nothing) plus any extra roots given, and no
//! client certificate. Only the ALPN protocols differ between clients: the
//! fetcher speaks HTTP/1.1 only, a client that can use HTTP/2 offers both, and a
//! reqwest client handed the configuration as is offers none.
//!
//! ```
//! use toolbelt_net::tls::{ALPN_H2_HTTP1, client_config};
//!
//! let config = client_config(&[], ALPN_H2_HTTP1)?;
//! assert_eq!(config.alpn_protocols, vec![b"h2".to_vec(), b"http/1.1".to_vec()]);
//! # Ok::<(), toolbelt_net::tls::TlsError>(())
//! ```

use std::sync::Arc;

use rustls::pki_types::CertificateDer;

/// ALPN of a client that speaks HTTP/1.1 only.
pub const ALPN_HTTP1: &[&[u8]] = &[b"http/1.1"];
/// ALPN of a client that prefers HTTP/2 and falls back to HTTP/1.1.
pub const ALPN_H2_HTTP1: &[&[u8]] = &[b"h2", b"http/1.1"];
/// No ALPN offered (the server picks HTTP/1.1).
pub const ALPN_NONE: &[&[u8]] = &[];

/// Why the TLS client configuration cannot be built.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TlsError {
    /// An extra root certificate cannot be read.
    #[error("root certificate")]
    RootCertificate(#[source] rustls::Error),
    /// The crypto provider refuses the protocol versions.
    #[error("TLS")]
    Setup(#[from] rustls::Error),
}

/// The shared TLS client configuration, trusting the web's roots and the DER
/// certificates in `extra_roots`, offering the protocols in `alpn`.
///
/// # Errors
///
/// [`TlsError::RootCertificate`] when one of `extra_roots` is not a usable
/// certificate; [`TlsError::Setup`] when the crypto provider cannot be used.
///
/// # Security
///
/// Every extra root is trusted for every host, like the web's roots: give only
/// certificates the operator chose (tests use it for their own local CA).
pub fn client_config(
    extra_roots: &[Vec<u8>],
    alpn: &[&[u8]],
) -> Result<rustls::ClientConfig, TlsError> {
    let mut roots = rustls::RootCertStore::empty();
    roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
    for der in extra_roots {
        roots
            .add(CertificateDer::from(der.as_slice()).into_owned())
            .map_err(TlsError::RootCertificate)?;
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    Ok(config)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn alpn_is_what_the_client_asks_for() {
        for alpn in [ALPN_HTTP1, ALPN_H2_HTTP1, ALPN_NONE] {
            let config = client_config(&[], alpn).unwrap();
            let want: Vec<Vec<u8>> = alpn.iter().map(|p| p.to_vec()).collect();
            assert_eq!(config.alpn_protocols, want);
        }
    }

    #[test]
    fn a_bad_extra_root_is_refused() {
        let err = client_config(&[b"not a certificate".to_vec()], ALPN_HTTP1).unwrap_err();
        assert!(matches!(err, TlsError::RootCertificate(_)), "{err:?}");
        let text = toolbelt_core::error_chain(&err);
        assert!(text.starts_with("root certificate: "), "{text}");
    }
}
