//! When each request is due: a schedule computed before the first is sent, so that nothing the
//! server does can move a later request's send time.

use std::time::Duration;

/// How the gaps between requests are drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arrivals {
    /// Exponential gaps of mean `1 / rate`: independent users, bursts and lulls included.
    Poisson,
    /// Evenly spaced, every `1 / rate` (wrk2's schedule).
    Uniform,
}

impl Arrivals {
    /// Its name on a command line.
    pub fn name(self) -> &'static str {
        match self {
            Arrivals::Poisson => "poisson",
            Arrivals::Uniform => "uniform",
        }
    }

    /// The arrivals called `name`.
    pub fn named(name: &str) -> Option<Arrivals> {
        [Arrivals::Poisson, Arrivals::Uniform]
            .into_iter()
            .find(|a| a.name() == name)
    }
}

/// A small seeded generator (splitmix64): the same schedule for every runtime of a run.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// A generator seeded with `seed`.
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in (0, 1]: never 0, so that its logarithm is finite.
    pub fn unit_open0(&mut self) -> f64 {
        ((self.next_u64() >> 11) + 1) as f64 / (1u64 << 53) as f64
    }
}

/// The send instants, in nanoseconds from the start, of requests at `rate` per second for
/// `length`: every instant is below `length`, in increasing order. An empty schedule for a
/// rate that is not positive.
pub fn schedule(arrivals: Arrivals, rate: f64, length: Duration, seed: u64) -> Vec<u64> {
    if rate <= 0.0 || !rate.is_finite() {
        return Vec::new();
    }
    let end = length.as_nanos() as f64;
    let mean = 1e9 / rate;
    let mut rng = Rng::new(seed);
    let mut out = Vec::with_capacity((end / mean * 1.05) as usize + 16);
    let mut t = match arrivals {
        Arrivals::Poisson => -rng.unit_open0().ln() * mean,
        Arrivals::Uniform => 0.0,
    };
    while t < end {
        out.push(t as u64);
        t += match arrivals {
            Arrivals::Poisson => -rng.unit_open0().ln() * mean,
            Arrivals::Uniform => mean,
        };
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uniform_is_evenly_spaced_and_exact() {
        let s = schedule(Arrivals::Uniform, 1_000.0, Duration::from_secs(2), 1);
        assert_eq!(s.len(), 2_000);
        assert_eq!(s[0], 0);
        assert!(s.windows(2).all(|w| w[1] - w[0] == 1_000_000), "1 ms apart");
        assert!(*s.last().unwrap() < 2_000_000_000);
    }

    #[test]
    fn poisson_count_and_mean_gap_match_the_rate() {
        // 100,000 expected arrivals: the count's standard deviation is sqrt(100,000) = 316, so
        // 5 sigma is 1,581; the mean gap's relative deviation is 1 / sqrt(n) = 0.3%.
        let rate = 50_000.0;
        for seed in [1, 2, 3] {
            let s = schedule(Arrivals::Poisson, rate, Duration::from_secs(2), seed);
            let n = s.len() as f64;
            assert!((n - 100_000.0).abs() < 1_581.0, "seed {seed}: {n} arrivals");
            assert!(s.windows(2).all(|w| w[0] <= w[1]), "increasing");
            let gaps: Vec<f64> = s.windows(2).map(|w| (w[1] - w[0]) as f64).collect();
            let mean = gaps.iter().sum::<f64>() / gaps.len() as f64;
            assert!(
                (mean / 20_000.0 - 1.0).abs() < 0.015,
                "seed {seed}: mean gap {mean} ns"
            );
            // Exponential: the share of gaps above the mean is e^-1 = 0.368.
            let above = gaps.iter().filter(|&&g| g > 20_000.0).count() as f64 / gaps.len() as f64;
            assert!(
                (above - 0.368).abs() < 0.01,
                "seed {seed}: {above} above the mean"
            );
        }
    }

    #[test]
    fn the_seed_decides_the_schedule() {
        let a = schedule(Arrivals::Poisson, 10_000.0, Duration::from_millis(100), 7);
        let b = schedule(Arrivals::Poisson, 10_000.0, Duration::from_millis(100), 7);
        let c = schedule(Arrivals::Poisson, 10_000.0, Duration::from_millis(100), 8);
        assert_eq!(a, b);
        assert_ne!(a, c);
        assert!(schedule(Arrivals::Uniform, 0.0, Duration::from_secs(1), 1).is_empty());
    }
}
