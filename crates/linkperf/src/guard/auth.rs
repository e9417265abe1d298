//! Who may use a server: the users file (`--auth-users`), which requests
//! need a user (`--auth-required-for`), the check of a client's answer to
//! the server's nonce with a rate limit on failures per source address, and
//! third-party mode's rules (who may order tests, towards which targets, how
//! many). The server asks; this module serves nothing.

use linkperf_proto::auth::{self, Key};
use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::path::Path;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Failed authentications one source address may make per window before
/// its further attempts are refused unchecked.
pub const AUTH_FAILURES: u32 = 5;
/// The window of the failure rate limit.
pub const AUTH_FAILURE_WINDOW: Duration = Duration::from_secs(60);

/// The one refusal for an unknown user and a wrong key alike.
pub const AUTH_FAILED: &str = "authentication failed: unknown user or wrong key";

/// The principals a server knows, by name.
#[derive(Debug, Clone, Default)]
pub struct Users {
    keys: HashMap<String, Key>,
}

impl Users {
    /// Reads a users file: one `NAME:KEY` per line (KEY: 64 hex digits, as
    /// `linkperf server --gen-key NAME` writes it), `#` comments and blank
    /// lines ignored.
    pub fn load(path: &Path) -> Result<Users, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("--auth-users {}: {e}", path.display()))?;
        Users::parse(&text).map_err(|e| format!("--auth-users {}: {e}", path.display()))
    }

    pub fn parse(text: &str) -> Result<Users, String> {
        let mut keys = HashMap::new();
        for (i, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let (name, key) = parse_user_line(line).map_err(|e| format!("line {}: {e}", i + 1))?;
            if keys.insert(name.clone(), key).is_some() {
                return Err(format!("line {}: user '{name}' appears twice", i + 1));
            }
        }
        if keys.is_empty() {
            return Err("no users (one NAME:KEY per line; see linkperf server --gen-key)".into());
        }
        Ok(Users { keys })
    }

    pub fn len(&self) -> usize {
        self.keys.len()
    }

    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// True when `answer` proves `user`'s key for `nonce` and `purpose` (and
    /// the TLS session's `binding` over TLS). An unknown user costs the same
    /// work as a known one.
    pub fn verify(
        &self,
        user: &str,
        nonce: &[u8],
        purpose: &str,
        binding: Option<&[u8]>,
        answer: &str,
    ) -> bool {
        let dummy = Key::from_bytes([0; auth::KEY_LEN]);
        let (key, known) = match self.keys.get(user) {
            Some(k) => (k, true),
            None => (&dummy, false),
        };
        auth::verify_bound(key, nonce, user, purpose, binding, answer) && known
    }
}

/// One `NAME:KEY` line of a users or key file.
pub fn parse_user_line(line: &str) -> Result<(String, Key), String> {
    let (name, key) = line
        .split_once(':')
        .ok_or("expected NAME:KEY (KEY: 64 hexadecimal digits)")?;
    let name = name.trim();
    if !valid_name(name) {
        return Err(format!(
            "'{name}' is not a user name: use 1-64 letters, digits, '.', '_', '-' or '@'"
        ));
    }
    Ok((name.to_string(), Key::parse(key)?))
}

pub fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-' | '@'))
}

/// A new users-file line for `name` with a key from the OS's random
/// generator.
pub fn generate_user_line(name: &str) -> Result<String, String> {
    if !valid_name(name) {
        return Err(format!(
            "--gen-key '{name}': use 1-64 letters, digits, '.', '_', '-' or '@'"
        ));
    }
    let mut key = [0u8; auth::KEY_LEN];
    super::random_bytes(&mut key)?;
    Ok(format!("{name}:{}", Key::from_bytes(key).to_hex()))
}

/// Which requests need an authenticated user.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Required {
    /// Every linkperf test; rr and iperf3 clients (which cannot answer) are refused.
    #[default]
    All,
    /// Third-party requests only.
    ThirdParty,
}

/// A network (address and prefix length), for allow-lists.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Net {
    addr: IpAddr,
    prefix: u8,
}

impl Net {
    /// `ADDR` or `ADDR/PREFIX`.
    pub fn parse(s: &str) -> Result<Net, String> {
        let (a, p) = s.split_once('/').unwrap_or((s, ""));
        let addr: IpAddr = a
            .parse()
            .map_err(|_| format!("'{s}' is not an address or network (e.g. 192.0.2.0/24, ::1)"))?;
        let max = if addr.is_ipv4() { 32 } else { 128 };
        let prefix = if p.is_empty() {
            max
        } else {
            p.parse::<u8>()
                .ok()
                .filter(|&n| n <= max)
                .ok_or_else(|| format!("'{s}': the prefix length must be 0..={max}"))?
        };
        Ok(Net { addr, prefix })
    }

    pub fn contains(&self, ip: IpAddr) -> bool {
        let ip = crate::data::canonical_ip(ip);
        let bits = |ip: IpAddr| -> u128 {
            match ip {
                IpAddr::V4(v) => u128::from(u32::from(v)),
                IpAddr::V6(v) => u128::from(v),
            }
        };
        if ip.is_ipv4() != self.addr.is_ipv4() {
            return false;
        }
        let width = if ip.is_ipv4() { 32 } else { 128 };
        let shift = width - u32::from(self.prefix);
        shift >= width || bits(ip) >> shift == bits(self.addr) >> shift
    }
}

