//! The idle governor: whether a core that found nothing to do spins (polls I/O and its inbox
//! without blocking) for a while before it parks, and for how long, learned from the core's own
//! idle transitions.
//!
//! # Why
//!
//! Parking costs a halt and, when the wakeup comes, a cross-CPU wakeup: on the virtual machines
//! this was measured on, about 20 µs of CPU each, so a cross-core round trip at the defaults
//! costs what two blocking threads' does. A spin that catches the wakeup costs neither. But a
//! spin that catches nothing is CPU burnt, and on a runtime whose threads are not pinned it can
//! delay the very wakeup it waits for: the kernel wakes a pipe's or socket's reader on the
//! writer's CPU (wake-affine placement), so the peer that would answer waits for this CPU until
//! the spin gives up.
//!
//! # The rules
//!
//! The window starts at zero: a core with nothing recent to learn from parks at once, so an idle
//! runtime never spins. After each idle transition the governor looks at how it went:
//!
//! - it parked at once (window zero) and was woken within [`MAX`] of parking, and so was the
//!   transition before (two short idles in a row): the next window is [`START`], unless a
//!   cool-down is running (see below), which this transition shortens. One short idle between
//!   long ones (a task that sleeps a millisecond, sends, and waits for the answer) is not
//!   enough: the spin would come at the start of the next long idle, and catch nothing;
//! - it spun and the spin caught work (I/O, a hand-over, a due timer): the window stays;
//! - it spun, the spin expired, and the core was woken within [`MAX`] of going idle:
//!   - pinned (`Builder::pin`): the wakeup would have been caught by a longer spin, so the
//!     window doubles, up to [`MAX`] (KVM's halt polling grows on the same evidence);
//!   - not pinned, and no other core of the runtime woke on the CPU the spin ran on since:
//!     the same;
//!   - not pinned, and another core did (it was woken onto this CPU, where the spin held it
//!     off until the core parked): the window goes back to zero and growth waits a cool-down
//!     of parked transitions, after which it tries again:
//!     [`COOL_DOWN`] the first time, twice as many after each further such spin, up to
//!     [`MAX_COOL_DOWN`], and back to [`COOL_DOWN`] once a spin catches its wakeup;
//! - a wakeup later than [`MAX`] after going idle: the window goes back to zero (KVM's default
//!   shrink). An idle core, a core whose next event is its timer a millisecond away, never
//!   spins for long.
//!
//! A spin never runs past the core's next timer: one due inside the window is spun to, as the
//! wakeup lead's spin does. `Builder::spin_before_park(d)` replaces the governor with a fixed
//! window; `Builder::idle_governor(false)` turns it off (park at once, always).
//!
//! # The constants
//!
//! [`MAX`] is 50 µs: on the 2-vCPU machine of the figures a fixed 50 µs spin made the
//! two-core ping-pong 22 times faster at an eighth of the CPU per round trip, and the round
//! trips it serves (a cross-core message and its answer, a wakeup lead) take a few to a few
//! tens of microseconds; KVM's default cap is 200 µs, for guests whose halts cost more.
//! [`START`] is 10 µs (KVM's `halt_poll_ns_grow_start`). The cool-down starts at 8 parked
//! transitions and doubles up to 1,024: on that machine, with threads not pinned, the kernel
//! hands a woken peer to the waker's CPU so cheaply that a spin never pays (a two-core
//! ping-pong ran at 106k round trips a second parking, 34k with a fixed 50 µs spin, and 90k
//! with a fixed cool-down of 8, whose probes cost a spin each), while pinned the governor made
//! it 16 times faster (9.7k to 154k, as fast as the fixed spin). The doubling keeps the probes
//! to a few in a thousand transitions where spinning never pays, and a spin that catches its
//! wakeup brings the cool-down back to 8.

/// The largest spin window, in nanoseconds.
pub(crate) const MAX: u64 = 50_000;

/// The first window after a short idle transition, in nanoseconds.
pub(crate) const START: u64 = 10_000;

/// Parked transitions to wait, after a spin that may have delayed its own wakeup, before the
/// window may grow again (threads not pinned): the first cool-down.
pub(crate) const COOL_DOWN: u32 = 8;

