//! The histograms the reporter publishes, as tokio-metrics publishes its poll-time histogram:
//! every interval, each bucket's new counts over all the cores, recorded as that many values
//! of the bucket's lower bound, in microseconds (a task count for the tasks between I/O polls;
//! `record_many`).

use std::ops::Range;
use std::time::Duration;

use metrics::{Histogram, Key, Unit};

use crate::runtime::RuntimeMetrics;

/// A histogram of the runtime, as the reporter reads it.
pub(super) struct Source {
    /// Its series' name.
    pub(super) name: &'static str,
    /// What its series describes.
    pub(super) doc: &'static str,
    /// What its values count.
    unit: Unit,
    /// Its buckets (0: none, it is off).
    buckets: fn(&RuntimeMetrics) -> usize,
    /// A bucket's lower bound, in `unit`: the value its counts are recorded as.
    start: fn(&RuntimeMetrics, usize) -> f64,
    /// A core's count in a bucket: `(worker, bucket)`.
    count: fn(&RuntimeMetrics, usize, usize) -> u64,
}

/// A duration bucket's lower bound in microseconds.
fn micros(range: Range<Duration>) -> f64 {
    range.start.as_micros() as f64
}

/// tokio-metrics' poll-time histogram, and tickless's timer-lateness and loop histograms in
/// the same style.
pub(super) const SOURCES: [Source; 5] = [
    Source {
        name: "tokio_poll_time_histogram",
        doc: "A histogram of task polls since the previous probe grouped by poll times",
        unit: Unit::Microseconds,
        buckets: RuntimeMetrics::poll_time_histogram_num_buckets,
        start: |m, b| micros(m.poll_time_histogram_bucket_range(b)),
        count: RuntimeMetrics::poll_time_histogram_bucket_count,
    },
    Source {
        name: "tickless_timer_lateness_histogram",
        doc: "A histogram of timer fires since the previous probe grouped by how late they \
              fired (the clock reading they were expired by, less their deadline)",
        unit: Unit::Microseconds,
        buckets: RuntimeMetrics::timer_lateness_histogram_num_buckets,
        start: |m, b| micros(m.timer_lateness_histogram_bucket_range(b)),
        count: RuntimeMetrics::timer_lateness_histogram_bucket_count,
    },
    Source {
        name: "tickless_io_poll_spacing_histogram",
        doc: "A histogram of I/O polls since the previous probe grouped by the time from the \
              return of the poll before (how long readiness could wait unseen)",
        unit: Unit::Microseconds,
        buckets: RuntimeMetrics::io_poll_spacing_histogram_num_buckets,
        start: |m, b| micros(m.io_poll_spacing_histogram_bucket_range(b)),
        count: RuntimeMetrics::io_poll_spacing_histogram_bucket_count,
    },
    Source {
        name: "tickless_io_batch_drain_histogram",
        doc: "A histogram of I/O polls that woke tasks since the previous probe grouped by \
              the time to the first poll of the last task queued at their return",
        unit: Unit::Microseconds,
        buckets: RuntimeMetrics::io_batch_drain_histogram_num_buckets,
        start: |m, b| micros(m.io_batch_drain_histogram_bucket_range(b)),
        count: RuntimeMetrics::io_batch_drain_histogram_bucket_count,
    },
    Source {
        name: "tickless_tasks_between_io_polls_histogram",
        doc: "A histogram of I/O polls since the previous probe grouped by the task polls \
              since the poll before",
        unit: Unit::Count,
        buckets: RuntimeMetrics::tasks_between_io_polls_histogram_num_buckets,
        start: |m, b| m.tasks_between_io_polls_histogram_bucket_range(b).start as f64,
        count: RuntimeMetrics::tasks_between_io_polls_histogram_bucket_count,
    },
];

/// Describes the histograms' series.
pub(super) fn describe(transform: &mut dyn FnMut(&'static str) -> Key) {
    for source in &SOURCES {
        let name = transform(source.name).name().to_owned();
        metrics::describe_histogram!(name, source.unit, source.doc);
    }
}

/// A published histogram and the counts it published so far.
pub(super) struct Published {
    /// What it reads.
    source: &'static Source,
    /// Where it records.
    series: Histogram,
    /// Each bucket's count over the cores at the last publish.
    last: Vec<u64>,
}

impl Published {
    /// Every histogram of `metrics`, registered with the current recorder; what they hold
    /// now is not published (an interval's counts are).
    pub(super) fn all(
        metrics: &RuntimeMetrics,
        transform: &mut dyn FnMut(&'static str) -> Key,
    ) -> Vec<Published> {
        SOURCES
            .iter()
            .map(|source| {
                let (name, labels) = transform(source.name).into_parts();
                Published {
                    source,
                    series: metrics::histogram!(name, labels),
                    last: counts(source, metrics),
                }
            })
            .collect()
    }

    /// Records what each bucket counted since the last publish.
    pub(super) fn publish(&mut self, metrics: &RuntimeMetrics) {
        let now = counts(self.source, metrics);
        for (bucket, (&n, &before)) in now.iter().zip(&self.last).enumerate() {
            let new = n.saturating_sub(before);
            if new > 0 {
                let start = (self.source.start)(metrics, bucket);
                let times = usize::try_from(new).unwrap_or(usize::MAX);
                self.series.record_many(start, times);
            }
        }
        self.last = now;
    }
}

/// Each bucket's count, summed over the cores.
fn counts(source: &Source, metrics: &RuntimeMetrics) -> Vec<u64> {
    (0..(source.buckets)(metrics))
        .map(|bucket| {
            (0..metrics.num_workers())
                .map(|worker| (source.count)(metrics, worker, bucket))
                .sum()
        })
        .collect()
}
