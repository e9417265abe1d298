//! The one thread that reads every control connection of the process, and
//! writes what their owners post to them: it waits on all their sockets at
//! once (`poll(2)`), reads what each holds without waiting and hands the
//! bytes to the connection's sink (`mod.rs`: its session makes them messages
//! for the connection's owner), and writes each connection's posted bytes
//! (its [`Outbox`]) as its socket takes them, so an owner that posts never
//! waits on a peer that does not read. A server with a hundred tests has one
//! control reader, not a hundred (each cost a stack and its share of the
//! heap). The thread exists while some connection is read and ends with the
//! last. This module owns the waiting, the reading and the writing, not what
//! the bytes mean.

use crate::tls::Channel;
use std::io::{ErrorKind, Write};
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Bytes asked of a socket at a time: control messages are a few hundred
/// bytes, a larger one (a side's result) takes more reads.
const READ_CHUNK: usize = 2 * 1024;

/// Reads one connection may have in one round before the others get theirs:
/// a peer that floods its control connection does not hold the others.
const READS_PER_ROUND: usize = 16;

/// The most bytes posted to a connection and not yet taken by its socket: a
/// peer that stops reading its control connection loses it, it does not
/// make the process hold its messages without end. A second of a 128-stream
/// test's intervals is about 40 KB.
const OUTBOX_LIMIT: usize = 4 << 20;

/// How long a closed connection's posted bytes may take to leave.
const CLOSE_GRACE: Duration = Duration::from_secs(5);

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

/// Bytes posted to one connection, waiting for the reader thread to write
/// them; and whether the owner closed it, or the thread has let it go.
#[derive(Default)]
pub(super) struct Outbox {
    state: Mutex<Posted>,
}

#[derive(Default)]
struct Posted {
    bytes: Vec<u8>,
    /// The owner is done: close once the bytes are out.
    closing: bool,
    /// The thread no longer holds the connection.
    dropped: bool,
    /// More than [`OUTBOX_LIMIT`] waited.
    overflowed: bool,
}

impl Outbox {
    fn posted(&self) -> std::sync::MutexGuard<'_, Posted> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Queues `bytes` for the connection.
    pub(super) fn push(&self, bytes: &[u8]) -> Result<(), String> {
        let mut posted = self.posted();
        if posted.dropped || posted.closing {
            return Err("control connection closed".into());
        }
        if posted.bytes.len() + bytes.len() > OUTBOX_LIMIT {
            posted.overflowed = true;
            return Err("the peer does not read its control connection".into());
        }
        posted.bytes.extend_from_slice(bytes);
        Ok(())
    }

    /// Asks the thread to close the connection once its bytes are out;
    /// false when the thread no longer holds it (the caller closes it).
    pub(super) fn close(&self) -> bool {
        let mut posted = self.posted();
        posted.closing = true;
        !posted.dropped
    }
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
    outbox: Arc<Outbox>,
    /// Its owner still takes what arrives.
    reading: bool,
    /// Posted bytes wait for the socket.
    unsent: bool,
    /// When the owner closed it with bytes still to write.
    closing_since: Option<Instant>,
}

impl Drop for Reader {
    fn drop(&mut self) {
        self.outbox.posted().dropped = true;
    }
}

