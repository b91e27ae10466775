//! The loop's own timing, kept when [`Builder::enable_metrics_loop_histograms`] asks: how long
//! the core goes between looks at I/O, how many tasks it polls between them, and how long the
//! tasks an I/O poll woke wait for their polls. What an explanation of a latency tail needs
//! from inside the loop (`benches/scripts/tail_probe.py --trace` measures the spacing from
//! outside with perf, for tokio too).
//!
//! An *I/O poll* is any look of the core at its epoll instance: a fairness poll while busy
//! (after each turn of up to 128 task polls, once 61 have run since the last), a look of an
//! idle spin, or a park (a wait that blocks, in the core's own epoll or in its tokio
//! runtime's). The histograms:
//!
//! - **I/O poll spacing**: from one I/O poll's return to the next one's start. Readiness that
//!   arrives meanwhile waits at most this long before the core can see it.
//! - **I/O batch drain**: from the return of an I/O poll that woke tasks of the core to the
//!   start of the poll of the last task queued by then: the longest one of the tasks it woke
//!   waited for its first poll, behind the tasks queued before them. While one batch drains,
//!   later polls start none (each sample is a batch whose tasks were all polled); a count of
//!   polls, so approximate where tasks move between cores meanwhile.
//! - **Tasks between I/O polls**: the task polls from one I/O poll to the next (the
//!   `block_on` future's not counted).
//!
//! [`Builder::enable_metrics_loop_histograms`]: crate::Builder::enable_metrics_loop_histograms

use std::cell::Cell;
use std::time::Duration;

use crate::histogram::{Histogram, HistogramConfiguration, LOG2_FROM_1US};

/// The two duration histograms' layout: 24 buckets doubling from 1 µs (0 to 1 µs, ..., 4.19 s
/// on).
pub(crate) const LOOP_DURATIONS: HistogramConfiguration = LOG2_FROM_1US;

/// The task-count histogram's layout: 0, 1, 2-3, 4-7, ..., 16,384 and more (16 buckets; a
/// "nanosecond" of the layout is one task).
pub(crate) fn loop_counts() -> HistogramConfiguration {
    HistogramConfiguration::log2(Duration::from_nanos(1), 16)
}

/// A core's loop histograms, which its thread writes and any thread reads.
pub(crate) struct LoopHistograms {
    /// From an I/O poll's return to the next one's start.
    pub(crate) io_poll_spacing: Histogram,
    /// From the return of an I/O poll that woke tasks to the poll of the last task queued
    /// by then.
    pub(crate) io_batch_drain: Histogram,
    /// Task polls between two I/O polls.
    pub(crate) tasks_between_io_polls: Histogram,
}

impl LoopHistograms {
    /// Empty histograms.
    pub(crate) fn new() -> LoopHistograms {
        LoopHistograms {
            io_poll_spacing: Histogram::new(LOOP_DURATIONS),
            io_batch_drain: Histogram::new(LOOP_DURATIONS),
            tasks_between_io_polls: Histogram::new(loop_counts()),
        }
    }
}

/// The core's side: when its last I/O poll returned, and the batch it is draining. Touched only
/// while the histograms are on.
#[derive(Debug, Default)]
pub(crate) struct LoopWatch {
    /// When the last I/O poll returned (the core's clock, ns), if one has.
    returned: Cell<Option<u64>>,
    /// Task polls since the last I/O poll.
    tasks: Cell<u64>,
    /// Task polls so far.
    polls: Cell<u64>,
    /// The batch being drained: the value of `polls` at which the last task queued by its I/O
    /// poll's return starts its poll, and that return.
    draining: Cell<Option<(u64, u64)>>,
}

impl LoopWatch {
    /// An I/O poll starts at `now`.
    #[inline]
    pub(crate) fn io_poll_starts(&self, h: &LoopHistograms, now: u64) {
        if let Some(returned) = self.returned.get() {
            h.io_poll_spacing.record(now.saturating_sub(returned));
            h.tasks_between_io_polls.record(self.tasks.get());
        }
        self.tasks.set(0);
    }

    /// The I/O poll returned at `now` having woken `woken` tasks of the core, which has
    /// `queued` runnable tasks now (those included).
    #[inline]
    pub(crate) fn io_poll_returns(&self, now: u64, woken: u64, queued: usize) {
        self.returned.set(Some(now));
        if woken > 0 && queued > 0 && self.draining.get().is_none() {
            self.draining
                .set(Some((self.polls.get() + queued as u64, now)));
        }
    }

    /// A task's poll starts; `now` reads the clock, called only when a batch's last task
    /// starts.
    #[inline]
    pub(crate) fn task_poll_starts(&self, h: &LoopHistograms, now: impl FnOnce() -> u64) {
        let polls = self.polls.get() + 1;
        self.polls.set(polls);
        self.tasks.set(self.tasks.get() + 1);
        if let Some((last, since)) = self.draining.get() {
            if polls >= last {
                h.io_batch_drain.record(now().saturating_sub(since));
                self.draining.set(None);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const US: u64 = 1_000;

    #[test]
    fn spacing_and_tasks_are_counted_from_the_second_io_poll_on() {
        let (h, w) = (LoopHistograms::new(), LoopWatch::default());
        w.io_poll_starts(&h, 0);
        w.io_poll_returns(10 * US, 0, 0);
        for _ in 0..3 {
            w.task_poll_starts(&h, || unreachable!("no batch drains"));
        }
        // 300 µs after the return: bucket 9 (256-512 µs); 3 tasks: bucket 2 (2-3).
        w.io_poll_starts(&h, 310 * US);
        assert_eq!(h.io_poll_spacing.count(9), 1);
        assert_eq!(h.tasks_between_io_polls.count(2), 1);
        let total =
            |x: &Histogram| -> u64 { (0..x.config().num_buckets()).map(|b| x.count(b)).sum() };
        assert_eq!(
            total(&h.io_poll_spacing),
            1u64,
            "the first poll has no spacing"
        );
        assert_eq!(total(&h.io_batch_drain), 0);
    }

    #[test]
    fn a_batch_drains_when_the_last_task_queued_by_its_return_starts() {
        let (h, w) = (LoopHistograms::new(), LoopWatch::default());
        w.io_poll_starts(&h, 0);
        // Two tasks were queued before; the poll woke three more: five to go.
        w.io_poll_returns(100 * US, 3, 5);
        for i in 0..4 {
            w.task_poll_starts(&h, || unreachable!("task {i} is not the batch's last"));
        }
        // A poll in between starts no batch while one drains.
        w.io_poll_starts(&h, 140 * US);
        w.io_poll_returns(150 * US, 2, 3);
        w.task_poll_starts(&h, || 120 * US + 100 * US);
        // 120 µs after the first return: bucket 7 (64-128 µs).
        assert_eq!(h.io_batch_drain.count(7), 1);
        // The next ones start nothing until a poll that woke tasks returns.
        w.task_poll_starts(&h, || unreachable!("no batch"));
        w.io_poll_returns(400 * US, 0, 1);
        w.task_poll_starts(&h, || unreachable!("the poll woke nothing"));
    }
}
