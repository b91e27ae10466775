//! The runtime's metrics published to metrics-rs (the `metrics` feature), under the names and
//! with the meanings of tokio-metrics' `RuntimeMetricsReporter`, and per core under a
//! `worker` label.

use std::fmt;
use std::time::{Duration, Instant};

mod histograms;
mod series;

use metrics::{Counter, Gauge, Key, Label, Unit};

use super::{Handle, RuntimeMetrics};
use crate::stats::CoreStats;
use histograms::Published;
use series::{Kind, Read, Sample, PER_WORKER, SINGLES, SPREADS};

/// A published series.
enum Series {
    Counter(Counter),
    Gauge(Gauge),
}

impl Series {
    /// Registers `key` with the current metrics-rs recorder, as `kind`.
    fn register(kind: Kind, key: Key) -> Series {
        let (name, labels) = key.into_parts();
        match kind {
            Kind::Counter => Series::Counter(metrics::counter!(name, labels)),
            Kind::Gauge => Series::Gauge(metrics::gauge!(name, labels)),
        }
    }

    /// Publishes `value`: a counter grows by it if `delta`, else is set to it; a gauge is set.
    fn publish(&self, value: f64, delta: bool) {
        match self {
            Series::Counter(c) if delta => c.increment(value as u64),
            Series::Counter(c) => c.absolute(value as u64),
            Series::Gauge(g) => g.set(value),
        }
    }

    /// Describes `name` to the current recorder.
    fn describe(kind: Kind, name: &Key, unit: Unit, doc: &'static str) {
        let name = name.name().to_owned();
        match kind {
            Kind::Counter => metrics::describe_counter!(name, unit, doc),
            Kind::Gauge => metrics::describe_gauge!(name, unit, doc),
        }
    }
}

/// Makes the key of a series from its name (the default: the name as it is).
type Transform = Box<dyn FnMut(&'static str) -> Key + Send>;

/// Builds a [`RuntimeMetricsReporter`]: tokio-metrics' `RuntimeMetricsReporterBuilder`, on
/// tickless (the `metrics` feature).
///
/// # What it publishes
///
/// To the metrics-rs recorder installed (`metrics-exporter-prometheus`'s, say), every
/// interval:
///
/// - tokio-metrics' runtime series, by its names and with its meanings, computed over the
///   interval as it computes them: `tokio_workers_count`, `tokio_live_tasks_count`,
///   `tokio_total_park_count` (and `_max_`, `_min_` over the cores), `tokio_total_busy_duration`,
///   `tokio_busy_ratio`, `tokio_mean_poll_duration`, `tokio_total_polls_count`,
///   `tokio_total_local_schedule_count`, `tokio_num_remote_schedules`,
///   `tokio_total_local_queue_depth`, `tokio_blocking_threads_count`,
///   `tokio_io_driver_ready_count`, ... A dashboard built for tokio-metrics works as it is.
///   What tickless does not have reads 0 (`tokio_global_queue_depth`, the overflow counts,
///   `tokio_budget_forced_yield_count`); there is no `tokio_*_steal_operations` (see
///   [`RuntimeMetrics`] for why and for each meaning).
/// - tokio-metrics' `tokio_poll_time_histogram` (a metrics-rs histogram, in microseconds:
///   each interval, the task polls of every core since the last, each recorded as its
///   bucket's lower bound, as tokio-metrics records them), which counts only with
///   [`Builder::enable_metrics_poll_time_histogram`](crate::Builder::enable_metrics_poll_time_histogram);
///   and in the same way tickless's `tickless_timer_lateness_histogram`, the timer fires by
///   how late they fired, and, with
///   [`Builder::enable_metrics_loop_histograms`](crate::Builder::enable_metrics_loop_histograms),
///   its loop histograms `tickless_io_poll_spacing_histogram`,
///   `tickless_io_batch_drain_histogram` (microseconds) and
///   `tickless_tasks_between_io_polls_histogram` (task polls).
/// - tokio's `RuntimeMetrics` totals tokio-metrics does not name: `tokio_spawned_tasks_count`,
///   `tokio_io_driver_fd_registered_count`, `tokio_io_driver_fd_deregistered_count`.
/// - Every core's own series, with a `worker` label (the core's index): tokio's per-worker
///   counts as `tokio_worker_park_count`, `tokio_worker_poll_count`,
///   `tokio_worker_busy_duration` (microseconds), ..., and tickless's own as
///   `tickless_worker_timer_fires`, `tickless_worker_pending_timers`,
///   `tickless_worker_governor_spins`, `tickless_worker_remote_wakes_sent`, ...
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use tickless::runtime::RuntimeMetricsReporterBuilder;
///
/// let rt = tickless::Builder::new().cores(2).build()?;
/// rt.block_on(async {
///     // With a recorder installed (`metrics_exporter_prometheus::PrometheusBuilder::new()
///     // .install()`, say); without one, the series go nowhere.
///     let reporter = tickless::spawn(
///         RuntimeMetricsReporterBuilder::default()
///             .with_interval(Duration::from_millis(10))
///             .describe_and_run(),
///     );
///     tickless::time::sleep(Duration::from_millis(30)).await;
///     reporter.abort();
/// });
/// # std::io::Result::Ok(())
/// ```
pub struct RuntimeMetricsReporterBuilder {
    interval: Duration,
    transform: Transform,
}

impl fmt::Debug for RuntimeMetricsReporterBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("RuntimeMetricsReporterBuilder");
        d.field("interval", &self.interval).finish_non_exhaustive()
    }
}

