//! What to run: a [`TestSpec`] names the server, the protocol, the direction,
//! the streams, sizes, buffers and rates of one throughput test, as a user
//! states them (an unset option keeps its default). The command line, sweeps
//! (`--vary NAME=...`), campaigns and rr's load all describe a test with it;
//! [`TestSpec::config`] derives the wire configuration both ends run.
//!
//! This module knows no command-line parser and runs nothing.

use linkperf_engine::cpu::cpu_count;
use linkperf_proto::{Direction, Protocol, TestConfig};
use linkperf_traffic::Traffic;
use std::net::IpAddr;

/// Which protocol the server speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Peer {
    /// A `linkperf server`.
    #[default]
    Linkperf,
    /// A stock iperf3 server (`iperf3 -s`).
    Iperf3,
}

/// One throughput test, as asked for.
#[derive(Debug, Clone, PartialEq)]
pub struct TestSpec {
    /// Server name or address.
    pub host: String,
    pub port: u16,
    /// Local address to bind.
    pub bind: Option<IpAddr>,
    /// Local port of the data connections (stream i uses PORT + i).
    pub cport: Option<u16>,
    /// 4 or 6 to use one address family only.
    pub family: Option<u8>,
    pub peer: Peer,
    pub protocol: Protocol,
    pub direction: Direction,
    /// Seconds to run (ignored when `bytes` is set).
    pub time: f64,
    /// Send exactly this many bytes instead of running for `time`.
    pub bytes: Option<u64>,
    /// Seconds between interval reports (0: none).
    pub interval: f64,
    /// Seconds omitted from the summary at the start (warm-up).
    pub omit: f64,
    pub parallel: u32,
    /// Write size (TCP) or datagram payload (UDP); default: see [`default_length`].
    pub length: Option<u32>,
    /// Both socket buffers, on both ends; `sndbuf`/`rcvbuf` override it.
    pub window: Option<u32>,
    pub sndbuf: Option<u32>,
    pub rcvbuf: Option<u32>,
    pub nodelay: bool,
    pub mss: Option<u32>,
    pub congestion: Option<String>,
    /// Kernel pacing (SO_MAX_PACING_RATE), bits/s.
    pub pacing_rate: Option<u64>,
    /// Target rate per stream, bits/s; UDP defaults to 1 Mbit/s, 0 is unlimited.
    pub bitrate: Option<u64>,
    /// `--pacing-timer`: microseconds a paced UDP datagram may leave ahead of
    /// its time in a train (`None`: the pacer's default, README's client options).
    pub pacing_timer_us: Option<u32>,
    pub dont_fragment: bool,
    pub zerocopy: bool,
    /// `-m`: MPTCP data connections.
    pub mptcp: bool,
    /// `--skip-rx-copy`: TCP receivers discard the payload (MSG_TRUNC).
    pub skip_rx_copy: bool,
    /// Both clocks are synchronised: one-way delay is meaningful.
    pub clock_sync: bool,
    /// Start at this wall-clock time (ms since the Unix epoch).
    pub start_at: Option<u64>,
    /// The emulated testbed the test crosses (`linkperf testbed exec` says so in
    /// `LINKPERF_TESTBED`): its links' timing over the test goes into the result.
    pub testbed: Option<String>,
    /// How each direction sends (`None`: full speed, or `bitrate` paced);
    /// set with [`TestSpec::set`]`("traffic", ..)`, which picks its seed.
    pub traffic: Option<Traffic>,
    /// The seed asked for (`--traffic-seed`); otherwise each model gets a fresh one.
    pub traffic_seed: Option<u64>,
    /// IP TOS byte of the data packets (DSCP << 2), from --dscp or -S.
    pub tos: Option<u8>,
    /// TCP_WINDOW_CLAMP on both ends: the exact largest window (`-w` sets
    /// buffers, of which the kernel makes a larger window).
    pub window_clamp: Option<u32>,
    /// How long each connect may take (default 5 s).
    pub connect_timeout: Option<std::time::Duration>,
    /// Keep the server's side of the test in the result (`server_output`).
    pub server_output: bool,
    /// The user's note, kept in the result (`extra_data`) and the archive.
    pub extra_data: Option<String>,
    /// `--sample`: seconds between time-series samples of every stream.
    pub sample: Option<f64>,
    /// `--path`: the path described for a prediction beside the result
    /// (docs/model.md), keys over the testbed's when it runs in one.
    pub path: Option<String>,
    /// `client --doctor`: the path the server examines its host against
    /// before the test (its answer comes back in the result's `doctor`).
    pub doctor: Option<linkperf_proto::config::DoctorRequest>,
}

