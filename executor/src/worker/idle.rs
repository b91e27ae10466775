//! Going idle: the sleep sequence, the spins before parking (to a timer the device woke the
//! core ahead of; the idle governor's learned window, `governor.rs`, or a fixed one) and paused
//! time's jump to the next timer.

use std::sync::Arc;
use std::task::{Wake, Waker};
use std::time::Duration;

use super::governor::{Governor, Outcome, PARK_WAKE};
use super::run::Driver;
use super::shared::Shared;
use super::{bump, Core};
use std::cell::Cell;

/// How an idle transition ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Slept {
    /// A stop was requested: the loop's next turn stops.
    Stop,
    /// Something was handed over since the last drain: take it instead of sleeping.
    Retry,
    /// The core slept and was woken (by I/O, its timerfd, or another thread).
    Woke,
}

/// The sleep sequence of a core that found nothing runnable and has just drained its inbox:
/// flush the deferred re-arm, publish the counters, re-check the stop flag, publish "asleep
/// until the device's instant" (the armed deadline less the wakeup lead: when the core wakes
/// by itself) unless something was handed over since the drain, block, and publish "running"
/// again.
///
/// # Protocol
///
/// A stop request sets the flag, then the inbox's DIRTY bit. If our drain consumed that DIRTY,
/// the flag is visible by now, and the re-check here sees it; if not, `try_sleep` fails on the
/// DIRTY bit. Checking the flag only at the top of the loop would lose a stop that raced the
/// drain. `loom-tests/tests/idle_sequence.rs` runs this function and breaks without the
/// re-check.
pub fn sleep<D: Driver>(d: &D) -> Slept {
    let shared: &Shared<D::Unpark> = d.shared();
    let wakes_at = d.flush_rearm();
    d.publish();
    if shared.stop_requested() {
        return Slept::Stop;
    }
    if !shared.inbox.try_sleep(wakes_at) {
        return Slept::Retry;
    }
    d.block(wakes_at);
    // "Running", and a stall detector asleep since every core was is woken.
    shared.running_again();
    Slept::Woke
}

impl Core {
    /// Nothing is runnable: jump paused time, or spin if the next timer is close, or sleep.
    pub(crate) fn go_idle(&self) {
        bump(&self.counters.idles);
        self.take_orphans();
        if self.timers.clock().is_paused() {
            return self.idle_paused();
        }
        if self.try_steal() {
            return;
        }
        if let Some(lead) = self.timers.take_early() {
            if self.spin_to_early_timer(lead) {
                return;
            }
        }
        if let Some(governor) = &self.governor {
            return self.governed_idle(governor);
        }
        if self.spin_ns > 0 {
            // Arm the device first, as a park would: timers registered while it spins see it
            // armed (a request timeout then waits detached, and its cancel costs nothing).
            self.timers.arm_before_spin();
            let now = self.timers.clock().now();
            self.timers.settle(now);
            if !self.slack_covers_park(now, self.spin_ns) && self.spin(now, self.spin_ns) {
                return;
            }
        }
        // Two clock readings a park, for the busy time (the governor's path has them anyway);
        // the first settles the young timers.
        let now = self.timers.clock().now();
        self.timers.settle(now);
        // Before the park, a look at the peers that have not come back to their loop.
        self.follow_yield();
        if self.harvest_peers(Some(now)) {
            return;
        }
        self.busy_until(now);
        if sleep(self) == Slept::Woke {
            self.woke_at(self.timers.clock().now());
        }
    }

