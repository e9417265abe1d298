//! Traffic models as a user writes them and as both ends of a test carry
//! them: `full`, `cbr`, NetSpec's `burst`/`burstq`, stochastic models
//! (`idt=exp:1ms;size=const:1200`, with optional `on=`/`off=` periods) and
//! traces.

use crate::dist::{Dist, Quantity, MAX_GAP_S};
use crate::trace::Trace;
use serde::{Deserialize, Serialize};

/// ON/OFF periods: messages are sent only while ON.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OnOff {
    pub on: Dist,
    pub off: Dist,
}

/// How one direction of a flow sends.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase", tag = "model")]
pub enum Model {
    /// As fast as the path allows (linkperf's default).
    Full,
    /// Constant bit rate at `-b` (linkperf's pacer).
    Cbr,
    /// `bytes` every `period_s`. A burst still due when the next one is
    /// (a whole period late) is skipped and counted, unless `queue` (NetSpec's
    /// `burstq`), which sends every burst however late.
    Burst {
        bytes: u64,
        period_s: f64,
        queue: bool,
    },
    /// Inter-departure times and sizes drawn from distributions. Several
    /// sizes are used in turn (an MPEG group of pictures).
    Stochastic {
        idt: Dist,
        size: Vec<Dist>,
        on_off: Option<OnOff>,
    },
    Trace(Trace),
}

/// What a model file loader does: read the named trace file's bytes.
pub type Loader<'a> = &'a dyn Fn(&str) -> std::io::Result<Vec<u8>>;

/// The shortest mean of a time distribution: 1 us, finer than any timer.
const MIN_TIME_S: f64 = 1e-6;

/// Model kinds for error messages.
const KINDS: &str = "full, cbr, burst:BYTES:PERIOD, burstq:BYTES:PERIOD, \
     idt=DIST;size=DIST[;on=DIST;off=DIST], trace:FILE, or a profile (linkperf traffic list)";

impl Model {
    /// Parses one model (not a profile name).
    pub fn parse(text: &str, load: Loader) -> Result<Model, String> {
        let t = text.trim();
        let lower = t.to_ascii_lowercase();
        if lower == "full" {
            return Ok(Model::Full);
        }
        if lower == "cbr" {
            return Ok(Model::Cbr);
        }
        if let Some(path) = t.strip_prefix("trace:") {
            let bytes = load(path.trim())
                .map_err(|e| format!("trace {}: cannot read it: {e}", path.trim()))?;
            return Ok(Model::Trace(Trace::parse(path.trim(), &bytes)?));
        }
        for (prefix, queue) in [("burstq:", true), ("burst:", false)] {
            if let Some(rest) = lower.strip_prefix(prefix) {
                return burst(t, rest, queue);
            }
        }
        if t.contains('=') {
            return stochastic(t);
        }
        Err(format!("unknown traffic model '{t}'; accepted: {KINDS}"))
    }

    /// Checks a model that [`Model::parse`] did not build (a peer's wire
    /// config) for what parse guarantees and a schedule relies on: every
    /// distribution usable, at least one size, a burst of a byte or more
    /// every positive period, a trace's records whole.
    pub fn check(&self) -> Result<(), String> {
        match self {
            Model::Full | Model::Cbr => Ok(()),
            Model::Burst {
                bytes, period_s, ..
            } => {
                if *bytes == 0 || !(*period_s > 0.0 && *period_s <= MAX_GAP_S) {
                    return Err(format!(
                        "a burst needs at least 1 byte and a period above 0, got {bytes} bytes every {period_s} s"
                    ));
                }
                Ok(())
            }
            Model::Stochastic { idt, size, on_off } => {
                if size.is_empty() {
                    return Err("a stochastic model needs at least one size".into());
                }
                let periods = on_off.iter().flat_map(|o| [&o.on, &o.off]);
                for d in std::iter::once(idt).chain(periods) {
                    d.check()?;
                    // Shorter would vanish beside a due time in f64 (an ON
                    // period of 1e-300 s never lets a message out).
                    if !(MIN_TIME_S..=MAX_GAP_S).contains(&d.mean()) {
                        return Err(format!(
                            "times must average {MIN_TIME_S} s to a day, got {}",
                            d.mean()
                        ));
                    }
                }
                size.iter().try_for_each(Dist::check)
            }
            Model::Trace(t) => t.check(),
        }
    }