impl Default for RuntimeMetricsReporterBuilder {
    /// An interval of 30 seconds (tokio-metrics'), the names as they are.
    fn default() -> Self {
        RuntimeMetricsReporterBuilder {
            interval: Duration::from_secs(30),
            transform: Box::new(Key::from_static_name),
        }
    }
}

impl RuntimeMetricsReporterBuilder {
    /// How often the metrics are read and published (the recorder's own export, a Prometheus
    /// scrape say, runs on its own schedule).
    pub fn with_interval(mut self, interval: Duration) -> Self {
        self.interval = interval;
        self
    }

    /// Makes each series' key from its name (`tokio_...`, `tickless_...`): to rename them or
    /// add labels. The per-core series get their `worker` label after it.
    pub fn with_metrics_transformer(
        mut self,
        transform: impl FnMut(&'static str) -> Key + Send + 'static,
    ) -> Self {
        self.transform = Box::new(transform);
        self
    }

    /// Describes every series (unit and description) to the current recorder; once per
    /// recorder.
    pub fn describe(mut self) -> Self {
        let spreads = SPREADS
            .iter()
            .flat_map(|s| s.names.map(|n| (n, s.kind, s.unit, s.doc)));
        let workers = PER_WORKER
            .iter()
            .map(|&(n, kind, _, doc)| (n, kind, Unit::Count, doc));
        let singles = SINGLES
            .iter()
            .map(|&(n, kind, unit, _, _, doc)| (n, kind, unit, doc));
        for (name, kind, unit, doc) in singles.chain(spreads).chain(workers) {
            Series::describe(kind, &(self.transform)(name), unit, doc);
        }
        histograms::describe(&mut self.transform);
        self
    }

    /// The reporter of the runtime the caller runs on, its series registered with the current
    /// recorder.
    ///
    /// # Panics
    ///
    /// Outside a tickless runtime.
    #[must_use = "the reporter does nothing unless run"]
    pub fn build(self) -> RuntimeMetricsReporter {
        self.build_with_metrics(Handle::current().metrics())
    }

    /// The reporter of the runtime `metrics` reads, its series registered with the current
    /// recorder.
    #[must_use = "the reporter does nothing unless run"]
    pub fn build_with_metrics(mut self, metrics: RuntimeMetrics) -> RuntimeMetricsReporter {
        let t = &mut self.transform;
        let singles = SINGLES
            .iter()
            .map(|s| Series::register(s.1, t(s.0)))
            .collect();
        let spreads = SPREADS
            .iter()
            .map(|s| s.names.map(|n| Series::register(s.kind, t(n))));
        let spreads = spreads.collect();
        let per_worker = (0..metrics.num_workers())
            .map(|w| {
                let label = Label::new("worker", w.to_string());
                let keyed = |(name, kind, ..): &(&'static str, Kind, Read, &str)| {
                    let (name, mut labels) = t(name).into_parts();
                    labels.push(label.clone());
                    Series::register(*kind, Key::from_parts(name, labels))
                };
                PER_WORKER.iter().map(keyed).collect()
            })
            .collect();
        let histograms = Published::all(&metrics, t);
        let now = Instant::now();
        let start = (0..metrics.num_workers())
            .map(|w| metrics.worker_stats(w))
            .collect();
        RuntimeMetricsReporter {
            interval: self.interval,
            metrics,
            singles,
            spreads,
            per_worker,
            histograms,
            last: (now, start),
        }
    }

    /// Describes the series, then runs the reporter: as tokio-metrics' `describe_and_run`.
    /// Spawn it as a task of the runtime to report on.
    pub async fn describe_and_run(self) {
        self.describe().build().run().await
    }

    /// Runs the reporter without describing the series first.
    pub async fn run_without_describing(self) {
        self.build().run().await
    }
}

/// Publishes a runtime's metrics to metrics-rs every interval (the `metrics` feature): from
/// [`RuntimeMetricsReporterBuilder`], which says what it publishes.
pub struct RuntimeMetricsReporter {
    interval: Duration,
    metrics: RuntimeMetrics,
    /// The series of `SINGLES`, `SPREADS` and `PER_WORKER` (by core), in their order.
    singles: Vec<Series>,
    spreads: Vec<[Series; 3]>,
    per_worker: Vec<Vec<Series>>,
    /// The histograms (`histograms::SOURCES`), with what they published so far.
    histograms: Vec<Published>,
    /// The last reading, and when it was made.
    last: (Instant, Vec<CoreStats>),
}

impl fmt::Debug for RuntimeMetricsReporter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("RuntimeMetricsReporter");
        d.field("interval", &self.interval).finish_non_exhaustive()
    }
}

