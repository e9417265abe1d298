//! Senders that follow a traffic model's schedule (bursts, stochastic
//! models, traces), over TCP and UDP. Each message leaves when it is due,
//! on the pacer's timer (no spinning); a message the sender reaches late is
//! sent at once, so the mean rate holds, and counted as a schedule miss when
//! it is more than [`LATE_LIMIT`] late. Over UDP, messages due together (the
//! sender is behind) leave in one sendmmsg, each datagram still numbered and stamped, each message's error
//! taken against its own due time; none leaves more than
//! [`MAX_EARLY`](crate::pacer::MAX_EARLY) early. `burst` skips a burst a whole period
//! late (NetSpec's semantics) and counts it. What was due but never sent by
//! the end is counted too: a model the sender cannot keep says so.

use crate::pacer::Sleeper;
use crate::stream::{
    close_and_drain, gso_to_peer, lock, mark_finished, now_unix_ns, payload, send_failed, send_fin,
    wait_until, SideControl, StreamParams, StreamShared, POLL,
};
use hdrhistogram::Histogram;
use linkperf_proto::results::ScheduleStats;
use linkperf_proto::udp;
use linkperf_traffic::Schedule;
use std::io::{ErrorKind, Write};
use std::net::{TcpStream, UdpSocket};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A message sent later than this after its due time is a schedule miss:
/// past what a loaded machine's timer wake-ups explain (tens of µs), short
/// of what a receiver's playout or a NetSpec period would notice.
pub const LATE_LIMIT: Duration = Duration::from_millis(1);
/// Most messages counted as unsent after the end (bounds the counting loop).
const MAX_UNSENT_COUNT: u64 = 10_000_000;

/// What the sender counted while following the schedule.
struct Tally {
    errors_ns: Histogram<u64>,
    error_sum_ns: f64,
    error_abs_sum_ns: f64,
    due: u64,
    sent: u64,
    late: u64,
    skipped: u64,
    unsent: u64,
    offered_bytes: u64,
}

impl Tally {
    fn new() -> Tally {
        Tally {
            errors_ns: Histogram::new_with_bounds(1, 60_000_000_000, 3)
                .expect("valid histogram bounds"),
            error_sum_ns: 0.0,
            error_abs_sum_ns: 0.0,
            due: 0,
            sent: 0,
            late: 0,
            skipped: 0,
            unsent: 0,
            offered_bytes: 0,
        }
    }

    fn stats(&self, model: String, seed: u64, seconds: f64) -> ScheduleStats {
        let h = &self.errors_ns;
        let us = |ns: u64| ns as f64 / 1e3;
        ScheduleStats {
            model,
            seed,
            messages_due: self.due,
            messages_sent: self.sent,
            late: self.late,
            skipped: self.skipped,
            unsent: self.unsent,
            misses: self.late + self.skipped + self.unsent,
            late_limit_us: LATE_LIMIT.as_secs_f64() * 1e6,
            offered_bytes: self.offered_bytes,
            offered_bits_per_second: if seconds > 0.0 {
                self.offered_bytes as f64 * 8.0 / seconds
            } else {
                0.0
            },
            error_p50_us: us(h.value_at_quantile(0.5)),
            error_p99_us: us(h.value_at_quantile(0.99)),
            error_max_us: us(h.max()),
            error_mean_us: if self.sent > 0 {
                self.error_sum_ns / self.sent as f64 / 1e3
            } else {
                0.0
            },
            error_abs_mean_us: if self.sent > 0 {
                self.error_abs_sum_ns / self.sent as f64 / 1e3
            } else {
                0.0
            },
        }
    }
}

/// Asks the scheduler to run this thread first when it wakes (nice -20,
/// where the process may): a schedule is kept only if the sender runs when a
/// message is due, and on a busy machine a thread of ordinary priority
/// waits milliseconds for a core. The thread sleeps between messages, so
/// it takes no more CPU than it did; only its wake-ups come sooner.
pub(crate) fn raise_priority() {
    // SAFETY: gettid and setpriority take plain integers; a refusal
    // (no CAP_SYS_NICE) leaves the priority as it was.
    unsafe {
        let tid = libc::syscall(libc::SYS_gettid) as libc::id_t;
        libc::setpriority(libc::PRIO_PROCESS, tid, -20);
    }
}

