//! Random impairments of one link direction: Bernoulli loss, Gilbert-Elliott bursty loss,
//! bit errors (length dependent) and delay jitter. Each draws from the direction's own RNG
//! so a `seed` makes a run reproducible.

use crate::rng::Rng;
use serde::{Deserialize, Serialize};

/// Two-state Markov loss model. In the good state packets are lost with `good_loss`, in the
/// bad state with `bad_loss`; per packet the state moves good->bad with `p`, bad->good with `r`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct GilbertElliott {
    pub p: f64,
    pub r: f64,
    pub bad_loss: f64,
    pub good_loss: f64,
}

impl GilbertElliott {
    /// Long-run loss probability: pi_bad * bad_loss + pi_good * good_loss.
    pub fn stationary_loss(&self) -> f64 {
        if self.p + self.r == 0.0 {
            return self.good_loss;
        }
        let pi_bad = self.p / (self.p + self.r);
        pi_bad * self.bad_loss + (1.0 - pi_bad) * self.good_loss
    }

    /// Mean number of consecutive packets spent in the bad state (1 / r).
    pub fn mean_bad_run(&self) -> f64 {
        if self.r > 0.0 {
            1.0 / self.r
        } else {
            f64::INFINITY
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum JitterDistribution {
    /// Uniform in [-jitter, +jitter] around the delay.
    #[default]
    Uniform,
    /// Normal with standard deviation `jitter`.
    Normal,
    /// Non-negative heavy tail: Pareto (shape 3) extra delay whose mean is `jitter`.
    Pareto,
}

impl JitterDistribution {
    pub fn from_name(name: &str) -> Option<Self> {
        match name {
            "uniform" => Some(Self::Uniform),
            "normal" => Some(Self::Normal),
            "pareto" => Some(Self::Pareto),
            _ => None,
        }
    }
}

const PARETO_SHAPE: f64 = 3.0;

/// Returns the delay for one packet: base delay plus a jitter draw, never below zero.
pub fn jittered_delay_ns(
    rng: &mut Rng,
    delay_ns: u64,
    jitter_ns: u64,
    dist: JitterDistribution,
) -> u64 {
    if jitter_ns == 0 {
        return delay_ns;
    }
    let j = jitter_ns as f64;
    let offset = match dist {
        JitterDistribution::Uniform => (rng.next_f64() * 2.0 - 1.0) * j,
        JitterDistribution::Normal => rng.next_normal() * j,
        JitterDistribution::Pareto => {
            // Pareto(xm, a) has mean a*xm/(a-1); minus xm its mean is xm/(a-1). Pick xm so that is j.
            let xm = j * (PARETO_SHAPE - 1.0);
            let u = 1.0 - rng.next_f64();
            xm / u.powf(1.0 / PARETO_SHAPE) - xm
        }
    };
    (delay_ns as f64 + offset).max(0.0) as u64
}

/// Probability that a packet of `bytes` suffers at least one bit error: 1 - (1 - ber)^(8 bytes).
pub fn ber_loss_probability(ber: f64, bytes: usize) -> f64 {
    if ber <= 0.0 {
        return 0.0;
    }
    if ber >= 1.0 {
        return 1.0;
    }
    // ln_1p keeps precision for tiny BERs such as 1e-12.
    -((8.0 * bytes as f64) * (-ber).ln_1p()).exp_m1()
}

/// Why the loss stage discarded a packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LossCause {
    /// Random (Bernoulli) or Gilbert-Elliott loss.
    Loss,
    /// A bit error anywhere in the frame.
    BitError,
}

/// The loss stage of one direction, with the Gilbert-Elliott state it carries between packets.
#[derive(Debug, Clone)]
pub struct LossModel {
    random: f64,
    gilbert: Option<GilbertElliott>,
    gilbert_bad: bool,
    ber: f64,
}

impl LossModel {
    pub fn new(random: f64, gilbert: Option<GilbertElliott>, ber: f64) -> Self {
        LossModel {
            random,
            gilbert,
            gilbert_bad: false,
            ber,
        }
    }

    /// Decides the fate of one frame of `frame_bytes` (as carried: Ethernet header + IP packet).
    pub fn judge(&mut self, rng: &mut Rng, frame_bytes: usize) -> Option<LossCause> {
        if rng.chance(self.random) {
            return Some(LossCause::Loss);
        }
        if let Some(ge) = self.gilbert {
            let flip = if self.gilbert_bad { ge.r } else { ge.p };
            if rng.chance(flip) {
                self.gilbert_bad = !self.gilbert_bad;
            }
            let p = if self.gilbert_bad {
                ge.bad_loss
            } else {
                ge.good_loss
            };
            if rng.chance(p) {
                return Some(LossCause::Loss);
            }
        }
        if self.ber > 0.0 && rng.chance(ber_loss_probability(self.ber, frame_bytes)) {
            return Some(LossCause::BitError);
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ber_probability_matches_the_formula() {
        let p = ber_loss_probability(1e-5, 1500);
        let direct = 1.0 - (1.0f64 - 1e-5).powi(12000);
        assert!((p - direct).abs() < 1e-12, "{p} vs {direct}");
        assert_eq!(ber_loss_probability(0.0, 1500), 0.0);
        assert_eq!(ber_loss_probability(1.0, 1), 1.0);
        // Tiny BERs keep precision: 1e-12 over 12000 bits is ~1.2e-8.
        let tiny = ber_loss_probability(1e-12, 1500);
        assert!((tiny / 1.2e-8 - 1.0).abs() < 1e-6, "{tiny}");
    }

    #[test]
    fn bernoulli_loss_rate_converges() {
        let mut rng = Rng::seeded(1);
        let mut m = LossModel::new(0.02, None, 0.0);
        let n = 200_000;
        let lost = (0..n).filter(|_| m.judge(&mut rng, 100).is_some()).count();
        let rate = lost as f64 / n as f64;
        // 99.9% binomial interval: 3.29 * sqrt(p(1-p)/n) ~ 0.001.
        assert!((rate - 0.02).abs() < 0.001, "{rate}");
    }

    #[test]
    fn gilbert_elliott_has_the_stationary_loss_and_burst_length() {
        let ge = GilbertElliott {
            p: 0.01,
            r: 0.25,
            bad_loss: 1.0,
            good_loss: 0.0,
        };
        let expected = ge.stationary_loss();
        assert!((expected - 0.01 / 0.26).abs() < 1e-12);
        let mut rng = Rng::seeded(2);
        let mut m = LossModel::new(0.0, Some(ge), 0.0);
        let n = 1_000_000;
        let mut lost = 0usize;
        let mut bursts = 0usize;
        let mut previous_lost = false;
        for _ in 0..n {
            let l = m.judge(&mut rng, 100).is_some();
            if l {
                lost += 1;
                if !previous_lost {
                    bursts += 1;
                }
            }
            previous_lost = l;
        }
        let rate = lost as f64 / n as f64;
        assert!(
            (rate / expected - 1.0).abs() < 0.05,
            "loss {rate} expected {expected}"
        );
        let mean_burst = lost as f64 / bursts as f64;
        assert!(
            (mean_burst / ge.mean_bad_run() - 1.0).abs() < 0.05,
            "burst {mean_burst}"
        );
    }

    #[test]
    fn bit_errors_depend_on_length() {
        let mut rng = Rng::seeded(3);
        let mut m = LossModel::new(0.0, None, 1e-5);
        let n = 200_000;
        for bytes in [100usize, 1500] {
            let lost = (0..n)
                .filter(|_| m.judge(&mut rng, bytes) == Some(LossCause::BitError))
                .count();
            let p = ber_loss_probability(1e-5, bytes);
            let sigma = (p * (1.0 - p) / n as f64).sqrt();
            assert!(
                (lost as f64 / n as f64 - p).abs() < 4.0 * sigma,
                "{bytes}: {lost}"
            );
        }
    }

    #[test]
    fn jitter_distributions_have_the_documented_spread() {
        let mut rng = Rng::seeded(4);
        let n = 100_000;
        let base = 10_000_000u64;
        let j = 2_000_000u64;
        for dist in [
            JitterDistribution::Uniform,
            JitterDistribution::Normal,
            JitterDistribution::Pareto,
        ] {
            let draws: Vec<f64> = (0..n)
                .map(|_| jittered_delay_ns(&mut rng, base, j, dist) as f64)
                .collect();
            let mean = draws.iter().sum::<f64>() / n as f64;
            let min = draws.iter().cloned().fold(f64::MAX, f64::min);
            match dist {
                JitterDistribution::Uniform => {
                    assert!((mean - base as f64).abs() < 20_000.0, "{mean}");
                    assert!(min >= (base - j) as f64);
                }
                JitterDistribution::Normal => {
                    let var = draws.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n as f64;
                    assert!(
                        (var.sqrt() / j as f64 - 1.0).abs() < 0.03,
                        "sd {}",
                        var.sqrt()
                    );
                }
                JitterDistribution::Pareto => {
                    assert!(min >= base as f64);
                    assert!((mean - (base + j) as f64).abs() < 0.05 * j as f64, "{mean}");
                }
            }
        }
        assert_eq!(
            jittered_delay_ns(&mut rng, 5, 0, JitterDistribution::Normal),
            5
        );
        // Never negative even when the jitter dwarfs the delay.
        assert!((0..1000).all(|_| jittered_delay_ns(
            &mut rng,
            0,
            1000,
            JitterDistribution::Normal
        ) < u64::MAX / 2));
    }
}
