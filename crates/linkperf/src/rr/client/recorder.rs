//! What one phase of a test measured: the RTT and one-way histograms, the
//! counts, and the interval reports as they fall due. It sends nothing and
//! decides nothing about timing.

use crate::rr::report::RrInterval;
use crate::rr::stats::{self, SignedHistogram};
use hdrhistogram::Histogram;
use std::time::{Duration, Instant};

/// Everything measured in one phase of the test.
pub(super) struct Recorder {
    t0: Instant,
    /// Wall clock at `t0`, to turn monotonic instants into wall time for
    /// one-way delay without a second clock read per transaction.
    wall0_ns: u64,
    owd: bool,
    pub(super) rtt: Histogram<u64>,
    pub(super) forward: SignedHistogram,
    pub(super) reverse: SignedHistogram,
    pub(super) transactions: u64,
    pub(super) attempted: u64,
    pub(super) lost: u64,
    pub(super) late: u64,
    /// Slowest RTT so far, for the adaptive UDP timeout.
    pub(super) max_rtt: Duration,
    // Intervals.
    interval: Option<Duration>,
    pub(super) phase: Option<&'static str>,
    next_tick: Instant,
    tick_start: Instant,
    tick_rtt: Histogram<u64>,
    tick_transactions: u64,
    tick_lost: u64,
    pub(super) intervals: Vec<RrInterval>,
}

impl Recorder {
    pub(super) fn new(
        t0: Instant,
        wall0_ns: u64,
        owd: bool,
        interval: Option<Duration>,
    ) -> Recorder {
        let now = Instant::now();
        Recorder {
            t0,
            wall0_ns,
            owd,
            rtt: stats::new_histogram(),
            forward: SignedHistogram::default(),
            reverse: SignedHistogram::default(),
            transactions: 0,
            attempted: 0,
            lost: 0,
            late: 0,
            max_rtt: Duration::ZERO,
            interval,
            phase: None,
            next_tick: now + interval.unwrap_or(Duration::from_secs(86_400 * 365)),
            tick_start: now,
            tick_rtt: stats::new_histogram(),
            tick_transactions: 0,
            tick_lost: 0,
            intervals: Vec::new(),
        }
    }

    /// Restarts the interval clock (at the start of the measured part).
    pub(super) fn start_intervals(&mut self, now: Instant) {
        self.tick_start = now;
        if let Some(i) = self.interval {
            self.next_tick = now + i;
        }
    }

    fn wall_ns(&self, at: Instant) -> i64 {
        (self.wall0_ns + at.saturating_duration_since(self.t0).as_nanos() as u64) as i64
    }

    #[inline]
    pub(super) fn record(&mut self, sent: Instant, now: Instant, server_rx_ns: Option<u64>) {
        let rtt = now.saturating_duration_since(sent);
        let ns = rtt.as_nanos() as u64;
        stats::record(&mut self.rtt, ns);
        if self.interval.is_some() {
            stats::record(&mut self.tick_rtt, ns);
            self.tick_transactions += 1;
        }
        self.transactions += 1;
        if rtt > self.max_rtt {
            self.max_rtt = rtt;
        }
        if self.owd {
            if let Some(rx) = server_rx_ns {
                let rx = rx as i64;
                self.forward.record(rx - self.wall_ns(sent));
                self.reverse.record(self.wall_ns(now) - rx);
            }
        }
    }

    #[inline]
    pub(super) fn lose(&mut self) {
        self.lost += 1;
        self.tick_lost += 1;
    }

    /// Emits the intervals that ended by `now`.
    #[inline]
    pub(super) fn tick(
        &mut self,
        now: Instant,
        udp: bool,
        on_interval: &mut dyn FnMut(&RrInterval),
    ) {
        if now < self.next_tick {
            return;
        }
        let Some(step) = self.interval else { return };
        while now >= self.next_tick {
            let end = self.next_tick;
            self.emit(end, udp, on_interval);
            self.next_tick += step;
        }
    }

    fn emit(&mut self, end: Instant, udp: bool, on_interval: &mut dyn FnMut(&RrInterval)) {
        let seconds = end.saturating_duration_since(self.tick_start).as_secs_f64();
        let i = RrInterval {
            start: self
                .tick_start
                .saturating_duration_since(self.t0)
                .as_secs_f64(),
            end: end.saturating_duration_since(self.t0).as_secs_f64(),
            phase: self.phase,
            transactions: self.tick_transactions,
            transactions_per_second: if seconds > 0.0 {
                self.tick_transactions as f64 / seconds
            } else {
                0.0
            },
            lost: udp.then_some(self.tick_lost),
            rtt_ms: stats::summarize(&self.tick_rtt),
        };
        on_interval(&i);
        self.intervals.push(i);
        self.tick_rtt.reset();
        self.tick_transactions = 0;
        self.tick_lost = 0;
        self.tick_start = end;
    }

    /// Emits the last, partial interval if it holds anything.
    pub(super) fn flush(
        &mut self,
        now: Instant,
        udp: bool,
        on_interval: &mut dyn FnMut(&RrInterval),
    ) {
        if self.interval.is_some()
            && (self.tick_transactions > 0 || self.tick_lost > 0)
            && now > self.tick_start
        {
            self.emit(now, udp, on_interval);
        }
    }
}

/// Adds one phase to the whole test's totals.
pub(super) fn merge(into: &mut Recorder, from: &Recorder) {
    let _ = into.rtt.add(&from.rtt);
    into.forward.add(&from.forward);
    into.reverse.add(&from.reverse);
    into.transactions += from.transactions;
    into.attempted += from.attempted;
    into.lost += from.lost;
    into.late += from.late;
    into.max_rtt = into.max_rtt.max(from.max_rtt);
    into.intervals.extend(from.intervals.iter().cloned());
}
