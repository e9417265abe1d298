//! A model as a send schedule: the due time and size of every message, drawn
//! from the model's distributions with the run's seed. Sans-IO: the engine
//! asks for the next message and sends it when it is due.

use crate::dist::{Dist, MAX_GAP_S};
use crate::model::{Model, OnOff};
use crate::rng::Rng;

/// One message: due `at` seconds after the start, `bytes` long.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Message {
    pub at: f64,
    pub bytes: u64,
}

/// ON/OFF periods skipped at most between two messages.
const MAX_PERIODS_SKIPPED: u32 = 1_000;
/// Arrivals in an OFF period stepped through one by one before jumping to its end.
const MAX_SKIPPED: u32 = 1_000;

pub struct Schedule {
    kind: Kind,
    /// Inter-departure times and sizes draw from separate generators, so a
    /// model's times do not change when only its sizes do.
    times: Rng,
    sizes: Rng,
    /// Due time of the next arrival of the underlying process.
    next_at: f64,
    count: u64,
    /// The current ON period's end and the OFF period's end after it.
    on_end: f64,
    off_end: f64,
}

enum Kind {
    Burst {
        bytes: u64,
        period: f64,
    },
    Stochastic {
        idt: Dist,
        size: Vec<Dist>,
        on_off: Option<OnOff>,
    },
    Trace {
        gaps: Vec<f64>,
        sizes: Vec<u64>,
    },
}

impl Schedule {
    /// The schedule of stream `stream` of a run seeded `seed`; `None` for
    /// `full` and `cbr`, which have none.
    pub fn new(model: &Model, seed: u64, stream: u32) -> Option<Schedule> {
        let kind = match model {
            Model::Full | Model::Cbr => return None,
            Model::Burst {
                bytes, period_s, ..
            } => Kind::Burst {
                bytes: *bytes,
                period: *period_s,
            },
            Model::Stochastic { idt, size, on_off } => Kind::Stochastic {
                idt: idt.clone(),
                size: size.clone(),
                on_off: on_off.clone(),
            },
            Model::Trace(t) => Kind::Trace {
                gaps: t.gaps.clone(),
                sizes: t.sizes.clone(),
            },
        };
        let mut s = Schedule {
            kind,
            times: Rng::for_stream(seed, stream),
            sizes: Rng::for_stream(seed, stream.wrapping_add(1 << 31)),
            next_at: 0.0,
            count: 0,
            on_end: f64::INFINITY,
            off_end: f64::INFINITY,
        };
        if let Kind::Stochastic {
            on_off: Some(o), ..
        } = &s.kind
        {
            let (on, off) = (o.on.sample(&mut s.times), o.off.sample(&mut s.times));
            s.on_end = on;
            s.off_end = on + off;
        }
        Some(s)
    }

    /// The next message. ON/OFF gates the arrival process: arrivals that
    /// fall in an OFF period are not sent.
    pub fn next_message(&mut self) -> Message {
        let mut skipped = 0;
        loop {
            let at = self.next_at;
            let n = self.count;
            self.count += 1;
            let (bytes, gap) = match &self.kind {
                Kind::Burst { bytes, period } => (*bytes, *period),
                Kind::Stochastic { idt, size, .. } => {
                    let d = &size[(n % size.len() as u64) as usize];
                    let bytes = d.sample(&mut self.sizes).round().max(1.0) as u64;
                    (bytes, idt.sample(&mut self.times))
                }
                Kind::Trace { gaps, sizes } => {
                    let i = (n % sizes.len() as u64) as usize;
                    (sizes[i], gaps[(i + 1) % sizes.len()])
                }
            };
            // A draw beyond any test's length (a day), negative or not a
            // number would make a due time no timer can hold.
            self.next_at = at
                + if gap.is_nan() {
                    0.0
                } else {
                    gap.clamp(0.0, MAX_GAP_S)
                };
            if self.gated_off(at) {
                skipped += 1;
                if skipped == MAX_SKIPPED {
                    // A long OFF period among short gaps: the next arrival
                    // that can leave is at the next ON period.
                    self.next_at = self.next_at.max(self.off_end);
                    skipped = 0;
                }
                continue;
            }
            return Message { at, bytes };
        }
    }

