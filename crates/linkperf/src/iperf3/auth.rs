//! iperf3's RSA authentication: the keys (PEM, as `openssl genrsa` and
//! `openssl rsa -pubout` write them), the authorized-users file, and the
//! `authtoken` of an iperf3 client's parameters (base64 of the RSA-encrypted
//! text of `linkperf_proto::iperf3::TokenText`). The server side checks a
//! token ([`RsaAuth::check`], logged and rate-limited by `authorize`); the
//! client side makes one ([`encode_token`]).
//!
//! iperf3 3.12-3.16 pad with PKCS#1 v1.5; 3.17 and later with OAEP (SHA-1,
//! OpenSSL's default) unless `--use-pkcs1-padding`. The server accepts both.

use crate::guard::auth::Gate;
use crate::guard::{Guard, Level};
use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine;
use linkperf_proto::iperf3::Params;
use linkperf_proto::iperf3::{parse_users_line, password_hash, token_text, TokenText};
use rsa::pkcs1::{DecodeRsaPrivateKey, DecodeRsaPublicKey};
use rsa::pkcs8::{DecodePrivateKey, DecodePublicKey};
use rsa::rand_core::OsRng;
use rsa::traits::PublicKeyParts;
use rsa::{Oaep, Pkcs1v15Encrypt, RsaPrivateKey, RsaPublicKey};
use std::net::SocketAddr;
use std::path::Path;
use std::sync::{Mutex, OnceLock};
use std::time::{SystemTime, UNIX_EPOCH};
use subtle::ConstantTimeEq;

/// iperf3's default `--time-skew-threshold`, in seconds.
pub const DEFAULT_SKEW_S: u32 = 10;

/// The longest token accepted: base64 of one block of the largest key
/// OpenSSL makes by default (16384 bits).
const MAX_TOKEN: usize = 4 * 2048 / 3 + 4;

/// The padding of the RSA encryption (iperf3 3.12: PKCS#1 v1.5).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Padding {
    Pkcs1,
    Oaep,
}

/// A server's iperf3 authentication: its private key, the users and the
/// largest clock difference accepted.
pub struct RsaAuth {
    key: RsaPrivateKey,
    users: Vec<(String, [u8; 32])>,
    skew_s: i64,
}

impl std::fmt::Debug for RsaAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "RsaAuth({} users)", self.users.len())
    }
}

impl RsaAuth {
    /// Reads the key and the users file; each error is one line naming the file.
    pub fn load(key: &Path, users: &Path, skew_s: u32) -> Result<RsaAuth, String> {
        Ok(RsaAuth {
            key: load_private_key(key)?,
            users: load_users(users)?,
            skew_s: i64::from(skew_s),
        })
    }

    /// The user a client's token proves at `now` (Unix seconds), or why not
    /// (for the log; the client only learns that authorization failed).
    pub fn check(&self, token: Option<&str>, now: i64) -> Result<String, String> {
        let token = token.ok_or("no authentication token (the client gave no --username)")?;
        let text = decode_token(token, &self.key)?;
        let user = linkperf_proto::iperf3::TokenText::check_field("user", &text.user)
            .map(|_| text.user.clone())
            .map_err(|e| format!("token refused: {e}"))?;
        let off = now.saturating_sub(text.timestamp);
        if off > self.skew_s || off < -self.skew_s {
            return Err(format!(
                "user '{}': the token's time is {off} s off this server's clock, beyond --time-skew-threshold {}",
                printable(&user),
                self.skew_s
            ));
        }
        let hash = password_hash(&text.user, &text.password);
        // Every entry is compared, in constant time, known user or not.
        let mut known = false;
        let mut matched = false;
        for (name, stored) in &self.users {
            let same_name = name == &text.user;
            known |= same_name;
            matched |= same_name & bool::from(stored.ct_eq(&hash));
        }
        match (known, matched) {
            (_, true) => Ok(user),
            (true, false) => Err(format!("user '{}': wrong password", printable(&user))),
            (false, _) => Err(format!("unknown user '{}'", printable(&user))),
        }
    }
}

