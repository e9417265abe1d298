//! A control connection's byte channel, plain or TLS. The TLS state sits
//! behind a mutex shared by the reader thread and the writers, held only
//! while bytes are moved in memory or written: the reader waits on the
//! socket without it, so a writer is never stuck behind a silent peer.

use super::config::{ClientTls, ServerTls, Trust};
use rustls::pki_types::ServerName;
use std::io::{self, ErrorKind, Read, Write};
use std::net::TcpStream;
use std::os::fd::AsRawFd;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The exporter label of the authentication's channel binding.
pub const BINDING_LABEL: &[u8] = b"EXPORTER-linkperf-auth-v1";
/// Bytes of the channel binding.
pub const BINDING_LEN: usize = 32;

/// Ciphertext read from the socket at a time: a control message is a
/// record or two, and a larger record just takes more reads.
const READ_CHUNK: usize = 4 * 1024;

/// One end of a control connection.
pub struct Channel {
    tcp: TcpStream,
    tls: Option<Arc<Mutex<rustls::Connection>>>,
    /// Ciphertext read from the socket and not yet given to rustls.
    pending: Vec<u8>,
    binding: Option<[u8; BINDING_LEN]>,
}

impl From<TcpStream> for Channel {
    fn from(tcp: TcpStream) -> Channel {
        Channel::plain(tcp)
    }
}

impl Channel {
    pub fn plain(tcp: TcpStream) -> Channel {
        Channel {
            tcp,
            tls: None,
            pending: Vec::new(),
            binding: None,
        }
    }

    fn with_tls(tcp: TcpStream, conn: rustls::Connection) -> Result<Channel, String> {
        let mut binding = [0u8; BINDING_LEN];
        conn.export_keying_material(&mut binding, BINDING_LABEL, None)
            .map_err(|e| format!("TLS exporter: {e}"))?;
        Ok(Channel {
            tcp,
            tls: Some(Arc::new(Mutex::new(conn))),
            pending: Vec::new(),
            binding: Some(binding),
        })
    }

    pub fn tcp(&self) -> &TcpStream {
        &self.tcp
    }

    pub fn is_tls(&self) -> bool {
        self.tls.is_some()
    }

    /// The TLS session's exporter value, which both ends (and only they)
    /// compute: an authentication answer bound to it is good on this TLS
    /// session only.
    pub fn binding(&self) -> Option<[u8; BINDING_LEN]> {
        self.binding
    }

    /// A second handle on the same connection (for the writer).
    pub fn try_clone(&self) -> io::Result<Channel> {
        Ok(Channel {
            tcp: self.tcp.try_clone()?,
            tls: self.tls.clone(),
            pending: Vec::new(),
            binding: self.binding,
        })
    }

    /// Ends the connection (with a TLS close_notify first).
    pub fn shutdown(&self) {
        if let Some(tls) = &self.tls {
            if let Ok(mut c) = tls.lock() {
                c.send_close_notify();
                let _ = flush_tls(&mut c, &self.tcp);
            }
        }
        let _ = self.tcp.shutdown(std::net::Shutdown::Both);
    }

    /// `read_exact` that must finish by `deadline` (the handshake's steps).
    pub fn read_exact_by(&mut self, buf: &mut [u8], deadline: Instant) -> Result<(), String> {
        let read = read_exact_within(buf, deadline, &mut |b, left| {
            let _ = self.tcp.set_read_timeout(Some(left));
            self.read(b)
        });
        let _ = self.tcp.set_read_timeout(None);
        read
    }
}

/// `read_exact` that must finish by `deadline`, however slowly the bytes
/// come: `read` is given the time left as its timeout each time, not a
/// fresh one per read.
pub fn read_exact_within(
    buf: &mut [u8],
    deadline: Instant,
    read: &mut dyn FnMut(&mut [u8], std::time::Duration) -> io::Result<usize>,
) -> Result<(), String> {
    let mut got = 0;
    while got < buf.len() {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err("handshake deadline passed".into());
        }
        match read(&mut buf[got..], left) {
            Ok(0) => return Err("closed during the handshake".into()),
            Ok(n) => got += n,
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                return Err("handshake deadline passed".into())
            }
            Err(e) => return Err(format!("connection failed: {e}")),
        }
    }
    Ok(())
}

fn flush_tls(conn: &mut rustls::Connection, mut tcp: &TcpStream) -> io::Result<()> {
    while conn.wants_write() {
        conn.write_tls(&mut tcp)?;
    }
    Ok(())
}

impl Read for Channel {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.read_socket(buf, true)
    }
}

