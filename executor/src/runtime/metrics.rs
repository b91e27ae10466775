//! `RuntimeMetrics`: what the cores did, by tokio's names (`tokio::runtime::RuntimeMetrics`),
//! readable from any thread; plus, under names in the same style, what only tickless has.

use std::fmt;
use std::ops::Range;
use std::sync::Arc;
use std::time::Duration;

use crate::blocking::BlockingPool;
use crate::context::with_current;
use crate::histogram::Histogram;
use crate::stats::CoreStats;
use crate::worker::loop_watch::LoopHistograms;
use crate::worker::shared::Peers;
use crate::worker::shared::Shared;

/// A runtime's metrics, as tokio's [`RuntimeMetrics`]: the same method names with the same
/// meanings, a core standing for a worker (`worker` is the core's index, `0..num_workers()`).
/// From [`Runtime::metrics`](crate::Runtime::metrics) or
/// [`Handle::metrics`](crate::Handle::metrics); `Clone`, `Send` and `Sync`, cheap to keep.
///
/// # How fresh
///
/// A core counts on its own thread, in plain cells, and publishes its counters for other
/// threads when it goes idle (before every park) and when its loop ends (core 0's at the end
/// of each `block_on`); nothing is published per poll. So a value read on another thread is
/// exact as of the core's last publish: a core that parks is exact while it sleeps, and one
/// that keeps busy shows what it did up to its last idle transition. Read on a core's own
/// thread (from one of its tasks, or inside `block_on` for core 0), that core's values are
/// exact now. Except for that bound, these never go back: each publish is of counters that
/// only grow (gauges aside). The remote-wake counters, [`num_alive_tasks`], the blocking
/// pool's counts and the histograms (poll times, timer lateness, the loop's) are live from
/// any thread:
/// a core counts them where other threads read them (one writer, no read-modify-write).
///
/// # Examples
///
/// ```
/// let rt = tickless::Builder::new().cores(2).build()?;
/// let metrics = rt.metrics();
/// assert_eq!(metrics.num_workers(), 2);
/// // Read on core 1's own thread, core 1's values are exact now.
/// let on_core_1 = metrics.clone();
/// let task = rt.handle(1).spawn(async move { on_core_1.worker_poll_count(1) });
/// assert!(task.join().unwrap() >= 1); // this task's poll, at least
/// println!("{} tasks alive", metrics.num_alive_tasks()); // live from any thread
/// // From this thread, as of each core's last publish.
/// for worker in 0..metrics.num_workers() {
///     println!(
///         "core {worker}: {} polls, {} parks, {:?} busy",
///         metrics.worker_poll_count(worker),
///         metrics.worker_park_count(worker),
///         metrics.worker_total_busy_duration(worker),
///     );
/// }
/// # std::io::Result::Ok(())
/// ```
///
/// [`RuntimeMetrics`]: https://docs.rs/tokio/latest/tokio/runtime/struct.RuntimeMetrics.html
/// [`num_alive_tasks`]: Self::num_alive_tasks
#[derive(Clone)]
pub struct RuntimeMetrics {
    /// Every core of the runtime.
    peers: Arc<Peers>,
    /// The runtime's blocking pool.
    blocking: Arc<BlockingPool>,
}

impl fmt::Debug for RuntimeMetrics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RuntimeMetrics")
            .field("num_workers", &self.num_workers())
            .finish_non_exhaustive()
    }
}

impl RuntimeMetrics {
    /// The metrics of the runtime whose cores are `peers`.
    pub(crate) fn new(peers: Arc<Peers>, blocking: Arc<BlockingPool>) -> RuntimeMetrics {
        RuntimeMetrics { peers, blocking }
    }

    /// Every core's shared half, by index.
    fn cores(&self) -> &[Arc<Shared>] {
        self.peers.all().unwrap_or(&[])
    }

    /// Core `worker`'s shared half.
    fn core(&self, worker: usize) -> &Arc<Shared> {
        let cores = self.cores();
        cores.get(worker).unwrap_or_else(|| {
            panic!(
                "no worker {worker}: the runtime has {} cores (workers)",
                cores.len()
            )
        })
    }

    /// Every counter of core `worker` at once (see [How fresh](Self#how-fresh)): one read for
    /// a report, and the counters the methods below do not name.
    ///
    /// # Panics
    ///
    /// If there is no such core, as every `worker_` method.
    pub fn worker_stats(&self, worker: usize) -> CoreStats {
        let shared = self.core(worker);
        with_current(|core| (core.id() == shared.id).then(|| core.stats()))
            .flatten()
            .unwrap_or_else(|| shared.stats())
    }

