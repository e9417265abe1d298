//! `--tls-pin`: trusting exactly the certificates whose SHA-256 is pinned
//! (self-signed servers), while still checking the handshake's signature
//! with the certificate's key, so that a relay presenting the pinned
//! certificate without its key is refused.

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{CertificateError, DigitallySignedStruct, Error, OtherError, SignatureScheme};
use sha2::{Digest, Sha256};
use std::sync::Arc;

/// The pin of a certificate: SHA-256 of its DER, 64 lowercase hex digits
/// (`openssl x509 -in cert.pem -outform der | sha256sum` prints the same).
pub fn pin_of(cert: &CertificateDer<'_>) -> String {
    linkperf_proto::auth::to_hex(&Sha256::digest(cert.as_ref()))
}

#[derive(Debug)]
pub(super) struct PinVerifier {
    pins: Vec<[u8; 32]>,
    provider: Arc<CryptoProvider>,
}

impl PinVerifier {
    pub(super) fn new(pins: Vec<[u8; 32]>, provider: Arc<CryptoProvider>) -> PinVerifier {
        PinVerifier { pins, provider }
    }
}

/// The refusal of a certificate off the pins; says what it was.
#[derive(Debug)]
pub(super) struct PinMismatch(pub String);

impl std::fmt::Display for PinMismatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "the server's certificate (SHA-256 {}) is not the one pinned with --tls-pin",
            self.0
        )
    }
}

impl std::error::Error for PinMismatch {}

impl ServerCertVerifier for PinVerifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, Error> {
        let pin = pin_of(end_entity);
        let wanted = linkperf_proto::auth::from_hex(&pin).unwrap_or_default();
        // Pins are public: no need for a constant-time comparison.
        if self.pins.iter().any(|p| p[..] == wanted[..]) {
            Ok(ServerCertVerified::assertion())
        } else {
            Err(Error::InvalidCertificate(CertificateError::Other(
                OtherError(Arc::new(PinMismatch(pin))),
            )))
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}
