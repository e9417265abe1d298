//! Senders that follow a traffic model's schedule (bursts, stochastic
//! models, traces), over TCP and UDP. Each message leaves when it is due,
//! on the pacer's timer (no spinning); a message the sender reaches late is
//! sent at once, so the mean rate holds, and counted as a schedule miss when
//! it is more than [`LATE_LIMIT`] late. `burst` skips a burst a whole period
//! late (NetSpec's semantics) and counts it. What was due but never sent by
//! the end is counted too: a model the sender cannot keep says so.

use crate::pacer::Sleeper;
use crate::stream::{
    close_and_drain, lock, mark_finished, now_unix_ns, payload, send_failed, send_fin, wait_until,
    SideControl, StreamParams, StreamShared, POLL,
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

/// Follows the schedule, calling `send(bytes)` for each message when due;
/// `send` returns the bytes it sent, or `None` when the stream must stop.
fn follow(
    shared: &StreamShared,
    ctl: &SideControl,
    p: &StreamParams,
    mut send: impl FnMut(u64) -> Option<u64>,
) {
    let Some((model, seed)) = p.model.clone() else {
        return;
    };
    let Some(mut schedule) = Schedule::new(&model, seed, p.stream_id) else {
        return;
    };
    let skip_after = Schedule::skip_after(&model).map(Duration::from_secs_f64);
    let (mut sleeper, mut tally) = (Sleeper::default(), Tally::new());
    raise_priority();
    wait_until(p.start);
    shared
        .started_unix_ns
        .store(now_unix_ns(), Ordering::Relaxed);
    let mut sent_bytes = 0u64;
    let end = p.end;
    loop {
        let msg = schedule.next_message();
        let due = p.start + Duration::from_secs_f64(msg.at);
        if end.is_some_and(|e| due >= e) {
            // Nothing more is due: wait for the end like any sender.
            if let Some(e) = end {
                wait_for(e, &mut sleeper, ctl);
            }
            break;
        }
        let mut bytes = msg.bytes;
        if let Some(limit) = p.byte_limit {
            if sent_bytes >= limit {
                break;
            }
            bytes = bytes.min(limit - sent_bytes);
        }
        tally.due += 1;
        tally.offered_bytes += bytes;
        shared
            .offered_bytes
            .store(tally.offered_bytes, Ordering::Relaxed);
        let now = if wait_for(due, &mut sleeper, ctl) {
            Instant::now()
        } else {
            tally.unsent += 1;
            break;
        };
        if end.is_some_and(|e| now >= e) {
            tally.unsent += 1;
            break;
        }
        let late = now.saturating_duration_since(due);
        if skip_after.is_some_and(|s| late >= s) {
            tally.skipped += 1;
            continue;
        }
        let error_ns = if now >= due {
            late.as_nanos() as f64
        } else {
            -((due - now).as_nanos() as f64)
        };
        let Some(n) = send(bytes) else {
            break;
        };
        sent_bytes += n;
        tally.sent += 1;
        tally.late += u64::from(late > LATE_LIMIT);
        tally.error_sum_ns += error_ns;
        let _ = tally.errors_ns.record((error_ns.abs() as u64).max(1));
    }
    // Due before the end (or the stop) but never reached: the sender fell behind.
    let stopped_at = end.map_or_else(Instant::now, |e| e.min(Instant::now()));
    while tally.unsent < MAX_UNSENT_COUNT {
        let msg = schedule.next_message();
        if p.start + Duration::from_secs_f64(msg.at) >= stopped_at {
            break;
        }
        tally.due += 1;
        tally.unsent += 1;
        tally.offered_bytes += msg.bytes;
    }
    let seconds = stopped_at.saturating_duration_since(p.start).as_secs_f64();
    *lock(&shared.schedule) = Some(tally.stats(model.text(), seed, seconds));
}

/// A TCP sender: each message is one write of its size (in pieces if it
/// is larger than the write buffer).
pub fn tcp(mut sock: TcpStream, shared: Arc<StreamShared>, ctl: Arc<SideControl>, p: StreamParams) {
    let _ = sock.set_write_timeout(Some(POLL));
    let buf = payload(p.length.max(64 * 1024));
    let mut total = 0u64;
    follow(&shared, &ctl, &p, |bytes| {
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

/// A UDP sender: a message leaves as datagrams of at most `-l` bytes (at
/// least linkperf's 16-byte header), each numbered and stamped as it goes.
pub fn udp(sock: UdpSocket, shared: Arc<StreamShared>, ctl: Arc<SideControl>, p: StreamParams) {
    let _ = sock.set_write_timeout(Some(POLL));
    let max = p.length.max(udp::HEADER_LEN);
    let fill = payload(max);
    let mut buf = fill.clone();
    // Plain batches of one: the failure handling shared with udp_send wants one.
    let mut batch = crate::mmsg::SendBatch::new(max, 1, &fill);
    let mut seq = 0u64;
    let mut refused_since = None;
    follow(&shared, &ctl, &p, |bytes| {
        let mut left = bytes;
        let mut sent = 0;
        while left > 0 {
            let len = (left.min(max as u64) as usize).max(udp::HEADER_LEN);
            p.udp_format.write_data(&mut buf[..len], seq, now_unix_ns());
            match sock.send(&buf[..len]) {
                Ok(_) => {
                    seq += 1;
                    left = left.saturating_sub(len as u64);
                    sent += len as u64;
                    refused_since = None;
                    shared.packets.store(seq, Ordering::Relaxed);
                    shared.bytes.fetch_add(len as u64, Ordering::Relaxed);
                }
                Err(e) => {
                    if send_failed(
                        e,
                        &mut batch,
                        &sock,
                        &shared,
                        &fill,
                        seq,
                        &mut refused_since,
                    ) || ctl.stop_senders.load(Ordering::Relaxed)
                    {
                        return None;
                    }
                }
            }
        }
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
        follow(&shared, &ctl, &p, |b| {
            std::thread::sleep(Duration::from_millis(30));
            Some(b)
        });
        let s = lock(&shared.schedule).clone().unwrap();
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
            follow(&shared, &ctl, &p, |b| {
                if std::mem::take(&mut first) {
                    // The first burst takes 50 ms: the next two are due meanwhile.
                    std::thread::sleep(Duration::from_millis(50));
                }
                Some(b)
            });
            let s = lock(&shared.schedule).clone().unwrap();
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
}
