//! `Builder::enable_metrics_loop_histograms`: the loop's I/O poll spacing, I/O batch drain and
//! tasks between I/O polls, counted on paused time (the core's clock moves only by
//! `time::advance`), so every bucket count is exact.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use futures_lite::{AsyncReadExt, AsyncWriteExt};
use tickless::runtime::{Builder, RuntimeMetrics};
use tickless::task::yield_now;
use tickless::Runtime;

/// One core on paused time, with the loop histograms.
fn paused() -> Runtime {
    Builder::new()
        .cores(1)
        .start_paused(true)
        .enable_metrics_loop_histograms()
        .build()
        .unwrap()
}

/// Core 0's nonzero buckets of each histogram: spacing, drain, tasks.
type Nonzero = Vec<(usize, u64)>;

fn histograms(m: &RuntimeMetrics) -> (Nonzero, Nonzero, Nonzero) {
    let nonzero = |n: usize, count: &dyn Fn(usize) -> u64| {
        (0..n)
            .map(|b| (b, count(b)))
            .filter(|&(_, c)| c > 0)
            .collect::<Vec<_>>()
    };
    (
        nonzero(m.io_poll_spacing_histogram_num_buckets(), &|b| {
            m.io_poll_spacing_histogram_bucket_count(0, b)
        }),
        nonzero(m.io_batch_drain_histogram_num_buckets(), &|b| {
            m.io_batch_drain_histogram_bucket_count(0, b)
        }),
        nonzero(m.tasks_between_io_polls_histogram_num_buckets(), &|b| {
            m.tasks_between_io_polls_histogram_bucket_count(0, b)
        }),
    )
}

#[test]
fn the_loop_histograms_are_off_by_default() {
    let rt = Builder::new().cores(1).build().unwrap();
    rt.block_on(async {
        for _ in 0..300 {
            yield_now().await;
        }
    });
    let m = rt.metrics();
    assert!(!m.loop_histograms_enabled());
    assert_eq!(m.io_poll_spacing_histogram_num_buckets(), 0);
    assert_eq!(m.io_batch_drain_histogram_num_buckets(), 0);
    assert_eq!(m.tasks_between_io_polls_histogram_num_buckets(), 0);
    assert_eq!(
        m.io_poll_spacing_histogram_bucket_range(0),
        Duration::ZERO..Duration::ZERO
    );
    assert_eq!(m.tasks_between_io_polls_histogram_bucket_range(0), 0..0);
    assert_eq!(m.io_poll_spacing_histogram_bucket_count(0, 0), 0);
    assert_eq!(m.tasks_between_io_polls_histogram_bucket_count(0, 0), 0);
}

#[test]
fn the_layouts_double_from_1_us_and_from_one_task() {
    let rt = paused();
    let m = rt.metrics();
    assert!(m.loop_histograms_enabled());
    let us = Duration::from_micros;
    assert_eq!(m.io_poll_spacing_histogram_num_buckets(), 24);
    assert_eq!(m.io_poll_spacing_histogram_bucket_range(0), us(0)..us(1));
    assert_eq!(
        m.io_poll_spacing_histogram_bucket_range(9),
        us(256)..us(512)
    );
    assert_eq!(
        m.io_poll_spacing_histogram_bucket_range(23).end,
        Duration::from_nanos(u64::MAX)
    );
    assert_eq!(m.io_batch_drain_histogram_num_buckets(), 24);
    assert_eq!(m.io_batch_drain_histogram_bucket_range(7), us(64)..us(128));
    assert_eq!(m.tasks_between_io_polls_histogram_num_buckets(), 16);
    assert_eq!(m.tasks_between_io_polls_histogram_bucket_range(0), 0..1);
    assert_eq!(m.tasks_between_io_polls_histogram_bucket_range(1), 1..2);
    assert_eq!(m.tasks_between_io_polls_histogram_bucket_range(8), 128..256);
    assert_eq!(
        m.tasks_between_io_polls_histogram_bucket_range(15),
        16_384..u64::MAX
    );
}