/// Sleeps until `at`, in slices short enough to honour a stop; false when stopped.
fn wait_for(at: Instant, sleeper: &mut Sleeper, ctl: &SideControl) -> bool {
    loop {
        if ctl.stop_senders.load(Ordering::Relaxed) {
            return false;
        }
        let left = at.saturating_duration_since(Instant::now());
        if left <= POLL {
            sleeper.sleep_until(at);
            return true;
        }
        std::thread::sleep(left - POLL);
    }
}

/// What the schedule offers next.
enum Draw {
    /// A message due at this time, of this many bytes (counted as due).
    Message(Instant, u64),
    /// The next message is due after the horizon asked for (it is kept).
    Later,
    /// Nothing more is due before the end of the test.
    End,
    /// The byte limit (`-n`) is reached: nothing more is due.
    Limit,
}

/// A schedule being followed: what is due next, and what was counted.
struct Follower {
    schedule: Schedule,
    /// Drawn but not yet taken (due after the horizon or the end).
    held: Option<linkperf_traffic::Message>,
    start: Instant,
    end: Option<Instant>,
    byte_limit: u64,
    /// Bytes sent, plus those of the train being built (for `-n`).
    taken_bytes: u64,
    skip_after: Option<Duration>,
    tally: Tally,
}

impl Follower {
    /// The next message if it is due by `horizon` (any time: `None`).
    fn draw(&mut self, horizon: Option<Instant>, shared: &StreamShared) -> Draw {
        let msg = self
            .held
            .take()
            .unwrap_or_else(|| self.schedule.next_message());
        let due = self.start + Duration::from_secs_f64(msg.at);
        let (over, later) = (
            self.end.is_some_and(|e| due >= e),
            horizon.is_some_and(|h| due > h),
        );
        if over || later || self.taken_bytes >= self.byte_limit {
            self.held = Some(msg);
            return match (over, later) {
                (true, _) => Draw::End,
                (_, true) => Draw::Later,
                _ => Draw::Limit,
            };
        }
        let bytes = msg.bytes.min(self.byte_limit - self.taken_bytes);
        self.tally.due += 1;
        self.tally.offered_bytes += bytes;
        shared
            .offered_bytes
            .store(self.tally.offered_bytes, Ordering::Relaxed);
        Draw::Message(due, bytes)
    }

    /// Puts a message reached at `now` on the train, unless `burst` skips
    /// it for being a whole period late.
    fn board(&mut self, due: Instant, bytes: u64, now: Instant, train: &mut Train) {
        if self
            .skip_after
            .is_some_and(|s| now.saturating_duration_since(due) >= s)
        {
            self.tally.skipped += 1;
            return;
        }
        self.taken_bytes += bytes;
        train.dues.push(due);
        train.sizes.push(bytes);
    }

    /// Counts a train handed over at `sent_at`: each message's error is
    /// against its own due time.
    fn sent(&mut self, train: &Train, sent_at: Instant) {
        for &due in &train.dues {
            let error_ns = if sent_at >= due {
                (sent_at - due).as_nanos() as f64
            } else {
                -((due - sent_at).as_nanos() as f64)
            };
            self.tally.sent += 1;
            self.tally.late += u64::from(sent_at.saturating_duration_since(due) > LATE_LIMIT);
            self.tally.error_sum_ns += error_ns;
            self.tally.error_abs_sum_ns += error_ns.abs();
            let _ = self.tally.errors_ns.record((error_ns.abs() as u64).max(1));
        }
    }

    /// Counts what was due before `stopped_at` but never reached: the
    /// sender fell behind (or was stopped).
    fn count_unsent(&mut self, stopped_at: Instant) {
        while self.tally.unsent < MAX_UNSENT_COUNT {
            let msg = self
                .held
                .take()
                .unwrap_or_else(|| self.schedule.next_message());
            if self.start + Duration::from_secs_f64(msg.at) >= stopped_at {
                break;
            }
            self.tally.due += 1;
            self.tally.unsent += 1;
            self.tally.offered_bytes += msg.bytes;
        }
    }
}

/// The messages one send call carries: due times and sizes, allocated once.
struct Train {
    dues: Vec<Instant>,
    sizes: Vec<u64>,
}

