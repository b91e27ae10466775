//! `Interval`: ticks at a fixed period.

use std::future::poll_fn;
use std::task::{Context, Poll};
use std::time::Duration;

use crate::time::{sleep_until, Instant, Sleep};

/// How late a tick must be to count as missed (tokio's threshold).
const MISSED_AFTER: Duration = Duration::from_millis(5);

/// What an [`Interval`] does when a tick was missed (came more than 5 ms late, as tokio).
/// Under every behaviour the late tick itself is returned, at once, with its scheduled
/// instant; the behaviour decides the ticks after it.
///
/// # Examples
///
/// Ticks every 10 s, with no tick taken between 0 and 35 s (a stalled loop):
///
/// ```
/// use std::time::Duration;
/// use tickless::time::{advance, interval, Instant, MissedTickBehavior};
///
/// let rt = tickless::Builder::new().start_paused(true).build()?;
/// rt.block_on(async {
///     let secs = Duration::from_secs;
///     for (behavior, then) in [
///         (MissedTickBehavior::Burst, [20, 30, 40]), // at once, until caught up
///         (MissedTickBehavior::Delay, [45, 55, 65]), // a period after the late tick
///         (MissedTickBehavior::Skip, [40, 50, 60]), // on the period's multiples
///     ] {
///         let start = Instant::now();
///         let mut every = interval(secs(10));
///         every.set_missed_tick_behavior(behavior);
///         every.tick().await; // at once
///         advance(secs(35)).await;
///         assert_eq!(every.tick().await, start + secs(10)); // late, at 35 s
///         for at in then {
///             assert_eq!(every.tick().await, start + secs(at));
///         }
///     }
/// });
/// # std::io::Result::Ok(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MissedTickBehavior {
    /// Fire the missed ticks at once, one per call, until caught up (tokio's default).
    #[default]
    Burst,
    /// Start the period again from the late tick.
    Delay,
    /// Skip the missed ticks: the next one is the next multiple of the period.
    Skip,
}

/// Ticks every `period`, the first tick at once.
///
/// # Panics
///
/// If `period` is zero (as tokio: "`period` must be non-zero.").
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use tickless::time::interval;
///
/// let rt = tickless::Runtime::new()?;
/// rt.block_on(async {
///     let mut every = interval(Duration::from_micros(100));
///     let first = every.tick().await; // at once
///     let second = every.tick().await;
///     assert!(second - first >= Duration::from_micros(100));
/// });
/// # std::io::Result::Ok(())
/// ```
pub fn interval(period: Duration) -> Interval {
    interval_at(Instant::now(), period)
}

/// Ticks every `period`, the first tick at `start`.
///
/// # Panics
///
/// If `period` is zero.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use tickless::time::{interval_at, Instant};
///
/// let rt = tickless::Builder::new().start_paused(true).build()?;
/// rt.block_on(async {
///     let start = Instant::now() + Duration::from_secs(5);
///     let mut every = interval_at(start, Duration::from_secs(1));
///     assert_eq!(every.tick().await, start); // the first tick waits for `start`
///     assert_eq!(every.tick().await, start + Duration::from_secs(1));
///     assert!(Instant::now() >= start + Duration::from_secs(1));
/// });
/// # std::io::Result::Ok(())
/// ```
pub fn interval_at(start: Instant, period: Duration) -> Interval {
    assert!(!period.is_zero(), "`period` must be non-zero.");
    Interval {
        sleep: sleep_until(start),
        period,
        missed: MissedTickBehavior::default(),
    }
}

/// The stream of ticks of [`interval`].
///
/// # Examples
///
/// A periodic job, on paused time (no real minutes pass):
///
/// ```
/// use std::time::Duration;
/// use tickless::time::{interval, Instant};
///
/// let rt = tickless::Builder::new().start_paused(true).build()?;
/// rt.block_on(async {
///     let start = Instant::now();
///     let mut every = interval(Duration::from_secs(60));
///     let mut runs = Vec::new();
///     while runs.len() < 3 {
///         let at = every.tick().await; // when the tick was due
///         runs.push(at.duration_since(start).as_secs()); // the job
///     }
///     assert_eq!(runs, [0, 60, 120]);
/// });
/// # std::io::Result::Ok(())
/// ```
#[derive(Debug)]
pub struct Interval {
    /// Sleeps until the next tick.
    sleep: Sleep,
    /// Time between ticks.
    period: Duration,
    /// What to do about missed ticks.
    missed: MissedTickBehavior,
}

impl Interval {
    /// Waits for the next tick and returns its scheduled instant.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use tickless::time::{interval, Instant};
    ///
    /// let rt = tickless::Builder::new().start_paused(true).build()?;
    /// rt.block_on(async {
    ///     let start = Instant::now();
    ///     let mut every = interval(Duration::from_secs(1));
    ///     assert_eq!(every.tick().await, start); // the first at once
    ///     assert_eq!(every.tick().await, start + Duration::from_secs(1));
    ///     assert!(Instant::now() >= start + Duration::from_secs(1)); // never early
    /// });
    /// # std::io::Result::Ok(())
    /// ```
    pub async fn tick(&mut self) -> Instant {
        poll_fn(|cx| self.poll_tick(cx)).await
    }

