//! `Builder`: a runtime's settings, checked when it is built.

use std::io;
use std::sync::mpsc;
use std::thread;
use std::time::Duration;

use tickless_timer::{Config, RearmPolicy, Slack};

use crate::blocking::{BlockingPool, DEFAULT_KEEP_ALIVE, DEFAULT_MAX_THREADS};
use crate::histogram::{DEFAULT_LATENESS_HISTOGRAM, DEFAULT_POLL_TIME_HISTOGRAM};
use crate::runtime::thread::core_thread;
use crate::runtime::watchdog::{Duties, Watchdog};
use crate::runtime::Runtime;
use crate::task::hooks::{Observers, MIN_STALL_THRESHOLD};
use crate::worker::config::{CoreConfig, DefaultSlack};
use crate::worker::device::ClockDevice;
use crate::worker::id::CoreId;
use crate::worker::kennel::Kennel;
use crate::worker::placement::Placement;
use crate::worker::shared::Peers;
use crate::worker::{Core, Siblings};

/// The coarsest timer resolution [`Builder::build`] accepts.
pub const MAX_TIMER_RESOLUTION: Duration = Duration::from_secs(1);
/// The largest slack a timer may have: [`Builder::build`] rejects a larger default, and
/// [`Sleep::slack`](crate::time::Sleep::slack) caps a larger one to it.
pub const MAX_SLACK: Duration = Duration::from_secs(3600);

/// The default slack's knee: a timer of this length may fire up to all of it late (at most
/// [`DEFAULT_SLACK_MAX`]), one of a tenth of it a tenth of that (see
/// [`Builder::default_slack_growing`]).
pub const DEFAULT_SLACK_KNEE: Duration = Duration::from_millis(2);
/// The default slack's cap: no timer that gives no slack fires more than this late (plus the
/// resolution and the time the core takes to get to it).
pub const DEFAULT_SLACK_MAX: Duration = Duration::from_micros(1_024);

/// The default cap of the wakeup lead (see [`Builder::wakeup_lead_max`]).
pub const DEFAULT_WAKEUP_LEAD_MAX: Duration = Duration::from_micros(100);
/// The largest cap of the wakeup lead [`Builder::build`] accepts.
pub const MAX_WAKEUP_LEAD: Duration = Duration::from_millis(10);

/// How long runnable `Send` tasks wait on a core that does not run them before an idle core
/// takes them, by default (see [`Builder::steal_after`]).
pub const DEFAULT_STEAL_AFTER: Duration = Duration::from_micros(250);

/// How long a core goes without coming back to its loop before a core that runs takes its
/// ready I/O, by default (see [`Builder::harvest_after`]).
pub const DEFAULT_HARVEST_AFTER: Duration = Duration::from_micros(500);

/// Configures a [`Runtime`].
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use tickless::{Builder, RearmPolicy};
///
/// let rt = Builder::new()
///     .cores(2)
///     .timer_policy(RearmPolicy::OnIdle)
///     .timer_resolution(Duration::from_micros(10))
///     .build()?;
/// rt.block_on(tickless::time::sleep(Duration::from_micros(50)));
/// # std::io::Result::Ok(())
/// ```
#[derive(Debug, Clone)]
pub struct Builder {
    /// Number of cores; `None`: one per CPU the process may run on.
    cores: Option<usize>,
    /// Pin each core's thread to its CPU.
    pin: bool,
    /// Per-core settings (the epoch is set at build time).
    pub(super) core: CoreConfig,
    /// The blocking pool's thread cap.
    max_blocking_threads: usize,
    /// How long an idle blocking thread lingers.
    blocking_keep_alive: Duration,
    /// The task hooks and the stall detector (`runtime::hooks`).
    pub(super) observers: Observers,
}

impl Default for Builder {
    fn default() -> Self {
        Builder::new()
    }
}

impl Builder {
    /// The defaults: one core per CPU the process may use (see [`cores`](Self::cores): the
    /// affinity mask and the container's CPU quota), not pinned; `Lazy` re-arming,
    /// 1 µs timer resolution, a default slack that grows with a timer's length up to 1,024 µs
    /// (see [`default_slack_growing`](Self::default_slack_growing)), a learned wakeup lead of
    /// at most 100 µs (see [`wakeup_lead_max`](Self::wakeup_lead_max)), the idle governor on
    /// (a learned spin of 10-50 µs before a park, see [`idle_governor`](Self::idle_governor)),
    /// work stealing after 250 µs (see [`steal_after`](Self::steal_after)),
    /// [`Placement::Spread`](crate::runtime::Placement::Spread), real time.
    ///
    /// # Examples
    ///
    /// ```
    /// let rt = tickless::Builder::new().build()?; // the defaults: a core per CPU
    /// assert!(rt.cores() >= 1);
    /// # std::io::Result::Ok(())
    /// ```
    pub fn new() -> Builder {
        Builder {
            cores: None,
            pin: false,
            core: CoreConfig {
                timer: Config {
                    lead_max: DEFAULT_WAKEUP_LEAD_MAX,
                    ..Config::default()
                },
                default_slack: DefaultSlack::Growing {
                    knee_ns: DEFAULT_SLACK_KNEE.as_nanos() as u64,
                    max_ns: DEFAULT_SLACK_MAX.as_nanos() as u64,
                },
                paused: false,
                spin: Duration::ZERO,
                governor: true,
                park_when_busy: false,
                pinned: false,
                always_wake: false,
                device: ClockDevice::TimerFd,
                placement: Placement::Spread,
                steal_after: Some(DEFAULT_STEAL_AFTER),
                harvest_after: Some(DEFAULT_HARVEST_AFTER),
                yield_when_crowded: true,
                resolver: crate::dns::resolve_on_pool,
                tokio: DEFAULT_TOKIO_CONTEXT,
                poll_times_on: false,
                poll_times: DEFAULT_POLL_TIME_HISTOGRAM,
                loop_histograms: false,
                lateness: DEFAULT_LATENESS_HISTOGRAM,
            },
            max_blocking_threads: DEFAULT_MAX_THREADS,
            blocking_keep_alive: DEFAULT_KEEP_ALIVE,
            observers: Observers::default(),
        }
    }