/// Follows the schedule, calling `send(sizes)` with the sizes of the
/// messages to send now: the one the sender woke for (at most
/// [`MAX_EARLY`](crate::pacer::MAX_EARLY) before it is due) and, up to
/// `max_train`, every further one already due, so a sender behind its
/// schedule (messages closer together than one call takes) sends them in
/// one call. `send` returns the bytes it sent,
/// or `None` when the stream must stop.
fn follow(
    shared: &StreamShared,
    ctl: &SideControl,
    p: &StreamParams,
    max_train: usize,
    mut send: impl FnMut(&[u64]) -> Option<u64>,
) {
    let Some((model, seed)) = p.model.clone() else {
        return;
    };
    let Some(schedule) = Schedule::new(&model, seed, p.stream_id) else {
        return;
    };
    let mut f = Follower {
        schedule,
        held: None,
        start: p.start,
        end: p.end,
        byte_limit: p.byte_limit.unwrap_or(u64::MAX),
        taken_bytes: 0,
        skip_after: Schedule::skip_after(&model).map(Duration::from_secs_f64),
        tally: Tally::new(),
    };
    let max_train = max_train.max(1);
    let mut train = Train {
        dues: Vec::with_capacity(max_train),
        sizes: Vec::with_capacity(max_train),
    };
    let mut sleeper = Sleeper::default();
    raise_priority();
    wait_until(p.start);
    shared
        .started_unix_ns
        .store(now_unix_ns(), Ordering::Relaxed);
    let mut limited = false;
    loop {
        let (due, bytes) = match f.draw(None, shared) {
            Draw::Message(due, bytes) => (due, bytes),
            Draw::End | Draw::Later => {
                // Nothing more is due: wait for the end like any sender.
                if let Some(e) = p.end {
                    wait_for(e, &mut sleeper, ctl);
                }
                break;
            }
            Draw::Limit => {
                limited = true;
                break;
            }
        };
        let reached = wait_for(due, &mut sleeper, ctl);
        let now = Instant::now();
        if !reached || p.end.is_some_and(|e| now >= e) {
            f.tally.unsent += 1;
            break;
        }
        train.dues.clear();
        train.sizes.clear();
        f.board(due, bytes, now, &mut train);
        // Only messages already due join it: taking those due within the
        // early margin too sends them back to back with one stamp time, and
        // at low rates that moves the receiver's gap distribution measurably
        // (tests/traffic_statistics.rs).
        while train.dues.len() < max_train {
            match f.draw(Some(now), shared) {
                Draw::Message(due, bytes) => f.board(due, bytes, now, &mut train),
                _ => break,
            }
        }
        if train.dues.is_empty() {
            continue;
        }
        let sent_at = Instant::now();
        let Some(n) = send(&train.sizes) else {
            f.tally.unsent += train.dues.len() as u64;
            break;
        };
        // -n counts what went (a UDP message is never shorter than its header).
        let boarded: u64 = train.sizes.iter().sum();
        f.taken_bytes = f.taken_bytes - boarded + n;
        f.sent(&train, sent_at);
    }
    let stopped_at = p.end.map_or_else(Instant::now, |e| e.min(Instant::now()));
    if !limited {
        f.count_unsent(stopped_at);
    }
    let seconds = stopped_at.saturating_duration_since(p.start).as_secs_f64();
    *lock(&shared.schedule) = Some(Box::new(f.tally.stats(model.text(), seed, seconds)));
}

/// A TCP sender: each message is one write of its size (in pieces if it
/// is larger than the write buffer).
pub fn tcp(mut sock: TcpStream, shared: Arc<StreamShared>, ctl: Arc<SideControl>, p: StreamParams) {
    let _ = sock.set_write_timeout(Some(POLL));
    let buf = payload(p.length.max(64 * 1024));
    let mut total = 0u64;
    follow(&shared, &ctl, &p, 1, |sizes| {
        let bytes = sizes[0];
        let mut left = bytes;
        while left > 0 {
            if ctl.stop_senders.load(Ordering::Relaxed) {
                return None;
            }
            match sock.write(&buf[..left.min(buf.len() as u64) as usize]) {
                Ok(n) => {
                    left -= n as u64;
                    total += n as u64;
                    shared.bytes.store(total, Ordering::Relaxed);
                }
                Err(e)
                    if matches!(
                        e.kind(),
                        ErrorKind::WouldBlock | ErrorKind::TimedOut | ErrorKind::Interrupted
                    ) => {}
                Err(e) => {
                    shared.fail(format!("send failed after {total} bytes: {e}"));
                    return None;
                }
            }
        }
        Some(bytes)
    });
    let data_ended = Instant::now();
    close_and_drain(&mut sock, &ctl);
    mark_finished(&shared, p.start, data_ended);
}

