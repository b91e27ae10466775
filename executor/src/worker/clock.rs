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
    /// The process's epoch, taken the first time anything asks for it: every runtime's clocks
    /// count from it, so that a deadline in nanoseconds means the same instant on every core
    /// of every runtime (a `Sleep` keeps its deadline so, and needs no conversion where it is
    /// registered).
    pub(crate) fn global() -> Epoch {
        static GLOBAL: std::sync::OnceLock<Epoch> = std::sync::OnceLock::new();
        *GLOBAL.get_or_init(|| Epoch(std::time::Instant::now()))
    }

    /// An instant in nanoseconds since the epoch; instants before it are 0, instants more than
    /// 584 years after it are `u64::MAX`.
    pub(crate) fn ns(self, instant: std::time::Instant) -> u64 {
        nanos(instant.saturating_duration_since(self.0))
    }

    /// The epoch, as a `std::time::Instant`.
    pub(crate) fn std(self) -> std::time::Instant {
        self.0
    }

    /// Time since the epoch. One clock read.
    pub(crate) fn elapsed(self) -> u64 {
        nanos(self.0.elapsed())
    }

    /// `CLOCK_MONOTONIC` (ns) at the epoch, or up to a few hundred nanoseconds after it (never
    /// before): the monotonic time of `at`, read just after an instant `at`, less the time from
    /// the epoch to `at`. Of a few tries, the one whose reads were closest together.
    fn mono(self) -> u64 {
        self.mono_from(
            std::time::Instant::now,
            tickless_io::internal::TimerFd::now_mono_ns,
        )
    }

    /// [`mono`](Self::mono) from these two clocks.
    fn mono_from(
        self,
        instant_now: impl Fn() -> std::time::Instant,
        mono_now: impl Fn() -> u64,
    ) -> u64 {
        // (Of equal gaps, which one is kept does not matter.)
        let mut best = (u64::MAX, 0);
        for _ in 0..4 {
            let at = instant_now();
            let mono = mono_now();
            let gap = nanos(instant_now().saturating_duration_since(at));
            if gap < best.0 {
                best = (gap, mono.saturating_sub(self.ns(at)));
            }
        }
        best.1
    }
}

/// A running clock's deadlines as `CLOCK_MONOTONIC` instants: `add + (deadline - base)`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct MonoMap {
    /// The clock's reading at its last resume.
    base: u64,
    /// `CLOCK_MONOTONIC` at that reading.
    add: u64,
}

impl MonoMap {
    /// The `CLOCK_MONOTONIC` instant of a deadline: never early.
    pub(crate) fn mono(self, deadline: u64) -> u64 {
        self.add.saturating_add(deadline.saturating_sub(self.base))
    }
}

/// A core's clock. Deadlines in the timer queue are nanoseconds since the epoch.
///
/// Real time runs as `CLOCK_MONOTONIC - offset`, `offset` being the monotonic clock at the last
/// resume less the reading then (`base`); until the clock is first paused it is the epoch's
/// monotonic time, so an unpaused clock is the monotonic clock itself. Pausing freezes it at
/// its current reading; resuming lets it run on from where it stood (the time spent paused,
/// less what was advanced, does not count), as tokio's does.
#[derive(Debug)]
pub(crate) struct Clock {
    /// `CLOCK_MONOTONIC` at the epoch, never before it ([`Epoch::mono`]): arming the timerfd
    /// at `epoch_mono + deadline` is never early, and the clock's readings never ahead.
    epoch_mono: u64,
    /// `Some(now)` while time is paused: it moves only when advanced.
    paused: Cell<Option<u64>>,
    /// The reading at the last resume.
    base: Cell<u64>,
    /// `CLOCK_MONOTONIC` at the last resume (the epoch's, before any) less `base`, wrapping
    /// (`base` may be the larger: paused time that was advanced): a running reading is
    /// `CLOCK_MONOTONIC` less it, one subtraction. Exact: a monotonic reading is never below
    /// the monotonic time of the last resume, so the reading never wraps below `base`.
    offset: Cell<u64>,
    /// Reads of the clock, for the stats.
    reads: Cell<u64>,
    /// The timer resolution in nanoseconds (at least 1): a paused clock stands on a whole
    /// multiple of it.
    tick_ns: u64,
}

/// How far paused time can go: about 146 years after the epoch, so that every paused instant
/// (and a sleep's deadline computed from it) stays representable. Paused time never moves past
/// it (`time::advance` past it panics, saying so).
pub(crate) const PAUSED_LIMIT: u64 = u64::MAX >> 2;