    pub fn is_plain(&self) -> bool {
        matches!(self, Model::Full | Model::Cbr)
    }

    /// Replaces one part (`idt`, `size`, `on`, `off`) of a stochastic model,
    /// as a sweep varies it.
    pub fn set_term(&mut self, key: &str, value: &str) -> Result<(), String> {
        let Model::Stochastic { .. } = self else {
            return Err(format!(
                "traffic.{key}: the model '{}' has no {key}; choose a stochastic model (idt=...;size=...) first",
                self.text()
            ));
        };
        let mut terms: Vec<String> = self
            .text()
            .split(';')
            .filter(|t| !t.starts_with(&format!("{key}=")))
            .map(str::to_string)
            .collect();
        terms.push(format!("{key}={value}"));
        *self = stochastic(&terms.join(";"))?;
        Ok(())
    }

    /// The model as a user writes it (a trace by its file name).
    pub fn text(&self) -> String {
        match self {
            Model::Full => "full".into(),
            Model::Cbr => "cbr".into(),
            Model::Burst {
                bytes,
                period_s,
                queue,
            } => format!(
                "{}:{bytes}:{}",
                if *queue { "burstq" } else { "burst" },
                crate::dist::format_seconds(*period_s)
            ),
            Model::Stochastic { idt, size, on_off } => {
                let sizes: Vec<String> = size.iter().map(|d| d.text(Quantity::Size)).collect();
                let mut s = format!("idt={};size={}", idt.text(Quantity::Time), sizes.join("/"));
                if let Some(o) = on_off {
                    s.push_str(&format!(
                        ";on={};off={}",
                        o.on.text(Quantity::Time),
                        o.off.text(Quantity::Time)
                    ));
                }
                s
            }
            Model::Trace(t) => format!("trace:{}", t.source),
        }
    }

    /// The mean payload rate in bits/s (`None` for `full` and `cbr`, whose
    /// rate is the path's or `-b`'s).
    pub fn mean_rate_bps(&self) -> Option<f64> {
        Some(self.mean_message_rate()? * self.mean_message_bytes()? * 8.0)
    }

    /// The mean message (burst, frame, datagram before splitting) in bytes
    /// (`None` for `full` and `cbr`, whose messages are `-l` long).
    pub fn mean_message_bytes(&self) -> Option<f64> {
        match self {
            Model::Burst { bytes, .. } => Some(*bytes as f64),
            Model::Stochastic { size, .. } => {
                Some(size.iter().map(Dist::mean).sum::<f64>() / size.len() as f64)
            }
            Model::Trace(t) => {
                Some(t.sizes.iter().map(|&b| b as f64).sum::<f64>() / t.sizes.len() as f64)
            }
            Model::Full | Model::Cbr => None,
        }
    }

    /// Messages (bursts, frames, datagrams before splitting) per second.
    /// ON/OFF gates a running arrival process, so the ON share of time
    /// scales the rate exactly.
    pub fn mean_message_rate(&self) -> Option<f64> {
        match self {
            Model::Full | Model::Cbr => None,
            Model::Burst { period_s, .. } => Some(1.0 / period_s),
            Model::Stochastic { idt, on_off, .. } => {
                let share = on_off
                    .as_ref()
                    .map(|o| o.on.mean() / (o.on.mean() + o.off.mean()))
                    .unwrap_or(1.0);
                Some(share / idt.mean())
            }
            Model::Trace(t) => Some(t.sizes.len() as f64 / t.round_seconds()),
        }
    }