    /// The sum of `f` over every core.
    fn total(&self, f: impl Fn(&CoreStats) -> u64) -> u64 {
        (0..self.num_workers())
            .map(|w| f(&self.worker_stats(w)))
            .sum()
    }

    /// The number of cores (tokio: worker threads). Core 0 counts, although it runs on the
    /// thread in `block_on` rather than on a thread of its own.
    pub fn num_workers(&self) -> usize {
        self.cores().len()
    }

    /// Tasks alive now: spawned and not yet finished (their future not yet dropped), on every
    /// core, whether they have been polled yet or not. Live from any thread. A task counts
    /// until its core has dropped its future, which may be a moment after its `JoinHandle`
    /// resolved.
    pub fn num_alive_tasks(&self) -> usize {
        self.cores().iter().map(|c| c.load()).sum()
    }

    /// Always 0: tickless has no global queue. What another thread hands a core (a spawn, a
    /// wake) goes to that core's own inbox, which the core takes in whole at its next turn.
    pub fn global_queue_depth(&self) -> usize {
        0
    }

    /// Times core `worker` has parked (blocked in epoll with nothing to run), the park it is
    /// in now included.
    pub fn worker_park_count(&self, worker: usize) -> u64 {
        self.worker_stats(worker).parks + self.parked_now(worker)
    }

    /// Parks and unparks of core `worker`: odd while it is parked, even while it runs, as
    /// tokio's.
    pub fn worker_park_unpark_count(&self, worker: usize) -> u64 {
        2 * self.worker_stats(worker).parks + self.parked_now(worker)
    }

    /// 1 if the core is in a park its published count does not hold yet (it publishes just
    /// before it parks).
    fn parked_now(&self, worker: usize) -> u64 {
        u64::from(self.core(worker).is_parked())
    }

    /// The time core `worker` was not idle (idle: parked, or in an idle spin of the governor
    /// that caught nothing and ended in a park), up to its last idle transition. Taken from
    /// the clock readings the core makes when it goes idle and when it wakes (the idle
    /// governor, on by default, makes them anyway; without it, each park takes two readings
    /// for this): exact to those readings. Spins that caught work count as busy, as does time
    /// in a task that blocks the thread. Core 0 counts only inside `block_on`. On paused time
    /// (`time::pause`) nothing is counted.
    pub fn worker_total_busy_duration(&self, worker: usize) -> Duration {
        Duration::from_nanos(self.worker_stats(worker).busy_ns)
    }

    /// Task polls on core `worker` (the `block_on` future's included, on core 0).
    pub fn worker_poll_count(&self, worker: usize) -> u64 {
        self.worker_stats(worker).polls
    }

    /// Tasks core `worker` queued to run from its own thread: woken or spawned there, or
    /// started by its timers.
    pub fn worker_local_schedule_count(&self, worker: usize) -> u64 {
        self.worker_stats(worker).local_schedules
    }

    /// Tasks handed to the cores from other threads to run (woken or spawned outside the core
    /// that runs them), on every core.
    pub fn remote_schedule_count(&self) -> u64 {
        self.total(|s| s.remote_schedules)
    }

    /// Tasks queued to run on core `worker`, as of its last publish (0 when it last parked:
    /// a core parks only with nothing queued).
    pub fn worker_local_queue_depth(&self, worker: usize) -> usize {
        self.worker_stats(worker).local_queue_depth as usize
    }

    /// [`worker_total_busy_duration`](Self::worker_total_busy_duration) over
    /// [`worker_poll_count`](Self::worker_poll_count): an upper bound of the mean poll time,
    /// since the busy time also holds the loop's own work (timers, I/O, hand-overs) between
    /// polls. tickless times no single poll: a clock reading around each would cost every
    /// poll, metrics read or not.
    pub fn worker_mean_poll_time(&self, worker: usize) -> Duration {
        let s = self.worker_stats(worker);
        Duration::from_nanos(s.busy_ns.checked_div(s.polls).unwrap_or(0))
    }

    /// Always 0: tickless has no per-task cooperative budget (the loop turns to I/O and
    /// timers after a budget of polls, without making any task yield).
    pub fn budget_forced_yield_count(&self) -> u64 {
        0
    }

    /// Tasks spawned so far that have started (been polled once), on every core. A task is
    /// counted at its first poll, not at its spawn as tokio counts it.
    pub fn spawned_tasks_count(&self) -> u64 {
        self.total(|s| s.tasks_started)
    }

