//! `Instant`: `std::time::Instant` that follows paused time.

use std::fmt;
use std::ops::{Add, AddAssign, Sub, SubAssign};
use std::time::Duration;

use crate::context::with_current;
use crate::worker::clock::Epoch;

/// A measurement of the monotonic clock, as `std::time::Instant`, except that inside a runtime
/// whose time is paused, [`now`](Self::now) reads the paused clock (as tokio's `Instant` does).
///
/// It is kept as signed nanoseconds from the process's epoch (its first use of tickless time),
/// the unit of every core's timers, so that `sleep_until(Instant::now() + d)` converts nothing.
/// That spans about 292 years either side of the epoch: an instant beyond converts from `std` as
/// the end of the range, and adding past it panics, as `std`'s overflow does (`checked_add`
/// returns `None`).
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use tickless::time::{sleep, Instant};
///
/// let rt = tickless::Builder::new().start_paused(true).build()?;
/// rt.block_on(async {
///     let start = Instant::now();
///     sleep(Duration::from_secs(5)).slack(Duration::ZERO).await; // paused: no real wait
///     let now = Instant::now();
///     assert_eq!(start.elapsed(), Duration::from_secs(5));
///     assert_eq!(now.duration_since(start), Duration::from_secs(5));
///     assert_eq!(start.duration_since(now), Duration::ZERO); // `now` is later: zero, no panic
///     assert_eq!(start.checked_duration_since(now), None);
///     assert_eq!(start.checked_add(Duration::from_secs(5)), Some(now));
///     assert_eq!(now.checked_sub(Duration::from_secs(5)), Some(start));
///     assert_eq!(now.checked_add(Duration::MAX), None); // out of range
///     let std: std::time::Instant = now.into_std(); // for APIs that take std's
///     assert_eq!(Instant::from_std(std), now);
/// });
/// # std::io::Result::Ok(())
/// ```
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Instant(i64);

impl Instant {
    /// Now: the core's clock inside a runtime (paused time if paused; each read is counted in
    /// the stats), the system's monotonic clock elsewhere.
    ///
    /// A running core's clock is `CLOCK_MONOTONIC`, read directly and counted from the
    /// process's epoch: it is the clock sleeps and timeouts take their deadlines from and
    /// expire by, and it may read up to a few hundred nanoseconds behind
    /// `std::time::Instant::now()`, never ahead (so a deadline is never early by either).
    ///
    /// See the example on [`Instant`].
    pub fn now() -> Instant {
        Instant::from_ns(now_ns())
    }

    /// From a `std::time::Instant`.
    ///
    /// See the example on [`Instant`].
    pub fn from_std(std: std::time::Instant) -> Instant {
        let epoch = Epoch::global().std();
        Instant(match std.checked_duration_since(epoch) {
            Some(after) => clamp_ns(after),
            None => -clamp_ns(epoch.saturating_duration_since(std)),
        })
    }

    /// Into a `std::time::Instant`.
    ///
    /// See the example on [`Instant`].
    pub fn into_std(self) -> std::time::Instant {
        let epoch = Epoch::global().std();
        let d = Duration::from_nanos(self.0.unsigned_abs());
        let at = if self.0 >= 0 {
            epoch.checked_add(d)
        } else {
            epoch.checked_sub(d)
        };
        at.expect("292 years either side of the epoch are representable")
    }

    /// The instant `ns` nanoseconds after the epoch (a core's clock reading, a deadline).
    pub(crate) fn from_ns(ns: u64) -> Instant {
        Instant(i64::try_from(ns).unwrap_or(i64::MAX))
    }

    /// Nanoseconds since the epoch, 0 for an instant before it: the wheel's unit.
    pub(crate) fn ns(self) -> u64 {
        self.0.max(0) as u64
    }

    /// Time since `earlier`, zero if it is later.
    ///
    /// See the example on [`Instant`].
    pub fn duration_since(&self, earlier: Instant) -> Duration {
        self.saturating_duration_since(earlier)
    }

    /// Time since `earlier`, zero if it is later.
    ///
    /// See the example on [`Instant`].
    pub fn saturating_duration_since(&self, earlier: Instant) -> Duration {
        self.checked_duration_since(earlier).unwrap_or_default()
    }

    /// Time since `earlier`, `None` if it is later.
    ///
    /// See the example on [`Instant`].
    pub fn checked_duration_since(&self, earlier: Instant) -> Option<Duration> {
        (self.0 >= earlier.0).then(|| Duration::from_nanos(self.0.abs_diff(earlier.0)))
    }

    /// Time elapsed since this instant (zero if it is in the future).
    ///
    /// See the example on [`Instant`].
    pub fn elapsed(&self) -> Duration {
        Instant::now().saturating_duration_since(*self)
    }

    /// `self + d`, `None` on overflow.
    ///
    /// See the example on [`Instant`].
    pub fn checked_add(&self, d: Duration) -> Option<Instant> {
        let d = i64::try_from(d.as_nanos()).ok()?;
        self.0.checked_add(d).map(Instant)
    }

