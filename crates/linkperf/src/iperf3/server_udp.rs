//! Where iperf3 UDP streams arrive: on the server's own port, where a
//! connect datagram does not say which session it belongs to. One
//! dispatcher per local address owns an unconnected socket there and hands
//! each connect datagram's source to the oldest session waiting for streams
//! from that source's address (its control connection's). A session whose
//! client never sends delays no client from another address, and a
//! datagram from an address no session waits for gets no answer at all
//! (no reflection).

use crate::data::canonical_ip;
use socket2::{Domain, Socket, Type};
use std::collections::{HashMap, VecDeque};
use std::net::{IpAddr, SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Instant;

/// Sessions waiting for connect datagrams, by their client's address.
type Waiting = Mutex<HashMap<IpAddr, VecDeque<(u64, Sender<SocketAddr>)>>>;

fn dispatchers() -> &'static Mutex<HashMap<SocketAddr, Arc<Waiting>>> {
    static DISPATCHERS: OnceLock<Mutex<HashMap<SocketAddr, Arc<Waiting>>>> = OnceLock::new();
    DISPATCHERS.get_or_init(Mutex::default)
}

/// A session's place in the queue for its client's address; it leaves the
/// queue when dropped.
pub struct Waiter {
    waiting: Arc<Waiting>,
    peer: IpAddr,
    id: u64,
    rx: Receiver<SocketAddr>,
    /// Sources already handed out: a repeated connect datagram is not a
    /// new stream.
    seen: Vec<SocketAddr>,
}

impl Drop for Waiter {
    fn drop(&mut self) {
        if let Ok(mut w) = self.waiting.lock() {
            if let Some(queue) = w.get_mut(&self.peer) {
                queue.retain(|(id, _)| *id != self.id);
                if queue.is_empty() {
                    w.remove(&self.peer);
                }
            }
        }
    }
}

impl Waiter {
    /// The source of the next connect datagram from the client, by `deadline`.
    pub fn next(&mut self, deadline: Instant) -> Result<SocketAddr, String> {
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.rx.recv_timeout(left) {
                Ok(from) if self.seen.contains(&from) => {}
                Ok(from) => {
                    self.seen.push(from);
                    return Ok(from);
                }
                Err(_) => {
                    return Err(format!(
                        "no UDP connect datagram from the iperf3 client at {}; is UDP blocked?",
                        self.peer
                    ))
                }
            }
        }
    }
}

/// Queues a session for connect datagrams from `peer` arriving at `local`
/// (starting the dispatcher for `local` if none runs).
pub fn wait_for(local: SocketAddr, peer: IpAddr) -> Result<Waiter, String> {
    static NEXT_ID: AtomicU64 = AtomicU64::new(0);
    let waiting = {
        let mut all = dispatchers().lock().map_err(|_| "dispatchers poisoned")?;
        match all.get(&local) {
            Some(w) => w.clone(),
            None => {
                let socket = bind_shared(local)?;
                let waiting = Arc::new(Waiting::default());
                let for_thread = waiting.clone();
                std::thread::Builder::new()
                    .name("lp-iperf3-udp".into())
                    .spawn(move || dispatch(socket, &for_thread))
                    .map_err(|e| format!("cannot start the UDP dispatcher: {e}"))?;
                all.insert(local, waiting.clone());
                waiting
            }
        }
    };
    let peer = canonical_ip(peer);
    let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
    let (tx, rx) = mpsc::channel();
    waiting
        .lock()
        .map_err(|_| "UDP waiters poisoned")?
        .entry(peer)
        .or_default()
        .push_back((id, tx));
    Ok(Waiter {
        waiting,
        peer,
        id,
        rx,
        seen: Vec::new(),
    })
}

/// An unconnected socket on the server's port that the stream sockets
/// (bound there too, then connected to their client) share.
fn bind_shared(local: SocketAddr) -> Result<UdpSocket, String> {
    let domain = if local.is_ipv6() {
        Domain::IPV6
    } else {
        Domain::IPV4
    };
    let sock = Socket::new(domain, Type::DGRAM, None).map_err(|e| format!("UDP socket: {e}"))?;
    sock.set_reuse_address(true)
        .map_err(|e| format!("SO_REUSEADDR: {e}"))?;
    sock.bind(&local.into())
        .map_err(|e| format!("cannot bind UDP to {local}: {e}"))?;
    Ok(sock.into())
}

/// Hands each datagram's source to the oldest waiter for its address.
fn dispatch(socket: UdpSocket, waiting: &Waiting) {
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let Ok((_, from)) = socket.recv_from(&mut buf) else {
            continue;
        };
        let Ok(mut w) = waiting.lock() else { return };
        if let Some(queue) = w.get_mut(&canonical_ip(from.ip())) {
            if let Some((_, tx)) = queue.front() {
                let _ = tx.send(from);
            }
        }
    }
}
