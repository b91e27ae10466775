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
//! - it spun and the spin caught work (I/O, a hand-over, a due timer) on a CPU of its own: the
//!   window stays, and the cool-down's length is back to [`COOL_DOWN`];
//! - not pinned, it spun on a CPU where another core of the runtime last woke (the kernel put
//!   both on one CPU: see *Threads not pinned* below), whether the spin caught its work or
//!   expired: the window goes back to zero and growth waits a cool-down of parked transitions,
//!   after which it tries again: [`COOL_DOWN`] the first time, twice as many after each further
//!   such spin, up to [`MAX_COOL_DOWN`], and back to [`COOL_DOWN`] once a spin catches its
//!   work on a CPU of its own;
//! - it spun, the spin expired, and the core was woken within [`MAX`] of going idle (pinned,
//!   or alone on its CPU): the wakeup would have been caught by a longer spin, so the window
//!   doubles, up to [`MAX`] (KVM's halt polling grows on the same evidence);
//! - a wakeup later than [`MAX`] after going idle: the window goes back to zero (KVM's default
//!   shrink). An idle core, a core whose next event is its timer a millisecond away, never
//!   spins for long.
//!
//! A spin never runs past the core's next timer: one due inside the window is spun to, as the
//! wakeup lead's spin does. `Builder::spin_before_park(d)` replaces the governor with a fixed
//! window; `Builder::idle_governor(false)` turns it off (park at once, always).
//!
//! # Timers with slack
//!
//! A spin toward a timer pays only when the timer may not fire later than a park would wake
//! the core. When the earliest timer's window ends inside the spin window and its slack (the
//! end of that window less the earliest deadline) is at least a park's wakeup ([`PARK_WAKE`],
//! or the wakeup lead the core learned, whichever is larger), the core parks at once instead,
//! its device armed for the window's end, and counts it in `CoreStats::slack_parks`; the
//! transition teaches the window nothing. A timer with less slack (a zero-slack `Sleep`) is
//! still spun to. On `timer_churn` (1,000 tasks on 1-100 ms sleeps, the default slack) the
//! spins toward timers cost CPU and bought no lateness: the rule is what keeps the governor's
//! CPU per fire at the governor off's (`benches/README.md`).
//!
//! # Threads not pinned
//!
//! A pipe's or socket's write wakes its reader as a *sync* wakeup: the kernel puts the woken
//! thread on the writer's CPU when the writer is alone there and the reader's own CPU is busy
//! at that instant (another process runs on it). Two cores that share a CPU that way tend to
//! stay together for as long as they park: each wakeup comes from the other core, on their
//! common CPU, and only one of them is runnable at a time, so the load balancer sees nothing to
//! even out. Together on one CPU, a spin holds off the very core whose answer it waits for: the
//! other core, woken onto this CPU, runs only when the spin ends or the kernel preempts it.
//! Parking is then the faster choice, the ping-pong a same-CPU context switch.
//!
//! On the 2-vCPU machine of the figures this is what made a two-core ping-pong's rate depend
//! on the run: with another engineer's `rustc` on one CPU for the whole run (`perf sched`), both
//! cores ran on the other (620 ms against 29 ms on the busy one, 48k of 50k wakeups placed
//! there), at 110-130k round trips a second, against 300-370k with the cores apart; with a
//! busy loop on one CPU for the first 0.3 s of a run, the cores stayed together for the rest
//! of it (2.7 s) in some runs and were separated within it in others. The governor off parks there too (107-130k together, 20-25k apart); a fixed 50 µs
//! spin holds the other core off (9-37k together).
//!
//! So the idle path reads, cheaply, the CPU each core last woke on (`sched_getcpu`, no system
//! call), and a spin that ran where another core last woke counts as interference. A spin that
//! *caught* its work there must count too: it caught only because the kernel preempted it to
//! run the other core. The first version of the rule let such catches pass for spins that
//! paid, and with a busy loop on the other CPU the cores had about three of them for every two
//! interfering spins that expired (18,682 against 12,668 over 300,000 round trips); each reset
//! the cool-down to [`COOL_DOWN`], so it never grew, and the cores kept probing with spins,
//! 2.3-8.7% of their idle transitions. Over ten rounds of 300,000 round trips (the `pingpong`
//! example, a busy loop on the other CPU, each setting in turn), that rule ran 60-120k round
//! trips a second (median 104k) at 1.03-1.17 times the CPU per round trip of the governor off
//! in the same round (median 1.09x). Counting the catches, the cool-down grows to
//! [`MAX_COOL_DOWN`] and the cores spin in 0.1% of their transitions (598-812 spins): 95-127k
//! (median 116k) at 0.95-1.06 times the governor off's CPU (median 1.01x; off: 88-130k, median
//! 115k). A spin that catches is asked where it ran only while the governor
//! [doubts](Governor::doubts): from the start until its first catch on a CPU of its own, and
//! from an interfering spin to the next such catch. So where spinning pays, one CPU number is
//! read, at the first catch. The doubt starts with the governor because cores the kernel put
//! on one CPU from the start may never see a spin expire: every spin there catches, preempted
//! for the other core (a two-core ping-pong confined to one CPU spun 11-435 times in 4,000
//! transitions before its first expiry; doubting from the start, 10, each counted).
//!
//! What the governor cannot do is move a thread: cores that share a CPU stay together until
//! the kernel separates them, whatever they spin. (A prototype that moved a core off the
//! shared CPU, by a brief change of its thread's affinity, did not do better where the other
//! CPU had come free again: 193k round trips a second against 264k over a run that began with
//! a 0.3 s busy loop there; and where the busy loop held the other CPU, each move queued the
//! core behind it for about 1.6 ms: 52k against 114k.)
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
//! wakeup on a CPU of its own brings the cool-down back to 8.
//!
//! # A busy core looks once (`Builder::park_when_busy`)
//!
//! A spin that catches its I/O saves a park and a wakeup, but it also keeps the CPU from ever
//! halting, and some hosts take a virtual machine's vCPUs from it in turns once all of them
//! want to run (on the 2-vCPU VM of the figures, 150 ms a minute on each with both CPUs busy,
//! none with one of them idle a quarter of the time: `benches/scripts/steal_probe.py`). What
//! a CPU lost for a while costs grows with the core's load: at a share `u` of its time spent
//! on work, the requests that came meanwhile take `1 / (1 - u)` times that long to catch up
//! with. So, when told to, the governor also watches that share, over periods of
//! [`PERIOD`]: the time from the period's start less the time the core spent spinning or
//! parked. Once a period's work goes over [`BUSY_ABOVE`] percent, a spin is cut to its first
//! look (a poll of I/O and the inbox without waiting): if that finds nothing, the core parks
//! at once, and its CPU halts. The first look stays because it costs no waiting: a core whose
//! work is always there when it looks (a same-core ping-pong) keeps every catch. Spinning
//! resumes after a period under [`BUSY_BELOW`] percent. The windows the other rules learn are
//! kept meanwhile, and a transition cut to a look teaches them nothing.
//!
//! On that VM an HTTP server at 75% of tokio's maximum spent about 78% of its time on work
//! with the governor off, and 62% at 50% (`benches/scripts/tail_probe.py`'s `ran_ms`): the
//! thresholds put the first on the parking side and the second on the spinning side. At 75%
//! the rule halved the host's steal of the server's CPU and took 11-12% of its CPU time off,
//! but the p99 of that day's 64 and 48 runs did not improve, and the median lost most of what
//! the spins buy (`Builder::park_when_busy` has the figures): it is not the default.

