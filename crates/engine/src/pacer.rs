//! Sending at a target rate on an absolute schedule, without spinning.
//!
//! The due time of each send is computed from the start and the bits sent so
//! far, so errors never accumulate. Between sends the pacer sleeps on the
//! kernel's high-resolution timer (stream threads set a 1 ns timer slack) and
//! asks to wake early by the timer's own lateness, which it measures as it
//! goes; it never busy-waits, since a spinning sender costs a whole core.
//!
//! Every wake-up costs CPU (the timer interrupt, two context switches; in a
//! virtual machine also exits to the hypervisor): about as much as sending
//! four datagrams. So one wake-up sends a short train in one system call (GSO
//! where the kernel has it): by default at least [`MIN_TRAIN`] datagrams,
//! none of them more than [`MAX_AHEAD`] ahead of its time, and never a wake-up
//! more often than every [`WAKE_FACTOR`] timer latencies. `--pacing-timer`
//! sets how far ahead a datagram may go instead (0: one per wake-up wherever
//! the timer allows). The gaps stay even at the scale of a few hundred
//! microseconds at most, never iperf3's 1 ms bursts.
//!
//! A sender the host did not run catches up at most 20 ms of its schedule, at twice
//! its rate; the rest is written off and counted, so its result says how much it did
//! not send and why ([`skip_warning`]).

use hdrhistogram::Histogram;
use linkperf_proto::results::GapStats;
use std::time::{Duration, Instant};

/// How far the schedule may fall behind before the pacer gives up catching
/// up: a longer stall (the process was descheduled) then costs rate, visible
/// in the result, instead of an unbounded burst.
const MAX_BACKLOG: Duration = Duration::from_millis(20);
/// After a stall the pacer catches up at most this many times the target
/// rate: the backlog drains as a denser stream, not as one burst (a burst of
/// up to MAX_BACKLOG at system-call speed is what "1 ms bursts" look like).
const CATCH_UP: f64 = 2.0;
/// The timer's lateness assumed until the first sleeps have measured it.
const INITIAL_WAKE_LATE: Duration = Duration::from_micros(20);
/// Wake-ups come at most once per this many timer latencies. A wake-up costs
/// about as much CPU as the timer is late (on the 2-vCPU Firecracker VM of
/// bench/RESULTS.md: 12-20 µs late, 15-22 µs of CPU per sleep), so this keeps
/// the CPU spent on waking near 1/WAKE_FACTOR of a core. Measured there at
/// 1 Gbit/s: 2 gave 50 % of a core and a 50 µs p99 gap, 4 gave 30 % and
/// 85-110 µs, 8 gave 15 % and 230 µs, against 43-49 % for iperf3 (1 ms bursts).
pub const WAKE_FACTOR: f64 = 4.0;
/// Datagrams a wake-up sends at least, by default, where that keeps each of
/// them within [`MAX_AHEAD`] of its time: a wake-up costs about the CPU of
/// four sends on the 2-vCPU VM of bench/RESULTS.md (32 µs, against 7.2 µs for
/// iperf3's `sendto` of 1460 bytes and 2.1 µs a datagram in a GSO train), so
/// waking for each at 100 Mbit/s took 1.9x iperf3's CPU; trains of four, 1.0x.
pub const MIN_TRAIN: f64 = 4.0;
/// The furthest ahead of its time a datagram leaves in a default train: half
/// iperf3's 1 ms pacing timer. Below about 23 Mbit/s of 1460-byte datagrams
/// (gaps over 500 µs) every datagram has a wake-up of its own.
pub const MAX_AHEAD: Duration = Duration::from_micros(500);
/// Weight of a new lateness measurement (an exponential moving average).
const LATE_GAIN: f64 = 1.0 / 16.0;
/// The most a sleep ends before the time asked (and so the most a send on a
/// schedule leaves early): half the timer's lateness, but never more than
/// this, however late a loaded machine's timer has become (a sleep that
/// would end too early is asked for and ends late instead).
pub const MAX_EARLY: Duration = Duration::from_micros(10);

/// Sleeps to a point in time on the high-resolution timer, waking early by
/// the timer's own measured lateness (shared by the pacer and by senders
/// that follow a traffic model's schedule).
#[derive(Debug, Clone)]
pub struct Sleeper {
    /// How late a sleep ends past the time asked, smoothed, in seconds.
    wake_late: f64,
}

impl Default for Sleeper {
    fn default() -> Self {
        Sleeper {
            wake_late: INITIAL_WAKE_LATE.as_secs_f64(),
        }
    }
}

