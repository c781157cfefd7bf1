//! A small deterministic PRNG (SplitMix64) shared by the simulator and the
//! analysis generators: the same seed gives the same stream on every
//! platform, with no dependency. Not for cryptography.

use alloc::vec::Vec;

/// The SplitMix64 output function (a good 64-bit mixer).
pub fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

#[derive(Clone, Debug)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    pub fn new(seed: u64) -> SplitMix64 {
        SplitMix64(seed)
    }

    /// Independent stream `i` of `seed` (e.g. system `i` of a sweep).
    pub fn stream(seed: u64, i: u64) -> SplitMix64 {
        let mut r = SplitMix64(seed ^ i.wrapping_mul(0xD1B5_4A32_D192_ED03));
        r.next_u64();
        r
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        mix(self.0)
    }

    /// Uniform in [0, 1).
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Uniform in [0, n) (0 when n is 0).
    pub fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            0
        } else {
            self.next_u64() % n
        }
    }

    /// Uniform integer in [lo, hi].
    pub fn range(&mut self, lo: u64, hi: u64) -> u64 {
        if hi <= lo {
            return lo;
        }
        lo + self.next_u64() % (hi - lo + 1)
    }

    /// Log-uniform integer in [lo, hi].
    pub fn log_uniform(&mut self, lo: u64, hi: u64) -> u64 {
        if hi <= lo || lo == 0 {
            return lo.max(1);
        }
        let (a, b) = (libm::log(lo as f64), libm::log(hi as f64));
        let v = libm::round(libm::exp(a + (b - a) * self.unit())) as u64;
        v.clamp(lo, hi)
    }

    /// Exponentially distributed nanoseconds for a rate per second.
    pub fn exponential_ns(&mut self, rate_per_s: f64) -> u64 {
        let u = 1.0 - self.unit(); // (0, 1]
        (-libm::log(u) / rate_per_s * 1e9) as u64
    }

    /// A random permutation of 0..n.
    pub fn permutation(&mut self, n: usize) -> Vec<usize> {
        let mut v: Vec<usize> = (0..n).collect();
        for i in (1..n).rev() {
            let j = (self.next_u64() % (i as u64 + 1)) as usize;
            v.swap(i, j);
        }
        v
    }
}