    /// The number of cores (executor threads, core 0 being the thread that calls
    /// [`Runtime::block_on`]).
    ///
    /// Default: [`std::thread::available_parallelism`], as tokio's: the CPUs of the process's
    /// affinity mask (`taskset`, `cpuset`), further limited by a cgroup CPU quota (a
    /// Kubernetes `limits.cpu: 2` on a 64-CPU node gives 2 cores, not 64: a core per CPU of
    /// the node would let CFS throttle every core at once), rounded down, and at least 1.
    /// With [`pin`](Self::pin), core `i` runs on the `i`-th CPU of the mask.
    ///
    /// # Sharing the CPUs with a busy process
    ///
    /// A core's connections are read by that core's thread, and, once it has not been through
    /// its loop for [`harvest_after`](Self::harvest_after), by a core that runs: while the
    /// scheduler keeps it off its CPU, their requests wait up to that long. Where another
    /// process needs a CPU of
    /// the mask most of the time (a database, a load generator), fewer cores than CPUs can
    /// serve more. On 2 CPUs shared with a closed-loop load generator that used most of one,
    /// one core served 1.3-1.7x the requests of two, with 0.21-0.28x their p99, and at half
    /// that load (open loop) had 0.50-0.74x their p99; tokio's multi-thread runtime gained
    /// likewise from one worker instead of two (`benches/scripts/tail_probe.py --shared
    /// [--closed] --runtimes tickless,tickless:cores=1,tokio,tokio:cores=1`; figures in
    /// `benches/TAIL.md`, "It is the second core", measured with every core serving).
    /// [`yield_when_crowded`](Self::yield_when_crowded), on by default, makes the cores fewer
    /// by itself while the CPUs stay crowded, and many again once they have room.
    ///
    /// # Panics
    ///
    /// If `n` is zero.
    ///
    /// # Examples
    ///
    /// ```
    /// let rt = tickless::Builder::new().cores(2).build()?;
    /// assert_eq!(rt.cores(), 2);
    /// assert_eq!(rt.handle(1).spawn(async { tickless::core_id() }).join().unwrap(), 1);
    /// # std::io::Result::Ok(())
    /// ```
    pub fn cores(&mut self, n: usize) -> &mut Self {
        assert!(n > 0, "a runtime needs at least one core");
        self.cores = Some(n);
        self
    }

    /// Pins core `i`'s thread to the `i`-th CPU the process may run on (core 0: the thread
    /// that builds the runtime, which gets its old affinity back when the runtime is dropped).
    /// Default `false`. [`build`](Self::build) fails, naming the CPU, if pinning is impossible.
    ///
    /// # Examples
    ///
    /// ```
    /// let rt = tickless::Builder::new().cores(1).pin(true).build()?; // core 0: this thread, pinned
    /// rt.block_on(async { assert_eq!(tickless::core_id(), 0) });
    /// # std::io::Result::Ok(())
    /// ```
    pub fn pin(&mut self, pin: bool) -> &mut Self {
        self.pin = pin;
        self
    }