    /// Goes idle as the governor says: spin for its window (bounded by the next timer), then
    /// park if the spin caught nothing; and tell it how that went (see `governor.rs`).
    ///
    /// What it costs: a spin that catches work at its first poll reads no clock (a same-core
    /// ping-pong's every transition, once learnt). A park reads the clock when it begins (a
    /// spin's own first reading serves) and when it ends: the idle time is what the governor
    /// learns from, and no reading the loop already takes is at hand there. Where other cores
    /// are not pinned, a park also reads its CPU (`sched_getcpu`, no system call) and publishes
    /// it with one relaxed store, a spin that expires reads its CPU once, and so does a spin
    /// that catches while the governor doubts (no catch on a CPU of its own yet, or an
    /// interfering spin since the last one); the other cores' CPUs are one relaxed load each.
    /// With `Builder::park_when_busy`, a spin that catches after its first poll reads the
    /// clock once more, at the catch, for the governor's measure of the core's work; a busy
    /// core's spin, cut to its first poll, reads it where the spin would have begun and parks.
    fn governed_idle(&self, governor: &Cell<Governor>) {
        let clock = self.timers.clock();
        let mut g = governor.get();
        let window = g.window();
        // Pinned, or alone, no other core can be woken onto this CPU: no need to know which
        // it is.
        let crowdable = !g.pinned() && self.has_peers();
        let mut spin_cpu = None;
        let mut start = None;
        // Cut to a look because the core is busy, and the look found nothing.
        let mut looked = false;
        if window > 0 {
            bump(&self.counters.governor_spins);
            // Arm the device first, as a park would (see `go_idle`); young timers wait for the
            // spin's first reading.
            self.timers.arm_before_spin();
            let at_once = self.poll_io(Some(Duration::ZERO)) || self.has_work();
            if at_once {
                // A spin all the same (`spin_until` counts the others).
                bump(&self.counters.spins);
            }
            // A look that finds nothing parks at once if the core is busy, or if the spin would
            // end at a timer whose slack covers the park (see `governor.rs`).
            let mut slack_park = false;
            let caught = at_once || {
                let now = clock.now();
                start = Some(now);
                self.timers.settle(now);
                slack_park = !g.busy() && self.slack_covers_park(now, window);
                !g.busy() && !slack_park && self.spin(now, window) && {
                    if g.watches_work() {
                        let end = clock.now();
                        g.idle_ended(end, end.saturating_sub(now));
                    }
                    true
                }
            };
            if caught {
                bump(&self.counters.governor_caught);
                // Only while the governor doubts: a catch on a shared CPU came from the kernel
                // preempting the spin for the other core, and must not pass for one that paid.
                let crowded = crowdable && g.doubts() && self.crowded_here();
                if crowded {
                    bump(&self.counters.governor_crowded);
                }
                g.learn(Outcome::Caught { crowded });
                return governor.set(g);
            }
            if g.busy() || slack_park {
                if g.busy() {
                    bump(&self.counters.governor_busy_looks);
                }
                looked = true;
            } else {
                let spun = &self.counters.governor_spun_ns;
                spun.set(spun.get().saturating_add(window));
                if crowdable {
                    spin_cpu = tickless_io::internal::cpu::current_cpu();
                }
            }
        }
        // From the spin's start, if it spun: the spin counts in the idle time.
        let start = start.unwrap_or_else(|| clock.now());
        self.timers.settle(start);
        // Before the park, a look at the peers that have not come back to their loop (the
        // spin's reading is older than now: never early).
        self.follow_yield();
        if self.harvest_peers(Some(start)) {
            return governor.set(g);
        }
        self.busy_until(start);
        if sleep(self) == Slept::Woke {
            let now = clock.now();
            self.woke_at(now);
            let idle = now.saturating_sub(start);
            if crowdable {
                self.shared
                    .set_cpu(tickless_io::internal::cpu::current_cpu());
            }
            g.idle_ended(now, idle);
            if looked {
                // No spin: nothing for the window's rules to learn.
                return governor.set(g);
            }
            g.learn(if window > 0 {
                // An unknown CPU counts as shared.
                let crowded = crowdable && spin_cpu.is_none_or(|cpu| self.another_core_on(cpu));
                if crowded {
                    bump(&self.counters.governor_crowded);
                }
                Outcome::Expired { idle, crowded }
            } else {
                Outcome::Parked { slept: idle }
            });
            governor.set(g);
        }
    }

    /// Whether another core of the runtime last woke on the CPU this thread runs on now (an
    /// unknown CPU counts as shared).
    fn crowded_here(&self) -> bool {
        tickless_io::internal::cpu::current_cpu().is_none_or(|cpu| self.another_core_on(cpu))
    }

    /// Whether the runtime has other cores (whose governors read this one's CPU).
    fn has_peers(&self) -> bool {
        self.peers.all().is_some_and(|cores| cores.len() > 1)
    }

    /// Whether another core of the runtime last woke on `cpu`.
    fn another_core_on(&self, cpu: usize) -> bool {
        self.peers.all().is_some_and(|cores| {
            cores
                .iter()
                .any(|c| c.id.index != self.shared.id.index && c.cpu() == Some(cpu))
        })
    }