    /// Rows for `linkperf traffic show`: its parts and its mean rates.
    pub fn describe(&self) -> Vec<(String, String)> {
        let mut rows = Vec::new();
        match self {
            Model::Full => rows.push(("sends".into(), "as fast as the path allows".into())),
            Model::Cbr => rows.push(("sends".into(), "at -b's rate, evenly spaced".into())),
            Model::Burst { queue, .. } => rows.push((
                "late burst".into(),
                if *queue {
                    "queued and sent (burstq)".into()
                } else {
                    "skipped and counted as a miss (burst)".into()
                },
            )),
            Model::Stochastic { idt, size, on_off } => {
                rows.push(("inter-departure".into(), idt.text(Quantity::Time)));
                let sizes: Vec<String> = size.iter().map(|d| d.text(Quantity::Size)).collect();
                rows.push(("message size".into(), sizes.join(" then ")));
                if let Some(o) = on_off {
                    rows.push(("on period".into(), o.on.text(Quantity::Time)));
                    rows.push(("off period".into(), o.off.text(Quantity::Time)));
                }
            }
            Model::Trace(t) => rows.push((
                "trace".into(),
                format!(
                    "{} records over {:.3} s, looped",
                    t.sizes.len(),
                    t.round_seconds()
                ),
            )),
        }
        if let (Some(m), Some(r)) = (self.mean_message_rate(), self.mean_rate_bps()) {
            rows.push(("messages/s".into(), format!("{m:.4}")));
            rows.push((
                "mean rate".into(),
                format!(
                    "{} ({r:.0} bit/s of payload)",
                    linkperf_units::format_rate(r)
                ),
            ));
        }
        rows
    }
}

fn burst(text: &str, rest: &str, queue: bool) -> Result<Model, String> {
    let form = if queue { "burstq" } else { "burst" };
    let (bytes, period) = rest
        .split_once(':')
        .ok_or_else(|| format!("'{text}': expected {form}:BYTES:PERIOD, e.g. {form}:64K:10ms"))?;
    let bytes = linkperf_units::parse_size(bytes.trim()).map_err(|e| format!("'{text}': {e}"))?;
    let period = linkperf_units::parse_duration(period.trim())
        .map_err(|e| format!("'{text}': {e}"))?
        .as_secs_f64();
    if bytes == 0 || period <= 0.0 {
        return Err(format!(
            "'{text}': a burst needs at least 1 byte and a period above 0"
        ));
    }
    Ok(Model::Burst {
        bytes,
        period_s: period,
        queue,
    })
}