/// A third-party target rule: a network and optionally one port.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TargetRule {
    pub net: Net,
    pub port: Option<u16>,
}

impl TargetRule {
    /// `NET` or `NET,PORT`-style `ADDR[/PREFIX][@PORT]`.
    pub fn parse(s: &str) -> Result<TargetRule, String> {
        let (net, port) = match s.rsplit_once('@') {
            Some((n, p)) => (
                n,
                Some(p.parse::<u16>().map_err(|_| {
                    format!("'{s}': '{p}' is not a port (NET[@PORT], e.g. 192.0.2.0/24@5211)")
                })?),
            ),
            None => (s, None),
        };
        Ok(TargetRule {
            net: Net::parse(net)?,
            port,
        })
    }

    fn allows(&self, addr: SocketAddr) -> bool {
        self.net.contains(addr.ip()) && self.port.is_none_or(|p| p == addr.port())
    }
}

/// Third-party mode's rules (all empty: anyone the server lets in, any
/// linkperf server as target, the default quotas).
#[derive(Debug, Clone)]
pub struct ThirdPartyPolicy {
    /// Users who may order tests; empty: any (authenticated if required).
    pub principals: Vec<String>,
    /// Source networks controllers may connect from; empty: any.
    pub sources: Vec<Net>,
    /// Targets tests may go to; empty: any that answers the linkperf greeting.
    pub targets: Vec<TargetRule>,
    /// Tests one controller (user, or address when anonymous) may start per hour.
    pub max_per_hour: u32,
    /// Tests one controller may run at once.
    pub max_concurrent: u32,
}

impl Default for ThirdPartyPolicy {
    fn default() -> Self {
        ThirdPartyPolicy {
            principals: Vec::new(),
            sources: Vec::new(),
            targets: Vec::new(),
            // Loose enough for a campaign's phases of many flows from one
            // controller; a shared agent tightens them.
            max_per_hour: 3600,
            max_concurrent: 32,
        }
    }
}

impl ThirdPartyPolicy {
    /// May this controller order tests at all?
    pub fn check_controller(&self, principal: Option<&str>, peer: IpAddr) -> Result<(), String> {
        if !self.principals.is_empty()
            && !principal.is_some_and(|p| self.principals.iter().any(|a| a == p))
        {
            return Err(
                "third-party tests are not allowed for this controller (--third-party-principals)"
                    .into(),
            );
        }
        if !self.sources.is_empty() && !self.sources.iter().any(|n| n.contains(peer)) {
            return Err(
                "third-party tests are not allowed from this address (--third-party-sources)"
                    .into(),
            );
        }
        Ok(())
    }

    /// Is `target` on the allow-list (when there is one)?
    pub fn check_target(&self, target: SocketAddr) -> Result<(), String> {
        if self.targets.is_empty() || self.targets.iter().any(|r| r.allows(target)) {
            Ok(())
        } else {
            Err(
                "the target is not among this agent's allowed targets (--third-party-targets)"
                    .into(),
            )
        }
    }
}

/// What the server remembers between connections: failures per address,
/// third-party tests per controller.
#[derive(Default)]
pub struct Gate {
    failures: Mutex<HashMap<IpAddr, (Instant, u32)>>,
    /// Per controller: start times within the last hour, and tests running.
    third_party: Mutex<HashMap<String, (Vec<Instant>, u32)>>,
}

/// A client's answer to a challenge, with what it must prove.
pub struct Answer<'a> {
    pub user: &'a str,
    pub answer: &'a str,
    pub nonce: &'a [u8],
    pub purpose: &'a str,
    /// The TLS session's channel binding, when the connection is TLS.
    pub binding: Option<&'a [u8]>,
}

/// `s` with control characters replaced, for log lines and messages.
pub fn printable(s: &str) -> String {
    s.chars()
        .take(64)
        .map(|c| if c.is_control() { '?' } else { c })
        .collect()
}

/// A running third-party test's share of its controller's quota.
pub struct QuotaPermit<'a> {
    gate: &'a Gate,
    controller: String,
}

impl Drop for QuotaPermit<'_> {
    fn drop(&mut self) {
        if let Ok(mut m) = self.gate.third_party.lock() {
            if let Some((_, running)) = m.get_mut(&self.controller) {
                *running = running.saturating_sub(1);
            }
        }
    }
}

impl Gate {
    /// Seconds left of `ip`'s block when it failed too often, else `None`.
    pub fn blocked(&self, ip: IpAddr) -> Option<u64> {
        let ip = crate::data::canonical_ip(ip);
        let m = self.failures.lock().ok()?;
        let (since, n) = m.get(&ip)?;
        let age = since.elapsed();
        (age < AUTH_FAILURE_WINDOW && *n >= AUTH_FAILURES)
            .then(|| (AUTH_FAILURE_WINDOW - age).as_secs().max(1))
    }

