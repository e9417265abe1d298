//! The control connection of an rr session: the TCP connect (data
//! connections use it too), TLS when the plan asks for it, the greeting,
//! the final count from the server, and the client's error. It runs no
//! transactions and measures nothing.

use crate::client::ClientError;
use crate::rr::report::ServerCounts;
use crate::rr::Plan;
use crate::tls::Channel;
use linkperf_proto::auth;
use linkperf_proto::rr::{RrClientMessage, RrClientSession, RrServerMessage, RR_VERSION};
use linkperf_proto::Preamble;
use std::io::{ErrorKind, Read, Write};
use std::net::{IpAddr, SocketAddr, TcpStream};
use std::time::Duration;

pub(super) fn fail(message: impl Into<String>) -> ClientError {
    ClientError {
        message: message.into(),
        exit_code: 1,
    }
}

/// How long the server has to greet us.
pub(super) const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(5);

pub(super) struct Welcome {
    pub(super) cookie: u64,
    pub(super) udp_port: Option<u16>,
    pub(super) software: String,
    pub(super) boot_id: Option<String>,
}

/// The session's control connection.
pub(super) struct Control {
    stream: Channel,
    session: RrClientSession,
}

fn connect_error(addr: SocketAddr, e: std::io::Error) -> ClientError {
    match e.kind() {
        ErrorKind::ConnectionRefused => fail(format!(
            "connection refused by {addr}: is `linkperf server` running there (port {})?",
            addr.port()
        )),
        ErrorKind::TimedOut | ErrorKind::WouldBlock => fail(format!(
            "no answer from {addr} within {} s: host down or port filtered",
            HANDSHAKE_TIMEOUT.as_secs()
        )),
        _ => fail(format!("cannot connect to {addr}: {e}")),
    }
}

pub(super) fn tcp_connect(
    server: SocketAddr,
    bind: Option<IpAddr>,
    timeout: Duration,
) -> Result<TcpStream, ClientError> {
    use socket2::{Domain, Socket, Type};
    let domain = if server.is_ipv6() {
        Domain::IPV6
    } else {
        Domain::IPV4
    };
    let sock = Socket::new(domain, Type::STREAM, None).map_err(|e| fail(format!("socket: {e}")))?;
    if let Some(ip) = bind {
        let local = SocketAddr::new(ip, 0);
        sock.bind(&local.into())
            .map_err(|e| fail(format!("cannot bind to {ip}: {e}")))?;
    }
    sock.connect_timeout(&server.into(), timeout)
        .map_err(|e| connect_error(server, e))?;
    let stream: TcpStream = sock.into();
    stream.set_nodelay(true).ok();
    Ok(stream)
}

impl Control {
    pub(super) fn open(
        server: SocketAddr,
        plan: &Plan,
    ) -> Result<(Control, Welcome, SocketAddr), ClientError> {
        let tcp = tcp_connect(server, plan.bind, HANDSHAKE_TIMEOUT)?;
        linkperf_engine::sockopt::apply_liveness(&socket2::SockRef::from(&tcp));
        let local = tcp.local_addr().map_err(|e| fail(e.to_string()))?;
        let mut stream = match &plan.tls {
            Some(tls) => {
                crate::tls::connect(tcp, tls, &plan.host, HANDSHAKE_TIMEOUT).map_err(fail)?
            }
            None => Channel::plain(tcp),
        };
        let mut session = RrClientSession::new();
        let mut hello = Preamble::Rr.bytes().to_vec();
        hello.extend(
            session
                .send(&RrClientMessage::Hello {
                    version: RR_VERSION,
                    software: crate::report::SOFTWARE.into(),
                    protocol: plan.protocol,
                })
                .map_err(|e| fail(e.to_string()))?,
        );
        stream
            .write_all(&hello)
            .map_err(|e| fail(format!("control connection to {server}: {e}")))?;
        stream.tcp().set_read_timeout(Some(HANDSHAKE_TIMEOUT)).ok();
        let mut control = Control { stream, session };
        let mut greeting = control.read(server, "greeting")?;
        if let RrServerMessage::Challenge { nonce } = greeting {
            control.answer(server, &nonce, plan.credentials.as_ref())?;
            greeting = control.read(server, "greeting")?;
        }
        let welcome = match greeting {
            RrServerMessage::Welcome {
                cookie,
                udp_port,
                software,
                boot_id,
                ..
            } => Welcome {
                cookie,
                udp_port,
                software,
                boot_id,
            },
            RrServerMessage::Error { message } => return Err(fail(format!("server: {message}"))),
            other => {
                return Err(fail(format!(
                    "unexpected answer from the server: {other:?}"
                )))
            }
        };
        // Idle gaps may be long; keepalive watches the connection meanwhile.
        control.stream.tcp().set_read_timeout(None).ok();
        Ok((control, welcome, local))
    }

