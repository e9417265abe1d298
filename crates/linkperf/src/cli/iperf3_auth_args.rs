//! iperf3's RSA authentication flags, spelled as iperf3 spells them: the
//! server's `--rsa-private-key-path`, `--authorized-users-path` and
//! `--time-skew-threshold`; the client's `--rsa-public-key-path` (with
//! `--username`, the password from IPERF3_PASSWORD). Turned into the
//! library's types; docs/security.md says how they combine with
//! `--auth-users`.

use clap::{Args, ValueEnum};
use linkperf::iperf3::auth::{self, Padding, RsaAuth, DEFAULT_SKEW_S};
use std::path::PathBuf;
use std::sync::Arc;

#[derive(Args, Debug, Clone)]
pub struct ServerIperf3AuthArgs {
    /// iperf3 clients must authenticate (iperf3's --username): the RSA
    /// private key (PEM, `openssl genrsa`) their tokens are encrypted for.
    #[arg(long, value_name = "FILE", requires = "authorized_users_path")]
    pub rsa_private_key_path: Option<PathBuf>,
    /// iperf3's users file: USER,SHA256HEX lines, the hash being the
    /// SHA-256 of `{USER}PASSWORD` (`printf '{mario}rossi' | sha256sum`).
    #[arg(long, value_name = "FILE", requires = "rsa_private_key_path")]
    pub authorized_users_path: Option<PathBuf>,
    /// Largest difference, in seconds, between an iperf3 client's token time
    /// and this server's clock.
    #[arg(
        long,
        value_name = "SECONDS",
        default_value_t = DEFAULT_SKEW_S,
        value_parser = clap::value_parser!(u32).range(1..=86_400)
    )]
    pub time_skew_threshold: u32,
}

impl ServerIperf3AuthArgs {
    /// The server's iperf3 authentication, if asked for.
    pub fn resolve(&self) -> Result<Option<Arc<RsaAuth>>, String> {
        match (&self.rsa_private_key_path, &self.authorized_users_path) {
            (Some(key), Some(users)) => Ok(Some(Arc::new(RsaAuth::load(
                key,
                users,
                self.time_skew_threshold,
            )?))),
            _ => Ok(None),
        }
    }
}

#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum PaddingArg {
    /// PKCS#1 v1.5: iperf3 3.12 to 3.16, and later ones with --use-pkcs1-padding.
    Pkcs1,
    /// OAEP: iperf3 3.17 and later by default.
    Oaep,
}

#[derive(Args, Debug, Clone, Default)]
pub struct ClientIperf3AuthArgs {
    /// With --iperf3: authenticate to an iperf3 server as --username,
    /// encrypting the password (IPERF3_PASSWORD) with this RSA public key
    /// (PEM, `openssl rsa -pubout`).
    #[arg(long, value_name = "FILE")]
    pub rsa_public_key_path: Option<PathBuf>,
    /// The token's RSA padding, which must match the iperf3 server's.
    #[arg(
        long,
        value_enum,
        value_name = "PADDING",
        requires = "rsa_public_key_path"
    )]
    pub rsa_padding: Option<PaddingArg>,
}

impl ClientIperf3AuthArgs {
    /// The client's credentials for an iperf3 server, if asked for:
    /// `username` from --username, the password from IPERF3_PASSWORD.
    pub fn resolve(
        &self,
        username: Option<&str>,
        iperf3_mode: bool,
    ) -> Result<Option<auth::ClientToken>, String> {
        let Some(path) = &self.rsa_public_key_path else {
            if let (true, Some(user)) = (iperf3_mode, username) {
                return Err(format!(
                    "--username {user} with --iperf3 is iperf3's authentication: add --rsa-public-key-path FILE (the password from IPERF3_PASSWORD)"
                ));
            }
            return Ok(None);
        };
        if !iperf3_mode {
            return Err(
                "--rsa-public-key-path is iperf3's authentication: add --iperf3 (linkperf servers take --key-file)"
                    .into(),
            );
        }
        let user = username.ok_or("--rsa-public-key-path needs --username USER")?;
        let password = std::env::var("IPERF3_PASSWORD").map_err(|_| {
            "--rsa-public-key-path: set the password in the environment variable IPERF3_PASSWORD"
                .to_string()
        })?;
        let key = auth::load_public_key(path)?;
        let padding = match self.rsa_padding {
            Some(PaddingArg::Oaep) => Padding::Oaep,
            _ => Padding::Pkcs1,
        };
        auth::ClientToken::new(user, &password, key, padding).map(Some)
    }
}