/// The longest cool-down, after repeated spins that may have delayed their wakeups.
pub(crate) const MAX_COOL_DOWN: u32 = 1_024;

/// How one idle transition went, as the governor learns from it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// The window was zero: the core parked, and was woken `slept` ns after parking.
    Parked {
        /// From going idle to the wakeup, ns.
        slept: u64,
    },
    /// The spin caught work.
    Caught,
    /// The spin expired: the core parked and was woken `idle` ns after it went idle (the spin
    /// included).
    Expired {
        /// From going idle to the wakeup, ns.
        idle: u64,
        /// Whether another core of the runtime last woke on the CPU the spin ran on (or that
        /// CPU is not known): the spin may have held it off.
        crowded: bool,
    },
}

/// One core's governor.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Governor {
    /// The next spin window, ns; zero: park at once.
    window: u64,
    /// Parked transitions left before the window may grow again.
    cool_down: u32,
    /// Whether the last idle transition was short (woken within [`MAX`]).
    last_short: bool,
    /// The next cool-down's length.
    next_cool_down: u32,
    /// Whether the core's thread is pinned to its CPU (no peer is woken onto it).
    pinned: bool,
}

impl Governor {
    /// A governor with nothing learnt: the first idle transition parks.
    pub(crate) fn new(pinned: bool) -> Governor {
        Governor {
            window: 0,
            cool_down: 0,
            last_short: false,
            next_cool_down: COOL_DOWN,
            pinned,
        }
    }

    /// The next spin window, ns; zero: park at once.
    #[inline]
    pub(crate) fn window(&self) -> u64 {
        self.window
    }

    /// Whether the core's thread is pinned.
    #[inline]
    pub(crate) fn pinned(&self) -> bool {
        self.pinned
    }

