//! What the reporter publishes: every series, its name, kind, unit and description, and how
//! it is computed from the cores' counters (`SPREADS`: tokio-metrics' totals, largest and
//! smallest over the cores; `PER_WORKER`: each core's own; `SINGLES`: the runtime's).

use std::time::Duration;

use metrics::Unit;

use crate::runtime::RuntimeMetrics;
use crate::stats::CoreStats;

/// A counter of a core, read from its [`CoreStats`].
pub(super) type Read = fn(&CoreStats) -> u64;

/// What a name is published as.
#[derive(Clone, Copy)]
pub(super) enum Kind {
    /// A metrics-rs counter.
    Counter,
    /// A metrics-rs gauge.
    Gauge,
}

/// A counter published as tokio-metrics does: its total, largest and smallest over the cores.
pub(super) struct Spread {
    /// The total's, the largest's and the smallest's names.
    pub(super) names: [&'static str; 3],
    pub(super) kind: Kind,
    pub(super) unit: Unit,
    /// The interval's increase (a count), or the value now (a gauge of a level).
    pub(super) delta: bool,
    pub(super) read: Read,
    /// In nanoseconds, published in microseconds.
    pub(super) nanos: bool,
    pub(super) doc: &'static str,
}

/// tokio-metrics' per-core spreads, by its names.
pub(super) const SPREADS: [Spread; 8] = [
    spread(
        [
            "tokio_total_park_count",
            "tokio_max_park_count",
            "tokio_min_park_count",
        ],
        Kind::Gauge,
        true,
        |s| s.parks,
        "The number of times worker threads parked",
    ),
    Spread {
        unit: Unit::Microseconds,
        nanos: true,
        ..spread(
            [
                "tokio_total_busy_duration",
                "tokio_max_busy_duration",
                "tokio_min_busy_duration",
            ],
            Kind::Counter,
            true,
            |s| s.busy_ns,
            "The amount of time worker threads were busy",
        )
    },
    spread(
        [
            "tokio_total_noop_count",
            "tokio_max_noop_count",
            "tokio_min_noop_count",
        ],
        Kind::Counter,
        true,
        |s| s.device_spurious,
        "The number of times worker threads unparked but performed no work before parking again",
    ),
    spread(
        [
            "tokio_total_steal_count",
            "tokio_max_steal_count",
            "tokio_min_steal_count",
        ],
        Kind::Counter,
        true,
        |s| s.steals,
        "The number of tasks worker threads stole from another worker thread",
    ),
    spread(
        [
            "tokio_total_local_schedule_count",
            "tokio_max_local_schedule_count",
            "tokio_min_local_schedule_count",
        ],
        Kind::Counter,
        true,
        |s| s.local_schedules,
        "The number of tasks scheduled from worker threads",
    ),
    spread(
        [
            "tokio_total_overflow_count",
            "tokio_max_overflow_count",
            "tokio_min_overflow_count",
        ],
        Kind::Counter,
        true,
        |_| 0,
        "The number of times worker threads saturated their local queues",
    ),
    spread(
        [
            "tokio_total_polls_count",
            "tokio_max_polls_count",
            "tokio_min_polls_count",
        ],
        Kind::Counter,
        true,
        |s| s.polls,
        "The number of tasks that have been polled across all worker threads",
    ),
    spread(
        [
            "tokio_total_local_queue_depth",
            "tokio_max_local_queue_depth",
            "tokio_min_local_queue_depth",
        ],
        Kind::Gauge,
        false,
        |s| s.local_queue_depth,
        "The total number of tasks currently scheduled in workers' local queues",
    ),
];

/// A spread of counts.
const fn spread(
    names: [&'static str; 3],
    kind: Kind,
    delta: bool,
    read: Read,
    doc: &'static str,
) -> Spread {
    Spread {
        names,
        kind,
        unit: Unit::Count,
        delta,
        read,
        nanos: false,
        doc,
    }
}

/// Every core's own series, with a `worker` label: totals since the runtime started
/// (counters) or levels (gauges).
pub(super) const PER_WORKER: [(&str, Kind, Read, &str); 22] = [
    (
        "tokio_worker_park_count",
        Kind::Counter,
        |s| s.parks,
        "Times the core parked",
    ),
    (
        "tokio_worker_poll_count",
        Kind::Counter,
        |s| s.polls,
        "Task polls on the core",
    ),
    (
        "tokio_worker_busy_duration",
        Kind::Counter,
        |s| s.busy_ns / 1_000,
        "Time the core was busy, in microseconds",
    ),
    (
        "tokio_worker_local_schedule_count",
        Kind::Counter,
        |s| s.local_schedules,
        "Tasks the core queued from its own thread",
    ),
    (
        "tokio_worker_remote_schedule_count",
        Kind::Counter,
        |s| s.remote_schedules,
        "Tasks other threads handed the core",
    ),
    (
        "tokio_worker_local_queue_depth",
        Kind::Gauge,
        |s| s.local_queue_depth,
        "Tasks queued on the core at its last publish",
    ),
    (
        "tokio_worker_steal_count",
        Kind::Counter,
        |s| s.steals,
        "Tasks the core took from other cores",
    ),
    (
        "tokio_worker_noop_count",
        Kind::Counter,
        |s| s.device_spurious,
        "Wakes of the core that found nothing due",
    ),
    (
        "tickless_worker_timer_fires",
        Kind::Counter,
        |s| s.timer_fires,
        "Timers that fired",
    ),
    (
        "tickless_worker_timerfd_rearms",
        Kind::Counter,
        |s| s.timerfd_rearms,
        "Re-programmings of the core's timerfd",
    ),
    (
        "tickless_worker_remote_arms",
        Kind::Counter,
        |s| s.remote_arms,
        "Timers handed over that armed the core's timerfd from the handing thread",
    ),
    (
        "tickless_worker_pending_timers",
        Kind::Gauge,
        |s| s.pending_timers,
        "Timers pending on the core",
    ),
    (
        "tickless_worker_governor_spins",
        Kind::Counter,
        |s| s.governor_spins,
        "Idle spins the core's governor started",
    ),
    (
        "tickless_worker_governor_caught",
        Kind::Counter,
        |s| s.governor_caught,
        "Of those, the spins that caught work",
    ),
    (
        "tickless_worker_governor_crowded",
        Kind::Counter,
        |s| s.governor_crowded,
        "Of those, the spins on a CPU another core of the runtime last woke on",
    ),
    (
        "tickless_worker_governor_busy_looks",
        Kind::Counter,
        |s| s.governor_busy_looks,
        "Of those, the spins cut to one look (the core busy, park_when_busy) that parked",
    ),
    (
        "tickless_worker_harvests",
        Kind::Counter,
        |s| s.harvests,
        "Looks at another core's ready I/O that took events (that core had not come back to its loop)",
    ),
    (
        "tickless_worker_harvested_events",
        Kind::Counter,
        |s| s.harvested_events,
        "Events of other cores' registrations the core's harvests dispatched",
    ),
    (
        "tickless_worker_slack_parks",
        Kind::Counter,
        |s| s.slack_parks,
        "Parks instead of a spin toward a timer whose slack covers a park's wakeup",
    ),
    (
        "tickless_worker_remote_wakes_sent",
        Kind::Counter,
        |s| s.remote_wakes_sent,
        "Hand-overs from other threads that woke the core",
    ),
    (
        "tickless_worker_remote_wakes_avoided",
        Kind::Counter,
        |s| s.remote_wakes_avoided,
        "Hand-overs from other threads that left the core alone",
    ),
    (
        "tickless_worker_io_rebinds",
        Kind::Counter,
        |s| s.io_rebinds,
        "I/O objects that moved to the core from another",
    ),
];

/// One reading of the runtime, and the one before it: what the runtime-wide series are
/// computed from.
pub(super) struct Sample<'a> {
    pub(super) metrics: &'a RuntimeMetrics,
    pub(super) now: &'a [CoreStats],
    pub(super) before: &'a [CoreStats],
    pub(super) elapsed: Duration,
}

impl Sample<'_> {
    /// The increase of `read` over the interval, summed over the cores.
    fn delta(&self, read: Read) -> u64 {
        let each = self.now.iter().zip(self.before);
        each.map(|(n, b)| read(n).saturating_sub(read(b))).sum()
    }

