//! What every harness shares: reading a fuzz input as choices, a frame's
//! length prefix, and the checks of a config that passed validation.

use crate::config::TestConfig;
use linkperf_traffic::{Model, Schedule};
use std::time::Duration;

/// Reads a fuzz input as a sequence of choices; past the end every read
/// yields zero or nothing, so any input is a complete program.
pub(crate) struct Input<'a> {
    data: &'a [u8],
}

impl<'a> Input<'a> {
    pub(crate) fn new(data: &'a [u8]) -> Self {
        Input { data }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.data.is_empty()
    }

    pub(crate) fn byte(&mut self) -> u8 {
        let Some((&b, rest)) = self.data.split_first() else {
            return 0;
        };
        self.data = rest;
        b
    }

    pub(crate) fn u32(&mut self) -> u32 {
        u32::from_be_bytes([self.byte(), self.byte(), self.byte(), self.byte()])
    }

    /// Up to `n` bytes (fewer at the end).
    pub(crate) fn take(&mut self, n: usize) -> &'a [u8] {
        let (head, rest) = self.data.split_at(n.min(self.data.len()));
        self.data = rest;
        head
    }

    /// A chunk of 1 to 256 bytes, its length read first.
    pub(crate) fn chunk(&mut self) -> &'a [u8] {
        let n = usize::from(self.byte()) + 1;
        self.take(n)
    }

    pub(crate) fn rest(&mut self) -> &'a [u8] {
        self.take(self.data.len())
    }
}

/// The 4-byte big-endian length that starts a frame (linkperf and iperf3
/// alike); `None` while fewer than 4 bytes are known.
pub(crate) fn declared_len(frame: &[u8]) -> Option<usize> {
    let prefix: [u8; 4] = frame.get(..4)?.try_into().ok()?;
    Some(u32::from_be_bytes(prefix) as usize)
}

/// What both ends do with a config that passed [`TestConfig::validate`]
/// must not panic: turn its times into timers, split `-n` over the streams
/// (exactly: the parts sum to the total), pick each stream's model.
pub(crate) fn check_valid_config(config: &TestConfig) {
    if config.validate().is_err() {
        return;
    }
    for (what, seconds) in [
        ("-t", config.duration_s),
        ("-i", config.interval_s),
        ("-O", config.omit_s),
    ] {
        assert!(
            Duration::try_from_secs_f64(seconds).is_ok(),
            "a valid config's {what} {seconds} is not a duration"
        );
    }
    assert!((1..=crate::config::MAX_STREAMS).contains(&config.parallel));
    if let Some(total) = config.bytes {
        let sum: u128 = (0..config.parallel)
            .map(|i| u128::from(config.bytes_for_stream(i).unwrap()))
            .sum();
        assert_eq!(sum, u128::from(total), "-n split over the streams");
    }
    for id in 0..config.parallel.saturating_mul(2) {
        let _ = config.stream_model(id);
    }
    let _ = config.stream_rate();
    if let Some(traffic) = &config.traffic {
        for forward in [true, false] {
            check_schedule(traffic.model(forward), traffic.seed.unwrap_or(0));
        }
    }
}

/// The first messages of a model's send schedule, as a sending end draws
/// them: each due time a [`Duration`] after the start (the engine's timer)
/// and in order, every message at least a byte.
fn check_schedule(model: &Model, seed: u64) {
    let _ = model.mean_rate_bps();
    if let Some(late) = Schedule::skip_after(model) {
        assert!(Duration::try_from_secs_f64(late).is_ok(), "{model:?}");
    }
    let Some(mut schedule) = Schedule::new(model, seed, 0) else {
        return;
    };
    let mut last = 0.0;
    for _ in 0..64 {
        let m = schedule.next_message();
        assert!(
            Duration::try_from_secs_f64(m.at).is_ok() && m.at >= last,
            "{model:?}: {m:?} after {last}"
        );
        assert!(m.bytes >= 1, "{model:?}: an empty message");
        last = m.at;
    }
}