/// The period over which the governor measures the core's work, in nanoseconds.
pub(crate) const PERIOD: u64 = 10_000_000;

/// A period whose work was over this share (percent) of it cuts spins to a look.
pub(crate) const BUSY_ABOVE: u64 = 70;

/// A period whose work was under this share (percent) of it lets spins run again.
pub(crate) const BUSY_BELOW: u64 = 60;

/// The largest spin window, in nanoseconds.
pub(crate) const MAX: u64 = 50_000;

/// What a park costs in lateness, at least, in nanoseconds: from the device's expiry to the
/// parked thread running again (about 20 µs on the VMs of the figures; the learned wakeup lead
/// replaces it where that is larger). A timer whose slack is at least this long fires in time
/// from a park, so no spin goes toward it (see *Timers with slack* above).
pub(crate) const PARK_WAKE: u64 = 20_000;

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
    Caught {
        /// Whether another core of the runtime last woke on the CPU the spin ran on (asked
        /// only while the governor [doubts](Governor::doubts); `false` otherwise).
        crowded: bool,
    },
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
    /// Whether a spin has caught its work on a CPU of its own yet (asked, see
    /// [`doubts`](Self::doubts)): until then, not pinned, the governor doubts.
    settled: bool,
    /// When the current work period began (a clock reading; `None`: no reading yet).
    period_start: Option<u64>,
    /// The time the core spent idle (spinning or parked) in the current period, ns.
    period_idle: u64,
    /// Whether the core's work is watched (`Builder::park_when_busy(true)`; otherwise it is
    /// never busy).
    watch_work: bool,
    /// Whether the last period's work was over [`BUSY_ABOVE`] (or, once it was, not yet under
    /// [`BUSY_BELOW`]): spins are cut to a look.
    busy: bool,
}