    /// The governor's current window, ns (zero without a governor).
    pub(crate) fn governor_window(&self) -> u64 {
        self.governor.as_ref().map_or(0, |g| g.get().window())
    }

    /// The clock event device, programmed `lead` ahead of the end of the earliest window,
    /// woke the core before anything was due: wait out the rest awake as long as that window
    /// ends within the lead (if a cancel moved it further, the next arming sleeps until it
    /// instead). The wait watches the clock and the inbox, not I/O (a poll is a system call;
    /// I/O that comes meanwhile waits at most the lead, as it would behind a task that ran
    /// that long), and ends at the first deadline, not at the end of its window: awake, there
    /// is nothing to gain by waiting longer. Returns `true` if the core found work or a timer
    /// became due.
    fn spin_to_early_timer(&self, lead: u64) -> bool {
        let now = self.timers.clock().now();
        self.timers.settle(now);
        match self.timers.next_expiration() {
            Some(end) if end.saturating_sub(now) <= lead => {
                bump(&self.counters.lead_spins);
                let caught = self.spin_until(end, Some(self.first_deadline(end)), false);
                if caught {
                    self.idle_since(now);
                }
                caught
            }
            _ => false,
        }
    }

    /// An idle stretch that began at `start` (a clock reading) ends now: the governor, if the
    /// core has one that watches its work, counts it against the core's work (one clock
    /// reading).
    fn idle_since(&self, start: u64) {
        let Some(governor) = &self.governor else {
            return;
        };
        let mut g = governor.get();
        if g.watches_work() {
            let now = self.timers.clock().now();
            g.idle_ended(now, now.saturating_sub(start));
            governor.set(g);
        }
    }

    /// Whether a spin of `window` ns from `now` (a clock reading) would end at a timer whose
    /// slack covers a park's wakeup (see *Timers with slack* in `governor.rs`): the earliest
    /// window ends inside the spin, at least [`PARK_WAKE`] (or the learned wakeup lead) after
    /// the earliest deadline. Then the core parks at once, counted in `slack_parks`.
    fn slack_covers_park(&self, now: u64, window: u64) -> bool {
        let Some(end) = self.timers.next_expiration() else {
            return false;
        };
        let covers = end.saturating_sub(now) < window
            && end.saturating_sub(self.first_deadline(end)) >= PARK_WAKE.max(self.timers.lead());
        if covers {
            bump(&self.counters.slack_parks);
        }
        covers
    }

    /// The earliest deadline, for a spin that must end by `end` (the end of the earliest
    /// window) anyway.
    fn first_deadline(&self, end: u64) -> u64 {
        self.timers.next_deadline().map_or(end, |d| d.min(end))
    }

    /// A spin before parking, from `start` (a clock reading): polls I/O without blocking for
    /// up to `window` ns, or until the next timer if that is sooner (computed from every timer
    /// the core holds: the handed-over ones were taken just before). Returns `true` if the core
    /// found work (or a timer became due) and should not park.
    fn spin(&self, start: u64, window: u64) -> bool {
        let next = self.timers.next_expiration();
        match next {
            Some(end) if end.saturating_sub(start) < window => {
                self.spin_until(end, Some(self.first_deadline(end)), true)
            }
            _ => self.spin_until(start.saturating_add(window), None, true),
        }
    }

    /// Waits awake until the clock reaches `until`, or until work comes (then `true`),
    /// polling I/O without blocking if `io`. With a timer whose deadline is at `first` (or
    /// later: a bound) and whose window ends at `until`, the timers are advanced to each
    /// reading from `first` on, and the wait ends (`true`) as soon as one is due, at `until`
    /// at the latest. Without one, the core may park at `until` (`false`).
    fn spin_until(&self, until: u64, first: Option<u64>, io: bool) -> bool {
        let clock = self.timers.clock();
        bump(&self.counters.spins);
        loop {
            if io {
                if self.poll_io(Some(Duration::ZERO)) {
                    return true;
                }
                self.tokio_turn();
            }
            if self.has_work() {
                return true;
            }
            let now = clock.now();
            if let Some(first) = first {
                if now >= first {
                    // Expire it on the next turn, without parking.
                    self.timers.advance(now);
                    if now >= until || self.timers.has_expired() {
                        return true;
                    }
                }
            }
            if now >= until {
                return false;
            }
            std::hint::spin_loop();
        }
    }

