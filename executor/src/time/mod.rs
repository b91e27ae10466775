//! Time: sleeping, timeouts and intervals on the core's timer wheel.
//!
//! # Precision
//!
//! A timer never fires before its deadline. It fires at most the wheel's resolution (1 µs by
//! default) plus its slack after it, plus however long the core takes to get to it: the
//! timerfd is armed for the exact instant, not rounded to a millisecond.
//!
//! A timer that gives no slack gets the runtime's default, a share of its length that grows
//! with it: `length² / 2 ms`, at most 1,024 µs (a 100 µs sleep may be 4 µs late, a 1 ms one
//! 256 µs, one of 1.43 ms or more about a millisecond, as tokio's would be; see
//! [`Builder::default_slack_growing`](crate::Builder::default_slack_growing) for why).
//! [`Sleep::slack`]`(Duration::ZERO)` makes one timer exact,
//! [`Builder::default_slack`](crate::Builder::default_slack)`(Duration::ZERO)` every timer.
//!
//! # Costs
//!
//! A [`Sleep`] registers with the core that first polls it; one that is dropped unpolled costs
//! nothing. Insert and cancel are O(1) and make no system call: the core's timerfd is
//! re-programmed at most once per idle transition, and with the default `Lazy` policy only when
//! the earliest deadline moves earlier.

mod instant;
mod interval;
mod sleep;
mod timeout;

pub use instant::Instant;
pub use interval::{interval, interval_at, Interval, MissedTickBehavior};
pub use sleep::{sleep, sleep_until, Sleep};
pub use timeout::{timeout, timeout_at, Elapsed, Timeout};

/// `std::time::Duration`, re-exported as tokio does, so that a port's `use
/// tokio::time::Duration` becomes `use tickless::time::Duration`.
pub use std::time::Duration;

use crate::context::{with_current, NO_RUNTIME};
use crate::worker::clock::nanos;

/// Pauses the current core's clock, as tokio's `time::pause`: from now on it moves only
/// through [`advance`], or by itself when every task of the core waits and no I/O is ready: to
/// the instant a real core would wake at, the end of the earliest timer's window (its
/// deadline plus its slack: a sleep of an hour with the default slack completes 1,024 µs after
/// the hour; `Sleep::slack(Duration::ZERO)` for exactly). Each core has its own clock: the
/// other cores' clocks run on.
///
/// The clock stops at its reading rounded up to the timer resolution (less than a tick ahead,
/// 1 µs by default), as a clock started paused stands on a whole tick: a sleep of whole ticks
/// made while paused ends on a whole tick, so `pause(); sleep(1 s); advance(1 s)` fires the
/// sleep (at the raw reading, the deadline would round up to the next tick, one past the
/// advance).
///
/// # Preventing auto-advance
///
/// While the runtime's blocking pool has work queued or running
/// ([`spawn_blocking`](crate::task::spawn_blocking), [`fs`](crate::fs), name lookups), a
/// paused clock does not move by itself, as tokio's has not since 1.23: the job's result may
/// be what the waiting tasks wait for, so `timeout(Duration::from_secs(100),
/// spawn_blocking(work))` gives the job's result, not `Elapsed`, however long the work takes
/// in real time. The core sleeps instead, and the pool wakes it when its last job is done;
/// [`advance`] still moves the clock. A blocking job that never returns therefore keeps paused
/// time still for as long as it runs; wrapping I/O that the test does not want auto-advance to
/// skip in `spawn_blocking` is, as in tokio, a way to hold the clock.
///
/// # Panics
///
/// Outside a runtime, or if the core's clock is already paused.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use tickless::time::{pause, resume, sleep, Instant};
///
/// let rt = tickless::Runtime::new()?;
/// rt.block_on(async {
///     pause();
///     let start = Instant::now();
///     sleep(Duration::from_secs(3600)).await; // no real hour passes
///     let slept = start.elapsed(); // an hour, plus the default slack of a long sleep
///     assert!(slept >= Duration::from_secs(3600) && slept < Duration::from_secs(3601));
///     resume();
///     sleep(Duration::from_micros(10)).await; // real time again, from where it stood
///     assert!(start.elapsed() > Duration::from_secs(3600));
/// });
/// # std::io::Result::Ok(())
/// ```
pub fn pause() {
    let paused = with_current(|core| core.timers().pause()).expect(NO_RUNTIME);
    assert!(paused, "`time::pause`: time is already paused");
}

/// Lets the current core's clock run again from where it stands, as tokio's `time::resume`:
/// time moved while paused (by [`advance`], or by jumps to timers) counts, and the real time
/// that passed while it was paused does not.
///
/// # Panics
///
/// Outside a runtime, or if the core's clock is not paused.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use tickless::time::{advance, pause, resume, sleep, Instant};
///
/// let rt = tickless::Runtime::new()?;
/// rt.block_on(async {
///     pause();
///     let start = Instant::now();
///     advance(Duration::from_secs(60)).await;
///     resume(); // the clock runs on from 60 s after `start`
///     assert!(start.elapsed() >= Duration::from_secs(60));
///     let real = Instant::now();
///     sleep(Duration::from_micros(100)).await; // a real sleep again
///     assert!(real.elapsed() >= Duration::from_micros(100));
/// });
/// # std::io::Result::Ok(())
/// ```
pub fn resume() {
    let resumed = with_current(|core| core.timers().resume()).expect(NO_RUNTIME);
    assert!(resumed, "`time::resume`: time is not paused");
}

/// Moves paused time forward by `duration`, then yields once. The timers it passes fire in
/// deadline order at the loop's next turn and their tasks are woken; they run after that, so
/// a caller that needs them to have run yields (or awaits them) a little more. Like tokio's
/// `time::advance`, which promises no more.
///
/// # Panics
///
/// Outside a runtime, if time is not paused (see [`pause`] and
/// [`Builder::start_paused`](crate::Builder::start_paused)), or if paused time would move past
/// its range (about 146 years after the runtime started): time never jumps short of what was
/// asked, and a sleep is never early.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use tickless::time::{advance, sleep, Instant};
///
/// let rt = tickless::Builder::new().start_paused(true).build()?;
/// rt.block_on(async {
///     let start = Instant::now();
///     let s = tickless::spawn(sleep(Duration::from_secs(3600)));
///     advance(Duration::from_secs(3600)).await;
///     s.await.unwrap();
///     assert_eq!(start.elapsed(), Duration::from_secs(3600));
/// });
/// # std::io::Result::Ok(())
/// ```
pub async fn advance(duration: Duration) {
    with_current(|core| {
        // A sleep made before the advance counts from before it.
        core.timers().settle_now();
        let clock = core.timers().clock();
        assert!(
            clock.is_paused(),
            "`time::advance` needs paused time (`time::pause()` or `Builder::start_paused(true)`)"
        );
        let to = clock.now().saturating_add(nanos(duration));
        assert!(
            clock.advance_to(to),
            "`time::advance({duration:?})` would move paused time past its range (about 146 \
             years after the runtime started)"
        );
    })
    .expect(NO_RUNTIME);
    // Let the loop expire the timers passed, and their tasks run.
    crate::task::yield_now().await;
}