fn stochastic(text: &str) -> Result<Model, String> {
    let (mut idt, mut size, mut on, mut off) = (None, None, None, None);
    for term in text
        .split([';', ' '])
        .map(str::trim)
        .filter(|t| !t.is_empty())
    {
        let (key, value) = term.split_once('=').ok_or_else(|| {
            format!("'{term}' in '{text}': expected KEY=DIST (idt, size, on, off)")
        })?;
        match key.trim().to_ascii_lowercase().as_str() {
            "idt" => idt = Some(Dist::parse(value, Quantity::Time)?),
            "size" => {
                let sizes: Result<Vec<Dist>, String> = value
                    .split('/')
                    .map(|v| Dist::parse(v, Quantity::Size))
                    .collect();
                size = Some(sizes?);
            }
            "on" => on = Some(Dist::parse(value, Quantity::Time)?),
            "off" => off = Some(Dist::parse(value, Quantity::Time)?),
            other => {
                return Err(format!(
                    "unknown model key '{other}' in '{text}'; accepted: idt, size, on, off"
                ))
            }
        }
    }
    let (Some(idt), Some(size)) = (idt, size) else {
        return Err(format!(
            "'{text}': a stochastic model needs idt=DIST and size=DIST, e.g. idt=exp:1ms;size=const:1200"
        ));
    };
    let on_off = match (on, off) {
        (Some(on), Some(off)) => Some(OnOff { on, off }),
        (None, None) => None,
        _ => {
            return Err(format!(
                "'{text}': give both on=DIST and off=DIST, or neither"
            ))
        }
    };
    Ok(Model::Stochastic { idt, size, on_off })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn no_files(_: &str) -> std::io::Result<Vec<u8>> {
        Err(std::io::ErrorKind::NotFound.into())
    }

    fn parse(t: &str) -> Result<Model, String> {
        Model::parse(t, &no_files)
    }

    /// What parse and the profiles build passes the wire check.
    #[test]
    fn parsed_models_and_profiles_pass_the_wire_check() {
        for t in [
            "burst:1:1ms",
            "idt=exp:1us;size=const:1",
            "idt=const:20ms;size=const:172;on=exp:1s;off=exp:2s",
        ] {
            parse(t).unwrap().check().unwrap();
        }
        for p in crate::profiles::all() {
            p.forward.check().unwrap();
            if let Some(r) = &p.reverse {
                r.check().unwrap();
            }
        }
    }

    #[test]
    fn models_parse_and_print_back() {
        for t in [
            "full",
            "cbr",
            "burst:65536:10ms",
            "burstq:1500:1s",
            "idt=exp:1ms;size=const:1200",
            "idt=const:20ms;size=const:172;on=exp:1.004s;off=exp:1.587s",
            "idt=const:40ms;size=normal:40000:8000/lognormal:7000:2000",
        ] {
            let m = parse(t).unwrap();
            assert_eq!(m.text(), t);
            assert_eq!(parse(&m.text()), Ok(m));
        }
    }

    #[test]
    fn mean_rates_follow_from_the_parameters() {
        // 1200 bytes every 1 ms on average: 9.6 Mbit/s.
        let r = parse("idt=exp:1ms;size=const:1200")
            .unwrap()
            .mean_rate_bps()
            .unwrap();
        assert!((r - 9.6e6).abs() < 1e-3, "{r}");
        // G.711 with VAD: 172 B / 20 ms = 68.8 kbit/s, ON 1.004 of 2.591 s.
        let v = parse("idt=const:20ms;size=const:172;on=exp:1.004s;off=exp:1.587s").unwrap();
        let want = 68_800.0 * 1.004 / 2.591;
        assert!((v.mean_rate_bps().unwrap() - want).abs() < 1e-6);
        let b = parse("burst:64K:10ms").unwrap();
        assert!((b.mean_rate_bps().unwrap() - 65536.0 * 800.0).abs() < 1e-6);
        assert_eq!(parse("full").unwrap().mean_rate_bps(), None);
    }

    #[test]
    fn bad_models_get_one_line_saying_what_is_accepted() {
        let e = parse("sawtooth").unwrap_err();
        assert!(
            e.starts_with("unknown traffic model 'sawtooth'") && e.contains("burst:"),
            "{e}"
        );
        assert!(parse("idt=exp:1ms")
            .unwrap_err()
            .contains("needs idt=DIST and size=DIST"));
        assert!(parse("idt=exp:1ms;size=const:1;on=exp:1s")
            .unwrap_err()
            .contains("both on"));
        assert!(parse("idt=exp:1ms;size=const:1;rate=1")
            .unwrap_err()
            .contains("unknown model key"));
        assert!(parse("burst:0:1ms").is_err());
        assert!(parse("burst:64K")
            .unwrap_err()
            .contains("burst:BYTES:PERIOD"));
        let e = parse("trace:/nonexistent.csv").unwrap_err();
        assert!(e.contains("cannot read"), "{e}");
        assert!(
            !e.contains('\n')
                && !parse("idt=weird:1;size=const:1")
                    .unwrap_err()
                    .contains('\n')
        );
    }

    #[test]
    fn one_term_of_a_model_can_change() {
        let mut m = parse("idt=exp:1ms;size=const:1200").unwrap();
        m.set_term("idt", "exp:500us").unwrap();
        assert_eq!(m.text(), "idt=exp:500us;size=const:1200");
        m.set_term("on", "exp:1s").unwrap_err();
        let mut full = parse("full").unwrap();
        assert!(full
            .set_term("idt", "exp:1ms")
            .unwrap_err()
            .contains("has no idt"));
    }
}