    /// Counts a failure from `ip`; returns the count in the window.
    pub fn failed(&self, ip: IpAddr) -> u32 {
        let ip = crate::data::canonical_ip(ip);
        let Ok(mut m) = self.failures.lock() else {
            return u32::MAX;
        };
        if m.len() > 10_000 {
            m.retain(|_, (since, _)| since.elapsed() < AUTH_FAILURE_WINDOW);
        }
        let entry = m.entry(ip).or_insert((Instant::now(), 0));
        if entry.0.elapsed() >= AUTH_FAILURE_WINDOW {
            *entry = (Instant::now(), 0);
        }
        entry.1 += 1;
        entry.1
    }

    /// Checks a client's answer to the server's challenge.
    /// `Err` holds the refusal to send (the failure is logged and counted,
    /// and an address over the limit is refused unchecked).
    pub fn check(
        &self,
        users: &Users,
        log: &super::EventLog,
        peer: SocketAddr,
        answer: &Answer<'_>,
    ) -> Result<(), String> {
        let ip = peer.ip();
        if let Some(wait) = self.blocked(ip) {
            return Err(format!(
                "too many failed authentications from this address; try again in {wait} s"
            ));
        }
        if users.verify(
            answer.user,
            answer.nonce,
            answer.purpose,
            answer.binding,
            answer.answer,
        ) {
            return Ok(());
        }
        let count = self.failed(ip);
        if count <= AUTH_FAILURES {
            let event = if count == AUTH_FAILURES {
                "rate-limited"
            } else {
                "auth-failed"
            };
            log.event(
                super::Level::Warn,
                peer,
                event,
                &format!(
                    "authentication as '{}' failed ({count} of {AUTH_FAILURES} allowed per minute from this address)",
                    printable(answer.user)
                ),
            );
        }
        Err(AUTH_FAILED.into())
    }

    /// Admits one more third-party test of `controller` within `policy`'s quotas.
    pub fn admit_third_party(
        &self,
        controller: &str,
        policy: &ThirdPartyPolicy,
    ) -> Result<QuotaPermit<'_>, String> {
        let mut m = self
            .third_party
            .lock()
            .map_err(|_| "server state poisoned")?;
        let (starts, running) = m.entry(controller.to_string()).or_default();
        starts.retain(|t| t.elapsed() < Duration::from_secs(3600));
        if *running >= policy.max_concurrent {
            return Err(format!(
                "this controller runs {running} third-party tests, its limit (--third-party-max-concurrent)"
            ));
        }
        if starts.len() >= policy.max_per_hour as usize {
            return Err(format!(
                "this controller started {} third-party tests within the hour, its limit (--third-party-max-per-hour)",
                starts.len()
            ));
        }
        starts.push(Instant::now());
        *running += 1;
        Ok(QuotaPermit {
            gate: self,
            controller: controller.to_string(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn users_file_lines_and_errors() {
        let key = "0f".repeat(32);
        let users = Users::parse(&format!("# comment\n\nalice:{key}\nbob@x: {key}\n")).unwrap();
        assert_eq!(users.len(), 2);
        let e = Users::parse(&format!("alice:{key}\nalice:{key}\n")).unwrap_err();
        assert!(e.contains("line 2") && e.contains("twice"), "{e}");
        let e = Users::parse("alice 1234\n").unwrap_err();
        assert!(e.contains("line 1") && e.contains("NAME:KEY"), "{e}");
        assert!(Users::parse("# none\n").unwrap_err().contains("no users"));
    }

    #[test]
    fn networks_contain_their_addresses_only() {
        let n = Net::parse("10.1.0.0/16").unwrap();
        assert!(n.contains("10.1.200.3".parse().unwrap()));
        assert!(!n.contains("10.2.0.1".parse().unwrap()));
        assert!(n.contains("::ffff:10.1.0.9".parse().unwrap()));
        assert!(Net::parse("0.0.0.0/0")
            .unwrap()
            .contains("8.8.8.8".parse().unwrap()));
        assert!(Net::parse("::1").unwrap().contains("::1".parse().unwrap()));
        assert!(Net::parse("10.0.0.0/33").is_err());
        let r = TargetRule::parse("127.0.0.1@5211").unwrap();
        assert!(r.allows("127.0.0.1:5211".parse().unwrap()));
        assert!(!r.allows("127.0.0.1:22".parse().unwrap()));
    }

    #[test]
    fn quotas_count_per_controller() {
        let gate = Gate::default();
        let policy = ThirdPartyPolicy {
            max_per_hour: 3,
            max_concurrent: 1,
            ..Default::default()
        };
        let first = gate.admit_third_party("a", &policy).unwrap();
        let e = gate.admit_third_party("a", &policy).err().unwrap();
        assert!(e.contains("--third-party-max-concurrent"), "{e}");
        assert!(gate.admit_third_party("b", &policy).is_ok());
        drop(first);
        drop(gate.admit_third_party("a", &policy).unwrap());
        drop(gate.admit_third_party("a", &policy).unwrap());
        let e = gate.admit_third_party("a", &policy).err().unwrap();
        assert!(e.contains("--third-party-max-per-hour"), "{e}");
    }
}
