//! The server's side of authentication and third-party admission: the
//! nonce in the Welcome, checking a session's answer (with the failure rate
//! limit), refusing iperf3 clients when every test needs a user (unless they
//! bring iperf3's RSA token, checked in `iperf3::server`), and
//! the checks before a third-party test (controller, target, quota, and a
//! linkperf greeting from the target). The rules live in `guard::auth`.

use super::session::ControlSession;
use crate::guard::auth::{printable, Answer, Gate, QuotaPermit, Required, ThirdPartyPolicy, Users};
use crate::guard::{self, Guard};
use linkperf_proto::auth::{purpose_test, purpose_third_party, NONCE_LEN};
use linkperf_proto::iperf3::State;
use linkperf_proto::{ClientMessage, Preamble};
use std::io::Write;
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long a refused third-party probe takes at least, whatever the target
/// did: a closed port, a filtered one and a foreign service look the same.
const PROBE_TIME: Duration = Duration::from_secs(3);

/// Who may use the server, and what it remembers about them.
pub(super) struct Access {
    pub users: Option<Arc<Users>>,
    pub required: Required,
    pub policy: ThirdPartyPolicy,
    pub gate: Gate,
    /// TLS towards third-party targets.
    pub target_tls: Option<Arc<crate::tls::ClientTls>>,
    /// iperf3 clients authenticate with iperf3's RSA scheme instead.
    pub iperf3_rsa: Option<Arc<crate::iperf3::auth::RsaAuth>>,
}

/// A fresh nonce when the server knows users.
pub(super) fn nonce(access: &Access) -> Result<Option<Vec<u8>>, String> {
    if access.users.is_none() {
        return Ok(None);
    }
    let mut nonce = vec![0u8; NONCE_LEN];
    guard::random_bytes(&mut nonce)?;
    Ok(Some(nonce))
}

/// True when `preamble`'s protocol cannot authenticate (iperf3 without
/// `--rsa-private-key-path`) but the server requires it of every test: the
/// client gets its protocol's refusal.
pub(super) fn refuse_unauthenticated(
    stream: &mut TcpStream,
    peer: SocketAddr,
    preamble: Option<Preamble>,
    (access, server): (&Access, &Guard),
    deadline: Instant,
) -> bool {
    if access.users.is_none() || access.required != Required::All {
        return false;
    }
    if preamble.is_none() && access.iperf3_rsa.is_some() {
        // iperf3 clients answer with their RSA token in the parameters.
        return false;
    }
    let why = "this server requires authentication of every test (--auth-required-for all)";
    match preamble {
        None => {
            // iperf3: read the rest of its cookie, then deny access as a busy
            // iperf3 server does.
            let mut rest = [0u8; linkperf_proto::iperf3::COOKIE_LEN - Preamble::LEN];
            if guard::read_exact_by(stream, &mut rest, deadline).is_ok() {
                let _ = stream.write_all(&[State::AccessDenied.byte()]);
            }
            server.refused(peer, &format!("iperf3 or unknown protocol: {why}"));
        }
        Some(_) => return false,
    }
    true
}

impl ControlSession {
    /// Checks the session's answer (if any) against the nonce; returns the
    /// user, or the log line after refusing. A request that needs a user
    /// and has none is refused, and so is any wrong answer.
    pub(super) fn authenticate(
        &self,
        access: &Access,
        nonce: Option<&[u8]>,
        answer: Option<(String, String)>,
        request: &ClientMessage,
    ) -> Result<Option<String>, String> {
        let (purpose, third_party) = match request {
            ClientMessage::ThirdParty { target, port, .. }
            | ClientMessage::ThirdPartyRr { target, port, .. } => {
                (purpose_third_party(target, *port), true)
            }
            _ => (purpose_test(), false),
        };
        let (Some(users), Some(nonce)) = (&access.users, nonce) else {
            return match answer {
                Some(_) => self.refuse(
                    "this server has no users (no --auth-users); run without --username".into(),
                ),
                None => Ok(None),
            };
        };
        let Some((user, answer)) = answer else {
            if access.required == Required::All || third_party {
                return self
                    .refuse(
                        "this server requires authentication: give --username and --key-file (or LINKPERF_USER and LINKPERF_KEY)"
                            .into(),
                    );
            }
            return Ok(None);
        };
        let checked = access.gate.check(
            users,
            &self.guard.log,
            self.peer,
            &Answer {
                user: &user,
                answer: &answer,
                nonce,
                purpose: &purpose,
                binding: self.control.binding(),
            },
        );
        match checked {
            Ok(()) => Ok(Some(user)),
            Err(refusal) => self.refuse(refusal),
        }
    }

    /// Third-party admission: the controller, the target (resolved once,
    /// so the address checked is the address tested), the quota, and a
    /// linkperf greeting from the target. Returns the target's address and
    /// the quota share, or the refusal to send.
    pub(super) fn third_party_checks<'c>(
        &self,
        access: &'c Access,
        principal: Option<&str>,
        target: &str,
        port: u16,
    ) -> Result<(String, QuotaPermit<'c>), String> {
        let policy = &access.policy;
        policy.check_controller(principal, self.peer.ip())?;
        let addr =
            crate::client::resolve(target, port, None).map_err(|_| unreachable(target, port))?;
        policy.check_target(addr)?;
        let controller = principal
            .map(|p| format!("user {p}"))
            .unwrap_or_else(|| crate::data::canonical_ip(self.peer.ip()).to_string());
        let quota = access.gate.admit_third_party(&controller, policy)?;
        let started = Instant::now();
        let tls = access.target_tls.as_deref();
        if crate::client::greet_with(&addr.ip().to_string(), port, tls).is_err() {
            std::thread::sleep(PROBE_TIME.saturating_sub(started.elapsed()));
            return Err(unreachable(target, port));
        }
        Ok((addr.ip().to_string(), quota))
    }
}

/// The one refusal for any target that is not a linkperf server, whatever
/// it is: nothing of its answer, nor whether anything listens, is told.
fn unreachable(target: &str, port: u16) -> String {
    format!(
        "third-party test towards {}:{port} refused: the target did not answer as a linkperf server",
        printable(target)
    )
}
