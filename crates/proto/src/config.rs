//! The effective configuration of a test, as both ends agree on it.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Protocol {
    #[default]
    Tcp,
    Udp,
}

/// Who sends: `Forward` is client to server, as iperf3 without `-R`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Direction {
    #[default]
    Forward,
    Reverse,
    Bidir,
}

impl Direction {
    pub fn client_sends(self) -> bool {
        matches!(self, Direction::Forward | Direction::Bidir)
    }
    pub fn server_sends(self) -> bool {
        matches!(self, Direction::Reverse | Direction::Bidir)
    }
}

/// Largest UDP payload over IPv4 (65535 - 20 - 8).
pub const MAX_UDP_PAYLOAD: u32 = 65_507;
/// linkperf's UDP header (sequence number and send time) must fit in a datagram.
pub const MIN_UDP_PAYLOAD: u32 = crate::udp::HEADER_LEN as u32;
/// Bounds Linux accepts for TCP_MAXSEG.
pub const MSS_RANGE: std::ops::RangeInclusive<u32> = 88..=65_495;
/// Longest test, interval or warm-up in seconds: a day.
pub const MAX_SECONDS: f64 = 86_400.0;
/// Most streams one test may open; beyond this it is a mistake, not a test.
pub const MAX_STREAMS: u32 = 256;
/// Shortest `--sample` period: tcp_info's times are in microseconds, but a
/// sleeping thread wakes to within a fraction of a millisecond, no better.
pub const MIN_SAMPLE_S: f64 = 0.001;
/// Longest `--pacing-timer`: a train of a second's datagrams is no longer pacing.
pub const MAX_PACING_TIMER_US: u32 = 1_000_000;
/// Most time-series samples one test may take, all streams together. A
/// remote end's samples travel in its result, one control frame of at most
/// [`crate::codec::MAX_FRAME`] (4 MiB); a sender's sample is up to about 330 bytes of JSON.
pub const MAX_SAMPLES: u64 = 10_000;

/// Everything a test needs, sent by the client and applied by both ends.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TestConfig {
    pub protocol: Protocol,
    pub direction: Direction,
    /// Test length in seconds; ignored when `bytes` is set.
    pub duration_s: f64,
    /// Exact number of bytes to send per direction, split across streams.
    pub bytes: Option<u64>,
    /// Interval between reports in seconds (0 disables interval reports).
    pub interval_s: f64,
    /// Warm-up seconds excluded from the summary.
    pub omit_s: f64,
    pub parallel: u32,
    /// Write size for TCP, datagram payload size for UDP.
    pub length: u32,
    pub sndbuf: Option<u32>,
    pub rcvbuf: Option<u32>,
    pub nodelay: bool,
    pub mss: Option<u32>,
    pub congestion: Option<String>,
    /// SO_MAX_PACING_RATE in bits/s.
    pub pacing_rate: Option<u64>,
    /// Application-level target rate per stream in bits/s; `None` or 0 means unlimited.
    pub bitrate: Option<u64>,
    /// `--pacing-timer`: microseconds a paced UDP sender may send a datagram
    /// ahead of its time to put it in one wake-up's train with the one due
    /// (0: a wake-up per datagram wherever the timer allows); `None` lets the
    /// pacer choose. Absent from older peers' configs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pacing_timer_us: Option<u32>,
    pub dont_fragment: bool,
    pub zerocopy: bool,
    /// Wall-clock start (ms since the Unix epoch) agreed by a controller, for
    /// synchronised campaigns and third-party tests.
    pub start_at_unix_ms: Option<u64>,
    /// The traffic model of each direction and the run's seed; `None` sends
    /// as before (full speed, or `bitrate` evenly paced).
    #[serde(default)]
    pub traffic: Option<Box<linkperf_traffic::Traffic>>,
    /// IP TOS / traffic class byte of data packets (DSCP << 2), set on both
    /// ends before connect and listen.
    #[serde(default)]
    pub tos: Option<u8>,
    /// TCP_WINDOW_CLAMP in bytes on both ends' data sockets, before connect
    /// and listen: the largest window the receiver advertises, whatever the
    /// buffers. Absent from older peers' configs.
    #[serde(default)]
    pub window_clamp: Option<u32>,
    /// `--sample`: seconds between time-series samples of every stream
    /// (tcp_info of a TCP sender, delivered bytes of a receiver); `None`
    /// takes none. Absent from older peers' configs.
    #[serde(default)]
    pub sample_s: Option<f64>,
    /// `-m/--mptcp`: data connections are MPTCP (IPPROTO_MPTCP), the
    /// server's data listener too. Absent from older peers' configs.
    #[serde(default)]
    pub mptcp: bool,
    /// `--skip-rx-copy`: TCP receivers read with MSG_TRUNC, so the kernel
    /// discards the payload instead of copying it (iperf3 3.19's option).
    #[serde(default)]
    pub skip_rx_copy: bool,
    /// `client --doctor`: the path the server examines its own host against
    /// before the test (the same checks `linkperf doctor` makes), answered in
    /// `Ready::doctor`. Absent from older peers' configs; a server that does
    /// not know it ignores it and answers nothing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub doctor: Option<Box<DoctorRequest>>,
}

