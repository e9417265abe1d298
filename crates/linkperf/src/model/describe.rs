//! Path descriptions as users write them (`rate=40M,rtt=20ms,framing=atm`),
//! the flow a test configuration asks for, and the prediction as text.

use super::formulas::{Framing, FRAMING_NAMES};
use super::{Congestion, Flow, ModelError, Path, Prediction};
use linkperf_proto::{Protocol, TestConfig};
use linkperf_units::{format_rate, parse_duration, parse_percent, parse_rate};

/// The keys a path description accepts.
pub const PATH_KEYS: &str =
    "rate=RATE, rtt=DURATION, mtu=BYTES, framing=NAME, loss=PERCENT, ber=NUMBER, cpu=US_PER_MB, per_packet=DURATION, per_byte=DURATION";

/// Sets the keys `text` gives (comma-separated `key=value`) on `path`; keys
/// not given keep their value (a testbed's, or the defaults).
pub fn apply_path_text(path: &mut Path, text: &str) -> Result<(), ModelError> {
    for item in text.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let Some((key, value)) = item.split_once('=') else {
            return Err(ModelError(format!(
                "--path: '{item}' is not key=value (keys: {PATH_KEYS})"
            )));
        };
        let (key, value) = (key.trim(), value.trim());
        let wrong = |e: String| ModelError(format!("--path {key}: {e}"));
        match key {
            "rate" => {
                let r = parse_rate(value).map_err(|e| wrong(e.to_string()))?;
                if r == 0 {
                    return Err(wrong(
                        "the link rate must be above 0 (leave rate out for an unlimited link)"
                            .into(),
                    ));
                }
                path.rate_bps = Some(r as f64);
            }
            "rtt" => {
                path.rtt_s = parse_duration(value)
                    .map_err(|e| wrong(e.to_string()))?
                    .as_secs_f64();
                if path.rtt_s <= 0.0 {
                    return Err(wrong(
                        "the round-trip time must be above 0 (e.g. rtt=20ms)".into(),
                    ));
                }
            }
            "mtu" => {
                path.mtu = value
                    .parse()
                    .map_err(|_| wrong(format!("'{value}' is not a number of bytes (e.g. 1500)")))?
            }
            "framing" => {
                path.framing = Framing::from_name(value).ok_or_else(|| {
                    wrong(format!(
                        "'{value}' is not a framing (accepted: {FRAMING_NAMES})"
                    ))
                })?
            }
            "loss" => path.loss = parse_percent(value).map_err(|e| wrong(e.to_string()))?,
            "ber" => {
                path.ber = value
                    .parse()
                    .map_err(|_| wrong(format!("'{value}' is not a bit error rate (e.g. 1e-7)")))?
            }
            "cpu" => {
                let us: f64 = value.trim_end_matches("us/MB").parse().map_err(|_| {
                    wrong(format!("'{value}' is not microseconds per MB (e.g. 250)"))
                })?;
                path.cpu_us_per_mb = Some(us);
            }
            "per_packet" | "per_byte" => {
                let s = parse_duration(value)
                    .map_err(|e| wrong(e.to_string()))?
                    .as_secs_f64();
                // One processing element, described by its two keys.
                let (p, b) = path.processing.first().copied().unwrap_or((0.0, 0.0));
                path.processing = vec![if key == "per_packet" { (s, b) } else { (p, s) }];
            }
            _ => {
                return Err(ModelError(format!(
                    "--path: unknown key '{key}' (keys: {PATH_KEYS})"
                )))
            }
        }
    }
    Ok(())
}

/// The congestion control a test's sender runs: the one asked for, else
/// this host's default.
pub fn congestion_of(config: &TestConfig) -> Result<Congestion, ModelError> {
    let name = match &config.congestion {
        Some(c) => c.clone(),
        None => std::fs::read_to_string("/proc/sys/net/ipv4/tcp_congestion_control")
            .map(|s| s.trim().to_string())
            .unwrap_or_else(|_| "cubic".into()),
    };
    Congestion::from_name(&name).ok_or_else(|| {
        ModelError(format!(
            "congestion control '{name}' has no model (reno, cubic, bbr)"
        ))
    })
}

/// The flow a test configuration asks for.
pub fn flow_of(config: &TestConfig) -> Result<Flow, ModelError> {
    Ok(Flow {
        protocol: config.protocol,
        streams: config.parallel.max(1),
        mss: config.mss,
        window: config.window_clamp.map(u64::from),
        rcvbuf: config.rcvbuf.map(u64::from),
        sndbuf: config.sndbuf.map(u64::from),
        congestion: match config.protocol {
            Protocol::Tcp => congestion_of(config)?,
            Protocol::Udp => Congestion::Cubic,
        },
        udp_rate_bps: model_of(config)
            .and_then(|m| m.mean_rate_bps())
            .or(config.stream_rate().map(|r| r as f64)),
        udp_length: match config.protocol {
            Protocol::Udp => model_of(config)
                .and_then(|m| m.mean_message_bytes())
                .map_or(config.length, |m| mean_datagram(m, config.length)),
            Protocol::Tcp => Flow::default().udp_length,
        },
    })
}