impl Channel {
    /// What has arrived, without waiting: `WouldBlock` when the peer sent
    /// nothing more (for a TLS channel, no whole record). For a reader that
    /// waits on many sockets at once (`poll(2)`).
    pub fn read_now(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.read_socket(buf, false)
    }

    fn read_socket(&mut self, buf: &mut [u8], wait: bool) -> io::Result<usize> {
        let Some(tls) = self.tls.clone() else {
            return recv(&self.tcp, buf, wait);
        };
        loop {
            {
                let mut c = tls
                    .lock()
                    .map_err(|_| io::Error::other("TLS state poisoned"))?;
                match c.reader().read(buf) {
                    Ok(n) => return Ok(n),
                    Err(e) if e.kind() == ErrorKind::WouldBlock => {}
                    Err(e) => return Err(e),
                }
                if !self.pending.is_empty() {
                    // Never an empty slice: rustls takes that for the end.
                    let used = c.read_tls(&mut &self.pending[..])?;
                    self.pending.drain(..used);
                    let processed = c.process_new_packets();
                    // An alert to send (or a key update's answer) goes out
                    // before an error is reported.
                    let _ = flush_tls(&mut c, &self.tcp);
                    processed.map_err(|e| io::Error::new(ErrorKind::InvalidData, e))?;
                    continue;
                }
            }
            // Waits for the peer without holding the TLS state. The
            // ciphertext goes straight into `pending`: a 16 KiB array on the
            // stack would be touched by every reader thread (stack probes).
            let held = self.pending.len();
            self.pending.resize(held + READ_CHUNK, 0);
            let read = recv(&self.tcp, &mut self.pending[held..], wait);
            self.pending.truncate(held + *read.as_ref().unwrap_or(&0));
            if read? == 0 {
                return Ok(0);
            }
        }
    }
}

impl Channel {
    /// Writes what the socket takes now, without waiting, and returns how
    /// many of `buf`'s bytes were taken. A TLS channel takes them into its
    /// records and sends what the socket takes of those; the rest waits in
    /// it ([`Channel::unsent`]), and an empty `buf` sends more of it. For a
    /// writer that waits on many sockets at once (`poll(2)`).
    pub fn write_now(&mut self, buf: &[u8]) -> io::Result<usize> {
        let Some(tls) = &self.tls else {
            return send_now(&self.tcp, buf);
        };
        let mut c = tls
            .lock()
            .map_err(|_| io::Error::other("TLS state poisoned"))?;
        let taken = if buf.is_empty() {
            0
        } else {
            c.writer().write(buf)?
        };
        while c.wants_write() {
            match c.write_tls(&mut Unwaiting(&self.tcp)) {
                Ok(_) => {}
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                Err(e) => return Err(e),
            }
        }
        Ok(taken)
    }

    /// Whether TLS records wait for the socket to take them.
    pub fn unsent(&self) -> bool {
        self.tls
            .as_ref()
            .is_some_and(|t| t.lock().is_ok_and(|c| c.wants_write()))
    }
}

/// The socket, written without waiting (for rustls's `write_tls`).
struct Unwaiting<'a>(&'a TcpStream);