/// The target path of a doctor examination: its rate, its loaded round-trip
/// time and, when known, its MTU.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct DoctorRequest {
    pub rate_bits_per_second: f64,
    pub rtt_seconds: f64,
    #[serde(default)]
    pub mtu: Option<u64>,
}

impl DoctorRequest {
    /// The bounds `linkperf doctor` accepts (a wire config may hold anything).
    pub fn validate(&self) -> Result<(), String> {
        if !(self.rate_bits_per_second.is_finite()
            && self.rate_bits_per_second > 0.0
            && self.rate_bits_per_second <= 1e15)
        {
            return Err("--doctor: the path's rate must be above 0 and at most 1 Pbit/s".into());
        }
        if !(self.rtt_seconds.is_finite() && self.rtt_seconds > 0.0 && self.rtt_seconds <= 3600.0) {
            return Err("--doctor: the path's RTT must be above 0 and at most an hour".into());
        }
        if self.mtu.is_some_and(|m| !(576..=65_535).contains(&m)) {
            return Err("--doctor: the path's MTU must be 576 to 65535 bytes".into());
        }
        Ok(())
    }
}

impl Default for TestConfig {
    fn default() -> Self {
        TestConfig {
            protocol: Protocol::Tcp,
            direction: Direction::Forward,
            duration_s: 10.0,
            bytes: None,
            interval_s: 1.0,
            omit_s: 0.0,
            parallel: 1,
            length: 128 * 1024,
            sndbuf: None,
            rcvbuf: None,
            nodelay: false,
            mss: None,
            congestion: None,
            pacing_rate: None,
            bitrate: None,
            pacing_timer_us: None,
            dont_fragment: false,
            zerocopy: false,
            start_at_unix_ms: None,
            traffic: None,
            tos: None,
            window_clamp: None,
            sample_s: None,
            mptcp: false,
            skip_rx_copy: false,
            doctor: None,
        }
    }
}

