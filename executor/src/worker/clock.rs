//! The core's clock: real or paused, in nanoseconds since the runtime's epoch.

use std::cell::Cell;
use std::time::Duration;

/// Nanoseconds in a `Duration`, saturating at `u64::MAX` (584 years).
pub(crate) use tickless_timer::nanos;

/// The runtime-wide instant that is 0 ns on every core's clock, and the one conversion between
/// instants and those nanoseconds.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Epoch(std::time::Instant);

impl Epoch {
    /// Now is 0 ns.
    pub(crate) fn now() -> Epoch {
        Epoch(std::time::Instant::now())
    }

    /// An instant in nanoseconds since the epoch; instants before it are 0, instants more than
    /// 584 years after it are `u64::MAX`.
    pub(crate) fn ns(self, instant: std::time::Instant) -> u64 {
        nanos(instant.saturating_duration_since(self.0))
    }

    /// The instant `ns` after the epoch, `None` where `std::time::Instant` cannot represent it.
    pub(crate) fn instant(self, ns: u64) -> Option<std::time::Instant> {
        self.0.checked_add(Duration::from_nanos(ns))
    }

    /// Time since the epoch. One clock read.
    fn elapsed(self) -> u64 {
        nanos(self.0.elapsed())
    }
}

/// A core's clock. Deadlines in the timer queue are nanoseconds since the epoch.
///
/// Real time runs as `base + (elapsed since the epoch - since)`: both are zero until the clock
/// is first paused, so an unpaused clock is the monotonic clock itself. Pausing freezes it at
/// its current reading; resuming lets it run on from where it stood (the time spent paused,
/// less what was advanced, does not count), as tokio's does.
#[derive(Debug)]
pub(crate) struct Clock {
    /// The instant that is 0 ns.
    epoch: Epoch,
    /// `CLOCK_MONOTONIC` at `epoch`, read just after it, so that arming the timerfd at
    /// `epoch_mono + deadline` is never early (at most the two reads apart late).
    epoch_mono: u64,
    /// `Some(now)` while time is paused: it moves only when advanced.
    paused: Cell<Option<u64>>,
    /// The reading at the last resume.
    base: Cell<u64>,
    /// Real nanoseconds since the epoch at the last resume.
    since: Cell<u64>,
    /// Reads of the clock, for the stats.
    reads: Cell<u64>,
}

/// How far paused time can go: about 146 years after the epoch, so that every paused instant
/// (and a sleep's deadline computed from it) stays representable. Paused time never moves past
/// it (`time::advance` past it panics, saying so).
pub(crate) const PAUSED_LIMIT: u64 = u64::MAX >> 2;

impl Clock {
    /// A clock whose 0 is `epoch` (shared by every core of a runtime).
    pub(crate) fn new(epoch: Epoch, paused: bool) -> Clock {
        // Read the instant first: the monotonic read after it is no earlier, so the epoch's
        // monotonic time computed from them is never early either.
        let at = std::time::Instant::now();
        let mono = tickless_io::TimerFd::now_mono_ns();
        let epoch_mono = mono.saturating_sub(epoch.ns(at));
        Clock {
            epoch,
            epoch_mono,
            paused: Cell::new(paused.then_some(0)),
            base: Cell::new(0),
            since: Cell::new(0),
            reads: Cell::new(0),
        }
    }

    /// Whether time is paused.
    pub(crate) fn is_paused(&self) -> bool {
        self.paused.get().is_some()
    }

    /// Whether the clock has ever been resumed from a pause: then it is no longer the
    /// monotonic clock itself.
    fn shifted(&self) -> bool {
        self.base.get() != 0 || self.since.get() != 0
    }

    /// Now, in nanoseconds since the epoch. One clock read (none while paused).
    pub(crate) fn now(&self) -> u64 {
        match self.paused.get() {
            Some(now) => now,
            None => {
                self.reads.set(self.reads.get() + 1);
                let real = self.epoch.elapsed();
                self.base.get() + real.saturating_sub(self.since.get())
            }
        }
    }

    /// Now, as an instant. One clock read (none while paused).
    pub(crate) fn now_instant(&self) -> std::time::Instant {
        if self.paused.get().is_none() && !self.shifted() {
            self.reads.set(self.reads.get() + 1);
            return std::time::Instant::now();
        }
        self.epoch
            .instant(self.now())
            .expect("the clock stays below PAUSED_LIMIT, which is representable")
    }

