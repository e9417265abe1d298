//! The transaction loops on a persistent flow: keep up to a burst of
//! requests in flight at a pace, match the answers, time out lost UDP
//! transactions, and a single probe for `--cold`. They open no connection
//! and build no report.

use super::control::fail;
use super::flow::{poll_readable, Flow};
use super::recorder::Recorder;
use crate::client::ClientError;
use crate::rr::report::RrInterval;
use std::collections::VecDeque;
use std::io::ErrorKind;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// TCP: a server silent this long (default) has stopped answering.
pub(super) const TCP_STALL: Duration = Duration::from_secs(10);
/// UDP: no answer at all for this long (default) ends the test.
const UDP_STALL: Duration = Duration::from_secs(10);
/// UDP adaptive loss timeout: 3x the slowest RTT seen, within these bounds.
const AUTO_TIMEOUT_MIN: Duration = Duration::from_millis(50);
pub(super) const AUTO_TIMEOUT_MAX: Duration = Duration::from_secs(3);
/// A paced sender behind schedule catches up at most this much.
pub(super) const MAX_PACING_DEBT: Duration = Duration::from_millis(10);

/// When a phase of transactions ends.
pub(super) struct Budget<'a> {
    pub(super) deadline: Option<Instant>,
    pub(super) count: Option<u64>,
    pub(super) cancel: &'a AtomicBool,
    /// Ends the phase when true (the load finished, or started).
    pub(super) until: Option<&'a AtomicBool>,
}

impl Budget<'_> {
    #[inline]
    pub(super) fn over(&self, now: Instant, attempted: u64) -> bool {
        self.deadline.is_some_and(|d| now >= d)
            || self.count.is_some_and(|c| attempted >= c)
            || self.cancel.load(Ordering::Relaxed)
            || self.until.is_some_and(|u| u.load(Ordering::Relaxed))
    }
}

/// How the transactions of a phase are sent.
#[derive(Clone, Copy)]
pub(super) struct Pace {
    pub(super) burst: usize,
    pub(super) gap: Option<Duration>,
    /// UDP: fixed loss timeout; TCP: stall timeout. None = defaults.
    pub(super) timeout: Option<Duration>,
}

/// The UDP loss timeout learnt from the slowest RTT so far.
pub(super) fn auto_timeout(max_rtt: Duration) -> Duration {
    (max_rtt * 3).clamp(AUTO_TIMEOUT_MIN, AUTO_TIMEOUT_MAX)
}

/// The requests of one `run_flow` call still waiting for an answer, and when
/// the next may go.
struct InFlight {
    outstanding: VecDeque<(u64, Instant)>,
    udp: bool,
    /// UDP: the loss timeout; TCP: how long a silent server is waited for.
    timeout: Duration,
    /// UDP: no answer at all for this long ends the test.
    stall: Duration,
    /// `rec.attempted` when the call began: the budget counts from here.
    first_attempt: u64,
    sending: bool,
    next_send: Instant,
    last_answer: Instant,
}

impl InFlight {
    fn new(udp: bool, rec: &Recorder, pace: Pace, now: Instant) -> InFlight {
        let timeout = match (udp, pace.timeout) {
            (_, Some(t)) => t,
            (true, None) if rec.max_rtt > Duration::ZERO => auto_timeout(rec.max_rtt),
            (true, None) => AUTO_TIMEOUT_MAX,
            (false, None) => TCP_STALL,
        };
        InFlight {
            outstanding: VecDeque::with_capacity(pace.burst),
            udp,
            timeout,
            stall: pace.timeout.map_or(UDP_STALL, |t| UDP_STALL.max(t * 2)),
            first_attempt: rec.attempted,
            sending: true,
            next_send: now,
            last_answer: now,
        }
    }

    /// Sends while the window is open and the schedule allows.
    #[inline]
    fn fill(
        &mut self,
        flow: &mut Flow,
        rec: &mut Recorder,
        pace: Pace,
        budget: &Budget,
        next_seq: &mut u64,
        now: Instant,
    ) -> Result<(), ClientError> {
        while self.sending && self.outstanding.len() < pace.burst {
            if let Some(gap) = pace.gap {
                if now < self.next_send {
                    break;
                }
                self.next_send += gap;
                if self.next_send + MAX_PACING_DEBT < now {
                    self.next_send = now;
                }
            }
            let seq = *next_seq;
            *next_seq += 1;
            let sent = Instant::now();
            flow.send(seq)
                .map_err(|e| fail(format!("sending a request: {e}")))?;
            self.outstanding.push_back((seq, sent));
            rec.attempted += 1;
            if budget
                .count
                .is_some_and(|c| rec.attempted - self.first_attempt >= c)
            {
                self.sending = false;
            }
        }
        Ok(())
    }