    /// Times core `worker` took another core's ready I/O because that core had not come back
    /// to its loop for [`Builder::harvest_after`](crate::Builder::harvest_after)
    /// (`CoreStats::harvests`; tickless only).
    pub fn worker_harvests(&self, worker: usize) -> u64 {
        self.worker_stats(worker).harvests
    }

    /// Events of other cores' registrations core `worker`'s harvests dispatched
    /// (`CoreStats::harvested_events`; tickless only).
    pub fn worker_harvested_events(&self, worker: usize) -> u64 {
        self.worker_stats(worker).harvested_events
    }

    /// Tasks core `worker` took from other cores (work stealing).
    pub fn worker_steal_count(&self, worker: usize) -> u64 {
        self.worker_stats(worker).steals
    }

    /// Times core `worker` woke from a park and found nothing to do before parking again, as
    /// far as it can tell: its clock event device's expirations that found no timer due (a
    /// lower bound of tokio's count).
    pub fn worker_noop_count(&self, worker: usize) -> u64 {
        self.worker_stats(worker).device_spurious
    }

    /// Always 0. A core keeps its first 16 runnable tasks in its run queue and queues the rest
    /// where other cores can take them, with no bound, so nothing overflows in tokio's sense; the
    /// tasks queued that way are [`CoreStats::tasks_spilled`](crate::CoreStats::tasks_spilled).
    pub fn worker_overflow_count(&self, worker: usize) -> u64 {
        self.core(worker);
        0
    }

    /// Threads of the blocking pool alive now. Live.
    pub fn num_blocking_threads(&self) -> usize {
        self.blocking.counts().0
    }

    /// Of those, the idle ones. Live.
    pub fn num_idle_blocking_threads(&self) -> usize {
        self.blocking.counts().1
    }

    /// Blocking jobs queued and not yet taken by a thread. Live.
    pub fn blocking_queue_depth(&self) -> usize {
        self.blocking.queued()
    }

    /// Descriptors registered with the cores' reactors so far (an I/O object registers with
    /// the core that polls it, and again with another if it moves there or is polled there
    /// too).
    pub fn io_driver_fd_registered_count(&self) -> u64 {
        self.total(|s| s.io_registered)
    }

    /// Descriptors that left the cores' reactors so far.
    pub fn io_driver_fd_deregistered_count(&self) -> u64 {
        self.total(|s| s.io_registered.saturating_sub(s.io_registrations))
    }

    /// Events the cores' epoll waits returned (the timerfd's and the eventfd's included).
    pub fn io_driver_ready_count(&self) -> u64 {
        self.total(|s| s.io_events)
    }

    /// Timers that fired on core `worker`.
    pub fn worker_timer_fires(&self, worker: usize) -> u64 {
        self.worker_stats(worker).timer_fires
    }

    /// Re-programmings of core `worker`'s timerfd.
    pub fn worker_timerfd_rearms(&self, worker: usize) -> u64 {
        self.worker_stats(worker).timerfd_rearms
    }

    /// Timers other threads handed core `worker` that programmed its timerfd from there,
    /// instead of waking it.
    pub fn worker_remote_arms(&self, worker: usize) -> u64 {
        self.worker_stats(worker).remote_arms
    }

    /// Timers pending on core `worker` (due ones not yet fired included).
    pub fn worker_pending_timers(&self, worker: usize) -> usize {
        self.worker_stats(worker).pending_timers as usize
    }

    /// Idle spins core `worker`'s idle governor started.
    pub fn worker_governor_spins(&self, worker: usize) -> u64 {
        self.worker_stats(worker).governor_spins
    }

    /// Of those, the spins that caught work before their window ended.
    pub fn worker_governor_caught(&self, worker: usize) -> u64 {
        self.worker_stats(worker).governor_caught
    }

    /// Of core `worker`'s governor spins, those that ran on a CPU where another core of the
    /// runtime last woke (threads not pinned: the kernel put two cores on one CPU), caught or
    /// not; each stopped the core's spins for a cool-down (see
    /// [`Builder::idle_governor`](crate::Builder::idle_governor)). Zero on a pinned runtime.
    pub fn worker_governor_crowded(&self, worker: usize) -> u64 {
        self.worker_stats(worker).governor_crowded
    }

    /// Of core `worker`'s governor spins, those cut to their first look because the core was
    /// busy, that found nothing and parked at once (only with
    /// [`Builder::park_when_busy`](crate::Builder::park_when_busy)).
    pub fn worker_governor_busy_looks(&self, worker: usize) -> u64 {
        self.worker_stats(worker).governor_busy_looks
    }

