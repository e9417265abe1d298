//! The threads that read the process's TCP receiving streams of paced tests:
//! epoll loops, each over the sockets of the streams it was given. A server
//! with a hundred such tests has two loops on a 2-CPU host, not a hundred
//! stream threads (each of those cost the server a stack and its thread's
//! share of the heap). A stream its sender does not pace, or paces above
//! [`LOOP_MAX_RATE`], keeps a thread of its own (`stream::tcp_receive`): it
//! moves as fast as its reader reads, and a blocking read costs one system
//! call where a loop's costs two (the wait, then the read), and a thread of its
//! own has its share of the CPUs beside its sender's thread on one host.
//!
//! A new stream goes to a new loop while there are fewer loops than CPUs, and
//! otherwise to the loop that reads the fewest. A loop that never waits for a
//! tenth of a [`POLL`] period (it always had data to read: its thread is out
//! of CPU, or outnumbered by the senders it shares CPUs with) hands half its
//! streams to a new loop, and so on until every loop keeps up with the streams
//! it reads (on loopback a reader's copy costs less than half of its sender's
//! send path, so a loop keeps up with two unpaced senders). A loop's thread
//! ends with its last stream, closing its epoll descriptor.
//!
//! A stream is read as a blocking stream thread read it (`sink::receive`, its
//! window clamp held after each read), without waiting: up to [`READS`] reads
//! per readiness, so one fast stream does not hold the others of its loop. Its
//! end is the same too: the peer's FIN, an error, the side's stop flag or
//! [`TCP_IDLE_LIMIT`] without data; then its MPTCP subflows are read, it is
//! marked finished, shut down, and its owner's [`Handle`] is released.
//!
//! CPU: what a loop spends between two readings of its thread's CPU clock
//! goes to the streams it served in between ([`Charges`]), so a side that
//! shares a loop with others is charged what its own streams cost. A stream
//! also reports the whole CPU of the loops that read it over its life: a
//! saturated loop limited every stream it read.

use crate::cpu::ThreadCpu;
use crate::stream::{lock, mark_finished, SideControl, StreamCpu, StreamParams, StreamShared};
use crate::stream::{POLL, TCP_IDLE_LIMIT};
use std::collections::HashMap;
use std::io::ErrorKind;
use std::net::{Shutdown, TcpStream};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::time::{Duration, Instant};

/// Most reads of one stream per readiness before the loop turns to the others
/// (level-triggered: a stream with more queued is reported again at once).
const READS: usize = 16;
/// Most events taken per wait.
const EVENTS: usize = 64;
/// A loop that waited for less than this share of a period is saturated.
const SATURATED_WAIT: f64 = 0.1;
/// The fastest pace (bit/s per stream) whose receivers a loop reads. A loop
/// pays a wait (`epoll_wait`) beside each read: a server receiving one stream
/// paced at 1 Gbit/s on loopback used 2.9 % of a core through a loop against
/// 2.1 % with a thread of its own (0.47 % against 0.33 % at 100 Mbit/s;
/// bench/RESULTS.md), a price worth a thread's memory only for slow streams.
pub(crate) const LOOP_MAX_RATE: u64 = 1_000_000_000;

/// Whether a stream of this role, paced at `rate` (bit/s per stream, `None`
/// unpaced), is read by a loop.
pub(crate) fn takes(role: linkperf_proto::results::Role, rate: Option<u64>) -> bool {
    role == linkperf_proto::results::Role::Receiver && rate.is_some_and(|r| r <= LOOP_MAX_RATE)
}

/// A stream's owner waits on this for the stream's end ([`Handle::join`]).
pub(crate) struct Handle(Arc<Done>);

#[derive(Default)]
struct Done {
    over: Mutex<bool>,
    ready: Condvar,
}

impl Done {
    fn release(&self) {
        *lock(&self.over) = true;
        self.ready.notify_all();
    }
}

impl Handle {
    /// Waits until the stream ended (its counters, CPU and subflows are final).
    pub fn join(self) {
        let over = lock(&self.0.over);
        drop(
            self.0
                .ready
                .wait_while(over, |over| !*over)
                .unwrap_or_else(|p| p.into_inner()),
        );
    }
}

