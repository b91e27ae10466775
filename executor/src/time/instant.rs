//! `Instant`: `std::time::Instant` that follows paused time.

use std::ops::{Add, AddAssign, Sub, SubAssign};
use std::time::Duration;

use crate::context::with_current;
use crate::worker::clock::Epoch;

/// A measurement of the monotonic clock, as `std::time::Instant`, except that inside a runtime
/// whose time is paused, [`now`](Self::now) reads the paused clock (as tokio's `Instant` does).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Instant(std::time::Instant);

impl Instant {
    /// Now: the core's clock inside a runtime (paused time if paused; each read is counted in
    /// the stats), the system's monotonic clock elsewhere.
    ///
    /// A running core's clock is `CLOCK_MONOTONIC`, read directly and counted from the
    /// process's epoch (its first use of tickless time): it is the clock sleeps and timeouts take their deadlines from
    /// and expire by, and it may read up to a few hundred nanoseconds behind
    /// `std::time::Instant::now()`, never ahead (so a deadline is never early by either).
    pub fn now() -> Instant {
        Instant(
            with_current(|c| c.timers().clock().now_instant())
                .unwrap_or_else(std::time::Instant::now),
        )
    }

    /// From a `std::time::Instant`.
    pub fn from_std(std: std::time::Instant) -> Instant {
        Instant(std)
    }

    /// Into a `std::time::Instant`.
    pub fn into_std(self) -> std::time::Instant {
        self.0
    }

    /// Time since `earlier`, zero if it is later.
    pub fn duration_since(&self, earlier: Instant) -> Duration {
        self.0.saturating_duration_since(earlier.0)
    }

    /// Time since `earlier`, zero if it is later.
    pub fn saturating_duration_since(&self, earlier: Instant) -> Duration {
        self.0.saturating_duration_since(earlier.0)
    }

    /// Time since `earlier`, `None` if it is later.
    pub fn checked_duration_since(&self, earlier: Instant) -> Option<Duration> {
        self.0.checked_duration_since(earlier.0)
    }

    /// Time elapsed since this instant (zero if it is in the future).
    pub fn elapsed(&self) -> Duration {
        Instant::now().saturating_duration_since(*self)
    }

    /// `self + d`, `None` on overflow.
    pub fn checked_add(&self, d: Duration) -> Option<Instant> {
        self.0.checked_add(d).map(Instant)
    }

    /// `self - d`, `None` on overflow.
    pub fn checked_sub(&self, d: Duration) -> Option<Instant> {
        self.0.checked_sub(d).map(Instant)
    }

    /// `self + d`, or an instant about 30 years after `self` if that overflows: a deadline that
    /// is never reached in practice, and never a panic.
    pub(crate) fn far_add(self, d: Duration) -> Instant {
        self.checked_add(d)
            .or_else(|| self.checked_add(Duration::from_nanos(FAR_NS)))
            .unwrap_or(self)
    }
}

/// About 30 years, in nanoseconds: how far a deadline given as a duration goes at most (one
/// never reached in practice, and never an overflow).
pub(crate) const FAR_NS: u64 = 86_400 * 365 * 30 * 1_000_000_000;

/// Now, in the nanoseconds of the cores' clocks ([`Epoch::global`]): the current core's clock
/// (paused time if paused; one counted read), the system's monotonic clock elsewhere.
pub(crate) fn now_ns() -> u64 {
    with_current(|c| c.timers().clock().now()).unwrap_or_else(|| Epoch::global().elapsed())
}

impl From<std::time::Instant> for Instant {
    fn from(i: std::time::Instant) -> Instant {
        Instant(i)
    }
}

impl From<Instant> for std::time::Instant {
    fn from(i: Instant) -> std::time::Instant {
        i.0
    }
}

impl Add<Duration> for Instant {
    type Output = Instant;

    /// # Panics
    ///
    /// On overflow, as `std::time::Instant`.
    fn add(self, d: Duration) -> Instant {
        Instant(self.0 + d)
    }
}

impl AddAssign<Duration> for Instant {
    fn add_assign(&mut self, d: Duration) {
        self.0 += d;
    }
}

impl Sub<Duration> for Instant {
    type Output = Instant;

    fn sub(self, d: Duration) -> Instant {
        Instant(self.0 - d)
    }
}

impl SubAssign<Duration> for Instant {
    fn sub_assign(&mut self, d: Duration) {
        self.0 -= d;
    }
}

impl Sub<Instant> for Instant {
    type Output = Duration;

    /// Saturates at zero, as `std::time::Instant` does today.
    fn sub(self, other: Instant) -> Duration {
        self.saturating_duration_since(other)
    }
}