    /// Core `worker`'s idle transitions that parked instead of spinning toward a timer due
    /// within the spin window whose slack covers a park's wakeup (`CoreStats::slack_parks`).
    pub fn worker_slack_parks(&self, worker: usize) -> u64 {
        self.worker_stats(worker).slack_parks
    }

    /// Hand-overs from other threads that had to wake core `worker`. Live.
    pub fn worker_remote_wakes_sent(&self, worker: usize) -> u64 {
        self.worker_stats(worker).remote_wakes_sent
    }

    /// Hand-overs from other threads that found core `worker` awake and left it alone. Live.
    pub fn worker_remote_wakes_avoided(&self, worker: usize) -> u64 {
        self.worker_stats(worker).remote_wakes_avoided
    }

    /// I/O objects polled on core `worker` while registered with another core, which then
    /// moved here.
    pub fn worker_io_rebinds(&self, worker: usize) -> u64 {
        self.worker_stats(worker).io_rebinds
    }

    /// Whether the cores time their task polls into a histogram
    /// ([`Builder::enable_metrics_poll_time_histogram`](crate::Builder::enable_metrics_poll_time_histogram));
    /// as tokio's.
    pub fn poll_time_histogram_enabled(&self) -> bool {
        self.poll_times(0).is_some()
    }

    /// The number of buckets of the poll-time histogram (0 when it is off), as tokio's: set
    /// by [`Builder::metrics_poll_time_histogram_configuration`](crate::Builder::metrics_poll_time_histogram_configuration)
    /// (default: 10).
    pub fn poll_time_histogram_num_buckets(&self) -> usize {
        self.poll_times(0).map_or(0, |h| h.config().num_buckets())
    }

    /// The poll times bucket `bucket` of the poll-time histogram counts, as tokio's (the last
    /// bucket's range ends at `u64::MAX` nanoseconds; an empty range when the histogram is
    /// off).
    ///
    /// # Panics
    ///
    /// If `bucket` is not below [`poll_time_histogram_num_buckets`](Self::poll_time_histogram_num_buckets).
    pub fn poll_time_histogram_bucket_range(&self, bucket: usize) -> Range<Duration> {
        self.poll_times(0)
            .map_or_else(Range::default, |h| h.config().bucket_range(bucket))
    }

    /// Task polls core `worker` made so far whose time fell in bucket `bucket` of the
    /// poll-time histogram (0 when it is off), as tokio's. Live; it only grows.
    ///
    /// # Panics
    ///
    /// If there is no such core, or no such bucket.
    ///
    /// # Examples
    ///
    /// ```
    /// let rt = tickless::Builder::new()
    ///     .cores(1)
    ///     .enable_metrics_poll_time_histogram()
    ///     .build()?;
    /// rt.block_on(async { tickless::spawn(async {}).await.unwrap() });
    /// let m = rt.metrics();
    /// let polls: u64 = (0..m.poll_time_histogram_num_buckets())
    ///     .map(|b| m.poll_time_histogram_bucket_count(0, b))
    ///     .sum();
    /// assert_eq!(polls, 1); // the task's one poll (the block_on future is no task)
    /// # std::io::Result::Ok(())
    /// ```
    pub fn poll_time_histogram_bucket_count(&self, worker: usize, bucket: usize) -> u64 {
        let core = self.core(worker);
        core.poll_times.as_ref().map_or(0, |h| h.count(bucket))
    }

    /// The number of buckets of the timer-lateness histogram, set by
    /// [`Builder::metrics_timer_lateness_histogram_configuration`](crate::Builder::metrics_timer_lateness_histogram_configuration)
    /// (default: 24, doubling from 1 µs).
    pub fn timer_lateness_histogram_num_buckets(&self) -> usize {
        self.cores()
            .first()
            .map_or(0, |c| c.lateness.config().num_buckets())
    }

    /// The lateness bucket `bucket` of the timer-lateness histogram counts (the last
    /// bucket's range ends at `u64::MAX` nanoseconds).
    ///
    /// # Panics
    ///
    /// If `bucket` is not below [`timer_lateness_histogram_num_buckets`](Self::timer_lateness_histogram_num_buckets).
    pub fn timer_lateness_histogram_bucket_range(&self, bucket: usize) -> Range<Duration> {
        self.core(0).lateness.config().bucket_range(bucket)
    }

