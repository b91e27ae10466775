//! The metrics' histograms: their bucket layouts ([`HistogramConfiguration`], as tokio's) and
//! a core's counts ([`Histogram`]), which the core writes and any thread reads.
//!
//! A core counts into atomics only it writes (a relaxed load and store, no read-modify-write:
//! one `inc` on x86), in its shared half, so other threads read the counts as they are, not
//! as of a publish.

use std::fmt;
use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// How a histogram of durations is bucketed, as tokio's `HistogramConfiguration`: given to
/// [`Builder::metrics_poll_time_histogram_configuration`] and
/// [`Builder::metrics_timer_lateness_histogram_configuration`].
///
/// The last bucket is open: it counts everything past the one before it (its range ends at
/// `u64::MAX` nanoseconds, as tokio's).
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use tickless::runtime::HistogramConfiguration;
///
/// let rt = tickless::Builder::new()
///     .cores(1)
///     .enable_metrics_poll_time_histogram()
///     .metrics_poll_time_histogram_configuration(HistogramConfiguration::linear(
///         Duration::from_micros(10),
///         100,
///     ))
///     .build()?;
/// let m = rt.metrics();
/// assert_eq!(m.poll_time_histogram_num_buckets(), 100);
/// let us = Duration::from_micros;
/// assert_eq!(m.poll_time_histogram_bucket_range(1), us(10)..us(20));
/// # std::io::Result::Ok(())
/// ```
///
/// [`Builder::metrics_poll_time_histogram_configuration`]:
///     crate::Builder::metrics_poll_time_histogram_configuration
/// [`Builder::metrics_timer_lateness_histogram_configuration`]:
///     crate::Builder::metrics_timer_lateness_histogram_configuration
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct HistogramConfiguration {
    /// The layout.
    layout: Layout,
}

/// The buckets' bounds, in nanoseconds.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Layout {
    /// Bucket `i` is `[i * width, (i + 1) * width)`.
    Linear {
        /// Each bucket's width, at least 1 ns.
        width: u64,
        /// Buckets, at least 1.
        buckets: usize,
    },
    /// Bucket 0 is `[0, first)`, bucket `i` is `[first * 2^(i-1), first * 2^i)`.
    Log2 {
        /// The first bucket's width, at least 1 ns.
        first: u64,
        /// Buckets, at least 1.
        buckets: usize,
    },
}

impl HistogramConfiguration {
    /// `num_buckets` buckets each `bucket_width` wide, as tokio's
    /// `HistogramConfiguration::linear` (the last one open). tokio's default for the poll-time
    /// histogram is `linear(100 µs, 10)`.
    ///
    /// # Panics
    ///
    /// If `bucket_width` is zero or `num_buckets` is 0.
    pub fn linear(bucket_width: Duration, num_buckets: usize) -> HistogramConfiguration {
        assert!(num_buckets > 0, "a histogram has at least one bucket");
        assert!(!bucket_width.is_zero(), "a bucket is at least 1 ns wide");
        HistogramConfiguration {
            layout: Layout::Linear {
                width: saturating_nanos(bucket_width),
                buckets: num_buckets,
            },
        }
    }

    /// `num_buckets` buckets, the first `[0, first_bucket_width)` and each later one twice as
    /// wide as the one before (the last one open): the layout of tokio's legacy
    /// `HistogramScale::Log`, without its rounding of the first width to a power of two. The
    /// timer-lateness histogram's default is `log2(1 µs, 24)`: 0 to 1 µs, 1 to 2 µs, ..., and
    /// 4.19 s on.
    ///
    /// # Panics
    ///
    /// If `first_bucket_width` is zero or `num_buckets` is 0.
    pub fn log2(first_bucket_width: Duration, num_buckets: usize) -> HistogramConfiguration {
        assert!(num_buckets > 0, "a histogram has at least one bucket");
        assert!(
            !first_bucket_width.is_zero(),
            "a bucket is at least 1 ns wide"
        );
        HistogramConfiguration {
            layout: Layout::Log2 {
                first: saturating_nanos(first_bucket_width),
                buckets: num_buckets,
            },
        }
    }

    /// The number of buckets.
    pub fn num_buckets(&self) -> usize {
        match self.layout {
            Layout::Linear { buckets, .. } | Layout::Log2 { buckets, .. } => buckets,
        }
    }

    /// The durations bucket `bucket` counts (the last bucket's range ends at `u64::MAX`
    /// nanoseconds).
    ///
    /// # Panics
    ///
    /// If `bucket` is not below [`num_buckets`](Self::num_buckets).
    pub fn bucket_range(&self, bucket: usize) -> Range<Duration> {
        let n = self.num_buckets();
        assert!(bucket < n, "bucket {bucket} of a histogram of {n} buckets");
        let (start, end) = match self.layout {
            Layout::Linear { width, .. } => {
                let i = bucket as u64;
                (width.saturating_mul(i), width.saturating_mul(i + 1))
            }
            Layout::Log2 { first, .. } if bucket == 0 => (0, first),
            Layout::Log2 { first, .. } => (shl(first, bucket - 1), shl(first, bucket)),
        };
        let end = if bucket == n - 1 { u64::MAX } else { end };
        Duration::from_nanos(start)..Duration::from_nanos(end)
    }

    /// The bucket that counts `ns` nanoseconds.
    #[inline]
    fn bucket(&self, ns: u64) -> usize {
        let (index, buckets) = match self.layout {
            Layout::Linear { width, buckets } => (ns / width, buckets),
            Layout::Log2 { first, buckets } => {
                // 0 below `first`; else 1 + the power of two of `ns / first`.
                (u64::from(u64::BITS - (ns / first).leading_zeros()), buckets)
            }
        };
        index.min(buckets as u64 - 1) as usize
    }
}