impl TestConfig {
    /// Checks what both ends must refuse, whoever built the config.
    /// The message names the offending option and its valid range.
    pub fn validate(&self) -> Result<(), String> {
        if self.parallel == 0 || self.parallel > MAX_STREAMS {
            return Err(format!(
                "-P must be between 1 and {MAX_STREAMS}, got {}",
                self.parallel
            ));
        }
        // Checked with -n too: the ends turn it into timers, and a peer's
        // wire config may hold anything JSON can (-1, 1e300).
        if !(self.duration_s.is_finite() && self.duration_s >= 0.0)
            || (self.duration_s == 0.0 && self.bytes.is_none())
        {
            return Err("-t must be a positive number of seconds".into());
        }
        if self.duration_s > MAX_SECONDS {
            return Err("-t longer than a day is not a test; split it into sessions".into());
        }
        if let Some(0) = self.bytes {
            return Err("-n must be at least 1 byte".into());
        }
        if !(self.interval_s.is_finite() && self.interval_s >= 0.0) {
            return Err("-i must be 0 (off) or a positive number of seconds".into());
        }
        if self.interval_s > MAX_SECONDS {
            return Err(format!(
                "-i must be at most {MAX_SECONDS} s (a day), got {:e}",
                self.interval_s
            ));
        }
        if self.interval_s > 0.0 && self.interval_s < 0.01 {
            return Err("-i below 0.01 s is too fine to measure; use at least 0.01".into());
        }
        if !(self.omit_s.is_finite() && self.omit_s >= 0.0) {
            return Err("-O must be a non-negative number of seconds".into());
        }
        if self.omit_s > MAX_SECONDS {
            return Err(format!(
                "-O must be at most {MAX_SECONDS} s (a day), got {:e}",
                self.omit_s
            ));
        }
        if self.bytes.is_none() && self.omit_s >= self.duration_s {
            return Err(format!(
                "-O {} omits the whole {} s test",
                self.omit_s, self.duration_s
            ));
        }
        match self.protocol {
            Protocol::Udp => {
                if self.length < MIN_UDP_PAYLOAD || self.length > MAX_UDP_PAYLOAD {
                    return Err(format!(
                        "UDP datagram size must be between {MIN_UDP_PAYLOAD} and {MAX_UDP_PAYLOAD} bytes, got {}",
                        self.length
                    ));
                }
            }
            Protocol::Tcp => {
                if self.length == 0 || self.length > 64 * 1024 * 1024 {
                    return Err(format!(
                        "-l must be between 1 byte and 64M for TCP, got {}",
                        self.length
                    ));
                }
            }
        }
        if let Some(mss) = self.mss {
            if !MSS_RANGE.contains(&mss) {
                return Err(format!(
                    "-M {mss} is out of range: the MSS must be between {} and {} bytes",
                    MSS_RANGE.start(),
                    MSS_RANGE.end()
                ));
            }
        }
        if let Some(cc) = &self.congestion {
            if cc.is_empty()
                || cc.len() > 15
                || !cc.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
            {
                return Err(format!("-C '{cc}' is not a congestion control name"));
            }
        }
        for (name, value) in [
            ("--sndbuf", self.sndbuf),
            ("--rcvbuf", self.rcvbuf),
            ("--window-clamp", self.window_clamp),
        ] {
            if let Some(v) = value {
                if v == 0 || v > 1 << 30 {
                    return Err(format!("{name} must be between 1 byte and 1G, got {v}"));
                }
            }
        }
        self.doctor.as_ref().map_or(Ok(()), |d| d.validate())?;
        self.check_pacing_timer()?;
        self.check_traffic()?;
        self.check_sample()?;
        self.check_protocol_options()
    }

    /// Streams this end and its peer run together (both ways with --bidir).
    pub fn total_streams(&self) -> u32 {
        match self.direction {
            Direction::Bidir => self.parallel.saturating_mul(2),
            _ => self.parallel,
        }
    }

    /// Samples one stream takes at most: the test's length over the period
    /// and a quarter more (a receiver runs on while the sender's buffer
    /// drains), plus the first and the last; a byte-count test, whose length
    /// is unknown, gets the whole budget shared by its streams. A stream that
    /// runs longer has its last sample stretched to its end.
    pub fn samples_per_stream(&self) -> u64 {
        let Some(period) = self.sample_s.filter(|p| *p > 0.0) else {
            return 0;
        };
        let budget = MAX_SAMPLES / u64::from(self.total_streams().max(1));
        if self.bytes.is_some() {
            return budget;
        }
        ((1.25 * self.duration_s / period).ceil() as u64).saturating_add(2)
    }