    /// Timers that fired on core `worker` so far as late as bucket `bucket` of the
    /// timer-lateness histogram says: the core's clock reading they were expired by, less
    /// their deadline (to the timer resolution; a timer never fires early). Live; it only
    /// grows. Over the buckets, it sums to the core's timer fires.
    ///
    /// Where the lateness comes from: the slack a timer allows (by default a share of its
    /// length, see [`Builder::default_slack_growing`](crate::Builder::default_slack_growing)),
    /// the wakeup's latency, and a core busy past a deadline.
    ///
    /// # Panics
    ///
    /// If there is no such core, or no such bucket.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use tickless::time::{advance, sleep};
    ///
    /// let rt = tickless::Builder::new().cores(1).start_paused(true).build()?;
    /// rt.block_on(async {
    ///     let timer = tickless::spawn(sleep(Duration::from_micros(100)));
    ///     tickless::task::yield_now().await; // the sleep registers
    ///     advance(Duration::from_millis(1)).await; // past its deadline by 900 µs
    ///     timer.await.unwrap();
    /// });
    /// let m = rt.metrics();
    /// let us = Duration::from_micros;
    /// assert_eq!(m.timer_lateness_histogram_bucket_range(10), us(512)..us(1_024));
    /// assert_eq!(m.timer_lateness_histogram_bucket_count(0, 10), 1);
    /// # std::io::Result::Ok(())
    /// ```
    pub fn timer_lateness_histogram_bucket_count(&self, worker: usize, bucket: usize) -> u64 {
        self.core(worker).lateness.count(bucket)
    }

    /// Whether the cores keep the loop histograms
    /// ([`Builder::enable_metrics_loop_histograms`](crate::Builder::enable_metrics_loop_histograms)).
    pub fn loop_histograms_enabled(&self) -> bool {
        self.loop_histograms(0).is_some()
    }

    /// The number of buckets of the I/O-poll-spacing histogram: 24 (0 when the loop
    /// histograms are off).
    pub fn io_poll_spacing_histogram_num_buckets(&self) -> usize {
        self.loop_layout(|h| &h.io_poll_spacing)
            .map_or(0, |h| h.config().num_buckets())
    }

    /// The spacings bucket `bucket` of the I/O-poll-spacing histogram counts: 0 to 1 µs, 1 to
    /// 2 µs, ..., 4.19 s on (the last range ends at `u64::MAX` nanoseconds; an empty range
    /// when the histograms are off).
    ///
    /// # Panics
    ///
    /// If `bucket` is not below [`io_poll_spacing_histogram_num_buckets`](Self::io_poll_spacing_histogram_num_buckets).
    pub fn io_poll_spacing_histogram_bucket_range(&self, bucket: usize) -> Range<Duration> {
        self.loop_layout(|h| &h.io_poll_spacing)
            .map_or_else(Range::default, |h| h.config().bucket_range(bucket))
    }

    /// I/O polls of core `worker` whose spacing from the return of the one before fell in
    /// bucket `bucket` (0 when the loop histograms are off): how long readiness could wait
    /// unseen (see [`Builder::enable_metrics_loop_histograms`](crate::Builder::enable_metrics_loop_histograms)).
    /// Live; it only grows.
    ///
    /// # Panics
    ///
    /// If there is no such core, or no such bucket.
    pub fn io_poll_spacing_histogram_bucket_count(&self, worker: usize, bucket: usize) -> u64 {
        self.loop_histogram(worker, |h| &h.io_poll_spacing)
            .map_or(0, |h| h.count(bucket))
    }

    /// The number of buckets of the I/O-batch-drain histogram: 24 (0 when the loop histograms
    /// are off).
    pub fn io_batch_drain_histogram_num_buckets(&self) -> usize {
        self.loop_layout(|h| &h.io_batch_drain)
            .map_or(0, |h| h.config().num_buckets())
    }

    /// The waits bucket `bucket` of the I/O-batch-drain histogram counts, laid out as the
    /// I/O-poll-spacing histogram's.
    ///
    /// # Panics
    ///
    /// If `bucket` is not below [`io_batch_drain_histogram_num_buckets`](Self::io_batch_drain_histogram_num_buckets).
    pub fn io_batch_drain_histogram_bucket_range(&self, bucket: usize) -> Range<Duration> {
        self.loop_layout(|h| &h.io_batch_drain)
            .map_or_else(Range::default, |h| h.config().bucket_range(bucket))
    }

