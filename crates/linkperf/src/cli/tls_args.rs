//! TLS flags: the server's certificate and key, `--tls-required` and
//! `--tls-gen-cert`; the client's `--tls` with `--tls-ca` or `--tls-pin`
//! (or LINKPERF_TLS_CA / LINKPERF_TLS_PIN). Turned into the library's
//! types; docs/security.md says what they mean.

use clap::Args;
use linkperf::tls::{ClientTls, ServerTls};
use std::path::PathBuf;
use std::sync::Arc;

#[derive(Args, Debug, Clone, Default)]
pub struct ServerTlsArgs {
    /// TLS on control connections: the server's certificate chain (PEM).
    /// Data connections stay plain.
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// The certificate's private key (PEM).
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// Refuse control connections that do not use TLS (and iperf3 clients).
    #[arg(long, requires = "tls_cert")]
    pub tls_required: bool,
    /// Write a self-signed certificate and key (DIR/cert.pem, DIR/key.pem)
    /// for the names of --tls-name, print its pin, and exit.
    #[arg(long, value_name = "DIR")]
    pub tls_gen_cert: Option<PathBuf>,
    /// With --tls-gen-cert: the host names or addresses clients use.
    #[arg(
        long,
        value_name = "NAME,...",
        value_delimiter = ',',
        requires = "tls_gen_cert"
    )]
    pub tls_name: Vec<String>,
    /// Third-party mode: TLS towards targets, trusting the CAs in FILE
    /// (the certificate must name the target's address).
    #[arg(long, value_name = "FILE", conflicts_with = "third_party_tls_pin")]
    pub third_party_tls_ca: Option<PathBuf>,
    /// Third-party mode: TLS towards targets, trusting these certificate
    /// pins (comma-separated SHA-256, one per target).
    #[arg(long, value_name = "SHA256,...")]
    pub third_party_tls_pin: Option<String>,
}

impl ServerTlsArgs {
    /// TLS towards third-party targets, if configured.
    pub fn target_tls(&self) -> Result<Option<Arc<ClientTls>>, String> {
        let tls = match (&self.third_party_tls_ca, &self.third_party_tls_pin) {
            (Some(ca), _) => ClientTls::with_ca(ca, "--third-party-tls-ca")?,
            (None, Some(pins)) => ClientTls::with_pins(pins, "--third-party-tls-pin")?,
            (None, None) => return Ok(None),
        };
        Ok(Some(Arc::new(tls)))
    }

    pub fn resolve(&self) -> Result<Option<ServerTls>, String> {
        match (&self.tls_cert, &self.tls_key) {
            (Some(cert), Some(key)) => ServerTls::load(cert, key, self.tls_required).map(Some),
            _ => Ok(None),
        }
    }
}

#[derive(Args, Debug, Clone, Default)]
pub struct ClientTlsArgs {
    /// TLS on the control connection (data connections stay plain); the
    /// server is trusted through --tls-ca or --tls-pin (either implies
    /// --tls), or LINKPERF_TLS_CA / LINKPERF_TLS_PIN.
    #[arg(long)]
    pub tls: bool,
    /// Trust servers whose certificate a CA in FILE (PEM) signed for the
    /// host name given.
    #[arg(long, value_name = "FILE", conflicts_with = "tls_pin")]
    pub tls_ca: Option<PathBuf>,
    /// Trust exactly the certificate with this SHA-256 (64 hex digits, as
    /// `linkperf server` prints it); for self-signed servers. Several:
    /// comma-separated.
    #[arg(long, value_name = "SHA256")]
    pub tls_pin: Option<String>,
}

impl ClientTlsArgs {
    /// Sets the process's TLS from the flags, else the environment.
    pub fn install(&self) -> Result<(), String> {
        let tls = match (&self.tls_ca, &self.tls_pin) {
            (Some(ca), _) => Some(ClientTls::with_ca(ca, "--tls-ca")?),
            (None, Some(pins)) => Some(ClientTls::with_pins(pins, "--tls-pin")?),
            (None, None) => match linkperf::client::tls_from_env()? {
                Some(tls) => Some(Arc::unwrap_or_clone(tls)),
                None if self.tls => {
                    return Err(
                        "--tls needs the server's trust: --tls-ca FILE or --tls-pin SHA256 (or LINKPERF_TLS_CA / LINKPERF_TLS_PIN)"
                            .into(),
                    )
                }
                None => None,
            },
        };
        linkperf::client::set_default_tls(tls.map(Arc::new));
        Ok(())
    }
}