impl Governor {
    /// A governor with nothing learnt: the first idle transition parks.
    pub(crate) fn new(pinned: bool, watch_work: bool) -> Governor {
        Governor {
            window: 0,
            cool_down: 0,
            last_short: false,
            next_cool_down: COOL_DOWN,
            pinned,
            settled: false,
            period_start: None,
            period_idle: 0,
            watch_work,
            busy: false,
        }
    }

    /// Whether the governor watches the core's work (`Builder::park_when_busy(true)`): only
    /// then is a clock reading taken for [`idle_ended`](Self::idle_ended) where the idle path
    /// has none at hand.
    #[inline]
    pub(crate) fn watches_work(&self) -> bool {
        self.watch_work
    }

    /// Whether the core is busy (see *A busy core looks once*): a spin stops at its first
    /// look.
    #[inline]
    pub(crate) fn busy(&self) -> bool {
        self.busy
    }

    /// An idle stretch (a spin, a park, or both) of `idle` ns ended at `now` (a clock
    /// reading): counts it against the current period and, at the period's end, decides
    /// whether the core is busy.
    pub(crate) fn idle_ended(&mut self, now: u64, idle: u64) {
        if !self.watch_work {
            return;
        }
        let Some(start) = self.period_start else {
            self.period_start = Some(now);
            return;
        };
        let elapsed = now.saturating_sub(start);
        // An idle stretch longer than the period so far began before it: only its part in
        // the period counts (a core idle for seconds was not busy).
        self.period_idle = self.period_idle.saturating_add(idle).min(elapsed);
        if elapsed < PERIOD {
            return;
        }
        // Percent of the period spent on work (idle <= elapsed, so no underflow).
        let work = 100 - (u128::from(self.period_idle) * 100 / u128::from(elapsed)) as u64;
        self.busy = if self.busy {
            work >= BUSY_BELOW
        } else {
            work > BUSY_ABOVE
        };
        self.period_start = Some(now);
        self.period_idle = 0;
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

    /// Whether a spin that catches should be asked where it ran: not pinned, and either no
    /// spin has caught on a CPU of its own yet, or a spin interfered with another core (shared
    /// its CPU) with none caught on a CPU of its own since. While spins pay, nobody reads a CPU
    /// number for them.
    #[inline]
    pub(crate) fn doubts(&self) -> bool {
        !self.pinned && (!self.settled || self.next_cool_down > COOL_DOWN)
    }

    /// Learns from an idle transition: sets the next window.
    pub(crate) fn learn(&mut self, outcome: Outcome) {
        let short = match outcome {
            Outcome::Caught { .. } => true,
            Outcome::Parked { slept: idle } | Outcome::Expired { idle, .. } => idle <= MAX,
        };
        let two_short = short && self.last_short;
        self.last_short = short;
        match outcome {
            Outcome::Parked { .. } => {
                if self.cool_down > 0 {
                    self.cool_down -= 1;
                } else if two_short {
                    self.window = START;
                }
            }
            // Caught or not, a spin on another core's CPU held that core off.
            Outcome::Caught { crowded: true } | Outcome::Expired { crowded: true, .. }
                if !self.pinned =>
            {
                self.window = 0;
                self.cool_down = self.next_cool_down;
                self.next_cool_down = self.next_cool_down.saturating_mul(2).min(MAX_COOL_DOWN);
            }
            Outcome::Caught { .. } => {
                self.next_cool_down = COOL_DOWN;
                self.settled = true;
            }
            Outcome::Expired { idle, .. } if idle > MAX => self.window = 0,
            Outcome::Expired { .. } => {
                self.window = self.window.saturating_mul(2).clamp(START, MAX);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs `outcomes` through a governor and returns the windows after each.
    fn windows(pinned: bool, outcomes: &[Outcome]) -> Vec<u64> {
        let mut g = Governor::new(pinned, true);
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
    /// A spin that caught its work on a CPU of its own.
    const CAUGHT: Outcome = Outcome::Caught { crowded: false };
    /// A spin that caught its work on a CPU another core last woke on.
    const CAUGHT_CROWDED: Outcome = Outcome::Caught { crowded: true };
    /// A spin that expired, woken soon after, on a CPU another core last woke on.
    const JUST_AFTER_CROWDED: Outcome = Outcome::Expired {
        idle: 12_000,
        crowded: true,
    };

    #[test]
    fn an_idle_core_never_spins() {
        assert_eq!(Governor::new(false, true).window(), 0);
        assert_eq!(windows(false, &[LONG; 5]), [0; 5]);
        assert_eq!(windows(true, &[LONG; 5]), [0; 5]);
    }

    #[test]
    fn two_short_parks_in_a_row_start_a_window_and_catches_keep_it() {
        assert_eq!(
            windows(false, &[SHORT, SHORT, CAUGHT, CAUGHT]),
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
        let mut g = Governor::new(false, true);
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
            v.push(CAUGHT);
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

    #[test]
    fn a_catch_on_a_shared_cpu_counts_as_interference_not_as_a_spin_that_paid() {
        // Window START after two short parks; the spin catches, but on another core's CPU.
        assert_eq!(
            windows(false, &[SHORT, SHORT, CAUGHT_CROWDED, SHORT]),
            [0, START, 0, 0]
        );
        // A catch on a shared CPU lengthens the cool-down as an expired spin there does,
        // instead of bringing it back to the first: the backoff grows while the cores share a
        // CPU, whichever way their spins end.
        let wait = |n: u32| vec![SHORT; n as usize + 1];
        let mut g = Governor::new(false, true);
        g.learn(SHORT);
        g.learn(SHORT);
        let mut got = Vec::new();
        for i in 0..9 {
            assert_eq!(g.window(), START, "spin {i}");
            g.learn(if i % 3 == 2 {
                JUST_AFTER_CROWDED
            } else {
                CAUGHT_CROWDED
            });
            got.push(g.cool_down);
            for o in wait(g.cool_down) {
                g.learn(o);
            }
        }
        assert_eq!(got, [8, 16, 32, 64, 128, 256, 512, 1024, 1024]);
        // Once the cores are apart, the first catch ends the doubt and the backoff.
        assert!(g.doubts());
        g.learn(CAUGHT);
        assert!(!g.doubts());
        assert_eq!((g.window(), g.next_cool_down), (START, COOL_DOWN));
    }

    #[test]
    fn the_governor_doubts_until_a_catch_alone_and_from_an_interfering_spin_to_the_next() {
        let mut g = Governor::new(false, true);
        // From the start: the first spins may be on a CPU the kernel confined both cores to,
        // where every spin catches (preempted for the other core) and none expires.
        for o in [SHORT, SHORT] {
            assert!(g.doubts(), "nothing learnt yet");
            g.learn(o);
        }
        assert!(g.doubts(), "parks settle nothing");
        g.learn(CAUGHT);
        assert!(!g.doubts(), "a catch on a CPU of its own settles it");
        for o in [SHORT, SHORT, CAUGHT, CAUGHT] {
            g.learn(o);
            assert!(!g.doubts(), "spins that pay are never asked where they ran");
        }
        g.learn(JUST_AFTER_CROWDED);
        assert!(g.doubts());
        for o in vec![SHORT; COOL_DOWN as usize + 1] {
            g.learn(o);
            assert!(g.doubts(), "parks settle nothing");
        }
        g.learn(CAUGHT);
        assert!(!g.doubts());
        // Pinned, no other core shares the CPU: never.
        let mut p = Governor::new(true, true);
        for o in [SHORT, SHORT, JUST_AFTER_CROWDED, CAUGHT_CROWDED] {
            p.learn(o);
            assert!(!p.doubts());
        }
    }

    #[test]
    fn pinned_a_crowded_report_changes_nothing() {
        assert_eq!(
            windows(true, &[SHORT, SHORT, CAUGHT_CROWDED, JUST_AFTER_CROWDED]),
            [0, START, START, 2 * START]
        );
    }

    #[test]
    fn a_late_wakeup_after_a_spin_on_a_shared_cpu_still_starts_a_cool_down() {
        // The spin may be why the wakeup came late: it held the other core off.
        let late_crowded = Outcome::Expired {
            idle: MAX + 1,
            crowded: true,
        };
        let mut outcomes = vec![SHORT, SHORT, late_crowded];
        outcomes.extend([SHORT; COOL_DOWN as usize]);
        let got = windows(false, &outcomes);
        assert!(got[2..].iter().all(|w| *w == 0), "{got:?}");
        // Without the cool-down, the two short parks after it would have restarted the window.
        let late_alone = Outcome::Expired {
            idle: MAX + 1,
            crowded: false,
        };
        assert_eq!(
            windows(false, &[SHORT, SHORT, late_alone, SHORT, SHORT]),
            [0, START, 0, 0, START]
        );
    }

    /// A governor fed periods of `PERIOD` ns each with `work` percent of work, one idle
    /// stretch at each period's end; returns whether it was busy after each.
    fn busy_after(periods: &[u64]) -> Vec<bool> {
        let mut g = Governor::new(true, true);
        let mut now = 1_000;
        g.idle_ended(now, 0);
        periods
            .iter()
            .map(|work| {
                now += PERIOD;
                g.idle_ended(now, PERIOD * (100 - work) / 100);
                g.busy()
            })
            .collect()
    }

    #[test]
    fn a_period_over_the_high_mark_makes_the_core_busy_and_one_under_the_low_mark_ends_it() {
        assert_eq!(busy_after(&[50, 70, 71]), [false, false, true]);
        // Between the marks, the state stays as it was: no flapping around one threshold.
        assert_eq!(
            busy_after(&[90, 65, 60, 59, 65, 70]),
            [true, true, true, false, false, false]
        );
    }

    #[test]
    fn idle_stretches_count_until_the_period_ends_and_an_idle_longer_than_it_counts_in_full() {
        let mut g = Governor::new(true, true);
        g.idle_ended(0, 0);
        // 8 ms of work in 10 ms, in pieces: busy once the period is over, not before.
        for i in 1..=9 {
            g.idle_ended(i * PERIOD / 10, PERIOD / 50);
            assert!(!g.busy(), "{i}");
        }
        g.idle_ended(PERIOD, PERIOD / 50);
        assert!(g.busy());
        // A park of a second: the whole period was idle, however far back the park began.
        g.idle_ended(PERIOD + 1_000_000_000, 1_000_000_000);
        assert!(!g.busy());
        // The first reading only starts a period.
        let mut g = Governor::new(true, true);
        g.idle_ended(5 * PERIOD, 0);
        assert!(!g.busy());
    }

    #[test]
    fn a_governor_that_does_not_watch_the_work_is_never_busy() {
        let mut g = Governor::new(true, false);
        g.idle_ended(0, 0);
        g.idle_ended(PERIOD, 0);
        assert!(!g.busy());
    }

    #[test]
    fn a_busy_core_keeps_what_the_window_learnt() {
        let mut g = Governor::new(true, true);
        for o in [SHORT, SHORT, CAUGHT] {
            g.learn(o);
        }
        g.idle_ended(0, 0);
        g.idle_ended(PERIOD, 0);
        assert!(g.busy());
        assert_eq!(g.window(), START);
        g.idle_ended(2 * PERIOD, PERIOD);
        assert!(!g.busy());
        assert_eq!(g.window(), START);
    }
}