fn printable(s: &str) -> String {
    crate::guard::auth::printable(s)
}

/// The Unix time in seconds, as iperf3 stamps its tokens.
pub fn unix_now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

fn read_pem(path: &Path, flag: &str) -> Result<String, String> {
    let bytes = std::fs::read(path)
        .map_err(|e| format!("{flag} {}: cannot read it: {e}", path.display()))?;
    String::from_utf8(bytes)
        .map_err(|_| format!("{flag} {}: not a PEM file (it is binary)", path.display()))
}

/// An RSA private key in PEM: PKCS#8 (`openssl genrsa` of OpenSSL 3) or
/// PKCS#1 (`BEGIN RSA PRIVATE KEY`, older OpenSSL), unencrypted.
pub fn load_private_key(path: &Path) -> Result<RsaPrivateKey, String> {
    let flag = "--rsa-private-key-path";
    let pem = read_pem(path, flag)?;
    let key = RsaPrivateKey::from_pkcs8_pem(&pem)
        .or_else(|_| RsaPrivateKey::from_pkcs1_pem(&pem))
        .map_err(|_| {
            let what = if pem.contains("ENCRYPTED") {
                "a passphrase-protected key (not supported: decrypt it with 'openssl rsa')"
            } else if pem.contains("PUBLIC KEY") {
                "a public key"
            } else {
                "not an RSA private key"
            };
            format!(
                "{flag} {}: {what}; expected an unencrypted RSA private key in PEM (openssl genrsa -out FILE 2048)",
                path.display()
            )
        })?;
    if key.size() < 128 {
        return Err(format!(
            "{flag} {}: a {}-bit key is too small for iperf3's token; use 1024 bits or more",
            path.display(),
            key.size() * 8
        ));
    }
    Ok(key)
}

/// An RSA public key in PEM (`openssl rsa -pubout`, or `BEGIN RSA PUBLIC KEY`).
pub fn load_public_key(path: &Path) -> Result<RsaPublicKey, String> {
    let flag = "--rsa-public-key-path";
    let pem = read_pem(path, flag)?;
    RsaPublicKey::from_public_key_pem(&pem)
        .or_else(|_| RsaPublicKey::from_pkcs1_pem(&pem))
        .map_err(|_| {
            format!(
                "{flag} {}: not an RSA public key; expected PEM as 'openssl rsa -in private.pem -pubout' writes it",
                path.display()
            )
        })
}

/// An authorized-users file: `USER,SHA256HEX` lines (see
/// `linkperf_proto::iperf3::parse_users_line`). An error names FILE:LINE.
pub fn load_users(path: &Path) -> Result<Vec<(String, [u8; 32])>, String> {
    let flag = "--authorized-users-path";
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("{flag} {}: cannot read it: {e}", path.display()))?;
    let mut users = Vec::new();
    for (i, line) in text.lines().enumerate() {
        match parse_users_line(line) {
            Ok(Some(user)) => users.push(user),
            Ok(None) => {}
            Err(why) => return Err(format!("{flag} {}:{}: {why}", path.display(), i + 1)),
        }
    }
    if users.is_empty() {
        return Err(format!(
            "{flag} {}: no users; expected USER,SHA256HEX lines (the hash: printf '{{USER}}PASSWORD' | sha256sum)",
            path.display()
        ));
    }
    Ok(users)
}

