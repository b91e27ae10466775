//! The metrics-rs reporter (the `metrics` feature): tokio-metrics' names, a `worker` label per
//! core, every series described, and values that follow the cores' counters. Recorded by a
//! recorder of this test's own (each series an atomic), counted, never timed.
#![cfg(feature = "metrics")]

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use metrics::{Counter, Gauge, Histogram, Key, KeyName, Metadata, Recorder, SharedString, Unit};
use tickless::runtime::{Builder, RuntimeMetricsReporter, RuntimeMetricsReporterBuilder};

/// Every series registered, by `name{label=value,...}`, and every name described.
#[derive(Default)]
struct Recorded {
    series: Mutex<HashMap<String, Arc<AtomicU64>>>,
    histograms: Mutex<HashMap<String, Arc<Values>>>,
    described: Mutex<HashMap<String, Option<Unit>>>,
}

/// A histogram's values, in the order recorded.
#[derive(Default)]
struct Values(Mutex<Vec<f64>>);

impl metrics::HistogramFn for Values {
    fn record(&self, value: f64) {
        self.0.lock().unwrap().push(value);
    }
}

/// `name{label=value,...}`.
fn id(key: &Key) -> String {
    let labels: Vec<String> = key
        .labels()
        .map(|l| format!("{}={}", l.key(), l.value()))
        .collect();
    format!("{}{{{}}}", key.name(), labels.join(","))
}

impl Recorded {
    fn register(&self, key: &Key) -> Arc<AtomicU64> {
        let mut series = self.series.lock().unwrap();
        series.entry(id(key)).or_default().clone()
    }

    /// The values a histogram recorded, sorted.
    fn values(&self, id: &str) -> Vec<f64> {
        let histograms = self.histograms.lock().unwrap();
        let h = histograms
            .get(id)
            .unwrap_or_else(|| panic!("no histogram {id}"));
        let mut values = h.0.lock().unwrap().clone();
        values.sort_by(f64::total_cmp);
        values
    }

    /// A counter's value.
    fn count(&self, id: &str) -> u64 {
        let series = self.series.lock().unwrap();
        let s = series.get(id).unwrap_or_else(|| panic!("no series {id}"));
        s.load(Ordering::Relaxed)
    }

    /// A gauge's value.
    fn level(&self, id: &str) -> f64 {
        f64::from_bits(self.count(id))
    }
}

/// The recorder: an `Arc` of what it records, so that the test keeps a handle.
struct Rec(Arc<Recorded>);

impl Recorder for Rec {
    fn describe_counter(&self, key: KeyName, unit: Option<Unit>, _: SharedString) {
        let mut d = self.0.described.lock().unwrap();
        d.insert(key.as_str().to_owned(), unit);
    }

    fn describe_gauge(&self, key: KeyName, unit: Option<Unit>, _: SharedString) {
        let mut d = self.0.described.lock().unwrap();
        d.insert(key.as_str().to_owned(), unit);
    }

    fn describe_histogram(&self, key: KeyName, unit: Option<Unit>, _: SharedString) {
        let mut d = self.0.described.lock().unwrap();
        d.insert(key.as_str().to_owned(), unit);
    }

    fn register_counter(&self, key: &Key, _: &Metadata<'_>) -> Counter {
        Counter::from_arc(self.0.register(key))
    }

    fn register_gauge(&self, key: &Key, _: &Metadata<'_>) -> Gauge {
        Gauge::from_arc(self.0.register(key))
    }

    fn register_histogram(&self, key: &Key, _: &Metadata<'_>) -> Histogram {
        let mut histograms = self.0.histograms.lock().unwrap();
        Histogram::from_arc(histograms.entry(id(key)).or_default().clone())
    }
}

