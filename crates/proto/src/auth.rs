//! Challenge-response authentication of a control connection, without I/O.
//!
//! A server with a users file puts a random nonce in its `Welcome`; a client
//! with a key answers with `ClientMessage::Auth`: its user name and
//! HMAC-SHA256(key, context), where the context binds the nonce, the user,
//! the protocol version and what the session asks for (a test, or a
//! third-party test towards one target and port). The key never crosses the
//! wire; an answer is good for one nonce and one request only. The server
//! compares in constant time. Over TLS the context also binds the TLS
//! session's exporter value (RFC 8446 section 7.5), so an answer a relay
//! saw on one TLS session is worthless on the relay's own session.

use hmac::{Hmac, Mac};
use sha2::Sha256;
use subtle::ConstantTimeEq;

/// Bytes of a key (256 bits).
pub const KEY_LEN: usize = 32;
/// Bytes of a server's nonce.
pub const NONCE_LEN: usize = 32;

/// A user's secret key.
#[derive(Clone, PartialEq, Eq)]
pub struct Key([u8; KEY_LEN]);

impl std::fmt::Debug for Key {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Key(..)")
    }
}

impl Key {
    pub fn from_bytes(bytes: [u8; KEY_LEN]) -> Key {
        Key(bytes)
    }

    /// Reads a key written as 64 hexadecimal digits.
    pub fn parse(text: &str) -> Result<Key, String> {
        let bytes = from_hex(text.trim())
            .filter(|b| b.len() == KEY_LEN)
            .ok_or_else(|| {
                format!(
                    "a key is {KEY_LEN} bytes written as {} hexadecimal digits",
                    KEY_LEN * 2
                )
            })?;
        let mut key = [0u8; KEY_LEN];
        key.copy_from_slice(&bytes);
        Ok(Key(key))
    }

    pub fn to_hex(&self) -> String {
        to_hex(&self.0)
    }
}

/// What a session asks for, bound into the answer so that an answer for one
/// request cannot authorise another.
pub fn purpose_test() -> String {
    "test".into()
}

/// The purpose of an rr session's answer.
pub fn purpose_rr() -> String {
    "rr".into()
}

/// The purpose of a third-party request towards `target`:`port`.
pub fn purpose_third_party(target: &str, port: u16) -> String {
    format!("third-party {target} {port}")
}

fn context_mac(
    key: &Key,
    nonce: &[u8],
    user: &str,
    purpose: &str,
    binding: Option<&[u8]>,
) -> Hmac<Sha256> {
    let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(&key.0).expect("HMAC takes any key length");
    mac.update(b"linkperf-auth-v1\0");
    mac.update(&crate::PROTOCOL_VERSION.to_be_bytes());
    // Each variable part is length-prefixed so no two contexts share bytes.
    for part in [nonce, user.as_bytes(), purpose.as_bytes()] {
        mac.update(&(part.len() as u64).to_be_bytes());
        mac.update(part);
    }
    // A fourth part only over TLS: answers on plain connections stay as
    // they were, and a bound answer never equals an unbound one.
    if let Some(binding) = binding {
        mac.update(b"tls-exporter");
        mac.update(&(binding.len() as u64).to_be_bytes());
        mac.update(binding);
    }
    mac
}

/// The client's answer to `nonce` on a plain connection, hex encoded.
pub fn answer(key: &Key, nonce: &[u8], user: &str, purpose: &str) -> String {
    answer_bound(key, nonce, user, purpose, None)
}

/// The client's answer, bound to a TLS session's exporter value when the
/// connection is TLS.
pub fn answer_bound(
    key: &Key,
    nonce: &[u8],
    user: &str,
    purpose: &str,
    binding: Option<&[u8]>,
) -> String {
    to_hex(
        &context_mac(key, nonce, user, purpose, binding)
            .finalize()
            .into_bytes(),
    )
}

/// True when `answer` (hex) is the right answer on a plain connection.
pub fn verify(key: &Key, nonce: &[u8], user: &str, purpose: &str, answer: &str) -> bool {
    verify_bound(key, nonce, user, purpose, None, answer)
}

/// True when `answer` (hex) is the right answer for this connection's
/// binding (none: plain); constant time in its bytes.
pub fn verify_bound(
    key: &Key,
    nonce: &[u8],
    user: &str,
    purpose: &str,
    binding: Option<&[u8]>,
    answer: &str,
) -> bool {
    let expected = context_mac(key, nonce, user, purpose, binding)
        .finalize()
        .into_bytes();
    let given = from_hex(answer).unwrap_or_default();
    // A wrong length compares against the expected bytes all the same.
    let padded: Vec<u8> = if given.len() == expected.len() {
        given
    } else {
        vec![0; expected.len()]
    };
    let same: bool = expected.as_slice().ct_eq(&padded).into();
    same && answer.len() == expected.len() * 2
}

pub fn to_hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

pub fn from_hex(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) || !text.is_ascii() {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&text[i..i + 2], 16).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hmac_sha256_matches_rfc_4231_case_2() {
        // RFC 4231 test case 2: key "Jefe", data "what do ya want for nothing?".
        let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(b"Jefe").unwrap();
        mac.update(b"what do ya want for nothing?");
        assert_eq!(
            to_hex(&mac.finalize().into_bytes()),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
    }

    #[test]
    fn an_answer_holds_for_its_nonce_user_and_purpose_only() {
        let key = Key::from_bytes([7; KEY_LEN]);
        let nonce = [1u8; NONCE_LEN];
        let good = answer(&key, &nonce, "alice", "test");
        assert!(verify(&key, &nonce, "alice", "test", &good));
        assert!(!verify(&key, &[2; NONCE_LEN], "alice", "test", &good));
        assert!(!verify(&key, &nonce, "bob", "test", &good));
        assert!(!verify(&key, &nonce, "alice", "third-party x 1", &good));
        assert!(!verify(
            &Key::from_bytes([8; KEY_LEN]),
            &nonce,
            "alice",
            "test",
            &good
        ));
        assert!(!verify(&key, &nonce, "alice", "test", &good[..62]));
        assert!(!verify(&key, &nonce, "alice", "test", "zz"));
    }

    #[test]
    fn a_bound_answer_holds_for_its_tls_session_only() {
        let key = Key::from_bytes([7; KEY_LEN]);
        let nonce = [1u8; NONCE_LEN];
        let (a, b) = ([3u8; 32], [4u8; 32]);
        let bound = answer_bound(&key, &nonce, "alice", "test", Some(&a));
        assert!(verify_bound(
            &key,
            &nonce,
            "alice",
            "test",
            Some(&a),
            &bound
        ));
        assert!(!verify_bound(
            &key,
            &nonce,
            "alice",
            "test",
            Some(&b),
            &bound
        ));
        assert!(!verify(&key, &nonce, "alice", "test", &bound));
        let plain = answer(&key, &nonce, "alice", "test");
        assert!(!verify_bound(
            &key,
            &nonce,
            "alice",
            "test",
            Some(&a),
            &plain
        ));
    }

    #[test]
    fn keys_are_64_hex_digits() {
        let key = Key::parse(&"ab".repeat(32)).unwrap();
        assert_eq!(key.to_hex(), "ab".repeat(32));
        assert!(Key::parse("abcd").unwrap_err().contains("64 hexadecimal"));
        assert!(Key::parse(&"zz".repeat(32)).is_err());
    }
}
