//! What a core needs to know, from the runtime, to start.

use std::sync::Arc;
use std::time::Duration;

use tickless_io::internal::Resolve;
use tickless_timer::{Config, Slack};

use crate::blocking::BlockingPool;
use crate::histogram::HistogramConfiguration;
use crate::task::hooks::Hooks;
use crate::worker::device::ClockDevice;
use crate::worker::kennel::Kennel;
use crate::worker::placement::Placement;
use crate::worker::shared::Peers;
use crate::worker::tokio_context::ParkHooks;

/// Everything a core needs to know, from the runtime, to start.
#[derive(Debug, Clone, Copy)]
pub(crate) struct CoreConfig {
    /// Wheel policy and resolution.
    pub(crate) timer: Config,
    /// Slack of timers that give none.
    pub(crate) default_slack: DefaultSlack,
    /// Paused time.
    pub(crate) paused: bool,
    /// A fixed idle spin window (`Builder::spin_before_park`; zero: none, the governor decides).
    pub(crate) spin: Duration,
    /// Whether the idle governor learns a spin window (`Builder::idle_governor`).
    pub(crate) governor: bool,
    /// Whether the governor cuts a busy core's spins to a look (`Builder::park_when_busy`).
    pub(crate) park_when_busy: bool,
    /// Whether the core's thread is pinned to its CPU (`Builder::pin`), which the governor
    /// takes into account.
    pub(crate) pinned: bool,
    /// Wake a sleeping core on every hand-over (the experiment's baseline).
    pub(crate) always_wake: bool,
    /// What the core sleeps on until its next timer.
    pub(crate) device: ClockDevice,
    /// Where `spawn` puts new tasks.
    pub(crate) placement: Placement,
    /// How long a backlog of runnable `Send` tasks waits on a core before an idle core takes
    /// half of it (`Builder::steal_after`); `None`: never.
    pub(crate) steal_after: Option<Duration>,
    /// How long a peer goes without coming back to its loop before the core takes its ready
    /// I/O (`Builder::harvest_after`); `None`: never.
    pub(crate) harvest_after: Option<Duration>,
    /// Whether a core steps back while the CPUs are crowded (`Builder::yield_when_crowded`;
    /// the watchdog's decision, `runtime::crowding`).
    pub(crate) yield_when_crowded: bool,
    /// How `TcpStream::connect` looks up host names on the core (the runtime's lookup on its
    /// blocking pool, `dns::resolve_on_pool`: given from above, since it spawns a task).
    pub(crate) resolver: Resolve,
    /// A tokio runtime of the core's own (`Builder::tokio_context`): what tokio calls around
    /// its parks on the core's thread (the core's check for work tokio's tasks handed it, and
    /// the stall detector's marks, given from above, since they look the core up); `None`: no
    /// tokio context.
    pub(crate) tokio: Option<ParkHooks>,
    /// Whether task polls are timed (`Builder::enable_metrics_poll_time_histogram`).
    pub(crate) poll_times_on: bool,
    /// The poll-time histogram's layout.
    pub(crate) poll_times: HistogramConfiguration,
    /// Whether the loop keeps its own histograms (`Builder::enable_metrics_loop_histograms`).
    pub(crate) loop_histograms: bool,
    /// The timer-lateness histogram's layout.
    pub(crate) lateness: HistogramConfiguration,
}

/// How the slack of a timer that gives none is chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum DefaultSlack {
    /// The same for every timer (`Builder::default_slack`).
    Fixed(Slack),
    /// A fixed share of the time the timer has left to run, `remaining / divisor`
    /// (`Builder::default_slack_proportional`), rounded as [`power_step`] does.
    Proportional {
        /// The share's divisor, at least 1.
        divisor: u64,
        /// The largest slack, in nanoseconds.
        max_ns: u64,
    },
    /// A share that grows with the time left: `remaining * (remaining / knee)`, so that a
    /// timer of length `knee` may be all of it late, a tenth of it a tenth (`Builder::
    /// default_slack_growing`; the default), rounded as [`power_step`] does.
    Growing {
        /// The length whose share is all of it, at least 1 ns.
        knee_ns: u64,
        /// The largest slack, in nanoseconds.
        max_ns: u64,
    },
}

impl DefaultSlack {
    /// The slack of a timer with `remaining` nanoseconds to run.
    #[inline]
    pub(crate) fn resolve(self, remaining: u64) -> Slack {
        match self {
            DefaultSlack::Fixed(slack) => slack,
            DefaultSlack::Proportional { divisor, max_ns } => {
                power_step(remaining / divisor.max(1), max_ns)
            }
            // At or past both the knee and the cap the share is the cap (the common case: every
            // timer from 2 ms on, by default), with no wide multiply.
            DefaultSlack::Growing { knee_ns, max_ns } if remaining >= knee_ns.max(max_ns) => {
                power_step(max_ns, max_ns)
            }
            DefaultSlack::Growing { knee_ns, max_ns } => {
                let r = u128::from(remaining);
                let want = r * r / u128::from(knee_ns.max(1));
                power_step(u64::try_from(want).unwrap_or(u64::MAX), max_ns)
            }
        }
    }

