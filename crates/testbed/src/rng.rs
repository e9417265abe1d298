//! A small, fast, seedable PRNG (xoshiro256**) so impairments are reproducible with `seed`.
//! Statistical quality is ample for loss and jitter draws; it is not for cryptography.

#[derive(Debug, Clone)]
pub struct Rng {
    state: [u64; 4],
}

impl Rng {
    /// Expands one 64-bit seed into the full state with splitmix64, as the xoshiro authors advise.
    pub fn seeded(seed: u64) -> Self {
        let mut x = seed;
        let mut next = || {
            x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = x;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^ (z >> 31)
        };
        Rng {
            state: [next(), next(), next(), next()],
        }
    }

    /// Seeds from the kernel's entropy pool; falls back to the clock if that is unreadable.
    pub fn from_entropy() -> Self {
        use std::io::Read;
        let mut bytes = [0u8; 8];
        let seed =
            match std::fs::File::open("/dev/urandom").and_then(|mut f| f.read_exact(&mut bytes)) {
                Ok(()) => u64::from_le_bytes(bytes),
                Err(_) => std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map(|d| d.as_nanos() as u64)
                    .unwrap_or(0x1234_5678),
            };
        Rng::seeded(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        let s = &mut self.state;
        let result = s[1].wrapping_mul(5).rotate_left(7).wrapping_mul(9);
        let t = s[1] << 17;
        s[2] ^= s[0];
        s[3] ^= s[1];
        s[1] ^= s[2];
        s[0] ^= s[3];
        s[2] ^= t;
        s[3] = s[3].rotate_left(45);
        result
    }

    /// Uniform in [0, 1) with 53 bits of precision.
    pub fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// True with probability `p` (p <= 0 never, p >= 1 always).
    pub fn chance(&mut self, p: f64) -> bool {
        p > 0.0 && (p >= 1.0 || self.next_f64() < p)
    }

    /// Standard normal draw (Box-Muller; one of the pair is discarded for simplicity).
    pub fn next_normal(&mut self) -> f64 {
        // 1 - u keeps the logarithm's argument in (0, 1].
        let u1 = 1.0 - self.next_f64();
        let u2 = self.next_f64();
        (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_sequence_and_sane_moments() {
        let mut a = Rng::seeded(7);
        let mut b = Rng::seeded(7);
        for _ in 0..100 {
            assert_eq!(a.next_u64(), b.next_u64());
        }
        let n = 200_000;
        let mean: f64 = (0..n).map(|_| a.next_f64()).sum::<f64>() / n as f64;
        assert!((mean - 0.5).abs() < 0.005, "uniform mean {mean}");
        let draws: Vec<f64> = (0..n).map(|_| a.next_normal()).collect();
        let m = draws.iter().sum::<f64>() / n as f64;
        let var = draws.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / n as f64;
        assert!(
            m.abs() < 0.01 && (var - 1.0).abs() < 0.02,
            "normal mean {m} var {var}"
        );
    }
}
