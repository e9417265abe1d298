//! Harness of iperf3's RSA token text and users-file lines (the decrypted
//! plaintext a stranger controls once it holds the server's public key).

use super::checks::Input;
use crate::iperf3::{parse_users_line, token_text, TokenText};

/// First byte: bit 0 the users-file reader instead of the token reader.
/// A token that reads back is written again and must read back the same;
/// a users line that reads has a user without whitespace.
pub fn iperf3_authtoken(data: &[u8]) {
    let mut input = Input::new(data);
    let mode = input.byte();
    let rest = input.rest();
    if mode & 1 != 0 {
        for line in String::from_utf8_lossy(rest).split('\n') {
            if let Ok(Some((user, _))) = parse_users_line(line) {
                assert!(!user.is_empty() && !user.contains(char::is_whitespace));
            }
        }
        return;
    }
    let Ok(t) = TokenText::parse(rest) else {
        return;
    };
    assert!(!t.user.is_empty() && !t.password.is_empty());
    let again = TokenText::parse(token_text(&t.user, &t.password, t.timestamp).as_bytes());
    assert_eq!(again.as_ref(), Ok(&t), "a token read back differs");
}