    /// `--sample` must be measurable (>= 1 ms), fit in the test and give a
    /// bounded number of samples.
    fn check_sample(&self) -> Result<(), String> {
        let Some(p) = self.sample_s else {
            return Ok(());
        };
        if !(p.is_finite() && p >= MIN_SAMPLE_S) {
            return Err(format!(
                "--sample must be at least 1 ms (e.g. --sample 10ms), got {p} s"
            ));
        }
        if self.bytes.is_none() && p > self.duration_s {
            return Err(format!(
                "--sample {p} s is longer than the {} s test; use at most -t",
                self.duration_s
            ));
        }
        let total = self
            .samples_per_stream()
            .saturating_mul(u64::from(self.total_streams()));
        if self.bytes.is_none() && total > MAX_SAMPLES {
            return Err(format!(
                "--sample {p} s gives {total} samples over {} s and {} streams, more than {MAX_SAMPLES}; lengthen the period or shorten the test",
                self.duration_s,
                self.total_streams()
            ));
        }
        Ok(())
    }

    /// `--pacing-timer` shapes a paced UDP sender's trains: at most a second,
    /// and only where a sender is paced (UDP with a `-b` rate).
    fn check_pacing_timer(&self) -> Result<(), String> {
        let Some(us) = self.pacing_timer_us else {
            return Ok(());
        };
        if us > MAX_PACING_TIMER_US {
            return Err(format!(
                "--pacing-timer must be at most 1 s (1000000 us), got {us} us"
            ));
        }
        if self.protocol == Protocol::Udp && self.stream_rate().is_none() {
            return Err(
                "--pacing-timer shapes a paced sender's trains, and this test's senders are not paced (-b 0 or a traffic model); give -b a rate or drop --pacing-timer"
                    .into(),
            );
        }
        Ok(())
    }

    /// A model whose mean rate exceeds what `-b` allows cannot run as asked.
    /// A peer's wire config may carry any model JSON can: it must be one
    /// the text form could give (a schedule divides by its sizes and turns
    /// its times into timers).
    fn check_traffic(&self) -> Result<(), String> {
        if let Some(t) = &self.traffic {
            for model in [&t.forward, &t.reverse] {
                model
                    .check()
                    .map_err(|e| format!("traffic model '{}': {e}", model.text()))?;
            }
        }
        let (Some(t), Some(cap)) = (&self.traffic, self.stream_rate()) else {
            return Ok(());
        };
        for model in [&t.forward, &t.reverse] {
            if let Some(rate) = model.mean_rate_bps().filter(|&r| r > cap as f64) {
                return Err(format!(
                    "traffic model '{}' averages {:.0} bit/s, more than -b {cap} allows; raise -b or slow the model",
                    t.text(),
                    rate
                ));
            }
        }
        Ok(())
    }

    /// True when stream `id` carries client-to-server data (the forward
    /// model's direction): all streams forward, none with -R, the first
    /// `parallel` with --bidir.
    pub fn stream_is_forward(&self, id: u32) -> bool {
        match self.direction {
            Direction::Forward => true,
            Direction::Reverse => false,
            Direction::Bidir => id < self.parallel,
        }
    }

    /// The model and seed stream `id` sends by, when it follows a schedule
    /// (not `full`, not `cbr`).
    pub fn stream_model(&self, id: u32) -> Option<(&linkperf_traffic::Model, u64)> {
        let t = self.traffic.as_ref()?;
        let model = t.model(self.stream_is_forward(id));
        (!model.is_plain()).then_some((model, t.seed.unwrap_or(0)))
    }