impl fmt::Debug for HistogramConfiguration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.layout {
            Layout::Linear { width, buckets } => f
                .debug_struct("Linear")
                .field("bucket_width", &Duration::from_nanos(width))
                .field("num_buckets", &buckets)
                .finish(),
            Layout::Log2 { first, buckets } => f
                .debug_struct("Log2")
                .field("first_bucket_width", &Duration::from_nanos(first))
                .field("num_buckets", &buckets)
                .finish(),
        }
    }
}

/// `d` in nanoseconds, `u64::MAX` past that.
fn saturating_nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// `x * 2^n`, `u64::MAX` past that.
fn shl(x: u64, n: usize) -> u64 {
    match u32::try_from(n) {
        Ok(n) if n < u64::BITS && x.leading_zeros() >= n => x << n,
        _ => u64::MAX,
    }
}

/// tokio's default poll-time histogram: 10 buckets of 100 µs.
pub(crate) const DEFAULT_POLL_TIME_HISTOGRAM: HistogramConfiguration = HistogramConfiguration {
    layout: Layout::Linear {
        width: 100_000,
        buckets: 10,
    },
};

/// 24 buckets doubling from 1 µs (0 to 1 µs, ..., 4.19 s on).
pub(crate) const LOG2_FROM_1US: HistogramConfiguration = HistogramConfiguration {
    layout: Layout::Log2 {
        first: 1_000,
        buckets: 24,
    },
};

/// The timer-lateness histogram's default: [`LOG2_FROM_1US`].
pub(crate) const DEFAULT_LATENESS_HISTOGRAM: HistogramConfiguration = LOG2_FROM_1US;

/// A core's histogram: its layout and its counts, written by the core alone.
pub(crate) struct Histogram {
    /// The layout.
    config: HistogramConfiguration,
    /// One count a bucket; only the core writes them.
    counts: Box<[AtomicU64]>,
}

impl Histogram {
    /// An empty histogram of `config`'s layout.
    pub(crate) fn new(config: HistogramConfiguration) -> Histogram {
        Histogram {
            config,
            counts: (0..config.num_buckets())
                .map(|_| AtomicU64::new(0))
                .collect(),
        }
    }

    /// Counts `ns` nanoseconds in its bucket. On the core's own thread only: a load and a
    /// store, no read-modify-write.
    #[inline]
    pub(crate) fn record(&self, ns: u64) {
        let bucket = self.config.bucket(ns);
        if let Some(count) = self.counts.get(bucket) {
            count.store(count.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
        }
    }

    /// The layout.
    pub(crate) fn config(&self) -> &HistogramConfiguration {
        &self.config
    }

    /// What bucket `bucket` counted so far.
    ///
    /// # Panics
    ///
    /// If there is no such bucket.
    pub(crate) fn count(&self, bucket: usize) -> u64 {
        let n = self.counts.len();
        self.counts
            .get(bucket)
            .unwrap_or_else(|| panic!("bucket {bucket} of a histogram of {n} buckets"))
            .load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const US: u64 = 1_000;

    #[test]
    fn linear_buckets_by_width_and_the_last_is_open() {
        let c = HistogramConfiguration::linear(Duration::from_micros(100), 10);
        assert_eq!(c.bucket(0), 0);
        assert_eq!(c.bucket(100 * US - 1), 0);
        assert_eq!(c.bucket(100 * US), 1);
        assert_eq!(c.bucket(899 * US), 8);
        assert_eq!(c.bucket(900 * US), 9);
        assert_eq!(c.bucket(u64::MAX), 9);
        let us = Duration::from_micros;
        assert_eq!(c.bucket_range(0), us(0)..us(100));
        assert_eq!(c.bucket_range(8), us(800)..us(900));
        assert_eq!(c.bucket_range(9), us(900)..Duration::from_nanos(u64::MAX));
    }

    #[test]
    fn log2_buckets_double_and_every_value_falls_in_its_range() {
        let c = HistogramConfiguration::log2(Duration::from_micros(1), 24);
        assert_eq!(c.bucket(0), 0);
        assert_eq!(c.bucket(US - 1), 0);
        assert_eq!(c.bucket(US), 1);
        assert_eq!(c.bucket(2 * US - 1), 1);
        assert_eq!(c.bucket(2 * US), 2);
        assert_eq!(c.bucket(900 * US), 10);
        assert_eq!(c.bucket(u64::MAX), 23);
        let us = Duration::from_micros;
        assert_eq!(c.bucket_range(0), us(0)..us(1));
        assert_eq!(c.bucket_range(10), us(512)..us(1_024));
        for ns in [
            0,
            1,
            US - 1,
            US,
            3 * US,
            700 * US,
            5_000_000 * US,
            u64::MAX - 1,
        ] {
            let range = c.bucket_range(c.bucket(ns));
            assert!(
                range.contains(&Duration::from_nanos(ns)),
                "{ns} in {range:?}"
            );
        }
    }

    #[test]
    fn widths_past_the_range_of_u64_saturate() {
        let c = HistogramConfiguration::log2(Duration::from_secs(1), 64);
        assert_eq!(c.bucket_range(62).end, Duration::from_nanos(u64::MAX));
        let l = HistogramConfiguration::linear(Duration::MAX, 3);
        assert_eq!(l.bucket(u64::MAX - 1), 0);
    }

    #[test]
    fn a_record_counts_in_its_bucket() {
        let h = Histogram::new(HistogramConfiguration::linear(Duration::from_nanos(10), 3));
        for ns in [0, 9, 10, 25, 1_000] {
            h.record(ns);
        }
        assert_eq!([h.count(0), h.count(1), h.count(2)], [2, 1, 2]);
    }
}
