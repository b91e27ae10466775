//! The stall detector's watchdog: one thread per runtime that looks at every core's poll word
//! (`worker::watch`) every half threshold, and reports a poll it has seen run for a whole
//! threshold, once.
//!
//! # When a poll is reported
//!
//! A check that finds a core in a poll it did not see at the previous check notes the time;
//! a later check that still finds the same poll, a threshold or more after that note, reports
//! it (a poll that has run at least that long: it started before the note). So a poll is
//! reported between one and one and a half thresholds after it started, and one shorter than
//! one and a half thresholds may go unreported.
//!
//! # Stall or preemption
//!
//! The threshold is wall time, and a thread the host kept off its CPU that long (a crowded
//! machine) looks the same from here. So from the second check that sees a poll on, each check
//! looks at its thread (`stall::sched::Window`: its CPU clock and its state, a clock read and a
//! small file read, only for polls that already ran half a threshold, which a healthy core has
//! few of), and the check that would report it decides: a poll whose thread mostly waited for
//! a CPU over that window, and ran or was blocked less than a threshold, is a preemption
//! (`ThreadTimes::is_preempted`): counted once (`CoreStats::preemptions`), not reported, and
//! still watched. A window shorter than a quarter threshold (the watchdog itself was late)
//! tells nothing: the next check decides.
//!
//! # Sleeping with the cores
//!
//! While some core runs, the watchdog wakes every half threshold: 80 wakeups a second at the
//! default 25 ms, on one thread, that read one cache line per core. When a check finds every
//! core idle (parked in epoll, or, core 0, not run by any thread) and no core has polled
//! anything since the check before, it parks until a core wakes (see `worker::watch::Kennel`):
//! an idle runtime costs no wakeup at all (one more check after its last poll), and a core that
//! wakes pays one fence and one load, plus one futex wake for the first core to wake after
//! the watchdog parked (`CoreStats::watchdog_rouses`). The whole quiet period is what keeps a
//! core that wakes often from paying that futex wake at every check: a runtime woken by a
//! timer every millisecond is idle at almost every check, and before this rule it rang the
//! watchdog awake after each (a second wakeup of the watchdog's, and a system call on the
//! core's thread, per check).

use std::io;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use super::crowding::Crowding;
use crate::catch::call_caught;
use crate::stall::sched::Window;
use crate::stall::{trace, StallBacktrace, StallReport};
use crate::sync;
use crate::task::hooks::StallHook;
use crate::worker::kennel::Kennel;
use crate::worker::shared::Shared;

/// A running watchdog; dropping it stops and joins the thread.
pub(crate) struct Watchdog {
    /// Where it sleeps (to stop it).
    kennel: Arc<Kennel>,
    /// The thread.
    thread: Option<JoinHandle<()>>,
}

/// What the watchdog knows of one core between checks.
#[derive(Default, Clone, Copy)]
struct Seen {
    /// The poll it saw last (0: none).
    poll: u64,
    /// When it first saw that poll.
    since: Option<Instant>,
    /// The last poll it reported.
    reported: u64,
    /// The last poll it counted as preempted.
    preempted: u64,
    /// Whether it has started looking at the poll's thread (at its second look at the poll).
    looking: bool,
    /// What the thread did since, if the kernel says.
    window: Option<Window>,
    /// Whether it woke a sleeping core to harvest this poll's core (`worker::harvest`).
    nudged: bool,
}

impl Watchdog {
    /// Starts the watchdog of `cores`, which sleep in `kennel`, reporting polls longer than
    /// `threshold` to `hook`; its thread may run on the CPUs `cpus` (the building thread's
    /// before core 0 was pinned to it, so that it does not share core 0's CPU).
    ///
    /// # Errors
    ///
    /// The thread could not be started.
    pub(crate) fn start(
        cores: Vec<Arc<Shared>>,
        kennel: Arc<Kennel>,
        threshold: Duration,
        hook: StallHook,
        cpus: Vec<usize>,
        duties: Duties,
    ) -> io::Result<Watchdog> {
        let thread = {
            let kennel = kennel.clone();
            thread::Builder::new()
                .name("tickless-watchdog".into())
                .spawn(move || {
                    // Before it can lie down: the thread a core wakes (see `Kennel`).
                    kennel.attach();
                    // Best effort: where it cannot, it shares the building thread's CPUs.
                    let _ = tickless_io::internal::cpu::set_current_affinity(&cpus);
                    watch(&cores, &kennel, threshold, &hook, duties);
                })?
        };
        Ok(Watchdog {
            kennel,
            thread: Some(thread),
        })
    }
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        self.kennel.stop();
        if let Some(thread) = self.thread.take() {
            // The hook's panics are caught: the thread ends only by the stop.
            let _ = thread.join();
        }
    }
}

/// What the watchdog does beside reporting stalls.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Duties {
    /// Tell a sleeping core of a core stuck in one poll (`Builder::harvest_after`).
    pub(crate) harvest: bool,
    /// Make a core step back while the CPUs are crowded (`Builder::yield_when_crowded`).
    pub(crate) yield_when_crowded: bool,
}