/// One loop: its epoll descriptor (its thread holds the loop too), and the
/// streams handed to it and not yet taken.
struct Loop {
    epoll: OwnedFd,
    state: Mutex<LoopState>,
}

#[derive(Default)]
struct LoopState {
    added: Vec<Entry>,
    /// Streams it reads or was handed (its load).
    streams: usize,
}

/// The loops whose threads run. Lock order: this list, then a loop's state.
static LOOPS: Mutex<Vec<Arc<Loop>>> = Mutex::new(Vec::new());

fn cpus() -> usize {
    static CPUS: OnceLock<usize> = OnceLock::new();
    *CPUS.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

/// Hands a TCP receiving stream to a loop (see the module comment). `at` is
/// the test's start (the stream's time runs from there, as a stream thread's
/// does).
pub(crate) fn add(
    sock: TcpStream,
    shared: Arc<StreamShared>,
    ctl: Arc<SideControl>,
    p: StreamParams,
    at: Instant,
) -> std::io::Result<Handle> {
    let done = Arc::new(Done::default());
    let flags = if p.skip_rx_copy { libc::MSG_TRUNC } else { 0 };
    let entry = Entry {
        len: crate::sink::read_length(p.length),
        flags: flags | libc::MSG_DONTWAIT,
        last_data: Instant::now().max(p.start),
        sock,
        shared,
        ctl,
        start: p.start,
        window_clamp: p.window_clamp,
        at,
        received: 0,
        recent: 0,
        own: ThreadCpu::default(),
        pending: 0,
        served_before: ThreadCpu::default(),
        loop_at_start: ThreadCpu::default(),
        error: None,
        ended: false,
        done: Some(done.clone()),
    };
    let mut loops = lock(&LOOPS);
    let target = if loops.len() < cpus() {
        None
    } else {
        loops.iter().min_by_key(|l| lock(&l.state).streams).cloned()
    };
    place(&mut loops, target, vec![entry]).map(|()| Handle(done))
}

/// Registers `entries` with `target`'s epoll (a new loop when `None`) and
/// hands them to it. On failure they are dropped, which releases their owners
/// with an error.
fn place(
    loops: &mut Vec<Arc<Loop>>,
    target: Option<Arc<Loop>>,
    entries: Vec<Entry>,
) -> std::io::Result<()> {
    let target = match target {
        Some(l) => l,
        None => start_loop(loops)?,
    };
    let mut state = lock(&target.state);
    for entry in &entries {
        let mut event = libc::epoll_event {
            events: (libc::EPOLLIN | libc::EPOLLRDHUP) as u32,
            u64: token(&entry.sock),
        };
        // SAFETY: both descriptors are open and `event` is a valid epoll_event.
        let r = unsafe {
            libc::epoll_ctl(
                target.epoll.as_raw_fd(),
                libc::EPOLL_CTL_ADD,
                entry.sock.as_raw_fd(),
                &mut event,
            )
        };
        if r < 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    state.streams += entries.len();
    state.added.extend(entries);
    Ok(())
}

/// A stream's key in its loop: its socket's descriptor, unique while it is open.
fn token(sock: &TcpStream) -> u64 {
    sock.as_raw_fd() as u64
}

/// A new loop with its thread, listed in `loops`.
fn start_loop(loops: &mut Vec<Arc<Loop>>) -> std::io::Result<Arc<Loop>> {
    static NAMES: AtomicUsize = AtomicUsize::new(0);
    // SAFETY: epoll_create1 has no memory preconditions; the result is checked.
    let fd = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    let new = Arc::new(Loop {
        // SAFETY: `fd` was just opened and nothing else owns it.
        epoll: unsafe { OwnedFd::from_raw_fd(fd) },
        state: Mutex::default(),
    });
    let mine = new.clone();
    let name = format!("lp-recv-{}", NAMES.fetch_add(1, Ordering::Relaxed));
    std::thread::Builder::new()
        .name(name)
        .spawn(move || serve(&mine))?;
    loops.push(new.clone());
    Ok(new)
}

/// One stream in a loop.
struct Entry {
    sock: TcpStream,
    shared: Arc<StreamShared>,
    ctl: Arc<SideControl>,
    /// When the stream's data may start (its idle time counts from there).
    start: Instant,
    window_clamp: Option<u32>,
    at: Instant,
    len: usize,
    flags: i32,
    received: u64,
    /// Bytes read since the loop last looked at its load.
    recent: u64,
    last_data: Instant,
    /// CPU the loops spent on this stream.
    own: ThreadCpu,
    /// Services since the loop last charged its CPU (see [`Charges`]).
    pending: u32,
    /// The whole CPU of the loops that read it before its present one.
    served_before: ThreadCpu,
    /// Its present loop's CPU when that loop took it.
    loop_at_start: ThreadCpu,
    error: Option<String>,
    ended: bool,
    /// Released when the stream is done (or dropped: a loop that failed).
    done: Option<Arc<Done>>,
}

impl Entry {
    /// Reads what the socket holds, up to [`READS`] reads.
    fn read(&mut self) {
        for _ in 0..READS {
            match crate::sink::receive(&self.sock, self.len, self.flags) {
                Ok(0) => {
                    self.ended = true;
                    return;
                }
                Ok(n) => {
                    self.received += n as u64;
                    self.recent += n as u64;
                    self.shared.bytes.store(self.received, Ordering::Relaxed);
                    self.last_data = Instant::now();
                    if let Some(clamp) = self.window_clamp {
                        // Linux (6.7+) rewrites the clamp from the buffer size
                        // whenever its payload-to-memory ratio changes; setting it
                        // again is a no-op for the kernel when it still holds.
                        crate::sockopt::hold_window_clamp(&self.sock, clamp);
                    }
                    if n < self.len {
                        return; // the queue is (nearly) empty: wait for more
                    }
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => {
                    self.error = Some(format!("receive failed after {} bytes: {e}", self.received));
                    self.ended = true;
                    return;
                }
            }
        }
    }

    /// The stream's end by time: its side's stop flag, or no data for too long.
    fn check(&mut self, now: Instant) {
        if self.ctl.stop_receivers.load(Ordering::Relaxed) {
            self.ended = true;
        } else if now > self.start
            && now.saturating_duration_since(self.last_data.max(self.start)) > TCP_IDLE_LIMIT
        {
            self.error = Some(format!(
                "no data for {} s: sender gone?",
                TCP_IDLE_LIMIT.as_secs()
            ));
            self.ended = true;
        }
    }

    /// The whole CPU of the loops that read it, its present one's up to `now`.
    fn served(&self, now: &ThreadCpu) -> ThreadCpu {
        let mut all = self.served_before;
        all.add(&now.minus(&self.loop_at_start));
        all
    }

    /// Publishes the stream's end (as a stream thread does as it returns).
    fn finish(mut self, loop_now: &ThreadCpu) {
        if let Some(why) = self.error.take() {
            self.shared.fail(why);
        }
        *lock(&self.shared.subflows) = crate::mptcp::subflows(&self.sock, false);
        mark_finished(&self.shared, self.start, self.last_data);
        // Closing tells the sender everything arrived (see stream::tcp_send).
        let _ = self.sock.shutdown(Shutdown::Both);
        *lock(&self.shared.cpu) = Some(StreamCpu {
            own: self.own,
            thread: self.served(loop_now),
            ran: Instant::now().saturating_duration_since(self.at),
        });
        if let Some(done) = self.done.take() {
            done.release();
        }
        crate::samplers::wake();
    }
}

impl Drop for Entry {
    /// A stream dropped unfinished (its loop failed) still releases its owner.
    fn drop(&mut self) {
        if let Some(done) = self.done.take() {
            self.shared
                .fail("the receiving loop ended before the stream".into());
            mark_finished(&self.shared, self.start, self.last_data);
            done.release();
        }
    }
}

/// A loop's streams, how much it waited since it last looked at its load,
/// and its CPU not yet charged to them.
struct Streams {
    live: HashMap<u64, Entry>,
    period_start: Instant,
    waited: Duration,
    charges: Charges,
}

/// What the loop spends between two readings of its CPU clock (serving,
/// waiting, housekeeping) goes to the streams it served in between, in
/// proportion to how often it served each. The clock is read at most every
/// [`CHARGE_EVERY`]: a reading is a system call, and a fast stream is served
/// tens of thousands of times a second.
struct Charges {
    mark: ThreadCpu,
    at: Instant,
    /// The streams served since `mark` (each entry counts its services).
    served: Vec<u64>,
}

/// The most often a loop reads its CPU clock.
const CHARGE_EVERY: Duration = Duration::from_millis(1);

impl Charges {
    fn served(&mut self, token: u64, entry: &mut Entry) {
        if entry.pending == 0 {
            self.served.push(token);
        }
        entry.pending += 1;
    }

    /// Charges the CPU spent since the last reading, if a stream was served.
    fn settle(&mut self, live: &mut HashMap<u64, Entry>) {
        if self.served.is_empty() {
            return;
        }
        let cpu = ThreadCpu::now();
        let spent = cpu.minus(&self.mark);
        self.mark = cpu;
        self.at = Instant::now();
        let total: u32 = self
            .served
            .iter()
            .filter_map(|t| live.get(t))
            .map(|e| e.pending)
            .sum();
        for token in self.served.drain(..) {
            if let Some(e) = live.get_mut(&token) {
                e.own.add(&spent.share(e.pending, total));
                e.pending = 0;
            }
        }
    }
}

/// A loop's thread: waits for readiness and reads; every [`POLL`] looks at
/// every stream's stop flag and idle time, and at its own load; ends when it
/// has no stream left.
fn serve(me: &Arc<Loop>) {
    let _guard = Failed(me.clone());
    let mut streams = Streams {
        live: HashMap::new(),
        period_start: Instant::now(),
        waited: Duration::ZERO,
        charges: Charges {
            mark: ThreadCpu::now(),
            at: Instant::now(),
            served: Vec::new(),
        },
    };
    let mut events = [libc::epoll_event { events: 0, u64: 0 }; EVENTS];
    while take_added(me, &mut streams.live) {
        let before = Instant::now();
        // SAFETY: `events` has room for EVENTS entries; the descriptor is open.
        let n = unsafe {
            libc::epoll_wait(
                me.epoll.as_raw_fd(),
                events.as_mut_ptr(),
                EVENTS as i32,
                POLL.as_millis() as i32,
            )
        };
        let now = Instant::now();
        streams.waited += now - before;
        let mut any_ended = false;
        for event in events.iter().take(usize::try_from(n).unwrap_or(0)) {
            let token = event.u64;
            if let Some(entry) = streams.live.get_mut(&token) {
                entry.read();
                streams.charges.served(token, entry);
                any_ended |= entry.ended;
            }
        }
        let period = now.saturating_duration_since(streams.period_start);
        let look = period >= POLL;
        if look || any_ended || now.saturating_duration_since(streams.charges.at) >= CHARGE_EVERY {
            streams.charges.settle(&mut streams.live);
        }
        if look {
            for entry in streams.live.values_mut() {
                entry.check(now);
                any_ended |= entry.ended;
            }
            if streams.waited.as_secs_f64() < SATURATED_WAIT * period.as_secs_f64() {
                split(me, &mut streams.live);
            }
            streams.period_start = now;
            streams.waited = Duration::ZERO;
            streams.live.values_mut().for_each(|e| e.recent = 0);
        }
        if any_ended {
            end_streams(me, &mut streams.live);
        }
    }
}

/// A saturated loop hands half its streams (every other one, busiest first)
/// to a new loop; a loop of one stream keeps it.
fn split(me: &Loop, live: &mut HashMap<u64, Entry>) {
    if live.len() < 2 {
        return;
    }
    let mut by_load: Vec<(u64, u64)> = live.iter().map(|(t, e)| (e.recent, *t)).collect();
    by_load.sort_unstable_by(|a, b| b.cmp(a));
    let now = ThreadCpu::now();
    let moving: Vec<Entry> = by_load
        .iter()
        .skip(1)
        .step_by(2)
        .filter_map(|(_, t)| live.remove(t))
        .map(|mut e| {
            deregister(me, &e.sock);
            e.served_before = e.served(&now);
            e
        })
        .collect();
    let count = moving.len();
    let mut loops = lock(&LOOPS);
    // Entries that could not be placed are dropped: their owners are released
    // with an error.
    let _ = place(&mut loops, None, moving);
    drop(loops);
    let mut state = lock(&me.state);
    state.streams = state.streams.saturating_sub(count);
}

fn deregister(me: &Loop, sock: &TcpStream) {
    // SAFETY: both descriptors are open; DEL ignores the event.
    unsafe {
        libc::epoll_ctl(
            me.epoll.as_raw_fd(),
            libc::EPOLL_CTL_DEL,
            sock.as_raw_fd(),
            std::ptr::null_mut(),
        )
    };
}

/// Unwinding out of a loop's thread (a defect): the loop leaves the list, so
/// new streams go elsewhere, and the streams handed to it and not yet taken
/// are released with an error (those it had taken are released as its map
/// of them is dropped).
struct Failed(Arc<Loop>);

impl Drop for Failed {
    fn drop(&mut self) {
        if std::thread::panicking() {
            let mut loops = lock(&LOOPS);
            loops.retain(|l| !Arc::ptr_eq(l, &self.0));
            let mut state = lock(&self.0.state);
            state.added.clear();
            state.streams = 0;
        }
    }
}

/// Takes the streams handed to the loop; false when it then has none: the
/// loop has left the list and its thread ends.
fn take_added(me: &Arc<Loop>, live: &mut HashMap<u64, Entry>) -> bool {
    take(&mut lock(&me.state), live);
    if !live.is_empty() {
        return true;
    }
    // Nothing to read: leave the list unless a stream arrived meanwhile.
    let mut loops = lock(&LOOPS);
    take(&mut lock(&me.state), live);
    if !live.is_empty() {
        return true;
    }
    loops.retain(|l| !Arc::ptr_eq(l, me));
    false
}

/// Moves the streams handed to a loop into its map, noting its CPU clock.
fn take(state: &mut LoopState, live: &mut HashMap<u64, Entry>) {
    if state.added.is_empty() {
        return;
    }
    let cpu = ThreadCpu::now();
    for mut entry in state.added.drain(..) {
        entry.loop_at_start = cpu;
        live.insert(token(&entry.sock), entry);
    }
}

/// Removes the streams that ended from the loop and publishes their ends.
fn end_streams(me: &Loop, live: &mut HashMap<u64, Entry>) {
    let ended: Vec<u64> = live
        .iter()
        .filter(|(_, e)| e.ended)
        .map(|(t, _)| *t)
        .collect();
    let now = ThreadCpu::now();
    for token in &ended {
        if let Some(entry) = live.remove(token) {
            deregister(me, &entry.sock);
            entry.finish(&now);
        }
    }
    let mut state = lock(&me.state);
    state.streams = state.streams.saturating_sub(ended.len());
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stream::Payload;
    use linkperf_proto::results::Role;
    use std::io::Write;
    use std::net::TcpListener;
    use std::sync::atomic::AtomicBool;

    fn params(rate: u64) -> StreamParams {
        StreamParams {
            length: 128 * 1024,
            payload: Payload::default(),
            rate_bps: Some(rate),
            pacing_timer: None,
            byte_limit: None,
            start: Instant::now(),
            end: None,
            zerocopy: false,
            udp_format: Default::default(),
            model: None,
            stream_id: 0,
            window_clamp: None,
            skip_rx_copy: false,
        }
    }

    /// A connected pair on loopback: (the sender's end, the receiver's).
    fn pair() -> (TcpStream, TcpStream) {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let sender = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        (sender, listener.accept().unwrap().0)
    }

    /// The receiving loops' threads running now (their names, from /proc).
    fn loop_threads() -> usize {
        std::fs::read_dir("/proc/self/task")
            .unwrap()
            .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("comm")).ok())
            .filter(|name| name.starts_with("lp-recv-"))
            .count()
    }

    /// Hands `n` receiving ends to loops; returns the senders' ends and each
    /// stream's counters and handle.
    fn start(n: usize) -> Vec<(TcpStream, Arc<StreamShared>, Handle)> {
        (0..n)
            .map(|i| {
                let (tx, rx) = pair();
                let shared = Arc::new(StreamShared::new(i as u32, Role::Receiver));
                let ctl = Arc::new(SideControl::default());
                let h = add(rx, shared.clone(), ctl, params(10_000_000), Instant::now()).unwrap();
                (tx, shared, h)
            })
            .collect()
    }

    /// Each stream counted exactly what its sender wrote, ended at its FIN
    /// without an error, and was charged no more CPU than its loops used.
    fn check_ends(streams: Vec<(TcpStream, Arc<StreamShared>, Handle)>, sent: &[u64]) {
        for ((tx, shared, handle), &sent) in streams.into_iter().zip(sent) {
            drop(tx);
            handle.join();
            assert_eq!(shared.bytes.load(Ordering::Relaxed), sent);
            assert!(shared.finished.load(Ordering::Acquire));
            assert_eq!(*lock(&shared.error), None);
            let cpu = lock(&shared.cpu).expect("a finished stream reports its CPU");
            assert!(cpu.own.total() <= cpu.thread.total() + Duration::from_millis(1));
        }
    }

    #[test]
    fn slow_streams_share_loops_and_streams_a_loop_cannot_keep_up_with_move() {
        // Twenty slow streams: a loop waits most of the time, so there are
        // never more loops than CPUs.
        let slow = start(20);
        let mut most = 0;
        for _ in 0..10 {
            for (tx, _, _) in &slow {
                (&*tx).write_all(&[7u8; 6400]).unwrap();
            }
            most = most.max(loop_threads());
            std::thread::sleep(Duration::from_millis(20));
        }
        assert!(
            (1..=cpus()).contains(&most),
            "{most} loops for 20 slow streams on {} CPUs",
            cpus()
        );
        check_ends(slow, &[64_000; 20]);
        // Six bulk senders per CPU: the loops (one per CPU) read six streams
        // each. A reader's copy costs a loopback sender's whole send path less
        // than half as much (tcp1: the server used 34-44 % of a core where the
        // client used 99 %), so a loop of two bulk streams can keep up with
        // them and rightly stays; a loop of six cannot on any share of the
        // CPUs and hands half of them to a new loop. The senders write until
        // that has been seen, for 5 s at most.
        let bulk = start(6 * cpus());
        let stop = Arc::new(AtomicBool::new(false));
        let writers: Vec<_> = bulk
            .iter()
            .map(|(tx, _, _)| {
                let mut tx = tx.try_clone().unwrap();
                let stop = stop.clone();
                std::thread::spawn(move || {
                    let block = vec![1u8; 128 * 1024];
                    let mut sent = 0u64;
                    while !stop.load(Ordering::Relaxed) {
                        tx.write_all(&block).unwrap();
                        sent += block.len() as u64;
                    }
                    sent
                })
            })
            .collect();
        let deadline = Instant::now() + Duration::from_secs(5);
        let mut most = 0;
        while most <= cpus() && Instant::now() < deadline {
            most = most.max(loop_threads());
            std::thread::sleep(Duration::from_millis(10));
        }
        stop.store(true, Ordering::Relaxed);
        let sent: Vec<u64> = writers.into_iter().map(|w| w.join().unwrap()).collect();
        assert!(
            most > cpus(),
            "{} bulk streams on {} CPUs were read by {most} loops at most: no loop handed streams on",
            bulk.len(),
            cpus()
        );
        check_ends(bulk, &sent);
    }
}
