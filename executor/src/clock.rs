//! The core's clock: real or paused, in nanoseconds since the runtime's epoch.

use std::cell::Cell;
use std::time::Duration;

/// Nanoseconds in a `Duration`, saturating at `u64::MAX` (584 years).
pub(crate) fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// A core's clock. Deadlines in the timer queue are nanoseconds since `epoch`.
#[derive(Debug)]
pub(crate) struct Clock {
    /// The instant that is 0 ns.
    pub(crate) epoch: std::time::Instant,
    /// `CLOCK_MONOTONIC` at `epoch`, read just after it, so that arming the timerfd at
    /// `epoch_mono + deadline` is never early (at most the two reads apart late).
    pub(crate) epoch_mono: u64,
    /// `Some(now)` while time is paused: it moves only when advanced.
    paused: Option<Cell<u64>>,
    /// Reads of the clock, for the stats.
    reads: Cell<u64>,
}

impl Clock {
    /// A clock whose 0 is `epoch` (shared by every core of a runtime).
    pub(crate) fn new(epoch: std::time::Instant, paused: bool) -> Clock {
        // Read the instant first: the monotonic read after it is no earlier, so the epoch's
        // monotonic time computed from them is never early either.
        let at = std::time::Instant::now();
        let mono = tickless_io::TimerFd::now_mono_ns();
        let epoch_mono = mono.saturating_sub(nanos(at.saturating_duration_since(epoch)));
        Clock {
            epoch,
            epoch_mono,
            paused: paused.then(|| Cell::new(0)),
            reads: Cell::new(0),
        }
    }

    /// Whether time is paused.
    pub(crate) fn is_paused(&self) -> bool {
        self.paused.is_some()
    }

    /// Now, in nanoseconds since the epoch. One clock read (none while paused).
    pub(crate) fn now(&self) -> u64 {
        match &self.paused {
            Some(now) => now.get(),
            None => {
                self.reads.set(self.reads.get() + 1);
                nanos(self.epoch.elapsed())
            }
        }
    }

    /// Now, from a `CLOCK_MONOTONIC` reading someone else made (the reactor, confirming a
    /// timerfd expiry). Counted as a read. It is at most the two epoch reads apart early, never
    /// late, so a deadline it reaches has really passed.
    pub(crate) fn now_from_mono(&self, mono: u64) -> u64 {
        self.reads.set(self.reads.get() + 1);
        mono.saturating_sub(self.epoch_mono)
    }

    /// Now, as an instant. One clock read (none while paused).
    pub(crate) fn now_instant(&self) -> std::time::Instant {
        match &self.paused {
            Some(now) => self.instant(now.get()),
            None => {
                self.reads.set(self.reads.get() + 1);
                std::time::Instant::now()
            }
        }
    }

    /// The instant `ns` after the epoch (saturating far in the future).
    pub(crate) fn instant(&self, ns: u64) -> std::time::Instant {
        self.epoch
            .checked_add(Duration::from_nanos(ns))
            .unwrap_or_else(|| self.epoch + Duration::from_secs(u64::MAX >> 2))
    }

    /// An instant in nanoseconds since the epoch; instants before it are 0.
    pub(crate) fn ns(&self, instant: std::time::Instant) -> u64 {
        nanos(instant.saturating_duration_since(self.epoch))
    }

    /// Moves paused time forward to `to` (never backward). No-op on a real clock.
    pub(crate) fn advance_to(&self, to: u64) {
        if let Some(now) = &self.paused {
            now.set(now.get().max(to));
        }
    }

    /// Clock reads so far.
    pub(crate) fn reads(&self) -> u64 {
        self.reads.get()
    }
}