impl TestSpec {
    /// A 10 s single-stream TCP test towards `host` on linkperf's port.
    pub fn new(host: impl Into<String>) -> TestSpec {
        TestSpec {
            host: host.into(),
            port: linkperf_proto::DEFAULT_PORT,
            bind: None,
            cport: None,
            family: None,
            peer: Peer::Linkperf,
            protocol: Protocol::Tcp,
            direction: Direction::Forward,
            time: 10.0,
            bytes: None,
            interval: 1.0,
            omit: 0.0,
            parallel: 1,
            length: None,
            window: None,
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
            mptcp: false,
            skip_rx_copy: false,
            clock_sync: false,
            start_at: None,
            testbed: None,
            traffic: None,
            traffic_seed: None,
            tos: None,
            window_clamp: None,
            connect_timeout: None,
            server_output: false,
            extra_data: None,
            sample: None,
            path: None,
            doctor: None,
        }
    }

    /// The configuration both ends run, with every default filled in.
    pub fn config(&self) -> TestConfig {
        let udp = self.protocol == Protocol::Udp;
        let bitrate = match (self.bitrate, udp) {
            (Some(0), _) => None,
            (Some(r), _) => Some(r),
            // A model sets its own pace (cbr's is -b's).
            (None, _) if self.traffic.as_ref().is_some_and(|t| !t.is_cbr()) => None,
            (None, true) => Some(1_000_000),
            (None, false) => None,
        };
        let paced = bitrate.is_some() || self.traffic.as_ref().is_some_and(|t| !t.is_plain());
        let sndbuf = self.sndbuf.or(self.window);
        TestConfig {
            protocol: self.protocol,
            direction: self.direction,
            duration_s: self.time,
            bytes: self.bytes,
            interval_s: self.interval,
            omit_s: self.omit,
            parallel: self.parallel,
            length: self.length.unwrap_or_else(|| {
                default_length(udp, paced, sndbuf.is_some(), self.parallel, cpu_count())
            }),
            sndbuf,
            rcvbuf: self.rcvbuf.or(self.window),
            nodelay: self.nodelay,
            mss: self.mss,
            congestion: self.congestion.clone(),
            pacing_rate: self.pacing_rate,
            bitrate,
            pacing_timer_us: self.pacing_timer_us,
            dont_fragment: self.dont_fragment,
            zerocopy: self.zerocopy,
            start_at_unix_ms: self.start_at,
            traffic: self.traffic.clone().map(Box::new),
            tos: self.tos,
            window_clamp: self.window_clamp,
            sample_s: self.sample,
            mptcp: self.mptcp,
            skip_rx_copy: self.skip_rx_copy,
            doctor: self.doctor.map(Box::new),
        }
    }

    /// Checks the test before anything runs: a server is named and the
    /// options fit the protocol. One line saying what is wrong.
    pub fn validate(&self) -> Result<(), String> {
        if self.host.is_empty() {
            return Err("which server? usage: linkperf client HOST [options]".into());
        }
        if self.peer == Peer::Iperf3 && (self.mptcp || self.skip_rx_copy) {
            return Err("-m/--mptcp and --skip-rx-copy need a linkperf server".into());
        }
        if self.peer == Peer::Iperf3
            && (self.tos.is_some() || self.traffic.as_ref().is_some_and(|t| !t.is_plain()))
        {
            return Err(
                "--traffic models and --dscp/-S need a linkperf server; a stock iperf3 server would ignore them"
                    .into(),
            );
        }
        if let Some(t) = &self.traffic {
            if t.is_cbr() && self.protocol == Protocol::Tcp && self.bitrate.unwrap_or(0) == 0 {
                return Err("--traffic cbr needs a rate: add -b RATE".into());
            }
            if t.forward == linkperf_traffic::Model::Full && self.bitrate.unwrap_or(0) > 0 {
                return Err(
                    "--traffic full sends as fast as it can and -b paces: drop -b or use --traffic cbr"
                        .into(),
                );
            }
        }
        self.config().validate()
    }