    /// `self - d`, `None` on overflow.
    ///
    /// See the example on [`Instant`].
    pub fn checked_sub(&self, d: Duration) -> Option<Instant> {
        let d = i64::try_from(d.as_nanos()).ok()?;
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

/// A non-negative span in nanoseconds, as an `i64` (at most about 292 years).
fn clamp_ns(d: Duration) -> i64 {
    i64::try_from(d.as_nanos()).unwrap_or(i64::MAX)
}

impl fmt::Debug for Instant {
    /// As the `std::time::Instant` it stands for.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.into_std().fmt(f)
    }
}

impl From<std::time::Instant> for Instant {
    fn from(i: std::time::Instant) -> Instant {
        Instant::from_std(i)
    }
}

impl From<Instant> for std::time::Instant {
    fn from(i: Instant) -> std::time::Instant {
        i.into_std()
    }
}

impl Add<Duration> for Instant {
    type Output = Instant;

    /// # Panics
    ///
    /// On overflow, as `std::time::Instant`.
    fn add(self, d: Duration) -> Instant {
        self.checked_add(d)
            .expect("overflow when adding duration to instant")
    }
}

impl AddAssign<Duration> for Instant {
    fn add_assign(&mut self, d: Duration) {
        *self = *self + d;
    }
}

impl Sub<Duration> for Instant {
    type Output = Instant;

    /// # Panics
    ///
    /// On overflow, as `std::time::Instant`.
    fn sub(self, d: Duration) -> Instant {
        self.checked_sub(d)
            .expect("overflow when subtracting duration from instant")
    }
}

impl SubAssign<Duration> for Instant {
    fn sub_assign(&mut self, d: Duration) {
        *self = *self - d;
    }
}

impl Sub<Instant> for Instant {
    type Output = Duration;

    /// Saturates at zero, as `std::time::Instant` does today.
    fn sub(self, other: Instant) -> Duration {
        self.saturating_duration_since(other)
    }
}

/// About 30 years, in nanoseconds: how far a deadline given as a duration goes at most (one
/// never reached in practice, and never an overflow).
pub(crate) const FAR_NS: u64 = 86_400 * 365 * 30 * 1_000_000_000;

/// Now, in the nanoseconds of the cores' clocks ([`Epoch::global`]): the current core's clock
/// (paused time if paused; one counted read), the system's monotonic clock elsewhere.
#[inline]
pub(crate) fn now_ns() -> u64 {
    with_current(|c| c.timers().clock().now()).unwrap_or_else(|| Epoch::global().elapsed())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arithmetic_is_std_s_within_the_range_and_checked_at_its_ends() {
        let a = Instant::from_ns(5_000);
        let b = a + Duration::from_nanos(1_500);
        assert_eq!(b - a, Duration::from_nanos(1_500));
        assert_eq!(a - b, Duration::ZERO, "saturates, as std's");
        assert_eq!(a.checked_duration_since(b), None);
        assert_eq!(b.duration_since(a), Duration::from_nanos(1_500));
        assert_eq!(a.duration_since(b), Duration::ZERO);
        assert_eq!(
            b.checked_duration_since(a),
            Some(Duration::from_nanos(1_500))
        );
        assert_eq!(b - Duration::from_nanos(1_500), a);
        let mut c = a;
        c += Duration::from_secs(2);
        c -= Duration::from_secs(1);
        assert_eq!(c, a + Duration::from_secs(1));
        let (top, bottom) = (Instant(i64::MAX), Instant(i64::MIN));
        assert_eq!(top.checked_add(Duration::from_nanos(1)), None);
        assert_eq!(bottom.checked_sub(Duration::from_nanos(1)), None);
        assert_eq!(a.checked_add(Duration::MAX), None);
        assert_eq!(a.checked_sub(Duration::MAX), None);
        assert_eq!(
            top.checked_duration_since(bottom),
            Some(Duration::from_nanos(u64::MAX)),
            "the two ends are further apart than an i64 holds"
        );
        assert_eq!(bottom.checked_duration_since(top), None);
        assert_eq!(a.far_add(Duration::MAX), a + Duration::from_nanos(FAR_NS));
        assert_eq!(top.far_add(Duration::from_secs(1)), top, "never a panic");
    }

    #[test]
    fn std_instants_convert_exactly_and_print_as_std_s() {
        let now = std::time::Instant::now();
        for std in [
            now,
            now + Duration::from_secs(86_400 * 365),
            now - Duration::from_nanos(7),
        ] {
            let ours = Instant::from_std(std);
            assert_eq!(ours.into_std(), std);
            assert_eq!(std::time::Instant::from(Instant::from(std)), std);
            assert_eq!(format!("{ours:?}"), format!("{std:?}"));
        }
        let epoch = Epoch::global().std();
        assert_eq!(Instant::from_std(epoch).ns(), 0);
        assert_eq!(
            Instant::from_std(epoch - Duration::from_nanos(3)).ns(),
            0,
            "before: 0"
        );
        assert_eq!(Instant::from_std(epoch + Duration::from_nanos(3)).ns(), 3);
        assert_eq!(Instant::from_ns(u64::MAX), Instant(i64::MAX));
    }
}