    /// Options of the other protocol would be silently ignored: refuse them.
    /// SO_MAX_PACING_RATE (--pacing-rate) is not among them: the fq qdisc
    /// paces UDP sockets by it too.
    fn check_protocol_options(&self) -> Result<(), String> {
        let tcp_only = [
            ("-N", "TCP_NODELAY", self.nodelay),
            ("-M", "TCP_MAXSEG", self.mss.is_some()),
            ("-C", "congestion control", self.congestion.is_some()),
            ("-Z", "sendfile zerocopy", self.zerocopy),
            ("-m", "MPTCP", self.mptcp),
            ("--skip-rx-copy", "MSG_TRUNC receive", self.skip_rx_copy),
            (
                "--window-clamp",
                "TCP_WINDOW_CLAMP",
                self.window_clamp.is_some(),
            ),
        ];
        let udp_only = [
            ("--dont-fragment", "DF bit", self.dont_fragment),
            (
                "--pacing-timer",
                "paced datagram trains",
                self.pacing_timer_us.is_some(),
            ),
        ];
        let (others, ours, protocol, fix) = match self.protocol {
            Protocol::Udp => (&tcp_only[..], "TCP", "-u", "or -u"),
            Protocol::Tcp => (&udp_only[..], "UDP (-u)", "TCP", "or add -u"),
        };
        let set: Vec<_> = others.iter().filter(|(_, _, on)| *on).collect();
        if set.is_empty() {
            return Ok(());
        }
        let names: Vec<String> = set
            .iter()
            .map(|(f, what, _)| format!("{f} ({what})"))
            .collect();
        let flags: Vec<&str> = set.iter().map(|(f, _, _)| *f).collect();
        let (verb, them) = if set.len() == 1 {
            ("applies", flags[0].to_string())
        } else {
            ("apply", "them".to_string())
        };
        Err(format!(
            "{} {verb} to {ours} only and would be ignored with {protocol}; drop {them} {fix}",
            names.join(" and ")
        ))
    }

    /// Bytes each stream must send in `-n` mode: the total split evenly, the
    /// remainder on the first streams, so the sum is exact.
    pub fn bytes_for_stream(&self, index: u32) -> Option<u64> {
        let total = self.bytes?;
        let n = u64::from(self.parallel);
        let base = total / n;
        let extra = u64::from(u64::from(index) < total % n);
        Some(base + extra)
    }

    /// Per-stream application rate in bits/s, `None` for unlimited.
    pub fn stream_rate(&self) -> Option<u64> {
        self.bitrate.filter(|&r| r > 0)
    }

