//! Control connections over real sockets: the sans-IO sessions of
//! `linkperf-proto` wired to a TCP stream (plain or TLS, see [`crate::tls`]),
//! a reader thread and a channel.

use crate::tls::Channel;
use linkperf_proto::codec::CodecError;
use linkperf_proto::session::{Message, ProtocolError, Session};
use std::io::{Read, Write};
use std::sync::mpsc::Sender;
use std::sync::{Arc, Mutex, OnceLock};

/// Bytes a reader asks the socket for at a time: control messages are a few
/// hundred bytes, a larger one (a side's result) takes more reads, and every
/// connection's reader holds this much for its whole life.
const READ_CHUNK: usize = 2 * 1024;

/// One end of the protocol: what it receives and what it sends.
pub trait Endpoint: Send + 'static {
    type In: Send + 'static;
    type Out;
    fn receive(&mut self, bytes: &[u8]) -> Result<Vec<Self::In>, ProtocolError>;
    fn send(&mut self, m: &Self::Out) -> Result<Vec<u8>, ProtocolError>;
    fn wanted(&self) -> usize;
}

impl<I: Message + Send + 'static, O: Message + 'static> Endpoint for Session<I, O> {
    type In = I;
    type Out = O;
    fn receive(&mut self, bytes: &[u8]) -> Result<Vec<I>, ProtocolError> {
        Session::receive(self, bytes)
    }
    fn send(&mut self, m: &O) -> Result<Vec<u8>, ProtocolError> {
        Session::send(self, m)
    }
    fn wanted(&self) -> usize {
        Session::wanted(self)
    }
}

/// What the reader thread delivers.
pub enum Incoming<M> {
    Message(M),
    /// The connection ended or broke; the text says how.
    Lost(String),
}

/// The sending half, shareable between threads.
pub struct Control<E: Endpoint> {
    session: Arc<Mutex<E>>,
    writer: Mutex<Channel>,
    /// The TLS session's channel binding, when the connection is TLS.
    binding: Option<[u8; crate::tls::BINDING_LEN]>,
    /// The first byte of a peer that speaks another protocol (see
    /// [`Control::foreign_byte`]).
    foreign: Arc<OnceLock<u8>>,
}

impl<E: Endpoint> Control<E> {
    /// Starts a reader thread that turns bytes into messages on `tx`
    /// (through `wrap`, so callers can merge them into their own event type).
    pub fn start<T: Send + 'static>(
        stream: impl Into<Channel>,
        session: E,
        tx: Sender<T>,
        wrap: fn(Incoming<E::In>) -> T,
    ) -> std::io::Result<Arc<Self>> {
        let session = Arc::new(Mutex::new(session));
        // The reader keeps the handle that may hold bytes read ahead.
        let mut reader: Channel = stream.into();
        let writer = reader.try_clone()?;
        let binding = reader.binding();
        let reader_session = session.clone();
        let foreign = Arc::new(OnceLock::new());
        let reader_foreign = foreign.clone();
        std::thread::Builder::new()
            .name("lp-control".into())
            .spawn(move || {
                let mut buf = vec![0u8; READ_CHUNK];
                loop {
                    let want = reader_session
                        .lock()
                        .map(|s| s.wanted())
                        .unwrap_or(4)
                        .min(buf.len());
                    match reader.read(&mut buf[..want]) {
                        Ok(0) => {
                            let _ = tx.send(wrap(Incoming::Lost(
                                "the peer closed the control connection".into(),
                            )));
                            return;
                        }
                        Ok(n) => {
                            let parsed = match reader_session.lock() {
                                Ok(mut s) => s.receive(&buf[..n]),
                                Err(_) => return,
                            };
                            match parsed {
                                Ok(messages) => {
                                    for m in messages {
                                        if tx.send(wrap(Incoming::Message(m))).is_err() {
                                            return;
                                        }
                                    }
                                }
                                Err(e) => {
                                    if let ProtocolError::Codec(CodecError::Foreign(b)) = e {
                                        let _ = reader_foreign.set(b);
                                    }
                                    let _ = tx.send(wrap(Incoming::Lost(e.to_string())));
                                    let _ = reader.tcp().shutdown(std::net::Shutdown::Both);
                                    return;
                                }
                            }
                        }
                        Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                        Err(e) => {
                            let _ = tx.send(wrap(Incoming::Lost(format!(
                                "control connection failed: {e}"
                            ))));
                            return;
                        }
                    }
                }
            })?;
        Ok(Arc::new(Control {
            session,
            writer: Mutex::new(writer),
            binding,
            foreign,
        }))
    }

    /// The byte that showed the peer speaks another protocol, once the
    /// reader has reported the connection lost for that reason: lets the
    /// caller say what the peer is (an iperf3 server's state byte, say).
    pub fn foreign_byte(&self) -> Option<u8> {
        self.foreign.get().copied()
    }

    /// Sends one message; fails if it is illegal now or the socket is broken.
    pub fn send(&self, m: &E::Out) -> Result<(), String> {
        let bytes = self
            .session
            .lock()
            .map_err(|_| "control session poisoned".to_string())?
            .send(m)
            .map_err(|e| e.to_string())?;
        let mut w = self
            .writer
            .lock()
            .map_err(|_| "control writer poisoned".to_string())?;
        w.write_all(&bytes)
            .map_err(|e| format!("control connection failed: {e}"))
    }

    pub fn shutdown(&self) {
        if let Ok(w) = self.writer.lock() {
            w.shutdown();
        }
    }

    /// The TLS channel binding (see [`crate::tls::Channel::binding`]).
    pub fn binding(&self) -> Option<&[u8]> {
        self.binding.as_ref().map(|b| &b[..])
    }
}