    /// Sets one option by its `--vary` name (the long option's name:
    /// `window`, `length`, `udp`, ...) from a value as a user writes it.
    pub fn set(&mut self, name: &str, value: &str) -> Result<(), String> {
        let size = |v: &str| -> Result<u32, String> {
            let n = linkperf_units::parse_size(v).map_err(|e| e.to_string())?;
            u32::try_from(n).map_err(|_| format!("{name}={v} is too large"))
        };
        let rate = |v: &str| linkperf_units::parse_rate(v).map_err(|e| e.to_string());
        let seconds = |v: &str| -> Result<f64, String> {
            linkperf_units::parse_duration(v.trim())
                .map(|d| d.as_secs_f64())
                .map_err(|e| e.to_string())
        };
        let on = || {
            matches!(
                value.trim().to_ascii_lowercase().as_str(),
                "on" | "yes" | "true" | "1"
            )
        };
        match name {
            "window" => self.window = Some(size(value)?),
            "sndbuf" => self.sndbuf = Some(size(value)?),
            "rcvbuf" => self.rcvbuf = Some(size(value)?),
            "length" => self.length = Some(size(value)?),
            "mss" => self.mss = Some(size(value)?),
            "bytes" => {
                self.bytes = Some(linkperf_units::parse_size(value).map_err(|e| e.to_string())?)
            }
            "parallel" => {
                let n = linkperf_units::parse_count(value).map_err(|e| e.to_string())?;
                self.parallel =
                    u32::try_from(n).map_err(|_| format!("parallel={value} is too large"))?;
            }
            "bitrate" => self.bitrate = Some(rate(value)?),
            "pacing-rate" => self.pacing_rate = Some(rate(value)?),
            "pacing-timer" => self.pacing_timer_us = Some(parse_pacing_timer(value)?),
            "congestion" => self.congestion = Some(value.to_string()),
            "time" => self.time = seconds(value)?,
            "omit" => self.omit = seconds(value)?,
            "nodelay" => self.nodelay = on(),
            "udp" => self.protocol = if on() { Protocol::Udp } else { Protocol::Tcp },
            "reverse" => self.set_direction(Direction::Reverse, on()),
            "bidir" => self.set_direction(Direction::Bidir, on()),
            "zerocopy" => self.zerocopy = on(),
            "mptcp" => self.mptcp = on(),
            "skip-rx-copy" => self.skip_rx_copy = on(),
            "dont-fragment" => self.dont_fragment = on(),
            "traffic" => self.set_traffic(value, &|p| std::fs::read(p))?,
            "traffic-seed" => {
                let seed = linkperf_units::parse_count(value).map_err(|e| e.to_string())?;
                self.traffic_seed = Some(seed);
                if let Some(t) = self.traffic.as_mut() {
                    t.seed = Some(seed);
                }
            }
            "traffic.idt" | "traffic.size" | "traffic.on" | "traffic.off" => {
                let key = &name["traffic.".len()..];
                let t = self
                    .traffic
                    .as_mut()
                    .ok_or_else(|| format!("{name}: choose a model with --traffic first"))?;
                t.forward.set_term(key, value)?;
                t.reverse.set_term(key, value)?;
                t.profile = None;
            }
            "dscp" => self.tos = Some(parse_dscp(value)? << 2),
            "tos" => self.tos = Some(parse_tos(value)?),
            "clamp" | "window-clamp" => self.window_clamp = Some(size(value)?),
            "sample" => self.sample = Some(seconds(value)?),
            other => return Err(format!("'{other}' cannot vary")),
        }
        Ok(())
    }

