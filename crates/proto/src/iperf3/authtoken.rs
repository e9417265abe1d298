//! The text inside iperf3's RSA authentication token and the lines of its
//! authorized-users file, without any cryptography or I/O (the RSA and
//! base64 layers are in `linkperf::iperf3::auth`).
//!
//! Facts from iperf3's source (src/iperf_auth.c, 3.12): the client encrypts
//! the text `user: USER\npwd:  PASSWORD\nts:   SECONDS` (SECONDS: the Unix
//! time as a decimal integer) with the server's RSA public key; the server
//! reads it back with `sscanf` on the same format, so user and password are
//! runs of non-whitespace, any whitespace separates the fields and bytes
//! after the number are ignored. The users file holds `USER,HASH` lines,
//! HASH being the lowercase hex SHA-256 of `{USER}PASSWORD`; empty lines,
//! lines starting with `#` and lines without a comma are skipped.

use sha2::{Digest, Sha256};

/// The longest user or password linkperf takes from a token: the plaintext
/// fits in one RSA block anyway (at most 512 bytes for a 4096-bit key).
pub const MAX_FIELD: usize = 512;

/// What a decrypted token says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenText {
    pub user: String,
    pub password: String,
    /// Seconds since the Unix epoch, as the client's clock read them.
    pub timestamp: i64,
}

/// The plaintext a client encrypts. Neither field may contain whitespace
/// (the server could not read it back): checked by [`TokenText::check_field`].
pub fn token_text(user: &str, password: &str, timestamp: i64) -> String {
    format!("user: {user}\npwd:  {password}\nts:   {timestamp}")
}

impl TokenText {
    /// Why `value` (a user or a password) cannot travel in a token, if it cannot.
    pub fn check_field(what: &str, value: &str) -> Result<(), String> {
        if value.is_empty() {
            return Err(format!("the {what} is empty"));
        }
        if value.len() > MAX_FIELD {
            return Err(format!("the {what} is longer than {MAX_FIELD} bytes"));
        }
        if value.bytes().any(|b| is_space(b) || b == 0) {
            return Err(format!(
                "the {what} contains whitespace, which iperf3's token cannot carry"
            ));
        }
        Ok(())
    }

    /// Reads a decrypted token as iperf3's server does (`sscanf` on the
    /// format above); the text ends at its first NUL byte.
    pub fn parse(plaintext: &[u8]) -> Result<TokenText, String> {
        let end = plaintext
            .iter()
            .position(|&b| b == 0)
            .unwrap_or(plaintext.len());
        let mut rest = &plaintext[..end];
        let user = field(&mut rest, b"user:", "user")?;
        let password = field(&mut rest, b"pwd:", "password")?;
        literal(&mut rest, b"ts:")?;
        let timestamp = integer(&mut rest)?;
        Ok(TokenText {
            user,
            password,
            timestamp,
        })
    }
}

/// C's `isspace` in the C locale (Rust's ASCII whitespace lacks \v).
fn is_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r')
}

/// Skips whitespace, as a whitespace directive of `sscanf` does.
fn skip_space(rest: &mut &[u8]) {
    let n = rest.iter().take_while(|&&b| is_space(b)).count();
    *rest = &rest[n..];
}

fn literal(rest: &mut &[u8], word: &[u8]) -> Result<(), String> {
    skip_space(rest);
    match rest.strip_prefix(word) {
        Some(after) => {
            *rest = after;
            Ok(())
        }
        None => Err(format!(
            "the token's text lacks '{}'",
            String::from_utf8_lossy(word)
        )),
    }
}

/// `word` then a run of non-whitespace bytes (a `%s`), as UTF-8.
fn field(rest: &mut &[u8], word: &[u8], what: &str) -> Result<String, String> {
    literal(rest, word)?;
    skip_space(rest);
    let n = rest.iter().take_while(|&&b| !is_space(b)).count();
    if n == 0 {
        return Err(format!("the token's {what} is empty"));
    }
    if n > MAX_FIELD {
        return Err(format!(
            "the token's {what} is longer than {MAX_FIELD} bytes"
        ));
    }
    let value = std::str::from_utf8(&rest[..n])
        .map_err(|_| format!("the token's {what} is not UTF-8"))?
        .to_string();
    *rest = &rest[n..];
    Ok(value)
}

/// An optionally signed decimal integer (a `%" PRId64 "`); what follows is ignored.
fn integer(rest: &mut &[u8]) -> Result<i64, String> {
    skip_space(rest);
    let (negative, digits) = match rest.first() {
        Some(b'-') => (true, &rest[1..]),
        Some(b'+') => (false, &rest[1..]),
        _ => (false, *rest),
    };
    let n = digits.iter().take_while(|b| b.is_ascii_digit()).count();
    if n == 0 {
        return Err("the token's timestamp is not a number".into());
    }
    let mut value: i64 = 0;
    for &d in &digits[..n] {
        value = value
            .checked_mul(10)
            .and_then(|v| v.checked_sub(i64::from(d - b'0')))
            .ok_or("the token's timestamp is out of range")?;
    }
    if !negative {
        value = value
            .checked_neg()
            .ok_or("the token's timestamp is out of range")?;
    }
    *rest = &digits[n..];
    Ok(value)
}