    /// I/O polls of core `worker` that woke tasks and whose batch drained in bucket `bucket`'s
    /// time: from the poll's return to the first poll of the last task queued by then, the
    /// longest one of the tasks it woke waited (0 when the loop histograms are off). Live; it
    /// only grows.
    ///
    /// # Panics
    ///
    /// If there is no such core, or no such bucket.
    ///
    /// # Examples
    ///
    /// ```
    /// let rt = tickless::Builder::new()
    ///     .cores(1)
    ///     .enable_metrics_loop_histograms()
    ///     .build()?;
    /// rt.block_on(async {
    ///     use futures_lite::{AsyncReadExt, AsyncWriteExt};
    ///     let (mut a, mut b) = tickless::io::pipe()?;
    ///     let reader = tickless::spawn(async move {
    ///         let mut byte = [0];
    ///         b.read_exact(&mut byte).await.map(|_| byte[0])
    ///     });
    ///     tickless::task::yield_now().await; // the reader waits for readiness
    ///     a.write_all(&[7]).await.unwrap();
    ///     assert_eq!(reader.await.unwrap()?, 7);
    ///     std::io::Result::Ok(())
    /// })?;
    /// let m = rt.metrics();
    /// let batches: u64 = (0..m.io_batch_drain_histogram_num_buckets())
    ///     .map(|b| m.io_batch_drain_histogram_bucket_count(0, b))
    ///     .sum();
    /// assert!(batches >= 1); // the poll that saw the byte woke the reader
    /// # std::io::Result::Ok(())
    /// ```
    pub fn io_batch_drain_histogram_bucket_count(&self, worker: usize, bucket: usize) -> u64 {
        self.loop_histogram(worker, |h| &h.io_batch_drain)
            .map_or(0, |h| h.count(bucket))
    }

    /// The number of buckets of the tasks-between-I/O-polls histogram: 16 (0 when the loop
    /// histograms are off).
    pub fn tasks_between_io_polls_histogram_num_buckets(&self) -> usize {
        self.loop_layout(|h| &h.tasks_between_io_polls)
            .map_or(0, |h| h.config().num_buckets())
    }

    /// The task counts bucket `bucket` of the tasks-between-I/O-polls histogram counts: 0,
    /// 1, 2 to 3, 4 to 7, ..., 16,384 on (the last range ends at `u64::MAX`; an empty range
    /// when the histograms are off).
    ///
    /// # Panics
    ///
    /// If `bucket` is not below [`tasks_between_io_polls_histogram_num_buckets`](Self::tasks_between_io_polls_histogram_num_buckets).
    pub fn tasks_between_io_polls_histogram_bucket_range(&self, bucket: usize) -> Range<u64> {
        self.loop_layout(|h| &h.tasks_between_io_polls)
            .map_or_else(Range::default, |h| {
                let r = h.config().bucket_range(bucket);
                // The layout's "nanoseconds" are tasks.
                let tasks = |d: Duration| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
                tasks(r.start)..tasks(r.end)
            })
    }

    /// I/O polls of core `worker` that came after as many task polls as bucket `bucket` says,
    /// counted from the I/O poll before (0 when the loop histograms are off). Live; it only
    /// grows.
    ///
    /// # Panics
    ///
    /// If there is no such core, or no such bucket.
    pub fn tasks_between_io_polls_histogram_bucket_count(
        &self,
        worker: usize,
        bucket: usize,
    ) -> u64 {
        self.loop_histogram(worker, |h| &h.tasks_between_io_polls)
            .map_or(0, |h| h.count(bucket))
    }

    /// Core `worker`'s poll-time histogram, if it is on.
    fn poll_times(&self, worker: usize) -> Option<&Histogram> {
        self.cores().get(worker)?.poll_times.as_ref()
    }

    /// Core `worker`'s loop histograms, if they are on (no core `worker`: none).
    fn loop_histograms(&self, worker: usize) -> Option<&LoopHistograms> {
        self.cores().get(worker)?.loop_histograms.as_ref()
    }

    /// One of core `worker`'s loop histograms, if they are on.
    ///
    /// # Panics
    ///
    /// If there is no such core.
    fn loop_histogram(
        &self,
        worker: usize,
        which: fn(&LoopHistograms) -> &Histogram,
    ) -> Option<&Histogram> {
        self.core(worker).loop_histograms.as_ref().map(which)
    }

    /// One of the loop histograms, for its layout (the same on every core), if they are on.
    fn loop_layout(&self, which: fn(&LoopHistograms) -> &Histogram) -> Option<&Histogram> {
        self.loop_histograms(0).map(which)
    }
}
