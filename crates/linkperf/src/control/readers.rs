//! The one thread that reads every control connection of the process: it
//! waits on all their sockets at once (`poll(2)`), reads what each holds
//! without waiting and hands the bytes to the connection's sink (`mod.rs`:
//! its session makes them messages for the connection's owner). A server
//! with a hundred tests has one control reader, not a hundred (each cost a
//! stack and its share of the heap). The thread exists while some
//! connection is read and ends with the last. This module owns the waiting
//! and the reading, not what the bytes mean.

use crate::tls::Channel;
use std::io::{ErrorKind, Write};
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::sync::{Arc, Mutex};

/// Bytes asked of a socket at a time: control messages are a few hundred
/// bytes, a larger one (a side's result) takes more reads.
const READ_CHUNK: usize = 2 * 1024;

/// Reads one connection may have in one round before the others get theirs:
/// a peer that floods its control connection does not hold the others.
const READS_PER_ROUND: usize = 16;

/// What the connection's owner made of the bytes read.
pub(super) enum Fed {
    /// Whatever messages they completed went to the owner.
    Kept,
    /// The owner is gone: stop reading.
    OwnerGone,
    /// They broke the protocol (the owner was told): close the connection.
    Broken,
}

/// Where a connection's bytes and its end go.
pub(super) trait Sink: Send {
    /// How many bytes the session wants next (a frame's header, its body).
    fn wanted(&self) -> usize;
    fn feed(&mut self, bytes: &[u8]) -> Fed;
    /// The connection ended (the peer closed it, or it failed): `why`.
    fn lost(&mut self, why: String);
}

/// What a round of reading left a connection in.
enum After {
    /// Nothing more has arrived: wait for the socket.
    Drained,
    /// Its round's reads ran out with bytes left: read it again at once.
    More,
    /// Ended (lost, broken, or its owner gone): drop it.
    Done,
}

/// One connection being read.
struct Reader {
    channel: Channel,
    sink: Box<dyn Sink>,
    buf: Vec<u8>,
}

impl Reader {
    fn read_round(&mut self) -> After {
        for _ in 0..READS_PER_ROUND {
            let want = self.sink.wanted().clamp(1, self.buf.len());
            let lost = match self.channel.read_now(&mut self.buf[..want]) {
                Ok(0) => "the peer closed the control connection".to_string(),
                Ok(n) => match self.sink.feed(&self.buf[..n]) {
                    Fed::Kept => continue,
                    Fed::OwnerGone => return After::Done,
                    Fed::Broken => {
                        let _ = self.channel.tcp().shutdown(std::net::Shutdown::Both);
                        return After::Done;
                    }
                },
                Err(e) if e.kind() == ErrorKind::WouldBlock => return After::Drained,
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(e) => format!("control connection failed: {e}"),
            };
            self.sink.lost(lost);
            return After::Done;
        }
        After::More
    }
}

/// Connections handed to the thread and not yet taken, and the running
/// thread's wake-up (none while no thread runs).
struct Shared {
    added: Vec<Reader>,
    waker: Option<Arc<Waker>>,
}

static STATE: Mutex<Shared> = Mutex::new(Shared {
    added: Vec::new(),
    waker: None,
});

/// A byte written to `tx` ends the thread's wait (a connection was added).
/// It lives as long as the thread, so an idle process holds no descriptor.
struct Waker {
    rx: UnixStream,
    tx: UnixStream,
}

/// Reads `channel` from now on into `sink`, starting the thread if none runs.
pub(super) fn add(channel: Channel, sink: Box<dyn Sink>) -> std::io::Result<()> {
    let mut shared = STATE.lock().unwrap_or_else(|p| p.into_inner());
    let waker = match &shared.waker {
        Some(w) => w.clone(),
        None => {
            let (rx, tx) = UnixStream::pair()?;
            rx.set_nonblocking(true)?;
            tx.set_nonblocking(true)?;
            let waker = Arc::new(Waker { rx, tx });
            let theirs = waker.clone();
            std::thread::Builder::new()
                .name("lp-control".into())
                .spawn(move || serve(&theirs))?;
            shared.waker = Some(waker.clone());
            waker
        }
    };
    shared.added.push(Reader {
        channel,
        sink,
        buf: vec![0u8; READ_CHUNK],
    });
    let _ = (&waker.tx).write(&[1]);
    Ok(())
}

/// The reading thread: waits on every connection and the wake-up, reads
/// each that is readable (or had more than a round's reads left), until no
/// connection is left.
fn serve(waker: &Waker) {
    // Each connection, and whether its last round left bytes unread.
    let mut readers: Vec<(Reader, bool)> = Vec::new();
    loop {
        {
            let mut shared = STATE.lock().unwrap_or_else(|p| p.into_inner());
            // A new connection is read at once: its channel may hold bytes
            // read ahead (a TLS handshake's last flight can carry the first
            // message), which no poll would announce.
            readers.extend(shared.added.drain(..).map(|r| (r, true)));
            if readers.is_empty() {
                shared.waker = None;
                return;
            }
        }
        let mut fds: Vec<libc::pollfd> = std::iter::once(waker.rx.as_raw_fd())
            .chain(readers.iter().map(|(r, _)| r.channel.tcp().as_raw_fd()))
            .map(|fd| libc::pollfd {
                fd,
                events: libc::POLLIN,
                revents: 0,
            })
            .collect();
        let timeout = if readers.iter().any(|(_, more)| *more) {
            0
        } else {
            -1
        };
        // SAFETY: `fds` is a valid array of `fds.len()` pollfd structures.
        let ready = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, timeout) };
        if ready < 0 {
            // EINTR: nothing else can fail with valid descriptors.
            continue;
        }
        if fds[0].revents != 0 {
            let mut drain = [0u8; 64];
            while matches!(std::io::Read::read(&mut &waker.rx, &mut drain), Ok(n) if n > 0) {}
        }
        let mut kept = Vec::with_capacity(readers.len());
        for ((mut reader, more), polled) in readers.drain(..).zip(&fds[1..]) {
            let after = if polled.revents != 0 || more {
                reader.read_round()
            } else {
                After::Drained
            };
            match after {
                After::Done => {}
                After::More => kept.push((reader, true)),
                After::Drained => kept.push((reader, false)),
            }
        }
        readers = kept;
    }
}