impl Write for Unwaiting<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        send_now(self.0, buf)
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// `send(2)` without waiting (`MSG_DONTWAIT`; the socket itself stays
/// blocking for the writers that share it): `WouldBlock` when it is full.
fn send_now(tcp: &TcpStream, buf: &[u8]) -> io::Result<usize> {
    let flags = libc::MSG_DONTWAIT | libc::MSG_NOSIGNAL;
    // SAFETY: `buf` is valid for reads of its length for the whole call.
    let n = unsafe { libc::send(tcp.as_raw_fd(), buf.as_ptr().cast(), buf.len(), flags) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(n as usize)
}

/// `recv(2)`, waiting for bytes or not (`MSG_DONTWAIT`: the socket itself
/// stays blocking for the writers that share it).
fn recv(tcp: &TcpStream, buf: &mut [u8], wait: bool) -> io::Result<usize> {
    let flags = if wait { 0 } else { libc::MSG_DONTWAIT };
    // SAFETY: `buf` is valid for writes of its length for the whole call.
    let n = unsafe { libc::recv(tcp.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len(), flags) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(n as usize)
}

impl Write for Channel {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.write_all(buf).map(|()| buf.len())
    }

    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        let Some(tls) = &self.tls else {
            return self.tcp.write_all(buf);
        };
        let mut c = tls
            .lock()
            .map_err(|_| io::Error::other("TLS state poisoned"))?;
        c.writer().write_all(buf)?;
        flush_tls(&mut c, &self.tcp)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Runs a handshake to its end within `within`.
fn handshake(
    tcp: &mut TcpStream,
    conn: &mut rustls::Connection,
    within: Duration,
) -> io::Result<()> {
    let deadline = Instant::now() + within;
    while conn.is_handshaking() {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(io::Error::new(
                ErrorKind::TimedOut,
                "TLS handshake timed out",
            ));
        }
        tcp.set_read_timeout(Some(left))?;
        tcp.set_write_timeout(Some(left))?;
        match conn.complete_io(tcp) {
            Ok((0, 0)) if conn.is_handshaking() => {
                return Err(io::Error::new(
                    ErrorKind::UnexpectedEof,
                    "the peer closed the connection during the TLS handshake",
                ))
            }
            Ok(_) => {}
            Err(e) => {
                let _ = flush_tls(conn, tcp);
                return Err(e);
            }
        }
    }
    tcp.set_read_timeout(None)?;
    tcp.set_write_timeout(None)?;
    Ok(())
}

/// The server's half: `first` holds the bytes already read (the start of
/// the ClientHello); the handshake must end by `deadline`.
pub fn accept(
    mut tcp: TcpStream,
    first: &[u8],
    tls: &ServerTls,
    deadline: Instant,
) -> Result<Channel, String> {
    let server =
        rustls::ServerConnection::new(tls.config.clone()).map_err(|e| format!("TLS: {e}"))?;
    let mut conn = rustls::Connection::Server(server);
    conn.read_tls(&mut &first[..])
        .map_err(|e| format!("TLS: {e}"))?;
    let within = deadline.saturating_duration_since(Instant::now());
    handshake(&mut tcp, &mut conn, within).map_err(|e| match rustls_error(&e) {
        Some(r) => format!("TLS handshake failed: {r}"),
        None if e.kind() == ErrorKind::TimedOut || e.kind() == ErrorKind::WouldBlock => {
            "TLS handshake deadline passed".into()
        }
        None => format!("TLS handshake failed: {e}"),
    })?;
    Channel::with_tls(tcp, conn)
}

/// The client's half, checking the server's certificate for `host` (with
/// `--tls-ca`) or against the pins.
pub fn connect(
    mut tcp: TcpStream,
    tls: &ClientTls,
    host: &str,
    within: Duration,
) -> Result<Channel, String> {
    let name = ServerName::try_from(host.trim_matches(['[', ']']).to_string())
        .map_err(|_| format!("'{host}' is not a host name TLS can check"))?;
    let client =
        rustls::ClientConnection::new(tls.config.clone(), name).map_err(|e| format!("TLS: {e}"))?;
    let mut conn = rustls::Connection::Client(client);
    let peer = tcp
        .peer_addr()
        .map(|a| a.to_string())
        .unwrap_or_else(|_| host.to_string());
    handshake(&mut tcp, &mut conn, within).map_err(|e| client_error(&e, &peer, host, tls))?;
    Channel::with_tls(tcp, conn)
}

fn rustls_error(e: &io::Error) -> Option<&rustls::Error> {
    e.get_ref()?.downcast_ref::<rustls::Error>()
}

/// One line for a failed client handshake, saying what to change.
fn client_error(e: &io::Error, peer: &str, host: &str, tls: &ClientTls) -> String {
    use rustls::{CertificateError, Error};
    let Some(r) = rustls_error(e) else {
        return match e.kind() {
            ErrorKind::TimedOut | ErrorKind::WouldBlock => format!(
                "TLS with {peer}: no TLS answer in time; is the server started with --tls-cert and --tls-key?"
            ),
            _ => format!(
                "TLS with {peer} failed: {e}; is the server started with --tls-cert and --tls-key?"
            ),
        };
    };
    match r {
        // A CA of the same name but another key gives a bad signature.
        Error::InvalidCertificate(CertificateError::UnknownIssuer | CertificateError::BadSignature) => format!(
            "TLS with {peer}: the server's certificate is not signed by a CA in --tls-ca {}",
            match tls.trust() {
                Trust::Ca(p) => p.display().to_string(),
                Trust::Pins(_) => String::new(),
            }
        ),
        Error::InvalidCertificate(
            CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
        ) => format!("TLS with {peer}: the server's certificate is not valid for the name '{host}'"),
        Error::InvalidCertificate(CertificateError::Other(o)) => format!("TLS with {peer}: {o}"),
        Error::InvalidCertificate(c) => {
            format!("TLS with {peer}: the server's certificate is refused: {c:?}")
        }
        Error::InvalidMessage(_) => format!(
            "TLS with {peer}: the server does not speak TLS on its control port; start it with --tls-cert and --tls-key, or run without --tls"
        ),
        other => format!("TLS with {peer} failed: {other}"),
    }
}