    /// Where [`tickless::spawn`](crate::spawn) puts new tasks; see [`Placement`]. Default
    /// [`Placement::Spread`]: a task spawned right after an accept goes to the less loaded of
    /// the spawning core and another, so that one accept loop uses every core; every other
    /// spawn stays local.
    ///
    /// ```
    /// use tickless::runtime::{Builder, Placement};
    ///
    /// let rt = Builder::new().cores(2).placement(Placement::Local).build()?;
    /// assert_eq!(rt.block_on(async { tickless::spawn(async { tickless::core_id() }).await })?, 0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn placement(&mut self, placement: Placement) -> &mut Self {
        self.core.placement = placement;
        self
    }

    /// How long runnable `Send` tasks may wait on a core that does not run them before an idle
    /// core takes them (work stealing); `None`: tasks never move that way (core 0's still leave
    /// it when its `block_on` returns, below). Default 250 µs.
    ///
    /// Two cases, both only from a core that cannot run its tasks:
    ///
    /// - **A core that does not come back to its run queue** for this long (a task blocks its
    ///   thread in a synchronous call or a long computation, or the kernel keeps the thread
    ///   off its CPU): an idle core takes *every* runnable `Send` task it has queued, 16 or
    ///   fewer too. The core says when it queues a `Send` task behind another since it last
    ///   went idle (a plain store, and one peer, a parked one first, is told once); an idle
    ///   core then watches its poll count, and takes the tasks if that has not moved for this
    ///   long. A core that keeps up has moved on by then: nothing moves. (A lone task queued
    ///   behind the poll, with nothing else queued since the core went idle, is not
    ///   announced, so that a same-core ping-pong pays nothing: it waits for its core.) The
    ///   owner's own pushes and pops stay free of atomic read-modify-writes and
    ///   fences; the thief pays a `membarrier` system call (Linux 4.14; where the kernel or a
    ///   seccomp filter refuses it, only the second case applies).
    /// - **An overloaded core**: a core queues the runnable `Send` tasks beyond its first 16
    ///   where other cores can reach them, and a core with nothing to do takes half of those,
    ///   oldest first, once they have waited this long without draining.
    ///
    /// Only tasks from [`tickless::spawn`](crate::spawn), [`Handle::spawn`](crate::Handle::spawn)
    /// and [`Handle::spawn_at`](crate::Handle::spawn_at) move, between polls; `spawn_local`
    /// and [`Handle::spawn_pinned`](crate::Handle::spawn_pinned) tasks never do, nor does the
    /// task being polled. A moved task's streams and timers move with it, at its next poll on
    /// its new core. Steals are counted in [`CoreStats::steals`](crate::CoreStats::steals).
    ///
    /// Core 0's `Send` tasks also leave it when its [`block_on`](crate::Runtime::block_on)
    /// returns (no thread runs core 0 until the next one): handed to a core that runs,
    /// whatever this setting.
    ///
    /// A task waiting for its stream on a core that does not run is reached by harvesting
    /// instead (see [`harvest_after`](Self::harvest_after)).
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// let rt = tickless::Builder::new()
    ///     .cores(2)
    ///     .steal_after(Some(Duration::from_millis(1)))
    ///     .build()?;
    /// # drop(rt);
    /// # std::io::Result::Ok(())
    /// ```
    pub fn steal_after(&mut self, age: Option<Duration>) -> &mut Self {
        self.core.steal_after = age;
        self
    }

    /// How long a core may go without coming back to its loop (a task's poll that blocks its
    /// thread, or a thread the kernel keeps off its CPU for another process) before a core
    /// that runs takes its ready I/O: the events waiting in its epoll set are dispatched by
    /// the core that runs, and the `Send` tasks they wake move there, with their streams and
    /// timers (see `docs/thread-per-core.md`, *When a core cannot run*). `spawn_local` and
    /// `spawn_pinned` tasks stay on their core. `None`: never; each core's I/O then waits for
    /// its own thread. Default [`DEFAULT_HARVEST_AFTER`] (500 µs).
    ///
    /// A core looks at its peers where it parks and at its fairness polls; a core that parks
    /// is told of a peer stuck in a long poll by the stall detector's watchdog (see
    /// [`stall_threshold`](Self::stall_threshold)): with the detector off, only cores that run
    /// harvest. Counted in [`CoreStats::harvests`](crate::CoreStats::harvests) and
    /// [`CoreStats::harvested_events`](crate::CoreStats::harvested_events); a runtime whose
    /// cores keep up harvests nothing.
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// let rt = tickless::Builder::new()
    ///     .cores(2)
    ///     .harvest_after(Some(Duration::from_millis(2)))
    ///     .build()?;
    /// # drop(rt);
    /// # std::io::Result::Ok(())
    /// ```
    pub fn harvest_after(&mut self, after: Option<Duration>) -> &mut Self {
        self.core.harvest_after = after;
        self
    }

    /// Serve with fewer cores while another process keeps the runtime's threads waiting for
    /// CPUs, and with all of them again once the CPUs have room (default `true`).
    ///
    /// On CPUs shared with a busy process (a load generator, a database, neighbours on a
    /// virtual machine), a core thread that waits for a CPU holds up its connections, and
    /// two cores on two crowded CPUs can serve less than one. With this on, the stall
    /// detector's watchdog (see [`stall_threshold`](Self::stall_threshold): it does nothing
    /// with the detector off) measures, every 100 ms while a core is busy, how long the core
    /// threads waited for a CPU (the kernel's run-queue wait); above a fifth of the time they
    /// were runnable, the highest core that serves steps back: it takes no new work, its
    /// `Send` tasks move to the others (their streams and timers follow), what its accept loop
    /// accepts is placed on the others, core 0 accepts on its listener of a server on every
    /// core ([`serve_per_core`](crate::net::serve_per_core), `tickless_http::serve`; counted
    /// in [`ServeCounters::adopted`](crate::net::ServeCounters::adopted)), and it keeps only
    /// its `spawn_local` and `spawn_pinned` tasks (the connections it serves already among
    /// them). It serves again once the cores that serve are saturated (busy 80% of the time)
    /// with three quarters of a CPU idle beside them, or once a CPU and a half is idle (the
    /// other process has gone). A step back that costs work (fewer task polls a second, by a
    /// tenth, in the 300 ms after it: a closed-loop client that takes the CPU the core gave up)
    /// is undone at once, and holds the next one off (2 s, doubling up to 64 s). A change
    /// holds at least 1 s, longer (up to 16 s) when changes keep undoing each other. Core 0 never steps back, and a core does not step back while
    /// core 0 runs nothing (no thread in `block_on`); one that did still takes the work of a
    /// core that stops running then. Counted in [`CoreStats::yields`](crate::CoreStats::yields).
    ///
    /// On by default: on 2 CPUs shared with a load generator, stepping back took tickless's
    /// two cores from below tokio's requests per second to above them, at a lower p99
    /// (`compare`'s `latency` group, `cpus=shared`; `benches/README.md`). Turn it off where
    /// every core must keep serving whatever the CPUs do (a test that counts per core).
    ///
    /// ```
    /// let rt = tickless::Builder::new().cores(2).yield_when_crowded(false).build()?;
    /// # drop(rt);
    /// # std::io::Result::Ok(())
    /// ```
    pub fn yield_when_crowded(&mut self, yes: bool) -> &mut Self {
        self.core.yield_when_crowded = yes;
        self
    }

    /// When the timerfd is re-programmed; see [`RearmPolicy`]. Default `Lazy`.
    ///
    /// # Examples
    ///
    /// ```
    /// use tickless::{Builder, RearmPolicy};
    ///
    /// let rt = Builder::new().cores(1).timer_policy(RearmPolicy::Eager).build()?;
    /// rt.block_on(tickless::time::sleep(std::time::Duration::from_micros(10)));
    /// assert!(rt.stats().total.timerfd_rearms >= 1);
    /// # std::io::Result::Ok(())
    /// ```
    pub fn timer_policy(&mut self, policy: RearmPolicy) -> &mut Self {
        self.core.timer.policy = policy;
        self
    }

    /// What each core sleeps on until its next timer; see [`ClockDevice`]. Default
    /// [`ClockDevice::TimerFd`]. With [`ClockDevice::Epoll`] a core re-programs nothing: its
    /// `epoll_pwait2` times out at the deadline, which saves the `timerfd_settime` of each
    /// timer wakeup (`compare`'s `tickless_epoll` contender measures it). A runtime with a
    /// tokio context (`tokio_context`, the default with the feature
    /// `tokio-compat`) uses the timerfd whatever this says: its cores wait in tokio's reactor,
    /// whose timeout is tokio's. Turn the context off for this device there.
    ///
    /// ```
    /// use tickless::{Builder, ClockDevice};
    ///
    /// let rt = Builder::new()
    ///     .cores(1)
    ///     .clock_device(ClockDevice::Epoll)
    ///     .build()?;
    /// rt.block_on(tickless::time::sleep(std::time::Duration::from_micros(100)));
    /// # std::io::Result::Ok(())
    /// ```
    pub fn clock_device(&mut self, device: ClockDevice) -> &mut Self {
        self.core.device = device;
        self
    }

    /// The timer wheel's tick: deadlines round up to it. Default 1 µs. Between 1 ns and
    /// [`MAX_TIMER_RESOLUTION`] (1 s); [`build`](Self::build) rejects anything else.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use tickless::time::{sleep, Instant};
    ///
    /// let rt = tickless::Builder::new()
    ///     .timer_resolution(Duration::from_millis(1)) // a coarse wheel, as tokio's
    ///     .start_paused(true)
    ///     .build()?;
    /// rt.block_on(async {
    ///     let start = Instant::now();
    ///     sleep(Duration::from_micros(1500)).slack(Duration::ZERO).await;
    ///     assert_eq!(start.elapsed(), Duration::from_millis(2)); // rounded up to the tick
    /// });
    /// # std::io::Result::Ok(())
    /// ```
    pub fn timer_resolution(&mut self, resolution: Duration) -> &mut Self {
        self.core.timer.resolution = resolution;
        self
    }

    /// How late a timer (sleep, timeout, interval tick) may fire when it does not say: the
    /// same `slack` for every timer, instead of the default share of its length (see
    /// [`default_slack_growing`](Self::default_slack_growing)). `Duration::ZERO`
    /// makes every such timer exact. Slack lets a core serve many timers with one wakeup. At
    /// most [`MAX_SLACK`] (one hour); [`build`](Self::build) rejects more.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use tickless::time::{sleep, Instant};
    ///
    /// let rt = tickless::Builder::new()
    ///     .default_slack(Duration::ZERO) // every timer exact
    ///     .start_paused(true)
    ///     .build()?;
    /// rt.block_on(async {
    ///     let start = Instant::now();
    ///     sleep(Duration::from_secs(1)).await;
    ///     assert_eq!(start.elapsed(), Duration::from_secs(1));
    /// });
    /// # std::io::Result::Ok(())
    /// ```
    pub fn default_slack(&mut self, slack: Duration) -> &mut Self {
        self.core.default_slack = DefaultSlack::Fixed(if slack.is_zero() {
            Slack::None
        } else {
            Slack::Bounded(slack)
        });
        self
    }

    /// The default: a timer that gives no slack may fire up to `length * length / knee` late,
    /// at most `max`: the share of its length a timer may be late grows with the length, all
    /// of it at `knee`. Its length is the duration given to `sleep` or `timeout`; for
    /// `sleep_until` and a reset, the time from the core's last clock reading (recent: the
    /// loop turn that woke the task; else one clock read) to the deadline. The slack is
    /// rounded down to `max / 2^k`, so that a core's timers have few distinct slacks (the
    /// wheel keeps one lane per slack). A core wakes at the end of the earliest window
    /// (deadline plus slack) and fires every timer due by then, of every slack: the fewest
    /// wakeups that keep each timer within its slack.
    ///
    /// The default is `default_slack_growing(2 ms, 1024 µs)` ([`DEFAULT_SLACK_KNEE`],
    /// [`DEFAULT_SLACK_MAX`]): a 100 µs sleep may be 4 µs late (5% of it, rounded down to
    /// 1,024 µs / 2^8), a 1 ms one 256 µs, anything from 1.43 ms on 1,024 µs, which is about
    /// as late as tokio's millisecond wheel makes every timer. Chosen from the measured
    /// frontier of CPU per timer fire against lateness (`compare`'s timer_churn, drawn in the
    /// README): CPU per fire is mostly wakeups, so what decides it is the share of timers that
    /// may wait about a millisecond to share one; a fixed share of the length (see
    /// [`default_slack_proportional`](Self::default_slack_proportional)) gives the timers of
    /// a few milliseconds narrow windows of their own, and costs wakeups, while short sleeps,
    /// which a wakeup serves alone anyway, keep their precision under either. A timer that
    /// must be exact says so with [`Sleep::slack`](crate::time::Sleep::slack)`(Duration::ZERO)`;
    /// a runtime whose timers must all be exact, with
    /// [`default_slack`](Self::default_slack)`(Duration::ZERO)`.
    ///
    /// # Panics
    ///
    /// If `knee` is zero.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use tickless::time::{sleep, Instant};
    ///
    /// let rt = tickless::Builder::new()
    ///     .default_slack_growing(Duration::from_millis(2), Duration::from_micros(1024)) // the default
    ///     .start_paused(true)
    ///     .build()?;
    /// rt.block_on(async {
    ///     let start = Instant::now();
    ///     sleep(Duration::from_secs(1)).await; // a long timer: the whole cap, 1,024 µs
    ///     assert_eq!(start.elapsed(), Duration::from_secs(1) + Duration::from_micros(1024));
    /// });
    /// # std::io::Result::Ok(())
    /// ```
    pub fn default_slack_growing(&mut self, knee: Duration, max: Duration) -> &mut Self {
        assert!(!knee.is_zero(), "a slack knee of zero");
        self.core.default_slack = DefaultSlack::Growing {
            knee_ns: u64::try_from(knee.as_nanos()).unwrap_or(u64::MAX),
            max_ns: u64::try_from(max.as_nanos()).unwrap_or(u64::MAX),
        };
        self
    }

    /// Instead of the default: a timer that gives no slack may fire up to `1/divisor` of its
    /// length late, at most `max` (its length and the rounding as for
    /// [`default_slack_growing`](Self::default_slack_growing)). `compare` measures it
    /// against the default: the same precision for short sleeps costs more wakeups on
    /// timers of a few milliseconds.
    ///
    /// # Panics
    ///
    /// If `divisor` is zero.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use tickless::time::{sleep, Instant};
    ///
    /// let rt = tickless::Builder::new()
    ///     .default_slack_proportional(16, Duration::from_micros(1024)) // 1/16 of the length
    ///     .start_paused(true)
    ///     .build()?;
    /// rt.block_on(async {
    ///     let start = Instant::now();
    ///     sleep(Duration::from_millis(1)).await; // 62.5 µs of slack, rounded down to 1,024 / 2^5
    ///     assert_eq!(start.elapsed(), Duration::from_micros(1032));
    /// });
    /// # std::io::Result::Ok(())
    /// ```
    pub fn default_slack_proportional(&mut self, divisor: u32, max: Duration) -> &mut Self {
        assert!(divisor > 0, "a slack divisor of zero");
        self.core.default_slack = DefaultSlack::Proportional {
            divisor: u64::from(divisor),
            max_ns: u64::try_from(max.as_nanos()).unwrap_or(u64::MAX),
        };
        self
    }

    /// The most a core programs its clock event device ahead of the end of a timer's window,
    /// to make up for the time the device's wakeup takes to reach it. Default
    /// [`DEFAULT_WAKEUP_LEAD_MAX`] (100 µs); `Duration::ZERO` programs the device for the end
    /// of the window itself. At most [`MAX_WAKEUP_LEAD`] (10 ms); [`build`](Self::build)
    /// rejects more.
    ///
    /// A parked core does not run at the instant its device fires: the kernel's timer, a
    /// hypervisor's delivery of it, the scheduler and the return from `epoll_wait` come first
    /// (30 to 50 µs on the virtual machine the README's figures come from, a few µs on bare
    /// metal), so a core that sleeps until the end of a window fires its timers that much
    /// past it. Each core measures how late its device's wakeups reach it and keeps a running
    /// 95th percentile of that ([`tickless_timer::internal::Lead`]), the *lead*, capped here; it programs
    /// the device that far ahead of the end of the earliest window. A wakeup that comes before
    /// any timer is due (a timer whose slack is smaller than the lead, typically) is early:
    /// the core waits awake, watching the clock and its inbox (not I/O), until the first
    /// deadline, then fires it (`CoreStats::timer_early`, `lead_spins`). So a timer fires
    /// within its window even on a slow-waking machine, never before its deadline, and the
    /// price is at most the lead of spinning per early wakeup; a timer whose window is wider
    /// than the lead costs no spinning (it is due when the wakeup comes). KVM leads its
    /// guests' timers the same way (`lapic_timer_advance_ns`). `CoreStats::wakeup_lead_ns`
    /// says what a core learned.
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// let rt = tickless::Builder::new()
    ///     .cores(1)
    ///     .wakeup_lead_max(Duration::ZERO) // never spin to a timer
    ///     .build()?;
    /// rt.block_on(tickless::time::sleep(Duration::from_micros(100)));
    /// assert_eq!(rt.stats().total.lead_spins, 0);
    /// # std::io::Result::Ok(())
    /// ```
    pub fn wakeup_lead_max(&mut self, max: Duration) -> &mut Self {
        self.core.timer.lead_max = max;
        self
    }

    /// A fixed spin window in place of the idle governor's learned one: on going idle, poll
    /// I/O without blocking for up to `window` before parking; when the core's next timer is
    /// closer than `window`, spin until it instead of parking (the device is armed first, as
    /// for a park). Default zero: the governor decides (see
    /// [`idle_governor`](Self::idle_governor)). A fixed window
    /// burns CPU whenever nothing comes within it, and on threads that are not pinned it can
    /// delay the wakeup it waits for; prefer the governor unless measurements say otherwise.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// let rt = tickless::Builder::new()
    ///     .cores(2)
    ///     .pin(true)
    ///     .spin_before_park(Duration::from_micros(50))
    ///     .build()?;
    /// let answer = rt.handle(1).spawn(async { 42 });
    /// assert_eq!(rt.block_on(answer).unwrap(), 42);
    /// # std::io::Result::Ok(())
    /// ```
    pub fn spin_before_park(&mut self, window: Duration) -> &mut Self {
        self.core.spin = window;
        self
    }

    /// Whether the idle governor runs (default `true`): each core learns from its own idle
    /// transitions whether a short spin before parking catches its next wakeup (a cross-core
    /// message, I/O, a timer), and spins only then, for a window of 10 µs doubling up to 50 µs
    /// on pinned threads. An idle core never spins; a core whose spins catch nothing, or whose
    /// wakeups come late, stops; so, for a growing while, does a core whose thread is not
    /// pinned and that finds another core of the runtime on its CPU (a spin there holds off
    /// the other core). No spin goes toward a timer whose slack covers a park's wakeup (20 µs,
    /// or the learned wakeup lead): the core parks with its device armed for the end of the
    /// timer's window instead (`CoreStats::slack_parks`; a fixed
    /// [`spin_before_park`](Self::spin_before_park) window does the same). The rules, and the
    /// measurements behind their constants, are in the
    /// `worker/governor.rs` module's documentation; `CoreStats::governor_spins`,
    /// `governor_caught`, `governor_crowded`, `governor_spun_us` and `governor_window_ns`
    /// count what it decided.
    /// `false`: park at once, always (unless [`spin_before_park`](Self::spin_before_park) sets
    /// a fixed window).
    ///
    /// # The tail on a shared host
    ///
    /// A core whose spins keep catching its I/O never halts its CPU while it has a few
    /// requests a millisecond. Some hosts take a virtual machine's vCPUs from it in turns
    /// once all of them want to run: on the 2-vCPU VM of the figures, 150 ms a minute on each
    /// with both CPUs busy, none with one of them idle a quarter of the time
    /// (`benches/scripts/steal_probe.py`). There, it can cost the tail. An HTTP server at
    /// 75% of tokio's maximum (one core on a CPU of its own, the load generator on the other;
    /// runs of 2 s, `benches/scripts/tail_probe.py --summarize benches/results/tail_probe.txt
    /// --pool`) had its median at 0.66x tokio's and its p99 at 1.46x (90% interval
    /// 1.08-1.96x, 78 runs) on one day, its CPU taken by the host (`steal` in `/proc/stat`)
    /// 2.2 times as long as with the governor off (0.95x and 0.94x); on the next, 0.69x and
    /// 0.94x (0.83-1.07x, 64 runs), with as much steal. Where p99 matters more than the
    /// median and every vCPU of the guest is busy at times, measure with
    /// `idle_governor(false)`, or with [`park_when_busy`](Self::park_when_busy), which keeps
    /// the spins below 70% load and halves the steal above it.
    ///
    /// # Examples
    ///
    /// ```
    /// let rt = tickless::Builder::new().cores(1).idle_governor(false).build()?;
    /// rt.block_on(tickless::time::sleep(std::time::Duration::from_micros(100)));
    /// assert_eq!(rt.stats().total.governor_spins, 0);
    /// # std::io::Result::Ok(())
    /// ```
    pub fn idle_governor(&mut self, on: bool) -> &mut Self {
        self.core.governor = on;
        self
    }

    /// Whether a busy core parks instead of spinning (default `false`). With `true`, once a
    /// core's work has filled over 70% of its last 10 ms, the idle governor's spins stop at
    /// their first look (a poll of I/O and the inbox that waits for nothing), and the core
    /// parks if that finds nothing, until a period of under 60% work; below that load the
    /// governor spins as it learnt to. `CoreStats::governor_busy_looks` counts the spins cut.
    /// No effect without the governor.
    ///
    /// What it is for: a core whose spins keep catching its I/O never halts its CPU, and some
    /// hosts take a virtual machine's vCPUs from it once all of them want to run (see
    /// [`idle_governor`](Self::idle_governor)'s *The tail on a shared host*), or bill the
    /// guest for the CPU it uses. A busy core that parks gives its idle time back. What it
    /// cost and bought, measured on the 2-vCPU VM of the figures (one core on CPU 0, the load
    /// generator on CPU 1, 75% of tokio's maximum, runs of 2 s taking turns with the default,
    /// the governor off and tokio; `benches/scripts/tail_probe.py --summarize
    /// benches/results/tail_probe.txt --pool`, label `busy_rule`):
    ///
    /// | | HTTP, 64 runs | key-value server, 48 runs |
    /// |---|---|---|
    /// | the server's CPU, this / the default | 0.88x | 0.89x |
    /// | the host's steal of the server's CPU | 200 against 460 ms | 230 against 560 ms |
    /// | p50, against tokio's | 0.87x (default 0.69x) | 1.04x (default 0.65x) |
    /// | p99, against tokio's | 1.01x (default 0.94x) | 1.29x (default 1.01x) |
    ///
    /// The steal halved, to the governor off's and tokio's, but on that day the tail did
    /// not follow it, and the median lost most of what the spins buy: so it is not the
    /// default. Measure it where CPU time is billed or the host is crowded.
    ///
    /// # Examples
    ///
    /// ```
    /// let rt = tickless::Builder::new().cores(1).park_when_busy(true).build()?;
    /// assert_eq!(rt.block_on(async { 1 + 1 }), 2);
    /// assert_eq!(rt.stats().total.governor_busy_looks, 0);
    /// # std::io::Result::Ok(())
    /// ```
    pub fn park_when_busy(&mut self, on: bool) -> &mut Self {
        self.core.park_when_busy = on;
        self
    }

    /// For experiments only: wake a sleeping core on every hand-over from another thread,
    /// whatever its deadline, instead of only when the hand-over shortens the core's sleep. This
    /// is the baseline the sleep-word rule saves wakeups against (see the `nohz_kick` example).
    /// It also turns off the one-wakeup remote shrink (a timer that shortens a sleeping core's
    /// sleep programs that core's timerfd from the handing thread instead of waking it): every
    /// such hand-over wakes the core, which re-arms and wakes again at the deadline.
    /// Default `false`.
    ///
    /// # Examples
    ///
    /// ```
    /// let rt = tickless::Builder::new().cores(2).always_wake_remote(true).build()?;
    /// assert_eq!(rt.handle(1).spawn(async { 1 }).join().unwrap(), 1);
    /// # std::io::Result::Ok(())
    /// ```
    pub fn always_wake_remote(&mut self, always: bool) -> &mut Self {
        self.core.always_wake = always;
        self
    }

    /// Starts with time paused, as tokio's `start_paused`: the clock moves only through
    /// [`time::advance`](crate::time::advance), or by itself to the next timer when every task
    /// waits, no I/O is ready and the blocking pool has no work in flight (see
    /// [`time::pause`](crate::time::pause)). Timers then fire in deadline order with no real
    /// sleeping. Each core has its own paused clock.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use tickless::time::{sleep, Instant};
    ///
    /// let rt = tickless::Builder::new().start_paused(true).build()?;
    /// rt.block_on(async {
    ///     let start = Instant::now();
    ///     sleep(Duration::from_secs(3600)).slack(Duration::ZERO).await; // no real hour passes
    ///     assert_eq!(start.elapsed(), Duration::from_secs(3600));
    /// });
    /// # std::io::Result::Ok(())
    /// ```
    pub fn start_paused(&mut self, paused: bool) -> &mut Self {
        self.core.paused = paused;
        self
    }

    /// The most threads the blocking pool runs at once (for
    /// [`spawn_blocking`](crate::task::spawn_blocking), `tickless::fs` and name lookups); more
    /// jobs wait in its queue. Threads start on demand. Default 512, as tokio's.
    ///
    /// # Panics
    ///
    /// If `n` is zero.
    ///
    /// # Examples
    ///
    /// ```
    /// let rt = tickless::Builder::new().max_blocking_threads(4).build()?;
    /// let sum = rt.block_on(async {
    ///     let jobs: Vec<_> = (0..8).map(|i| tickless::task::spawn_blocking(move || i)).collect();
    ///     let mut sum = 0;
    ///     for job in jobs {
    ///         sum += job.await.unwrap(); // at most 4 run at once; the rest wait their turn
    ///     }
    ///     sum
    /// });
    /// assert_eq!(sum, 28);
    /// # std::io::Result::Ok(())
    /// ```
    pub fn max_blocking_threads(&mut self, n: usize) -> &mut Self {
        assert!(n > 0, "the blocking pool needs at least one thread");
        self.max_blocking_threads = n;
        self
    }

    /// How long an idle blocking thread waits for work before it exits. Default 10 s, as
    /// tokio's.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// let rt = tickless::Builder::new().thread_keep_alive(Duration::from_secs(1)).build()?;
    /// let n = rt.block_on(async { tickless::task::spawn_blocking(|| 7).await });
    /// assert_eq!(n.unwrap(), 7);
    /// # std::io::Result::Ok(())
    /// ```
    pub fn thread_keep_alive(&mut self, keep_alive: Duration) -> &mut Self {
        self.blocking_keep_alive = keep_alive;
        self
    }

    /// Gives every core a tokio context (feature `tokio-compat`; default `true` where the
    /// feature is on, so that `Runtime::new`, `#[tickless::main]` and `#[tickless::test]` have
    /// it): a tokio current-thread runtime of the core's own, driven by the core's thread, so
    /// that libraries written for tokio, which call `tokio::spawn`, `tokio::time` or
    /// `tokio::net` inside (sqlx, reqwest, tonic, redis), work from tickless tasks, and run on
    /// the core that called them. `tokio_context(false)` (`#[tickless::test(tokio_context =
    /// false)]`) turns it off: a runtime that needs no tokio library then has no tokio runtime
    /// per core, no stand-in thread for core 0, and its cores wait in their own `epoll_wait`
    /// (with the clock device [`clock_device`](Self::clock_device) chooses).
    ///
    /// # How it runs
    ///
    /// Each core enters its tokio runtime's handle while it runs, and parks inside that
    /// runtime: where the core would wait in `epoll_wait`, tokio waits instead, on its own
    /// sockets, its timers and the core's epoll descriptor. So a `tokio::spawn`ed task runs on
    /// the core's thread when the core goes idle (and at each of the core's fairness polls of
    /// I/O while it stays busy, every 61 task polls), a `tokio::net` socket's readiness wakes
    /// the task that waits for it on that thread, and a `tokio::time::sleep` is a timer of
    /// that runtime. Nothing crosses threads that the library did not send across itself.
    ///
    /// Core 0 runs only inside [`Runtime::block_on`]; while no thread is in it, a thread of the
    /// runtime's runs core 0 instead, its tokio runtime with it, so that what was started
    /// there (a pooled connection's task, a sqlx pool's maintenance, axum's `on_upgrade`
    /// task over a tickless stream, with its tickless timers) keeps going; the next
    /// `block_on` takes core 0 back. (While a `spawn_local` task of core 0 lives, or its clock
    /// is paused, that thread drives core 0's tokio runtime alone: tickless streams and
    /// timers used by core 0's tokio tasks then wait for the next `block_on`.)
    ///
    /// # Costs and differences from tokio
    ///
    /// - A `tokio::time` timer has tokio's millisecond resolution; a `tokio::net` socket is
    ///   registered with the tokio runtime of the core that created it, which keeps serving it
    ///   if a task on another core uses it (a wake across threads, as any). Use tickless's own
    ///   `time` and `net` on the hot path, and the tokio context for the libraries that need
    ///   it.
    /// - The core's clock device is its timerfd whatever [`clock_device`](Self::clock_device)
    ///   says (tokio, not the core, decides the timeout of the wait).
    /// - A `tokio::spawn` from a tickless task writes tokio's eventfd (tokio's scheduler is not
    ///   running there), so that its task runs at the core's next idle wait or fairness poll;
    ///   one from a tokio task does not.
    /// - As on tokio's current-thread runtime, `tokio::task::block_in_place` panics inside a
    ///   `tokio::spawn`ed task (a tickless task may call it), and a tickless runtime with a
    ///   tokio context cannot run inside a tokio runtime's `block_on`.
    /// - Each core holds a tokio runtime (its epoll instance, eventfd, timer wheel), and once
    ///   `block_on` has returned, one thread more runs core 0. An idle core still sleeps
    ///   with no wakeup (tokio's wait has no timeout while it has no timer).
    /// - A `spawn_local` task started on core 0 while that thread runs it (by a task there,
    ///   `Handle::spawn_pinned` onto core 0, `tickless_http::on_core` for a request core 0
    ///   serves) belongs to that thread: while it lives, `block_on` panics as on any thread
    ///   other than the one a `spawn_local` task of core 0 belongs to. Keep a `block_on`
    ///   running (`#[tickless::main]` does), or turn the context off.
    ///
    /// # Examples
    ///
    /// ```
    /// // The default with the `tokio-compat` feature: `.tokio_context(true)` says it.
    /// let rt = tickless::Builder::new().cores(1).build()?;
    /// let n = rt.block_on(async {
    ///     tokio::time::sleep(std::time::Duration::from_millis(1)).await; // tokio's timer
    ///     let on = std::thread::current().id();
    ///     // A tokio task, run by core 0's own tokio runtime, on core 0's thread.
    ///     tokio::spawn(async move { assert_eq!(std::thread::current().id(), on); 7 }).await
    /// });
    /// assert_eq!(n.unwrap(), 7);
    /// # std::io::Result::Ok(())
    /// ```
    #[cfg(feature = "tokio-compat")]
    pub fn tokio_context(&mut self, enabled: bool) -> &mut Self {
        self.core.tokio = enabled.then_some(crate::worker::idle::TOKIO_PARK_HOOKS);
        self
    }

    /// Checks the settings that can be wrong.
    fn validate(&self) -> io::Result<()> {
        let invalid = |msg: String| Err(io::Error::new(io::ErrorKind::InvalidInput, msg));
        let resolution = self.core.timer.resolution;
        if resolution.is_zero() || resolution > MAX_TIMER_RESOLUTION {
            return invalid(format!(
                "timer resolution {resolution:?} is out of range: it must be between 1 ns and \
                 {MAX_TIMER_RESOLUTION:?}"
            ));
        }
        let largest = match self.core.default_slack {
            DefaultSlack::Fixed(Slack::Bounded(slack)) => Some(slack),
            DefaultSlack::Proportional { max_ns, .. } | DefaultSlack::Growing { max_ns, .. } => {
                Some(Duration::from_nanos(max_ns))
            }
            DefaultSlack::Fixed(_) => None,
        };
        if let Some(t) = self.observers.stall_threshold {
            if t < MIN_STALL_THRESHOLD {
                return invalid(format!(
                    "stall threshold {t:?} is less than {MIN_STALL_THRESHOLD:?}"
                ));
            }
        }
        let lead = self.core.timer.lead_max;
        if lead > MAX_WAKEUP_LEAD {
            return invalid(format!(
                "wakeup lead cap {lead:?} is more than {MAX_WAKEUP_LEAD:?}"
            ));
        }
        if let Some(slack) = largest {
            if slack > MAX_SLACK {
                return invalid(format!(
                    "default slack {slack:?} is more than the largest a timer may have, \
                     {MAX_SLACK:?}"
                ));
            }
        }
        Ok(())
    }

    /// Creates the runtime: core 0 on this thread, the others on threads of their own.
    ///
    /// # Errors
    ///
    /// A setting is out of range (kind `InvalidInput`, the message says which: a timer
    /// resolution of zero or above [`MAX_TIMER_RESOLUTION`], a default slack above
    /// [`MAX_SLACK`], a wakeup lead cap above [`MAX_WAKEUP_LEAD`], a stall threshold under
    /// [`MIN_STALL_THRESHOLD`](crate::runtime::MIN_STALL_THRESHOLD)); creating a core's epoll
    /// instance, timerfd or eventfd failed (typically `EMFILE`); a thread could not be spawned;
    /// or pinning was asked for and is impossible (the error names the CPU).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// let rt = tickless::Builder::new().cores(1).build()?;
    /// assert_eq!(rt.block_on(async { 6 * 7 }), 42);
    ///
    /// // A setting out of range is an error, not a panic.
    /// let err = tickless::Builder::new().timer_resolution(Duration::ZERO).build().unwrap_err();
    /// assert_eq!(err.kind(), std::io::ErrorKind::InvalidInput);
    /// # std::io::Result::Ok(())
    /// ```
    pub fn build(&mut self) -> io::Result<Runtime> {
        self.validate()?;
        let allowed = tickless_io::internal::cpu::allowed_cpus()?;
        let n = self.cores.unwrap_or_else(|| default_cores(allowed.len()));
        let cpus: Vec<Option<usize>> = (0..n)
            .map(|i| self.pin.then(|| allowed.get(i).copied()).flatten())
            .collect();
        if self.pin {
            if let Some(i) = cpus.iter().position(Option::is_none) {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!(
                        "cannot pin core {i}: the process may run on {} CPUs ({allowed:?})",
                        allowed.len()
                    ),
                ));
            }
        }
        let threshold = self.observers.stall_threshold;
        let runtime = CoreId::new_runtime();
        let mut config = self.core;
        config.pinned = self.pin;
        if config.tokio.is_some() {
            // tokio's wait, not the core's, has the timeout: the core's timers need their fd.
            config.device = ClockDevice::TimerFd;
        }
        if n < 2 {
            // Nobody to steal: a core alone never spills its runnable tasks.
            config.steal_after = None;
        } else if config.steal_after.is_some() {
            // Registered now, not at a thief's first look (the registration may wait for a
            // grace period); without it, run queues are not stolen from (`worker::runq`).
            crate::worker::runq::heavy_barrier_available();
        }
        // Core 0 is the calling thread: pin it for the runtime's life, and give it its old
        // affinity back when the runtime is dropped.
        let restore_affinity = match cpus[0] {
            Some(cpu) => {
                let saved = allowed.clone();
                tickless_io::internal::cpu::pin_current_thread(cpu)?;
                Some(saved)
            }
            None => None,
        };
        let blocking = BlockingPool::new(self.max_blocking_threads, self.blocking_keep_alive);
        let peers = std::sync::Arc::new(Peers::default());
        let siblings = Siblings {
            blocking: blocking.clone(),
            peers: peers.clone(),
            hooks: self.observers.task_hooks(),
            kennel: threshold.map(|_| std::sync::Arc::new(Kennel::default())),
        };
        let core0 = Core::new(CoreId { runtime, index: 0 }, config, siblings.clone())?;
        let (done_tx, done_rx) = mpsc::channel();
        let mut rt =
            Runtime::new_parts(core0, cpus[0], blocking.clone(), done_rx, restore_affinity);
        for (index, cpu) in cpus.iter().enumerate().skip(1) {
            let (tx, rx) = mpsc::sync_channel(1);
            let done = done_tx.clone();
            let cpu = *cpu;
            let siblings = siblings.clone();
            let id = CoreId { runtime, index };
            let thread = thread::Builder::new()
                .name(format!("tickless-core-{index}"))
                .spawn(move || core_thread(id, config, siblings, cpu, tx, done))?;
            let started = rx.recv().unwrap_or_else(|_| {
                Err(io::Error::other(format!(
                    "core {index}'s thread died while starting"
                )))
            });
            // On an error, dropping `rt` stops and joins the cores started so far.
            rt.add_core(started?, thread);
        }
        // Every core runs: placement may use them all.
        peers.set(rt.shared.clone().into_boxed_slice());
        if let (Some(threshold), Some(kennel)) = (threshold, siblings.kennel) {
            let hook = self.observers.stall_hook();
            let cores = rt.shared.clone();
            let duties = Duties {
                harvest: self.core.harvest_after.is_some(),
                // One core has no other to leave its work to: nothing to read.
                yield_when_crowded: self.core.yield_when_crowded && n > 1,
            };
            rt.watchdog = Some(Watchdog::start(
                cores, kennel, threshold, hook, allowed, duties,
            )?);
        }
        Ok(rt)
    }
}