/// Decodes and decrypts a token, trying PKCS#1 v1.5 (iperf3 3.12) and then OAEP.
pub fn decode_token(token: &str, key: &RsaPrivateKey) -> Result<TokenText, String> {
    if token.len() > MAX_TOKEN {
        return Err(format!("the token is {} bytes, too long", token.len()));
    }
    let sealed = BASE64
        .decode(token.trim())
        .map_err(|e| format!("the token is not base64: {e}"))?;
    if sealed.len() != key.size() {
        return Err(format!(
            "the token holds {} bytes, not one block of this server's {}-bit key (another key?)",
            sealed.len(),
            key.size() * 8
        ));
    }
    // iperf3 seals with OAEP (or PKCS#1 v1.5 with --use-pkcs1-padding), and says not
    // which. An OAEP block also passes v1.5's padding check about once in 800 tokens
    // (its first byte is 0, the second is 2 once in 256), so a v1.5 plaintext counts
    // only when it reads as a token.
    let pkcs1 = key
        .decrypt_blinded(&mut OsRng, Pkcs1v15Encrypt, &sealed)
        .map(|plain| TokenText::parse(&plain));
    if let Ok(Ok(text)) = pkcs1 {
        return Ok(text);
    }
    match key.decrypt_blinded(&mut OsRng, Oaep::new::<sha1::Sha1>(), &sealed) {
        Ok(plain) => TokenText::parse(&plain),
        Err(_) => match pkcs1 {
            Ok(Err(unreadable)) => Err(unreadable),
            _ => Err("the token does not decrypt with this server's key (another key?)".into()),
        },
    }
}

/// The token an iperf3 client sends for `user` and `password` at `timestamp`.
pub fn encode_token(
    user: &str,
    password: &str,
    timestamp: i64,
    key: &RsaPublicKey,
    padding: Padding,
) -> Result<String, String> {
    TokenText::check_field("user", user)?;
    TokenText::check_field("password", password)?;
    let text = token_text(user, password, timestamp);
    let sealed = match padding {
        Padding::Pkcs1 => key.encrypt(&mut OsRng, Pkcs1v15Encrypt, text.as_bytes()),
        Padding::Oaep => key.encrypt(&mut OsRng, Oaep::new::<sha1::Sha1>(), text.as_bytes()),
    }
    .map_err(|e| format!("cannot encrypt the token with this public key: {e} (user and password too long for the key?)"))?;
    Ok(BASE64.encode(sealed))
}

/// Checks the RSA token of `params` (and takes it out of them): the user, or
/// the refusal's reason, which is logged as an `auth-failed` event and
/// counted towards the address's failure limit.
pub(super) fn authorize(
    params: &mut Params,
    (rsa, gate): (&RsaAuth, &Gate),
    guard: &Guard,
    peer: SocketAddr,
) -> Result<String, String> {
    if let Some(wait) = gate.blocked(peer.ip()) {
        return Err(format!(
            "iperf3 authentication: too many failures from this address; closed for {wait} s"
        ));
    }
    let token = params.authtoken.take();
    rsa.check(token.as_deref(), unix_now()).map_err(|why| {
        let count = gate.failed(peer.ip());
        let why = format!("iperf3 authentication failed: {why}");
        guard.log.event(
            Level::Warn,
            peer,
            "auth-failed",
            &format!("{why} ({count} failures from this address within a minute)"),
        );
        why
    })
}

/// A client's iperf3 credentials; each test gets a token made at its start.
#[derive(Clone)]
pub struct ClientToken {
    user: String,
    password: String,
    key: RsaPublicKey,
    padding: Padding,
}

impl std::fmt::Debug for ClientToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ClientToken({}, {:?})", self.user, self.padding)
    }
}

impl ClientToken {
    /// Checks that the user and password can travel in a token.
    pub fn new(
        user: &str,
        password: &str,
        key: RsaPublicKey,
        padding: Padding,
    ) -> Result<ClientToken, String> {
        TokenText::check_field("user", user).map_err(|e| format!("--username: {e}"))?;
        TokenText::check_field("password", password)
            .map_err(|e| format!("IPERF3_PASSWORD: {e}"))?;
        let token = ClientToken {
            user: user.into(),
            password: password.into(),
            key,
            padding,
        };
        token.token()?;
        Ok(token)
    }

    /// A token stamped now.
    pub fn token(&self) -> Result<String, String> {
        encode_token(
            &self.user,
            &self.password,
            unix_now(),
            &self.key,
            self.padding,
        )
    }
}