impl RuntimeMetricsReporter {
    /// Reads the metrics once and publishes them (the interval ends now).
    pub fn run_once(&mut self) {
        let m = &self.metrics;
        let now: Vec<CoreStats> = (0..m.num_workers())
            .map(|w| CoreStats {
                parks: m.worker_park_count(w),
                ..m.worker_stats(w)
            })
            .collect();
        let at = Instant::now();
        let sample = Sample {
            metrics: m,
            now: &now,
            before: &self.last.1,
            elapsed: at.saturating_duration_since(self.last.0),
        };
        for (series, single) in self.singles.iter().zip(&SINGLES) {
            series.publish((single.4)(&sample), single.3);
        }
        for (series, spread) in self.spreads.iter().zip(&SPREADS) {
            let each = now.iter().zip(&self.last.1).map(|(n, b)| {
                let v = if spread.delta {
                    (spread.read)(n).saturating_sub((spread.read)(b))
                } else {
                    (spread.read)(n)
                };
                if spread.nanos {
                    v / 1_000
                } else {
                    v
                }
            });
            let (total, max, min) = each.fold((0, 0, u64::MAX), |(t, hi, lo), v| {
                (t + v, hi.max(v), lo.min(v))
            });
            let delta = matches!(spread.kind, Kind::Counter);
            for (s, v) in series.iter().zip([total, max, min.min(total)]) {
                s.publish(v as f64, delta);
            }
        }
        for (series, stats) in self.per_worker.iter().zip(&now) {
            for (s, (_, _, read, _)) in series.iter().zip(&PER_WORKER) {
                s.publish(read(stats) as f64, false);
            }
        }
        for histogram in &mut self.histograms {
            histogram.publish(&self.metrics);
        }
        self.last = (at, now);
    }

    /// Publishes every interval, until dropped: spawn it as a task.
    pub async fn run(mut self) {
        loop {
            self.run_once();
            crate::time::sleep(self.interval).await;
        }
    }
}