    /// Waits for one answer (or the socket's timeout) and records it; returns
    /// the time it came.
    #[inline]
    fn receive(
        &mut self,
        flow: &mut Flow,
        rec: &mut Recorder,
        pace: Pace,
        next_seq: u64,
    ) -> Result<Instant, ClientError> {
        match flow.recv() {
            Ok(Some(answer)) => {
                let now = Instant::now();
                match self.take(answer.seq) {
                    Some((_, sent)) => {
                        rec.record(sent, now, answer.server_rx_ns);
                        self.last_answer = now;
                        if self.udp && pace.timeout.is_none() {
                            let auto = auto_timeout(rec.max_rtt);
                            // Grow only, and only by a margin: each change is a system call.
                            if auto > self.timeout + self.timeout / 4 {
                                self.timeout = auto;
                                flow.set_timeout(self.timeout);
                            }
                        }
                    }
                    None if answer.seq.is_some_and(|s| s < next_seq) => rec.late += 1,
                    None => {}
                }
                Ok(now)
            }
            Ok(None) => Ok(Instant::now()),
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                Err(fail(format!(
                    "the server stopped answering: no response for {} s on the TCP connection",
                    self.timeout.as_secs_f64()
                )))
            }
            Err(e) => Err(fail(format!("waiting for a response: {e}"))),
        }
    }

    /// The request an answer is for: TCP answers the oldest, UDP names it.
    #[inline]
    fn take(&mut self, seq: Option<u64>) -> Option<(u64, Instant)> {
        match seq {
            None => self.outstanding.pop_front(),
            Some(seq) if self.outstanding.front().is_some_and(|f| f.0 == seq) => {
                self.outstanding.pop_front()
            }
            Some(seq) => self
                .outstanding
                .iter()
                .position(|o| o.0 == seq)
                .and_then(|i| self.outstanding.remove(i)),
        }
    }

    /// UDP: a transaction unanswered for the timeout is lost; a server
    /// silent for the stall time ends the test.
    #[inline]
    fn expire(&mut self, now: Instant, rec: &mut Recorder) -> Result<(), ClientError> {
        // The slack keeps a wake-up a hair early from costing a second timeout.
        let slack = self.timeout / 16;
        while let Some(&(_, sent)) = self.outstanding.front() {
            if now + slack >= sent + self.timeout {
                self.outstanding.pop_front();
                rec.lose();
            } else {
                break;
            }
        }
        if now.saturating_duration_since(self.last_answer) > self.stall {
            return Err(fail(format!(
                "the server stopped answering: no UDP response for {} s ({} transactions lost); is UDP blocked?",
                self.stall.as_secs(),
                rec.lost
            )));
        }
        Ok(())
    }
}

/// Runs transactions on `flow` until the budget is spent, then waits for the
/// ones in flight. Sequence numbers continue from `next_seq`.
pub(super) fn run_flow(
    flow: &mut Flow,
    rec: &mut Recorder,
    pace: Pace,
    budget: &Budget,
    next_seq: &mut u64,
    on_interval: &mut dyn FnMut(&RrInterval),
) -> Result<(), ClientError> {
    let udp = matches!(flow, Flow::Udp { .. });
    let mut now = Instant::now();
    let mut w = InFlight::new(udp, rec, pace, now);
    flow.set_timeout(w.timeout);
    loop {
        if w.sending && budget.over(now, rec.attempted - w.first_attempt) {
            w.sending = false;
        }
        if !w.sending && w.outstanding.is_empty() {
            break;
        }
        w.fill(flow, rec, pace, budget, next_seq, now)?;
        if w.outstanding.is_empty() {
            // Paced and nothing in flight: sleep until the next send.
            if w.sending {
                if let Some(wait) = w.next_send.checked_duration_since(Instant::now()) {
                    std::thread::sleep(wait);
                }
            }
            now = Instant::now();
            rec.tick(now, udp, on_interval);
            continue;
        }
        // Paced with room in the window: wait for an answer or the next send.
        if w.sending && pace.gap.is_some() && w.outstanding.len() < pace.burst {
            let wait = w.next_send.saturating_duration_since(Instant::now());
            if !poll_readable(flow.fd(), wait) {
                now = Instant::now();
                rec.tick(now, udp, on_interval);
                continue;
            }
        }
        now = w.receive(flow, rec, pace, *next_seq)?;
        if udp {
            w.expire(now, rec)?;
        }
        rec.tick(now, udp, on_interval);
    }
    Ok(())
}

/// One transaction on a persistent flow, waiting at most `timeout`; answers
/// to earlier (timed-out) requests are discarded.
pub(super) fn single(
    flow: &mut Flow,
    seq: u64,
    timeout: Duration,
) -> Result<Option<(Instant, Instant, Option<u64>)>, ClientError> {
    flow.set_timeout(timeout);
    let sent = Instant::now();
    flow.send(seq)
        .map_err(|e| fail(format!("sending a request: {e}")))?;
    loop {
        match flow.recv() {
            Ok(Some(a)) if a.seq.is_none() || a.seq == Some(seq) => {
                return Ok(Some((sent, Instant::now(), a.server_rx_ns)))
            }
            Ok(Some(_)) => {}
            Ok(None) => {
                if sent.elapsed() >= timeout - timeout / 16 {
                    return Ok(None);
                }
            }
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                return Err(fail(format!(
                    "the server stopped answering: no response for {} s on the TCP connection",
                    timeout.as_secs_f64()
                )))
            }
            Err(e) => return Err(fail(format!("waiting for a response: {e}"))),
        }
    }
}