    /// The time left from which [`resolve`](Self::resolve) gives the same slack for every
    /// timer: 0 for a fixed slack, the knee or the cap (whichever is later) for a growing one,
    /// the cap times the divisor for a proportional one.
    pub(crate) fn constant_from(self) -> u64 {
        match self {
            DefaultSlack::Fixed(_) => 0,
            DefaultSlack::Proportional { divisor, max_ns } => max_ns.saturating_mul(divisor.max(1)),
            DefaultSlack::Growing { knee_ns, max_ns } => knee_ns.max(max_ns),
        }
    }
}

/// `want` nanoseconds of slack, rounded down to `max / 2^k` and at most `max`: one slack per
/// power of two, so that the default gives a core's wheel few distinct slacks (it keeps a lane
/// per slack, at most 16: a slack past those shares the lane of the largest one below it).
fn power_step(want: u64, max_ns: u64) -> Slack {
    if want >= max_ns {
        return Slack::Bounded(Duration::from_nanos(max_ns));
    }
    if want == 0 {
        return Slack::None;
    }
    // The smallest k with max >> k <= want.
    let ratio = max_ns / want; // >= 1
    let mut k = 63 - ratio.leading_zeros();
    if max_ns >> k > want {
        k += 1;
    }
    match max_ns >> k {
        0 => Slack::None,
        ns => Slack::Bounded(Duration::from_nanos(ns)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn us(n: u64) -> Slack {
        Slack::Bounded(Duration::from_micros(n))
    }

    #[test]
    fn proportional_slack_is_a_share_rounded_down_to_the_cap_over_a_power_of_two() {
        let p = DefaultSlack::Proportional {
            divisor: 16,
            max_ns: 1_024_000,
        };
        // At and above 16 x max: the cap.
        assert_eq!(p.resolve(16_384_000), us(1_024));
        assert_eq!(p.resolve(3_600_000_000_000), us(1_024));
        // Below it: the largest max / 2^k not above remaining / 16.
        assert_eq!(p.resolve(16_383_999), us(512));
        assert_eq!(p.resolve(8_192_000), us(512));
        assert_eq!(p.resolve(1_600_000), us(64));
        assert_eq!(p.resolve(100_000), us(4));
        assert_eq!(p.resolve(16_000), us(1));
        assert_eq!(p.resolve(15_999), Slack::Bounded(Duration::from_nanos(500)));
        assert_eq!(p.resolve(15), Slack::None);
        assert_eq!(p.resolve(0), Slack::None);
        for r in [1u64, 17, 999, 123_456, 7_777_777, 99_999_999] {
            let Slack::Bounded(s) = p.resolve(r) else {
                assert!(r / 16 < 1, "{r}");
                continue;
            };
            let s = s.as_nanos() as u64;
            assert!(
                s <= r / 16 && (s == 1_024_000 || s * 2 > r / 16),
                "{r}: {s}"
            );
            // Each is the cap over a power of two, down to 125 ns (1,024,000 = 125 x 2^13).
            if s >= 125 {
                assert_eq!(1_024_000 % s, 0, "{r}: {s} does not divide the cap");
            }
        }
        let g = DefaultSlack::Growing {
            knee_ns: 2_000_000,
            max_ns: 1_024_000,
        };
        // 100 µs: 5 µs wanted, 4 µs given; 1 ms: 500 wanted, 256 given; from 1,431 µs on
        // (1,024 wanted): the cap.
        assert_eq!(g.resolve(100_000), us(4));
        assert_eq!(g.resolve(1_000_000), us(256));
        assert_eq!(g.resolve(1_430_000), us(512));
        assert_eq!(g.resolve(1_431_100), us(1_024));
        assert_eq!(g.resolve(u64::MAX), us(1_024));
        assert_eq!(g.resolve(1_000), Slack::None);
        let fixed = DefaultSlack::Fixed(us(7));
        assert_eq!(fixed.resolve(1), us(7));
        assert_eq!(
            (fixed.constant_from(), p.constant_from()),
            (0, 16 * 1_024_000)
        );
    }
}

/// What a core shares with the rest of its runtime.
#[derive(Clone)]
pub(crate) struct Siblings {
    /// The runtime's blocking pool.
    pub(crate) blocking: Arc<BlockingPool>,
    /// The runtime's cores, for placing tasks.
    pub(crate) peers: Arc<Peers>,
    /// The runtime's task hooks, if any is set.
    pub(crate) hooks: Option<Arc<Hooks>>,
    /// Where the runtime's stall detector sleeps, if it has one.
    pub(crate) kennel: Option<Arc<Kennel>>,
}