    /// Chooses a traffic model or profile (`load` reads trace files), with
    /// the seed asked for or a fresh one, kept in the result.
    pub fn set_traffic(
        &mut self,
        text: &str,
        load: linkperf_traffic::model::Loader,
    ) -> Result<(), String> {
        let mut t = Traffic::parse(text, load)?;
        t.seed = Some(self.traffic_seed.unwrap_or_else(fresh_seed));
        self.traffic = Some(t);
        Ok(())
    }

    /// `reverse=on` or `bidir=on` selects that direction; `=off` turns it
    /// off (back to forward) and leaves the other one alone.
    fn set_direction(&mut self, which: Direction, on: bool) {
        if on {
            self.direction = which;
        } else if self.direction == which {
            self.direction = Direction::Forward;
        }
    }
}

/// The write size (TCP) or datagram payload (UDP) when `-l` is not given,
/// for `streams` parallel streams on a host of `cpus` CPUs.
///
/// A TCP sender with a CPU of its own, whose send buffer the kernel sizes,
/// writes 1 MiB at a time: each `send` has a cost of its own besides the copy
/// (a wake-up of the receiver's CPU, among others), and one stream on
/// loopback carried 1.4-1.8x as much with 1 MiB writes as with iperf3's
/// 128 KiB, its core equally busy; two streams on 2 CPUs 1.14x. The others
/// keep 128 KiB (bench/RESULTS.md):
/// - streams that share CPUs: 8 streams on 2 CPUs carried 7-16 % less with
///   1 MiB writes, which evict each other from the cores' caches;
/// - a send buffer set by hand (`-w`, `--sndbuf`): with `-w 32K` over seed
///   004's 8.8 ms path, 1 MiB writes carried half of what 128 KiB ones did;
/// - paced senders (`-b`, a traffic model): the pacer releases a write at a
///   time, and a larger one would leave as a longer burst.
///
/// More than 1 MiB gained nothing measurable, and the shared payload and the
/// receivers' read regions are 1 MiB.
pub fn default_length(udp: bool, paced: bool, sndbuf_set: bool, streams: u32, cpus: u32) -> u32 {
    if udp {
        1460
    } else if paced || sndbuf_set || streams > cpus {
        128 * 1024
    } else {
        1024 * 1024
    }
}

/// A seed nobody chose: the clock's nanoseconds, mixed.
pub fn fresh_seed() -> u64 {
    let mut x = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0)
        ^ u64::from(std::process::id()) << 40;
    linkperf_traffic::rng::splitmix64(&mut x)
}

/// DSCP code points by name (RFC 2474, 2597, 3246, 5865) or number.
const DSCP_NAMES: &[(&str, u8)] = &[
    ("cs0", 0),
    ("cs1", 8),
    ("cs2", 16),
    ("cs3", 24),
    ("cs4", 32),
    ("cs5", 40),
    ("cs6", 48),
    ("cs7", 56),
    ("af11", 10),
    ("af12", 12),
    ("af13", 14),
    ("af21", 18),
    ("af22", 20),
    ("af23", 22),
    ("af31", 26),
    ("af32", 28),
    ("af33", 30),
    ("af41", 34),
    ("af42", 36),
    ("af43", 38),
    ("ef", 46),
    ("va", 44),
    ("le", 1),
    ("be", 0),
    ("default", 0),
];

/// A DSCP as a name (EF, AF41, CS5) or a number 0-63 (decimal or 0x hex).
pub fn parse_dscp(text: &str) -> Result<u8, String> {
    let t = text.trim().to_ascii_lowercase();
    if let Some((_, v)) = DSCP_NAMES.iter().find(|(n, _)| *n == t) {
        return Ok(*v);
    }
    parse_byte(&t)
        .filter(|&v| v < 64)
        .ok_or_else(|| {
            format!("--dscp '{text}' is not a DSCP; accepted: 0-63 or a name (EF, AF11-AF43, CS0-CS7, VA, LE)")
        })
}