#[test]
fn a_busy_core_looks_at_io_after_each_turn_of_128_task_polls() {
    // A task that yields 1,280 times keeps the core busy: each turn of the loop polls it 128
    // times (the task budget), then polls I/O (at least 61 polls since the last). So 10 I/O
    // polls; the first has no spacing (no poll before it), each later one 128 task polls and
    // none of paused time after the one before.
    let rt = paused();
    rt.block_on(async {
        tickless::spawn(async {
            for _ in 0..1_279 {
                yield_now().await;
            }
        })
        .await
        .unwrap();
    });
    let m = rt.metrics();
    let (spacing, drain, tasks) = histograms(&m);
    assert_eq!(m.worker_stats(0).io_polls, 10, "{:?}", m.worker_stats(0));
    assert_eq!(spacing, [(0, 9)]);
    assert_eq!(tasks, [(8, 9)], "128 to 255 task polls, 9 times");
    // The polls woke nothing: no batch.
    assert_eq!(drain, []);
}

#[test]
fn the_spacing_is_the_time_the_core_spent_away_from_io() {
    // A task moves paused time by 300 µs in its first poll: the I/O poll after that turn
    // comes 300 µs after the one before.
    let rt = paused();
    rt.block_on(async {
        tickless::spawn(async {
            for i in 0..255 {
                if i == 200 {
                    tickless::time::advance(Duration::from_micros(300)).await;
                }
                yield_now().await;
            }
        })
        .await
        .unwrap();
    });
    let (spacing, _, _) = histograms(&rt.metrics());
    assert_eq!(spacing, [(9, 1)], "256 to 512 µs");
}

#[test]
fn a_batch_drains_when_the_last_task_its_poll_woke_starts() {
    // Two readers wait on pipes; both bytes come in one I/O poll, which queues both. The
    // first moves paused time by 100 µs: the second starts its poll 100 µs after the I/O
    // poll returned, the batch's drain.
    let rt = paused();
    readers_woken_at_once(&rt, 2);
    let m = rt.metrics();
    let (_, drain, _) = histograms(&m);
    assert_eq!(m.worker_stats(0).io_events, 2);
    assert_eq!(drain, [(7, 1)], "64 to 128 µs, once");
}

/// On `rt`'s core 0, `n` tasks each wait for a byte on a pipe; the bytes are written at once,
/// so that one I/O poll wakes them all; the first polled moves paused time by 100 µs.
fn readers_woken_at_once(rt: &Runtime, n: usize) {
    rt.block_on(async {
        let first = Arc::new(AtomicBool::new(true));
        let mut writers = Vec::new();
        let mut readers = Vec::new();
        for _ in 0..n {
            let (w, mut r) = tickless::io::pipe().unwrap();
            writers.push(w);
            let first = first.clone();
            readers.push(tickless::spawn(async move {
                let mut byte = [0];
                r.read_exact(&mut byte).await.unwrap();
                if first.swap(false, Ordering::Relaxed) {
                    tickless::time::advance(Duration::from_micros(100)).await;
                }
            }));
        }
        yield_now().await; // every reader waits for readiness
        for w in &mut writers {
            w.write_all(&[7]).await.unwrap();
        }
        for r in readers {
            r.await.unwrap();
        }
    });
}

#[test]
fn a_runtime_with_no_io_poll_counts_nothing() {
    let rt = paused();
    rt.block_on(async { tickless::spawn(async {}).await.unwrap() });
    assert_eq!(histograms(&rt.metrics()), (vec![], vec![], vec![]));
}

#[test]
fn a_batch_counts_its_tasks_that_spilled_to_the_stealable_queue() {
    // With two cores, a core keeps 16 runnable tasks private and spills the rest where the
    // other may take them: 40 readers woken by one I/O poll are 16 private and 24 spilled,
    // and the batch drains at the 40th. The first one polled moves paused time by 100 µs
    // (less than the 250 µs a backlog waits before another core takes it).
    let rt = Builder::new()
        .cores(2)
        .start_paused(true)
        .enable_metrics_loop_histograms()
        .build()
        .unwrap();
    readers_woken_at_once(&rt, 40);
    let m = rt.metrics();
    let (_, drain, _) = histograms(&m);
    let stats = m.worker_stats(0);
    assert_eq!(stats.io_events, 40);
    assert!(stats.tasks_spilled >= 24, "{stats:?}");
    assert_eq!(stats.steals + m.worker_stats(1).steals, 0);
    assert_eq!(drain, [(7, 1)], "64 to 128 µs, once");
}
