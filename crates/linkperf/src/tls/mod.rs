//! TLS for control connections (rustls, `ring` provider, TLS 1.3 only): the
//! server's certificate and key (`--tls-cert`, `--tls-key`), what a client
//! trusts (a CA file, or a pin: the SHA-256 of the server's certificate),
//! making a self-signed pair, and the channel binding that ties an
//! authentication answer to one TLS session. `channel` runs the handshakes
//! and carries the bytes; data connections never use TLS.
//!
//! TLS 1.3 only: its exporter (RFC 8446 section 7.5) is bound to the whole
//! handshake, which TLS 1.2's is not without extended master secrets.

mod channel;
mod config;
mod verify;

pub use channel::{accept, connect, read_exact_within, Channel, BINDING_LABEL, BINDING_LEN};
pub use config::{generate_self_signed, parse_pin, ClientTls, ServerTls, Trust};
pub use verify::pin_of;

/// True when the first bytes of a connection are a TLS handshake record
/// (a ClientHello), not one of linkperf's preambles or an iperf3 cookie.
pub fn is_client_hello(first: &[u8]) -> bool {
    first.len() >= 2 && first[0] == 0x16 && first[1] == 0x03
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pins_read_with_or_without_colons() {
        let hex = "ab".repeat(32);
        assert_eq!(parse_pin(&hex).unwrap(), [0xab; 32]);
        let colons = vec!["AB"; 32].join(":");
        assert_eq!(parse_pin(&colons).unwrap(), [0xab; 32]);
        assert!(parse_pin("abcd").unwrap_err().contains("64 hexadecimal"));
    }

    #[test]
    fn a_generated_pair_loads_with_its_pin_and_a_private_key_file() {
        let dir = std::env::temp_dir().join(format!("lp-tls-unit-{}", std::process::id()));
        let pin = generate_self_signed(&dir, &["localhost".into(), "127.0.0.1".into()]).unwrap();
        let server = ServerTls::load(&dir.join("cert.pem"), &dir.join("key.pem"), false).unwrap();
        assert_eq!(server.pin, pin);
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(dir.join("key.pem"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