    /// An instant in nanoseconds since the epoch.
    pub(crate) fn ns(&self, instant: std::time::Instant) -> u64 {
        self.epoch.ns(instant)
    }

    /// The `CLOCK_MONOTONIC` instant (ns) of a deadline, to arm the timerfd with; `None` while
    /// time is paused (paused time never arms the real timerfd: the loop advances the clock).
    pub(crate) fn to_mono(&self, deadline: u64) -> Option<u64> {
        if self.is_paused() {
            return None;
        }
        let real = deadline.saturating_sub(self.base.get()) + self.since.get();
        Some(self.epoch_mono.saturating_add(real))
    }

    /// Freezes the clock at its current reading. Returns `false` if it was paused already.
    pub(crate) fn pause(&self) -> bool {
        if self.is_paused() {
            return false;
        }
        self.paused.set(Some(self.now()));
        true
    }

    /// Lets a paused clock run again from where it stands. Returns `false` if it was not
    /// paused.
    pub(crate) fn resume(&self) -> bool {
        let Some(now) = self.paused.take() else {
            return false;
        };
        self.reads.set(self.reads.get() + 1);
        self.since.set(self.epoch.elapsed());
        self.base.set(now);
        true
    }

    /// Moves paused time forward to `to` (never backward). Returns `false`, moving nothing,
    /// if `to` is past [`PAUSED_LIMIT`]: paused time never jumps short of what was asked. No-op
    /// on a running clock.
    pub(crate) fn advance_to(&self, to: u64) -> bool {
        if let Some(now) = self.paused.get() {
            if to > PAUSED_LIMIT {
                return false;
            }
            self.paused.set(Some(now.max(to)));
        }
        true
    }

    /// Clock reads so far.
    pub(crate) fn reads(&self) -> u64 {
        self.reads.get()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_paused_limit_is_representable() {
        let e = Epoch::now();
        assert!(e.instant(PAUSED_LIMIT).is_some());
        // Deadlines computed from any paused instant with a duration's worth more stay
        // representable or saturate to "never", not panic.
        assert!(e
            .instant(PAUSED_LIMIT)
            .unwrap()
            .checked_add(Duration::from_secs(1))
            .is_some());
    }

    #[test]
    fn paused_time_stops_at_its_limit() {
        let c = Clock::new(Epoch::now(), true);
        assert!(c.advance_to(5));
        assert_eq!(c.now(), 5);
        assert!(!c.advance_to(u64::MAX));
        assert!(!c.advance_to(PAUSED_LIMIT + 1));
        assert_eq!(c.now(), 5, "a refused move moves nothing");
        assert!(c.advance_to(PAUSED_LIMIT));
        assert!(c.advance_to(3), "never backward");
        assert_eq!(c.now(), PAUSED_LIMIT);
        assert_eq!(c.reads(), 0, "paused reads are free");
        assert_eq!(c.to_mono(7), None);
    }

    #[test]
    fn real_time_converts_to_mono_never_early() {
        let c = Clock::new(Epoch::now(), false);
        let before = tickless_io::TimerFd::now_mono_ns();
        let now = c.now();
        assert!(c.to_mono(now).unwrap() >= before, "never early");
        assert_eq!(c.reads(), 1);
    }

    #[test]
    fn a_resumed_clock_runs_on_from_where_it_was_paused() {
        let c = Clock::new(Epoch::now(), false);
        assert!(!c.resume(), "not paused");
        assert!(c.pause());
        assert!(!c.pause(), "paused already");
        let frozen = c.now();
        assert!(c.advance_to(frozen + 3_600_000_000_000));
        assert!(c.resume());
        let after = c.now();
        assert!(after >= frozen + 3_600_000_000_000, "never backward");
        assert!(
            after < frozen + 3_601_000_000_000,
            "runs on from the paused reading"
        );
        // Deadlines map to real time shifted by what was advanced.
        let mono_now = tickless_io::TimerFd::now_mono_ns();
        let armed = c.to_mono(after).unwrap();
        assert!(armed >= mono_now - 1_000_000_000 && armed <= mono_now + 1_000_000_000);
        assert!(
            c.now_instant() >= std::time::Instant::now() + std::time::Duration::from_secs(3599)
        );
    }
}