    /// Learns from an idle transition: sets the next window.
    pub(crate) fn learn(&mut self, outcome: Outcome) {
        let short = match outcome {
            Outcome::Caught => true,
            Outcome::Parked { slept: idle } | Outcome::Expired { idle, .. } => idle <= MAX,
        };
        let two_short = short && self.last_short;
        self.last_short = short;
        match outcome {
            Outcome::Caught => self.next_cool_down = COOL_DOWN,
            Outcome::Parked { .. } => {
                if self.cool_down > 0 {
                    self.cool_down -= 1;
                } else if two_short {
                    self.window = START;
                }
            }
            Outcome::Expired { idle, .. } if idle > MAX => self.window = 0,
            Outcome::Expired { crowded, .. } if self.pinned || !crowded => {
                self.window = self.window.saturating_mul(2).clamp(START, MAX);
            }
            Outcome::Expired { .. } => {
                self.window = 0;
                self.cool_down = self.next_cool_down;
                self.next_cool_down = self.next_cool_down.saturating_mul(2).min(MAX_COOL_DOWN);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs `outcomes` through a governor and returns the windows after each.
    fn windows(pinned: bool, outcomes: &[Outcome]) -> Vec<u64> {
        let mut g = Governor::new(pinned);
        outcomes
            .iter()
            .map(|o| {
                g.learn(*o);
                g.window()
            })
            .collect()
    }

    const SHORT: Outcome = Outcome::Parked { slept: 5_000 };
    const LONG: Outcome = Outcome::Parked { slept: 1_000_000 };

    #[test]
    fn an_idle_core_never_spins() {
        assert_eq!(Governor::new(false).window(), 0);
        assert_eq!(windows(false, &[LONG; 5]), [0; 5]);
        assert_eq!(windows(true, &[LONG; 5]), [0; 5]);
    }

    #[test]
    fn two_short_parks_in_a_row_start_a_window_and_catches_keep_it() {
        let caught = Outcome::Caught;
        assert_eq!(
            windows(false, &[SHORT, SHORT, caught, caught]),
            [0, START, START, START]
        );
    }

    #[test]
    fn short_parks_between_long_ones_never_start_a_window() {
        let alternating: Vec<Outcome> = [SHORT, LONG].repeat(10);
        assert!(windows(false, &alternating).iter().all(|w| *w == 0));
        assert!(windows(true, &alternating).iter().all(|w| *w == 0));
    }

    #[test]
    fn a_wakeup_later_than_the_cap_ends_the_window() {
        let late = Outcome::Expired {
            idle: MAX + 1,
            crowded: false,
        };
        assert_eq!(windows(true, &[SHORT, SHORT, late]), [0, START, 0]);
        assert_eq!(windows(false, &[SHORT, SHORT, late]), [0, START, 0]);
        // The cap itself still counts as within it.
        let at_cap = Outcome::Expired {
            idle: MAX,
            crowded: false,
        };
        assert_eq!(
            windows(true, &[SHORT, SHORT, at_cap]),
            [0, START, 2 * START]
        );
    }

    #[test]
    fn pinned_a_wakeup_just_after_the_spin_doubles_the_window_up_to_the_cap() {
        let just_after = Outcome::Expired {
            idle: 30_000,
            crowded: true,
        };
        assert_eq!(
            windows(
                true,
                &[SHORT, SHORT, just_after, just_after, just_after, just_after]
            ),
            [0, START, 20_000, 40_000, MAX, MAX]
        );
    }

    #[test]
    fn not_pinned_a_wakeup_just_after_the_spin_grows_the_window_if_no_other_core_woke_on_its_cpu() {
        let elsewhere = Outcome::Expired {
            idle: 30_000,
            crowded: false,
        };
        assert_eq!(
            windows(false, &[SHORT, SHORT, elsewhere, elsewhere]),
            [0, START, 20_000, 40_000]
        );
    }

    #[test]
    fn not_pinned_a_wakeup_just_after_the_spin_stops_spinning_for_a_cool_down() {
        let just_after = Outcome::Expired {
            idle: 12_000,
            crowded: true,
        };
        let mut outcomes = vec![SHORT, SHORT, just_after];
        // Short parks during the cool-down do not restart the window; the next one does.
        outcomes.extend([SHORT; COOL_DOWN as usize + 1]);
        let got = windows(false, &outcomes);
        assert_eq!(got[..3], [0, START, 0]);
        assert!(
            got[3..3 + COOL_DOWN as usize].iter().all(|w| *w == 0),
            "{got:?}"
        );
        assert_eq!(got[3 + COOL_DOWN as usize], START);
    }

    /// The cool-downs of `n` interfering spins in a row, each after its cool-down ran out.
    fn cool_downs(outcomes_between: impl Fn(u32) -> Vec<Outcome>, n: usize) -> Vec<u32> {
        let just_after = Outcome::Expired {
            idle: 12_000,
            crowded: true,
        };
        let mut g = Governor::new(false);
        g.learn(SHORT);
        g.learn(SHORT);
        let mut got = Vec::new();
        for _ in 0..n {
            g.learn(just_after);
            got.push(g.cool_down);
            for o in outcomes_between(g.cool_down) {
                g.learn(o);
            }
        }
        got
    }

    #[test]
    fn repeated_interference_doubles_the_cool_down_up_to_its_cap_and_a_catch_resets_it() {
        // Each cool-down waited out with short parks, then the window restarts and interferes.
        let wait = |n: u32| vec![SHORT; n as usize + 1];
        let got = cool_downs(wait, 10);
        assert_eq!(got, [8, 16, 32, 64, 128, 256, 512, 1024, 1024, 1024]);
        // A caught spin in between brings it back to the first.
        let wait_then_catch = |n: u32| {
            let mut v = vec![SHORT; n as usize + 1];
            v.push(Outcome::Caught);
            v
        };
        assert_eq!(cool_downs(wait_then_catch, 3), [8, 8, 8]);
    }

    #[test]
    fn long_parks_count_down_the_cool_down_too() {
        let just_after = Outcome::Expired {
            idle: 12_000,
            crowded: true,
        };
        let mut outcomes = vec![SHORT, SHORT, just_after];
        outcomes.extend([LONG; COOL_DOWN as usize]);
        outcomes.extend([SHORT, SHORT]);
        assert_eq!(*windows(false, &outcomes).last().unwrap(), START);
    }
}
