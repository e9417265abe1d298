//! The 37-byte cookie that opens every iperf3 connection (control and TCP
//! data): how it is made and recognised. Knows nothing of states or JSON.

/// Cookie length on the wire: 36 characters of [a-z2-7] and a NUL.
pub const COOKIE_LEN: usize = 37;
const COOKIE_ALPHABET: &[u8; 32] = b"abcdefghijklmnopqrstuvwxyz234567";

/// A 37-byte cookie built from 36 random bytes.
pub fn make_cookie(random: &[u8; 36]) -> [u8; COOKIE_LEN] {
    let mut out = [0u8; COOKIE_LEN];
    for (o, r) in out.iter_mut().zip(random) {
        *o = COOKIE_ALPHABET[(*r % 32) as usize];
    }
    out
}

/// True when `bytes` is a well-formed iperf3 cookie.
pub fn is_cookie(bytes: &[u8]) -> bool {
    bytes.len() == COOKIE_LEN
        && bytes[36] == 0
        && bytes[..36].iter().all(|b| COOKIE_ALPHABET.contains(b))
}

/// True when the first bytes of a connection could start an iperf3 cookie.
pub fn could_be_cookie(prefix: &[u8]) -> bool {
    prefix.iter().take(36).all(|b| COOKIE_ALPHABET.contains(b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cookie_alphabet_and_nul() {
        let c = make_cookie(&[0u8; 36]);
        assert_eq!(&c[..36], "a".repeat(36).as_bytes());
        assert_eq!(c[36], 0);
        assert!(is_cookie(&c));
        let c = make_cookie(&[31u8; 36]);
        assert_eq!(c[0], b'7');
        let mut bad = c;
        bad[36] = b'a';
        assert!(!is_cookie(&bad));
        bad = c;
        bad[3] = b'1'; // digits 0, 1, 8, 9 are not base32
        assert!(!is_cookie(&bad));
        assert!(could_be_cookie(b"abcd"));
        assert!(!could_be_cookie(b"LPC1"));
    }
}