    /// `read`'s value now, summed over the cores.
    fn sum(&self, read: Read) -> u64 {
        self.now.iter().map(read).sum()
    }

    /// The mean poll time over the interval of each core that polled, in microseconds.
    fn poll_means(&self) -> impl Iterator<Item = f64> + '_ {
        self.now.iter().zip(self.before).filter_map(|(n, b)| {
            let polls = n.polls.saturating_sub(b.polls);
            let busy = n.busy_ns.saturating_sub(b.busy_ns);
            (polls > 0).then(|| busy as f64 / polls as f64 / 1_000.0)
        })
    }
}

/// The runtime-wide series: name, kind, unit, whether a counter grows by the value (else it
/// is set to it), the value, and the description.
pub(super) type Single = (
    &'static str,
    Kind,
    Unit,
    bool,
    fn(&Sample) -> f64,
    &'static str,
);

/// tokio-metrics' runtime-wide series, then tokio's `RuntimeMetrics` totals it does not name.
pub(super) const SINGLES: [Single; 17] = [
    (
        "tokio_workers_count",
        Kind::Gauge,
        Unit::Count,
        false,
        |s| s.metrics.num_workers() as f64,
        "The number of worker threads used by the runtime",
    ),
    (
        "tokio_live_tasks_count",
        Kind::Gauge,
        Unit::Count,
        false,
        |s| s.metrics.num_alive_tasks() as f64,
        "The current number of alive tasks in the runtime",
    ),
    (
        "tokio_global_queue_depth",
        Kind::Gauge,
        Unit::Count,
        false,
        |_| 0.0,
        "The number of tasks currently scheduled in the runtime's global queue",
    ),
    (
        "tokio_busy_ratio",
        Kind::Gauge,
        Unit::Percent,
        false,
        |s| s.delta(|c| c.busy_ns) as f64 / s.elapsed.as_nanos().max(1) as f64,
        "The ratio of the total busy duration to the elapsed time",
    ),
    (
        "tokio_mean_poll_duration",
        Kind::Gauge,
        Unit::Microseconds,
        false,
        |s| s.delta(|c| c.busy_ns) as f64 / s.delta(|c| c.polls).max(1) as f64 / 1_000.0,
        "The average duration of a single invocation of poll on a task (an upper bound)",
    ),
    (
        "tokio_mean_poll_duration_worker_min",
        Kind::Gauge,
        Unit::Microseconds,
        false,
        |s| {
            Some(s.poll_means().fold(f64::INFINITY, f64::min))
                .filter(|m| m.is_finite())
                .unwrap_or(0.0)
        },
        "The average duration of a poll on the worker with the lowest value",
    ),
    (
        "tokio_mean_poll_duration_worker_max",
        Kind::Gauge,
        Unit::Microseconds,
        false,
        |s| s.poll_means().fold(0.0, f64::max),
        "The average duration of a poll on the worker with the highest value",
    ),
    (
        "tokio_num_remote_schedules",
        Kind::Counter,
        Unit::Count,
        true,
        |s| s.delta(|c| c.remote_schedules) as f64,
        "The number of tasks scheduled from outside of the runtime",
    ),
    (
        "tokio_blocking_queue_depth",
        Kind::Gauge,
        Unit::Count,
        false,
        |s| s.metrics.blocking_queue_depth() as f64,
        "The number of tasks currently waiting to be executed in the blocking threadpool",
    ),
    (
        "tokio_blocking_threads_count",
        Kind::Gauge,
        Unit::Count,
        false,
        |s| s.metrics.num_blocking_threads() as f64,
        "The number of additional threads spawned by the runtime",
    ),
    (
        "tokio_idle_blocking_threads_count",
        Kind::Gauge,
        Unit::Count,
        false,
        |s| s.metrics.num_idle_blocking_threads() as f64,
        "The number of idle threads spawned by the runtime for spawn_blocking calls",
    ),
    (
        "tokio_budget_forced_yield_count",
        Kind::Counter,
        Unit::Count,
        true,
        |_| 0.0,
        "The number of times tasks were forced to yield after exhausting their budgets",
    ),
    (
        "tokio_io_driver_ready_count",
        Kind::Counter,
        Unit::Count,
        true,
        |s| s.delta(|c| c.io_events) as f64,
        "The number of ready events processed by the runtime's I/O driver",
    ),
    (
        "tokio_mean_polls_per_park",
        Kind::Gauge,
        Unit::Percent,
        false,
        |s| {
            let parks = s
                .delta(|c| c.parks)
                .saturating_sub(s.delta(|c| c.device_spurious));
            s.delta(|c| c.polls) as f64 / parks.max(1) as f64
        },
        "The ratio of polls to parks that did work",
    ),
    (
        "tokio_spawned_tasks_count",
        Kind::Counter,
        Unit::Count,
        false,
        |s| s.sum(|c| c.tasks_started) as f64,
        "The number of tasks spawned (and started) since the runtime was created",
    ),
    (
        "tokio_io_driver_fd_registered_count",
        Kind::Counter,
        Unit::Count,
        false,
        |s| s.sum(|c| c.io_registered) as f64,
        "The number of file descriptors registered with the I/O driver",
    ),
    (
        "tokio_io_driver_fd_deregistered_count",
        Kind::Counter,
        Unit::Count,
        false,
        |s| s.sum(|c| c.io_registered.saturating_sub(c.io_registrations)) as f64,
        "The number of file descriptors deregistered from the I/O driver",
    ),
];
