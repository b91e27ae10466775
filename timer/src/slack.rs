//! How late a timer may fire, and turning nanosecond deadlines into wheel ticks.

use std::time::Duration;

/// How late a timer may fire. The queue arms its device for the earliest instant some timer
/// must fire by (its deadline plus its slack) and, when the device fires, expires every timer
/// whose deadline has passed: timers whose windows overlap share one wakeup.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Slack {
    /// May fire up to this much after its deadline (plus the queue's resolution).
    Bounded(Duration),
    /// Deferrable: never arms the device; fires at the first wakeup after its deadline, which
    /// may be arbitrarily late if nothing else wakes the core.
    Unbounded,
    /// Fires as close to its deadline as the resolution allows.
    #[default]
    None,
}

impl Slack {
    /// Whether the timer is deferrable.
    pub fn is_unbounded(self) -> bool {
        self == Slack::Unbounded
    }
}

/// Nanoseconds in a duration, saturating at `u64::MAX` (584 years): the queue's unit. In
/// 64-bit arithmetic (`Duration::as_nanos` is a 128-bit multiply, on the insert path).
///
/// ```
/// use std::time::Duration;
///
/// assert_eq!(tickless_timer::nanos(Duration::from_micros(1_500)), 1_500_000);
/// assert_eq!(tickless_timer::nanos(Duration::MAX), u64::MAX);
/// ```
pub fn nanos(d: Duration) -> u64 {
    d.as_secs()
        .checked_mul(1_000_000_000)
        .and_then(|ns| ns.checked_add(u64::from(d.subsec_nanos())))
        .unwrap_or(u64::MAX)
}

/// Converts nanosecond deadlines to ticks of a resolution and back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Ticks {
    /// Nanoseconds per tick, at least 1.
    pub(crate) ns: u64,
    /// `floor((2^64 - 1) / ns)`: division by `ns` as a multiply (a 64-bit `div` costs more than
    /// the rest of a timer insert).
    inverse: u64,
}

impl Ticks {
    pub(crate) fn new(resolution: Duration) -> Ticks {
        let ns = u64::try_from(resolution.as_nanos())
            .unwrap_or(u64::MAX)
            .max(1);
        Ticks {
            ns,
            inverse: u64::MAX / ns,
        }
    }

    /// `n / ns`, rounded down. The multiply-high estimate is exact or one short.
    #[inline]
    fn div_floor(self, n: u64) -> u64 {
        let q = ((n as u128 * self.inverse as u128) >> 64) as u64;
        // q <= n / ns, so q * ns <= n: the remainder fits, and is one `ns` too many if q is short.
        q + (n - q * self.ns >= self.ns) as u64
    }

    /// `n / ns`, rounded up.
    #[inline]
    fn div_ceil(self, n: u64) -> u64 {
        let q = self.div_floor(n);
        q + (q.wrapping_mul(self.ns) != n) as u64
    }

    /// The last tick whose start is a representable instant: the end of the range.
    #[inline]
    pub(crate) fn last(self) -> u64 {
        // `inverse` is that quotient: floor((2^64 - 1) / ns).
        self.inverse
    }

    /// The window of a timer with this deadline and slack: the tick it is due at (never
    /// before the deadline, at most one tick after it; clamped to the end of the range) and the
    /// slack in whole ticks (rounded down: never later than asked); `None` for deferrable.
    pub(crate) fn window(self, deadline: u64, slack: Slack) -> (u64, Option<u64>) {
        (self.tick(deadline), self.slack(slack))
    }

    /// The tick a deadline is due at: never before it, at most one tick after it, clamped to
    /// the end of the range.
    #[inline]
    pub(crate) fn tick(self, deadline: u64) -> u64 {
        self.div_ceil(deadline).min(self.last())
    }

    /// A slack in whole ticks (rounded down: never later than asked); `None` for deferrable.
    pub(crate) fn slack(self, slack: Slack) -> Option<u64> {
        match slack {
            Slack::Bounded(d) => Some(self.div_floor(nanos(d))),
            Slack::None => Some(0),
            Slack::Unbounded => None,
        }
    }

    /// The tick containing `now` (rounded down: a timer expires once `now` reaches its tick).
    pub(crate) fn now(self, now: u64) -> u64 {
        self.div_floor(now)
    }

    /// The nanosecond instant a tick starts at (ticks never pass [`last`](Self::last)).
    pub(crate) fn to_ns(self, tick: u64) -> u64 {
        tick.saturating_mul(self.ns)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fast_division_is_exact() {
        let mut x = 0x0123_4567_89AB_CDEFu64;
        for ns in [
            1u64,
            2,
            3,
            7,
            1_000,
            1_024,
            999_999_937,
            u64::MAX / 3,
            u64::MAX,
        ] {
            let t = Ticks::new(Duration::from_nanos(ns));
            for n in [0, 1, ns - 1, ns, ns.wrapping_add(1), u64::MAX - 1, u64::MAX] {
                assert_eq!(t.div_floor(n), n / ns, "{n} / {ns}");
                assert_eq!(t.div_ceil(n), n.div_ceil(ns), "{n} / {ns}");
            }
            for _ in 0..10_000 {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                assert_eq!(t.div_floor(x), x / ns, "{x} / {ns}");
                assert_eq!(t.div_ceil(x), x.div_ceil(ns), "{x} / {ns}");
            }
        }
    }

    #[test]
    fn windows_start_at_the_deadline_and_end_within_slack() {
        let t = Ticks::new(Duration::from_micros(1));
        assert_eq!(t.window(0, Slack::None), (0, Some(0)));
        assert_eq!(t.window(1, Slack::None), (1, Some(0)));
        assert_eq!(t.window(1_000, Slack::None), (1, Some(0)));
        assert_eq!(t.window(1_001, Slack::None), (2, Some(0)));
        assert_eq!(t.window(1_001, Slack::Unbounded), (2, None));
        let ms = Slack::Bounded(Duration::from_millis(1));
        assert_eq!(t.window(1_000_000, ms), (1_000, Some(1_000)));
        assert_eq!(t.window(1_000_001, ms), (1_001, Some(1_000)));
        assert_eq!(
            t.window(u64::MAX, Slack::Bounded(Duration::MAX)),
            (u64::MAX / 1_000, Some(u64::MAX / 1_000))
        );
        for d in [1u64, 999, 123_456_789, u64::MAX / 2] {
            for s in [0u64, 1, 1_000, 7_777, 1_000_000] {
                let (tick, slack) = t.window(d, Slack::Bounded(Duration::from_nanos(s)));
                assert!(t.to_ns(tick) >= d, "never early");
                assert!(t.to_ns(tick + slack.unwrap()) < d + t.ns + s, "never late");
            }
        }
    }
}
