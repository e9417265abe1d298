//! One control connection's state on the server: its channel of events
//! (the client's messages, data connections, the local streams), and its
//! cookie in the registry that routes data connections to it. Must not
//! decide what the session does: `mod.rs` greets and dispatches, `test`
//! runs a test.

use crate::control::inbox::{Receiver, Sender};
use crate::control::{Control, Incoming};
use linkperf_engine::SideEvent;
use linkperf_proto::session::ServerSession;
use linkperf_proto::{ClientMessage, ServerMessage};
use std::collections::HashMap;
use std::net::{SocketAddr, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::Duration;

// A session's channel carries a handful of events per test: the size of the
// largest (a control message holding a test's configuration) costs nothing
// worth boxing it for, and a box would only make every match deref it.
#[allow(clippy::large_enum_variant)]
pub(super) enum Event {
    Client(Incoming<ClientMessage>),
    Data(u32, TcpStream),
    Side(SideEvent),
}

/// The sessions waiting for data connections, by cookie.
pub(super) type Registry = Arc<Mutex<HashMap<u64, Sender<Event>>>>;

pub(super) struct ControlSession {
    pub control: Arc<Control<ServerSession>>,
    pub events: Receiver<Event>,
    pub tx: Sender<Event>,
    pub registry: Registry,
    pub cookie: Option<u64>,
    pub peer: SocketAddr,
    pub guard: Arc<crate::guard::Guard>,
}

impl Drop for ControlSession {
    fn drop(&mut self) {
        self.unregister();
        // What was posted to the client still leaves first.
        self.control.close();
    }
}

impl ControlSession {
    /// Routes data connections carrying `cookie` to this session.
    pub fn register(&mut self, cookie: u64) {
        self.cookie = Some(cookie);
        if let Ok(mut r) = self.registry.lock() {
            r.insert(cookie, self.tx.clone());
        }
    }

    /// Stops routing data connections to this session.
    pub fn unregister(&mut self) {
        if let Some(c) = self.cookie.take() {
            if let Ok(mut r) = self.registry.lock() {
                r.remove(&c);
            }
        }
    }

    pub fn next_message(&self, timeout: Duration) -> Result<ClientMessage, String> {
        loop {
            match self.events.recv_timeout(timeout) {
                Ok(Event::Client(Incoming::Message(m))) => return Ok(m),
                Ok(Event::Client(Incoming::Lost(why))) => return Err(why),
                Ok(_) => {}
                Err(_) => return Err("client timed out during set-up".into()),
            }
        }
    }

    /// Tells the client why the session ends and returns the log line.
    pub fn refuse<T>(&self, message: String) -> Result<T, String> {
        let _ = self.control.send(&ServerMessage::Error {
            message: message.clone(),
        });
        Err(format!("refused: {message}"))
    }
}