/// A TOS byte as iperf3's -S takes it: 0-255, decimal, 0x hex or 0 octal.
pub fn parse_tos(text: &str) -> Result<u8, String> {
    parse_byte(text.trim()).ok_or_else(|| {
        format!("-S '{text}' is not a TOS byte; accepted: 0-255, e.g. 0xb8 (DSCP EF) or 184")
    })
}

fn parse_byte(t: &str) -> Option<u8> {
    let t = t.to_ascii_lowercase();
    let v = if let Some(hex) = t.strip_prefix("0x") {
        u32::from_str_radix(hex, 16).ok()?
    } else if t.len() > 1 && t.starts_with('0') {
        u32::from_str_radix(&t[1..], 8).ok()?
    } else {
        t.parse::<u32>().ok()?
    };
    u8::try_from(v).ok()
}

/// `--pacing-timer`'s value in microseconds: a bare number is microseconds
/// (iperf3's unit), or a duration with a unit (`250us`, `1ms`); 0 to 1 s.
pub fn parse_pacing_timer(value: &str) -> Result<u32, String> {
    let bad = || {
        format!(
            "'{value}' is not a pacing timer; accepted: 0 to 1000000 microseconds (e.g. 250), or a duration with a unit (250us, 1ms), at most 1 s"
        )
    };
    let d = linkperf_units::parse_duration_bare_in(value, std::time::Duration::from_micros(1))
        .map_err(|_| bad())?;
    let us = d.as_secs_f64() * 1e6;
    if us > f64::from(linkperf_proto::config::MAX_PACING_TIMER_US) {
        return Err(bad());
    }
    Ok(us.round() as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pacing_timer_is_microseconds_bare_or_a_duration_with_a_unit() {
        for (text, us) in [
            ("250", 250),
            ("0", 0),
            ("2.5", 3),
            ("250us", 250),
            ("1ms", 1000),
        ] {
            assert_eq!(parse_pacing_timer(text), Ok(us), "{text}");
        }
        assert_eq!(parse_pacing_timer("1s"), Ok(1_000_000));
        for bad in ["2s", "1000001", "fast", "", "-5"] {
            let e = parse_pacing_timer(bad).unwrap_err();
            assert!(e.contains("0 to 1000000 microseconds"), "{bad}: {e}");
        }
    }

    #[test]
    fn defaults_follow_the_protocol() {
        let mut s = TestSpec::new("h");
        assert_eq!(s.config().length, 1024 * 1024);
        s.parallel = 1 + cpu_count();
        assert_eq!(s.config().length, 128 * 1024, "more streams than CPUs");
        s.parallel = 1;
        s.set("window", "32K").unwrap();
        assert_eq!(s.config().length, 128 * 1024, "a send buffer set by hand");
        s.window = None;
        assert_eq!(s.config().bitrate, None);
        s.set("bitrate", "100M").unwrap();
        assert_eq!(s.config().length, 128 * 1024, "a paced TCP sender");
        s.set("bitrate", "0").unwrap();
        assert_eq!(s.config().length, 1024 * 1024, "-b 0: unpaced");
        s.set("length", "64K").unwrap();
        assert_eq!(s.config().length, 64 * 1024, "-l wins");
        s.length = None;
        s.bitrate = None;
        s.set("udp", "on").unwrap();
        assert_eq!(s.config().length, 1460);
        assert_eq!(s.config().bitrate, Some(1_000_000));
        s.set("bitrate", "0").unwrap();
        assert_eq!(s.config().bitrate, None);
    }

    #[test]
    fn window_sets_both_buffers_unless_one_is_given() {
        let mut s = TestSpec::new("h");
        s.set("window", "64K").unwrap();
        s.set("sndbuf", "8K").unwrap();
        let c = s.config();
        assert_eq!((c.sndbuf, c.rcvbuf), (Some(8192), Some(65536)));
    }

    #[test]
    fn a_window_clamp_reaches_the_config_and_is_tcp_only() {
        let mut s = TestSpec::new("h");
        s.set("clamp", "64K").unwrap();
        assert_eq!(s.config().window_clamp, Some(65536));
        assert_eq!(s.config().rcvbuf, None, "the clamp is not a buffer");
        s.set("udp", "on").unwrap();
        let e = s.validate().unwrap_err();
        assert!(e.starts_with("--window-clamp"), "{e}");
    }

    #[test]
    fn directions_switch_and_switch_off() {
        let mut s = TestSpec::new("h");
        s.set("bidir", "on").unwrap();
        s.set("reverse", "off").unwrap();
        assert_eq!(s.direction, Direction::Bidir);
        s.set("reverse", "on").unwrap();
        assert_eq!(s.direction, Direction::Reverse);
        s.set("reverse", "off").unwrap();
        assert_eq!(s.direction, Direction::Forward);
    }

    #[test]
    fn dscp_names_and_tos_bytes() {
        assert_eq!(parse_dscp("EF"), Ok(46));
        assert_eq!(parse_dscp("af41"), Ok(34));
        assert_eq!(parse_tos("0xb8"), Ok(184));
        assert_eq!(parse_tos("184"), Ok(184));
        assert!(parse_dscp("64").unwrap_err().contains("0-63"));
        assert!(parse_tos("256").unwrap_err().contains("0-255"));
        let mut s = TestSpec::new("h");
        s.set("dscp", "EF").unwrap();
        assert_eq!(s.config().tos, Some(0xb8));
    }

    #[test]
    fn a_model_sets_its_own_rate_and_keeps_its_seed() {
        let mut s = TestSpec::new("h");
        s.set("udp", "on").unwrap();
        s.set("traffic-seed", "7").unwrap();
        s.set("traffic", "idt=exp:1ms;size=const:1200").unwrap();
        let c = s.config();
        assert_eq!(c.bitrate, None);
        assert_eq!(c.traffic.as_ref().unwrap().seed, Some(7));
        s.set("traffic.idt", "exp:500us").unwrap();
        assert_eq!(
            s.config().traffic.unwrap().forward.text(),
            "idt=exp:500us;size=const:1200"
        );
        // 9.6 Mbit/s of Poisson traffic does not fit under -b 5M.
        s.set("traffic.idt", "exp:1ms").unwrap();
        s.set("bitrate", "5M").unwrap();
        assert!(s.validate().unwrap_err().contains("more than -b"));
        let mut t = TestSpec::new("h");
        t.set("traffic", "cbr").unwrap();
        assert!(t.validate().unwrap_err().contains("needs a rate"));
        let mut i = TestSpec::new("h");
        i.peer = Peer::Iperf3;
        i.set("dscp", "EF").unwrap();
        assert!(i.validate().unwrap_err().contains("need a linkperf server"));
    }

    #[test]
    fn a_sample_period_reaches_the_config_and_is_bounded() {
        let mut s = TestSpec::new("h");
        s.set("sample", "10ms").unwrap();
        assert_eq!(s.config().sample_s, Some(0.01));
        assert_eq!(s.config().samples_per_stream(), 1252);
        s.set("sample", "0.5ms").unwrap();
        assert!(s
            .validate()
            .unwrap_err()
            .starts_with("--sample must be at least 1 ms"));
        s.set("sample", "11s").unwrap();
        assert!(s
            .validate()
            .unwrap_err()
            .contains("longer than the 10 s test"));
        // 100 s at 1 ms: 100,000 samples would not fit in one result.
        s.set("sample", "1ms").unwrap();
        s.set("time", "100s").unwrap();
        assert!(s.validate().unwrap_err().contains("more than 10000"));
        assert!(s.set("sample", "x").is_err());
    }

    #[test]
    fn bad_values_are_refused_whole() {
        let mut s = TestSpec::new("h");
        assert!(s.set("window", "lots").is_err());
        assert!(s.set("length", "8G").unwrap_err().contains("too large"));
        assert_eq!(s.set("host", "x").unwrap_err(), "'host' cannot vary");
    }
}
