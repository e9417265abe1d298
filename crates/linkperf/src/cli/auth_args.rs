//! Authentication flags: the server's users file, what needs a user, the
//! third-party rules and `--gen-key`; the client's `--username` and
//! `--key-file` (or LINKPERF_USER / LINKPERF_KEY). Turned into the
//! library's types; docs/security.md says what they mean.

use clap::{Args, ValueEnum};
use linkperf::client::Credentials;
use linkperf::guard::auth::{Net, Required, TargetRule, ThirdPartyPolicy, Users};
use std::path::PathBuf;
use std::sync::Arc;

#[derive(Args, Debug, Clone)]
pub struct ServerAuthArgs {
    /// Users who may authenticate: one NAME:KEY per line (KEY: 64 hex
    /// digits; make one with --gen-key). With it, every test needs a user
    /// unless --auth-required-for says otherwise.
    #[arg(long, value_name = "FILE")]
    pub auth_users: Option<PathBuf>,
    /// Which requests need a user (with --auth-users): every test (rr and
    /// iperf3 clients are then refused: they cannot authenticate), or only
    /// third-party requests.
    #[arg(long, value_enum, value_name = "WHAT", requires = "auth_users")]
    pub auth_required_for: Option<RequiredArg>,
    /// Print a new users-file line NAME:KEY with a random 256-bit key, and exit.
    #[arg(long, value_name = "NAME")]
    pub gen_key: Option<String>,
    /// Users who may order third-party tests (comma-separated; they must
    /// authenticate). Default: anyone the server admits.
    #[arg(
        long,
        value_name = "USER,...",
        value_delimiter = ',',
        requires = "auth_users"
    )]
    pub third_party_principals: Vec<String>,
    /// Networks controllers may order third-party tests from
    /// (comma-separated ADDR[/PREFIX]). Default: any.
    #[arg(long, value_name = "NET,...", value_delimiter = ',', value_parser = Net::parse)]
    pub third_party_sources: Vec<Net>,
    /// Targets third-party tests may go to (comma-separated
    /// ADDR[/PREFIX][@PORT]). Default: any host that answers the linkperf
    /// greeting.
    #[arg(long, value_name = "NET[@PORT],...", value_delimiter = ',', value_parser = TargetRule::parse)]
    pub third_party_targets: Vec<TargetRule>,
    /// Third-party tests one controller (user, or address) may start per hour.
    #[arg(long, value_name = "N", default_value_t = ThirdPartyPolicy::default().max_per_hour)]
    pub third_party_max_per_hour: u32,
    /// Third-party tests one controller may run at once.
    #[arg(long, value_name = "N", default_value_t = ThirdPartyPolicy::default().max_concurrent)]
    pub third_party_max_concurrent: u32,
    /// This agent's own user towards targets that require one: a file
    /// holding NAME:KEY (a line of the target's users file).
    #[arg(long, value_name = "FILE")]
    pub third_party_key_file: Option<PathBuf>,
}

#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum RequiredArg {
    All,
    ThirdParty,
}

impl ServerAuthArgs {
    /// The agent's credentials towards third-party targets, if given.
    pub fn target_credentials(&self) -> Result<Option<Credentials>, String> {
        self.third_party_key_file
            .as_deref()
            .map(|path| {
                Credentials::from_key_file(None, path)
                    .map_err(|e| format!("--third-party-key-file: {e}"))
            })
            .transpose()
    }

    /// The users (if any), what needs one, and the third-party rules.
    pub fn resolve(&self) -> Result<(Option<Arc<Users>>, Required, ThirdPartyPolicy), String> {
        let users = match &self.auth_users {
            Some(path) => Some(Arc::new(Users::load(path)?)),
            None => None,
        };
        let required = match self.auth_required_for {
            Some(RequiredArg::ThirdParty) => Required::ThirdParty,
            _ => Required::All,
        };
        let policy = ThirdPartyPolicy {
            principals: self.third_party_principals.clone(),
            sources: self.third_party_sources.clone(),
            targets: self.third_party_targets.clone(),
            max_per_hour: self.third_party_max_per_hour,
            max_concurrent: self.third_party_max_concurrent,
        };
        Ok((users, required, policy))
    }
}

#[derive(Args, Debug, Clone, Default)]
pub struct ClientAuthArgs {
    /// Authenticate as this user (the key from --key-file or LINKPERF_KEY).
    #[arg(long, value_name = "NAME")]
    pub username: Option<String>,
    /// The user's key: a file holding NAME:KEY or the bare KEY (64 hex digits).
    #[arg(long, value_name = "FILE")]
    pub key_file: Option<PathBuf>,
}

impl ClientAuthArgs {
    /// Sets the process's credentials from the flags, else the environment.
    pub fn install(&self) -> Result<(), String> {
        let credentials = match (&self.key_file, &self.username) {
            (Some(path), user) => Some(Credentials::from_key_file(user.as_deref(), path)?),
            (None, Some(user)) => match std::env::var("LINKPERF_KEY") {
                Ok(key) => Some(
                    Credentials::from_text(Some(user), key.trim())
                        .map_err(|e| format!("LINKPERF_KEY: {e}"))?,
                ),
                Err(_) => {
                    return Err(format!(
                        "--username {user}: no key; give --key-file FILE or set LINKPERF_KEY"
                    ))
                }
            },
            (None, None) => Credentials::from_env()?,
        };
        linkperf::client::set_default_credentials(credentials);
        Ok(())
    }
}