/// The watchdog's loop.
fn watch(
    cores: &[Arc<Shared>],
    kennel: &Kennel,
    threshold: Duration,
    hook: &StallHook,
    duties: Duties,
) {
    let harvest = duties.harvest;
    let mut crowding = duties
        .yield_when_crowded
        .then(|| Crowding::new(cores.len()));
    let signal = trace::install();
    let period = (threshold / 2).max(Duration::from_micros(100));
    let mut seen = vec![Seen::default(); cores.len()];
    // Each core's poll word at the last check: unchanged, the core polled nothing since.
    let mut words = vec![0u64; cores.len()];
    while !kennel.stopped() {
        thread::park_timeout(period);
        if kennel.stopped() {
            break;
        }
        let now = Instant::now();
        let (mut idle, mut quiet) = (true, true);
        for (index, (shared, seen)) in cores.iter().zip(seen.iter_mut()).enumerate() {
            idle &= is_idle(shared);
            let word = shared.watch.poll_word().load(Ordering::Relaxed);
            quiet &= std::mem::replace(&mut words[index], word) == word;
            let (poll, polled) = shared.watch.sample();
            if poll == 0 || !shared.watch.is_active() {
                *seen = Seen {
                    reported: seen.reported,
                    preempted: seen.preempted,
                    ..Seen::default()
                };
                continue;
            }
            let tid = shared.watch.tid();
            if poll != seen.poll {
                *seen = Seen {
                    poll,
                    since: Some(now),
                    reported: seen.reported,
                    preempted: seen.preempted,
                    ..Seen::default()
                };
                continue;
            }
            if harvest && !seen.nudged {
                // The same poll at two checks: a core that sleeps may take this core's ready
                // I/O (it looks at its peers before it parks again).
                seen.nudged = true;
                shared.watch.mark_stuck(poll);
                nudge_a_sleeper(cores, index);
            }
            if seen.reported == poll {
                continue;
            }
            let times = match (seen.looking, seen.window.as_mut()) {
                (false, _) => {
                    seen.looking = true;
                    seen.window = Window::start(tid);
                    if seen.window.is_some() {
                        // No window yet to decide by: the next check does.
                        continue;
                    }
                    None
                }
                (true, Some(window)) => window.look(),
                (true, None) => None,
            };
            let elapsed = seen.since.map_or(Duration::ZERO, |t| now - t);
            if elapsed < threshold {
                continue;
            }
            if let Some(times) = times {
                if times.window() < threshold / 4 {
                    continue;
                }
                if times.is_preempted(threshold) {
                    if seen.preempted != poll {
                        seen.preempted = poll;
                        shared.watch.count_preemption();
                    }
                    continue;
                }
            }
            seen.reported = poll;
            shared.watch.count_stall();
            let backtrace = signal.and_then(|signal| {
                trace::capture(signal, tid, shared.watch.poll_word(), poll)
                    .map(StallBacktrace::from_handler)
                    .ok_or("the poll ended before its thread's backtrace was taken")
            });
            let report = StallReport::new(index, polled, elapsed, threshold, times, backtrace);
            call_caught(|| hook(&report));
        }
        if idle {
            // Only after a whole period without a poll: a core that wakes more often than
            // that (a timer every millisecond) would otherwise rouse the watchdog at each of
            // its checks, a futex wake on the core's thread and a second wakeup here.
            if quiet {
                sleep_while_idle(cores, kennel);
            }
        } else if let Some(crowding) = crowding.as_mut() {
            crowding.check(cores, now);
        }
    }
}

/// Wakes the first core after `stuck` that sleeps, if one does, so that it harvests `stuck`'s
/// ready I/O.
fn nudge_a_sleeper(cores: &[Arc<Shared>], stuck: usize) {
    let n = cores.len();
    let sleeper = (1..n)
        .map(|k| &cores[(stuck + k) % n])
        .find(|s| s.takes_placed_work() && s.inbox.sleeping_until().is_some());
    if let Some(sleeper) = sleeper {
        sleeper.notify_now();
    }
}

/// Whether a core is idle: parked in epoll, or run by no thread.
fn is_idle(shared: &Shared) -> bool {
    shared
        .watch
        .is_idle(shared.inbox.sleeping_until().is_some())
}

/// Parks until a core wakes (or the stop), if every core is still idle once the kennel says
/// the watchdog sleeps (see `Kennel`'s protocol). The watchdog's side of the protocol, which
/// `loom-tests/tests/watchdog_kennel.rs` runs.
pub fn sleep_while_idle(cores: &[Arc<Shared>], kennel: &Kennel) {
    kennel.lie_down();
    if !cores.iter().all(|s| is_idle(s)) {
        kennel.get_up();
        return;
    }
    while kennel.stays_asleep() {
        sync::park();
    }
    kennel.get_up();
}
