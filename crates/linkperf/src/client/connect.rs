//! Reaching the server: the options of one run, the error a run fails with,
//! resolving the server's address and making sockets bound as the user
//! asked. Must not speak the control protocol or run a test.

use crate::tls::{self, Channel, ClientTls};
use linkperf_proto::Preamble;
use socket2::{Domain, Socket};
use std::io::Write;
use std::net::{IpAddr, SocketAddr, TcpStream, ToSocketAddrs};
use std::sync::Arc;
use std::time::Duration;

#[derive(Debug, Clone, Default)]
pub struct ClientOptions {
    pub host: String,
    pub port: u16,
    pub bind: Option<IpAddr>,
    /// First local port of the data connections (stream i uses cport + i).
    pub cport: Option<u16>,
    /// 4 or 6 to force an address family.
    pub family: Option<u8>,
    pub config: linkperf_proto::TestConfig,
    /// The user says both clocks are synchronised (PTP, NTP): report one-way delay.
    pub clocks_synchronised: bool,
    /// How long each connect (control and data) may take; None: 5 s.
    pub connect_timeout: Option<Duration>,
    /// Keep the server's side of the test in the report (`server_output`).
    pub server_output: bool,
    /// Answer a server's challenge as this user (`--username`, `--key-file`).
    pub credentials: Option<Credentials>,
    /// TLS on the control connection (`--tls`); data connections stay plain.
    pub tls: Option<Arc<ClientTls>>,
}

impl ClientOptions {
    /// The resolved input of one test run: the spec's server and its
    /// configuration with every default filled in.
    pub fn from_spec(spec: &crate::spec::TestSpec) -> ClientOptions {
        ClientOptions {
            host: spec.host.clone(),
            port: spec.port,
            bind: spec.bind,
            cport: spec.cport,
            family: spec.family,
            config: spec.config(),
            clocks_synchronised: spec.clock_sync,
            connect_timeout: spec.connect_timeout,
            server_output: spec.server_output,
            credentials: default_credentials(),
            tls: default_tls(),
        }
    }

    /// The connect timeout in force: the user's, or 5 s.
    pub fn connect_within(&self) -> Duration {
        self.connect_timeout.unwrap_or(DEFAULT_CONNECT_TIMEOUT)
    }
}

/// A user and its key, to answer a server's challenge (see
/// `linkperf_proto::auth`).
#[derive(Debug, Clone)]
pub struct Credentials {
    pub user: String,
    pub key: linkperf_proto::auth::Key,
}

impl Credentials {
    /// Reads a key file: one line, `NAME:KEY` as in the server's users file
    /// or the bare KEY (64 hex digits). `user` (`--username`) wins over the
    /// file's name; one of them must be given.
    pub fn from_key_file(
        user: Option<&str>,
        path: &std::path::Path,
    ) -> Result<Credentials, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("--key-file {}: {e}", path.display()))?;
        Credentials::from_text(user, text.trim())
            .map_err(|e| format!("--key-file {}: {e}", path.display()))
    }

    /// `NAME:KEY` or `KEY`, with `user` winning over NAME.
    pub fn from_text(user: Option<&str>, text: &str) -> Result<Credentials, String> {
        let (name, key) = if text.contains(':') {
            let (name, key) = crate::guard::auth::parse_user_line(text)?;
            (Some(name), key)
        } else {
            (None, linkperf_proto::auth::Key::parse(text)?)
        };
        let user = user
            .map(str::to_string)
            .or(name)
            .ok_or("no user name: give --username NAME (or write NAME:KEY in the key file)")?;
        if !crate::guard::auth::valid_name(&user) {
            return Err(format!(
                "'{user}' is not a user name: use 1-64 letters, digits, '.', '_', '-' or '@'"
            ));
        }
        Ok(Credentials { user, key })
    }

    /// From `LINKPERF_KEY` (`NAME:KEY` or `KEY`) and `LINKPERF_USER`; none
    /// when `LINKPERF_KEY` is unset.
    pub fn from_env() -> Result<Option<Credentials>, String> {
        let Ok(key) = std::env::var("LINKPERF_KEY") else {
            return Ok(None);
        };
        let user = std::env::var("LINKPERF_USER").ok();
        Credentials::from_text(user.as_deref(), key.trim())
            .map(Some)
            .map_err(|e| format!("LINKPERF_KEY: {e}"))
    }
}

static DEFAULT_CREDENTIALS: std::sync::OnceLock<Option<Credentials>> = std::sync::OnceLock::new();

/// Sets the credentials every run of this process uses unless its options
/// say otherwise (the command line's `--username`/`--key-file`). Only the
/// first call counts.
pub fn set_default_credentials(credentials: Option<Credentials>) {
    let _ = DEFAULT_CREDENTIALS.set(credentials);
}

/// The process's credentials: those set, else from the environment.
pub fn default_credentials() -> Option<Credentials> {
    DEFAULT_CREDENTIALS
        .get_or_init(|| Credentials::from_env().ok().flatten())
        .clone()
}

static DEFAULT_TLS: std::sync::OnceLock<Option<Arc<ClientTls>>> = std::sync::OnceLock::new();

/// Sets the TLS every control connection of this process uses unless its
/// options say otherwise (the command line's `--tls`). Only the first call
/// counts.
pub fn set_default_tls(tls: Option<Arc<ClientTls>>) {
    let _ = DEFAULT_TLS.set(tls);
}

/// The process's TLS: what was set, else `LINKPERF_TLS_PIN` or
/// `LINKPERF_TLS_CA` from the environment (how campaigns and monitors get
/// it), else none.
pub fn default_tls() -> Option<Arc<ClientTls>> {
    DEFAULT_TLS
        .get_or_init(|| tls_from_env().ok().flatten())
        .clone()
}