impl Clock {
    /// A clock whose 0 is the process's epoch (shared by every core of every runtime:
    /// [`Epoch::global`]), paused if `paused` at its current reading rounded down to a whole
    /// `tick` (the timer resolution), so that paused sleeps of whole ticks end on whole ticks.
    pub(crate) fn new(paused: bool, tick: Duration) -> Clock {
        let epoch = Epoch::global();
        let epoch_mono = epoch.mono();
        let clock = Clock {
            epoch_mono,
            paused: Cell::new(None),
            base: Cell::new(0),
            offset: Cell::new(epoch_mono),
            reads: Cell::new(0),
            tick_ns: nanos(tick).max(1),
        };
        if paused {
            let real = clock.real();
            clock.paused.set(Some(real - real % clock.tick_ns));
        }
        clock
    }

    /// Real nanoseconds since the epoch, from one `CLOCK_MONOTONIC` read: at most the epoch's
    /// `epoch_mono` error behind an instant's reading (see [`Epoch::mono`]), never ahead, so a
    /// deadline taken from it and expired by it is never early.
    #[inline]
    fn real(&self) -> u64 {
        tickless_io::internal::TimerFd::now_mono_ns().saturating_sub(self.epoch_mono)
    }

    /// The paused reading, if time is paused (free: no clock read).
    #[inline]
    pub(crate) fn paused_now(&self) -> Option<u64> {
        self.paused.get()
    }

    /// Whether time is paused.
    pub(crate) fn is_paused(&self) -> bool {
        self.paused.get().is_some()
    }

    /// Now, in nanoseconds since the epoch. One clock read (none while paused).
    #[inline]
    pub(crate) fn now(&self) -> u64 {
        match self.paused.get() {
            Some(now) => now,
            None => {
                self.reads.set(self.reads.get() + 1);
                // `base + (monotonic now - monotonic at the last resume)`, folded (`offset`).
                tickless_io::internal::TimerFd::now_mono_ns().wrapping_sub(self.offset.get())
            }
        }
    }

    /// The `CLOCK_MONOTONIC` instant (ns) of a deadline, to arm the timerfd with; `None` while
    /// time is paused (paused time never arms the real timerfd: the loop advances the clock).
    pub(crate) fn to_mono(&self, deadline: u64) -> Option<u64> {
        self.mono_map().map(|m| m.mono(deadline))
    }

    /// The conversion [`to_mono`](Self::to_mono) makes, as it stands until the next pause or
    /// resume (for another thread to use); `None` while paused.
    pub(crate) fn mono_map(&self) -> Option<MonoMap> {
        if self.is_paused() {
            return None;
        }
        Some(MonoMap {
            base: self.base.get(),
            // The monotonic time of the last resume (`offset` is it less `base`).
            add: self.offset.get().wrapping_add(self.base.get()),
        })
    }

    /// Freezes the clock at its current reading rounded up to a whole tick (less than a tick
    /// ahead; never back, behind a reading already taken), so that a sleep of whole ticks
    /// made while paused ends on a whole tick, and an advance of its length fires it, as on
    /// a clock started paused. Returns `false` if it was paused already.
    pub(crate) fn pause(&self) -> bool {
        if self.is_paused() {
            return false;
        }
        let now = self.now();
        // A reading on a whole tick stays; one past the last whole tick below u64::MAX (which
        // paused time never reaches) stays too.
        let up = now.checked_next_multiple_of(self.tick_ns).unwrap_or(now);
        self.paused.set(Some(up));
        true
    }

    /// Lets a paused clock run again from where it stands. Returns `false` if it was not
    /// paused.
    pub(crate) fn resume(&self) -> bool {
        let Some(now) = self.paused.take() else {
            return false;
        };
        self.reads.set(self.reads.get() + 1);
        let mono = self.epoch_mono.saturating_add(self.real());
        self.base.set(now);
        self.offset.set(mono.wrapping_sub(now));
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
        let limit = crate::time::Instant::from_ns(PAUSED_LIMIT);
        assert_eq!(limit.ns(), PAUSED_LIMIT, "an instant holds it");
        // Deadlines computed from any paused instant with a duration's worth more stay
        // representable or saturate to "never", not panic.
        assert!(limit.checked_add(Duration::from_secs(1)).is_some());
        assert!(limit.into_std() > std::time::Instant::now());
    }