/// Waits until `done` holds (the deadline only keeps a broken publish from hanging the test).
fn eventually(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !done() {
        assert!(Instant::now() < deadline, "never: {what}");
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// A reporter of `rt`'s metrics into a recorder of this test's, every series described.
fn described(rt: &tickless::Runtime) -> (Arc<Recorded>, RuntimeMetricsReporter) {
    let recorded = Arc::new(Recorded::default());
    let rec = Rec(recorded.clone());
    let reporter = metrics::with_local_recorder(&rec, || {
        RuntimeMetricsReporterBuilder::default()
            .describe()
            .build_with_metrics(rt.metrics())
    });
    (recorded, reporter)
}

#[test]
fn publishes_tokio_metrics_names_with_a_worker_label_per_core() {
    // No tokio stand-in: core 0's counters are then read live from here (with one, they are
    // as of its last publish or live, as the stand-in holds its lease or not).
    let rt = Builder::new()
        .cores(2)
        .tokio_context(false)
        .build()
        .unwrap();
    let metrics = rt.metrics();
    let (recorded, mut reporter) = described(&rt);
    let polls = metrics.worker_poll_count(1);
    for _ in 0..20 {
        rt.handle(1).spawn(async {}).join().unwrap();
    }
    // The poll count is live; the other counters are as of each core's last publish, which
    // core 1 makes as it goes idle after the last poll: wait for that one too.
    eventually("core 1 publishes the polls", || {
        metrics.worker_poll_count(1) >= polls + 20 && metrics.remote_schedule_count() >= 20
    });
    reporter.run_once();

    assert_eq!(recorded.level("tokio_workers_count{}"), 2.0);
    assert!(recorded.count("tokio_worker_poll_count{worker=1}") >= polls + 20);
    assert!(
        recorded.count("tokio_total_polls_count{}") >= 20,
        "the interval's"
    );
    assert!(recorded.count("tokio_num_remote_schedules{}") >= 20);
    assert!(recorded.level("tokio_total_park_count{}") >= 1.0);
    assert_eq!(recorded.level("tokio_global_queue_depth{}"), 0.0);
    assert!(recorded.count("tokio_spawned_tasks_count{}") >= 20);
    // A counter of an interval grows by the next interval's count.
    let total = recorded.count("tokio_total_polls_count{}");
    let polls = metrics.worker_poll_count(1);
    for _ in 0..20 {
        rt.handle(1).spawn(async {}).join().unwrap();
    }
    eventually("core 1 publishes again", || {
        metrics.worker_poll_count(1) >= polls + 20
    });
    reporter.run_once();
    assert!(recorded.count("tokio_total_polls_count{}") >= total + 20);

    let series = recorded.series.lock().unwrap();
    let described = recorded.described.lock().unwrap();
    for name in [
        "tokio_workers_count",
        "tokio_live_tasks_count",
        "tokio_total_park_count",
        "tokio_max_park_count",
        "tokio_min_park_count",
        "tokio_total_busy_duration",
        "tokio_busy_ratio",
        "tokio_mean_poll_duration",
        "tokio_total_local_schedule_count",
        "tokio_total_local_queue_depth",
        "tokio_blocking_threads_count",
        "tokio_io_driver_ready_count",
        "tokio_mean_polls_per_park",
    ] {
        assert!(series.contains_key(&format!("{name}{{}}")), "{name}");
        assert!(described.contains_key(name), "{name} described");
    }
    for worker in 0..2 {
        for name in ["tokio_worker_park_count", "tickless_worker_timer_fires"] {
            assert!(series.contains_key(&format!("{name}{{worker={worker}}}")));
        }
    }
    // Every series registered was described, with a unit.
    for id in series.keys() {
        let name = &id[..id.find('{').unwrap()];
        assert!(matches!(described.get(name), Some(Some(_))), "{name}");
    }
    assert_eq!(
        described["tokio_total_busy_duration"],
        Some(Unit::Microseconds)
    );
}

#[test]
fn a_transformer_renames_and_labels_every_series() {
    let rt = Builder::new().cores(1).build().unwrap();
    let recorded = Arc::new(Recorded::default());
    let rec = Rec(recorded.clone());
    let mut reporter = metrics::with_local_recorder(&rec, || {
        RuntimeMetricsReporterBuilder::default()
            .with_metrics_transformer(|name| {
                let name = name.replacen("tokio_", "app_", 1);
                Key::from_parts(name, vec![metrics::Label::new("app", "x")])
            })
            .build_with_metrics(rt.metrics())
    });
    reporter.run_once();
    assert_eq!(recorded.level("app_workers_count{app=x}"), 1.0);
    assert!(recorded
        .series
        .lock()
        .unwrap()
        .contains_key("app_worker_poll_count{app=x,worker=0}"));
}

#[test]
fn publishes_the_histograms_new_counts_each_interval_as_tokio_metrics_does() {
    let rt = Builder::new()
        .cores(1)
        .start_paused(true)
        .enable_metrics_poll_time_histogram()
        .build()
        .unwrap();
    let (recorded, mut reporter) = described(&rt);
    let us = Duration::from_micros;
    rt.block_on(async {
        // A poll of 250 µs and one of nothing.
        tickless::spawn(tickless::time::advance(us(250)))
            .await
            .unwrap();
        // A timer due in 100 µs expired 1 ms on: 900 µs late.
        let late = tickless::spawn(tickless::time::sleep(us(100)).slack(Duration::ZERO));
        tickless::yield_now().await;
        tickless::time::advance(Duration::from_millis(1)).await;
        late.await.unwrap();
    });
    reporter.run_once();
    // Each poll as its bucket's lower bound, in µs: the sleep's task polled twice, the
    // advancing one twice (tokio's default buckets: 100 µs wide).
    let polls = "tokio_poll_time_histogram{}";
    assert_eq!(recorded.values(polls), [0.0, 0.0, 0.0, 200.0]);
    let late = "tickless_timer_lateness_histogram{}";
    assert_eq!(recorded.values(late), [512.0]);
    // The next interval publishes only what is new: nothing.
    reporter.run_once();
    assert_eq!(recorded.values(polls).len(), 4);
    assert_eq!(recorded.values(late).len(), 1);
    let described = recorded.described.lock().unwrap();
    for name in [
        "tokio_poll_time_histogram",
        "tickless_timer_lateness_histogram",
    ] {
        assert_eq!(described[name], Some(Unit::Microseconds), "{name}");
    }
}

#[test]
fn publishes_the_loop_histograms_when_they_are_on() {
    let rt = Builder::new()
        .cores(1)
        .start_paused(true)
        .enable_metrics_loop_histograms()
        .build()
        .unwrap();
    let (recorded, mut reporter) = described(&rt);
    rt.block_on(async {
        // Busy for 1,280 task polls: 10 I/O polls, each after a turn of 128 (paused time:
        // no time between them).
        tickless::spawn(async {
            for _ in 0..1_279 {
                tickless::yield_now().await;
            }
        })
        .await
        .unwrap();
    });
    reporter.run_once();
    let spacing = "tickless_io_poll_spacing_histogram{}";
    assert_eq!(recorded.values(spacing), [0.0; 9]);
    let tasks = "tickless_tasks_between_io_polls_histogram{}";
    assert_eq!(
        recorded.values(tasks),
        [128.0; 9],
        "each bucket's lower bound"
    );
    assert_eq!(
        recorded.values("tickless_io_batch_drain_histogram{}"),
        [0.0; 0]
    );
    let described = recorded.described.lock().unwrap();
    assert_eq!(
        described[spacing.trim_end_matches("{}")],
        Some(Unit::Microseconds)
    );
    assert_eq!(
        described["tickless_io_batch_drain_histogram"],
        Some(Unit::Microseconds)
    );
    assert_eq!(described[tasks.trim_end_matches("{}")], Some(Unit::Count));
}