    /// `--pacing-timer` as a duration.
    pub fn pacing_timer(&self) -> Option<std::time::Duration> {
        self.pacing_timer_us
            .map(|us| std::time::Duration::from_micros(u64::from(us)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_split_is_exact() {
        let c = TestConfig {
            bytes: Some(1_000_003),
            parallel: 4,
            ..Default::default()
        };
        let sum: u64 = (0..4).map(|i| c.bytes_for_stream(i).unwrap()).sum();
        assert_eq!(sum, 1_000_003);
        assert_eq!(c.bytes_for_stream(0), Some(250_001));
        assert_eq!(c.bytes_for_stream(3), Some(250_000));
    }

    #[test]
    fn validation_names_the_option() {
        let udp = TestConfig {
            protocol: Protocol::Udp,
            length: 70_000,
            ..Default::default()
        };
        assert!(udp.validate().unwrap_err().contains("65507"));
        let mss = TestConfig {
            mss: Some(10),
            ..Default::default()
        };
        assert!(mss.validate().unwrap_err().starts_with("-M 10"));
        let p = TestConfig {
            parallel: 0,
            ..Default::default()
        };
        assert!(p.validate().unwrap_err().starts_with("-P"));
        let cc = TestConfig {
            congestion: Some("../etc".into()),
            ..Default::default()
        };
        assert!(cc.validate().is_err());
        assert!(TestConfig::default().validate().is_ok());
    }

    /// Found by the control_codec fuzz target (fuzz/artifacts, timeout):
    /// a wire set-up whose ON periods average 0 s passed validation and
    /// the sender's schedule then looked for an ON period forever. Models
    /// the text form refuses are refused on the wire too.
    #[test]
    fn wire_traffic_models_are_checked_like_parsed_ones() {
        let with = |forward: &str| -> TestConfig {
            let mut v = serde_json::to_value(TestConfig::default()).unwrap();
            let model: serde_json::Value = serde_json::from_str(forward).unwrap();
            v["traffic"] = serde_json::json!({
                "profile": null, "forward": model, "reverse": {"model": "full"}, "seed": 7
            });
            serde_json::from_value(v).unwrap()
        };
        let exp = |mean: f64| format!(r#"{{"dist":"exp","mean":{mean:?}}}"#);
        let stochastic = |idt: &str, size: &str, on: &str| {
            format!(
                r#"{{"model":"stochastic","idt":{idt},"size":[{size}],"on_off":{{"on":{on},"off":{}}}}}"#,
                exp(2.0)
            )
        };
        let size = r#"{"dist":"const","value":1200.0}"#;
        assert!(with(&stochastic(&exp(0.001), size, &exp(1.0)))
            .validate()
            .is_ok());
        for bad in [
            stochastic(&exp(0.001), size, &exp(0.0)), // the fuzzer's input
            stochastic(&exp(0.001), "", &exp(1.0)),   // no size: n % 0
            stochastic(&exp(1e300), size, &exp(1.0)), // due times no timer holds
            stochastic(&exp(0.001), size, &exp(1e-300)),
            r#"{"model":"burst","bytes":0,"period_s":0.01,"queue":false}"#.into(),
            r#"{"model":"burst","bytes":1,"period_s":-1.0,"queue":false}"#.into(),
            r#"{"model":"trace","source":"x","gaps":[0.1],"sizes":[1,2]}"#.into(),
            r#"{"model":"trace","source":"x","gaps":[],"sizes":[]}"#.into(),
            r#"{"model":"trace","source":"x","gaps":[-1.0,2.0],"sizes":[1,2]}"#.into(),
        ] {
            let err = with(&bad).validate().unwrap_err();
            assert!(err.starts_with("traffic model"), "{bad}: {err}");
        }
    }

    #[test]
    fn every_timer_is_bounded_even_with_a_byte_count() {
        let with_bytes = |f: fn(&mut TestConfig)| {
            let mut c = TestConfig {
                bytes: Some(1 << 20),
                ..Default::default()
            };
            f(&mut c);
            c.validate()
        };
        assert!(with_bytes(|c| c.duration_s = 0.0).is_ok());
        assert!(with_bytes(|c| c.duration_s = -1.0)
            .unwrap_err()
            .starts_with("-t"));
        assert!(with_bytes(|c| c.duration_s = f64::NAN)
            .unwrap_err()
            .starts_with("-t"));
        assert!(with_bytes(|c| c.interval_s = 1e300)
            .unwrap_err()
            .starts_with("-i"));
        assert!(with_bytes(|c| c.omit_s = 1e300)
            .unwrap_err()
            .starts_with("-O"));
        assert!(with_bytes(|c| c.interval_s = MAX_SECONDS).is_ok());
    }

    #[test]
    fn options_of_the_other_protocol_are_refused() {
        let udp = || TestConfig {
            protocol: Protocol::Udp,
            length: 1460,
            ..Default::default()
        };
        for (config, flag) in [
            (
                TestConfig {
                    nodelay: true,
                    ..udp()
                },
                "-N",
            ),
            (
                TestConfig {
                    mss: Some(1000),
                    ..udp()
                },
                "-M",
            ),
            (
                TestConfig {
                    congestion: Some("reno".into()),
                    ..udp()
                },
                "-C",
            ),
            (
                TestConfig {
                    zerocopy: true,
                    ..udp()
                },
                "-Z",
            ),
        ] {
            let e = config.validate().unwrap_err();
            assert!(e.starts_with(flag) && e.contains("TCP only"), "{e}");
        }
        let df = TestConfig {
            dont_fragment: true,
            ..Default::default()
        };
        let e = df.validate().unwrap_err();
        assert!(e.starts_with("--dont-fragment") && e.contains("UDP"), "{e}");
        // Kernel pacing applies to both; each protocol's own options pass.
        let paced = TestConfig {
            pacing_rate: Some(10_000_000),
            dont_fragment: true,
            ..udp()
        };
        assert_eq!(paced.validate(), Ok(()));
        let tcp = TestConfig {
            nodelay: true,
            mss: Some(1000),
            congestion: Some("reno".into()),
            zerocopy: true,
            pacing_rate: Some(10_000_000),
            ..Default::default()
        };
        assert_eq!(tcp.validate(), Ok(()));
    }
}