    /// True when `at` falls in an OFF period (advancing the periods to it).
    fn gated_off(&mut self, at: f64) -> bool {
        let Kind::Stochastic {
            on_off: Some(o), ..
        } = &self.kind
        else {
            return false;
        };
        let mut periods = 0;
        while at >= self.off_end {
            let on = o.on.sample(&mut self.times);
            let off = o.off.sample(&mut self.times);
            periods += 1;
            if periods > MAX_PERIODS_SKIPPED {
                // Periods far shorter than the gaps (or drawn as zero):
                // start the next one here instead of spinning through them.
                self.on_end = at + on;
                self.off_end = self.on_end + off;
                return false;
            }
            self.on_end = self.off_end + on;
            self.off_end = self.on_end + off;
        }
        at >= self.on_end
    }

    /// For `burst` (not `burstq`): how late a message may start before it is
    /// skipped (one period: the next burst is then due).
    pub fn skip_after(model: &Model) -> Option<f64> {
        match model {
            Model::Burst {
                period_s,
                queue: false,
                ..
            } => Some(*period_s),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Model;

    fn model(t: &str) -> Model {
        Model::parse(t, &|_| Err(std::io::ErrorKind::NotFound.into())).unwrap()
    }

    #[test]
    fn poisson_schedule_keeps_its_mean_rate_and_seed() {
        let m = model("idt=exp:100us;size=uniform:100:1400");
        let mut s = Schedule::new(&m, 9, 0).unwrap();
        let msgs: Vec<Message> = (0..100_000).map(|_| s.next_message()).collect();
        let rate = (msgs.len() - 1) as f64 / msgs.last().unwrap().at;
        // 10 000 per second; a Poisson count over 10 s has sd sqrt(1e5)/1e5 = 0.3 %.
        assert!((rate / 10_000.0 - 1.0).abs() < 0.015, "{rate}");
        assert!(msgs.iter().all(|m| (100..=1400).contains(&m.bytes)));
        let mut again = Schedule::new(&m, 9, 0).unwrap();
        assert_eq!(again.next_message(), msgs[0]);
        let mut other = Schedule::new(&m, 9, 1).unwrap();
        other.next_message();
        assert_ne!(other.next_message(), msgs[1]);
    }

    #[test]
    fn on_off_sends_only_in_on_periods_at_the_on_share() {
        let m = model("idt=const:20ms;size=const:172;on=exp:1.004s;off=exp:1.587s");
        let mut s = Schedule::new(&m, 3, 0).unwrap();
        let msgs: Vec<Message> = (0..50_000).map(|_| s.next_message()).collect();
        let span = msgs.last().unwrap().at;
        let per_s = msgs.len() as f64 / span;
        let want = 50.0 * 1.004 / 2.591;
        // About 8000 ON/OFF cycles: the ON share's relative sd is near 1.3 %.
        assert!((per_s / want - 1.0).abs() < 0.06, "{per_s} vs {want}");
        // Every message on the 20 ms grid of the running codec clock.
        assert!(msgs
            .iter()
            .all(|m| ((m.at / 0.02) - (m.at / 0.02).round()).abs() < 1e-6));
        // Silences appear: some gaps are longer than 20 ms.
        assert!(msgs.windows(2).any(|w| w[1].at - w[0].at > 0.1));
    }

    #[test]
    fn bursts_and_traces_repeat_exactly() {
        let mut b = Schedule::new(&model("burst:64K:10ms"), 1, 0).unwrap();
        let ats: Vec<f64> = (0..3).map(|_| b.next_message().at).collect();
        assert_eq!(ats, vec![0.0, 0.01, 0.02]);
        assert_eq!(Schedule::skip_after(&model("burst:64K:10ms")), Some(0.01));
        assert_eq!(Schedule::skip_after(&model("burstq:64K:10ms")), None);
        let trace = Model::parse("trace:t", &|_| Ok(b"0,100\n0.5,300\n".to_vec())).unwrap();
        let mut t = Schedule::new(&trace, 1, 0).unwrap();
        let msgs: Vec<Message> = (0..4).map(|_| t.next_message()).collect();
        let want = [(0.0, 100), (0.5, 300), (1.0, 100), (1.5, 300)];
        for (m, (at, bytes)) in msgs.iter().zip(want) {
            assert!((m.at - at).abs() < 1e-12 && m.bytes == bytes, "{msgs:?}");
        }
    }
}
