//! Control connections over real sockets: the sans-IO sessions of
//! `linkperf-proto` wired to a TCP stream (plain or TLS, see [`crate::tls`]),
//! the process's control reader (`readers.rs`, which also writes what is
//! posted) and the owner's channel (std's, or a server session's `inbox`).

pub mod inbox;
mod readers;

use crate::tls::Channel;
use linkperf_proto::codec::CodecError;
use linkperf_proto::session::{Message, ProtocolError, Session};
use readers::{Fed, Outbox};
use std::io::Write;
use std::sync::{Arc, Mutex, OnceLock};

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

/// Waits (at most `limit`) until every control connection of the process
/// is let go: what was posted to them has left. For a process about to exit.
pub fn wait_idle(limit: std::time::Duration) {
    readers::wait_idle(limit);
}

/// Where the reader thread delivers a connection's messages: a channel's
/// sending half. False once the receiving half is gone.
pub trait Outlet<T>: Send + 'static {
    fn put(&self, item: T) -> bool;
}

impl<T: Send + 'static> Outlet<T> for std::sync::mpsc::Sender<T> {
    fn put(&self, item: T) -> bool {
        self.send(item).is_ok()
    }
}

impl<T: Send + 'static> Outlet<T> for inbox::Sender<T> {
    fn put(&self, item: T) -> bool {
        self.send(item).is_ok()
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
    /// What [`Control::post`] queued for the control reader to write.
    outbox: Arc<Outbox>,
}

impl<E: Endpoint> Control<E> {
    /// Has the process's control reader turn the connection's bytes into
    /// messages on `tx` (through `wrap`, so callers can merge them into
    /// their own event type).
    pub fn start<T: Send + 'static>(
        stream: impl Into<Channel>,
        session: E,
        tx: impl Outlet<T>,
        wrap: fn(Incoming<E::In>) -> T,
    ) -> std::io::Result<Arc<Self>> {
        Control::start_notifying(stream, session, tx, wrap, || {})
    }

    /// [`Control::start`], calling `notify` after each delivery (for an
    /// owner that waits on many channels at once).
    pub fn start_notifying<T: Send + 'static>(
        stream: impl Into<Channel>,
        session: E,
        tx: impl Outlet<T>,
        wrap: fn(Incoming<E::In>) -> T,
        notify: fn(),
    ) -> std::io::Result<Arc<Self>> {
        let session = Arc::new(Mutex::new(session));
        // The reader keeps the handle that may hold bytes read ahead.
        let channel: Channel = stream.into();
        let writer = channel.try_clone()?;
        let binding = channel.binding();
        let foreign = Arc::new(OnceLock::new());
        let sink = Delivery {
            session: session.clone(),
            tx,
            wrap,
            notify,
            foreign: foreign.clone(),
        };
        let outbox = Arc::new(Outbox::default());
        readers::add(channel, Box::new(sink), outbox.clone())?;
        Ok(Arc::new(Control {
            session,
            writer: Mutex::new(writer),
            binding,
            foreign,
            outbox,
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

    /// Queues one message for the control reader to write when the socket
    /// takes it: never waits on the peer, so one thread can serve many
    /// connections. Once a connection is posted to, everything sent on it
    /// must be posted (a [`Control::send`] would overtake what waits).
    /// Fails if the message is illegal now, the connection is gone, or the
    /// peer has left too much unread.
    pub fn post(&self, m: &E::Out) -> Result<(), String> {
        let mut session = self
            .session
            .lock()
            .map_err(|_| "control session poisoned".to_string())?;
        let bytes = session.send(m).map_err(|e| e.to_string())?;
        // Queued under the session's lock: bytes leave in the order encoded.
        let queued = self.outbox.push(&bytes);
        drop(session);
        readers::wake();
        queued
    }

    /// Closes the connection once what was posted has left (within a few
    /// seconds), without waiting for it.
    pub fn close(&self) {
        if self.outbox.close() {
            readers::wake();
        } else {
            self.shutdown();
        }
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

/// Where the control reader puts a connection's bytes: its session turns
/// them into messages for the owner's channel.
struct Delivery<E: Endpoint, T, O> {
    session: Arc<Mutex<E>>,
    tx: O,
    wrap: fn(Incoming<E::In>) -> T,
    notify: fn(),
    foreign: Arc<OnceLock<u8>>,
}

impl<E: Endpoint, T: Send + 'static, O: Outlet<T>> readers::Sink for Delivery<E, T, O> {
    fn wanted(&self) -> usize {
        self.session.lock().map(|s| s.wanted()).unwrap_or(4)
    }

    fn feed(&mut self, bytes: &[u8]) -> Fed {
        let parsed = match self.session.lock() {
            Ok(mut s) => s.receive(bytes),
            Err(_) => return Fed::OwnerGone,
        };
        match parsed {
            Ok(messages) => {
                for m in messages {
                    if !self.tx.put((self.wrap)(Incoming::Message(m))) {
                        return Fed::OwnerGone;
                    }
                }
                (self.notify)();
                Fed::Kept
            }
            Err(e) => {
                if let ProtocolError::Codec(CodecError::Foreign(b)) = e {
                    let _ = self.foreign.set(b);
                }
                self.lost(e.to_string());
                Fed::Broken
            }
        }
    }

    fn lost(&mut self, why: String) {
        let _ = self.tx.put((self.wrap)(Incoming::Lost(why)));
        (self.notify)();
    }
}