    #[test]
    fn a_running_reading_is_base_plus_the_real_time_since_the_last_resume() {
        let c = Clock::new(false, Duration::from_micros(1));
        let (before, now, after) = (c.real(), c.now(), c.real());
        assert!(before <= now && now <= after, "{before} {now} {after}");
        // Paused, moved an hour ahead, resumed: `base` is past the monotonic time.
        assert!(c.pause());
        let paused = c.now();
        assert!(c.advance_to(paused + 3_600_000_000_000));
        let real = c.real();
        assert!(c.resume());
        let resumed = c.now();
        let late = c.real() - real;
        assert!(
            resumed >= paused + 3_600_000_000_000,
            "runs on from where it stood"
        );
        assert!(
            resumed <= paused + 3_600_000_000_000 + late,
            "and no further"
        );
        // The reading maps back to a monotonic instant between two reads around it.
        let mono = tickless_io::internal::TimerFd::now_mono_ns;
        let (b, n, a) = (mono(), c.now(), mono());
        let back = c.mono_map().expect("running").mono(n);
        assert!(b <= back && back <= a, "{b} {back} {a}");
    }

    #[test]
    fn paused_time_stops_at_its_limit() {
        let c = Clock::new(true, Duration::from_micros(1));
        let start = c.now();
        assert!(c.advance_to(start + 5));
        assert_eq!(c.now(), start + 5);
        assert!(!c.advance_to(u64::MAX));
        assert!(!c.advance_to(PAUSED_LIMIT + 1));
        assert_eq!(c.now(), start + 5, "a refused move moves nothing");
        assert!(c.advance_to(PAUSED_LIMIT));
        assert!(c.advance_to(3), "never backward");
        assert_eq!(c.now(), PAUSED_LIMIT);
        assert_eq!(c.reads(), 0, "paused reads are free");
        assert_eq!(c.to_mono(7), None);
    }

    #[test]
    fn the_epoch_s_monotonic_time_is_never_early() {
        // Two clocks that tick 100 ns a read, the monotonic one 5 s ahead of the instants.
        let e = Epoch::global();
        let reads = Cell::new(0u64);
        let tick = || reads.replace(reads.get() + 1) * 100;
        let instant_now = || e.std() + Duration::from_nanos(1_000_000 + tick());
        let mono_now = || 5_000_000_000 + 1_000_000 + tick();
        let mono = e.mono_from(instant_now, mono_now);
        // The epoch's true monotonic time is 5 s: one read later at most, never before.
        assert!(mono >= 5_000_000_000, "early by {}", 5_000_000_000 - mono);
        assert!(mono <= 5_000_000_100);
    }

    #[test]
    fn the_clock_is_never_ahead_of_std_instants() {
        // (How far behind is the fake clocks' test above: one read at most.)
        let c = Clock::new(false, Duration::from_micros(1));
        for _ in 0..1_000 {
            let now = crate::time::Instant::from_ns(c.now()).into_std();
            let after = std::time::Instant::now();
            assert!(now <= after, "never ahead: {now:?} > {after:?}");
        }
    }

    #[test]
    fn real_time_converts_to_mono_never_early() {
        let c = Clock::new(false, Duration::from_micros(1));
        let before = tickless_io::internal::TimerFd::now_mono_ns();
        let now = c.now();
        assert!(c.to_mono(now).unwrap() >= before, "never early");
        assert_eq!(c.reads(), 1);
    }

    #[test]
    fn a_clock_paused_while_running_stands_on_the_next_whole_tick() {
        let tick = 1_000_000;
        let c = Clock::new(false, Duration::from_nanos(tick));
        let before = c.now();
        assert!(c.pause());
        let paused = c.now();
        assert_eq!(paused % tick, 0, "{paused} is not on a whole tick");
        assert!(paused >= before, "never back: {paused} < {before}");
        assert!(paused - before < tick, "less than a tick ahead");
    }

    #[test]
    fn a_resumed_clock_runs_on_from_where_it_was_paused() {
        let c = Clock::new(false, Duration::from_micros(1));
        assert!(!c.resume(), "not paused");
        assert!(c.pause());
        assert!(!c.pause(), "paused already");
        let frozen = c.now();
        assert!(c.advance_to(frozen + 3_600_000_000_000));
        let reads = c.reads();
        assert!(c.resume());
        assert_eq!(c.reads(), reads + 1, "a resume reads the clock once");
        let after = c.now();
        assert!(after >= frozen + 3_600_000_000_000, "never backward");
        assert!(
            after < frozen + 3_601_000_000_000,
            "runs on from the paused reading"
        );
        // Deadlines map to real time shifted by what was advanced.
        let mono_now = tickless_io::internal::TimerFd::now_mono_ns();
        let armed = c.to_mono(after).unwrap();
        assert!(armed >= mono_now - 1_000_000_000 && armed <= mono_now + 1_000_000_000);
        assert!(
            crate::time::Instant::from_ns(c.now()).into_std()
                >= std::time::Instant::now() + std::time::Duration::from_secs(3599)
        );
    }
}