impl Sleeper {
    /// The timer's measured lateness.
    pub fn wake_late(&self) -> Duration {
        Duration::from_secs_f64(self.wake_late)
    }

    /// How early a sleep may end: half the timer's lateness, at most
    /// [`MAX_EARLY`]. Waking for anything due sooner would end later than
    /// it is due by more than that.
    pub fn early_margin(&self) -> Duration {
        Duration::from_secs_f64(self.wake_late / 2.0).min(MAX_EARLY)
    }

    /// Sleeps so as to wake at `at`: asks the timer for `at` minus its usual
    /// lateness, and returns without sleeping when `at` is nearer than
    /// [`Sleeper::early_margin`] (sending a little early beats waking later than `at`).
    pub fn sleep_until(&mut self, at: Instant) {
        let margin = self.early_margin().as_secs_f64();
        loop {
            let now = Instant::now();
            let left = at.saturating_duration_since(now).as_secs_f64();
            if left <= margin {
                return;
            }
            let ask = Duration::from_secs_f64((left - self.wake_late).max(1e-9));
            sleep(ask);
            let late = Instant::now()
                .saturating_duration_since(now + ask)
                .as_secs_f64();
            // A preemption is not the timer's lateness: cap what one sample moves.
            let late = late.min(4.0 * self.wake_late + 1e-6);
            self.wake_late += LATE_GAIN * (late - self.wake_late);
        }
    }
}

pub struct Pacer {
    rate_bps: f64,
    start: Instant,
    sent_bits: f64,
    last_send: Option<Instant>,
    gaps: Histogram<u64>,
    sleeper: Sleeper,
    /// No send before this, so catching up stays within CATCH_UP times the rate.
    not_before: Option<Instant>,
    /// How far ahead of its time a datagram may leave in a train (`None`: the
    /// default rule, [`MIN_TRAIN`] within [`MAX_AHEAD`]).
    ahead: Option<Duration>,
    /// Schedule time written off after falling more than MAX_BACKLOG behind: how
    /// often, how much in all, the longest.
    skips: u64,
    skipped: Duration,
    longest_skip: Duration,
}

impl Pacer {
    pub fn new(rate_bps: u64) -> Self {
        Pacer {
            rate_bps: rate_bps as f64,
            start: Instant::now(),
            sent_bits: 0.0,
            last_send: None,
            gaps: Histogram::new_with_bounds(1, 60_000_000_000, 3).expect("valid histogram bounds"),
            sleeper: Sleeper::default(),
            not_before: None,
            ahead: None,
            skips: 0,
            skipped: Duration::ZERO,
            longest_skip: Duration::ZERO,
        }
    }

    /// Lets a datagram leave up to `ahead` before its time in a train
    /// (`--pacing-timer`); `None` keeps the default rule.
    pub fn with_timer(mut self, ahead: Option<Duration>) -> Self {
        self.ahead = ahead;
        self
    }

    pub fn restart(&mut self, at: Instant) {
        self.start = at;
        self.sent_bits = 0.0;
        self.last_send = None;
        self.not_before = None;
    }

    fn due(&self) -> Instant {
        self.start + Duration::from_secs_f64(self.sent_bits / self.rate_bps)
    }

    /// The timer's measured lateness.
    pub fn wake_late(&self) -> Duration {
        self.sleeper.wake_late()
    }

    /// Blocks until `bits` may be sent (true), or until `deadline` when they
    /// are due only after it (false: nothing more may be sent).
    pub fn wait(&mut self, bits: u64, deadline: Option<Instant>) -> bool {
        self.wait_batch(bits, 1, deadline) > 0
    }

    /// Datagrams of `bits` one wake-up carries: those due within the time a
    /// train may span (the last leaves at most that far ahead of its time),
    /// and never so few that wake-ups come more often than WAKE_FACTOR timer
    /// latencies. By default a train spans [`MIN_TRAIN`] gaps, at most
    /// [`MAX_AHEAD`]; `--pacing-timer` sets the span.
    pub fn train(&self, bits: u64, max: usize) -> usize {
        let gap = bits.max(1) as f64 / self.rate_bps;
        let span = match self.ahead {
            Some(ahead) => ahead.as_secs_f64(),
            None => ((MIN_TRAIN - 1.0) * gap).min(MAX_AHEAD.as_secs_f64()),
        };
        let by_timer = (WAKE_FACTOR * self.sleeper.wake_late / gap).ceil();
        let by_span = 1.0 + (span / gap + 1e-9).floor();
        (by_timer.max(by_span) as usize).clamp(1, max.max(1))
    }

