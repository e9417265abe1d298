//! Application profiles: named models with documented parameters (their
//! sources are in docs/traffic.md). Each is an ordinary model, written in the
//! same text a user could give, so `linkperf traffic show` prints exactly
//! what runs.

use crate::model::Model;

pub struct Profile {
    pub name: &'static str,
    pub summary: &'static str,
    /// Client to server.
    pub forward: Model,
    /// Server to client, when it differs.
    pub reverse: Option<Model>,
}

/// (name, summary, forward model, reverse model if different)
const TABLE: &[(&str, &str, &str, Option<&str>)] = &[
    (
        "telnet",
        "interactive keystrokes: 1-byte messages, heavy-tailed gaps (Pareto), echoed back",
        "idt=pareto:1.5:500ms;size=const:1",
        None,
    ),
    (
        "ftp",
        "file transfers: lognormal file sizes sent whole, exponential think times between them",
        "idt=exp:10s;size=lognormal:1M:2M",
        None,
    ),
    (
        "www",
        "web pages: small requests one way, SURGE-like lognormal pages back, Pareto think times",
        "idt=pareto:1.5:3s;size=lognormal:350:100",
        Some("idt=pareto:1.5:3s;size=lognormal:27600:59700"),
    ),
    (
        "mpeg",
        "MPEG VBR video: GOP IBBPBBPBBPBB at 25 frames/s, lognormal frame sizes by type",
        "idt=const:40ms;size=lognormal:40000:8000/lognormal:7000:2000/lognormal:7000:2000/\
         lognormal:15000:4000/lognormal:7000:2000/lognormal:7000:2000/lognormal:15000:4000/\
         lognormal:7000:2000/lognormal:7000:2000/lognormal:15000:4000/lognormal:7000:2000/\
         lognormal:7000:2000",
        None,
    ),
    (
        "videoconf",
        "videoconference: 30 frames/s, gamma-distributed frame sizes (Heyman et al.)",
        "idt=const:33.333ms;size=gamma:4:2500",
        None,
    ),
    (
        "voice-g711",
        "voice G.711: 160 bytes of audio + 12 of RTP every 20 ms (64 kbit/s codec)",
        "idt=const:20ms;size=const:172",
        None,
    ),
    (
        "voice-g711-vad",
        "voice G.711 with voice activity detection: ITU-T P.59 talkspurts and pauses",
        "idt=const:20ms;size=const:172;on=exp:1.004s;off=exp:1.587s",
        None,
    ),
    (
        "voice-g729",
        "voice G.729: two 10-byte frames + 12 of RTP every 20 ms (8 kbit/s codec)",
        "idt=const:20ms;size=const:32",
        None,
    ),
    (
        "voice-g729-vad",
        "voice G.729 with voice activity detection: ITU-T P.59 talkspurts and pauses",
        "idt=const:20ms;size=const:32;on=exp:1.004s;off=exp:1.587s",
        None,
    ),
    (
        "dns",
        "DNS: Poisson queries of 40-80 bytes, answers up to the classic 512-byte UDP limit",
        "idt=exp:1s;size=uniform:40:80",
        Some("idt=exp:1s;size=uniform:80:512"),
    ),
    (
        "gaming",
        "online game: small client updates every ~40 ms, larger server snapshots every ~50 ms",
        "idt=normal:40ms:4ms;size=normal:80:10",
        Some("idt=normal:50ms:5ms;size=normal:200:60"),
    ),
];

fn model(text: &str) -> Model {
    Model::parse(text, &|_| Err(std::io::ErrorKind::NotFound.into()))
        .unwrap_or_else(|e| unreachable!("profile model '{text}' must parse: {e}"))
}

fn build(row: &(&'static str, &'static str, &str, Option<&str>)) -> Profile {
    Profile {
        name: row.0,
        summary: row.1,
        forward: model(row.2),
        reverse: row.3.map(model),
    }
}

/// Every profile, in the order `traffic list` shows them.
pub fn all() -> Vec<Profile> {
    TABLE.iter().map(build).collect()
}

pub fn find(name: &str) -> Option<Profile> {
    let name = name.trim().to_ascii_lowercase();
    TABLE.iter().find(|r| r.0 == name).map(build)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_profile_parses_and_has_a_mean_rate() {
        for p in all() {
            assert!(p.forward.mean_rate_bps().is_some(), "{}", p.name);
            assert!(find(p.name).is_some());
        }
        // G.711: 172 bytes per 20 ms = 68.8 kbit/s on the wire's payload.
        let g711 = find("voice-g711").unwrap().forward.mean_rate_bps().unwrap();
        assert!((g711 - 68_800.0).abs() < 1e-6);
        // MPEG: (40000 + 3 * 15000 + 8 * 7000) bytes per 12 frames at 25/s.
        let mpeg = find("mpeg").unwrap().forward.mean_rate_bps().unwrap();
        assert!(
            (mpeg - 141_000.0 / 12.0 * 25.0 * 8.0).abs() < 1e-3,
            "{mpeg}"
        );
    }
}