/// The default core count: `available_parallelism` (the affinity mask and the cgroup CPU
/// quota), or, if it cannot tell, the CPUs of the mask (`mask`); at least 1.
fn default_cores(mask: usize) -> usize {
    std::thread::available_parallelism()
        .map_or(mask, |n| n.get())
        .max(1)
}

// The default build, here beside `Builder::build`: the runtime's module is below its builder,
// which names `Runtime`, and does not name `Builder` back.
impl Runtime {
    /// A runtime with the default [`Builder`] settings.
    ///
    /// # Errors
    ///
    /// As [`Builder::build`].
    ///
    /// # Examples
    ///
    /// ```
    /// let rt = tickless::Runtime::new()?; // one core per CPU the process may use
    /// let answer = rt.block_on(async { tickless::spawn(async { 6 * 7 }).await });
    /// assert_eq!(answer.unwrap(), 42);
    /// # std::io::Result::Ok(())
    /// ```
    pub fn new() -> io::Result<Runtime> {
        Builder::new().build()
    }
}

/// The tokio context is on by default where the `tokio-compat` feature is (see
/// [`Builder::tokio_context`]): a renamed `#[tokio::test]` runs code that needs one.
#[cfg(feature = "tokio-compat")]
const DEFAULT_TOKIO_CONTEXT: Option<crate::worker::tokio_context::ParkHooks> =
    Some(crate::worker::idle::TOKIO_PARK_HOOKS);
/// Without the `tokio-compat` feature there is no tokio context.
#[cfg(not(feature = "tokio-compat"))]
const DEFAULT_TOKIO_CONTEXT: Option<crate::worker::tokio_context::ParkHooks> = None;