/// Most messages a UDP model sender hands over in one call.
const MAX_TRAIN: usize = 64;
/// Room for the datagrams of one call: 64 of up to 1472 bytes, fewer when
/// `-l` is larger (a larger message goes in several calls).
const TRAIN_BYTES: usize = 64 * 1472;

/// A UDP sender: a message leaves as datagrams of at most `-l` bytes (at
/// least linkperf's 16-byte header), each numbered and stamped as it is
/// written. The messages due together (see [`follow`]) go in one sendmmsg,
/// with GSO where the kernel has it.
pub fn udp(sock: UdpSocket, shared: Arc<StreamShared>, ctl: Arc<SideControl>, p: StreamParams) {
    let _ = sock.set_write_timeout(Some(POLL));
    let max = p.length.max(udp::HEADER_LEN);
    let fill = payload(max);
    let mut train = crate::mmsg::Train::new(max, (TRAIN_BYTES / max).max(1), &fill, p.udp_format);
    if !gso_to_peer(&sock) {
        train.disable_gso();
    }
    // Plain batches of one: the failure handling shared with udp_send wants one.
    let mut batch = crate::mmsg::SendBatch::new(max, 1, &fill);
    let mut seq = 0u64;
    let mut refused_since = None;
    let mut flush = |train: &mut crate::mmsg::Train, seq: u64| -> bool {
        while train.pending() > 0 {
            match train.send(&sock) {
                Ok(_) => refused_since = None,
                Err(e)
                    if train.uses_gso()
                        && matches!(
                            e.raw_os_error(),
                            Some(libc::EINVAL | libc::EIO | libc::ENOPROTOOPT)
                        ) =>
                {
                    // This kernel or device cannot segment UDP: plain datagrams then.
                    train.disable_gso();
                }
                Err(e) => {
                    let sent = seq - train.pending() as u64;
                    if send_failed(
                        e,
                        &mut batch,
                        &sock,
                        &shared,
                        &fill,
                        sent,
                        &mut refused_since,
                    ) || ctl.stop_senders.load(Ordering::Relaxed)
                    {
                        return false;
                    }
                }
            }
        }
        train.clear();
        true
    };
    follow(&shared, &ctl, &p, MAX_TRAIN, |sizes| {
        let mut sent = 0;
        for &bytes in sizes {
            let mut left = bytes;
            loop {
                if train.is_full() && !flush(&mut train, seq) {
                    return None;
                }
                let len = (left.min(max as u64) as usize).max(udp::HEADER_LEN);
                train.push(len, seq, now_unix_ns());
                seq += 1;
                sent += len as u64;
                left = left.saturating_sub(len as u64);
                if left == 0 {
                    break;
                }
            }
        }
        if !flush(&mut train, seq) {
            return None;
        }
        shared.packets.store(seq, Ordering::Relaxed);
        shared.bytes.fetch_add(sent, Ordering::Relaxed);
        Some(sent)
    });
    let data_ended = Instant::now();
    send_fin(&sock, max, seq, p.udp_format);
    mark_finished(&shared, p.start, data_ended);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stream::StreamShared;
    use linkperf_proto::results::Role;
    use linkperf_traffic::Model;

    fn params(model: &str, seconds: f64) -> StreamParams {
        let start = Instant::now() + Duration::from_millis(20);
        StreamParams {
            length: 1460,
            payload: crate::stream::Payload::new(1460),
            rate_bps: None,
            pacing_timer: None,
            byte_limit: None,
            start,
            end: Some(start + Duration::from_secs_f64(seconds)),
            zerocopy: false,
            udp_format: Default::default(),
            model: Some((
                Model::parse(model, &|_| Err(ErrorKind::NotFound.into())).unwrap(),
                5,
            )),
            stream_id: 0,
            window_clamp: None,
            skip_rx_copy: false,
        }
    }

    #[test]
    fn a_sender_that_cannot_keep_up_counts_its_misses() {
        // 100 messages per second due, each taking 30 ms to send: a third
        // of them can go, the rest are late or never sent.
        let shared = StreamShared::new(0, Role::Sender);
        let ctl = SideControl::default();
        let p = params("idt=const:10ms;size=const:100", 0.5);
        follow(&shared, &ctl, &p, 1, |b| {
            std::thread::sleep(Duration::from_millis(30));
            Some(b.iter().sum())
        });
        let s = *lock(&shared.schedule).clone().unwrap();
        // 50 due in 0.5 s, whatever the machine does.
        assert_eq!(s.messages_due, 50, "{s:?}");
        assert!(s.messages_sent <= 17, "{s:?}");
        assert_eq!(s.messages_sent + s.unsent, s.messages_due, "{s:?}");
        assert!(s.misses >= 33, "{s:?}");
        assert_eq!(s.offered_bytes, 5000);
    }

    #[test]
    fn burst_skips_a_late_burst_and_burstq_sends_it() {
        for (model, queue) in [("burst:100:20ms", false), ("burstq:100:20ms", true)] {
            let shared = StreamShared::new(0, Role::Sender);
            let ctl = SideControl::default();
            let p = params(model, 0.2);
            let mut first = true;
            follow(&shared, &ctl, &p, MAX_TRAIN, |b| {
                if std::mem::take(&mut first) {
                    // The first burst takes 50 ms: the next two are due meanwhile.
                    std::thread::sleep(Duration::from_millis(50));
                }
                Some(b.iter().sum())
            });
            let s = *lock(&shared.schedule).clone().unwrap();
            assert_eq!(s.messages_due, 10, "{model}: {s:?}");
            if queue {
                assert_eq!((s.skipped, s.messages_sent), (0, 10), "{model}: {s:?}");
            } else {
                // Bursts due at 20 and 40 ms are reached at 50 ms: the first is
                // 30 ms (over a period) late, skipped; the second 10 ms, sent.
                assert!(s.skipped >= 1, "{model}: {s:?}");
                assert_eq!(s.skipped + s.messages_sent + s.unsent, 10, "{model}: {s:?}");
            }
        }
    }

    #[test]
    fn messages_due_together_leave_in_one_call_never_early_beyond_the_bound() {
        // One message due every 2 µs (500 000 per second) for 0.2 s, each
        // call taking 20 µs: one at a time the sender would fall ten times
        // behind; in trains it sends what is due.
        let shared = StreamShared::new(0, Role::Sender);
        let ctl = SideControl::default();
        let model = "idt=const:2us;size=const:100";
        let p = params(model, 0.2);
        let (mut due, mut calls, mut early) = (
            Schedule::new(&p.model.as_ref().unwrap().0, 5, 0).unwrap(),
            0u64,
            Vec::new(),
        );
        let mut biggest = 0;
        follow(&shared, &ctl, &p, MAX_TRAIN, |sizes| {
            let now = Instant::now();
            for _ in sizes {
                let at = p.start + Duration::from_secs_f64(due.next_message().at);
                if at > now + crate::pacer::MAX_EARLY {
                    early.push(at - now);
                }
            }
            calls += 1;
            biggest = biggest.max(sizes.len());
            let spin = Instant::now();
            while spin.elapsed() < Duration::from_micros(20) {}
            Some(sizes.iter().sum())
        });
        let s = *lock(&shared.schedule).clone().unwrap();
        // 100 000 due in 0.2 s, whatever the machine does.
        assert_eq!(s.messages_due, 100_000, "{s:?}");
        assert_eq!(s.messages_sent + s.unsent, s.messages_due, "{s:?}");
        assert!(
            early.is_empty(),
            "{} sent early by more than {:?}: {:?}",
            early.len(),
            crate::pacer::MAX_EARLY,
            &early[..early.len().min(5)]
        );
        // At most 0.2 s / 20 µs = 10 000 calls carried them: trains of ten
        // and more, up to the limit when behind.
        assert!(calls <= 10_000, "{calls} calls");
        assert!(biggest > 1 && biggest <= MAX_TRAIN, "{biggest}");
        // A train is sent within a call's time of its first message being
        // due, unless the machine stalls the thread: most of them leave
        // before the end.
        assert!(s.messages_sent >= 50_000, "{s:?}");
    }
}
