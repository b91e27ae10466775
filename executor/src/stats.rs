//! What the runtime's cores did, as counts.
//!
//! The counters are declared once, in the `counters!` invocation below; the struct, its
//! arithmetic, the per-field listing and the atomic copy other threads read are all derived
//! from that one list.

use std::ops::{Add, AddAssign, Sub};

use crate::sync::{AtomicU64, Ordering};

/// Declares [`CoreStats`] and everything derived from its field list.
macro_rules! counters {
    ($( $(#[doc = $doc:expr])+ $name:ident, )+) => {
        /// One core's counters (or their sum over cores). Tests assert on these, never on time.
        ///
        /// # Examples
        ///
        /// What one sleep cost, as the difference of two snapshots (on paused time, so that
        /// no real time passes):
        ///
        /// ```
        /// use std::time::Duration;
        ///
        /// let rt = tickless::Builder::new().cores(1).start_paused(true).build()?;
        /// let before = rt.stats().cores[0];
        /// rt.block_on(tickless::time::sleep(Duration::from_secs(1)));
        /// let spent = rt.stats().cores[0] - before;
        /// assert!(spent.timer_inserts >= 1 && spent.timer_fires >= 1);
        /// assert_eq!(spent.task_panics, 0);
        /// for (name, count) in spent.fields() {
        ///     println!("{name}: {count}");
        /// }
        /// # std::io::Result::Ok(())
        /// ```
        #[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
        pub struct CoreStats {
            $( $(#[doc = $doc])+ pub $name: u64, )+
        }

        impl CoreStats {
            /// Every counter with its name, in declaration order (for reports and benchmarks).
            /// See the example on [`CoreStats`].
            pub fn fields(&self) -> [(&'static str, u64); COUNTERS] {
                [$( (stringify!($name), self.$name), )+]
            }

            /// The counters in declaration order, without their names (what a publish stores).
            #[inline]
            fn to_array(self) -> [u64; COUNTERS] {
                [$( self.$name, )+]
            }

            /// `f` applied to every pair of counters of `self` and `o`.
            fn zip(self, o: CoreStats, f: impl Fn(u64, u64) -> u64) -> CoreStats {
                CoreStats { $( $name: f(self.$name, o.$name), )+ }
            }

            /// Built from the counters in declaration order.
            fn from_array(v: [u64; COUNTERS]) -> CoreStats {
                let mut i = 0..;
                CoreStats { $( $name: v[i.next().expect("unbounded")], )+ }
            }
        }

        /// How many counters [`CoreStats`] has.
        const COUNTERS: usize = [$( stringify!($name), )+].len();
    };
}

counters! {
    /// Task polls, the `block_on` future's included.
    polls,
    /// Times the core blocked in epoll with nothing to run.
    parks,
    /// Idle transitions spent polling instead of parking (see the idle governor).
    spins,
    /// Idle transitions: turns of the loop that found nothing runnable (each ends in a park,
    /// a spin, a paused-time jump, or a retry when something was handed over meanwhile).
    idles,
    /// Timers inserted (sleeps, timeouts, intervals, handed-over timers).
    timer_inserts,
    /// Pending timers cancelled.
    timer_cancels,
    /// Of those, timers cancelled before they entered the wheel: made while the timerfd was
    /// armed no later than the end of their window (deadline plus slack), and cancelled before
    /// it fired, as a request's timeout usually is. They touch no wheel list and re-arm nothing.
    timer_cancels_detached,
    /// Timers that fired.
    timer_fires,
    /// `timerfd_settime` calls: each re-programming of the core's timerfd (none with
    /// [`ClockDevice::Epoll`](crate::ClockDevice::Epoll), which has no timerfd).
    timerfd_rearms,
    /// Clock event device expirations (the timerfd's, or the epoll wait's timeout) that found
    /// no timer due (not counting early ones).
    device_spurious,
    /// Clock event device expirations that came ahead of the end of the earliest window, by
    /// the wakeup lead (see [`Builder::wakeup_lead_max`](crate::Builder::wakeup_lead_max)), and
    /// found no timer due yet: the core waited out the rest awake (a lead spin).
    timer_early,
    /// Idle transitions spent spinning to a timer after an early expiry (part of `spins`).
    lead_spins,
    /// Spins the idle governor started (part of `spins`; see
    /// [`Builder::idle_governor`](crate::Builder::idle_governor)).
    governor_spins,
    /// Of those, spins that caught work (I/O, a hand-over, a due timer) before their window
    /// ended; the others ended in a park.
    governor_caught,
    /// Of the governor's spins, those that ran on a CPU where another core of the runtime last
    /// woke (threads not pinned: the kernel put both on one CPU), caught or not: each stopped
    /// the core's spins for a cool-down. Counted for a spin that caught only while the governor
    /// doubts (before its first catch on a CPU of its own, and from an earlier such spin to the
    /// next such catch).
    governor_crowded,
    /// Time spent in the governor's spins that caught nothing (each its whole window), in
    /// microseconds (rounded down): the CPU the governor spent for nothing. Spins that caught work replaced a park and a wakeup, and are not timed.
    governor_spun_us,
    /// Of the governor's spins, those cut to their first look because the core was busy (its
    /// work filled over 70% of the last 10 ms) and that found nothing: each parked at once
    /// instead of spinning. Only with
    /// [`Builder::park_when_busy`](crate::Builder::park_when_busy); zero otherwise.
    governor_busy_looks,
    /// Idle transitions that parked instead of spinning toward a timer due within the spin
    /// window (the governor's or `Builder::spin_before_park`'s) whose slack covers a park's
    /// wakeup: the device, armed for the end of the timer's window, wakes the core in time,
    /// so the spin would have bought nothing (see `Builder::idle_governor`).
    slack_parks,
    /// The governor's spin window at the core's last idle transition, in nanoseconds (zero:
    /// it parks at once). A gauge, not a count (read it per core).
    governor_window_ns,
    /// The wakeup lead the core has learned, in nanoseconds: how far ahead of the end of the
    /// earliest window it programs its clock event device. A gauge, not a count (a sum over
    /// cores means little; read it per core).
    wakeup_lead_ns,
    /// Hand-overs from other threads that had to wake this core.
    remote_wakes_sent,
    /// Hand-overs from other threads that left it alone.
    remote_wakes_avoided,
    /// Of those, timers handed over that shrank the sleeping core's sleep and programmed its
    /// timerfd from the handing thread instead of waking the core: it wakes once, at the
    /// deadline, not twice (now to re-arm, then at the deadline).
    remote_arms,
    /// Reads of the monotonic clock by the core.
    clock_reads,
    /// `epoll_wait` (or `epoll_pwait2`) calls, blocking or not.
    io_polls,
    /// Events epoll returned.
    io_events,
    /// Task polls that panicked (each became its task's `JoinError::Panic`).
    task_panics,
    /// Polls (a task's, or the `block_on` future's) that ran past the stall threshold, each
    /// reported once (see [`Builder::stall_threshold`](crate::Builder::stall_threshold)).
    /// Counted by the watchdog thread; published with the other counters.
    stalls,
    /// Polls that ran past the stall threshold in wall time while their thread was kept off
    /// its CPU (it waited for one longer than it ran and was blocked together, and ran and was
    /// blocked less than a threshold: see [`ThreadTimes`](crate::runtime::ThreadTimes)): the
    /// host's preemption, not a stall, so not reported. Each counted once; one that goes on to
    /// run or block a threshold of its own is reported as a stall too. Counted by the watchdog
    /// thread; published with the other counters.
    preemptions,
    /// Times the core, waking, woke the stall detector's watchdog, which sleeps while every
    /// core does (a futex wake on the core's thread). The watchdog lies down only after a
    /// whole check period in which no core polled, so a core that wakes often (a timer every
    /// millisecond) leaves it awake at its own pace and pays none.
    watchdog_rouses,
    /// Task futures (or their outputs) whose destructor panicked when the core dropped them
    /// (abort, shutdown, a detached task's end); where a handle waits, it gets the panic.
    drop_panics,
    /// Wakers that panicked when the core woke them (timers, hand-overs, I/O readiness).
    wake_panics,
    /// Tasks alive on the core now (polled at least once and not yet dropped), as tokio's
    /// `num_alive_tasks`: a gauge, not a count (a sum over cores is the runtime's).
    alive_tasks,
    /// Connections accepted by the listeners this core drives.
    accepts,
    /// Tasks that `tickless::spawn` on this core placed on another core (see
    /// [`Placement`](crate::runtime::Placement)).
    tasks_placed,
    /// Tasks this core took, while idle, from another core that had left them runnable and
    /// unrun for longer than [`Builder::steal_after`](crate::Builder::steal_after) (tokio's
    /// `worker_steal_count`).
    steals,
    /// Times this core stepped back from serving because the runtime's threads kept waiting
    /// for a CPU another process held
    /// ([`Builder::yield_when_crowded`](crate::Builder::yield_when_crowded)): its `Send` tasks
    /// went to the cores that serve.
    yields,
    /// Looks this core took at another core's epoll set because that core had not come back
    /// to its loop for [`Builder::harvest_after`](crate::Builder::harvest_after) (a long poll,
    /// or a thread kept off its CPU; never a core that sleeps), each one `epoll_wait` that does not
    /// block.
    harvest_looks,
    /// Of those, the looks that took ready events: harvests. The `Send` tasks they woke moved
    /// here. Zero on a runtime whose cores keep up.
    harvests,
    /// Events of other cores' registrations this core's harvests dispatched.
    harvested_events,
    /// Runnable `Send` tasks this core queued where other cores may take them, its private
    /// queue being full.
    tasks_spilled,
    /// I/O objects (or one direction of a split stream) polled on this core while registered
    /// with another, which then registered here too: moved here, or, polled from several
    /// cores at once, registered with each (see [`net`](crate::net)).
    io_rebinds,
    /// Descriptors registered with this core's reactor now (each I/O object registers with the
    /// core that polls it): a gauge, not a count.
    io_registrations,
    /// Descriptors registered with this core's reactor so far (`io_registered -
    /// io_registrations` have left it), as tokio's `io_driver_fd_registered_count`.
    io_registered,
    /// Tasks queued to run on this core by its own thread (woken there, spawned there, or
    /// started by one of its timers), as tokio's `worker_local_schedule_count`.
    local_schedules,
    /// Tasks handed to this core by other threads to run (woken or spawned there), as tokio's
    /// `remote_schedule_count` (per core).
    remote_schedules,
    /// Tasks that started on this core (polled here for the first time).
    tasks_started,
    /// Tasks queued to run on the core, as of the publish (always 0 at a park, which runs only
    /// with nothing queued): a gauge.
    local_queue_depth,
    /// Timers pending in the core's wheel: a gauge.
    pending_timers,
    /// Time the core was not idle, in nanoseconds, up to its last idle transition (see
    /// [`RuntimeMetrics::worker_total_busy_duration`](crate::runtime::RuntimeMetrics::worker_total_busy_duration)).
    busy_ns,
}

impl Add for CoreStats {
    type Output = CoreStats;

    fn add(self, o: CoreStats) -> CoreStats {
        self.zip(o, u64::wrapping_add)
    }
}

impl AddAssign for CoreStats {
    fn add_assign(&mut self, o: CoreStats) {
        *self = *self + o;
    }
}

impl Sub for CoreStats {
    type Output = CoreStats;

    /// Counter by counter, saturating at zero: `after - before` is what happened in between.
    fn sub(self, o: CoreStats) -> CoreStats {
        self.zip(o, u64::saturating_sub)
    }
}

/// The counters of every core, and their total; from [`Runtime::stats`](crate::Runtime::stats).
///
/// # Examples
///
/// ```
/// let rt = tickless::Builder::new().cores(2).build()?;
/// rt.block_on(async { tickless::task::spawn_blocking(|| ()).await.unwrap() });
/// let stats = rt.stats();
/// assert_eq!(stats.cores.len(), 2); // by core index
/// let polls: u64 = stats.cores.iter().map(|core| core.polls).sum();
/// assert_eq!(polls, stats.total.polls);
/// println!("{} blocking threads, {} idle", stats.blocking_threads, stats.blocking_idle_threads);
/// # std::io::Result::Ok(())
/// ```
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Stats {
    /// Per core, by index.
    pub cores: Vec<CoreStats>,
    /// The sum over cores.
    pub total: CoreStats,
    /// Threads of the blocking pool alive now (running a job or idle within their keep-alive).
    pub blocking_threads: usize,
    /// Of those, the idle ones: waiting for a job, and not yet woken for one (tokio's
    /// `num_idle_blocking_threads`).
    pub blocking_idle_threads: usize,
}

impl Stats {
    /// The cores' counters, summed, and the blocking pool's `(threads, idle threads)`.
    pub(crate) fn from_cores(cores: Vec<CoreStats>, blocking: (usize, usize)) -> Stats {
        let total = cores.iter().fold(CoreStats::default(), |a, &c| a + c);
        Stats {
            cores,
            total,
            blocking_threads: blocking.0,
            blocking_idle_threads: blocking.1,
        }
    }
}

/// A core's counters as other threads see them: written by the core at each idle transition
/// (plain relaxed stores: one writer), read by [`Runtime::stats`](crate::Runtime::stats).
#[derive(Debug)]
pub(crate) struct Published([AtomicU64; COUNTERS]);

impl Default for Published {
    fn default() -> Self {
        Published(std::array::from_fn(|_| AtomicU64::new(0)))
    }
}

impl Published {
    /// Publishes `s` (the core's own thread only).
    pub(crate) fn store(&self, s: &CoreStats) {
        // Values only: building `fields()`'s name and value pairs cost a park about four times
        // the stores (callgrind, hello_http: ~430 instructions a publish).
        for (slot, v) in self.0.iter().zip(s.to_array()) {
            slot.store(v, Ordering::Relaxed);
        }
    }

    /// The counters as of the last [`store`](Self::store).
    pub(crate) fn load(&self) -> CoreStats {
        CoreStats::from_array(std::array::from_fn(|i| self.0[i].load(Ordering::Relaxed)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn numbered() -> CoreStats {
        CoreStats::from_array(std::array::from_fn(|i| i as u64 + 1))
    }

    #[test]
    fn arithmetic_is_per_counter() {
        let a = numbered();
        let b = a + a;
        for ((name, x), (_, y)) in a.fields().into_iter().zip(b.fields()) {
            assert_eq!(y, 2 * x, "{name}");
        }
        assert_eq!(b - a, a);
        assert_eq!(a - b, CoreStats::default(), "saturates at zero");
        let mut c = a;
        c += a;
        assert_eq!(c, b);
    }

    #[test]
    fn published_round_trips_every_counter() {
        let p = Published::default();
        p.store(&numbered());
        assert_eq!(p.load(), numbered());
    }

    #[test]
    fn fields_are_in_declaration_order() {
        let f = numbered().fields();
        assert_eq!(f[0], ("polls", 1));
        assert_eq!(f[COUNTERS - 1], ("busy_ns", COUNTERS as u64));
    }
}