impl Reader {
    /// Reads what the connection holds (through `buf`, the thread's one read
    /// buffer: the sink keeps what it needs of a partial frame).
    fn read_round(&mut self, buf: &mut [u8]) -> After {
        for _ in 0..READS_PER_ROUND {
            let want = self.sink.wanted().clamp(1, buf.len());
            let lost = match self.channel.read_now(&mut buf[..want]) {
                Ok(0) => "the peer closed the control connection".to_string(),
                Ok(n) => match self.sink.feed(&buf[..n]) {
                    Fed::Kept => continue,
                    Fed::OwnerGone => {
                        self.reading = false;
                        return After::Drained;
                    }
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

    /// Writes what was posted as far as the socket takes it; closes the
    /// connection when its owner closed it and nothing is left to write.
    fn write_round(&mut self) -> After {
        let mut posted = self.outbox.posted();
        let failed = if posted.overflowed {
            Some("the peer does not read its control connection".to_string())
        } else {
            write_posted(&mut self.channel, &mut posted.bytes)
                .err()
                .map(|e| format!("control connection failed: {e}"))
        };
        if let Some(why) = failed {
            drop(posted);
            let _ = self.channel.tcp().shutdown(std::net::Shutdown::Both);
            self.sink.lost(why);
            return After::Done;
        }
        self.unsent = !posted.bytes.is_empty() || self.channel.unsent();
        if posted.closing {
            let since = *self.closing_since.get_or_insert_with(Instant::now);
            if !self.unsent || since.elapsed() > CLOSE_GRACE {
                drop(posted);
                self.channel.shutdown();
                return After::Done;
            }
        }
        if !self.reading && !self.unsent && !posted.closing {
            // The owner let go without closing (a client that ended).
            return After::Done;
        }
        After::Drained
    }

    fn pollfd(&self) -> libc::pollfd {
        let mut events = 0;
        if self.reading {
            events |= libc::POLLIN;
        }
        if self.unsent {
            events |= libc::POLLOUT;
        }
        libc::pollfd {
            fd: self.channel.tcp().as_raw_fd(),
            events,
            revents: 0,
        }
    }
}

/// Writes `bytes` as far as the socket takes them, then any TLS records
/// waiting from before.
fn write_posted(channel: &mut Channel, bytes: &mut Vec<u8>) -> std::io::Result<()> {
    while !bytes.is_empty() {
        match channel.write_now(bytes) {
            Ok(0) => break,
            Ok(n) => drop(bytes.drain(..n)),
            Err(e) if e.kind() == ErrorKind::WouldBlock => break,
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    if channel.unsent() {
        // TLS records of bytes taken before.
        match channel.write_now(&[]) {
            Err(e) if e.kind() != ErrorKind::WouldBlock => return Err(e),
            _ => {}
        }
    }
    Ok(())
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

/// A byte written to `tx` ends the thread's wait (a connection was added,
/// or bytes posted). It lives as long as the thread, so an idle process
/// holds no descriptor.
struct Waker {
    rx: UnixStream,
    tx: UnixStream,
}

/// Reads `channel` from now on into `sink` and writes what is posted to
/// `outbox`, starting the thread if none runs.
pub(super) fn add(
    channel: Channel,
    sink: Box<dyn Sink>,
    outbox: Arc<Outbox>,
) -> std::io::Result<()> {
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
        outbox,
        reading: true,
        unsent: false,
        closing_since: None,
    });
    let _ = (&waker.tx).write(&[1]);
    Ok(())
}

/// Waits until the thread has let every connection go (what was posted has
/// left, each closed one is shut), at most `limit`: for a process about to
/// exit.
pub(super) fn wait_idle(limit: Duration) {
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        if STATE
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .waker
            .is_none()
        {
            return;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Ends the thread's wait: something was posted or closed.
pub(super) fn wake() {
    let waker = STATE
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .waker
        .clone();
    if let Some(w) = waker {
        let _ = (&w.tx).write(&[1]);
    }
}

/// The reading thread: waits on every connection and the wake-up, reads
/// each that is readable (or had more than a round's reads left) and writes
/// each one's posted bytes, until no connection is left.
fn serve(waker: &Waker) {
    // Each connection, and whether its last round left bytes unread.
    let mut readers: Vec<(Reader, bool)> = Vec::new();
    let mut buf = vec![0u8; READ_CHUNK];
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
            .map(|fd| libc::pollfd {
                fd,
                events: libc::POLLIN,
                revents: 0,
            })
            .chain(readers.iter().map(|(r, _)| r.pollfd()))
            .collect();
        let timeout = if readers.iter().any(|(_, more)| *more) {
            0
        } else if readers.iter().any(|(r, _)| r.closing_since.is_some()) {
            // A closed connection's bytes have a grace period to leave.
            1000
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
            let read = polled.revents & !libc::POLLOUT != 0 || more;
            let mut after = if read && reader.reading {
                reader.read_round(&mut buf)
            } else {
                After::Drained
            };
            if !matches!(after, After::Done) && matches!(reader.write_round(), After::Done) {
                after = After::Done;
            }
            match after {
                After::Done => {}
                After::More => kept.push((reader, true)),
                After::Drained => kept.push((reader, false)),
            }
        }
        readers = kept;
    }
}