/// iperf3's stored password: SHA-256 of `{user}password`.
pub fn password_hash(user: &str, password: &str) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update(b"{");
    h.update(user.as_bytes());
    h.update(b"}");
    h.update(password.as_bytes());
    h.finalize().into()
}

/// One line of an authorized-users file: `None` for what iperf3 skips (empty,
/// `#` comment), else the user and the password hash. Stricter than iperf3,
/// which silently skips a line without a comma and crashes on one with
/// nothing after it: such a line, or a hash that is not 64 hex digits, is an
/// error, so a typo does not lock a user out unnoticed.
pub fn parse_users_line(line: &str) -> Result<Option<(String, [u8; 32])>, String> {
    let line = line.trim_end_matches(['\r', '\n']);
    if line.is_empty() || line.starts_with('#') {
        return Ok(None);
    }
    let mut parts = line.split(',');
    let user = parts.next().unwrap_or_default();
    let hash = parts.next().ok_or("expected USER,SHA256HEX (no comma)")?;
    if user.is_empty() || user.chars().any(char::is_whitespace) {
        return Err("expected USER,SHA256HEX (the user is empty or has whitespace)".into());
    }
    if parts.next().is_some() {
        return Err("expected USER,SHA256HEX (more than one comma)".into());
    }
    let hash = decode_hash(hash.trim()).ok_or(
        "expected USER,SHA256HEX (the hash must be 64 hex digits: sha256 of {USER}PASSWORD)",
    )?;
    Ok(Some((user.to_string(), hash)))
}

fn decode_hash(text: &str) -> Option<[u8; 32]> {
    if text.len() != 64 || !text.is_ascii() {
        return None;
    }
    let mut out = [0u8; 32];
    for (i, byte) in out.iter_mut().enumerate() {
        *byte = u8::from_str_radix(&text[2 * i..2 * i + 2], 16).ok()?;
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_what_a_client_writes() {
        let text = token_text("mario", "rossi", 1_764_000_000);
        assert_eq!(text, "user: mario\npwd:  rossi\nts:   1764000000");
        let t = TokenText::parse(text.as_bytes()).unwrap();
        assert_eq!(t.user, "mario");
        assert_eq!(t.password, "rossi");
        assert_eq!(t.timestamp, 1_764_000_000);
    }

    #[test]
    fn reads_as_sscanf_does() {
        // Any whitespace separates, bytes after the number and a NUL end it.
        let t = TokenText::parse(b"user:a pwd:\tb\r\nts:-5xyz\0junk").unwrap();
        assert_eq!(
            (t.user.as_str(), t.password.as_str(), t.timestamp),
            ("a", "b", -5)
        );
        assert!(TokenText::parse(b"user: a\npwd:  b\nts:   ").is_err());
        assert!(TokenText::parse(b"user: a\npw:  b\nts: 1").is_err());
        assert!(TokenText::parse(b"user: a\npwd:  b\nts: 99999999999999999999").is_err());
        assert_eq!(
            TokenText::parse(b"user: a\npwd: b\nts: -9223372036854775808")
                .unwrap()
                .timestamp,
            i64::MIN
        );
    }

    #[test]
    fn hash_is_iperf3s_salted_sha256() {
        // `printf '{mario}rossi' | sha256sum` (iperf3's documented example user).
        let hex: String = password_hash("mario", "rossi")
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        assert_eq!(
            hex,
            "bf7a49a846d44b454a5d11e7acfaf13d138bbe0b7483aa3e050879700572709b"
        );
    }

    #[test]
    fn users_lines() {
        let h = "bf7a49a846d44b454a5d11e7acfaf13d138bbe0b7483aa3e050879700572709b";
        assert_eq!(parse_users_line("# c").unwrap(), None);
        assert_eq!(parse_users_line("\r\n").unwrap(), None);
        let (u, hash) = parse_users_line(&format!("mario,{h}\r\n"))
            .unwrap()
            .unwrap();
        assert_eq!(
            (u.as_str(), hash),
            ("mario", password_hash("mario", "rossi"))
        );
        assert!(parse_users_line("mario").is_err());
        assert!(parse_users_line("mario,").is_err());
        assert!(parse_users_line(&format!(",{h}")).is_err());
        assert!(parse_users_line(&format!("mario,{h},x")).is_err());
    }
}