    /// Blocks until the next unit of `bits` is due, then returns how many to
    /// send now (at most `max`): a train when sends are due too often to wake
    /// for each, up to twice that when the sender fell behind.
    pub fn wait_batch(&mut self, bits: u64, max: usize, deadline: Option<Instant>) -> usize {
        let mut due = self.due();
        let now = Instant::now();
        if now > due + MAX_BACKLOG {
            // Fell far behind: re-anchor rather than burst.
            let skip = now - (due + MAX_BACKLOG);
            self.start += skip;
            self.skips += 1;
            self.skipped += skip;
            self.longest_skip = self.longest_skip.max(skip);
            due = self.due();
        }
        let train = self.train(bits, max);
        let at = self.not_before.map_or(due, |n| due.max(n));
        if let Some(d) = deadline.filter(|d| at >= *d) {
            // Due after the end: wait for the end, send nothing. (Waking early
            // must never let a send due after the deadline slip in before it.)
            self.sleeper.sleep_until(d);
            return 0;
        }
        self.sleeper.sleep_until(at);
        let sent_at = Instant::now();
        if deadline.is_some_and(|d| sent_at >= d) {
            // Woke past the end (the host did not run it): nothing more may be sent.
            return 0;
        }
        let behind = sent_at.saturating_duration_since(self.due()).as_secs_f64();
        let overdue = 1 + (behind * self.rate_bps / bits.max(1) as f64) as usize;
        let units = overdue
            .min(CATCH_UP as usize * train)
            .max(train)
            .clamp(1, max.max(1));
        let gap = bits.max(1) as f64 / self.rate_bps;
        self.not_before = Some(sent_at + Duration::from_secs_f64(gap * units as f64 / CATCH_UP));
        if let Some(last) = self.last_send {
            let _ = self.gaps.record((sent_at - last).as_nanos().max(1) as u64);
            // Datagrams of one batch leave back to back.
            let _ = self.gaps.record_n(1, units as u64 - 1);
        }
        self.last_send = Some(sent_at);
        self.sent_bits += (bits * units as u64) as f64;
        units
    }

    /// Ends a schedule at `end` (a time-limited test). A sender the host stopped
    /// running shortly before its end, or in its last sleep, wakes past the end and
    /// stops at once, so the re-anchoring in [`Pacer::wait_batch`] never sees that
    /// stall: when it is more than the catch-up behind, all the schedule time it
    /// missed up to the end is written off (none of it can be caught up now).
    pub fn finish(&mut self, end: Instant) {
        let until = Instant::now().min(end);
        let due = self.due();
        if until > due + MAX_BACKLOG {
            let skip = until - due;
            self.skips += 1;
            self.skipped += skip;
            self.longest_skip = self.longest_skip.max(skip);
        }
    }

    /// The distribution of gaps between sends of `bits`-sized datagrams.
    pub fn gap_stats(&self, bits_per_send: u64) -> GapStats {
        let target_us = bits_per_send as f64 / self.rate_bps * 1e6;
        let h = &self.gaps;
        let n = h.len();
        let back_to_back = if n > 0 {
            h.count_between(0, (target_us * 100.0) as u64) as f64 / n as f64
        } else {
            0.0
        };
        GapStats {
            sends: n + u64::from(self.last_send.is_some()),
            target_us,
            mean_us: h.mean() / 1e3,
            p50_us: h.value_at_quantile(0.5) as f64 / 1e3,
            p99_us: h.value_at_quantile(0.99) as f64 / 1e3,
            max_us: h.max() as f64 / 1e3,
            back_to_back_fraction: back_to_back,
            skips: self.skips,
            skipped_ms: self.skipped.as_secs_f64() * 1e3,
            longest_skip_ms: self.longest_skip.as_secs_f64() * 1e3,
        }
    }
}

/// A warning when paced senders wrote off noticeable schedule time (1 % of the
/// `seconds` they ran, on average): they sent that much less than asked because
/// the host did not run them, which the path had no part in.
pub fn skip_warning<'a>(gaps: impl Iterator<Item = &'a GapStats>, seconds: f64) -> Option<String> {
    let (mut streams, mut skips, mut skipped, mut longest) = (0u32, 0u64, 0.0, 0.0f64);
    for g in gaps {
        streams += 1;
        skips += g.skips;
        skipped += g.skipped_ms;
        longest = longest.max(g.longest_skip_ms);
    }
    if streams == 0 || seconds <= 0.0 || skipped / 1e3 < 0.01 * seconds * f64::from(streams) {
        return None;
    }
    let catch_up = MAX_BACKLOG.as_millis();
    Some(format!(
        "the paced sender fell more than its {catch_up} ms catch-up behind schedule {skips} time(s) \
         ({skipped:.0} ms of sending time given up over {streams} stream(s) of the {seconds:.2} s \
         test, longest {longest:.0} ms) and sent that much less than asked: the host did not run \
         it, the path had no part in it"
    ))
}