/// The traffic model the test's (first) sender follows, if it has one.
fn model_of(config: &TestConfig) -> Option<&linkperf_traffic::Model> {
    let t = config.traffic.as_ref()?;
    Some(t.model(config.stream_is_forward(0)))
}

/// The mean datagram of messages of `mean` bytes sent in datagrams of at most `length`.
fn mean_datagram(mean: f64, length: u32) -> u32 {
    let per_message = (mean / f64::from(length.max(1))).ceil().max(1.0);
    ((mean / per_message).round() as u32).clamp(1, length.max(1))
}

/// The prediction for people: the value and binding bound, then each bound.
pub fn render(p: &Prediction) -> String {
    let mut out = format!(
        "predicted  {}  (bound by {})\n",
        format_rate(p.value),
        p.binding
    );
    for (name, value) in &p.bounds {
        let mark = if *name == p.binding { "*" } else { " " };
        out.push_str(&format!("  {mark} {name:<20} {}\n", format_rate(*value)));
    }
    for (name, value) in &p.reference {
        out.push_str(&format!(
            "    {name:<20} {}  (reference)\n",
            format_rate(*value)
        ));
    }
    out.push_str(&format!(
        "  payload {} B per packet, packet loss {:.4}%, round trip {:.3} ms\n",
        p.payload_bytes,
        p.packet_loss * 100.0,
        p.rtt_s * 1e3
    ));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use linkperf_proto::Direction;

    #[test]
    fn path_text_sets_only_its_keys() {
        let mut p = Path {
            rate_bps: Some(1e6),
            ..Path::default()
        };
        apply_path_text(&mut p, "rtt=20ms, framing=atm,loss=1%,ber=1e-7").unwrap();
        assert_eq!(p.rate_bps, Some(1e6));
        assert_eq!(p.rtt_s, 0.02);
        assert_eq!(p.framing, Framing::AtmAal5);
        assert_eq!(p.loss, 0.01);
        assert_eq!(p.ber, 1e-7);
        let e = apply_path_text(&mut p, "framing=token-ring").unwrap_err().0;
        assert!(e.contains("framing") && e.contains("atm-aal5"), "{e}");
        assert!(apply_path_text(&mut p, "speed=1G")
            .unwrap_err()
            .0
            .contains("unknown key"));
        assert!(apply_path_text(&mut p, "rate").is_err());
        assert!(apply_path_text(&mut p, "rtt=0ms")
            .unwrap_err()
            .0
            .contains("above 0"));
        assert!(apply_path_text(&mut p, "rate=0")
            .unwrap_err()
            .0
            .contains("above 0"));
    }

    /// A traffic model's flow is modelled at its mean rate and datagram, not at `-l`'s.
    #[test]
    fn a_traffic_model_gives_the_flow_its_rate_and_datagram() {
        let load =
            |_: &str| -> std::io::Result<Vec<u8>> { Err(std::io::ErrorKind::NotFound.into()) };
        let udp = |text: &str, bitrate: Option<u64>, direction: Direction| TestConfig {
            protocol: Protocol::Udp,
            length: 1460,
            bitrate,
            direction,
            traffic: Some(Box::new(
                linkperf_traffic::Traffic::parse(text, &load).unwrap(),
            )),
            ..TestConfig::default()
        };
        // 1,000 datagrams/s of 1200 bytes: 9.6 Mbit/s; -b only caps it.
        let f = flow_of(&udp(
            "idt=exp:1ms;size=const:1200",
            Some(20_000_000),
            Direction::Forward,
        ))
        .unwrap();
        assert_eq!((f.udp_length, f.udp_rate_bps), (1200, Some(9.6e6)));
        // A 3000-byte message leaves as three datagrams of 1000 under -l 1460.
        let f = flow_of(&udp(
            "idt=const:10ms;size=const:3000",
            None,
            Direction::Reverse,
        ))
        .unwrap();
        assert_eq!((f.udp_length, f.udp_rate_bps), (1000, Some(2.4e6)));
        // cbr is paced at -b in datagrams of -l.
        let f = flow_of(&udp("cbr", Some(5_000_000), Direction::Forward)).unwrap();
        assert_eq!((f.udp_length, f.udp_rate_bps), (1460, Some(5e6)));
    }
}