    /// Polls for the next tick.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::future::poll_fn;
    /// use std::time::Duration;
    /// use tickless::time::{interval, Instant};
    ///
    /// let rt = tickless::Builder::new().start_paused(true).build()?;
    /// rt.block_on(async {
    ///     let start = Instant::now();
    ///     let mut every = interval(Duration::from_secs(1));
    ///     every.tick().await;
    ///     let next = poll_fn(|cx| every.poll_tick(cx)).await; // what `tick` does
    ///     assert_eq!(next, start + Duration::from_secs(1));
    /// });
    /// # std::io::Result::Ok(())
    /// ```
    pub fn poll_tick(&mut self, cx: &mut Context<'_>) -> Poll<Instant> {
        if self.sleep.poll_sleep(cx).is_pending() {
            return Poll::Pending;
        }
        let tick = self.sleep.deadline();
        let now = Instant::now();
        // As tokio: a tick counts as missed only when more than 5 ms late.
        let missed = now > tick.far_add(MISSED_AFTER);
        let next = match self.missed {
            MissedTickBehavior::Burst => tick.far_add(self.period),
            MissedTickBehavior::Delay if missed => now.far_add(self.period),
            MissedTickBehavior::Skip if missed => {
                // In u128 nanoseconds: any stall length, no saturation short of the next tick.
                let behind = now.saturating_duration_since(tick).as_nanos();
                let period = self.period.as_nanos();
                let skip = (behind / period + 1).saturating_mul(period);
                tick.far_add(duration_from_nanos(skip))
            }
            MissedTickBehavior::Delay | MissedTickBehavior::Skip => tick.far_add(self.period),
        };
        self.sleep.reset(next);
        Poll::Ready(tick)
    }

    /// Makes the next tick one period from now.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use tickless::time::{interval, sleep, Instant};
    ///
    /// let rt = tickless::Builder::new().start_paused(true).build()?;
    /// rt.block_on(async {
    ///     let start = Instant::now();
    ///     let mut every = interval(Duration::from_secs(10));
    ///     every.tick().await; // at once
    ///     sleep(Duration::from_secs(4)).slack(Duration::ZERO).await;
    ///     every.reset(); // from now, not from the last tick
    ///     assert_eq!(every.tick().await, start + Duration::from_secs(14));
    /// });
    /// # std::io::Result::Ok(())
    /// ```
    pub fn reset(&mut self) {
        self.reset_at(Instant::now().far_add(self.period));
    }

    /// Makes the next tick at `deadline` (the following ones a period apart from it), as
    /// tokio's `Interval::reset_at`.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use tickless::time::{interval, Instant};
    ///
    /// let rt = tickless::Builder::new().start_paused(true).build()?;
    /// rt.block_on(async {
    ///     let start = Instant::now();
    ///     let mut every = interval(Duration::from_secs(10));
    ///     every.tick().await; // the first tick is at once
    ///     every.reset_at(start + Duration::from_secs(3));
    ///     assert_eq!(every.tick().await, start + Duration::from_secs(3));
    ///     assert_eq!(every.tick().await, start + Duration::from_secs(13));
    /// });
    /// # std::io::Result::Ok(())
    /// ```
    pub fn reset_at(&mut self, deadline: Instant) {
        self.sleep.reset(deadline);
    }

    /// The missed-tick behaviour.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use tickless::time::{interval, MissedTickBehavior};
    ///
    /// let rt = tickless::Runtime::new()?;
    /// rt.block_on(async {
    ///     let mut every = interval(Duration::from_secs(1));
    ///     assert_eq!(every.missed_tick_behavior(), MissedTickBehavior::Burst); // the default
    ///     every.set_missed_tick_behavior(MissedTickBehavior::Skip);
    ///     assert_eq!(every.missed_tick_behavior(), MissedTickBehavior::Skip);
    /// });
    /// # std::io::Result::Ok(())
    /// ```
    pub fn missed_tick_behavior(&self) -> MissedTickBehavior {
        self.missed
    }

    /// Sets the missed-tick behaviour.
    ///
    /// See the example on [`MissedTickBehavior`].
    pub fn set_missed_tick_behavior(&mut self, behavior: MissedTickBehavior) {
        self.missed = behavior;
    }

    /// The period.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use tickless::time::interval;
    ///
    /// let rt = tickless::Runtime::new()?;
    /// rt.block_on(async {
    ///     let every = interval(Duration::from_millis(250));
    ///     assert_eq!(every.period(), Duration::from_millis(250));
    /// });
    /// # std::io::Result::Ok(())
    /// ```
    pub fn period(&self) -> Duration {
        self.period
    }
}

/// A `Duration` of `ns` nanoseconds, saturating at `Duration::MAX`.
fn duration_from_nanos(ns: u128) -> Duration {
    let secs = u64::try_from(ns / 1_000_000_000).unwrap_or(u64::MAX);
    // Below one second: fits.
    Duration::new(secs, (ns % 1_000_000_000) as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nanos_beyond_u64_make_a_duration() {
        assert_eq!(
            duration_from_nanos(1_500_000_000),
            Duration::from_millis(1500)
        );
        let big = u128::from(u64::MAX) * 10;
        assert_eq!(
            duration_from_nanos(big).as_nanos(),
            big,
            "more than 2^64 ns, exactly"
        );
        assert_eq!(duration_from_nanos(u128::MAX).as_secs(), u64::MAX);
    }
}