/// A relative sleep on CLOCK_MONOTONIC's high-resolution timer; its precision
/// is the thread's timer slack (1 ns on stream threads).
fn sleep(d: Duration) {
    let mut ts = libc::timespec {
        tv_sec: d.as_secs() as libc::time_t,
        tv_nsec: d.subsec_nanos() as libc::c_long,
    };
    loop {
        let mut left = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: both timespecs are valid for the call.
        let rc = unsafe { libc::clock_nanosleep(libc::CLOCK_MONOTONIC, 0, &ts, &mut left) };
        if rc != libc::EINTR {
            return;
        }
        ts = left;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trains_carry_four_datagrams_within_500_us_or_what_the_timer_allows() {
        let bits = 1460 * 8;
        let train =
            |rate: u64, timer: Option<Duration>| Pacer::new(rate).with_timer(timer).train(bits, 64);
        // Gaps of 116.8 us at 100 Mbit/s: four datagrams, the last 350 us early.
        assert_eq!(train(100_000_000, None), 4);
        // 233.6 us at 50 Mbit/s: 500 us holds two more gaps, not three.
        assert_eq!(train(50_000_000, None), 3);
        // 584 us at 20 Mbit/s: none may go 500 us early, each has its wake-up.
        assert_eq!(train(20_000_000, None), 1);
        // 11.68 us at 1 Gbit/s: the timer's floor (4 x the 20 us assumed) rules.
        assert_eq!(train(1_000_000_000, None), 7);
        // --pacing-timer 0: a wake-up per datagram where the timer allows.
        assert_eq!(train(100_000_000, Some(Duration::ZERO)), 1);
        assert_eq!(train(1_000_000_000, Some(Duration::ZERO)), 7);
        // --pacing-timer 1ms at 100 Mbit/s: 8 more gaps fit (934 us), iperf3's bursts.
        assert_eq!(train(100_000_000, Some(Duration::from_millis(1))), 9);
        // Never beyond what one call may send.
        assert_eq!(train(10_000_000_000, None), 64);
    }

    #[test]
    fn a_stall_into_the_end_is_written_off_up_to_the_end() {
        // 1 Mbit/s, 1000-bit sends: 100 ms sent on schedule, then no run for the
        // rest of a 400 ms test; the sender wakes past its end and stops.
        let mut p = Pacer::new(1_000_000);
        let start = Instant::now() - Duration::from_millis(500);
        p.restart(start);
        p.sent_bits = 100_000.0;
        p.finish(start + Duration::from_millis(400));
        let g = p.gap_stats(1000);
        assert_eq!(g.skips, 1);
        // Due at 100 ms and never caught up: the remaining 300 ms written off.
        assert!((g.skipped_ms - 300.0).abs() < 1.0, "{g:?}");
        // On schedule at the end: nothing written off.
        let mut q = Pacer::new(1_000_000);
        let start = Instant::now() - Duration::from_millis(100);
        q.restart(start);
        q.sent_bits = 100_000.0;
        q.finish(start + Duration::from_millis(100));
        assert_eq!(q.gap_stats(1000).skips, 0);
    }

    #[test]
    fn holds_the_rate_and_spaces_sends_evenly() {
        // 10 Mbit/s in 1250-byte sends = one send per ms, for 200 ms. A stall of
        // tens of ms is caught up at twice the rate, gaps of 500 µs that move the
        // median: run again when the probes saw the machine stall.
        linkperf_testsupport::stall::retry_when_stalled(|| {
            let mut p = Pacer::new(10_000_000);
            p.restart(Instant::now());
            let start = Instant::now();
            for _ in 0..200 {
                p.wait(10_000, None);
            }
            let elapsed = start.elapsed().as_secs_f64();
            // Never faster than the rate; slower only if the machine stalls us.
            assert!((0.195..0.5).contains(&elapsed), "{elapsed}");
            let g = p.gap_stats(10_000);
            assert_eq!(g.sends, 200);
            assert!((g.target_us - 1000.0).abs() < 1e-6);
            // The median gap is the schedule's, whatever a loaded machine does to the tail.
            assert!((g.p50_us - 1000.0).abs() < 150.0, "{g:?}");
        });
    }

    #[test]
    fn trains_hold_the_rate_and_never_run_ahead_of_the_schedule() {
        // 1 Gbit/s in 1460-byte datagrams: one due every 11.68 µs, closer
        // than a timer wake-up can follow, for 200 ms.
        let (rate, bits) = (1_000_000_000u64, 1460 * 8);
        let mut p = Pacer::new(rate);
        let start = Instant::now();
        p.restart(start);
        let (mut sent, mut wakes) = (0u64, 0u64);
        let per_second = rate as f64 / bits as f64;
        let mut late = p.wake_late();
        while start.elapsed() < Duration::from_millis(200) {
            late = late.max(p.wake_late());
            let n = p.wait_batch(bits, 64, None) as u64;
            // A train leaves when its first datagram is due, or up to half a
            // timer latency before (the sleep would otherwise end after it).
            let due = (start.elapsed() + late / 2).as_secs_f64() * per_second;
            assert!(
                sent as f64 <= due + 1.0,
                "train starts at {sent}, {due:.1} due"
            );
            sent += n;
            wakes += 1;
        }
        let due = start.elapsed().as_secs_f64() * rate as f64 / bits as f64;
        // Behind only by a stall the pacer wrote off (20 ms at most, unless the
        // machine stalled it more than once): at least half of the schedule.
        assert!(sent as f64 >= 0.5 * due, "{sent} of {due:.0}");
        // A train per wake-up when the gap is shorter than the timer's lateness.
        let gap = bits as f64 / rate as f64;
        if WAKE_FACTOR * p.wake_late().as_secs_f64() > 2.0 * gap {
            assert!(wakes < sent, "{wakes} wake-ups for {sent} datagrams");
        }
    }

    #[test]
    fn a_stall_is_caught_up_at_twice_the_rate_not_in_one_burst() {
        // 1 Gbit/s in 1460-byte datagrams, then the sender stalls for 10 ms
        // (less than the 20 ms the pacer catches up at all).
        let (rate, bits) = (1_000_000_000u64, 1460 * 8);
        let per_ms = rate as f64 / bits as f64 / 1000.0;
        let mut p = Pacer::new(rate);
        let start = Instant::now();
        p.restart(start);
        while start.elapsed() < Duration::from_millis(20) {
            p.wait_batch(bits, 64, None);
        }
        std::thread::sleep(Duration::from_millis(10));
        let resumed = Instant::now();
        let (mut sends, mut train) = (Vec::new(), 1);
        while resumed.elapsed() < Duration::from_millis(30) {
            train = train.max(p.train(bits, 64));
            let n = p.wait_batch(bits, 64, None);
            sends.push((resumed.elapsed(), n));
        }
        // No millisecond, the first included, carries more than twice its
        // share, plus the trains straddling its edges.
        let train = train as f64;
        for ms in 0..25u64 {
            let window = Duration::from_millis(ms)..Duration::from_millis(ms + 1);
            let n: usize = sends
                .iter()
                .filter(|(t, _)| window.contains(t))
                .map(|(_, n)| n)
                .sum();
            assert!(
                n as f64 <= CATCH_UP * per_ms + 4.0 * train,
                "{n} datagrams in ms {ms} after the stall ({per_ms:.1} per ms due)"
            );
        }
    }

    #[test]
    fn a_stall_past_the_catch_up_is_written_off_and_counted() {
        // 10 Mbit/s in 1250-byte sends (one per ms); then the sender is not run for
        // 100 ms: 20 ms of it are caught up, the other 80 written off.
        let mut p = Pacer::new(10_000_000);
        p.restart(Instant::now());
        for _ in 0..10 {
            p.wait(10_000, None);
        }
        // (A loaded machine may already have held it up as long: counted from here.)
        let before = p.gap_stats(10_000);
        std::thread::sleep(Duration::from_millis(100));
        p.wait(10_000, None);
        let g = p.gap_stats(10_000);
        assert_eq!(g.skips, before.skips + 1);
        // At least the 80 ms; more only by what the machine added to the sleep.
        let skipped = g.skipped_ms - before.skipped_ms;
        assert!((79.0..200.0).contains(&skipped), "{skipped} ms written off");
        // `skipped` is a difference of two sums: equal to the one skip up to rounding.
        assert!(g.longest_skip_ms >= skipped - 1e-6, "{g:?}");
        let warning = skip_warning([&g].into_iter(), 1.0).expect("8 % of a 1 s test");
        assert!(
            warning.contains("20 ms catch-up") && warning.contains("ms of sending time given up"),
            "{warning}"
        );
        // Under 1 % of the test's time, or no stream paced: no warning.
        assert_eq!(skip_warning([&g].into_iter(), 60.0), None);
        assert_eq!(skip_warning(std::iter::empty(), 1.0), None);
    }
}