    /// A turn of the core's tokio runtime, if it has one, while the core spins polling I/O:
    /// its tasks and sockets do not wait for the park (what the turn hands the core, the spin
    /// finds next).
    fn tokio_turn(&self) {
        if let Some(tokio) = self.tokio() {
            tokio.turn(&self.shared.watch);
        }
    }

    /// Whether something is runnable or handed over.
    fn has_work(&self) -> bool {
        self.runnable.get() > 0 || self.shared.inbox.is_dirty()
    }

    /// tokio's runtime is about to park on this core's thread (`tokio_before_park`): if the
    /// core is parked in it and something its tasks did needs the core's loop (a task of this
    /// core woken, something handed over, a timer due before the core's device fires), the
    /// park ends instead (see `worker/tokio_context.rs`).
    #[cfg(feature = "tokio-compat")]
    fn tokio_before_park(&self) {
        let Some(tokio) = self.tokio() else { return };
        if tokio.is_inside() {
            // tokio's poll ends: parked in tokio, the core is idle to the stall detector.
            self.shared.watch.tokio_rests();
        }
        let Some(until) = tokio.parked_until() else {
            return;
        };
        let timer_first = || {
            self.timers
                .next_expiration()
                .is_some_and(|t| until.is_none_or(|until| t < until))
        };
        if self.has_work() || self.spilled.get() > 0 || timer_first() {
            tokio.wake_idle();
        }
    }

    /// Paused time: poll I/O without blocking; if no event came, nothing is runnable and the
    /// blocking pool has no work in flight, jump to the next timer. A timer beyond the paused
    /// clock's range never fires: the core then waits as if it had no timer (for I/O or another
    /// thread), which keeps "never early".
    fn idle_paused(&self) {
        // Blocking work in flight may be what ends the wait (a file read under a timeout): the
        // clock stays, as tokio's does, and the core sleeps until the pool wakes it with its
        // last job settled. Asked before looking for work: a job settles only after its result
        // was handed over, so if the pool says "none in flight" that hand-over is visible to
        // `has_work` below.
        let blocking = self.blocking.wake_when_idle(self.shared.id.index, || {
            Waker::from(Arc::new(Nudge(self.shared.clone())))
        });
        // Any event may have woken the `block_on` future, which is not in the task queue: let
        // the loop take another turn rather than jump past it.
        if self.poll_io(Some(Duration::ZERO)) || self.has_work() {
            return;
        }
        let next = self.timers.next_expiration().filter(|_| !blocking);
        let jumped = next.is_some_and(|t| self.timers.clock().advance_to(t));
        if !jumped {
            sleep(self);
        }
    }
}

/// What tokio calls before its runtime parks on a core's thread (`Builder::tokio_context`):
/// the core's check for work tokio's tasks handed it while it is parked in tokio. Nothing on a
/// thread without a core (core 0's tokio runtime driven outside `block_on`).
#[cfg(feature = "tokio-compat")]
fn tokio_before_park() {
    crate::context::with_current(Core::tokio_before_park);
}

/// What tokio calls around its parks on a core's thread (`Builder::tokio_context`).
#[cfg(feature = "tokio-compat")]
pub(crate) const TOKIO_PARK_HOOKS: super::tokio_context::ParkHooks =
    super::tokio_context::ParkHooks {
        before_park: tokio_before_park,
        after_unpark: tokio_after_unpark,
    };

/// What tokio calls when its runtime wakes from its park on a core's thread: a poll of
/// tokio's starts, that the stall detector watches (see `worker/tokio_context.rs`). Nothing
/// on a thread without a core (core 0's tokio runtime driven outside `block_on`).
#[cfg(feature = "tokio-compat")]
fn tokio_after_unpark() {
    crate::context::with_current(|core| {
        if core.tokio().is_some_and(|tokio| tokio.is_inside()) {
            core.shared.watch.tokio_runs();
        }
    });
}

/// Wakes a core whose paused clock waits for the blocking pool: a deadline of "now" through
/// its inbox, as any remote wake (the eventfd is written only if the core sleeps).
struct Nudge(Arc<Shared>);

impl Wake for Nudge {
    fn wake(self: Arc<Self>) {
        self.0.notify_now();
    }
}