/// TLS from `LINKPERF_TLS_PIN` (pins, comma-separated) or `LINKPERF_TLS_CA`
/// (a PEM file); none when neither is set.
pub fn tls_from_env() -> Result<Option<Arc<ClientTls>>, String> {
    if let Ok(pins) = std::env::var("LINKPERF_TLS_PIN") {
        return ClientTls::with_pins(&pins, "LINKPERF_TLS_PIN").map(|t| Some(Arc::new(t)));
    }
    if let Ok(ca) = std::env::var("LINKPERF_TLS_CA") {
        return ClientTls::with_ca(std::path::Path::new(&ca), "LINKPERF_TLS_CA")
            .map(|t| Some(Arc::new(t)));
    }
    Ok(None)
}

/// Turns a connected socket into a control connection: the TLS handshake
/// when `tls` is given (the certificate checked for `host`), then the
/// control preamble.
pub(crate) fn open_control(
    stream: TcpStream,
    tls: Option<&ClientTls>,
    host: &str,
    within: Duration,
) -> Result<Channel, ClientError> {
    let mut channel = match tls {
        Some(tls) => tls::connect(stream, tls, host, within).map_err(fail)?,
        None => Channel::plain(stream),
    };
    channel
        .write_all(&Preamble::Control.bytes())
        .map_err(|e| fail(format!("control connection: {e}")))?;
    Ok(channel)
}

/// How long a connect may take unless `--connect-timeout` says otherwise.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// `within` as a user reads it: "5 s", "300 ms".
pub fn describe_timeout(within: Duration) -> String {
    if within.subsec_millis() == 0 && within.as_secs() > 0 {
        format!("{} s", within.as_secs())
    } else {
        format!("{} ms", within.as_millis())
    }
}

/// A failed run: one line for the user and the exit code (2 usage, 1 run).
#[derive(Debug, Clone)]
pub struct ClientError {
    pub message: String,
    pub exit_code: i32,
}

pub(super) fn fail(message: impl Into<String>) -> ClientError {
    ClientError {
        message: message.into(),
        exit_code: 1,
    }
}

/// A usage error (exit 2): the configuration cannot run as given.
pub(super) fn usage(message: String) -> ClientError {
    ClientError {
        message,
        exit_code: 2,
    }
}

/// Resolves the server address, honouring -4/-6.
pub fn resolve(host: &str, port: u16, family: Option<u8>) -> Result<SocketAddr, ClientError> {
    let addrs: Vec<SocketAddr> = (host, port)
        .to_socket_addrs()
        .map_err(|_| fail(format!("cannot resolve host '{host}'")))?
        .collect();
    addrs
        .iter()
        .find(|a| match family {
            Some(4) => a.is_ipv4(),
            Some(6) => a.is_ipv6(),
            _ => true,
        })
        .copied()
        .ok_or_else(|| {
            fail(format!(
                "host '{host}' has no IPv{} address",
                family.unwrap_or(4)
            ))
        })
}

/// Connects `sock` to `addr`, giving up after `within`.
pub(super) fn connect(
    sock: &Socket,
    addr: SocketAddr,
    within: Duration,
) -> Result<(), ClientError> {
    sock.connect_timeout(&addr.into(), within)
        .map_err(|e| connect_error(addr, e, within))
}

pub(super) fn connect_error(addr: SocketAddr, e: std::io::Error, within: Duration) -> ClientError {
    match e.kind() {
        std::io::ErrorKind::ConnectionRefused => fail(format!(
            "connection refused by {addr}: is `linkperf server` running there (port {})?",
            addr.port()
        )),
        std::io::ErrorKind::TimedOut | std::io::ErrorKind::WouldBlock => fail(format!(
            "no answer from {addr} within {}: host down, port filtered or its listen queue full",
            describe_timeout(within)
        )),
        _ => fail(format!("cannot connect to {addr}: {e}")),
    }
}

/// A TCP socket for `server`'s address family, bound to `bind` if given.
pub(crate) fn tcp_socket(
    server: SocketAddr,
    bind: Option<SocketAddr>,
) -> Result<Socket, ClientError> {
    stream_socket(server, bind, false)
}

/// A TCP (or, with `mptcp`, MPTCP) socket for `server`'s address family, bound to `bind`
/// if given. A kernel refusing MPTCP is a usage error: the test cannot run as asked.
pub(crate) fn stream_socket(
    server: SocketAddr,
    bind: Option<SocketAddr>,
    mptcp: bool,
) -> Result<Socket, ClientError> {
    let domain = if server.is_ipv6() {
        Domain::IPV6
    } else {
        Domain::IPV4
    };
    let sock = linkperf_engine::mptcp::stream_socket(domain, mptcp).map_err(|e| {
        if mptcp {
            usage(e)
        } else {
            fail(e)
        }
    })?;
    if let Some(b) = bind {
        sock.set_reuse_address(true).ok();
        sock.bind(&b.into())
            .map_err(|e| fail(format!("cannot bind to {b}: {e}")))?;
    }
    Ok(sock)
}

/// The local address to bind to: the user's address (-B) and `port`, or
/// none when neither is asked for.
pub(super) fn local_bind(
    options: &ClientOptions,
    server: SocketAddr,
    port: u16,
) -> Option<SocketAddr> {
    if options.bind.is_none() && port == 0 {
        return None;
    }
    let ip = options.bind.unwrap_or(unspecified(server));
    Some(SocketAddr::new(ip, port))
}

/// The wildcard address of `server`'s family.
pub(super) fn unspecified(server: SocketAddr) -> IpAddr {
    if server.is_ipv6() {
        IpAddr::from([0u16; 8])
    } else {
        IpAddr::from([0u8; 4])
    }
}