fn client_token_slot() -> &'static Mutex<Option<ClientToken>> {
    static SLOT: OnceLock<Mutex<Option<ClientToken>>> = OnceLock::new();
    SLOT.get_or_init(Mutex::default)
}

/// Sets the process's iperf3 credentials (`--rsa-public-key-path`), as
/// `client::set_default_credentials` does for linkperf's own.
pub fn set_client_token(token: Option<ClientToken>) {
    if let Ok(mut slot) = client_token_slot().lock() {
        *slot = token;
    }
}

/// The process's iperf3 credentials, if set.
pub fn client_token() -> Option<ClientToken> {
    client_token_slot().lock().ok().and_then(|s| s.clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn auth(skew_s: i64) -> (RsaAuth, RsaPublicKey) {
        let key = RsaPrivateKey::new(&mut OsRng, 1024).unwrap();
        let public = key.to_public_key();
        let users = vec![("mario".to_string(), password_hash("mario", "rossi"))];
        (RsaAuth { key, users, skew_s }, public)
    }

    #[test]
    fn a_good_token_passes_and_the_skew_is_checked_both_ways() {
        let (auth, public) = auth(10);
        let now = 1_764_000_000;
        for padding in [Padding::Pkcs1, Padding::Oaep] {
            for (ts, ok) in [
                (now, true),
                (now - 10, true),
                (now + 10, true),
                (now - 11, false),
                (now + 11, false),
            ] {
                let token = encode_token("mario", "rossi", ts, &public, padding).unwrap();
                let got = auth.check(Some(&token), now);
                assert_eq!(got.is_ok(), ok, "{padding:?} ts {ts}: {got:?}");
                if !ok {
                    let e = got.unwrap_err();
                    assert!(e.contains("--time-skew-threshold 10"), "{e}");
                }
            }
        }
    }

    #[test]
    fn an_oaep_token_that_also_passes_pkcs1_padding_is_read_as_oaep() {
        // About one OAEP block in 800 decrypts under PKCS#1 v1.5 to noise (a loaded CI
        // run met one: "the token's text lacks 'user:'"). Find one and read it.
        let (auth, public) = auth(10);
        let now = 1_764_000_000;
        let mut tried = 0;
        let token = loop {
            tried += 1;
            assert!(
                tried <= 50_000,
                "no OAEP token passed PKCS#1 v1.5 in 50,000"
            );
            let token = encode_token("mario", "rossi", now, &public, Padding::Oaep).unwrap();
            let sealed = BASE64.decode(&token).unwrap();
            if auth
                .key
                .decrypt_blinded(&mut OsRng, Pkcs1v15Encrypt, &sealed)
                .is_ok()
            {
                break token;
            }
        };
        println!("the {tried}th OAEP token passed PKCS#1 v1.5's padding check");
        assert_eq!(auth.check(Some(&token), now), Ok("mario".to_string()));
    }

    #[test]
    fn wrong_password_unknown_user_and_garbage_are_refused() {
        let (auth, public) = auth(10);
        let now = unix_now();
        let wrong = encode_token("mario", "bianchi", now, &public, Padding::Pkcs1).unwrap();
        assert!(auth
            .check(Some(&wrong), now)
            .unwrap_err()
            .contains("wrong password"));
        let unknown = encode_token("luigi", "rossi", now, &public, Padding::Pkcs1).unwrap();
        assert!(auth
            .check(Some(&unknown), now)
            .unwrap_err()
            .contains("unknown user"));
        assert!(auth
            .check(None, now)
            .unwrap_err()
            .contains("no authentication token"));
        assert!(auth.check(Some("!!"), now).unwrap_err().contains("base64"));
        let other = RsaPrivateKey::new(&mut OsRng, 1024)
            .unwrap()
            .to_public_key();
        let foreign = encode_token("mario", "rossi", now, &other, Padding::Pkcs1).unwrap();
        assert!(auth
            .check(Some(&foreign), now)
            .unwrap_err()
            .contains("decrypt"));
    }
}
