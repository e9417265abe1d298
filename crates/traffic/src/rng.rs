//! The seeded random source of every model: xoshiro256** seeded through
//! SplitMix64, so one 64-bit seed reproduces a run exactly on any machine.

/// SplitMix64: turns one seed (or a seed and a stream number) into
/// well-mixed state words.
pub fn splitmix64(x: &mut u64) -> u64 {
    *x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *x;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// xoshiro256** (Blackman and Vigna): fast, 256 bits of state, passes
/// BigCrush; plenty for traffic (not for cryptography).
#[derive(Debug, Clone)]
pub struct Rng {
    s: [u64; 4],
}

impl Rng {
    pub fn new(seed: u64) -> Rng {
        let mut x = seed;
        Rng {
            s: [
                splitmix64(&mut x),
                splitmix64(&mut x),
                splitmix64(&mut x),
                splitmix64(&mut x),
            ],
        }
    }

    /// An independent generator for stream `stream` of a run seeded `seed`.
    pub fn for_stream(seed: u64, stream: u32) -> Rng {
        let mut x = seed ^ (u64::from(stream) << 32 | 0x5EED);
        Rng::new(splitmix64(&mut x))
    }

    pub fn next_u64(&mut self) -> u64 {
        let result = self.s[1].wrapping_mul(5).rotate_left(7).wrapping_mul(9);
        let t = self.s[1] << 17;
        self.s[2] ^= self.s[0];
        self.s[3] ^= self.s[1];
        self.s[1] ^= self.s[2];
        self.s[0] ^= self.s[3];
        self.s[2] ^= t;
        self.s[3] = self.s[3].rotate_left(45);
        result
    }

    /// Uniform in (0, 1): never 0, so ln(u) is always finite.
    pub fn open01(&mut self) -> f64 {
        ((self.next_u64() >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    }

    /// A standard normal deviate (Box-Muller; the second value is dropped
    /// so the state stays one draw per call pair, simple and reproducible).
    pub fn normal(&mut self) -> f64 {
        let (u, v) = (self.open01(), self.open01());
        (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_seed_reproduces_and_streams_differ() {
        let a: Vec<u64> = (0..4).map(|_| Rng::new(7).next_u64()).collect();
        assert!(a.windows(2).all(|w| w[0] == w[1]));
        let mut s0 = Rng::for_stream(7, 0);
        let mut s1 = Rng::for_stream(7, 1);
        assert_ne!(s0.next_u64(), s1.next_u64());
    }

    #[test]
    fn uniform_mean_and_range() {
        let mut r = Rng::new(1);
        let n = 200_000;
        let xs: Vec<f64> = (0..n).map(|_| r.open01()).collect();
        assert!(xs.iter().all(|&x| x > 0.0 && x < 1.0));
        let mean = xs.iter().sum::<f64>() / n as f64;
        // Standard error of the mean is 0.289 / sqrt(n) = 0.00065.
        assert!((mean - 0.5).abs() < 0.004, "{mean}");
    }
}
