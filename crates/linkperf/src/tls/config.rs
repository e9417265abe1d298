//! What each end of a TLS control connection is configured with: the
//! server's certificate and key, the client's trust (a CA file or pins),
//! and making a self-signed pair for tests and users.

use super::verify::{self, pin_of};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use std::path::Path;
use std::sync::Arc;

pub(super) fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// A server's TLS set-up.
#[derive(Clone)]
pub struct ServerTls {
    pub(super) config: Arc<rustls::ServerConfig>,
    /// Refuse control connections that do not use TLS (`--tls-required`).
    pub required: bool,
    /// The certificate's pin (SHA-256 of its DER), for `--tls-pin`.
    pub pin: String,
}

impl std::fmt::Debug for ServerTls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ServerTls(pin {}, required {})", self.pin, self.required)
    }
}

impl ServerTls {
    /// Reads a PEM certificate chain and its PEM private key.
    pub fn load(cert: &Path, key: &Path, required: bool) -> Result<ServerTls, String> {
        let chain = read_certs(cert, "--tls-cert")?;
        let key = PrivateKeyDer::from_pem_file(key).map_err(|e| {
            format!(
                "--tls-key {}: {e} (expected a PEM private key: PKCS#8, PKCS#1 or SEC1)",
                key.display()
            )
        })?;
        let pin = pin_of(&chain[0]);
        let mut config = rustls::ServerConfig::builder_with_provider(provider())
            .with_protocol_versions(&[&rustls::version::TLS13])
            .map_err(|e| format!("TLS: {e}"))?
            .with_no_client_auth()
            .with_single_cert(chain, key)
            .map_err(|e| format!("--tls-cert/--tls-key: {e}"))?;
        // Every connection makes a full handshake: no tickets to send.
        config.send_tls13_tickets = 0;
        Ok(ServerTls {
            config: Arc::new(config),
            required,
            pin,
        })
    }
}

fn read_certs(path: &Path, flag: &str) -> Result<Vec<CertificateDer<'static>>, String> {
    let certs = CertificateDer::pem_file_iter(path)
        .and_then(|i| i.collect::<Result<Vec<_>, _>>())
        .map_err(|e| format!("{flag} {}: {e}", path.display()))?;
    if certs.is_empty() {
        return Err(format!(
            "{flag} {}: no PEM certificate (-----BEGIN CERTIFICATE-----) in it",
            path.display()
        ));
    }
    Ok(certs)
}

/// What a client trusts.
#[derive(Debug, Clone)]
pub enum Trust {
    /// Certificates signed by these CAs (PEM file), for the server's name.
    Ca(std::path::PathBuf),
    /// Exactly these certificates (SHA-256 of their DER), whatever their name.
    Pins(Vec<[u8; 32]>),
}

/// A client's TLS set-up.
#[derive(Clone)]
pub struct ClientTls {
    pub(super) config: Arc<rustls::ClientConfig>,
    trust: Trust,
}

impl std::fmt::Debug for ClientTls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ClientTls({:?})", self.trust)
    }
}

impl ClientTls {
    pub fn new(trust: Trust) -> Result<ClientTls, String> {
        let builder = rustls::ClientConfig::builder_with_provider(provider())
            .with_protocol_versions(&[&rustls::version::TLS13])
            .map_err(|e| format!("TLS: {e}"))?;
        let mut config = match &trust {
            Trust::Ca(path) => {
                let mut roots = rustls::RootCertStore::empty();
                for cert in read_certs(path, "CA file")? {
                    roots
                        .add(cert)
                        .map_err(|e| format!("CA file {}: {e}", path.display()))?;
                }
                builder.with_root_certificates(roots).with_no_client_auth()
            }
            Trust::Pins(pins) => builder
                .dangerous()
                .with_custom_certificate_verifier(Arc::new(verify::PinVerifier::new(
                    pins.clone(),
                    provider(),
                )))
                .with_no_client_auth(),
        };
        config.resumption = rustls::client::Resumption::disabled();
        Ok(ClientTls {
            config: Arc::new(config),
            trust,
        })
    }

    /// Trust the CAs of a PEM file (`--tls-ca FILE`); errors start with `source`, the flag
    /// or variable the path came from.
    pub fn with_ca(path: &Path, source: &str) -> Result<ClientTls, String> {
        ClientTls::new(Trust::Ca(path.to_path_buf())).map_err(|e| format!("{source}: {e}"))
    }

    /// Trust exactly these certificates (`--tls-pin SHA256[,SHA256...]`); errors start with
    /// `source`, the flag or variable the pins came from.
    pub fn with_pins(text: &str, source: &str) -> Result<ClientTls, String> {
        let pins = text
            .split(',')
            .map(parse_pin)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| format!("{source}: {e}"))?;
        ClientTls::new(Trust::Pins(pins)).map_err(|e| format!("{source}: {e}"))
    }

    pub fn trust(&self) -> &Trust {
        &self.trust
    }
}

/// Reads a pin: 64 hex digits, colons allowed between bytes.
pub fn parse_pin(text: &str) -> Result<[u8; 32], String> {
    let clean: String = text.trim().chars().filter(|c| *c != ':').collect();
    let bytes = linkperf_proto::auth::from_hex(&clean.to_ascii_lowercase())
        .filter(|b| b.len() == 32)
        .ok_or_else(|| {
            format!(
                "'{}' is not a certificate pin: give its SHA-256 as 64 hexadecimal digits (linkperf server prints it)",
                text.trim()
            )
        })?;
    let mut pin = [0u8; 32];
    pin.copy_from_slice(&bytes);
    Ok(pin)
}

/// A self-signed certificate for `names` (host names or IP addresses) and
/// its key, written to `dir/cert.pem` and `dir/key.pem` (mode 0600).
/// Returns the certificate's pin.
pub fn generate_self_signed(dir: &Path, names: &[String]) -> Result<String, String> {
    if names.is_empty() {
        return Err("--tls-gen-cert needs --tls-name NAME[,NAME...] (host names or addresses the clients use)".into());
    }
    let pair = rcgen::generate_simple_self_signed(names.to_vec())
        .map_err(|e| format!("--tls-name {}: {e}", names.join(",")))?;
    std::fs::create_dir_all(dir).map_err(|e| format!("--tls-gen-cert {}: {e}", dir.display()))?;
    let cert_path = dir.join("cert.pem");
    let key_path = dir.join("key.pem");
    write_private(&key_path, pair.signing_key.serialize_pem().as_bytes())?;
    std::fs::write(&cert_path, pair.cert.pem())
        .map_err(|e| format!("{}: {e}", cert_path.display()))?;
    Ok(pin_of(pair.cert.der()))
}

fn write_private(path: &Path, bytes: &[u8]) -> Result<(), String> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    file.write_all(bytes)
        .map_err(|e| format!("{}: {e}", path.display()))
}