    /// Answers the server's challenge with `given` credentials, else the
    /// process's (`--username`/`--key-file`, or LINKPERF_USER/LINKPERF_KEY).
    fn answer(
        &mut self,
        server: SocketAddr,
        nonce: &str,
        given: Option<&crate::client::Credentials>,
    ) -> Result<(), ClientError> {
        let Some(c) = given.cloned().or_else(crate::client::default_credentials) else {
            return Err(fail(
                "server: this server requires authentication: give --username and --key-file (or LINKPERF_USER and LINKPERF_KEY)",
            ));
        };
        let nonce = auth::from_hex(nonce)
            .ok_or_else(|| fail("the server's challenge is not hexadecimal"))?;
        let bytes = self
            .session
            .send(&RrClientMessage::Auth {
                user: c.user.clone(),
                // Over TLS the answer holds for this TLS session only.
                answer: auth::answer_bound(
                    &c.key,
                    &nonce,
                    &c.user,
                    &auth::purpose_rr(),
                    self.stream.binding().as_ref().map(|b| &b[..]),
                ),
            })
            .map_err(|e| fail(e.to_string()))?;
        self.stream
            .write_all(&bytes)
            .map_err(|e| fail(format!("control connection to {server}: {e}")))
    }

    fn read(&mut self, server: SocketAddr, what: &str) -> Result<RrServerMessage, ClientError> {
        let mut buf = vec![0u8; 4096];
        loop {
            let want = self.session.wanted().min(buf.len());
            let n = match self.stream.read(&mut buf[..want]) {
                Ok(0) => {
                    return Err(fail(format!(
                        "{server} closed the connection during the {what}: is it a linkperf server of the same release?"
                    )))
                }
                Ok(n) => n,
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                    return Err(fail(format!(
                        "the server at {server} did not answer ({what}) within {} s: is it a linkperf server?",
                        HANDSHAKE_TIMEOUT.as_secs()
                    )))
                }
                Err(e) => return Err(fail(format!("control connection to {server}: {e}"))),
            };
            match self.session.receive(&buf[..n]) {
                Ok(mut m) if !m.is_empty() => return Ok(m.remove(0)),
                Ok(_) => {}
                Err(e) => {
                    return Err(fail(format!(
                        "the server at {server} does not speak linkperf rr: {e}"
                    )))
                }
            }
        }
    }

    pub(super) fn finish(&mut self, server: SocketAddr) -> Result<ServerCounts, ClientError> {
        let bytes = self
            .session
            .send(&RrClientMessage::Finish)
            .map_err(|e| fail(e.to_string()))?;
        self.stream
            .write_all(&bytes)
            .map_err(|e| fail(format!("control connection to {server}: {e}")))?;
        self.stream
            .tcp()
            .set_read_timeout(Some(HANDSHAKE_TIMEOUT))
            .ok();
        match self.read(server, "final count")? {
            RrServerMessage::Done {
                requests,
                transactions,
                connections,
            } => Ok(ServerCounts {
                requests,
                transactions,
                connections,
            }),
            RrServerMessage::Error { message } => Err(fail(format!("server: {message}"))),
            other => Err(fail(format!(
                "unexpected answer from the server: {other:?}"
            ))),
        }
    }
}

/// The bytes that open a TCP data connection of a session.
pub(super) fn join_bytes(cookie: u64, request: u32, response: u32) -> Vec<u8> {
    let mut session = RrClientSession::new();
    let mut out = Preamble::Rr.bytes().to_vec();
    out.extend(
        session
            .send(&RrClientMessage::Join {
                cookie,
                request,
                response,
            })
            .expect("join is legal on a new connection"),
    );
    out
}
